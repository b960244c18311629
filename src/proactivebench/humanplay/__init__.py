"""A person plays the benchmark in the browser, through the same engine as a model.

`play_in_browser` locks the run directory, starts the web app (`humanplay.app`) and runs
`evaluate.aevaluate` with the `human:NAME` backend (`models.human`) behind it: one episode at a
time, no response cache (a person's answers are never replayed from it). The run directory is
an ordinary run, so resume, `report --vs`, `show` and `merge` work on it unchanged. An episode
left half-played when the server stops is not in `results.jsonl` (the engine writes finished
episodes only), so the next session plays it again from its first turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from proactivebench.benchmark.registry import scenario_order
from proactivebench.benchmark.results import result_key
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.data.directory import load_dataset
from proactivebench.humanplay.app import PlayState, make_app
from proactivebench.jobs.evaluate import RunOutcome, aevaluate
from proactivebench.models.human import Human
from proactivebench.run.play_episode import Result
from proactivebench.run.rundir import RESULTS, RunLock, latest_results, read_results
from proactivebench.run.selection import select_records
from proactivebench.run.settings import EvalSettings

DEFAULT_HOST = "127.0.0.1"


@dataclass
class Started:
    """What the command line tells when the app is up."""

    url: str
    total: int
    #: Episodes finished by earlier sessions.
    resumed: int


def outcome_of(result: Result) -> dict[str, Any]:
    """A finished episode as the page shows it: verdicts and the person's answers, never the
    correct category."""
    return {
        "scenario": result.scenario,
        "sample_id": result.sample_id,
        "correct": bool(getattr(result, "correct", False)),
        "end_reason": getattr(result, "end_reason", None),
        "num_turns": result.num_turns,
        "turns": [
            {"turn": t.turn, "answer": t.answer, "verdict": t.verdict}
            for t in getattr(result, "trace", [])
        ],
    }


def _progress(state: PlayState, data_dir: Path, out_dir: Path, settings: EvalSettings) -> None:
    """Episodes chosen and finished per scenario (the run's selection, read again: cheap next
    to a person's time), the scenarios in their one order, as every table shows them (not a
    set's, which changes from one session to the next)."""
    dataset = load_dataset(
        data_dir,
        settings.scenarios,
        all_samples=settings.all_samples,
        sample_filter=settings.sample_filter,
    )
    picked = select_records(dataset, settings.limit, subset=settings.subset)
    chosen = {(r.scenario, r.id) for r in picked}
    state.totals = Counter({s: 0 for s in scenario_order(s for s, _ in chosen)})
    state.totals.update(scenario for scenario, _ in chosen)
    for line in latest_results(read_results(out_dir / RESULTS)):
        if not line.get("error") and result_key(line) in chosen:
            state.done[line["scenario"]] += 1


def url_of(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


async def play_in_browser(
    data_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    settings: EvalSettings,
    annotator: str,
    *,
    host: str = DEFAULT_HOST,
    port: int = 0,
    on_ready: Callable[[Started], None] = lambda started: None,
    linger: bool = True,
) -> RunOutcome | None:
    """Serve the run to a person until it is complete; the outcome, or None if the person
    stopped the server first (`POST /api/quit`; what is finished is kept).

    `on_ready` is told the URL (with its token) once the server listens; `linger` keeps the
    summary page served after the last episode until the person closes the session.
    """
    model = Human(annotator)
    out = Path(out_dir)
    state = PlayState(model.desk, secrets.token_urlsafe(24), model.annotator)
    # Held around the server too: a second `play` on the run is refused before it serves.
    with RunLock(out):
        runner = web.AppRunner(make_app(state, history=settings.history), shutdown_timeout=1.0)
        await runner.setup()
        try:
            sock = listening_socket(host, port)
            bound = int(sock.getsockname()[1])
            await web.SockSite(runner, sock).start()

            def started(total: int, resumed: int) -> None:
                state.images = model.images
                state.resumed = resumed
                _progress(state, Path(data_dir), out, settings)
                on_ready(Started(url_of(host, bound, state.token), total, resumed))

            def finished(result: Result) -> None:
                state.done[result.scenario] += 1
                state.desk.finished(outcome_of(result))

            return await _serve(state, data_dir, model, out, settings, started, finished, linger)
        finally:
            state.desk.bump()  # release the page's waiting requests
            await runner.cleanup()


async def _serve(
    state: PlayState,
    data_dir: str | os.PathLike[str],
    model: Human,
    out: Path,
    settings: EvalSettings,
    started: Callable[[int, int], None],
    finished: Callable[[Result], None],
    linger: bool,
) -> RunOutcome | None:
    run = asyncio.ensure_future(
        aevaluate(
            data_dir, model, out, settings, concurrency=1, on_start=started, on_result=finished
        )
    )
    stop = asyncio.ensure_future(state.stop.wait())
    try:
        await asyncio.wait({run, stop}, return_when=asyncio.FIRST_COMPLETED)
        if not run.done():
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
            return None
        outcome = run.result()
        state.desk.complete(outcome.summary.as_dict())
        if linger:
            await stop
        return outcome
    finally:
        stop.cancel()
        if not run.done():
            run.cancel()


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port` (port 0: the system picks one), or one clear error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise ProactiveBenchError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --port "
            "or --host"
        ) from None
