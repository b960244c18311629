"""Run settings, each declared once.

A setting is a field of `EvalSettings` (what a run plays) or of `RunOptions` (how a run is
executed), declared with `setting(...)`: its default, its help text, its kind and the rules its
values obey. Everything else is derived from these declarations, so that adding a setting is
one field here plus its use where episodes are made or played:

- the command line's options (`cli.options.setting_options`: `eval`, and `train grpo` for the
  settings training can honour),
- the Inspect task's parameters and the verifiers taskset's arguments (`adapters/`),
- the run identity, in `run.json` and in every result line (`EvalSettings.identity`),
- type checking of values from any source: the CLI, Python callers, Inspect's `-T` strings,
  verifiers' config, a training config file (`EvalSettings.__post_init__`, `check_setting`).

The kinds say what a setting does to a run. An *episode* setting changes what a model is shown
or how its answers are read: it is part of the run's identity, and a run directory resumes only
with the same. A *selection* setting chooses which episodes are played (a run may grow by a
larger `--limit`), unless it says which samples make the test set (`in_identity`: `--filter`).
An *execution* setting changes how the run is carried out, never its results.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from proactivebench.benchmark.demonstrations import DemoSettings
from proactivebench.benchmark.registry import scenario_names
from proactivebench.benchmark.scenarios.answers import EXTRACTIONS, lenient_answer
from proactivebench.benchmark.scenarios.base import OPTION_ORDERS
from proactivebench.core.errors import SettingsError
from proactivebench.core.ranges import Range
from proactivebench.data.images import DEFAULT_MAX_IMAGE_MB
from proactivebench.data.sample_filter import SampleFilter, read_sample_filter
from proactivebench.models.base import Decoding
from proactivebench.run.judge import oeg_decoding

Kind = Literal["episode", "selection", "execution"]
#: The places a setting appears besides the Python API: the command line, the Inspect task,
#: the verifiers taskset, `train grpo`, `play` (a person in the browser; see `Setting.not_in`)
#: `judge` (re-judging a finished run: it takes the execution options only) and `suite`
#: (`paper` and `suite FILE`: the execution options of several runs at once) and `lmms-eval`
#: (the lmms-eval task, which reads its settings from `PROACTIVEBENCH_SETTINGS`).
Surface = Literal["cli", "inspect", "verifiers", "train", "play", "judge", "suite", "lmms-eval"]
MODES = ("mcqa", "oeg", "oeg-multiturn")
#: The modes whose answers a judge decides (`--judge`).
JUDGED_MODES = ("oeg", "oeg-multiturn")

#: Where a field's metadata keeps its `Setting`.
_INFO_KEY = "proactivebench"


@dataclass(frozen=True)
class Setting:
    """What a setting's declaration says besides its name, type and default."""

    help: str
    kind: Kind
    #: Recorded in the run identity even at its default. The settings of the first release are;
    #: later ones appear only when they differ from the default, so that a run directory made
    #: by an earlier version still resumes.
    always_recorded: bool = False
    #: A selection setting that is part of the run identity all the same (when set): it says
    #: which samples make the test set, so that two runs of one identity score the same set.
    in_identity: bool = False
    #: The attribute of the settings that the identity records in place of the value (a
    #: file's path says less than what the file holds).
    recorded_as: str | None = None
    #: Passed to `make_episode` (the episode state machine takes it).
    builds_episode: bool = False
    #: Where a number must lie (a setting's are integers from a lowest value up).
    bounds: Range | None = None
    #: The values a text setting may take.
    choices: tuple[str, ...] | None = None
    #: The command-line option's metavar (e.g. "K").
    metavar: str | None = None
    #: A file's path: in a suite file, relative to the suite file's folder.
    path: bool = False
    #: Surfaces that cannot honour the setting, and so do not offer it (with the reason in the
    #: declaration's comment). Every other surface offers it.
    not_in: frozenset[Surface] = frozenset()
    #: The help of surfaces where `help` would name what they do not offer (`play`'s seed
    #: draws no demonstrations), as (surface, help) pairs.
    surface_help: tuple[tuple[Surface, str], ...] = ()
    #: An episode setting's mark in a run's label when its value is not the default: a
    #: format of the value ("ICL-{}"), or a function of it. Unset: "name=value", so that a
    #: new setting is never labelled, or placed in the paper's tables, as a plain run.
    label: str | Callable[[Any], str] | None = None
    #: An episode setting that marks no label: another draw of the same experiment (the
    #: seed), or what is checked apart (decoding, against the protocol's).
    unlabelled: bool = False

    def offered_by(self, surface: Surface) -> bool:
        return surface not in self.not_in

    def help_on(self, surface: Surface) -> str:
        """The help `surface` shows: its own when the declaration gives one."""
        return dict(self.surface_help).get(surface, self.help)


