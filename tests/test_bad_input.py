"""Bad input ends in one clear message that names the file, and a non-zero exit: never a
traceback (issue 10's reproductions, each turned into a test)."""

from __future__ import annotations

import errno
import json
import pathlib
from pathlib import Path

import pytest

from clirun import eval_args, held_by_another_process, run_cli
from handmade import full_dataset, rod, write_dataset
from proactivebench.models import resilient


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def with_python_model(args: list[str], directory: Path, body: str) -> list[str]:
    """`args` with the oracle replaced by a user's function `answer` whose body is `body`."""
    agent = directory / "agent.py"
    agent.write_text("def answer(messages, observation):\n" + body)
    return [f"python:{agent}:answer" if a == "baseline:oracle" else a for a in args]


def fails_clearly(code: int, text: str, *needles: str) -> None:
    assert code != 0 and "Traceback" not in text, text
    for needle in needles:
        assert needle in text, (needle, text)


def test_a_non_utf8_byte_in_a_records_file(tmp_path: Path, capsys) -> None:
    data = write_dataset(tmp_path / "data", {"ROD": [rod(0), rod(1)]})
    path = data / "Realistic-Occlusion-Dataset_preprocessed.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1].replace(b"What", b"Wh\xffat"))
    for args in (["data", "validate", str(data)], eval_args(data, tmp_path / "run")):
        code, text = run_cli(args, capsys)
        fails_clearly(code, text, f"{path}:2", "not UTF-8")


def test_out_on_a_read_only_file_system(data: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    out = tmp_path / "read-only" / "run"
    real_mkdir = pathlib.Path.mkdir

    def mkdir(self: Path, *args, **kwargs) -> None:
        if self == out:
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)
    code, text = run_cli(eval_args(data, out), capsys)
    fails_clearly(code, text, str(out), "Read-only file system")


def test_out_naming_an_existing_file(data: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "a-file"
    out.write_text("not a directory")
    code, text = run_cli(eval_args(data, out), capsys)
    fails_clearly(code, text, str(out), "it is a file")


def test_cache_naming_a_directory(data: Path, tmp_path: Path, capsys) -> None:
    cache = tmp_path / "cache-dir"
    cache.mkdir()
    args = eval_args(data, tmp_path / "run", "--cache", str(cache))
    # A model that uses the cache (never called: the cache cannot be opened).
    code, text = run_cli(with_python_model(args, tmp_path, "    return 'A'\n"), capsys)
    fails_clearly(code, text, f"cannot open the response cache {cache}: it is a folder")
    # A file where its folder should be (PROACTIVEBENCH_CACHE naming a file): said so,
    # without an errno or Python's repr of the path.
    in_a_file = tmp_path / "a-file" / "responses.sqlite"
    (tmp_path / "a-file").write_text("not a folder")
    args = eval_args(data, tmp_path / "run", "--cache", str(in_a_file))
    code, text = run_cli(with_python_model(args, tmp_path, "    return 'A'\n"), capsys)
    fails_clearly(
        code, text, f"cannot open the response cache {in_a_file}: {tmp_path / 'a-file'} is a file"
    )
    assert "Errno" not in text


def test_a_corrupt_run_json(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert run_cli(eval_args(data, run, "--limit", "1"), capsys)[0] == 0
    (run / "run.json").write_text('{"model": "baseline:ora')
    code, text = run_cli(eval_args(data, run, "--limit", "1"), capsys)
    fails_clearly(code, text, str(run / "run.json"), "damaged")
    code, text = run_cli(["merge", str(run), "--out", str(tmp_path / "merged")], capsys)
    fails_clearly(code, text, str(run / "run.json"))


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        (b'{"scenario": "ROD", "correct": true}', "needs a scenario and a sample_id"),
        (b'{"scenario": "ROD", "sample_id": \xff}', "not a result line"),
        (b"[1, 2, 3]", "needs a scenario and a sample_id"),
    ],
)
def test_a_results_line_that_is_not_a_result(
    data: Path, tmp_path: Path, capsys, bad_line: bytes, reason: str
) -> None:
    run = tmp_path / "run"
    assert run_cli(eval_args(data, run, "--limit", "1"), capsys)[0] == 0
    results = run / "results.jsonl"
    whole = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(whole[0] + bad_line + b"\n" + b"".join(whole[1:]))
    code, text = run_cli(eval_args(data, run, "--limit", "1"), capsys)
    fails_clearly(code, text, f"{results}:2", reason)


def test_a_torn_last_line_is_still_repaired(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert run_cli(eval_args(data, run, "--limit", "1"), capsys)[0] == 0
    results = run / "results.jsonl"
    lines = results.read_text().splitlines()
    results.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20])  # cut short by a crash
    assert run_cli(eval_args(data, run, "--limit", "1"), capsys)[0] == 0
    assert len([json.loads(x) for x in results.read_text().splitlines()]) == len(lines)


