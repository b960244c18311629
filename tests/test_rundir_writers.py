"""Writers of a run directory (issue 18, items 3, 4, 5, 16, 18): every one holds the run's
lock, a run that never played leaves nothing behind, a full disk leaves nothing half-written
that blocks the rerun, and run.json records where the numbers came from.

A full disk is simulated with a file-size limit (`RLIMIT_FSIZE`) in a child process: a write
past the limit is cut short, then fails with EFBIG, as a write onto a full disk is cut short,
then fails with ENOSPC (Python ignores SIGXFSZ, so the write fails instead of the process
dying). The limit is per file, not per disk: a limit of 0 is a disk with no room at all.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import eval_args, held_by_another_process, run_cli
from handmade import full_dataset
from proactivebench.testing.server import ServerProcess, closed_port_url

EPISODES = 15  # the hand-made data set: every scenario


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def shards(data: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Both shards of one oracle run, finished."""
    root = tmp_path_factory.mktemp("shards")
    runs = [root / "s0", root / "s1"]
    for index, run in enumerate(runs):
        cli = [sys.executable, "-m", "proactivebench", *eval_args(data, run)]
        done = subprocess.run([*cli, "--shard", f"{index}/2", "--no-report"], capture_output=True)
        assert done.returncode == 0, done.stderr.decode()
    return runs


def fails_clearly(code: int, text: str, *needles: str) -> None:
    assert code not in (0, None) and "Traceback" not in text, text
    for needle in needles:
        assert needle in text, (needle, text)


def result_lines(run: Path) -> list[dict]:
    """Every line of results.jsonl, which must all be whole (no torn tail)."""
    raw = (run / "results.jsonl").read_bytes()
    assert not raw or raw.endswith(b"\n"), raw[-80:]
    return [json.loads(line) for line in raw.splitlines()]


# ----- item 3: every writer holds the run's lock ------------------------------------------------


def test_merge_out_is_refused_while_another_process_holds_it(
    shards: list[Path], tmp_path: Path, capsys
) -> None:
    merged = tmp_path / "merged"
    args = ["merge", *map(str, shards), "--out", str(merged)]
    with held_by_another_process(merged) as pid:
        code, text = run_cli(args, capsys)
    fails_clearly(code, text, "in use by another run", f"PID {pid}")
    assert not (merged / "results.jsonl").exists() and not (merged / "run.json").exists()
    assert run_cli(args, capsys)[0] == 0


def test_a_report_into_a_run_is_refused_while_the_run_is_held(
    shards: list[Path], tmp_path: Path, capsys
) -> None:
    run = shards[0]
    with held_by_another_process(run) as pid:
        code, text = run_cli(["report", str(run)], capsys)  # into RUN/report
        fails_clearly(code, text, "in use by another run", f"PID {pid}")
        assert not (run / "report").exists()
        # A report into a folder of its own writes into no run: it is not held up.
        code, text = run_cli(["report", str(run), "--out", str(tmp_path / "elsewhere")], capsys)
        assert code == 0, text
    code, text = run_cli(["report", str(run)], capsys)
    assert code == 0 and (run / "report" / "report.html").is_file(), text


def test_the_lock_is_reentrant_within_a_process(tmp_path: Path) -> None:
    """A writer that holds a run may call another writer (eval writes its report)."""
    from proactivebench.run.rundir import RunLock

    run = tmp_path / "run"
    with RunLock(run), RunLock(run):
        pass
    assert not run.exists()  # created for nothing, removed again
    (run / "x").mkdir(parents=True)
    with RunLock(run), held_by_another_process(tmp_path / "other"):
        pass


# ----- item 4: a failed start leaves no identity -----------------------------------------------