def setting(default: Any = dataclasses.MISSING, *, factory: Any = None, **info: Any) -> Any:
    """A dataclass field that carries its `Setting` declaration."""
    metadata = {_INFO_KEY: Setting(**info)}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class SettingField:
    """One declared setting, as the surfaces read it."""

    name: str
    #: The resolved annotation: bool, int, int | None, str, tuple[str, ...] | None, Decoding.
    type: Any
    default: Any
    info: Setting

    @property
    def optional(self) -> bool:
        """Whether None is a valid value (it then means "not set")."""
        return type(None) in typing.get_args(self.type)

    @property
    def base_type(self) -> Any:
        """The type without its `| None`."""
        args = [a for a in typing.get_args(self.type) if a is not type(None)]
        if isinstance(self.type, types.UnionType) and len(args) == 1:
            return args[0]
        return self.type

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def declared(cls: type) -> list[SettingField]:
    """The declared settings of a settings dataclass (`EvalSettings`, `RunOptions`, or a
    subclass with more fields), in declaration order."""
    return list(_declared(cls))


@functools.cache
def _declared(cls: type) -> tuple[SettingField, ...]:
    hints = typing.get_type_hints(cls)
    fields = []
    for f in dataclasses.fields(cls):
        info = f.metadata.get(_INFO_KEY)
        if info is None:
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        fields.append(SettingField(f.name, hints[f.name], default, info))
    return tuple(fields)


