"""Answers replayed from a JSONL file: re-score saved outputs, or script an episode by hand.

Each line: `{"scenario": "ROD", "sample_id": 12, "answers": ["B", "dog"]}`; turn k gets
`answers[k-1]`, and `""` once they run out (or for an episode the file does not mention).
Other keys are ignored, so a results file of another tool can be replayed after renaming.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from proactivebench.benchmark.registry import lookup, scenario_names
from proactivebench.core.errors import DataError, DataErrors
from proactivebench.data.jsonl import json_lines
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model, episode_turn


def read_replay(path: Path) -> dict[tuple[str, int], list[str]]:
    """Parse and validate a replay file; every problem is reported with its line."""
    scripts: dict[tuple[str, int], list[str]] = {}
    problems: list[DataError] = []
    for number, obj in json_lines(path, "cannot read replay file"):

        def problem(msg: str, field: str | None = None, n: int = number) -> None:
            problems.append(DataError(msg, path=str(path), line=n, field=field))

        if isinstance(obj, DataError):
            problems.append(obj)
            continue
        if not isinstance(obj, dict):
            problem("expected a JSON object")
            continue
        scenario = obj.get("scenario")
        sample_id = obj.get("sample_id")
        answers = obj.get("answers")
        if not isinstance(scenario, str) or lookup(scenario) is None:
            known = ", ".join(scenario_names())
            problem(f"unknown scenario {scenario!r}; choose from {known}", "scenario")
        elif isinstance(sample_id, bool) or not isinstance(sample_id, int):
            problem("expected an integer", "sample_id")
        elif not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            problem("expected a list of strings", "answers")
        else:
            key = (lookup(scenario), sample_id)
            if key in scripts:
                problem(f"a second script for {key[0]} sample {sample_id}")
            scripts[key] = answers
    if problems:
        raise DataErrors(problems)
    return scripts


class Replay(Model):
    needs_images = False
    answers_requests = False
    max_batch = 1024
    #: Not cached: the answer is the script's for the observation's episode and turn, read
    #: faster than a cache lookup.
    cacheable = False

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"replay:{self.path.name}"
        self.scripts = read_replay(self.path)

    def sent_decoding(self, decoding: Decoding) -> dict[str, Any]:
        """Nothing: the answers do not depend on decoding (run.json's provenance says so)."""
        return {}

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out = []
        for request in requests:
            obs = episode_turn(request, self.name)
            answers = self.scripts.get((obs.scenario, obs.sample_id), [])
            out.append(Completion(answers[obs.turn - 1] if obs.turn <= len(answers) else ""))
        return out
