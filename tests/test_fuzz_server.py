"""Fuzzing what a server answers: whatever bytes come back (any JSON shape, invalid UTF-8, lone
surrogate escapes, a byte order mark, a declared latin-1 charset, huge answers, gzip, deflate,
a bogus or truncated content encoding, error statuses, redirects), `eval` with the answering
model and `judge` with the answering judge end with 0, 1 or 3, never an uncaught exception;
what they store is UTF-8, each text capped; and no body is read further than its limit.

The cases are drawn by Hypothesis from a fixed seed (`derandomize`), so a run is reproducible;
one fake server answers every request of a case with that case's response.
"""

from __future__ import annotations

import gzip
import json
import random
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from handmade import full_dataset
from proactivebench.cli import main
from proactivebench.core.texts import STORED_TEXT_LIMIT
from proactivebench.models import http
from proactivebench.models.http import READ_CHUNK
from proactivebench.run.rundir import read_results
from proactivebench.testing.server import FakeOpenAI, Raw

#: Exit codes a run may end with: fine, cannot go on, episodes that ended in an error.
ALLOWED_EXITS = {0, 1, 3}
#: The body limit of the fuzzed backends (`max_response_bytes`): small, so that cases over it
#: are cheap to make and send.
LIMIT = 256 << 10
NO_RETRY = ("max_retries=0", f"max_response_bytes={LIMIT}")

#: Texts with what UTF-8 cannot hold (lone surrogates), pairs, controls, markup.
TEXTS = ["A", "A\ud800", "\udc00B", "\ud83d\ude00 B", "\x1b[31mB\x00", "<think>A", "é", ""]
#: Lengths added to an answer: none, over the stored-text cap, over the body limit.
PADDING = [0, 0, 0, STORED_TEXT_LIMIT + 9, LIMIT]
SPOILS = ["bom", "latin-1", "bad-bytes", "bogus-charset", "cesu"]
CODINGS = ["gzip", "deflate", "bogus", "truncated", "bomb", "not-gzip"]
STATUSES = [400, 404, 429, 500, 503, 307, 302, 204]
#: What a case spoils for sure (the one its number gives); the others one time in four.
DIMENSIONS = ("shape", "text", "spoil", "coding", "status")


def json_value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value: scalars of every kind, lists and objects, a few levels deep."""
    kinds = ["null", "bool", "int", "float", "text"] + (["list", "object"] if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "list":
        return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == "object":
        keys = ["choices", "message", "content", "text", "error", rng.choice(TEXTS)]
        return {rng.choice(keys): json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return {
        "null": None,
        "bool": rng.random() < 0.5,
        "int": rng.choice([0, -1, 2**70, 1]),
        "float": rng.choice([0.5, float("nan"), float("inf"), -1e308]),
        "text": rng.choice(TEXTS),
    }[kind]


def hostile_response(seed: int) -> Raw:
    """The response of case `seed`: one dimension surely spoiled (its values in turn, case
    after case), the others one time in four (a random value)."""
    rng = random.Random(seed)
    focus = DIMENSIONS[seed % len(DIMENSIONS)]

    def spoil(dimension: str, values: list[Any], benign: Any) -> Any:
        if dimension == focus:
            return values[seed // len(DIMENSIONS) % len(values)]
        return rng.choice(values) if rng.random() < 0.25 else benign

    content: Any = spoil("text", TEXTS, "A") + "x" * rng.choice(PADDING)
    shape = spoil("shape", ["json", "bytes", "deep", "content"], "completion")
    if shape == "bytes":
        body = rng.randbytes(rng.randint(0, 64))
    elif shape == "deep":
        body = b"[" * rng.randint(1, 200_000)
    else:
        if shape == "content":
            content = json_value(rng)
        value = (
            json_value(rng) if shape == "json" else {"choices": [{"message": {"content": content}}]}
        )
        # A lone surrogate as an escape, or as the bytes UTF-8 forbids (surrogatepass).
        ascii_only = rng.random() < 0.5
        body = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    headers = {"Content-Type": "application/json"}
    spoilt = spoil("spoil", SPOILS, None)
    if spoilt == "bom":
        body = b"\xef\xbb\xbf" + body
    elif spoilt in ("latin-1", "bogus-charset"):
        headers["Content-Type"] = f"application/json; charset={spoilt}"
    elif spoilt in ("bad-bytes", "cesu"):
        at = rng.randint(0, len(body))
        body = body[:at] + (b"\xed\xa0\x80" if spoilt == "cesu" else b"\xff\xc3") + body[at:]
    coding = spoil("coding", CODINGS, None)
    if coding == "bomb":  # 64 times the limit once inflated
        body = gzip.compress(body + b" " * (64 * LIMIT))
    elif coding in ("gzip", "truncated"):
        body = gzip.compress(body)
        body = body[: len(body) // 2] if coding == "truncated" else body
    elif coding == "deflate":
        body = zlib.compress(body)
    if coding is not None:
        headers["Content-Encoding"] = {"bomb": "gzip", "truncated": "gzip", "not-gzip": "gzip"}.get(
            coding, "x-bogus" if coding == "bogus" else coding
        )
    status = spoil("status", STATUSES, 200)
    if status in (302, 307):
        headers["Location"] = rng.choice(["http://127.0.0.1:1/v1/chat/completions", "/v1/x"])
    return Raw(body, status=status, headers=headers)


class Hostile:
    """The fake server, answering every chat request with the current case's response."""

    def __init__(self) -> None:
        self.response = Raw(b"{}")
        self.server = FakeOpenAI(raw=lambda *_: self.response)


