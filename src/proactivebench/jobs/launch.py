"""Data-parallel evaluation under a launcher: `torchrun --nproc-per-node N -m proactivebench
eval ...` or `accelerate launch ... -m proactivebench eval ...` (one node or several) plays one
run as N shards, one per process, and rank 0 merges them when every rank is done.

The launcher is found from the environment both launchers set (`RANK`, `WORLD_SIZE`,
`LOCAL_RANK`): rank I plays shard I/N, the same slice `--shard I/N` plays
(`selection.select_records`), into its own run directory `RUN/ranks/rank-I-of-N`, a whole run
directory as `eval --shard I/N --out RUN/ranks/rank-I-of-N` writes it (run.json with its
shard, results.jsonl, summary.json; no report). Rank 0 then joins them into RUN with
`rundir.merge_runs`, as `merge` does (RUN's run.json: the run's identity without a shard, and
the provenance of every rank's invocations), replacing the results of an earlier merge. A
rerun of the same command resumes every shard directory (only missing episodes or those that
ended in an error are played) and merges again; with another process count the shards are
other slices, in new directories, played afresh.

Why `torch.distributed` (gloo) rather than a file barrier: the launcher already runs its
rendezvous (`MASTER_ADDR`/`MASTER_PORT`, set for `env://`), gloo works on CPU and beside
CUDA, and a peer that dies closes its connections, so the ranks waiting for it get an error
at once instead of waiting out a timeout (and torchrun, seeing a worker fail, stops the others
with SIGTERM, which ends them as Ctrl-C does). The group's timeout is long (`SYNC_TIMEOUT`):
ranks finish their shards at different times, and gloo's default of 30 minutes would fail a
rank that waits for a slow one. Every rank reaches the collectives whatever became of its own
shard (`RankReport`: what it played, its episode errors, or why it could not go on), so rank 0
can say which rank failed and why, and merge only when no rank failed; and no rank ends before
rank 0 has merged (`LaunchedRun.agree`): a launcher stops the remaining workers as soon as one
exits with a failure.

Rank 0 holds RUN's `RunLock` for the whole run (a plain `eval --out RUN` meanwhile is
refused), every rank its own shard directory's. RUN must be on a filesystem every node sees:
rank 0 checks every shard directory before merging and says which one it cannot see.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from proactivebench.benchmark.metrics import Summary
from proactivebench.benchmark.results import cached_answers
from proactivebench.core.errors import LaunchError, ProactiveBenchError
from proactivebench.jobs.evaluate import RunOutcome
from proactivebench.run.rundir import (
    RESULTS,
    RUN_CONFIG,
    SHARD,
    RunLock,
    latest_results,
    merge_runs,
    read_results,
    read_run_config,
)

#: The folder of RUN that holds the ranks' shard directories.
RANKS = "ranks"
#: How long a rank waits for the others at a collective: longer than any shard takes.
SYNC_TIMEOUT = timedelta(days=7)
#: How often a rank waiting at a collective lets Python run its signal handlers (Ctrl-C, SIGTERM).
WAIT_POLL_S = 0.2

#: What a rank is given to play its shard: (its shard directory, (I, N)) -> the run's outcome.
PlayShard = Callable[[Path, tuple[int, int]], RunOutcome]


@dataclass(frozen=True)
class Launch:
    """This process's place in a launched run."""

    rank: int
    world_size: int
    local_rank: int

    @property
    def shard(self) -> tuple[int, int]:
        return (self.rank, self.world_size)

    @property
    def leader(self) -> bool:
        """Rank 0: the one that prints, merges and writes the report."""
        return self.rank == 0

    def shard_dir(self, run_dir: Path, rank: int | None = None) -> Path:
        """The run directory of a rank's shard (this rank's by default)."""
        index = self.rank if rank is None else rank
        return Path(run_dir) / RANKS / f"rank-{index}-of-{self.world_size}"


