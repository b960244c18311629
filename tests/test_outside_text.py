"""Text from outside the program, whatever it holds, is storable and printable (issue 18).

Answers, reasoning, judge outputs, server error bodies, data-file fields and the lines of a
run's own files can carry what UTF-8 cannot encode (a lone surrogate, from a `\\ud800`
escape) or be huge; a server can answer with a gzip bomb or redirect elsewhere. Each ends as
one clear outcome: the text stored (replaced, or capped with a marker), or the request failed
with a message that names the limit.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from handmade import full_dataset, rod, write_dataset
from proactivebench.core.errors import ModelSpecError
from proactivebench.core.texts import STORED_TEXT_LIMIT, capped, decode, loads, storable
from proactivebench.models import load_model
from proactivebench.models.http import READ_CHUNK
from proactivebench.run.rundir import read_results
from proactivebench.testing.server import FakeOpenAI, Raw

LONE = "A\ud800"
#: The server's body, as bytes: valid JSON whose string escapes an unpaired surrogate.
LONE_BODY = b'{"choices": [{"message": {"content": "A\\ud800"}}]}'


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def openai_eval(data: Path, url: str, out: Path, *extra: str) -> list[str]:
    return [
        "eval",
        "--data",
        str(data),
        "--model",
        f"openai:m@{url}",
        "--out",
        str(out),
        "--no-cache",
        "--scenarios",
        "ROD",
        *extra,
    ]


def answers(run: Path) -> list[str]:
    return [t["answer"] for line in read_results(run / "results.jsonl") for t in line["trace"]]


# ----- item 1: lone surrogates --------------------------------------------------------------------


def test_a_lone_surrogate_in_an_answer_is_recorded_replaced(
    data: Path, tmp_path: Path, capsys
) -> None:
    with FakeOpenAI(raw=lambda *_: Raw(LONE_BODY)) as fake:
        code, text = run_cli(openai_eval(data, fake.url, tmp_path / "run"), capsys)
    assert code == 0, text
    assert answers(tmp_path / "run") and set(answers(tmp_path / "run")) == {"A\ufffd"}
    raw = (tmp_path / "run" / "results.jsonl").read_bytes()
    raw.decode("utf-8")  # strict: every byte of the file is UTF-8


def test_a_lone_surrogate_from_a_python_model_and_its_error_is_recorded_replaced(
    data: Path, tmp_path: Path, capsys, caplog
) -> None:
    """Every backend's answers pass one point (`Completion`), its failures another; the
    traceback logged once holds no lone surrogate either (a log record is written out as
    UTF-8: one crashed the test run's worker)."""
    agent = tmp_path / "agent.py"
    agent.write_text(
        "def answer(messages, observation):\n"
        "    if 'Move' in str(messages):\n"
        "        raise ValueError('no \\udc80 way')\n"
        "    return 'A\\ud800'\n",
        encoding="utf-8",
    )
    run = tmp_path / "run"
    args = ["eval", "--data", str(data), "--model", f"python:{agent}:answer", "--out", str(run)]
    code, text = run_cli([*args, "--no-cache", "--scenarios", "ROD,QD"], capsys)
    assert code == 3, text
    lines = read_results(run / "results.jsonl")
    assert {line["scenario"] for line in lines if "error" in line} == {"ROD"}
    assert all("no \ufffd way" in line["error"] for line in lines if "error" in line)
    assert {t["answer"] for line in lines for t in line["trace"]} == {"A\ufffd"}
    logged = [r.getMessage() for r in caplog.records if "raised" in r.getMessage()]
    assert logged and all("no \ufffd way" in m for m in logged)
    for message in logged:
        message.encode("utf-8")  # a lone surrogate raises here


def test_a_lone_surrogate_in_an_error_body_is_recorded_replaced(
    data: Path, tmp_path: Path, capsys
) -> None:
    body = b'{"error": {"message": "bad \\udfff request"}}'
    with FakeOpenAI(raw=lambda *_: Raw(body, status=400)) as fake:
        code, text = run_cli(openai_eval(data, fake.url, tmp_path / "run"), capsys)
    assert code == 3, text
    errors = [line["error"] for line in read_results(tmp_path / "run" / "results.jsonl")]
    assert errors and all("bad \ufffd request" in e for e in errors)


def test_a_lone_surrogate_in_results_jsonl_is_read_replaced(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    code, _ = run_cli(
        ["eval", "--data", str(data), "--model", "baseline:oracle", "--out", str(run)], capsys
    )
    assert code == 0
    path = run / "results.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    line = json.loads(lines[0])
    line["trace"][0]["answer"] = LONE
    lines[0] = json.dumps(line)  # ensure_ascii: the surrogate as a `\ud800` escape
    assert "\\ud800" in lines[0]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, text = run_cli(["show", str(run), line["scenario"], str(line["sample_id"])], capsys)
    assert code == 0 and "A\ufffd" in text, text
    code, text = run_cli(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    assert code == 0 and "Traceback" not in text, text
    assert read_results(path)[0]["trace"][0]["answer"] == "A\ufffd"


def test_a_lone_surrogate_in_a_record_field_is_read_replaced(tmp_path: Path, capsys) -> None:
    root = write_dataset(tmp_path / "data", {"ROD": [rod(0, answer="cup")]})
    path = next(root.glob("*.jsonl"))
    record = json.loads(path.read_text(encoding="utf-8"))
    record["prompt"] = "What \ud800 is behind the blocks?"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    run = tmp_path / "run"
    code, text = run_cli(
        ["eval", "--data", str(root), "--model", "baseline:oracle", "--out", str(run)], capsys
    )
    assert code == 0, text
    (line,) = read_results(run / "results.jsonl")
    assert line["trace"][0]["prompt"].startswith("What \ufffd is")
    code, text = run_cli(["show", str(run), "ROD", "0"], capsys)
    assert code == 0 and "What \ufffd is" in text, text


def test_the_rule_replaces_lone_surrogates_and_keeps_pairs() -> None:
    assert storable("A\ud800") == "A\ufffd" and storable("\udc80x") == "\ufffdx"
    assert storable("\ud83d\ude00") == "\U0001f600" and storable("plain é") == "plain é"
    assert loads('{"k\\ud800": ["\\udfff", {"x": "\\ud83d\\ude00"}]}') == {
        "k\ufffd": ["\ufffd", {"x": "\U0001f600"}]
    }
    assert decode(b"\xef\xbb\xbf\xff", None) == "\ufffd" and decode(b"\xe9", "latin-1") == "é"
    with pytest.raises(json.JSONDecodeError):
        loads("[" * 100_000)


def test_a_capped_text_keeps_its_ends_and_says_how_long_it_was() -> None:
    text = "<think>" + "x" * 1_000_000 + "</think>B"
    kept = capped(text)
    assert len(kept) <= STORED_TEXT_LIMIT and kept.startswith("<think>") and kept.endswith("B")
    assert f"{len(text):,} characters" in kept
    assert capped("short") == "short"


# ----- item 11: response bodies and stored texts ------------------------------------------------


def completion_body(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}}]}).encode()