@pytest.fixture(scope="module")
def hostile() -> Iterator[Hostile]:
    host = Hostile()
    with host.server:
        yield host


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def oeg_run(data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A judged open-ended run of two scenarios, to judge again with the hostile judge."""
    run = tmp_path_factory.mktemp("oeg") / "run"
    with FakeOpenAI(respond=lambda body: "0, 1") as good:
        args = ["eval", "--data", str(data), "--model", f"openai:m@{good.url}", "--out", str(run)]
        args += ["--mode", "oeg", "--judge", f"openai:j@{good.url}", "--scenarios", "ROD,QD"]
        with pytest.raises(SystemExit) as exit_info:
            main([*args, "--no-cache"])
            raise SystemExit(0)
    assert exit_info.value.code in (0, None)
    return run


@pytest.fixture
def body_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every body the backend read, as it read them."""
    sizes: list[int] = []
    read_body = http.read_body

    async def measured(response: Any, limit: int) -> tuple[bytes, bool]:
        body, complete = await read_body(response, limit)
        sizes.append(len(body))
        return body, complete

    monkeypatch.setattr(http, "read_body", measured)
    return sizes


def _stored_texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _stored_texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _stored_texts(item)


def _check_run(run: Path, sizes: list[int]) -> None:
    """What the command stored is UTF-8 with every text capped; no body read past its limit."""
    assert max(sizes, default=0) <= LIMIT + READ_CHUNK
    path = run / "results.jsonl"
    if path.exists():
        path.read_bytes().decode("utf-8")  # strict
        for line in read_results(path):
            assert all(len(t) <= STORED_TEXT_LIMIT for t in _stored_texts(line))


@pytest.mark.parametrize("seed", range(40))
def test_eval_and_judge_survive_any_server_answer(
    seed: int,
    hostile: Hostile,
    data: Path,
    oeg_run: Path,
    body_sizes: list[int],
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hostile.response = hostile_response(seed)
    url = hostile.server.url
    out = tmp_path_factory.mktemp("case")
    scenario = random.Random(seed).choice(["ROD", "QD", "COCO"])
    args = ["eval", "--data", str(data), "--model", f"openai:m@{url}", "--out", str(out / "eval")]
    args += ["--scenarios", scenario, "--limit", "1", "--no-cache"]
    if seed % 8:  # the report (of what `_check_run` checks was stored) one case in eight
        args.append("--no-report")
    for option in NO_RETRY:
        args += ["--model-option", option]
    code, text = run_cli(args, capsys)
    assert code in ALLOWED_EXITS, text
    _check_run(out / "eval", body_sizes)

    args = ["judge", str(oeg_run), "--judge", f"openai:j@{url}", "--out", str(out / "judged")]
    for option in NO_RETRY:
        args += ["--judge-option", option]
    code, text = run_cli([*args, "--no-cache", "--no-report"], capsys)
    assert code in ALLOWED_EXITS, text
    _check_run(out / "judged", body_sizes)