def detect_launch(environ: Mapping[str, str] | None = None) -> Launch | None:
    """This process's place when a launcher (torchrun, accelerate launch) started several;
    None when none did, or when it started one process (that is a plain run, into RUN itself).
    """
    env = os.environ if environ is None else environ
    if "RANK" not in env and "WORLD_SIZE" not in env:
        refuse_one_cpu_process(env)
        return None
    try:
        rank, world_size = int(env["RANK"]), int(env["WORLD_SIZE"])
        local_rank = int(env.get("LOCAL_RANK", rank))
    except (KeyError, ValueError):
        names = ", ".join(f"{k}={env.get(k)!r}" for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
        raise LaunchError(
            f"started by a launcher, but its environment is not usable ({names}): RANK and "
            "WORLD_SIZE must both be integers"
        ) from None
    if world_size <= 1:
        return None
    if not 0 <= rank < world_size:
        raise LaunchError(f"RANK={rank} is outside WORLD_SIZE={world_size}")
    return Launch(rank, world_size, local_rank)


#: What MPI launchers set for each process (accelerate's --cpu runs several through mpirun).
MPI_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_SIZE")


def refuse_one_cpu_process(env: Mapping[str, str]) -> None:
    """`accelerate launch --cpu --num_processes N` (N > 1) without an MPI hostfile starts ONE
    process: its simple launcher sets MASTER_ADDR/MASTER_PORT for the N it was asked for but
    neither RANK nor WORLD_SIZE, and runs the command once, which would play the whole run
    unsharded as if N had been launched. Refused, saying what to use on CPU."""
    cpu = env.get("ACCELERATE_USE_CPU", "").strip().lower() in ("1", "true", "yes")
    if not cpu or "MASTER_ADDR" not in env or any(name in env for name in MPI_VARIABLES):
        return
    raise LaunchError(
        "started by 'accelerate launch --cpu' with several processes, but accelerate started "
        "only this one (its --cpu launches several only through MPI): the run would play "
        "unsharded. On CPU use 'torchrun --nproc-per-node N -m proactivebench ...' or "
        "'accelerate launch --multi_gpu --num_processes N ...' (CPU where there is no GPU)"
    )


@dataclass(frozen=True)
class RankReport:
    """What became of one rank's shard, as rank 0 receives it."""

    rank: int
    host: str
    shard_dir: str
    episodes: int = 0
    played: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    #: Why the rank could not play its shard (None: it did).
    failure: str | None = None

    def describe(self, world_size: int) -> str:
        who = f"rank {self.rank} of {world_size} ({self.host})"
        if self.failure is not None:
            return f"{who}: failed: {self.failure}"
        done = self.episodes - self.played
        before = f" ({done} done before)" if done else ""
        errors = f", {sum(self.errors.values())} ended in an error" if self.errors else ""
        played = f"{self.episodes} episodes, {self.played} played{before}{errors}"
        return f"{who}: {played} in {self.shard_dir}"


@dataclass
class LaunchedOutcome:
    """The whole launched run, as each rank sees it: rank 0 has every rank's report and the
    merged run (or why it was not merged); the other ranks have their own report only."""

    reports: list[RankReport]
    #: The merged run's summary (rank 0, when every rank played its shard and the merge worked).
    merged: Summary | None = None
    #: Why RUN was not merged (rank 0): failed ranks, shard directories it cannot see, ...
    problem: str | None = None
    #: The merged results' episode errors (reason -> count).
    errors: Counter[str] = field(default_factory=Counter)
    #: The merged run's answers and how many came from the response cache.
    answers: int = 0
    cached: int = 0


class LaunchedRun:
    """One launched `eval`: the process group for its whole life (a context manager), the
    ranks' shards played and merged (`evaluate`), and the exit status they agree on (`agree`).
    """

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self._dist: Any = None
        self._agreed = False
        self._interrupted = False
        self._held = contextlib.ExitStack()

    def __enter__(self) -> LaunchedRun:
        try:
            import torch.distributed as dist
        except ImportError:
            raise LaunchError(
                "a launched (data-parallel) eval needs torch: pip install -e '.[hf]'"
            ) from None
        self._collective(
            "joining the process group",
            lambda: dist.init_process_group("gloo", init_method="env://", timeout=SYNC_TIMEOUT),
        )
        self._dist = dist
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        try:
            # A rank that fails between `evaluate` and `agree` still lets the others go (with
            # a failure); Ctrl-C or SIGTERM reaches every rank, so none waits for an agreement.
            if exc is not None and not self._agreed and not isinstance(exc, KeyboardInterrupt):
                with contextlib.suppress(ProactiveBenchError):
                    self.agree(1)
        finally:
            self._held.close()
            # Interrupted in a collective: its helper thread still waits in the group, which
            # destroying could wait for; the process ends anyway.
            if self._dist is not None and self._dist.is_initialized() and not self._interrupted:
                self._dist.destroy_process_group()

    def _collective(self, what: str, call: Callable[[], Any]) -> Any:
        try:
            return self._interruptible(what, call)
        except (RuntimeError, ValueError, TimeoutError) as exc:
            reason = _first_sentence(str(exc)) or type(exc).__name__
            raise LaunchError(
                f"rank {self.launch.rank} of {self.launch.world_size} lost contact with the other "
                f"ranks while {what} ({reason}): a rank ended early (the launcher's report names "
                "it); rerun the same command to resume, finished episodes are kept"
            ) from None

    def _interruptible(self, what: str, call: Callable[[], Any]) -> Any:
        """`call` (a rendezvous or collective, blocking in C++ for up to `SYNC_TIMEOUT`) in a
        helper thread, while this one waits in short joins: Python runs signal handlers only in
        the main thread between bytecodes, so a rank blocked in the call itself would ignore
        Ctrl-C and SIGTERM for days when its peers never come. Interrupted, it says where it
        was waiting and stops as any interrupted command does (exit 130, or 143 for SIGTERM);
        the helper thread, a daemon, ends with the process."""
        done: list[Any] = []

        def run() -> None:
            try:
                done.append((True, call()))
            except BaseException as exc:  # handed to the waiting thread
                done.append((False, exc))

        helper = threading.Thread(target=run, name=f"rank-{self.launch.rank}-wait", daemon=True)
        try:
            # Started inside the `try`: `start` waits for the thread, which may already be in
            # the call (connected, waiting for its peers) when a signal interrupts that wait.
            helper.start()
            while helper.is_alive():
                helper.join(WAIT_POLL_S)
        except KeyboardInterrupt:
            self._interrupted = True
            print(
                f"rank {self.launch.rank} of {self.launch.world_size}: stopped while {what}",
                file=sys.stderr,
                flush=True,
            )
            raise
        succeeded, value = done[0]
        if not succeeded:
            raise value
        return value

    def evaluate(self, run_dir: Path, play: PlayShard) -> LaunchedOutcome:
        """Play this rank's shard into its shard directory, then (rank 0) merge every rank's
        into `run_dir` when all of them played theirs."""
        run_dir = Path(run_dir)
        report = self._play(run_dir, play)
        reports: list[Any] = [None] * self.launch.world_size
        self._collective(
            "waiting for every rank to finish its shard",
            lambda: self._dist.all_gather_object(reports, report),
        )
        if not self.launch.leader:
            return LaunchedOutcome(reports)  # every rank's: where rank 0 is, for the CLI
        return merge_shards(self.launch, run_dir, reports)

    def _play(self, run_dir: Path, play: PlayShard) -> RankReport:
        """This rank's shard, played; whatever fails is reported, not raised, so that this
        rank reaches the collective that every other rank waits at."""
        shard_dir = self.launch.shard_dir(run_dir)
        host = socket.gethostname()
        try:
            refuse_plain_run(run_dir)
            if self.launch.leader:
                self._held.enter_context(RunLock(run_dir))
            outcome = play(shard_dir, self.launch.shard)
        except ProactiveBenchError as exc:
            return RankReport(self.launch.rank, host, str(shard_dir), failure=str(exc))
        except Exception as exc:  # a bug: its traceback here, its one line to rank 0
            traceback.print_exc()
            failure = f"{type(exc).__name__}: {exc} (traceback in rank {self.launch.rank}'s output)"
            return RankReport(self.launch.rank, host, str(shard_dir), failure=failure)
        episodes = outcome.resumed + outcome.played
        return RankReport(
            self.launch.rank,
            host,
            str(shard_dir),
            episodes=episodes,
            played=outcome.played,
            errors=dict(outcome.errors),
        )

    def agree(self, status: int) -> int:
        """Rank 0's exit status, for every rank: each ends with it, and none ends before rank 0
        is done writing (a launcher stops the others when one ends with a failure)."""
        shared = [status]
        self._agreed = True
        self._collective(
            "waiting for rank 0 to merge the shards",
            lambda: self._dist.broadcast_object_list(shared, src=0),
        )
        return int(shared[0])


def _first_sentence(message: str) -> str:
    """The gist of a backend's error: gloo's start with the C++ source location and go on with
    advice for its own developers."""
    text = re.sub(r"^\[[^\]]*\]\s*", "", message.strip())
    lines = text.splitlines()
    return lines[0].split(". ")[0].rstrip(".") if lines else ""


def refuse_plain_run(run_dir: Path) -> None:
    """RUN of a launched run holds its ranks' shards and their merge; a run played into it
    without a launcher (or a `--shard` of one) would be overwritten by the merge: refused."""
    if not (run_dir / RUN_CONFIG).exists() or (run_dir / RANKS).is_dir():
        return
    shard = read_run_config(run_dir).get(SHARD)
    what = "a shard of a run (--shard)" if shard else "a run played without a launcher"
    raise LaunchError(
        f"{run_dir} holds {what}; a launched eval writes its shards under {run_dir / RANKS} and "
        "merges them into it: use another --out"
    )


def merge_shards(launch: Launch, run_dir: Path, reports: list[RankReport]) -> LaunchedOutcome:
    """Rank 0: join the shard directories of `reports` into `run_dir` when every rank played
    its shard and rank 0 sees every shard directory (multi-node: a shared filesystem); else
    why not, in `problem`."""
    outcome = LaunchedOutcome(reports)
    failed = [r for r in reports if r.failure is not None]
    if failed:
        ranks = ", ".join(str(r.rank) for r in failed)
        outcome.problem = (
            f"{len(failed)} of {launch.world_size} ranks could not play their shard (rank "
            f"{ranks}, as said above), so {run_dir} was not merged; fix that and rerun the same "
            "command: it resumes every shard"
        )
        return outcome
    unseen = [r for r in reports if not (Path(r.shard_dir) / RUN_CONFIG).exists()]
    if unseen:
        here = socket.gethostname()
        lines = ", ".join(f"{r.shard_dir} (written by rank {r.rank} on {r.host})" for r in unseen)
        outcome.problem = (
            f"rank 0 on {here} cannot see {lines}: --out must be on a filesystem that every node "
            "shares"
        )
        return outcome
    shard_dirs = [launch.shard_dir(run_dir, r.rank) for r in reports]
    try:
        outcome.merged = merge_runs(shard_dirs, run_dir, replace=True)
    except ProactiveBenchError as exc:
        outcome.problem = f"cannot merge the shards into {run_dir}: {exc}"
        return outcome
    lines = latest_results(read_results(run_dir / RESULTS))
    outcome.errors = Counter(str(r["error"]) for r in lines if r.get("error"))
    outcome.answers, outcome.cached = cached_answers(lines)
    return outcome