# ----- exit codes, one run at a time, terminal output -------------------------------------------


def test_a_run_refused_before_it_starts_leaves_no_run_dir(tmp_path: Path, capsys) -> None:
    data = write_dataset(tmp_path / "data", {"ROD": [rod(0)]})
    (data / "ROD/0/1.png").unlink()
    code, text = run_cli(eval_args(data, tmp_path / "runs" / "new"), capsys)
    fails_clearly(code, text, "image not found: ROD/0/1.png")
    assert not (tmp_path / "runs" / "new").exists()


def test_nothing_to_play_is_an_error(tmp_path: Path, capsys) -> None:
    data = write_dataset(tmp_path / "data", {"ROD": [rod(0)]})
    code, text = run_cli(eval_args(data, tmp_path / "r1", "--scenarios", ","), capsys)
    fails_clearly(code, text, "no scenario named")
    (data / "Realistic-Occlusion-Dataset_preprocessed.jsonl").write_text("")
    code, text = run_cli(eval_args(data, tmp_path / "r2"), capsys)
    assert code == 1
    fails_clearly(code, text, "nothing to play", "Realistic-Occlusion-Dataset_preprocessed.jsonl")


def test_episodes_that_ended_in_errors_give_their_own_exit_code(
    data: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A connection error is retried before it is the episode's: retried fast here.
    fast = resilient.RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)
    monkeypatch.setattr(resilient, "DEFAULT_RETRY", fast)
    body = (
        "    if observation.scenario == 'ROD':\n"
        "        raise ConnectionError('server went away')\n"
        "    return 'A'\n"
    )
    args = with_python_model(eval_args(data, tmp_path / "run", "--no-cache"), tmp_path, body)
    code, text = run_cli(args, capsys)
    assert code == 3, text
    assert "2 episode(s) ended in an error, 13 scored" in text and "rerun" in text
    assert run_cli(eval_args(data, tmp_path / "clean"), capsys)[0] == 0


