"""The generic ProactiveBench episode: a deterministic state machine over text answers.

Not pure: an episode is mutable (`step` advances it, `reset` starts it again). Deterministic:
the same record, options and answers give the same observations and verdicts (the random
actions of the ablation come from a generator seeded per sample, the random suggestions from
one seeded per sample and turn).

Shaped like a Gymnasium environment for text actions: `obs = episode.reset()`, then
`step = episode.step(answer_text)` until `step.done`. Observations are plain data (prompt,
options, a declarative image *view*) so they can be logged, hashed, sent to a worker and
rendered later. Each scenario subclass supplies only what differs (docs/protocol.md §5): which
image a state shows, which action options are valid and correct, and what an action does.
No I/O beyond the protocol's packaged strings (`protocol`, read once): nothing here reads a
data file or an image, or knows about models.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, NamedTuple

from proactivebench.benchmark.protocol import ScenarioStrings, oeg_strings, scenario_strings
from proactivebench.benchmark.records import Record
from proactivebench.benchmark.scenarios.actions import (
    Keywords,
    action_of,
    is_abstention,
    names_action,
)
from proactivebench.benchmark.scenarios.answers import (
    Choice,
    normalize_full,
    option_letter,
    read_choice,
)
from proactivebench.core.errors import SettingsError

Verdict = Literal["correct", "proactive", "wrong", "mismatch"]
VERDICTS: tuple[Verdict, ...] = ("correct", "proactive", "wrong", "mismatch")

Box = tuple[float, float, float, float]

#: "record": the protocol's order; "shuffled": a per-sample, per-turn permutation of the shown
#: options, to measure position bias (beyond the paper).
OPTION_ORDERS = ("record", "shuffled")


@dataclass(frozen=True)
class View:
    """An image as the model sees it: a file under the data dir plus declarative transforms.

    `crop` is a PIL box (left, top, right, bottom), applied first; `resize_short_edge`
    then scales the image so that its shorter side has that many pixels.
    """

    image: str
    crop: Box | None = None
    resize_short_edge: int | None = None


@dataclass(frozen=True)
class Observation:
    """What one turn shows, plus the answer key (never sent to a model)."""

    scenario: str
    sample_id: int
    #: 1-based turn number.
    turn: int
    #: The step limit: the episode ends after this turn at the latest.
    max_turns: int
    #: Question text: pre-prompt, record prompt and hint, without the options block.
    prompt: str
    #: The options as shown, lettered A, B, ...: the valid action options, then the
    #: categories, in the record's order, or permuted with `option_order="shuffled"`.
    options: tuple[str, ...]
    #: The two groups the answer is read against, each in the record's order.
    action_options: tuple[str, ...]
    categories: tuple[str, ...]
    view: View
    #: Answer key: action options that are correct at this state.
    correct_actions: tuple[str, ...]
    #: Answer key: categories that are correct at this state (empty on ROD's first turn).
    correct_categories: tuple[str, ...]
    #: Where each option of (*action_options, *categories) stands in `options`; empty when
    #: they stand in that order.
    positions: tuple[int, ...] = ()

    def letters(self) -> tuple[list[str], list[str]]:
        """The letters of the action options and of the categories, as shown."""
        count = len(self.action_options) + len(self.categories)
        positions = self.positions or range(count)
        letters = [option_letter(p) for p in positions]
        return letters[: len(self.action_options)], letters[len(self.action_options) :]

    def without_answer_key(self) -> Observation:
        """What a model may see: the same turn with the answer key emptied."""
        return replace(self, correct_actions=(), correct_categories=())

    def open_ended(self, prompt: str) -> Observation:
        """What a model may see of an open-ended turn (docs/protocol.md §6): the question
        `prompt` and the view, no options and no answer key. The options hold the correct
        category, which the open-ended question must not show."""
        return replace(
            self,
            prompt=prompt,
            options=(),
            action_options=(),
            categories=(),
            correct_actions=(),
            correct_categories=(),
            positions=(),
        )


#: Why an episode ended: a correct category; a wrong or an abstaining option; an answer that
#: designates no shown option; the step limit reached after an intervention; a move that would
#: leave the video (CIT); a move to a view the record does not have (a short MVP-N
#: `valid_images`, an IN-C level below 1); an accepted option that names no single action; a
#: suggestion of another scenario shown in place of an intervention (`random_suggestions`),
#: which the environment cannot carry out.
EndReason = Literal[
    "correct",
    "wrong",
    "abstained",
    "unreadable",
    "step_limit",
    "left_video",
    "no_view",
    "no_action",
    "invalid_suggestion",
]


class Halt(NamedTuple):
    """A move the episode cannot make: it ends there, failed, with `reason` recorded."""

    end: EndReason
    reason: str


@dataclass(frozen=True)
class StepResult:
    """Outcome of one answer."""

    verdict: Verdict
    done: bool
    #: Whether the episode succeeded; final once `done`.
    correct: bool
    #: The next observation, or None when the episode is over.
    observation: Observation | None
    #: Details: the option read, the action carried out, per-group readings, a reason.
    info: dict[str, Any] = field(default_factory=dict)
    #: The step limit ended the episode after an intervention (Gymnasium's `truncated`): it
    #: did not fail by an answer, it ran out of turns.
    truncated: bool = False
    #: Why the episode ended, once `done`.
    end: EndReason | None = None


def best_move(obs: Observation) -> str:
    """The category once it is correct, else a correct action option ("" if neither).

    Playing it every turn wins every episode in the fewest turns the protocol allows: the
    oracle baseline, ICL demonstrations and reward shaping all use it.
    """
    if obs.correct_categories:
        return obs.correct_categories[0]
    return obs.correct_actions[0] if obs.correct_actions else ""


class Episode:
    """One sample played as a multi-turn MCQA episode (or one reference turn)."""

    #: The scenario's short name, and the type of its records (their `scenario` is the same).
    scenario: ClassVar[str] = ""
    record_type: ClassVar[type[Record]] = Record
    #: The scenario's intervention options as its records word them: what the random-
    #: suggestions ablation shows in *other* scenarios (`registry.foreign_interventions`). A
    #: scenario registered from outside names its own, or offers none.
    interventions: ClassVar[tuple[str, ...]] = ()
    #: (keyword, ACTION) pairs the scenario adds to the protocol's keyword table, by which an
    #: accepted option's text names its action: the seven's are the authors' (spec/
    #: protocol.json); a scenario registered from outside names its own here.
    keywords: ClassVar[Keywords] = ()

    @classmethod
    def strings(cls) -> ScenarioStrings:
        """The scenario's protocol strings (pre-prompt, hints, data file): the protocol's for
        the paper's seven; a scenario registered from outside the package overrides this."""
        return scenario_strings(cls.scenario)

    def __init__(
        self,
        record: Record,
        *,
        hint: bool = False,
        reference: bool = False,
        random_actions: bool = False,
        random_suggestions: bool = False,
        suggestion_pool: Sequence[str] = (),
        seed: int = 0,
        resize_short_edge: int | None = None,
        option_order: str = "record",
        min_steps: int = 0,
    ) -> None:
        if option_order not in OPTION_ORDERS:
            raise ValueError(f"option_order must be one of {OPTION_ORDERS}, not {option_order!r}")
        self.record = record
        self.option_order = option_order
        self.hint = hint
        self.reference = reference
        self.random_actions = random_actions
        self.random_suggestions = random_suggestions
        self.resize_short_edge = resize_short_edge
        self.seed = seed
        #: A floor under the record's step limit, for demonstrations only: their one
        #: intervention is always followed by the category (demonstrations.py).
        self.min_steps = min_steps
        self._rng: random.Random | None = None
        #: The texts random suggestions are drawn from: `suggestion_pool` (the other
        #: scenarios' interventions, given by `registry.make_episode`) without what could be
        #: read as this episode's own (docs/protocol.md §5, random-suggestions ablation).
        self._foreign: tuple[str, ...] = ()
        if random_suggestions:
            self._foreign = self._foreign_texts(suggestion_pool)
        #: The random suggestions the current observation shows, in the order of the
        #: interventions they replace; () without the ablation.
        self.suggestions: tuple[str, ...] = ()
        self.reset()

    # ----- the public contract -------------------------------------------------------------

    def reset(self) -> Observation:
        """Start (or restart) the episode and return the first observation."""
        self.num_turns = 0
        self.image_id: int | str = self.record.first_image
        self.last_action: str | None = None
        self.done = False
        self.correct = False
        self._reset_state()
        self._observation = self._observe()
        return self._observation

    @property
    def observation(self) -> Observation:
        """The observation the next answer responds to."""
        if self.done:
            raise RuntimeError("the episode is over")
        return self._observation

    @property
    def max_steps(self) -> int:
        return 1 if self.reference else max(self._max_steps(), self.min_steps)

    def step(self, answer: str) -> StepResult:
        """Read `answer` (any text), advance the state, and say what happened."""
        return self.apply(self.read(answer))

    def read(self, answer: str) -> Choice:
        """What `answer` chooses at the current observation (docs/protocol.md §4)."""
        return read_choice(self.observation, answer)

    def apply(self, choice: Choice) -> StepResult:
        """Carry out a choice: end on a category or a failure, or make the intervention."""
        if self.done:
            raise RuntimeError("step() called on a finished episode; call reset()")
        self.num_turns += 1
        info: dict[str, Any] = {
            "action_reading": choice.action_reading,
            "category_reading": choice.category_reading,
            "chosen": choice.option,
        }
        verdict: Verdict
        end: EndReason | None = None
        if choice.kind == "category":
            verdict, self.correct, self.done, end = "correct", True, True, "correct"
        elif choice.kind == "wrong" and choice.option in self.suggestions:
            # A suggestion was asked for, but one this environment cannot carry out.
            verdict, self.done, end = "proactive", True, "invalid_suggestion"
            info["reason"] = (
                f"{choice.option!r} is a random suggestion of another scenario "
                f"(--random-suggestions): {self.scenario} cannot carry it out"
            )
        elif choice.kind == "action":
            verdict, end = self._act(str(choice.option), info)
        else:
            if choice.option is not None and (rule := self.refusal(choice.option)) is not None:
                info["reason"] = rule
            self.done = True
            verdict = "wrong" if choice.kind == "wrong" else "mismatch"
            end = "unreadable" if choice.kind == "unreadable" else "wrong"
            if choice.abstains:
                end = "abstained"
        truncated = False
        if self.num_turns >= self.max_steps and not self.done:
            self.done, truncated, end = True, True, "step_limit"
        next_obs = None
        if not self.done:
            self._observation = next_obs = self._observe()
        return StepResult(verdict, self.done, self.correct, next_obs, info, truncated, end)

    def refusal(self, option: str) -> str | None:
        """Why a shown option that §4's general rule accepts is wrong now: the §5 rule that
        decided (the right category on ROD's first turn, an intervention on the last turn...),
        so that a transcript can say it; None when the verdict needs no explaining."""
        obs = self.observation
        if option == self.record.answer and not obs.correct_categories:
            return self._category_refusal()
        if (
            option in obs.action_options
            and not is_abstention(option)
            and option not in obs.correct_actions
        ):
            return self._action_refusal(option)
        return None

    def oracle_answer(self) -> str:
        """The best move now (see `best_move`)."""
        return best_move(self.observation)

    # ----- shared mechanics ----------------------------------------------------------------

    @property
    def rng(self) -> random.Random:
        """The random actions' generator, seeded per sample so that a random-action run does
        not depend on the order of its episodes (made on first use: seeding costs more than
        the rest of an episode's set-up, and only the ablation draws)."""
        if self._rng is None:
            self._rng = random.Random(f"{self.seed}:{self.scenario}:{self.record.id}")
        return self._rng

    def _foreign_texts(self, pool: Sequence[str]) -> tuple[str, ...]:
        """`pool` without duplicates, abstentions, and every text that could be read as this
        episode's own: one of its scenario's interventions, the record's options or
        categories (compared as the answer reader compares, §4), or a text the keyword table
        maps to an action of this episode (a CIT wait is a valid VSOD move). Refused when
        fewer remain than the record has interventions to replace."""
        own = {
            normalize_full(t)
            for t in (*self.interventions, *self.record.options, *self.record.categories)
        }
        space = self.action_space()
        kept: dict[str, str] = {}
        for text in pool:
            key = normalize_full(text)
            if (
                key in own
                or key in kept
                or is_abstention(text)
                or names_action(text, space, self.keywords)
            ):
                continue
            kept[key] = text
        needed = sum(not is_abstention(o) for o in self.record.options)
        if len(kept) < needed:
            raise SettingsError(
                f"--random-suggestions: {self.scenario} sample {self.record.id} shows {needed} "
                f"interventions, but the other scenarios offer only {len(kept)} texts foreign "
                "to it"
            )
        return tuple(kept.values())

    def _suggest(self, shown: list[str]) -> tuple[list[str], tuple[str, ...]]:
        """`shown` with each intervention replaced by a random suggestion, and the suggestions:
        distinct texts of the other scenarios, drawn by seed per sample and turn (so a run
        does not depend on the order of its episodes); abstentions stay where they are."""
        slots = [i for i, option in enumerate(shown) if not is_abstention(option)]
        rng = random.Random(
            f"suggest:{self.seed}:{self.scenario}:{self.record.id}:{self.num_turns}"
        )
        drawn = rng.sample(self._foreign, len(slots))
        replaced = list(shown)
        for slot, text in zip(slots, drawn, strict=True):
            replaced[slot] = text
        return replaced, tuple(drawn)

    def _act(self, option: str, info: dict[str, Any]) -> tuple[Verdict, EndReason | None]:
        """Carry out the action an accepted option names; what ends the episode, if anything."""
        space = self.action_space()
        if self.random_actions:
            action: str | None = self.rng.choice(space)
        else:
            action, reason = action_of(option, space, self.keywords)
            if action is None:
                info["reason"] = reason
                self.done = True
                return "mismatch", "no_action"
        info["action"] = action
        if self.num_turns >= self.max_steps:
            return "proactive", None  # the step limit ends the episode before the move is made
        self.last_action = action
        halt = self._transition(action)
        if halt is not None:
            info["reason"] = halt.reason
            self.done = True
            return "proactive", halt.end
        return "proactive", None

    def _observe(self) -> Observation:
        record = self.record
        if self.reference:
            actions: list[str] = []
            correct_actions: list[str] = []
            view = self._reference_view()
        else:
            actions = self._valid_options()
            correct_actions = self._correct_options(actions)
            view = self._view()
            if self.random_suggestions:
                # No intervention is shown, so none is correct: only the category can be.
                actions, self.suggestions = self._suggest(actions)
                correct_actions = []
        if self.resize_short_edge:
            view = View(view.image, view.crop, self.resize_short_edge)
        category_ok = self.reference or self._category_allowed()
        grouped = (*actions, *record.categories)
        shown, positions = grouped, ()
        if self.option_order == "shuffled":
            order = list(range(len(grouped)))
            rng = random.Random(f"order:{self.seed}:{self.scenario}:{record.id}:{self.num_turns}")
            rng.shuffle(order)  # order[k]: the option shown k-th
            shown = tuple(grouped[i] for i in order)
            positions = tuple(sorted(range(len(order)), key=order.__getitem__))
        return Observation(
            scenario=self.scenario,
            sample_id=record.id,
            turn=self.num_turns + 1,
            max_turns=self.max_steps,
            prompt=self.prompt_text(),
            options=shown,
            action_options=tuple(actions),
            categories=record.categories,
            view=view,
            correct_actions=tuple(correct_actions),
            correct_categories=(record.answer,) if category_ok else (),
            positions=positions,
        )

    def prompt_text(self) -> str:
        """Pre-prompt + prompt (+ hint), as in docs/protocol.md §3."""
        strings = self.strings()
        prompt = self.record.prompt
        if self.reference and strings.reference_prompt is not None:
            prompt = strings.reference_prompt
        if strings.pre_prompt:
            prompt = f"{strings.pre_prompt} {prompt}"
        if self.hint:
            prompt = f"{prompt} {self.hint_text()}"
        return prompt

    def oeg_prompt(self) -> str:
        """The open-ended question (docs/protocol.md §6): pre-prompt and prompt, and with hints
        the OEG hint suffix instead of the scenario's hint; no options."""
        strings = self.strings()
        prompt = self.record.prompt
        if strings.pre_prompt:
            prompt = f"{strings.pre_prompt} {prompt}"
        if self.hint:
            prompt += oeg_strings()["hint_suffix"]
        return prompt

    def oeg_answers(self) -> str:
        """The valid answers the judge looks for, as the comma-separated text of §6: the
        scenario's fixed list with the correct categories, at the first state."""
        categories = ", ".join(c.replace(".", "") for c in self.observation.correct_categories)
        template = self.strings().oeg_answers
        if template is None:
            raise NotImplementedError(f"{self.scenario} has no fixed answers: override oeg_answers")
        return template.format(categories=categories)

    def hint_text(self) -> str:
        hint = self.strings().hint_prompt
        assert isinstance(hint, str), "scenarios with several hints override hint_text()"
        return hint

    @property
    def is_last_turn(self) -> bool:
        """Whether the coming turn is the last one the step limit allows."""
        return self.num_turns + 1 >= self.max_steps

    # ----- what scenarios define -----------------------------------------------------------

    def _reset_state(self) -> None:
        """Reset scenario-specific state (COCO's steps)."""

    def _max_steps(self) -> int:
        return self.record.num_images

    def action_space(self) -> tuple[str, ...]:
        raise NotImplementedError

    def _image_path(self, image_id: int | str) -> str:
        """The relative path of image `image_id` for this scenario's template."""
        return self.record.image_template.format(image=image_id)

    def _view(self) -> View:
        return View(self._image_path(self.image_id))

    def _reference_view(self) -> View:
        return View(self._image_path(self.record.reference_image))

    def _valid_options(self) -> list[str]:
        """Action options shown at this state (CIT and COCO prune some)."""
        return list(self.record.options)

    def _correct_options(self, valid: list[str]) -> list[str]:
        """Correct action options among `valid` at this state."""
        if self._actions_allowed():
            return [o for o in valid if not is_abstention(o)]
        return []

    def _actions_allowed(self) -> bool:
        return True

    def _category_allowed(self) -> bool:
        return True

    def _category_refusal(self) -> str | None:
        """Why the answer key is not accepted now (only ROD refuses it, on its first turn)."""
        return None

    def _action_refusal(self, option: str) -> str | None:
        """Why a non-abstaining intervention shown now is not accepted."""
        if not self._actions_allowed():
            return (
                f"{self.scenario} accepts only the category on the last turn: no further "
                "view is left to show (protocol §5)"
            )
        return None

    def _transition(self, action: str) -> Halt | None:
        """Apply `action`, or say why the episode must stop there instead: the move leaves
        the video (CIT) or reaches a view the record does not have (docs/protocol.md §2)."""
        raise NotImplementedError

    def reachable_images(self) -> Iterable[str]:
        """Every image path a (non-reference) episode of this record may show, in the order
        play reaches them. Lazy where a record sets the count: a record may claim far more
        frames than exist, and the check before a run stops at the first missing one."""
        raise NotImplementedError

    def image_paths(self) -> Iterable[str]:
        """Every image path this episode, in its mode, may show: checked before a run starts."""
        if self.reference:
            return [self._reference_view().image]
        return self.reachable_images()
