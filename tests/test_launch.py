"""Data-parallel `eval` under a launcher (`proactivebench.jobs.launch`): 2 processes started by
torchrun (or accelerate launch) on CPU with gloo play the run as 2 shards, and rank 0 merges
them into results equal to a single-process run's; a rerun resumes; a failing or killed rank
is told clearly, without a hang."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

import proactivebench
from clirun import ctrl_c_as_in_a_terminal, eval_args, run_cli
from handmade import full_dataset
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.jobs.launch import (
    Launch,
    RankReport,
    detect_launch,
    merge_shards,
    refuse_plain_run,
)
from proactivebench.run.rundir import read_results
from resultlines import comparable

pytest.importorskip("torch.distributed")

#: Long enough for two processes importing torch on a busy CI machine; a hang fails the test.
LAUNCH_TIMEOUT_S = 600


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def torchrun() -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "2",
        "--master-port",
        str(free_port()),
    ]


def accelerate_launch() -> list[str]:
    # --multi_gpu is accelerate's torch-elastic launcher; without GPUs its processes run on CPU
    # (its --cpu starts one process unless MPI is set up).
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(free_port()),
    ]


def launch(launcher: list[str], args: list[str], **env: str) -> tuple[int, str]:
    """Exit code and output of `LAUNCHER -m proactivebench ARGS`."""
    done = subprocess.run(
        [*launcher, "-m", "proactivebench", *args],
        capture_output=True,
        text=True,
        timeout=LAUNCH_TIMEOUT_S,
        env={**os.environ, **env},
    )
    return done.returncode, done.stdout + done.stderr


def lines_by_key(run: Path) -> dict[tuple[str, int], dict]:
    return {
        (r["scenario"], r["sample_id"]): comparable(r) for r in read_results(run / "results.jsonl")
    }


def our_traceback(output: str) -> bool:
    """Whether a traceback went through the package (the launcher's own report of a failed
    worker is a traceback of torch's, which is not ours to change). The package's folder, not
    its name: a checkout named proactivebench holds the venv whose libraries print theirs."""
    package = re.escape(os.path.dirname(proactivebench.__file__))
    return re.search(rf'File "{package}[/\\]', output) is not None


def random_seed_4(data: Path, run: Path) -> list[str]:
    """`eval` of `baseline:random`, seed 4, into `run`."""
    args = eval_args(data, run, "--seed", "4", "--no-report")
    args[args.index("baseline:oracle")] = "baseline:random"
    return args


@pytest.fixture(scope="module")
def launched(data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A run that torchrun played as 2 shards and merged, and what the launch printed."""
    run = tmp_path_factory.mktemp("launched") / "run"
    code, output = launch(torchrun(), random_seed_4(data, run))
    assert code == 0, output
    return run, output


def test_torchrun_plays_shards_and_merges_what_one_process_plays(
    data: Path, launched: tuple[Path, str], tmp_path: Path, capsys
) -> None:
    run, output = launched
    args = random_seed_4(data, run)
    whole = tmp_path / "whole"
    assert run_cli(random_seed_4(data, whole), capsys)[0] == 0
    assert lines_by_key(run) == lines_by_key(whole)
    assert len(lines_by_key(run)) == 15
    # Each rank wrote a whole run directory of its shard; RUN is the run without a shard.
    shards = [run / "ranks" / f"rank-{i}-of-2" for i in range(2)]
    for i, shard in enumerate(shards):
        assert json.loads((shard / "run.json").read_text())["shard"] == {"index": i, "count": 2}
    assert sum(len(lines_by_key(s)) for s in shards) == 15
    merged = json.loads((run / "run.json").read_text())
    assert "shard" not in merged and len(merged["provenance"]) == 2
    assert json.loads((run / "summary.json").read_text()) == json.loads(
        (whole / "summary.json").read_text()
    )
    # Only rank 0 prints the table; each rank says what it played.
    assert output.count("average") == 1
    assert "rank 1 of 2" in output and "15 played" not in output
    # One line per rank: rank 0's; rank 1, on the same node, does not repeat its own.
    assert len(re.findall(r"rank 1 of 2 \(", output)) == 1, output
    # The same command again: every episode done, merged again, the same results.
    code, output = launch(torchrun(), args)
    assert code == 0, output
    assert re.search(r"rank 0 of 2 \(.*\): \d+ episodes, 0 played", output), output
    assert re.search(r"rank 1 of 2 \(.*\): \d+ episodes, 0 played", output), output
    assert lines_by_key(run) == lines_by_key(whole)
    assert len(json.loads((run / "run.json").read_text())["provenance"]) == 2


@pytest.mark.slow  # a second whole launch beside the merge test's (the slow set)
def test_accelerate_launch_plays_the_same_run(data: Path, tmp_path: Path, capsys) -> None:
    pytest.importorskip("accelerate")
    run, whole = tmp_path / "run", tmp_path / "whole"
    code, output = launch(
        accelerate_launch(),
        eval_args(data, run, "--no-report"),
        HF_HOME=str(tmp_path / "hf-home"),  # no accelerate config of the user's is read
    )
    assert code == 0, output
    assert run_cli(eval_args(data, whole, "--no-report"), capsys)[0] == 0
    assert lines_by_key(run) == lines_by_key(whole)
    assert (run / "ranks" / "rank-1-of-2" / "results.jsonl").exists()


@pytest.mark.slow  # a second whole launch beside the merge test's (the slow set)
def test_torchrun_with_a_tiny_vlm_equals_one_process(
    tiny_vlm_dir: Path, data: Path, tmp_path: Path, capsys
) -> None:
    run, whole = tmp_path / "run", tmp_path / "whole"
    args = eval_args(data, run, "--limit", "1", "--no-report", "--model-option", "dtype=float32")
    args[args.index("baseline:oracle")] = f"hf:{tiny_vlm_dir}"
    # Both ranks write the shared response cache (SQLite, WAL) side by side.
    code, output = launch(torchrun(), args)
    assert code == 0, output
    plain = [*args, "--no-cache"]
    plain[plain.index(str(run))] = str(whole)
    assert run_cli(plain, capsys)[0] == 0
    assert lines_by_key(run) == lines_by_key(whole)
    assert len(lines_by_key(run)) == 7


#: A user's function that logs every call (rank, episode) and can fail or die on one rank.
AGENT = """
import os, signal
from pathlib import Path

RANK = os.environ.get("RANK", "-")  # "-": a single process

if os.environ.get("FAIL_RANK") == RANK:
    raise RuntimeError("this rank has no model")

def answer(messages, observation):
    log = Path(os.environ["AGENT_LOG"])
    with log.open("a") as f:
        f.write(f"{RANK} {observation.scenario} {observation.sample_id}\\n")
    calls = len(log.read_text().splitlines())
    if os.environ.get("KILL_RANK") == RANK and calls >= 6:
        os.kill(os.getpid(), signal.SIGKILL)
    return "A"
"""


@pytest.fixture
def agent(tmp_path: Path) -> str:
    path = tmp_path / "agent.py"
    path.write_text(textwrap.dedent(AGENT))
    return f"python:{path}:answer"


def _agent_args(data: Path, run: Path, agent: str) -> list[str]:
    args = eval_args(data, run, "--no-report", "--no-cache", "--concurrency", "1")
    args[args.index("baseline:oracle")] = agent
    return args


@pytest.mark.slow  # a second whole launch beside the merge test's (the slow set)
def test_a_killed_rank_is_told_and_a_rerun_plays_only_what_is_missing(
    data: Path, tmp_path: Path, agent: str, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, log = tmp_path / "run", tmp_path / "calls.log"
    args = _agent_args(data, run, agent)
    code, output = launch(torchrun(), args, AGENT_LOG=str(log), KILL_RANK="1")
    assert code != 0
    assert "rerun the same command to resume" in output, output
    assert not our_traceback(output), output
    assert not (run / "results.jsonl").exists()
    shards = [run / "ranks" / f"rank-{i}-of-2" for i in range(2)]
    before = [set(lines_by_key(s)) for s in shards]
    assert len(before[1]) < 7  # rank 1 died before its shard was done
    log.unlink()
    code, output = launch(torchrun(), args, AGENT_LOG=str(log))
    assert code == 0, output
    asked: list[set[tuple[str, int]]] = [set(), set()]
    for line in log.read_text().splitlines():
        rank, scenario, sample = line.split()
        asked[int(rank)].add((scenario, int(sample)))
    for rank, shard in enumerate(shards):
        assert asked[rank] == set(lines_by_key(shard)) - before[rank]
    whole = tmp_path / "whole"
    monkeypatch.setenv("AGENT_LOG", str(tmp_path / "single.log"))
    assert run_cli(_agent_args(data, whole, agent), capsys)[0] == 0
    assert lines_by_key(run) == lines_by_key(whole)


@pytest.mark.slow  # a second whole launch beside the merge test's (the slow set)
def test_a_rank_that_cannot_play_is_named_and_nothing_is_merged(
    data: Path, tmp_path: Path, agent: str
) -> None:
    run = tmp_path / "run"
    args = _agent_args(data, run, agent)
    code, output = launch(torchrun(), args, AGENT_LOG=str(tmp_path / "log"), FAIL_RANK="1")
    assert code != 0
    assert re.search(r"rank 1 of 2 \(.*\): failed: .*this rank has no model", output), output
    assert f"1 of 2 ranks could not play their shard (rank 1, as said above), so {run}" in output
    assert not our_traceback(output), output
    assert not (run / "results.jsonl").exists()
    assert (run / "ranks" / "rank-0-of-2" / "results.jsonl").exists()  # kept for the rerun


def test_detect_launch_reads_the_launchers_environment() -> None:
    assert detect_launch({}) is None
    assert detect_launch({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}) is None
    found = detect_launch({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"})
    assert found == Launch(rank=3, world_size=4, local_rank=1)
    assert found.shard == (3, 4) and not found.leader
    assert found.shard_dir(Path("RUN")) == Path("RUN/ranks/rank-3-of-4")
    with pytest.raises(ProactiveBenchError, match="RANK and WORLD_SIZE must both be integers"):
        detect_launch({"RANK": "x", "WORLD_SIZE": "2"})
    with pytest.raises(ProactiveBenchError, match="outside WORLD_SIZE=2"):
        detect_launch({"RANK": "2", "WORLD_SIZE": "2"})


def test_shard_under_a_launcher_is_refused(
    data: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}.items():
        monkeypatch.setenv(name, value)
    code, text = run_cli(eval_args(data, tmp_path / "run", "--shard", "0/2"), capsys)
    assert code == 2 and "rank 1 of 2 of a launcher" in text and "leave out --shard" in text
    assert not (tmp_path / "run").exists()


def test_a_plain_run_is_not_overwritten_by_a_launched_one(
    data: Path, tmp_path: Path, capsys
) -> None:
    assert run_cli(eval_args(data, tmp_path / "plain", "--no-report"), capsys)[0] == 0
    with pytest.raises(ProactiveBenchError, match=r"played without a launcher; .* another --out"):
        refuse_plain_run(tmp_path / "plain")
    assert run_cli(eval_args(data, tmp_path / "s", "--shard", "0/2"), capsys)[0] == 0
    with pytest.raises(ProactiveBenchError, match=r"a shard of a run \(--shard\)"):
        refuse_plain_run(tmp_path / "s")
    refuse_plain_run(tmp_path / "new")  # nothing there yet: fine


def test_rank_0_says_when_it_cannot_see_a_shard(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    leader = Launch(0, 2, 0)
    shard = leader.shard_dir(run)
    assert run_cli(eval_args(data, shard, "--shard", "0/2", "--no-report"), capsys)[0] == 0
    reports = [
        RankReport(0, "node-a", str(shard), episodes=8, played=8),
        RankReport(1, "node-b", str(leader.shard_dir(run, 1)), episodes=7, played=7),
    ]
    outcome = merge_shards(leader, run, reports)
    assert outcome.merged is None and outcome.problem is not None
    assert "rank-1-of-2 (written by rank 1 on node-b)" in outcome.problem
    assert "--out must be on a filesystem that every node shares" in outcome.problem
    assert not (run / "results.jsonl").exists()


def test_hf_auto_device_is_the_ranks_own_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from proactivebench.core.errors import HFBackendError
    from proactivebench.models.hf import _placement

    def fake_torch(gpus: int) -> SimpleNamespace:
        cuda = SimpleNamespace(is_available=lambda: gpus > 0, device_count=lambda: gpus)
        return SimpleNamespace(cuda=cuda, device=lambda name: name)

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert _placement(fake_torch(2), "auto")[0] == "cuda:1"
    assert _placement(fake_torch(0), "auto")[0] == "cpu"
    assert _placement(fake_torch(2), "cuda:0")[0] == "cuda:0"  # an explicit device is kept
    with pytest.raises(HFBackendError, match="LOCAL_RANK=1, but this node has 1 visible GPU"):
        _placement(fake_torch(1), "auto")
    monkeypatch.setenv("WORLD_SIZE", "1")  # one process: every GPU, as without a launcher
    assert _placement(fake_torch(2), "auto")[0] in ("auto", "cuda:0")


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_a_rank_waiting_for_peers_that_never_come_stops_on_a_signal(
    data: Path, tmp_path: Path, signum: str
) -> None:
    """Rank 1 of 2 whose rank 0 never answers: the test holds the rendezvous port and accepts
    the rank's connection without a word, so the rank is inside the rendezvous (blocked in
    C++ for the 7-day timeout) when the signal comes. It stops with the usual message and
    exit code (130 for Ctrl-C, 143 for SIGTERM)."""
    import signal

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(LAUNCH_TIMEOUT_S)
        port = server.getsockname()[1]
        env = {**os.environ, "RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}
        env |= {"LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        process = subprocess.Popen(
            [sys.executable, "-m", "proactivebench", *eval_args(data, tmp_path / "run")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            preexec_fn=ctrl_c_as_in_a_terminal,
        )
        try:
            connection, _ = server.accept()  # the rank is waiting for rank 0's store
            with connection:
                process.send_signal(getattr(signal, signum))
                output, _ = process.communicate(timeout=LAUNCH_TIMEOUT_S)
        finally:
            process.kill()
    expected = 143 if signum == "SIGTERM" else 130
    assert process.returncode == expected, output
    assert "stopped while joining the process group" in output
    assert "rerun the same command to resume" in output and "Traceback" not in output


@pytest.mark.slow  # three processes launched beside the merge test's (the slow set)
def test_another_model_into_a_launched_run_is_refused_before_any_shard_plays(
    data: Path, launched: tuple[Path, str], tmp_path: Path
) -> None:
    """With another process count the shards are new directories, which hold no run yet:
    RUN's identity is what tells the model differs, and it is read before playing."""
    run = tmp_path / "run"
    shutil.copytree(launched[0], run)
    args = eval_args(data, run, "--no-report")
    args[args.index("baseline:oracle")] = "baseline:abstain"
    three = [arg if arg != "2" else "3" for arg in torchrun()]  # --nproc-per-node 3
    code, output = launch(three, args)
    assert code == 1, output
    assert "holds a run with other settings" in output and "baseline:abstain" in output
    assert not list((run / "ranks").glob("rank-*-of-3/results.jsonl")), output
    assert not our_traceback(output)


def test_accelerate_cpu_with_several_processes_is_refused(data: Path, tmp_path: Path) -> None:
    """accelerate 1.15's --cpu starts one process for --num_processes 2 (no MPI): refused,
    instead of one unsharded run passing for two shards."""
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--cpu"]
    launcher += ["--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no"]
    launcher += ["--dynamo_backend", "no", "--main_process_port", str(free_port())]
    code, output = launch(launcher, eval_args(data, tmp_path / "run"))
    assert code == 1, output
    assert "accelerate started only this one" in output and "torchrun --nproc-per-node" in output
    assert not (tmp_path / "run" / "results.jsonl").exists()
    assert not our_traceback(output)
    # A plain process with the same variables but one an MPI launcher sets is not refused.
    env = {"ACCELERATE_USE_CPU": "True", "MASTER_ADDR": "127.0.0.1", "PMI_SIZE": "2"}
    assert detect_launch(env) is None