def label_marks(cls: type, settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What sets a run played with `settings` (run.json's, or `identity()`) apart from a plain
    run, as (setting, mark) in declaration order ("hint", "ICL-3"): each episode setting whose
    recorded value is not its default, by its `label`. A run with none is a plain run."""
    marks = []
    for spec in declared(cls):
        value = settings.get(spec.name)
        if spec.info.kind != "episode" or spec.info.unlabelled:
            continue
        if value is None or value == spec.default or value is False:
            continue
        label = spec.info.label
        if label is None:
            mark = f"{spec.name}={value}"
        else:
            mark = label.format(value) if isinstance(label, str) else label(value)
        marks.append((spec.name, mark))
    return marks


def offered(cls: type, surface: Surface, kinds: Sequence[Kind] | None = None) -> list[SettingField]:
    """The settings of `cls` that `surface` offers, optionally only those of some kinds."""
    return [
        s
        for s in declared(cls)
        if s.info.offered_by(surface) and (kinds is None or s.info.kind in kinds)
    ]


# ----- checking ---------------------------------------------------------------------------------


def check_setting(spec: SettingField, value: Any) -> Any:
    """`value` as the setting takes it, or one error naming the setting and the value.

    Values also come from Python callers and from adapters' text parameters, where "false"
    would read as true: a flag must be a real boolean, a count a real integer in range.
    Scenario lists may be given as "ROD,QD" or a sequence; they are kept as a tuple.
    """
    name = spec.name
    if value is None and spec.optional:
        return None
    kind = spec.base_type
    if kind is bool:
        if not isinstance(value, bool):
            raise SettingsError(f"{name} must be true or false, got {value!r}")
    elif kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SettingsError(f"{name} must be an integer, got {value!r}")
        bounds = spec.info.bounds
        if bounds is not None and not bounds.holds(value):
            raise SettingsError(f"{name} must be {bounds.bounds()}, got {value}")
    elif kind is str:
        choices = spec.info.choices
        if not isinstance(value, str) or (choices and value not in choices):
            allowed = f"; choose from {', '.join(choices)}" if choices else ""
            raise SettingsError(f"unknown {name} {value!r}{allowed}")
    elif typing.get_origin(kind) is tuple:
        return _name_list(name, value)
    elif isinstance(kind, type) and not isinstance(value, kind):
        raise SettingsError(f"{name} must be a {kind.__name__}, got {value!r}")
    return value


def _name_list(name: str, value: Any) -> tuple[str, ...] | None:
    """Comma-separated text or a sequence of texts, as a tuple; "" means not given. Empty
    names are kept, for the data loader to refuse by name ("--scenarios ," is a mistake)."""
    if value == "":
        return None
    if isinstance(value, str):
        return tuple(s.strip() for s in value.split(","))
    if isinstance(value, Sequence) and all(isinstance(s, str) for s in value):
        return tuple(s.strip() for s in value)
    raise SettingsError(f"{name} must be a comma-separated list, got {value!r}")


class CheckedSettings:
    """Checks every declared field's value when an instance is made, whatever made it."""

    def __post_init__(self) -> None:
        for spec in declared(type(self)):
            value = check_setting(spec, getattr(self, spec.name))
            object.__setattr__(self, spec.name, value)


# ----- the settings -----------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalSettings(CheckedSettings):
    """What defines a run: what its episodes show, how answers are read, which episodes are
    played. A resumed run must have the same episode settings."""

    scenarios: tuple[str, ...] | None = setting(
        None,
        kind="selection",
        # Training has --holdout; lmms-eval chooses scenarios by its tasks (proactivebench_rod...).
        not_in=frozenset({"train", "lmms-eval"}),
        help=f"Comma-separated short names ({','.join(scenario_names())}); default: all present.",
    )
    hint: bool = setting(
        False,
        kind="episode",
        label="hint",
        always_recorded=True,
        builds_episode=True,
        help="Append the scenario's hint to every prompt.",
    )
    reference: bool = setting(
        False,
        kind="episode",
        label="reference",
        always_recorded=True,
        builds_episode=True,
        help="Reference (upper-bound) mode: one clear turn.",
    )
    random_actions: bool = setting(
        False,
        kind="episode",
        label="random actions",
        always_recorded=True,
        builds_episode=True,
        help="Carry out a random action (ablation).",
    )
    # The paper's ablation (§4.3, Figs. 5 and 20); --random-actions above is the reference
    # code's. Not in training: its examples show the records' own options and its rewards pay
    # for a valid intervention (train/examples.py, train/rewards.py); an ablation of what a
    # model is shown is measured, not trained on.
    random_suggestions: bool = setting(
        False,
        kind="episode",
        label="random suggestions",
        builds_episode=True,
        not_in=frozenset({"train"}),
        help="Show, in place of every intervention, a random one of another scenario, which "
        "ends the episode when chosen (the paper's ablation).",
    )
    # Not in verifiers: its conversation always keeps its history. Not in training: examples
    # are single turns. Not in lmms-eval: its multi-round wrappers send one user message per
    # round (docs/lmms-eval.md).
    history: bool = setting(
        False,
        kind="episode",
        label="history",
        not_in=frozenset({"verifiers", "train", "lmms-eval"}),
        help="Send every earlier turn of the episode with each turn.",
    )
    # In-context examples: not in verifiers (its chat opens with the first turn) nor training,
    # nor `play` (a person reads the instruction page instead), nor lmms-eval (one user message
    # per round, as for history).
    icl: int = setting(
        0,
        kind="episode",
        label="ICL-{}",
        bounds=Range(0, integer=True),
        metavar="K",
        not_in=frozenset({"verifiers", "train", "play", "lmms-eval"}),
        help="Show K oracle demonstrations of other samples before each episode.",
    )
    cot: bool = setting(
        False,
        kind="episode",
        label="CoT",
        not_in=frozenset({"verifiers", "train", "play", "lmms-eval"}),
        help="Demonstrations reason before intervening (--icl).",
    )
    icl_reduced: bool = setting(
        False,
        kind="episode",
        label="reduced",
        not_in=frozenset({"verifiers", "train", "play", "lmms-eval"}),
        help="Demonstrations keep their first and last turn (--icl).",
    )
    # Not in training: its examples show the options in the record's order (train/examples.py).
    option_order: str = setting(
        "record",
        kind="episode",
        label="{} options",
        builds_episode=True,
        choices=OPTION_ORDERS,
        not_in=frozenset({"train"}),
        help="shuffled: permute the shown options per sample and turn, to measure position bias.",
    )
    # Not in training: rewards read completions with the strict reader. Not in `play`: a
    # person answers with an option's letter.
    answer_extraction: str = setting(
        "strict",
        kind="episode",
        label="{} reading",
        choices=EXTRACTIONS,
        not_in=frozenset({"train", "play"}),
        help="lenient: drop <think> reasoning, markdown, 'Answer:' prefixes and brackets "
        "around a letter before reading (beyond the paper).",
    )
    resize_short_edge: int | None = setting(
        None,
        kind="episode",
        label="{}px",
        builds_episode=True,
        bounds=Range(1, integer=True),
        metavar="N",
        help="Scale every image (COCO's crops excepted) to a short edge of N pixels.",
    )
    limit: int | None = setting(
        None,
        kind="selection",
        bounds=Range(1, integer=True),
        metavar="N",
        not_in=frozenset({"train"}),
        help="At most N per scenario.",
    )
    # Not in `train`: GRPO's own `seed` is a config field of the same name.
    # The paper's OEG subset (§3.1: "100 examples per scenario"; the reference code: "100
    # samples per scenario, shuffled with random.seed(0)", protocol.json). Not in training:
    # its examples are every sample of the training data.
    subset: int | None = setting(
        None,
        kind="selection",
        bounds=Range(1, integer=True),
        metavar="N",
        not_in=frozenset({"train"}),
        help="Play N samples per scenario chosen at random: the scenario's samples (after the "
        "test filter) shuffled by Python's random.Random(0), the first N (the paper's OEG "
        "subset: 100); --limit then caps the first of them.",
    )
    seed: int = setting(
        0,
        kind="episode",
        unlabelled=True,
        always_recorded=True,
        builds_episode=True,
        not_in=frozenset({"train"}),
        help="Seed of every random draw of the run: the ICL demonstrations (--icl), the "
        "option shuffle (--option-order shuffled), the random actions (--random-actions), "
        "the random suggestions (--random-suggestions), the random baselines' answers and a "
        "local model's sampling.",
        surface_help=(
            (
                "play",
                "Seed of every random draw of the run: the option shuffle (--option-order "
                "shuffled), the random actions (--random-actions) and the random suggestions "
                "(--random-suggestions).",
            ),
        ),
    )
    all_samples: bool = setting(
        False,
        kind="selection",
        not_in=frozenset({"train"}),
        help="Do not apply the official test filter.",
    )
    # Part of the run identity (the hash of the ids it keeps): a run resumes only with the same
    # test set. Not in training: its examples are every sample of the training data.
    filter: str | None = setting(
        None,
        kind="selection",
        in_identity=True,
        recorded_as="filter_digest",
        metavar="FILE",
        path=True,
        not_in=frozenset({"train"}),
        help="Play the sample ids FILE keeps (written by `proactivebench data filter`) instead "
        "of the official test filter; it applies to synthetic data too.",
    )
    # Not in training: its examples read images with the default cap.
    max_image_mb: int = setting(
        DEFAULT_MAX_IMAGE_MB,
        kind="selection",
        bounds=Range(1, integer=True),
        metavar="MB",
        not_in=frozenset({"train"}),
        help="Refuse image files larger than MB megabytes before the run, unread.",
    )
    # Built from --max-tokens/--temperature/--top-p by hand (they also shape the judge's);
    # Inspect, verifiers and lmms-eval take decoding from their own options, training from
    # GRPOConfig.
    decoding: Decoding = setting(  # noqa: RUF009 - a field with a default factory
        factory=Decoding,
        kind="episode",
        unlabelled=True,
        always_recorded=True,
        not_in=frozenset({"cli", "inspect", "verifiers", "train", "play", "lmms-eval"}),
        help="Decoding of the tested model's answers.",
    )
    # An OEG run given the MCQA decoding gets the OEG one (no temperature, 32,768 tokens).
    # Not in verifiers, training, `play` or lmms-eval: they play multiple choice. The Inspect task
    # refuses oeg-multiturn by name (its scorer and judge role serve one-turn OEG).
    mode: str = setting(
        "mcqa",
        kind="episode",
        label=str.upper,
        choices=MODES,
        not_in=frozenset({"verifiers", "train", "play", "lmms-eval"}),
        help="mcqa: multi-turn multiple choice; oeg: one open-ended turn, judged (needs --judge); "
        "oeg-multiturn: open-ended turns, each judged, a suggestion moving the episode "
        "(paper Table 10; needs --judge).",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.filter is not None:
            if self.all_samples:
                raise SettingsError(
                    "--filter FILE plays the samples FILE keeps, --all-samples every sample: "
                    "give one"
                )
            # Read once, here: the run's selection and its identity see the same ids.
            object.__setattr__(self, "_sample_filter", read_sample_filter(self.filter))
        if self.judged:
            if self.icl or self.reference:
                raise SettingsError("open-ended generation has no --icl or --reference")
            # Recorded but never played: a run labelled "+history" identical to one without.
            if self.history and self.mode == "oeg":
                raise SettingsError(
                    "--history sends an episode's earlier turns: --mode oeg plays one turn "
                    "(turns with history: --mode oeg-multiturn)"
                )
            if self.decoding == Decoding():
                object.__setattr__(self, "decoding", oeg_decoding())
        if (self.cot or self.icl_reduced) and not self.icl:
            raise SettingsError("--cot and --icl-reduced shape demonstrations: add --icl K")
        if self.icl and self.reference:
            raise SettingsError(
                "--icl shows multi-turn demonstrations; reference mode is one clear turn"
            )
        if self.random_suggestions:
            self._check_random_suggestions()

    def _check_random_suggestions(self) -> None:
        """Refuse what cannot go with random suggestions: they replace the interventions of
        multiple-choice turns, of which reference mode and open-ended generation show none,
        and leave no valid one for --random-actions to move by."""
        if self.mode != "mcqa":
            raise SettingsError(
                f"--random-suggestions replaces shown options: --mode {self.mode} shows none"
            )
        if self.reference:
            raise SettingsError(
                "--random-suggestions replaces interventions: reference mode shows none"
            )
        if self.random_actions:
            raise SettingsError(
                "--random-suggestions and --random-actions are two different ablations (the "
                "paper's and the reference code's): choose one"
            )

    @property
    def judged(self) -> bool:
        """Whether a judge decides the answers (open-ended generation, one turn or several)."""
        return self.mode in JUDGED_MODES

    def episode_options(self) -> dict[str, Any]:
        """The keyword arguments of `make_episode`."""
        return {
            s.name: getattr(self, s.name) for s in declared(type(self)) if s.info.builds_episode
        }

    def identity(self) -> dict[str, Any]:
        """The episode settings, as `run.json` and every result line record them."""
        identity: dict[str, Any] = {}
        for spec in declared(type(self)):
            if spec.info.kind != "episode" and not spec.info.in_identity:
                continue
            value = getattr(self, spec.name)
            if spec.info.always_recorded or value != spec.default:
                if spec.info.recorded_as is not None:
                    value = getattr(self, spec.info.recorded_as)
                identity[spec.name] = value.as_dict() if isinstance(value, Decoding) else value
        return identity

    def selected_by(self) -> dict[str, Any]:
        """The selection settings as given (not at their default; `filter`'s path, which the
        identity records only as a digest): what an `eval` playing this run's episodes again
        must pass (`eval_arguments`), since run.json records only the ids they chose."""
        chosen: dict[str, Any] = {}
        for spec in declared(type(self)):
            value = getattr(self, spec.name)
            if spec.info.kind == "selection" and value != spec.default:
                chosen[spec.name] = list(value) if isinstance(value, tuple) else value
        return chosen

    @property
    def sample_filter(self) -> SampleFilter | None:
        """The user's test filter (`filter`), read when the settings were made; None: the
        official list (or every sample, `all_samples`)."""
        return getattr(self, "_sample_filter", None)

    @property
    def filter_digest(self) -> str | None:
        """What the run identity records of `filter`: the hash of the ids it keeps."""
        return None if self.sample_filter is None else self.sample_filter.digest

    def read_as(self, answer: str) -> str:
        """What the reader is given of a model's answer: the answer itself, or with lenient
        extraction the answer without its decorations (`scenarios.answers.lenient_answer`)."""
        return lenient_answer(answer) if self.answer_extraction == "lenient" else answer

    @property
    def demonstrations(self) -> DemoSettings | None:
        if not self.icl:
            return None
        return DemoSettings(self.icl, cot=self.cot, reduced=self.icl_reduced)


@dataclass(frozen=True)
class RunOptions(CheckedSettings):
    """How a run is executed: never part of its identity, never changes its results."""

    concurrency: int = setting(
        8,
        kind="execution",
        bounds=Range(1, integer=True),
        not_in=frozenset({"inspect", "verifiers", "train"}),
        help="Episodes in flight at once.",
        surface_help=(
            (
                "judge",
                "Lines judged at once, each with its votes together (up to this many times "
                "--judge-votes requests in flight; several servers: --judge-option "
                "endpoints=URL,URL).",
            ),
            ("suite", "Episodes in flight in each experiment."),
        ),
    )
    #: It bounds several runs of one process at once: the Python API (`RunEngine`) and the
    #: suite's commands start them; no other command does.
    requests_in_flight: int | None = setting(
        None,
        kind="execution",
        bounds=Range(1, integer=True),
        metavar="N",
        not_in=frozenset({"cli", "inspect", "verifiers", "train", "play", "judge"}),
        help="Model and judge calls in flight at once, over every run of one engine (default: "
        "no limit beyond the episodes in flight).",
        surface_help=(
            (
                "suite",
                "Model and judge requests in flight over all experiments [default: "
                "--concurrency: the server sees what one `eval` at that concurrency asks].",
            ),
        ),
    )


def run_options(options: RunOptions | None, concurrency: int | None = None) -> RunOptions:
    """The options a job runs by: `options`, or `concurrency` alone (the keyword `evaluate`
    and `rejudge` took before `options`); given both, they must agree."""
    if options is None:
        return RunOptions() if concurrency is None else RunOptions(concurrency=concurrency)
    if concurrency is not None and concurrency != options.concurrency:
        raise SettingsError(
            f"concurrency={concurrency} and options.concurrency={options.concurrency} disagree: "
            "give one"
        )
    return options


def eval_arguments(identity: dict[str, Any], selected_by: dict[str, Any]) -> list[str]:
    """The `eval` options giving a run's settings: its `identity` (run.json's `settings`; a
    value recorded in place of the setting, `filter`'s digest, is not the setting's) and its
    selection as given (`EvalSettings.selected_by`), each as its declared option
    (`cli.options.setting_options`): a flag when true, a list comma-joined. A value at its
    default, or that the command line does not offer (`decoding`, `judge`), is left out."""
    values = {
        spec.name: identity[spec.name]
        for spec in declared(EvalSettings)
        if spec.name in identity and spec.info.recorded_as is None
    }
    values |= selected_by
    arguments: list[str] = []
    for spec in offered(EvalSettings, "cli"):
        value = values.get(spec.name, spec.default)
        if (
            value is None
            or value == spec.default
            or value == []
            or (isinstance(value, list) and tuple(value) == spec.default)
        ):
            continue
        if spec.base_type is bool:
            arguments.append(spec.flag)
            continue
        shown = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
        arguments += [spec.flag, shown]
    return arguments
