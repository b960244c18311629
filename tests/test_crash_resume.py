"""A run killed at any point (SIGKILL) or interrupted (Ctrl-C) resumes to the same results.

Real processes against the fake OpenAI server in its own process: the CLI is killed once a
seeded random number of episodes has been written, rerun, killed again, and finally run to the
end; the union must be exactly the episodes of an uninterrupted run, none twice, none lost.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clirun import ctrl_c_as_in_a_terminal
from proactivebench.data.synth import generate
from proactivebench.testing.server import ServerProcess
from resultlines import comparable

PER_SCENARIO = 12  # 84 episodes
#: How long a wait on a condition may last before the run counts as hung (generous: load).
WAIT_BOUND_S = 900


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth")
    generate(root, per_scenario=PER_SCENARIO, seed=3)
    return root


@pytest.fixture(scope="module")
def server_url() -> str:
    with ServerProcess(latency=0.02) as server:
        yield server.url


def command(data: Path, url: str, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "proactivebench", "eval", "--data", str(data),
        "--model", f"openai:fake-vlm@{url}", "--out", str(out), "--concurrency", "4", "--no-cache",
    ]  # fmt: skip


def environment(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, OPENAI_API_KEY="test-key", PROACTIVEBENCH_CACHE=str(tmp_path / "c"))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def lines(out: Path) -> list[str]:
    path = out / "results.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def keyed(out: Path) -> dict[tuple[str, int], dict]:
    result = {}
    for line in lines(out):
        record = json.loads(line)
        key = (record["scenario"], record["sample_id"])
        assert key not in result, f"episode {key} written twice"
        result[key] = comparable(record)
    return result


def ctrl_c_as_in_a_background_job() -> None:
    """Run in the child before exec: SIGINT ignored, as `cmd &` in a script starts it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start_and_stop(
    cmd: list[str], env: dict[str, str], out: Path, after: int, sig: int, background: bool = False
):
    """Start the CLI and send `sig` once `after` episodes are on disk; returns the process."""
    process = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=ctrl_c_as_in_a_background_job if background else ctrl_c_as_in_a_terminal,
    )  # fmt: skip
    # Wait on the condition itself, never on a clock: under load (a suite beside other jobs)
    # the CLI's start-up alone can take minutes, and a signal sent when a timeout passed
    # would reach a process still importing, before its handler exists (killed by the
    # default action, no message, fewer lines than `after`). The bound only ends a hung run.
    deadline = time.monotonic() + WAIT_BOUND_S
    while len(lines(out)) < after and process.poll() is None:
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no {after} lines on disk within {WAIT_BOUND_S} s: the run hangs")
        time.sleep(0.005)
    # The signal must reach a running run: a run that ended first tells nothing about it.
    assert process.poll() is None, f"the run ended before {after} lines were seen on disk"
    assert len(lines(out)) >= after
    process.send_signal(sig)
    stdout, stderr = process.communicate(timeout=WAIT_BOUND_S)
    return process.returncode, stdout.decode(), stderr.decode()


@pytest.fixture(scope="module")
def reference(data: Path, server_url: str, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("reference") / "run"
    tmp = out.parent
    done = subprocess.run(command(data, server_url, out), env=environment(tmp), capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    results = keyed(out)
    assert len(results) == 7 * PER_SCENARIO
    assert not any("error" in r for r in results.values())
    return results


def test_sigkill_at_random_points_then_resume(data, server_url, reference, tmp_path) -> None:
    rng = random.Random(20261129)
    out = tmp_path / "run"
    env = environment(tmp_path)
    cmd = command(data, server_url, out)
    total = len(reference)
    kills = 0
    for _ in range(3):
        already = len(lines(out))
        after = already + rng.randrange(1, (total - already) // 2)
        code, _, _ = start_and_stop(cmd, env, out, after, signal.SIGKILL)
        kills += code == -signal.SIGKILL
        assert len(keyed(out)) < total  # really stopped midway, nothing written twice
    assert kills == 3
    final = subprocess.run(cmd, env=env, capture_output=True)
    assert final.returncode == 0, final.stderr.decode()
    assert keyed(out) == reference


@pytest.mark.parametrize(
    ("sig", "exit_code", "background"),
    [(signal.SIGINT, 130, False), (signal.SIGTERM, 143, False), (signal.SIGTERM, 143, True)],
    ids=["ctrl-c", "sigterm", "sigterm-to-a-background-job"],
)
def test_ctrl_c_or_sigterm_stops_cleanly_and_the_rerun_completes(
    data, server_url, reference, tmp_path, sig, exit_code, background
):
    """SIGTERM (kill, a job scheduler) is handled as Ctrl-C: the message, the lines kept, the
    run directory released; only the exit code differs (the conventional 128 + 15). It does so
    also in a background job, whose Ctrl-C is ignored."""
    out = tmp_path / "run"
    env = environment(tmp_path)
    cmd = command(data, server_url, out)
    code, stdout, stderr = start_and_stop(cmd, env, out, 10, sig, background)
    assert code == exit_code, stderr
    assert "interrupted; rerun the same command to resume" in stderr
    assert "Traceback" not in stderr + stdout
    partial = keyed(out)  # every line whole, none twice
    assert 10 <= len(partial) < len(reference)
    assert all(reference[k] == v for k, v in partial.items())
    # Its end is recorded with why it stopped short (what merge tells a stopped shard by).
    (stopped,) = json.loads((out / "run.json").read_text())["provenance"]
    assert stopped["ended"] is not None and stopped["stopped_by"] == "interrupted", stopped
    final = subprocess.run(cmd, env=env, capture_output=True)
    assert final.returncode == 0
    assert keyed(out) == reference
    finished = json.loads((out / "run.json").read_text())["provenance"][-1]
    assert "stopped_by" not in finished, finished
