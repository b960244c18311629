"""ProactiveBench as an Inspect AI task: `inspect eval proactivebench/proactivebench -T data=DIR`.

A thin adapter. Each Inspect sample is one of our episodes, played by the same code as
`proactivebench eval` (`proactivebench.run.play_episode`): the episode state
machine, the conversation builder, the answer reader and the judge stay ours. This module only
translates: our requests become Inspect chat messages (images as data URLs), Inspect's
`generate` answers them, and the finished episode becomes a score whose metadata holds the
exact `results.jsonl` line, so that `proactivebench import-inspect` turns a log back into a run.

Inspect owns retries, caching, concurrency and the model connection here; ours are not used.
Needs the `inspect` extra (`pip install -e '.[inspect]'`).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ContentImage,
    ContentText,
    GenerateConfig,
    get_model,
)
from inspect_ai.model import (
    Model as InspectModel,
)
from inspect_ai.scorer import Score, Scorer, Target, grouped, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from proactivebench.benchmark.metrics import episode_scores
from proactivebench.benchmark.prompting import Message, is_image_part
from proactivebench.benchmark.records import Record
from proactivebench.benchmark.registry import make_episode
from proactivebench.core.errors import SettingsError
from proactivebench.data.images import ImageStore
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model, usage_counts
from proactivebench.run.judge import Judge, check_votes
from proactivebench.run.play_episode import Judging, play
from proactivebench.run.selection import choose_episodes
from proactivebench.run.settings import EvalSettings, offered

#: Where a sample's score keeps its `results.jsonl` line (read by `import-inspect`).
RESULT_KEY = "result"
#: The sample metadata Inspect's `grouped` metrics group by.
GROUP_KEY = "scenario"
JUDGE_ROLE = "judge"

__all__ = ["JUDGE_ROLE", "RESULT_KEY", "proactivebench", "to_inspect_messages"]


# ----- translation ------------------------------------------------------------------------------


def to_inspect_messages(messages: Sequence[Message], images: ImageStore) -> list[ChatMessage]:
    """Our chat messages as Inspect's: image parts become `ContentImage` data URLs."""
    converted: list[ChatMessage] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = [
                ContentImage(image=images.data_url(part["view"]))
                if is_image_part(part)
                else ContentText(text=str(part.get("text", "")))
                for part in content
            ]
        role = message.get("role")
        if role == "assistant":
            converted.append(ChatMessageAssistant(content=content or ""))
        elif role == "system":
            converted.append(ChatMessageSystem(content=content or ""))
        else:
            converted.append(ChatMessageUser(content=content or ""))
    return converted


def generate_config(decoding: Decoding) -> GenerateConfig:
    """Our decoding as Inspect's defaults (the command line's `--max-tokens` etc. win)."""
    extra = dict(decoding.extra)
    return GenerateConfig(
        max_tokens=decoding.max_tokens,
        temperature=decoding.temperature,
        top_p=decoding.top_p,
        seed=extra.get("seed"),
    )


#: Inspect's token counts by the report's names (`base.usage_counts`).
INSPECT_USAGE = {"prompt_tokens": ("input_tokens",), "completion_tokens": ("output_tokens",)}


def _usage(output: Any) -> dict[str, int] | None:
    usage = getattr(output, "usage", None)
    if usage is None:
        return None
    counts = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    return usage_counts(counts, INSPECT_USAGE)


class InspectRoleModel(Model):
    """An Inspect model (e.g. the `judge` role) behind our `Model` protocol, for the judge."""

    def __init__(self, model: InspectModel, images: ImageStore) -> None:
        self.inspect_model = model
        self.name = f"inspect:{model}"
        self.images = images

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        completions = []
        for request in requests:
            output = await self.inspect_model.generate(
                to_inspect_messages(request.messages, self.images),
                config=generate_config(request.decoding),
            )
            completions.append(Completion(output.completion, usage=_usage(output)))
        return completions


# ----- the run: data, settings, episodes --------------------------------------------------------


@dataclass
class _Plan:
    """Everything a sample's episode needs, prepared once per task."""

    settings: EvalSettings
    records: dict[str, Record]
    pools: dict[str, list[Record]]
    images: ImageStore
    judge_votes: int


def _sample_id(record: Record) -> str:
    return f"{record.scenario}-{record.id}"


def _prepare(data_dir: Path, settings: EvalSettings, judge_votes: int) -> _Plan:
    chosen = choose_episodes(data_dir, settings)  # as `proactivebench eval` chooses them
    return _Plan(
        settings=settings,
        records={_sample_id(e.record): e.record for e in chosen.episodes},
        pools=chosen.dataset.records,
        images=chosen.images,
        judge_votes=judge_votes,
    )


# ----- solver and scorer ------------------------------------------------------------------------


