"""JSON from outside is read by one rule (`texts.loads`, issue 29, item 8): a body of `play`'s
API that is not a JSON object of any kind (nested too deeply, an unknown charset, bad bytes,
not JSON) is a 400 with no traceback in the terminal, and a `run.json` nested 900 deep is
named as damaged by `report` instead of crashing it with a RecursionError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import eval_args, run_cli
from handmade import full_dataset
from humanplayer import Person, output_of, play_process
from proactivebench.core.texts import MAX_JSON_DEPTH, loads, loads_body
from scripted import scripts


def nested(depth: int) -> str:
    """A JSON object whose "turn" holds lists `depth` deep."""
    return '{"turn": ' + "[" * depth + "]" * depth + "}"


def test_json_nested_beyond_the_limit_is_not_json() -> None:
    assert loads(nested(MAX_JSON_DEPTH - 1)) == {
        "turn": json.loads(nested(MAX_JSON_DEPTH - 1))["turn"]
    }
    for depth in (MAX_JSON_DEPTH, 900, 100_000):  # the object around the lists is one more
        with pytest.raises(json.JSONDecodeError, match="nested deeper"):
            loads(nested(depth))
    with pytest.raises(json.JSONDecodeError, match="unknown charset"):
        loads_body(b"{}", "no-such-charset")
    assert loads_body('{"a": "é"}'.encode("latin-1"), "latin-1") == {"a": "é"}


def test_every_malformed_body_of_the_play_api_is_a_400(synth_test: Path, tmp_path: Path) -> None:
    flags = ("--host", "127.0.0.1", "--limit", "1")
    with play_process(synth_test, tmp_path / "run", *flags) as (process, url, _):
        person = Person(url, scripts(synth_test))
        turn = person.state()["turn"]
        client = person.client
        bodies = {
            "nested 900 deep": (nested(900).encode(), "application/json"),
            "nested 100,000 deep": (nested(100_000).encode(), "application/json"),
            "an unknown charset": (b'{"turn": "x"}', "application/json; charset=no-such-one"),
            "not JSON": (b"{turn", "application/json"),
            "not an object": (b"[1, 2]", "application/json"),
            "no body": (b"", "application/json"),
        }
        for what, (body, kind) in bodies.items():
            for path in ("/api/answer", "/api/seen"):
                response = client.post(path, content=body, headers={"Content-Type": kind})
                assert response.status_code == 400, (what, path, response.text)
                assert "expected a JSON object" in response.text, (what, response.text)
        person.version = -1  # the state as it is now (not a wait for the next change)
        assert person.state()["turn"]["id"] == turn["id"]  # nothing changed
        person.quit()
        printed = output_of(process)
    assert process.returncode == 0 and "Traceback" not in printed, printed


def test_report_names_a_run_json_nested_900_deep(tmp_path: Path, capsys) -> None:
    data, run = full_dataset(tmp_path / "data"), tmp_path / "run"
    assert run_cli([*eval_args(data, run), "--no-report"], capsys)[0] == 0
    config = json.loads((run / "run.json").read_text())
    config["settings"]["note"] = "@"
    text = json.dumps(config).replace('"@"', "[" * 900 + "]" * 900)
    (run / "run.json").write_text(text)
    code, said = run_cli(["report", str(run), "--no-thumb-cache"], capsys)
    assert code == 1 and "Traceback" not in said and "RecursionError" not in said, said
    assert f"{run / 'run.json'} is damaged" in said and "nested deeper" in said, said


def test_every_reader_of_outside_json_takes_the_rule(tmp_path: Path) -> None:
    """Values and files read elsewhere (a `--model-option`, `train compare`'s runs) are held to
    the same nesting limit: a deep value is a string, a deep run.json is named."""
    from proactivebench.cli.options import parse_model_options
    from proactivebench.core.errors import ProactiveBenchError
    from proactivebench.train.compare import compare_runs

    deep = "[" * 5000 + "]" * 5000
    assert parse_model_options((f"extra={deep}", "n=8")) == {"extra": deep, "n": 8}
    for name in ("base", "tuned"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text('{"model": ' + deep + "}")
    with pytest.raises(ProactiveBenchError, match="nested deeper"):
        compare_runs(tmp_path / "base", tmp_path / "tuned")