def test_a_second_run_into_the_same_directory_stops_at_once(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    with held_by_another_process(run) as pid:  # another run holds it
        code, text = run_cli(eval_args(data, run), capsys)
    fails_clearly(code, text, "in use by another run", f"PID {pid}")
    assert not (run / "results.jsonl").exists()
    assert run_cli(eval_args(data, run), capsys)[0] == 0  # free again


def test_model_and_server_text_reaches_the_terminal_inert(
    data: Path, tmp_path: Path, capsys
) -> None:
    body = "    raise RuntimeError('\\x1b[31mred alert :x: [bold]loud[/bold]')\n"
    run_args = eval_args(data, tmp_path / "run", "--no-cache", "--scenarios", "QD")
    code, text = run_cli(with_python_model(run_args, tmp_path, body), capsys)
    assert code == 3
    assert "\x1b" not in text and "\\x1b[31mred alert :x: [bold]loud[/bold]" in text


# ----- unreadable images ------------------------------------------------------------------------


def test_empty_and_unreadable_images_are_caught(tmp_path: Path, capsys) -> None:
    import io

    from PIL import Image

    data = write_dataset(tmp_path / "data", {"ROD": [rod(0)]})
    (data / "ROD/0/0.png").write_bytes(b"")  # 0 bytes
    (data / "ROD/0/1.png").write_text("not a picture at all")  # text named .png
    whole = io.BytesIO()
    Image.new("RGB", (64, 64), (9, 99, 199)).save(whole, format="PNG")
    (data / "ROD/0/2.png").write_bytes(whole.getvalue()[:-40])  # header fine, pixels cut off
    code, text = run_cli(["data", "validate", str(data)], capsys)
    fails_clearly(code, text, "image file is empty (0 bytes): ROD/0/0.png")
    assert "not a readable image: ROD/0/1.png" in text and "ROD/0/2.png" not in text
    # Pillow's words without its repr of the file object ("<_io.BufferedReader name=7>").
    assert "ROD/0/1.png (cannot identify image file: not an image Pillow can read)" in text
    assert "BufferedReader" not in text
    code, text = run_cli(["data", "validate", str(data), "--decode"], capsys)
    fails_clearly(code, text, "cannot decode: ROD/0/2.png")
    # A run checks every image before it starts (existence, size, header).
    code, text = run_cli(eval_args(data, tmp_path / "run"), capsys)
    fails_clearly(code, text, "image file is empty (0 bytes): ROD/0/0.png")


# ----- item 13: what a researcher should be told ----------------------------------------------


def test_the_hosted_api_without_a_key_is_named_before_the_run(
    data: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = eval_args(data, tmp_path / "run", "--no-cache")
    args[args.index("baseline:oracle")] = "openai:gpt-4o"
    code, text = run_cli(args, capsys)
    fails_clearly(code, text, "hosted API at https://api.openai.com/v1", "$OPENAI_API_KEY")
    assert not (tmp_path / "run").exists()  # no episode was tried: no run left behind


def test_the_run_says_how_many_answers_came_from_the_cache(
    data: Path, tmp_path: Path, capsys
) -> None:
    cache = str(tmp_path / "cache.sqlite")
    body = "    return observation.options[-1]\n"
    first = with_python_model(eval_args(data, tmp_path / "a", "--cache", cache), tmp_path, body)
    code, text = run_cli(first, capsys)
    assert code == 0 and "from the response cache" not in text
    lines = (tmp_path / "a" / "results.jsonl").read_text().splitlines()
    turns = sum(len(json.loads(line)["trace"]) for line in lines)
    second = with_python_model(eval_args(data, tmp_path / "b", "--cache", cache), tmp_path, body)
    code, text = run_cli(second, capsys)
    assert code == 0 and f"{turns} of {turns} answers came from the response cache" in text


def test_an_exception_in_a_users_function_shows_their_traceback_once(
    data: Path, tmp_path: Path, capsys, caplog
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(
        "def helper(messages):\n"
        "    return messages[0]['content'][-1]['text'][99999]\n"
        "\n"
        "def answer(messages, observation):\n"
        "    return helper(messages)\n"
    )
    args = eval_args(data, tmp_path / "run", "--no-cache")
    args[args.index("baseline:oracle")] = f"python:{agent}:answer"
    code, text = run_cli(args, capsys)
    assert code == 3
    assert caplog.text.count("Traceback (most recent call last)") == 1
    assert f'File "{agent}", line 2, in helper' in caplog.text
    assert "messages[0]['content'][-1]['text'][99999]" in caplog.text
    assert 'python_callable.py", line' not in caplog.text  # the user's frames, not ours
    assert f"IndexError: string index out of range (at {agent}:2 in helper)" in text


def test_progress_off_a_terminal_is_plain_lines(data: Path, tmp_path: Path, capsys) -> None:
    code, text = run_cli(eval_args(data, tmp_path / "run"), capsys)
    total = len((tmp_path / "run" / "results.jsonl").read_text().splitlines())
    assert code == 0 and f"baseline:oracle: {total}/{total} (100%)" in text
    progress = [line for line in text.splitlines() if line.startswith("baseline:oracle: ")]
    assert 2 <= len(progress) <= 11  # a line per tenth at most, and the end
    assert not any(line.startswith("baseline:oracle ━") for line in text.splitlines())
    assert "\r" not in text and "\x1b" not in text


def test_a_model_named_with_control_characters_and_markup_prints_inert(
    data: Path, tmp_path: Path, capsys
) -> None:
    agent = tmp_path / "a\x1b[31m[red]x\ny.py"
    agent.write_text("def answer(messages, observation):\n    return 'A'\n")
    args = eval_args(data, tmp_path / "run", "--no-cache", "--no-report")
    args[args.index("baseline:oracle")] = f"python:{agent}:answer"
    code, text = run_cli(args, capsys)
    assert code == 0 and "\x1b" not in text
    shown = "a\\x1b[31m[red]x\\ny.py:answer"
    progress = [line for line in text.splitlines() if line.startswith("python:") and "%" in line]
    assert progress and all(shown in line for line in progress)  # one line each, name intact
    assert sum(line.endswith(shown) for line in text.splitlines()) == 1  # the table's title


def test_log_lines_reach_the_terminal_inert() -> None:
    import logging

    from proactivebench.cli.output import PrintableFormatter

    record = logging.LogRecord(
        "x", logging.WARNING, __file__, 1, "raised:\n%s", ("\x1b[31m",), None
    )
    assert (
        PrintableFormatter("warning: %(message)s").format(record) == "warning: raised:\n\\x1b[31m"
    )


def test_a_line_feed_in_a_run_folders_name_is_shown_escaped(tmp_path: Path, capsys) -> None:
    """Hostile tryout of issue 45, round 3, finding 8: eval printed "results: runs/odd..." and
    "/results.jsonl" on the next line for a folder whose name holds a line feed (its bidi
    character was escaped, the line feed not). A path is one line wherever it is printed."""
    data = write_dataset(tmp_path / "data", {"ROD": [rod(0)]})
    run = tmp_path / "odd\u202e|x\n"
    code, text = run_cli(eval_args(data, run, "--no-report"), capsys)
    assert code == 0, text
    shown = f"results: {tmp_path}/odd\\u202e|x\\n/results.jsonl"
    assert shown in text.splitlines(), text