def test_an_unreachable_server_leaves_no_run_behind(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "e4"
    args = eval_args(data, run, "--no-cache")
    args[args.index("baseline:oracle")] = f"openai:x@{closed_port_url()}"
    code, text = run_cli(args, capsys)
    fails_clearly(code, text, "unreachable")
    assert not run.exists()
    code, text = run_cli(eval_args(data, run, "--no-report"), capsys)
    assert code == 0, text


def test_a_failed_start_in_an_existing_directory_pins_nothing(
    data: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    from proactivebench.models.baselines import Oracle

    run = tmp_path / "mine"
    run.mkdir()  # the user's folder: kept, but left holding no run

    async def ctrl_c_before_the_first_episode(self: Oracle) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Oracle, "preflight", ctrl_c_before_the_first_episode)
    code, text = run_cli(eval_args(data, run), capsys)
    assert code == 130 and "interrupted" in text, text
    assert not (run / "run.json").exists() and not (run / "results.jsonl").exists()
    monkeypatch.undo()
    other = eval_args(data, run, "--no-report")
    other[other.index("baseline:oracle")] = "baseline:random"
    code, text = run_cli(other, capsys)
    assert code == 0, text


def test_a_bad_model_spec_leaves_no_run_behind(data: Path, tmp_path: Path, capsys) -> None:
    args = eval_args(data, tmp_path / "run")
    args[args.index("baseline:oracle")] = "nosuchbackend:x"
    code, text = run_cli(args, capsys)
    fails_clearly(code, text)
    assert not (tmp_path / "run").exists()


# ----- item 5: a full disk ---------------------------------------------------------------------


def limited(size: int, args: list[str], tmp_path: Path) -> tuple[int, str]:
    """`proactivebench ARGS` in a child process whose files cannot grow past `size` bytes."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    env = dict(os.environ, PROACTIVEBENCH_CACHE=str(tmp_path / "cache"), COLUMNS="200")
    done = subprocess.run(
        [sys.executable, "-m", "proactivebench", *args],
        capture_output=True,
        env=env,
        preexec_fn=limit,
    )
    return done.returncode, done.stdout.decode() + done.stderr.decode()


def test_eval_starting_on_a_full_disk(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    code, text = limited(0, eval_args(data, run), tmp_path)
    fails_clearly(code, text, "cannot write", str(run), "make room")
    assert not (run / "run.json").exists()
    code, text = run_cli(eval_args(data, run, "--no-report"), capsys)
    assert code == 0, text
    assert len(result_lines(run)) == EPISODES


def test_a_disk_filling_up_during_a_run_keeps_whole_lines_and_resumes(
    data: Path, tmp_path: Path, capsys
) -> None:
    whole = tmp_path / "whole"
    assert run_cli(eval_args(data, whole, "--no-report"), capsys)[0] == 0
    # The limit is per file: run.json fits, results.jsonl takes two whole lines and a part.
    first, second = (whole / "results.jsonl").read_bytes().splitlines(keepends=True)[:2]
    room = max((whole / "run.json").stat().st_size, len(first) + len(second) + 10)
    assert (whole / "results.jsonl").stat().st_size > room + 1000
    run = tmp_path / "run"
    code, text = limited(room, eval_args(data, run, "--concurrency", "1"), tmp_path)
    fails_clearly(code, text, f"cannot write {run / 'results.jsonl'}", "make room")
    kept = result_lines(run)  # cut back to whole lines
    assert 0 < len(kept) < EPISODES
    code, text = run_cli(eval_args(data, run, "--no-report"), capsys)
    assert code == 0, text
    keys = [(r["scenario"], r["sample_id"]) for r in result_lines(run)]
    assert len(keys) == len(set(keys)) == EPISODES


def test_merge_onto_a_full_disk_leaves_nothing_that_blocks_the_rerun(
    shards: list[Path], tmp_path: Path, capsys
) -> None:
    merged = tmp_path / "merged"
    args = ["merge", *map(str, shards), "--out", str(merged)]
    code, text = limited(0, args, tmp_path)
    fails_clearly(code, text, "cannot write", str(merged))
    assert not (merged / "run.json").exists() or json.loads((merged / "run.json").read_text())
    code, text = run_cli(args, capsys)
    assert code == 0, text
    assert len(result_lines(merged)) == EPISODES


def test_report_onto_a_full_disk_leaves_no_half_written_folder(
    shards: list[Path], tmp_path: Path, capsys
) -> None:
    out = tmp_path / "reports" / "both"
    args = ["report", *map(str, shards), "--out", str(out)]
    code, text = limited(3000, args, tmp_path)  # the small tables fit, the page does not
    fails_clearly(code, text, "cannot write", str(out))
    assert not out.exists()
    assert not [p.name for p in out.parent.iterdir() if ".partial" in p.name]
    assert run_cli(args, capsys)[0] == 0
    assert (out / "report.html").is_file()
    # A report that fails over an earlier one leaves the earlier one whole.
    before = (out / "report.json").read_text()
    code, text = limited(3000, args, tmp_path)
    fails_clearly(code, text, "cannot write")
    assert (out / "report.json").read_text() == before


def test_the_cli_names_the_file_of_an_unexpected_disk_error(capsys, monkeypatch) -> None:
    """A write no writer of ours wraps still ends in one message naming the file."""
    import errno

    from proactivebench.cli import run as run_commands

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "/somewhere/x.json")

    monkeypatch.setattr(run_commands, "merge_runs", full, raising=False)
    monkeypatch.setattr("proactivebench.jobs.evaluate.merge_runs", full)
    code, text = run_cli(["merge", "a", "--out", "b"], capsys)
    fails_clearly(code, text, "cannot write /somewhere/x.json: No space left on device")


# ----- item 16: provenance -----------------------------------------------------------------------


def test_run_json_records_provenance_that_a_resume_never_compares(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    assert run_cli(eval_args(data, run, "--limit", "1", "--no-report"), capsys)[0] == 0
    first = json.loads((run / "run.json").read_text())
    (entry,) = first["provenance"]
    assert entry["package_version"] and entry["started"] <= entry["ended"]
    assert entry["episodes_written"] == 7  # one episode of each scenario
    # A baseline is sent nothing: its answers do not depend on the decoding.
    assert entry["endpoints"] == [] and entry["decoding_sent"] == {}
    assert run_cli(eval_args(data, run, "--no-report"), capsys)[0] == 0  # resumed
    second = json.loads((run / "run.json").read_text())
    assert second["provenance"][0] == entry
    assert second["provenance"][1]["episodes_written"] == EPISODES - 7
    # What the run selected is a record too (a larger selection resumes the run).
    identity = {k: v for k, v in first.items() if k not in ("provenance", "selection")}
    assert {k: v for k, v in second.items() if k not in ("provenance", "selection")} == identity
    assert second["selection"]["scenarios"]["ROD"] == {"available": 2, "selected": 2, "ids": "0-1"}


def test_run_json_records_what_a_reasoning_model_was_sent(
    data: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    from proactivebench.models.openai_compat import OpenAICompatible

    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-key")
    run = tmp_path / "run"
    with ServerProcess() as server:
        args = eval_args(data, run, "--no-cache", "--no-report", "--limit", "1")
        args[args.index("baseline:oracle")] = f"openai:o4-mini@{server.url}"
        code, text = run_cli(args, capsys)
    assert code == 0, text
    config = (run / "run.json").read_text()
    (entry,) = json.loads(config)["provenance"]
    assert entry["endpoints"] == [server.url]
    assert "temperature" not in entry["decoding_sent"]  # none was sent: o4-mini takes none
    assert entry["decoding_sent"]["max_completion_tokens"] > 50
    assert "sk-secret-key" not in config
    # Endpoints are recorded without the user and password a URL may carry.
    model = OpenAICompatible("m", endpoints=["http://user:pw@10.0.0.1:8000/v1?x=1"])
    assert model.endpoints == ["http://10.0.0.1:8000/v1?x=1"]


def test_run_json_records_the_extra_body_each_invocation_sent(
    data: Path, tmp_path: Path, capsys
) -> None:
    """`extra_body` changes what a server answers (`top_k`, a chat template's switches) but is
    not part of the run's identity: each invocation's provenance entry records the one it
    sent, so that a run resumed with another is told by its run.json. None sent: no key."""
    run = tmp_path / "run"
    with ServerProcess() as server:
        spec = f"openai:m@{server.url}"
        for limit, extra in (("1", '{"top_k": 3}'), ("2", '{"top_k": 5}'), ("3", None)):
            args = eval_args(data, run, "--no-cache", "--no-report", "--limit", limit)
            args[args.index("baseline:oracle")] = spec
            if extra is not None:
                args += ["--model-option", f"extra_body={extra}"]
            code, text = run_cli(args, capsys)
            assert code == 0, text
    entries = json.loads((run / "run.json").read_text())["provenance"]
    assert [e.get("extra_body") for e in entries] == [{"top_k": 3}, {"top_k": 5}, None]
    assert "extra_body" not in entries[2]


# ----- item 18: a finished run -------------------------------------------------------------------


def test_rerunning_a_finished_run_says_so(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert run_cli(eval_args(data, run, "--no-report"), capsys)[0] == 0
    before = (run / "run.json").read_text()
    code, text = run_cli(eval_args(data, run, "--no-report"), capsys)
    assert code == 0, text
    assert f"all {EPISODES} episodes already done" in text and "existing results" in text
    assert "accuracy" in text.lower()  # the table of what is there
    assert (run / "run.json").read_text() == before  # nothing played: nothing recorded
