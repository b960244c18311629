"""A person as the model: the `human:NAME` backend that `proactivebench play` runs.

A person plays through the same engine as any model, so their run directory is an ordinary run
(`run.json` with model `human:NAME`, `results.jsonl`, resume, the lock, `report --vs`). The
backend does not answer by itself: each request goes to a `Desk`, where the web app
(`proactivebench.humanplay`) shows it to the person and hands back the option they chose. The
latency recorded is the time the person took, from the moment the turn was first shown.

What the desk holds is what a model is shown: the observation without its answer key, never
the record's answer. The desk also keeps the episode's earlier turns (for `--history`) and
holds a new episode's first turn back until the previous episode's result is written, so the
page can show that verdict before the next turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from proactivebench.benchmark.scenarios import Observation, View
from proactivebench.benchmark.scenarios.answers import option_letter
from proactivebench.core.errors import ModelSpecError
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model, episode_turn

#: What an annotator's name may hold: it becomes part of the model name and of file names.
ANNOTATOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def check_annotator(name: str) -> str:
    """`name` if it can name an annotator, else one clear error."""
    if not ANNOTATOR.fullmatch(name):
        raise ModelSpecError(
            f"annotator name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-', starting "
            "with a letter or digit"
        )
    return name


@dataclass
class Turn:
    """One turn waiting for (or given) the person's answer; ids are opaque to the browser."""

    id: str
    observation: Observation
    #: The episode's earlier turns of this session, with the answers given (for `--history`).
    earlier: list[tuple[Turn, str]]
    asked: float = field(default_factory=time.monotonic)
    shown: float | None = None
    answer: asyncio.Future[str] | None = None

    @property
    def episode(self) -> tuple[str, int]:
        return self.observation.scenario, self.observation.sample_id


class Desk:
    """Where the engine's requests wait for a person, and what the page polls.

    Everything happens on the run's event loop: the engine asks (`ask`), the web app reads
    the state and answers (`answer`), the engine reports finished episodes (`finished`).
    `version` counts changes, so the page can wait for the next one (`changed`, a long poll).
    """

    def __init__(self) -> None:
        self.current: Turn | None = None
        self.views: dict[str, View] = {}
        self._ids: dict[View, str] = {}
        self.version = 0
        self._tick = asyncio.Event()
        self._started: tuple[str, int] | None = None
        self._earlier: list[tuple[Turn, str]] = []
        self.episodes_started = 0
        self.episodes_finished = 0
        #: The latest finished episode's outcome, as the page shows it (no answer key).
        self.last: dict[str, Any] | None = None
        #: Set when the run is over: the summary the page shows last.
        self.summary: dict[str, Any] | None = None

    def bump(self) -> None:
        """Something changed: wake whoever waits for a change."""
        self.version += 1
        self._tick.set()
        self._tick = asyncio.Event()

    async def changed(self, since: int, timeout: float) -> None:
        """Wait until something changed after `since`, or `timeout` seconds passed."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self.version <= since:
                    await self._tick.wait()

    def image_id(self, view: View) -> str:
        """An opaque id for `view`: the browser never learns a file name."""
        key = self._ids.get(view)
        if key is None:
            key = self._ids[view] = secrets.token_urlsafe(12)
            self.views[key] = view
        return key

    async def ask(self, observation: Observation) -> tuple[str, float]:
        """Show `observation` and wait for the person's answer: (letter, seconds taken)."""
        key = (observation.scenario, observation.sample_id)
        if key != self._started:
            # A new episode: shown only once the previous one's result is in, so the page
            # tells its verdict first.
            while self.episodes_finished < self.episodes_started:
                await self._tick.wait()
            self._started = key
            self._earlier = []
            self.episodes_started += 1
        turn = Turn(secrets.token_urlsafe(12), observation, list(self._earlier))
        turn.answer = asyncio.get_running_loop().create_future()
        self.image_id(observation.view)
        self.current = turn
        self.bump()
        try:
            answer = await turn.answer
        finally:
            if self.current is turn:
                self.current = None
        self._earlier.append((turn, answer))
        return answer, time.monotonic() - (turn.shown or turn.asked)

    def seen(self, turn_id: str) -> None:
        """The page showed the turn: the person's time starts now."""
        if self.current is not None and self.current.id == turn_id and self.current.shown is None:
            self.current.shown = time.monotonic()

    def answer(self, turn_id: str, letter: str) -> str | None:
        """Give the current turn's answer; None if done, else why it was refused."""
        turn = self.current
        if turn is None or turn.id != turn_id or turn.answer is None or turn.answer.done():
            return "this turn is no longer waiting for an answer (reload the page)"
        letters = [option_letter(i) for i in range(len(turn.observation.options))]
        if letter not in letters:
            return f"choose one of the options {', '.join(letters)}"
        turn.answer.set_result(letter)
        return None

    def finished(self, outcome: dict[str, Any]) -> None:
        """An episode's result was written: its outcome is what the page shows next."""
        self.episodes_finished += 1
        self.last = outcome
        self.bump()

    def complete(self, summary: dict[str, Any]) -> None:
        """The run is over: the page shows `summary`."""
        self.summary = summary
        self.bump()


class Human(Model):
    """Asks a person, one turn at a time, through a `Desk`."""

    needs_images = False  # the page reads the view from the image store itself
    max_batch = 1
    #: Never cached: a person's answer is theirs to give at each turn, not a function of the
    #: request (the same picture twice may well get two answers).
    cacheable = False

    def __init__(self, annotator: str, desk: Desk | None = None) -> None:
        self.annotator = check_annotator(annotator)
        self.name = f"human:{annotator}"
        self.desk = desk or Desk()

    def sent_decoding(self, decoding: Decoding) -> dict[str, Any]:
        """Nothing: a person's answer does not depend on decoding."""
        return {}

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out = []
        for request in requests:
            letter, seconds = await self.desk.ask(episode_turn(request, self.name))
            out.append(Completion(letter, latency_s=seconds))
        return out
