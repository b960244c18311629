"""Open-ended generation (docs/protocol.md §6): one turn without options, judged.

The model gets the first image and the open-ended question; a judge (`judge.Judge`) decides
which of the scenario's valid answers the generation holds. An episode here is the protocol's
logic plus two model calls; the runner supplies the calls, so that batching, caching, retries and
the results file work as for multiple choice. `rejudge` judges a finished run again from its
lines, without asking the tested model anything.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from proactivebench.errors import ProactiveBenchError, RunAbort, episode_error
from proactivebench.judge import Judge, answer_entries
from proactivebench.metrics import Summary, summarize
from proactivebench.models.base import ChatRequest, Completion, Decoding
from proactivebench.prompting import Message
from proactivebench.results import OEGResult, is_oeg_line, result_order
from proactivebench.rundir import (
    RESULTS,
    RUN_CONFIG,
    latest_results,
    read_results,
    read_run_config,
    write_summary,
)
from proactivebench.scenarios import Episode

Ask = Callable[[ChatRequest], Awaitable[Completion]]
AskMany = Callable[[Sequence[ChatRequest]], Awaitable[list[Completion]]]


def oeg_messages(episode: Episode) -> list[Message]:
    """The model's request: the first image, then the open-ended question."""
    return [
        {
            "role": "user",
            "content": [
                {"type": "image", "view": episode.observation.view},
                {"type": "text", "text": episode.oeg_prompt()},
            ],
        }
    ]


async def play_oeg_episode(
    episode: Episode,
    ask: Ask,
    decoding: Decoding,
    judge: Judge,
    ask_judge: AskMany,
    *,
    answer_key: bool = False,
) -> OEGResult:
    """Generate once and judge; a failed call (model or judge) is an error on the episode."""
    record, obs = episode.record, episode.observation
    view = obs.view
    result = OEGResult(
        scenario=record.scenario,
        sample_id=record.id,
        image=view.image,
        prompt=episode.oeg_prompt(),
        crop=list(view.crop) if view.crop is not None else None,
        correct_category=record.answer,
    )
    shown = obs if answer_key else obs.without_answer_key()
    try:
        completion = await ask(ChatRequest(oeg_messages(episode), shown, decoding))
    except RunAbort:
        raise
    except Exception as exc:
        result.error = episode_error(exc)
        return result
    result.generation = completion.text if isinstance(completion.text, str) else ""
    result.usage = completion.usage
    result.latency_s = round(completion.latency_s, 4) if completion.latency_s else None
    result.cached = completion.cached or None
    valid = episode.oeg_answers()
    await _judge_into(result, valid, judge, ask_judge)
    return result


async def _judge_into(result: OEGResult, valid: str, judge: Judge, ask_judge: AskMany) -> None:
    """Judge `result`'s generation against `valid` and record the verdict (or the error)."""
    result.valid_answers_text = valid
    result.valid_answers = answer_entries(valid)
    requests = judge.requests(result.prompt, valid, result.generation or "")
    try:
        outputs = [c.text if isinstance(c.text, str) else "" for c in await ask_judge(requests)]
    except RunAbort:
        raise
    except Exception as exc:
        result.error = f"judge: {episode_error(exc)}"
        return
    judgement = Judge.decide(valid, outputs, result.scenario)
    result.judge_outputs = list(judgement.outputs)
    result.proactive_suggestion = judgement.verdict.proactive_suggestion
    result.category_prediction = judgement.verdict.category_prediction
    result.aggregate = judgement.verdict.aggregate
    result.judge_agreement = round(judgement.agreement, 4)
    result.error = None


async def rejudge_lines(
    lines: Sequence[dict[str, Any]], judge: Judge, ask_judge: AskMany, settings: dict[str, Any]
) -> list[OEGResult]:
    """The lines of a finished OEG run judged again; lines without a generation stay errors."""
    judged = []
    for line in lines:
        result = OEGResult.from_json(line)
        result.settings = settings
        if result.generation is not None and result.valid_answers_text is not None:
            await _judge_into(result, result.valid_answers_text, judge, ask_judge)
        judged.append(result)
    return judged


def rejudge(
    run_dir: str | os.PathLike[str],
    judge: Judge,
    out_dir: str | os.PathLike[str] | None = None,
) -> Summary:
    """Judge a finished OEG run again with `judge`, into `out_dir` (default: in place).

    The tested model is not asked again: its generations are read from the results file.
    `run.json` and every line record the new judge.
    """
    run = Path(run_dir)
    identity = read_run_config(run)
    lines = latest_results(read_results(run / RESULTS))
    if not lines or not all(is_oeg_line(line) for line in lines):
        raise ProactiveBenchError(f"{run} holds no open-ended (--mode oeg) results to judge")
    settings = {**identity.get("settings", {}), "judge": judge.identity()}
    identity = {**identity, "settings": settings}

    async def judge_all() -> list[OEGResult]:
        try:
            return await rejudge_lines(lines, judge, judge.model.generate, settings)
        finally:
            await judge.model.aclose()

    judged = asyncio.run(judge_all())
    out = Path(out_dir) if out_dir is not None else run
    out.mkdir(parents=True, exist_ok=True)
    ordered = sorted((r.to_json() for r in judged), key=result_order)
    _replace(out / RESULTS, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ordered))
    _replace(out / RUN_CONFIG, json.dumps(identity, indent=2) + "\n")
    summary = summarize(ordered, model=str(identity.get("model", "")))
    write_summary(out, summary)
    return summary


def _replace(path: Path, text: str) -> None:
    """Write `text` to `path` all at once: a crash leaves the old file or the new one."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
