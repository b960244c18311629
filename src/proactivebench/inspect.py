"""ProactiveBench as an Inspect AI task: `inspect eval proactivebench/proactivebench -T data=DIR`.

A thin adapter. Each Inspect sample is one of our episodes, played by the same code as
`proactivebench eval` (`runner.play_episode`, `oeg.play_oeg_episode`): the episode state
machine, the conversation builder, the answer reader and the judge stay ours. This module only
translates: our requests become Inspect chat messages (images as data URLs), Inspect's
`generate` answers them, and the finished episode becomes a score whose metadata holds the
exact `results.jsonl` line, so that `proactivebench import-inspect` turns a log back into a run.

Inspect owns retries, caching, concurrency and the model connection here; ours are not used.
Needs the `inspect` extra (`pip install -e '.[inspect]'`).
"""

from __future__ import annotations

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

from proactivebench.data.images import ImageStore
from proactivebench.errors import ProactiveBenchError
from proactivebench.judge import Judge
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
from proactivebench.oeg import play_oeg_episode
from proactivebench.prompting import Message, is_image_part
from proactivebench.records import Record
from proactivebench.runner import (
    EvalSettings,
    choose_episodes,
    episode_conversations,
    play_episode,
)
from proactivebench.scenarios import make_episode

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


def _usage(output: Any) -> dict[str, int] | None:
    usage = getattr(output, "usage", None)
    if usage is None:
        return None
    return {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens}


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


def _scenario_list(scenarios: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if scenarios is None or scenarios == "":
        return None
    if isinstance(scenarios, str):
        return tuple(s.strip() for s in scenarios.split(",") if s.strip())
    return tuple(str(s) for s in scenarios)


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
    conversations = episode_conversations(settings, plan.pools)

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

        identity = settings.identity()
        if settings.mode == "oeg":
            judge_model = InspectRoleModel(get_model(role=JUDGE_ROLE, required=True), plan.images)
            judge = Judge(judge_model, votes=plan.judge_votes)
            identity["judge"] = judge.identity()

            async def ask_judge(requests: Sequence[ChatRequest]) -> list[Completion]:
                try:
                    return await judge_model.generate(requests)
                except BaseException as exc:  # as for the model: Inspect's error
                    failure.append(exc)
                    raise

            result: Any = await play_oeg_episode(episode, ask, settings.decoding, judge, ask_judge)
        else:
            conversation, demos = conversations(episode)
            result = await play_episode(
                episode,
                ask,
                settings.decoding,
                conversation=conversation,
                lenient=settings.answer_extraction == "lenient",
            )
            if demos:
                result.demonstrations = [d.to_json() for d in demos]
        if failure:
            raise failure[0]
        result.settings = identity
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
    """Multiple choice: accuracy (%) and proactive suggestions of the episode."""

    async def score(state: TaskState, target: Target) -> Score:
        line = state.metadata[RESULT_KEY]
        return Score(
            value={
                "accuracy": 100.0 if line.get("correct") else 0.0,
                "ps_rate": float(line["num_turns"] - 1),
            },
            answer=line["trace"][-1]["answer"] if line.get("trace") else None,
            explanation=line.get("end_reason"),
            metadata={RESULT_KEY: line},
        )

    return score


@scorer(metrics={"ps": _by_scenario(), "cp": _by_scenario(), "aggregate": _by_scenario()})
def proactive_oeg_score() -> Scorer:
    """Open-ended generation: the judge's verdicts as rates (%)."""

    async def score(state: TaskState, target: Target) -> Score:
        line = state.metadata[RESULT_KEY]
        return Score(
            value={
                "ps": 100.0 * (line.get("proactive_suggestion") or 0),
                "cp": 100.0 * (line.get("category_prediction") or 0),
                "aggregate": 100.0 * (line.get("aggregate") or 0),
            },
            answer=line.get("generation"),
            metadata={RESULT_KEY: line},
        )

    return score


# ----- the task ---------------------------------------------------------------------------------


@task
def proactivebench(
    data: str,
    scenarios: str | list[str] | None = None,
    hint: bool = False,
    reference: bool = False,
    random_actions: bool = False,
    history: bool = False,
    resize_short_edge: int | None = None,
    icl: int = 0,
    cot: bool = False,
    icl_reduced: bool = False,
    option_order: str = "record",
    answer_extraction: str = "strict",
    mode: str = "mcqa",
    judge_votes: int = 1,
    seed: int = 0,
    limit: int | None = None,
    all_samples: bool = False,
) -> Task:
    """The ProactiveBench scenarios in `data` (the official layout, or `proactivebench data
    synth`); every option means what the `proactivebench eval` flag of the same name means.
    `mode=oeg` asks open-ended and judges with the `judge` model role
    (`--model-role judge=...`)."""
    settings = EvalSettings(
        hint=hint,
        reference=reference,
        random_actions=random_actions,
        seed=seed,
        limit=limit,
        all_samples=all_samples,
        scenarios=_scenario_list(scenarios),
        history=history,
        resize_short_edge=resize_short_edge,
        icl=icl,
        cot=cot,
        icl_reduced=icl_reduced,
        answer_extraction=answer_extraction,
        option_order=option_order,
        mode=mode,
    )
    if isinstance(judge_votes, bool) or not isinstance(judge_votes, int) or judge_votes < 1:
        raise ProactiveBenchError(f"judge_votes must be an integer >= 1, got {judge_votes!r}")
    data_dir = Path(data).expanduser().resolve()
    plan = _prepare(data_dir, settings, judge_votes)

    def question(record: Record) -> str:
        """The sample's input as Inspect lists it; the solver asks the real turns."""
        episode = make_episode(record, **settings.episode_options())
        return episode.oeg_prompt() if mode == "oeg" else episode.observation.prompt

    samples = [
        Sample(
            id=sample_id,
            input=question(record),
            target=record.answer,
            metadata={GROUP_KEY: record.scenario, "sample_id": record.id},
        )
        for sample_id, record in plan.records.items()
    ]
    return Task(
        dataset=MemoryDataset(samples, name=f"proactivebench:{data_dir.name}"),
        solver=episode_player(plan),
        scorer=proactive_oeg_score() if mode == "oeg" else proactive_score(),
        config=generate_config(settings.decoding),
        metadata={"data_dir": str(data_dir), "settings": settings.identity()},
    )