@solver
def episode_player(plan: _Plan) -> Solver:
    """Plays the sample's episode turn by turn with `generate`, through our own loop."""
    settings = plan.settings

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        record = plan.records[str(state.sample_id)]
        episode = make_episode(record, **settings.episode_options())
        transcript: list[ChatMessage] = []
        failure: list[BaseException] = []

        async def ask(request: ChatRequest) -> Completion:
            messages = to_inspect_messages(request.messages, plan.images)
            if not transcript:  # demonstrations and, with history, nothing else yet
                transcript.extend(messages[:-1])
            state.messages = messages
            try:
                await generate(state, tool_calls="none")
            except BaseException as exc:  # Inspect decides: retry the sample, or fail it
                failure.append(exc)
                raise
            answer = state.output.completion
            transcript.extend([messages[-1], ChatMessageAssistant(content=answer)])
            return Completion(answer, usage=_usage(state.output))

        judging = None
        if settings.mode == "oeg":
            judge_model = InspectRoleModel(get_model(role=JUDGE_ROLE, required=True), plan.images)

            async def ask_judge(requests: Sequence[ChatRequest]) -> list[Completion]:
                try:
                    return await judge_model.generate(requests)
                except BaseException as exc:  # as for the model: Inspect's error
                    failure.append(exc)
                    raise

            judging = Judging(Judge(judge_model, votes=plan.judge_votes), ask_judge)
        result = await play(episode, ask, settings, pools=plan.pools, judging=judging)
        if failure:
            raise failure[0]
        state.messages = transcript  # the whole episode, for Inspect's viewer
        state.metadata[RESULT_KEY] = result.to_json()
        state.completed = True
        return state

    return solve


def _by_scenario() -> list[Any]:
    """Per-scenario means; "all" is the unweighted mean over scenarios, as our average row."""
    return [grouped(mean(), GROUP_KEY, all="groups")]


@scorer(metrics={"accuracy": _by_scenario(), "ps_rate": _by_scenario()})
def proactive_score() -> Scorer:
    """Multiple choice: accuracy on Inspect's 0-1 scale (1 for a correct episode) and the
    episode's proactive suggestions (a count: the ps rate is their mean per episode)."""

    async def score(state: TaskState, target: Target) -> Score:
        line = state.metadata[RESULT_KEY]
        return Score(
            value=episode_scores(line, fractions=True),
            answer=line["trace"][-1]["answer"] if line.get("trace") else None,
            explanation=line.get("end_reason"),
            metadata={RESULT_KEY: line},
        )

    return score


#: The open-ended rates Inspect reports (the judges' agreement stays in the lines).
OEG_RATES = ("ps", "cp", "aggregate")


@scorer(metrics={name: _by_scenario() for name in OEG_RATES})
def proactive_oeg_score() -> Scorer:
    """Open-ended generation: the judge's verdicts as rates on Inspect's 0-1 scale."""

    async def score(state: TaskState, target: Target) -> Score:
        line = state.metadata[RESULT_KEY]
        return Score(
            value={
                k: v
                for k, v in episode_scores(line, oeg=True, fractions=True).items()
                if k in OEG_RATES
            },
            answer=line.get("generation"),
            metadata={RESULT_KEY: line},
        )

    return score


# ----- the task ---------------------------------------------------------------------------------


def task_signature(settings: type[EvalSettings] = EvalSettings) -> inspect.Signature:
    """The task's parameters: the data, every setting Inspect can honour (decoding is Inspect's
    own `--max-tokens`, `--temperature`...), and the judge's votes."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter("data", keyword, annotation=str)]
    parameters += [
        inspect.Parameter(s.name, keyword, default=s.default, annotation=s.type)
        for s in offered(settings, "inspect")
    ]
    parameters.append(inspect.Parameter("judge_votes", keyword, default=1, annotation=int))
    return inspect.Signature(parameters, return_annotation=Task)


def proactivebench(data: str, judge_votes: int = 1, **settings: Any) -> Task:
    """The ProactiveBench scenarios in `data` (the official layout, or `proactivebench data
    synth`); every other parameter means what the `proactivebench eval` flag of the same name
    means. `mode=oeg` asks open-ended and judges with the `judge` model role
    (`--model-role judge=...`, `judge_votes=N`)."""
    checked = EvalSettings(**settings)
    if checked.mode == "oeg-multiturn":
        raise SettingsError(
            "mode=oeg-multiturn is not offered by the Inspect task (its scorer and judge role "
            "serve one-turn open-ended generation): run it with `proactivebench eval`"
        )
    check_votes(judge_votes)
    data_dir = Path(data).expanduser().resolve()
    plan = _prepare(data_dir, checked, judge_votes)

    def question(record: Record) -> str:
        """The sample's input as Inspect lists it; the solver asks the real turns."""
        episode = make_episode(record, **checked.episode_options())
        return episode.oeg_prompt() if checked.mode == "oeg" else episode.observation.prompt

    samples = [
        Sample(
            id=sample_id,
            input=question(record),
            target=record.answer,
            metadata={GROUP_KEY: record.scenario, "sample_id": record.id},
        )
        for sample_id, record in plan.records.items()
    ]
    oeg = checked.mode == "oeg"
    return Task(
        dataset=MemoryDataset(samples, name=f"proactivebench:{data_dir.name}"),
        solver=episode_player(plan),
        scorer=proactive_oeg_score() if oeg else proactive_score(),
        config=generate_config(checked.decoding),
        metadata={"data_dir": str(data_dir), "settings": checked.identity()},
    )


# The parameters Inspect lists, binds and records (`-T NAME=VALUE`) come from the settings'
# declaration, so that a new setting is a task parameter without an edit here.
proactivebench.__signature__ = task_signature()  # type: ignore[attr-defined]
proactivebench = task(proactivebench)
