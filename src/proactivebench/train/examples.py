"""Single-turn training examples, one format for every source.

The format is the official train split's (dataset `tdemin16/ProactiveBench`, split `train`):
`prompt` (one user message whose content is an image placeholder and the MCQA text),
`images` (the one image it shows), `ground_truth` (the correct category) and
`proactive_actions` (the accepted interventions) among `options` (as shown, lettered from A).
We add three columns so that a reward can read answers exactly as the benchmark does and a run
can hold scenarios out: `scenario`, `action_count` (how many of `options` form the action group
of docs/protocol.md §4, the rest being the categories) and `state` (which state of its episode
the example shows; 0 for official rows). `ground_truth` is empty at a state where no category
is accepted (ROD's first turn).

Examples of an episode are not written by hand from the scenario rules: `episode_states` walks
the episode state machine itself (`Episode.apply` of every accepted intervention), so the
accepted answers at each state are those the benchmark accepts there.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proactivebench.benchmark.prompting import mcqa_text
from proactivebench.benchmark.records import Record
from proactivebench.benchmark.registry import (
    lookup,
    make_episode,
    recognise,
    scenario_names,
    scenario_order,
)
from proactivebench.benchmark.scenarios import Episode, Observation, View
from proactivebench.benchmark.scenarios.actions import is_abstention
from proactivebench.benchmark.scenarios.answers import Choice, normalize_full
from proactivebench.core.errors import DataError

if TYPE_CHECKING:
    from datasets import Dataset

#: The official training split on the Hub.
HUB_DATASET = "tdemin16/ProactiveBench"
#: The columns of our format, in order; anything else in a source is dropped.
COLUMNS = (
    "prompt",
    "images",
    "ground_truth",
    "proactive_actions",
    "options",
    "scenario",
    "action_count",
    "sample_id",
    "state",
)
#: The label of an official row whose scenario cannot be told (it can then not be held out).
UNKNOWN_SCENARIO = "unknown"


@dataclass(frozen=True)
class TrainExample:
    """One state of one episode, as a single-turn prompt with its accepted answers."""

    scenario: str
    sample_id: int
    state: int
    text: str
    image: Any
    options: tuple[str, ...]
    action_count: int
    proactive_actions: tuple[str, ...]
    ground_truth: str

    def row(self) -> dict[str, Any]:
        """The example as a dataset row of our format."""
        return {
            "prompt": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "text": None},
                        {"type": "text", "text": self.text},
                    ],
                }
            ],
            "images": [self.image],
            "ground_truth": self.ground_truth,
            "proactive_actions": list(self.proactive_actions),
            "options": list(self.options),
            "scenario": self.scenario,
            "action_count": self.action_count,
            "sample_id": self.sample_id,
            "state": self.state,
        }


# ----- episodes --------------------------------------------------------------------------------


def _state_key(obs: Observation) -> tuple[Any, ...]:
    """What makes two states the same example: what is shown and what is accepted (the turn
    number itself is not shown to the model)."""
    return (obs.view, obs.prompt, obs.options, obs.correct_actions, obs.correct_categories)


def episode_states(episode: Episode) -> list[Observation]:
    """Every distinct state reachable from the episode's start by accepted interventions.

    Breadth first, so each state is met at its earliest turn, where the most turns remain: a
    later visit of the same state can reach nothing new (views only move forward in the
    scenarios whose answer key depends on the turn: MVP-N, IN-C, QD). The episode is copied,
    never changed.
    """
    start = copy.deepcopy(episode)
    start.reset()
    frontier = [start]
    seen: set[tuple[Any, ...]] = set()
    states: list[Observation] = []
    while frontier:
        current = frontier.pop(0)
        obs = current.observation
        key = _state_key(obs)
        if key in seen:
            continue
        seen.add(key)
        states.append(obs)
        for option in dict.fromkeys(obs.correct_actions):
            successor = copy.deepcopy(current)
            if not successor.apply(Choice("action", option)).done:
                frontier.append(successor)
    return states


def example_of(obs: Observation, state: int, image: Any) -> TrainExample:
    """The single-turn example of one observation (shown in the record's option order)."""
    if obs.positions:
        raise ValueError("training examples show options in the record's order")
    return TrainExample(
        scenario=obs.scenario,
        sample_id=obs.sample_id,
        state=state,
        text=mcqa_text(obs.prompt, obs.options),
        image=image,
        options=obs.options,
        action_count=len(obs.action_options),
        proactive_actions=obs.correct_actions,
        ground_truth=obs.correct_categories[0] if obs.correct_categories else "",
    )


def record_examples(
    record: Record, image_of: Any, **episode_options: Any
) -> Iterator[TrainExample]:
    """The examples of one record's episode; `image_of(view)` gives the PIL image of a view;
    `episode_options` (e.g. `hint=True`) are `make_episode`'s."""
    episode = make_episode(record, **episode_options)
    for index, obs in enumerate(episode_states(episode)):
        yield example_of(obs, index, image_of(obs.view))


def directory_examples(
    data_dir: str | Path,
    *,
    scenarios: Iterable[str] | None = None,
    **episode_options: Any,
) -> Iterator[TrainExample]:
    """The examples of every record of a directory in the official layout (e.g. our
    generator's train split), every sample included (no official test filter)."""
    from proactivebench.data.directory import load_dataset
    from proactivebench.data.images import ImageStore

    data = load_dataset(data_dir, scenarios, all_samples=True)
    store = ImageStore(data.root)
    for records in data.records.values():
        for record in records:
            # A copy: the store's decoded images are shared, a dataset keeps what it gets.
            yield from record_examples(record, lambda v: store.image(v).copy(), **episode_options)


# ----- the official train split ------------------------------------------------------------------


def _text_of(prompt: Any) -> str:
    """The text parts of a conversational prompt, joined (for telling the scenario)."""
    texts = []
    for message in prompt or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [p.get("text") or "" for p in content if isinstance(p, dict)]
    return "\n".join(texts)


def infer_scenario(options: Sequence[str], prompt_text: str = "") -> str:
    """The scenario whose interventions the options offer, or `UNKNOWN_SCENARIO`.

    The official rows carry no scenario column; their interventions tell it (each
    registration says how it recognises its rows: `registry.recognise`).
    """
    return recognise(options, prompt_text) or UNKNOWN_SCENARIO


def split_point(options: Sequence[str], proactive_actions: Sequence[str], ground_truth: str) -> int:
    """How many leading options form the action group (the protocol shows interventions and
    abstentions first, then the categories, §3): up to the last accepted intervention or
    abstention, and never past the correct category."""
    last = -1
    for index, option in enumerate(options):
        if option in proactive_actions or is_abstention(option):
            last = index
    count = last + 1
    if ground_truth in options:
        count = min(count, options.index(ground_truth))
    return count


def _resolve_option(value: str, options: Sequence[str]) -> str | None:
    """`value` as one of `options`: equal, or equal once read as the protocol reads (§4)."""
    if value in options:
        return value
    normalized = [normalize_full(o) for o in options]
    target = normalize_full(value)
    return options[normalized.index(target)] if target in normalized else None


#: The columns every official row has; the per-model confidence columns are dropped.
OFFICIAL_COLUMNS = ("prompt", "ground_truth", "proactive_actions", "options", "images")


def _check_prompt(prompt: Any, fail: Any) -> int:
    """The number of image placeholders of a conversational prompt, or a `DataError`."""
    if not isinstance(prompt, list) or not prompt:
        raise fail("prompt", "expected a list of chat messages ({role, content})")
    count = 0
    for message in prompt:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise fail("prompt", "expected a list of chat messages ({role, content})")
        content = message.get("content")
        if isinstance(content, list):
            if not all(isinstance(part, dict) for part in content):
                raise fail("prompt", "a message's content parts must be {type, ...} objects")
            count += sum(part.get("type") == "image" for part in content)
        elif not isinstance(content, str):
            raise fail("prompt", "a message's content must be text or a list of parts")
    return count


def _check_images(images: Any, placeholders: int, base: Path | None, fail: Any) -> list[str] | None:
    """Check a row's images against its prompt; image paths (strings) come back absolute,
    resolved against the data file's directory (`base`) or, failing that, the current one."""
    if not isinstance(images, list) or not images:
        raise fail("images", "expected a list of at least one image")
    if len(images) != placeholders:
        raise fail(
            "images",
            f"{len(images)} image(s) but the prompt has {placeholders} image placeholder(s)",
        )
    if not all(isinstance(i, str) for i in images):
        return None  # embedded images (parquet) or the Hub's image feature: not decoded here
    resolved = []
    for image in images:
        candidates = [Path(image).expanduser()]
        if base is not None and not candidates[0].is_absolute():
            candidates.insert(0, base / image)
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise fail("images", f"no image file {image!r} (relative to the data file's folder)")
        resolved.append(str(found.resolve()))
    return resolved


def official_fields(
    row: dict[str, Any], index: int, where: str, base: Path | None = None
) -> dict[str, Any]:
    """What our format adds to one official row, once it is checked; a `DataError` names the
    row and column that are wrong. Images are counted, never decoded (a large split is
    converted quickly); image paths are checked to exist and made absolute."""

    def fail(column: str, message: str) -> DataError:
        return DataError(message, path=where, line=index + 1, field=column)

    placeholders = _check_prompt(row["prompt"], fail)
    options = row["options"]
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise fail("options", "expected a list of strings")
    if not options:
        raise fail("options", "no options: the example can only score 0")
    truth = row["ground_truth"]
    if not isinstance(truth, str):
        raise fail("ground_truth", "expected a string")
    resolved_truth = _resolve_option(truth, options) if truth else ""
    if resolved_truth is None:
        raise fail("ground_truth", f"{truth!r} is not one of the options")
    actions = row["proactive_actions"] or []
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
        raise fail("proactive_actions", "expected a list of strings")
    resolved = [_resolve_option(a, options) for a in actions]
    missing = [a for a, r in zip(actions, resolved, strict=True) if r is None]
    if missing:
        raise fail("proactive_actions", f"{missing[0]!r} is not one of the options")
    accepted = [r for r in resolved if r is not None]
    if not resolved_truth and not accepted:
        raise fail(
            "ground_truth",
            "empty, and no proactive_actions either: nothing is accepted, the example can "
            "only score 0",
        )
    images = _check_images(row.get("images"), placeholders, base, fail)
    scenario = row.get("scenario") or infer_scenario(options, _text_of(row["prompt"]))
    if scenario not in (*scenario_names(), UNKNOWN_SCENARIO):
        raise fail("scenario", f"unknown scenario {scenario!r}")
    return {
        **({"images": images} if images is not None else {}),
        "ground_truth": resolved_truth,
        "proactive_actions": accepted,
        "scenario": scenario,
        "action_count": split_point(options, accepted, resolved_truth),
        "sample_id": index,
        "state": 0,
    }


def _official_dataset(dataset: Dataset, where: str, base: Path | None = None) -> Dataset:
    missing = [c for c in OFFICIAL_COLUMNS if c not in dataset.column_names]
    if missing:
        raise DataError(
            f"not the official train schema: no column {', '.join(missing)}", path=where
        )
    inputs = [*OFFICIAL_COLUMNS, *(["scenario"] if "scenario" in dataset.column_names else [])]
    extra = [c for c in dataset.column_names if c not in COLUMNS]
    # Embedded images are read as bytes for the check (never decoded), then typed back.
    image_feature = dataset.features["images"]
    undecoded = _without_decoding(image_feature)
    if undecoded is not None:
        dataset = dataset.cast_column("images", undecoded)

    def convert(*values: Any) -> dict[str, Any]:
        *columns, index = values
        return official_fields(dict(zip(inputs, columns, strict=True)), index, where, base)

    converted = dataset.map(
        convert,
        input_columns=inputs,
        with_indices=True,
        remove_columns=extra,
        desc="reading the official train rows",
    )
    if undecoded is not None:
        converted = converted.cast_column("images", image_feature)
    return converted.select_columns(list(COLUMNS))


def _without_decoding(feature: Any) -> Any | None:
    """The `images` feature with its image decoding off, or None when it holds no `Image`."""
    import datasets

    inner = getattr(feature, "feature", None)
    if isinstance(inner, datasets.Image) and inner.decode:
        return datasets.List(datasets.Image(decode=False))
    return None


def _import_datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise DataError(
            "training data needs the 'datasets' package; pip install -e '.[train]'"
        ) from None
    return datasets


# ----- one entry point ---------------------------------------------------------------------------


def parse_holdout(names: str | Iterable[str] | None) -> list[str]:
    """`ROD,MVP-N` → short names in the paper's spelling (case-insensitive)."""
    if names is None:
        return []
    wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names)]
    chosen = []
    for name in filter(None, wanted):
        short = lookup(name)
        if short is None:
            known = ", ".join(scenario_names())
            raise DataError(f"unknown scenario {name!r} to hold out; choose from {known}")
        chosen.append(short)
    return list(dict.fromkeys(chosen))