def gzip_bomb(inflated: int) -> bytes:
    """A gzip body of `inflated` zero bytes (about a thousandth of that on the wire)."""
    return gzip.compress(b"\0" * inflated, compresslevel=9)


def stopped_after(error: str) -> int:
    match = re.search(r"reading stopped after (\d+) bytes", error)
    assert match, error
    return int(match.group(1))


def test_a_gzip_bomb_fails_its_request_after_the_limit_and_is_not_retried(
    data: Path, tmp_path: Path, capsys
) -> None:
    limit = 1_000_000
    bomb = Raw(gzip_bomb(64 << 20), headers={"Content-Encoding": "gzip"})
    with FakeOpenAI(raw=lambda *_: bomb) as fake:
        extra = ("--model-option", f"max_response_bytes={limit}", "--limit", "1")
        code, text = run_cli(openai_eval(data, fake.url, tmp_path / "run", *extra), capsys)
        asked = len(fake.chat_requests)
    assert code == 3, text
    (line,) = read_results(tmp_path / "run" / "results.jsonl")
    assert "max_response_bytes=1000000" in line["error"] and "not retried" in line["error"]
    assert limit < stopped_after(line["error"]) <= limit + READ_CHUNK
    assert asked == 1


def test_a_compressed_answer_within_the_limit_is_read(data: Path, tmp_path: Path, capsys) -> None:
    body = Raw(gzip.compress(completion_body("A")), headers={"Content-Encoding": "gzip"})
    with FakeOpenAI(raw=lambda *_: body) as fake:
        code, text = run_cli(openai_eval(data, fake.url, tmp_path / "run"), capsys)
    assert code == 0, text
    assert set(answers(tmp_path / "run")) == {"A"}


def test_a_huge_answer_is_stored_capped_with_a_marker(data: Path, tmp_path: Path, capsys) -> None:
    huge = "A" + "x" * 10_000_000
    body = Raw(completion_body(huge))
    with FakeOpenAI(raw=lambda *_: body) as fake:
        code, text = run_cli(openai_eval(data, fake.url, tmp_path / "run", "--limit", "1"), capsys)
    assert code == 0, text
    (answer,) = answers(tmp_path / "run")
    assert len(answer) <= STORED_TEXT_LIMIT and answer.startswith("Ax")
    assert "10,000,001 characters" in answer
    assert (tmp_path / "run" / "results.jsonl").stat().st_size < 2 * STORED_TEXT_LIMIT


def test_the_limit_is_a_model_option_that_must_be_positive() -> None:
    model = load_model("openai:m@http://127.0.0.1:1/v1", max_response_bytes=123)
    assert model.inner.max_response_bytes == 123
    with pytest.raises(ModelSpecError, match="max_response_bytes"):
        load_model("openai:m@http://127.0.0.1:1/v1", max_response_bytes=0)


# ----- item 13: redirects -------------------------------------------------------------------------


def test_a_redirect_to_another_server_is_not_followed(data: Path, tmp_path: Path, capsys) -> None:
    with FakeOpenAI() as other:
        moved = Raw(status=307, headers={"Location": f"{other.url}/chat/completions"})
        with FakeOpenAI(raw=lambda *_: moved) as fake:
            code, text = run_cli(openai_eval(data, fake.url, tmp_path / "run"), capsys)
            asked = len(fake.chat_requests)
        assert not other.chat_requests  # no image went there
    assert code == 3, text
    errors = [line["error"] for line in read_results(tmp_path / "run" / "results.jsonl")]
    assert errors and all("redirect to another server" in e for e in errors)
    assert all(other.url in e and "not retried" in e for e in errors)
    assert asked == len(errors)


def test_a_redirect_within_the_server_is_followed(data: Path, tmp_path: Path, capsys) -> None:
    def respond(path: str, body: dict[str, Any]) -> Raw:
        if path.startswith("/v1/"):
            return Raw(status=308, headers={"Location": "/v2/chat/completions"})
        return Raw(completion_body("A"))

    with FakeOpenAI(raw=respond) as fake:
        code, text = run_cli(openai_eval(data, fake.url, tmp_path / "run"), capsys)
        paths = {r.path for r in fake.chat_requests}
    assert code == 0, text
    assert set(answers(tmp_path / "run")) == {"A"}
    assert paths == {"/v1/chat/completions", "/v2/chat/completions"}
