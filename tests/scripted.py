"""Scripted answers for the adapter tests, and the direct run they are compared with.

Each episode's answers are computed by playing our episode with its answer key under a simple
policy; `proactivebench eval` with `replay:` of the same answers is the reference that the
Inspect task and the verifiers environment must agree with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from proactivebench.benchmark.registry import make_episode
from proactivebench.benchmark.scenarios import Observation
from proactivebench.benchmark.scenarios.base import best_move
from proactivebench.data.directory import load_dataset

#: The policy of the i-th sample of a scenario: a correct intervention while a later turn
#: remains (else the category), always this letter, or the oracle's move.
POLICIES = ("proactive", "A", "oracle")

Played = list[tuple[str, int, list[str]]]


def answer(policy: str, obs: Observation) -> str:
    if policy == "proactive" and obs.correct_actions and obs.turn < obs.max_turns:
        return obs.correct_actions[0]
    return best_move(obs) if policy in ("oracle", "proactive") else policy


def scripts(data: Path, policies: tuple[str, ...] = POLICIES, **options: Any) -> Played:
    """Each episode's answers, in run order (scenario by scenario, file order); the i-th
    sample of a scenario plays `policies[i % len(policies)]`."""
    played = []
    for records in load_dataset(data).records.values():
        for index, record in enumerate(records):
            episode = make_episode(record, **options)
            policy = policies[index % len(policies)]
            answers = []
            while not episode.done:
                answers.append(answer(policy, episode.observation))
                episode.step(answers[-1])
            played.append((record.scenario, record.id, answers))
    return played


def write_replay(played: Played, path: Path) -> Path:
    """A replay file (`replay:PATH`) of the scripted answers."""
    path.write_text(
        "".join(
            json.dumps({"scenario": s, "sample_id": i, "answers": a}) + "\n" for s, i, a in played
        )
    )
    return path


def direct_run(
    data: Path, out: Path, played: Played, flags: list[str], capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    """`proactivebench eval` of the same answers with `replay:` into `out`; its summary."""
    script = write_replay(played, out.with_name(out.name + "-answers.jsonl"))
    args = ["eval", "--data", str(data), "--model", f"replay:{script}", "--out", str(out)]
    code, text = run_cli([*args, *flags], capsys)
    assert code == 0, text
    return json.loads((out / "summary.json").read_text())


def lines(run: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """A run's result lines by episode, without token counts (replay reports none)."""
    found = {}
    for text in (run / "results.jsonl").read_text().splitlines():
        line = json.loads(text)
        for turn in line["trace"]:
            turn.pop("usage", None)
        found[line["scenario"], line["sample_id"]] = line
    return found