def load_examples(
    source: str | Path,
    *,
    holdout: Iterable[str] = (),
    **episode_options: Any,
) -> Dataset:
    """The training examples of `source`, without the held-out scenarios' rows.

    `source`: a directory in the official layout (e.g. from `data synth --split train`), a
    local parquet or JSON/JSONL file in the official train schema, or `hub` (the official
    split, through `datasets`; `hub:OWNER/NAME` for another repository).
    """
    datasets = _import_datasets()
    held = set(parse_holdout(holdout))
    text = str(source)
    path = Path(text)
    if text == "hub" or text.startswith("hub:"):
        repo = text.partition(":")[2] or HUB_DATASET
        _probe_hub(repo)
        try:
            loaded = datasets.load_dataset(repo, split="train")
        except Exception as exc:  # offline, unknown repo, no such split: one message
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DataError(
                f"cannot load the train split of {repo} from the Hub: {first}"
            ) from None
        dataset = _official_dataset(loaded, repo)
    elif path.is_dir():
        kept = [s for s in _present(path) if s not in held]
        if not kept:
            raise DataError("every scenario of the data is held out", path=text)
        rows = [e.row() for e in directory_examples(path, scenarios=kept, **episode_options)]
        if not rows:
            raise DataError("no training examples in the data directory", path=text)
        dataset = datasets.Dataset.from_list(rows)
    elif path.is_file():
        dataset = _official_dataset(_read_file(datasets, path), text, path.resolve().parent)
    else:
        raise DataError(
            "training data not found (a directory, a parquet/JSONL file or 'hub')", path=text
        )
    if held:
        dataset = dataset.filter(lambda s: s not in held, input_columns="scenario")
    if len(dataset) == 0:
        raise DataError(
            "no training examples left after holding out " + ", ".join(sorted(held)), path=text
        )
    return dataset


def _present(path: Path) -> list[str]:
    from proactivebench.data.directory import scenarios_present

    present = scenarios_present(path)
    if not present:
        raise DataError("no '*_preprocessed.jsonl' files found", path=str(path))
    return present


def _probe_hub(repo: str) -> None:
    """One quick request before `datasets` tries the Hub: without a network it would retry
    for half a minute, printing every retry. Offline (HF_HUB_OFFLINE=1) the cache is used."""
    from huggingface_hub import HfApi, constants

    offline = os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE")
    if constants.HF_HUB_OFFLINE or offline:
        return
    try:
        HfApi().dataset_info(repo, timeout=10)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(
            f"cannot reach the dataset {repo} on the Hub: {first} (if its train split is in "
            "your cache, set HF_HUB_OFFLINE=1)"
        ) from None


@contextmanager
def _quiet(logger: str) -> Iterator[None]:
    import logging

    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        log.setLevel(level)


def _read_file(datasets: Any, path: Path) -> Dataset:
    """A parquet or JSON(L) file as a dataset, or one message naming the file (datasets and
    pyarrow fail on a malformed or empty file with their own exception types)."""
    kind = _file_kind(path)
    try:
        if path.stat().st_size == 0:
            raise DataError("the file is empty", path=str(path))
        with _quiet("datasets"):  # its own account of a failure, before ours
            loaded = datasets.load_dataset(kind, data_files=str(path), split="train")
    except DataError:
        raise
    except OSError as exc:
        raise DataError(f"cannot read it: {exc.strerror or exc}", path=str(path)) from None
    except Exception as exc:  # DatasetGenerationError, ArrowInvalid, StopIteration, ...
        cause: BaseException = exc
        while cause.__cause__ is not None or cause.__context__ is not None:
            cause = cause.__cause__ or cause.__context__  # type: ignore[assignment]
        text = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
        reason = f": {text}" if text else ""
        raise DataError(f"not a readable {kind} file{reason}", path=str(path)) from None
    if len(loaded) == 0:
        raise DataError("the file holds no rows", path=str(path))
    return loaded


def _file_kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return "parquet"
    if suffix in (".jsonl", ".json"):
        return "json"
    raise DataError("expected a .parquet, .jsonl or .json file", path=str(path))


def observation_of(row: dict[str, Any]) -> Observation:
    """The answer key of one example as an observation, for the benchmark's answer reader."""
    options = tuple(row["options"])
    count = int(row["action_count"])
    truth = row["ground_truth"]
    return Observation(
        scenario=row.get("scenario") or UNKNOWN_SCENARIO,
        sample_id=int(row.get("sample_id") or 0),
        turn=1,
        max_turns=1,
        prompt="",
        options=options,
        action_options=options[:count],
        categories=options[count:],
        view=View(""),
        correct_actions=tuple(row["proactive_actions"] or ()),
        correct_categories=(truth,) if truth else (),
    )


def scenario_counts(dataset: Dataset) -> dict[str, int]:
    """Examples per scenario, in the paper's order."""
    counts: dict[str, int] = {}
    for scenario in dataset["scenario"]:
        counts[scenario] = counts.get(scenario, 0) + 1
    return {s: counts[s] for s in scenario_order(counts)}
