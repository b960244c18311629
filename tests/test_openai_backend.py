"""The OpenAI-compatible backend end to end, against `proactivebench.testing`'s fake server.

Offline: every server listens on 127.0.0.1. Retries use a fast policy so that a run with
injected faults takes seconds; what is checked is that faults change nothing in the results,
that a fault retrying cannot fix becomes an episode error, and that the API key goes nowhere
but the bearer header.
"""

from __future__ import annotations

import asyncio
import email.utils
import io
import json
import logging
import random
import secrets
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from clirun import run_cli
from handmade import coco, full_dataset, rod, write_dataset
from proactivebench.benchmark.prompting import user_turn
from proactivebench.benchmark.registry import make_episode
from proactivebench.benchmark.scenarios import View
from proactivebench.core.errors import (
    CredentialsMissingError,
    ModelError,
    ModelSpecError,
    ProactiveBenchError,
)
from proactivebench.data.directory import load_dataset
from proactivebench.data.images import ImageStore, apply_view
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import http, load_model, openai_compat, resilient
from proactivebench.models.base import ChatRequest, Decoding
from proactivebench.models.http import parse_retry_after
from proactivebench.models.openai_compat import DEFAULT_BASE_URL, OpenAICompatible
from proactivebench.models.resilient import Resilient, RetryPolicy
from proactivebench.run.rundir import latest_results, read_results
from proactivebench.run.settings import EvalSettings
from proactivebench.testing.server import (
    FAULTS,
    FakeOpenAI,
    Raw,
    closed_port_url,
    decode_data_url,
)
from resultlines import comparable

FAST = RetryPolicy(max_retries=6, base_delay=0.02, max_delay=1.0)
MODEL = "test-vlm"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hand-made data set, every image repainted so that its pixels identify it."""
    root = full_dataset(tmp_path_factory.mktemp("data"))
    for n, path in enumerate(sorted(root.rglob("*.png"))):
        coarse = np.random.default_rng(n).integers(0, 256, (8, 10, 3), dtype=np.uint8)
        with Image.open(path) as image:
            size = image.size
        # Smooth (upscaled) noise: unique per file, and JPEG keeps it close.
        Image.fromarray(coarse).resize(size, Image.Resampling.BILINEAR).save(path)
    return root


@pytest.fixture
def server() -> Any:
    with FakeOpenAI(latency=0.01) as fake:
        yield fake


#: The options of the retry wrapper, which `load_model` puts around the backend.
WRAPPER_OPTIONS = ("retry", "max_retries", "max_delay", "concurrency", "max_consecutive_failures")


def backend(*urls: str, **options: Any) -> Resilient:
    """The backend as `load_model` makes it: inside the retry wrapper (`.inner`)."""
    options.setdefault("timeout", 2.0)
    options.setdefault("retry", FAST)
    wrapper = {k: options.pop(k) for k in WRAPPER_OPTIONS if k in options}
    return Resilient(OpenAICompatible(MODEL, endpoints=list(urls), **options), **wrapper)


def result_lines(run: Path) -> list[str]:
    """Episode lines in a canonical order: they are appended as episodes finish."""
    lines = read_results(run / "results.jsonl")
    return sorted(json.dumps(comparable(r), sort_keys=True) for r in lines)


def first_request(data: Path, scenario: str = "COCO", **decoding: Any) -> ChatRequest:
    record = load_dataset(data, (scenario,)).records[scenario][0]
    obs = make_episode(record).observation
    return ChatRequest([user_turn(obs)], obs, Decoding(**decoding))


def generate(model: Resilient, data: Path, requests: list[ChatRequest]) -> list[Any]:
    model.bind_images(ImageStore(data))

    async def run() -> list[Any]:
        try:
            return await asyncio.gather(*(model.generate([r]) for r in requests))
        finally:
            await model.aclose()

    return [completions[0] for completions in asyncio.run(run())]


# ----- specs and options ----------------------------------------------------------------------


def test_spec_names_model_and_url() -> None:
    model = load_model("openai:Qwen/Qwen2.5-VL-7B-Instruct@http://127.0.0.1:8000/v1/")
    assert isinstance(model, Resilient) and isinstance(model.inner, OpenAICompatible)
    assert model.inner.model == "Qwen/Qwen2.5-VL-7B-Instruct"
    assert model.inner.urls == ["http://127.0.0.1:8000/v1"]
    assert model.name == model.inner.name == "openai:Qwen/Qwen2.5-VL-7B-Instruct"
    assert model.max_batch == 1 and model.needs_images
    assert model.retry.max_retries == 6 and model.max_consecutive_failures == 20
    assert model.concurrency is None
    hosted = load_model("openai:gpt-4o")
    assert isinstance(hosted, Resilient) and isinstance(hosted.inner, OpenAICompatible)
    assert hosted.inner.urls == [DEFAULT_BASE_URL]


def test_options_through_load_model() -> None:
    model = load_model(
        "openai:m@http://a:1/v1",
        endpoints="http://b:2/v1/chat/completions,http://a:1/v1",
        image_format="png",
        api_key_env="MY_KEY",
        timeout=5,
        max_retries=2,
        concurrency=4,
    )
    assert isinstance(model, Resilient) and isinstance(model.inner, OpenAICompatible)
    assert model.inner.urls == ["http://a:1/v1", "http://b:2/v1"]
    assert model.inner.image_format == "PNG" and model.name == "openai:m[png]"
    assert model.retry.max_retries == 2 and model.concurrency == 4 and model.inner.timeout == 5
    for bad in ({"image_format": "gif"}, {"colour": "red"}, {"endpoints": "ftp://x"}):
        with pytest.raises(ModelSpecError):
            load_model("openai:m", **bad)
    known = r"unknown option\(s\) colour for OpenAICompatible; known: .*timeout.*max_retries"
    with pytest.raises(ModelSpecError, match=known):
        load_model("openai:m", colour="red")


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://[::1/v1", "endpoint 'http://[::1/v1' is not a valid URL: Invalid IPv6 URL"),
        (
            "http://127.0.0.1:99999/v1",
            "endpoint 'http://127.0.0.1:99999/v1' is not a valid URL: Port out of range 0-65535",
        ),
        ("http://127.0.0.1:x/v1", "endpoint 'http://127.0.0.1:x/v1' is not a valid URL: Port"),
        ("http:///v1", "endpoint 'http:///v1' names no host"),
    ],
)
def test_a_malformed_server_url_is_refused_when_the_model_is_loaded(url: str, said: str) -> None:
    """In the spec or in --endpoints, a URL that cannot be requested is one clear error
    before the run, not a traceback (an IPv6 bracket left open) nor an unreachable server."""
    for spec, options in ((f"openai:m@{url}", {}), ("openai:m@http://a:1/v1", {"endpoints": url})):
        with pytest.raises(ModelSpecError) as info:
            load_model(spec, **options)
        assert str(info.value).startswith(said), str(info.value)


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("model", "the spec names the model"),
        ("messages", "the episode makes the messages"),
        ("stream", "the answer is read as one JSON body"),
    ],
)
def test_extra_body_may_not_replace_what_the_request_is(key: str, why: str) -> None:
    """`extra_body` is merged over the request's body: a `model` there would send every
    request to another model than the one run.json names, `messages` would replace the
    episode's, and `stream` would turn each answer into events read as malformed JSON."""
    with pytest.raises(ModelSpecError) as info:
        load_model("openai:m@http://a:1/v1", extra_body={"top_k": 5, key: "x"})
    assert str(info.value) == f"openai option extra_body may not set {key!r}: {why}"
    model = load_model("openai:m@http://a:1/v1", extra_body={"top_k": 5})
    assert isinstance(model, Resilient) and model.inner.extra_body == {"top_k": 5}


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        ({"X-A": "a\nb"}, "header 'X-A' has a control character in its value"),
        ({"X-A": "a\x00"}, "header 'X-A' has a control character in its value"),
        ({"X A": "b"}, "'X A' is no header name"),
        ({"": "b"}, "'' is no header name"),
        ({"Content-Length": "5"}, "header 'Content-Length' is the request's own"),
        ({"transfer-encoding": "chunked"}, "header 'transfer-encoding' is the request's own"),
    ],
)
def test_headers_that_cannot_be_sent_as_given_are_refused(headers: dict, said: str) -> None:
    """What `headers` holds goes onto every request as it is: a line break in a value (a
    traceback from aiohttp, "header injection"), a name that is no HTTP token (the server's
    400 on every request) or the body's own framing are refused when the model is loaded."""
    with pytest.raises(ModelSpecError) as info:
        load_model("openai:m@http://a:1/v1", headers=headers)
    assert str(info.value) == f"openai option headers: {said}", str(info.value)
    model = load_model("openai:m@http://a:1/v1", headers={"X-Tenant": "é ok", "Host": "h"})
    assert isinstance(model, Resilient) and model.inner._headers["X-Tenant"] == "é ok"


def test_a_model_name_holding_an_address_that_is_no_url_is_pointed_out(monkeypatch) -> None:
    """`openai:m@localhost:8000/v1` (no scheme) is the model "m@localhost:8000/v1" of the
    hosted API, since model names may hold '@': the refusal for a missing key says what
    was taken for the name, instead of suggesting `openai:m@localhost:8000/v1@http://...`."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = load_model("openai:m@localhost:8000/v1")
    with pytest.raises(CredentialsMissingError) as info:
        model.inner._check_key()
    assert str(info.value) == (
        "openai:m@localhost:8000/v1 goes to the hosted API at https://api.openai.com/v1 (no "
        "server URL given: 'localhost:8000/v1' after '@' is no http:// or https:// URL, so it "
        "was taken as part of the model name 'm@localhost:8000/v1') and $OPENAI_API_KEY is not "
        "set: set it, or name your server, e.g. openai:m@http://localhost:8000/v1"
    )
    with pytest.raises(CredentialsMissingError) as info:
        load_model("openai:gpt-4o").inner._check_key()
    assert str(info.value) == (
        "openai:gpt-4o goes to the hosted API at https://api.openai.com/v1 (no server URL "
        "given) and $OPENAI_API_KEY is not set: set it, or name your server, e.g. "
        "openai:gpt-4o@http://127.0.0.1:8000/v1"
    )


def test_retry_after_seconds_and_http_date() -> None:
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": "2.5"}) == 2.5
    assert parse_retry_after({"retry-after": date}, now) == pytest.approx(30, abs=1)
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    rng = random.Random(0)
    policy = RetryPolicy(max_retries=3, base_delay=0.1, max_delay=5.0)
    assert 2.0 <= policy.delay(0, 2.0, rng) <= 2.1
    assert policy.delay(0, 3600.0, rng) == 5.0  # bounded: one header cannot stall a run
    assert all(0 <= policy.delay(k, None, rng) <= min(5.0, 0.1 * 2**k) for k in range(10))


# ----- requests and answers -------------------------------------------------------------------


def test_request_body_usage_and_latency(data: Path, server: FakeOpenAI) -> None:
    decoding = {"max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "extra": (("seed", 3),)}
    (completion,) = generate(backend(server.url), data, [first_request(data, **decoding)])
    (request,) = server.chat_requests
    body = request.body
    assert body["model"] == MODEL
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"]) == (
        7,
        0.5,
        0.9,
        3,
    )
    image, text = body["messages"][0]["content"]
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith("data:image/jpeg")
    assert text["type"] == "text" and "Options:" in text["text"]
    assert completion.text
    assert completion.usage["total_tokens"] == (
        completion.usage["prompt_tokens"] + completion.usage["completion_tokens"]
    )
    assert completion.latency_s >= 0.01


def test_token_counts_keep_only_whole_numbers_of_tokens(data: Path) -> None:
    """What a server reports as usage is kept where it is a count (an integer >= 0): a
    negative number, a text, a fraction or a flag would be summed into the report's token
    totals as they are."""
    usage = {
        "prompt_tokens": 12,
        "completion_tokens": -5,
        "total_tokens": "7",
        "cached_tokens": 1.5,
        "flag": True,
        "completion_tokens_details": {"reasoning_tokens": -1},
    }
    answer = {"choices": [{"message": {"content": "A"}}], "usage": usage}

    def raw(path: str, body: dict[str, Any]) -> Raw:
        return Raw(json.dumps(answer).encode(), headers={"Content-Type": "application/json"})

    with FakeOpenAI(raw=raw) as fake:
        (completion,) = generate(backend(fake.url), data, [first_request(data)])
    assert completion.text == "A" and completion.usage == {"prompt_tokens": 12}


def test_an_answer_cut_off_before_any_text_is_not_asked_again(data: Path) -> None:
    """A reasoning model behind vLLM's reasoning parser that spends the whole token limit
    thinking answers `content: null`, `finish_reason: "length"`: the same request gets the
    same answer, so it is not retried (it was, six times with backoff), and the error says
    what to change."""
    answer = {
        "choices": [
            {
                "message": {"content": None, "reasoning_content": "Let me think about"},
                "finish_reason": "length",
            }
        ]
    }

    def raw(path: str, body: dict[str, Any]) -> Raw:
        return Raw(json.dumps(answer).encode(), headers={"Content-Type": "application/json"})

    with FakeOpenAI(raw=raw) as fake:
        with pytest.raises(ModelError) as info:
            generate(backend(fake.url, max_retries=3), data, [first_request(data)])
        asked = len(fake.chat_requests)
    assert asked == 1 and not info.value.retryable
    assert str(info.value) == (
        f"openai:{MODEL}: {fake.url} answered HTTP 200 with no text: the generation reached "
        "its token limit (finish_reason 'length') before any answer; a reasoning model may "
        "spend it all thinking: raise --max-tokens (--judge-max-tokens for a "
        "judge) (not retried)"
    )


def test_a_refusal_is_the_models_answer_and_not_asked_again(data: Path, tmp_path: Path) -> None:
    """OpenAI's hosted models may refuse with `content: null` and the refusal's text in
    `refusal`: that is the model's answer (the reader finds no option in it), recorded as
    such; it was retried as 'no message content' until the episode failed, and a rerun asked
    again for the same refusal."""
    refusal = "I'm sorry, I can't help with that."
    answer = {"choices": [{"message": {"content": None, "refusal": refusal}}]}

    def raw(path: str, body: dict[str, Any]) -> Raw:
        return Raw(json.dumps(answer).encode(), headers={"Content-Type": "application/json"})

    with FakeOpenAI(raw=raw) as fake:
        (completion,) = generate(backend(fake.url, max_retries=3), data, [first_request(data)])
        assert completion.text == refusal and len(fake.chat_requests) == 1
        evaluate(data, backend(fake.url, max_retries=3), tmp_path, concurrency=2)
    lines = read_results(tmp_path / "results.jsonl")
    assert lines and not any("error" in line for line in lines)
    assert all(turn["answer"] == refusal for line in lines for turn in line["trace"])


def test_greedy_50_tokens_by_default(data: Path, tmp_path: Path, server: FakeOpenAI) -> None:
    evaluate(data, backend(server.url), tmp_path, concurrency=4)
    bodies = [r.body for r in server.chat_requests]
    assert bodies and all(b["temperature"] == 0.0 and b["max_tokens"] == 50 for b in bodies)
    assert all("top_p" not in b for b in bodies)
    assert not any("error" in r for r in read_results(tmp_path / "results.jsonl"))


def test_requests_in_flight_follow_the_caller_or_the_limit(data: Path) -> None:
    requests = [first_request(data)] * 64
    # The latency outlasts sending all 64 even on a loaded machine, so all overlap.
    with FakeOpenAI(latency=1.0) as fake:
        model = backend(fake.url)  # no limit: as many as the runner's episodes in flight
        generate(model, data, requests)
        assert fake.peak_in_flight == 64
    with FakeOpenAI(latency=0.05) as fake:
        generate(backend(fake.url, concurrency=8), data, requests[:24])
        assert fake.peak_in_flight == 8


# ----- faults -----------------------------------------------------------------------------------


def test_injected_faults_change_nothing(data: Path, tmp_path: Path) -> None:
    with FakeOpenAI(latency=0.01) as fake:
        evaluate(data, backend(fake.url), tmp_path / "clean", concurrency=6)
        clean_requests = len(fake.chat_requests)
    # Every kind once (every other request), then 20 % of the rest, all kinds mixed.
    schedule: list[str | None] = [k for kind in FAULTS for k in (kind, None)]
    # The client timeout leaves a loaded machine ample time for a normal (10 ms) answer.
    with FakeOpenAI(latency=0.01, schedule=schedule, fault_rate=0.2, seed=7, hang=2.0) as fake:
        model = backend(fake.url, timeout=1.2)
        evaluate(data, model, tmp_path / "faulty", concurrency=6)
        faults = [r.fault for r in fake.chat_requests if r.fault]
    assert set(faults) == set(FAULTS)
    assert result_lines(tmp_path / "faulty") == result_lines(tmp_path / "clean")
    assert not any("error" in r for r in read_results(tmp_path / "faulty" / "results.jsonl"))
    assert model.stats["retries"] == len(faults)
    assert model.stats["requests"] == clean_requests and model.stats["failures"] == 0


def test_retry_after_is_honoured(data: Path, tmp_path: Path) -> None:
    with FakeOpenAI(schedule=["http429"], retry_after="0.6") as fake:
        model = backend(fake.url)
        evaluate(data, model, tmp_path, EvalSettings(scenarios=("QD",), limit=1), concurrency=1)
        first, second = fake.chat_requests[:2]
    assert first.fault == "http429" and second.fault is None
    assert second.time - first.time >= 0.6
    assert model.stats["retries"] == 1


def test_non_retryable_400_is_an_episode_error(data: Path, tmp_path: Path) -> None:
    with FakeOpenAI(schedule=["http400"]) as fake:
        model = backend(fake.url)
        outcome = evaluate(data, model, tmp_path, concurrency=1)
    results = read_results(tmp_path / "results.jsonl")
    errors = [r["error"] for r in results if "error" in r]
    assert len(results) == 15 and len(errors) == 1
    assert "ModelError" in errors[0] and "HTTP 400" in errors[0]
    assert "invalid image (injected)" in errors[0] and "not retried" in errors[0]
    assert fake.url in errors[0]
    assert model.stats["retries"] == 0 and model.stats["failures"] == 1
    assert outcome.summary.average is not None and outcome.summary.average.errors == 1


def test_retries_exhausted_raise_a_clear_model_error(data: Path) -> None:
    with FakeOpenAI(schedule=["malformed", "empty", "no_content"]) as fake:
        model = backend(fake.url, max_retries=2)
        with pytest.raises(ModelError) as info:
            generate(model, data, [first_request(data)])
    error = info.value
    assert isinstance(error, ProactiveBenchError) and error.retryable
    assert "gave up after 3 attempts" in str(error) and fake.url in str(error)
    assert "no message content" in str(error) and error.endpoint == fake.url


def test_a_body_cut_short_is_said_in_words_not_as_aiohttp_reprs(data: Path) -> None:
    """A response whose body ends before its Content-Length (the fake's "drop": 10 of 44
    bytes) fails with aiohttp's words for it, not the repr of its inner exception, whose
    "400" reads as an HTTP status the server never sent."""
    with FakeOpenAI(schedule=["drop"]) as fake:
        model = backend(fake.url, max_retries=0)
        with pytest.raises(ModelError) as info:
            generate(model, data, [first_request(data)])
    said = str(info.value)
    assert said.endswith(
        "connection dropped: Not enough data to satisfy content length header (received 10 "
        "of 44 bytes)."
    ), said
    assert "<" not in said and "400" not in said


def test_an_unreachable_server_ends_the_run_before_it_starts(data: Path, tmp_path: Path) -> None:
    from proactivebench.core.errors import RunAbort

    url = closed_port_url()
    started = time.monotonic()
    with pytest.raises(RunAbort, match=f"server unreachable: {url}"):
        evaluate(data, backend(url), tmp_path, concurrency=8)
    assert time.monotonic() - started < 5
    assert read_results(tmp_path / "results.jsonl") == []


def test_a_server_that_never_answers_ends_the_run_within_the_connect_timeout(
    data: Path, tmp_path: Path, capsys
) -> None:
    """Accepts connections, answers nothing: the start-up check gives up after `connect_timeout`
    (10 s unless the spec says otherwise; 1 s here, so that the test does not wait the default)."""
    assert load_model("openai:m@http://127.0.0.1:9/v1").inner.connect_timeout == 10.0
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        args = ["eval", "--data", str(data), "--out", str(tmp_path), "--model", f"openai:m@{url}"]
        code, text = run_cli([*args, "--no-cache", "--model-option", "connect_timeout=1"], capsys)
    assert code == 1 and "server unreachable" in text and "no answer within 1s" in text
    assert not (tmp_path / "results.jsonl").exists()


def test_failed_requests_are_episode_errors(data: Path, tmp_path: Path) -> None:
    """Reachable, but every request fails: each episode records why (no breaker here)."""
    fast = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.05)
    with FakeOpenAI(fault_rate=1.0, fault_kinds=("http500",)) as fake:
        model = backend(fake.url, retry=fast, max_consecutive_failures=0)
        outcome = evaluate(data, model, tmp_path, concurrency=8)
    errors = [r.get("error", "") for r in read_results(tmp_path / "results.jsonl")]
    assert len(errors) == 15
    assert all("HTTP 500" in e and "after 3 attempts" in e for e in errors)
    assert sum(s.errors for s in outcome.summary.scenarios.values()) == 15


def test_a_server_that_dies_mid_run_trips_the_breaker(
    data: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    """After 20 failed requests in a row the run stops within seconds, keeps what finished,
    exits non-zero, and a rerun resumes."""
    fast = RetryPolicy(max_retries=6, base_delay=0.01, max_delay=0.02)
    monkeypatch.setattr(resilient, "DEFAULT_RETRY", fast)
    run = tmp_path / "run"
    args = ["eval", "--data", str(data), "--out", str(run), "--no-cache", "--concurrency", "1"]
    with FakeOpenAI(schedule=[None] * 5 + ["http500"] * 200) as fake:
        started = time.monotonic()
        code, text = run_cli([*args, "--model", f"openai:{MODEL}@{fake.url}"], capsys)
        assert time.monotonic() - started < 15
    assert code == 1 and "20 requests in a row failed" in text and "HTTP 500" in text
    finished = read_results(run / "results.jsonl")
    scored = [r for r in finished if "error" not in r]  # the episodes before the server died
    assert len(finished) < 15 and len(scored) >= 2
    with FakeOpenAI() as fake:
        code, text = run_cli([*args, "--model", f"openai:{MODEL}@{fake.url}"], capsys)
    latest = latest_results(read_results(run / "results.jsonl"))  # errors were played again
    assert code == 0 and len(latest) == 15 and not any("error" in r for r in latest)


# ----- replicas -------------------------------------------------------------------------------


def test_requests_spread_over_replicas(data: Path, tmp_path: Path) -> None:
    with FakeOpenAI(latency=0.01) as one:
        evaluate(data, backend(one.url), tmp_path / "single", concurrency=6)
    for balance in ("least-in-flight", "round-robin"):
        with FakeOpenAI(latency=0.01) as a, FakeOpenAI(latency=0.01) as b:
            model = backend(a.url, b.url, balance=balance)
            evaluate(data, model, tmp_path / balance, concurrency=6)
            counts = len(a.chat_requests), len(b.chat_requests)
        assert min(counts) > 0, balance
        assert model.inner.requests_by_endpoint == {a.url: counts[0], b.url: counts[1]}
        if balance == "round-robin":
            assert abs(counts[0] - counts[1]) <= 1
        assert result_lines(tmp_path / balance) == result_lines(tmp_path / "single")


def test_a_failing_replica_is_retried_elsewhere(data: Path, tmp_path: Path) -> None:
    with FakeOpenAI(fault_rate=1.0, fault_kinds=("http500",)) as bad, FakeOpenAI() as live:
        model = backend(bad.url, live.url, balance="round-robin")
        evaluate(data, model, tmp_path, concurrency=4)
    results = read_results(tmp_path / "results.jsonl")
    assert len(results) == 15 and not any("error" in r for r in results)
    assert model.inner.requests_by_endpoint[bad.url] > 0 and model.stats["retries"] > 0


def test_a_request_that_failed_on_a_replica_is_retried_on_another() -> None:
    """The backend makes one attempt per call: the wrapper's retry is the same request object
    again, which avoids the replica it failed at even once that replica is no longer set aside;
    other requests, and the same one after a success, are balanced as usual."""
    import gc

    replicas = http.Replicas(["http://a:1/v1", "http://b:2/v1"], "least-in-flight")
    a, b = replicas.replicas
    request, other = ChatRequest([]), ChatRequest([])
    assert replicas.pick(request) is a
    replicas.failed(a, request)
    a.down_until = 0.0  # set aside no longer
    assert replicas.pick(request) is b and replicas.pick(other) is a
    b.sent += 1
    replicas.succeeded(b, request)
    assert replicas.pick(request) is a
    replicas.failed(a, request)
    del request
    gc.collect()
    assert replicas._failed_at == {}  # a request given up on is forgotten with it


def test_a_replica_down_before_the_run_is_set_aside(data: Path, tmp_path: Path, caplog) -> None:
    dead = closed_port_url()
    with FakeOpenAI(latency=0.01) as live, caplog.at_level(logging.WARNING):
        evaluate(data, backend(dead, live.url), tmp_path, concurrency=4)
    results = read_results(tmp_path / "results.jsonl")
    assert len(results) == 15 and not any("error" in r for r in results)
    assert any(f"replica {dead} is unreachable" in r.getMessage() for r in caplog.records)


# ----- the API key ------------------------------------------------------------------------------


def _leaks(key: str, *places: Path) -> list[str]:
    found = []
    for place in places:
        files = [place] if place.is_file() else [p for p in place.rglob("*") if p.is_file()]
        found += [str(f) for f in files if key.encode() in f.read_bytes()]
    return found


def test_a_key_read_with_its_line_ending_is_sent_without_it(data: Path, monkeypatch) -> None:
    """A key read from a file saved with Windows line ends (`export KEY=$(cat key.txt)` keeps
    the carriage return) is sent without the whitespace around it; it was a traceback from
    aiohttp on every request ("Forbidden control character"). A control character inside
    the key is refused when the model is loaded, without showing the key."""
    monkeypatch.setenv("MY_KEY", " sk-abc\r")
    with FakeOpenAI(api_key="sk-abc") as fake:
        model = load_model(f"openai:{MODEL}@{fake.url}", api_key_env="MY_KEY")
        (completion,) = generate(model, data, [first_request(data)])
        assert {r.headers.get("authorization") for r in fake.chat_requests} == {"Bearer sk-abc"}
    assert completion.text
    monkeypatch.setenv("MY_KEY", "sk-a\nbc")
    with pytest.raises(ModelSpecError) as info:
        load_model("openai:m@http://a:1/v1", api_key_env="MY_KEY")
    assert str(info.value) == (
        "$MY_KEY holds a control character (a line break?) inside the key, which cannot be "
        "sent in a header"
    )


def test_api_key_is_sent_as_bearer_and_written_nowhere(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog, monkeypatch
) -> None:
    key = f"sk-test-{secrets.token_hex(16)}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setattr(resilient, "DEFAULT_RETRY", FAST)
    caplog.set_level(logging.DEBUG)
    run, cache = tmp_path / "run", tmp_path / "cache.sqlite"
    schedule = ["http500", "drop", "http429", "malformed"]
    with FakeOpenAI(api_key=key, schedule=schedule, retry_after="0.05") as fake:
        spec = f"openai:{MODEL}@{fake.url}"
        args = ["eval", "--data", str(data), "--model", spec, "--out", str(run)]
        code, text = run_cli([*args, "--cache", str(cache)], capsys)
        received = {r.headers.get("authorization") for r in fake.chat_requests}
    assert code == 0
    assert received == {f"Bearer {key}"}
    assert not any("error" in r for r in read_results(run / "results.jsonl"))
    assert key not in text and key not in caplog.text
    assert _leaks(key, run, cache) == []

    # A server that refuses the key and echoes it back: the error names the variable, not it.
    with FakeOpenAI(api_key="another-key") as fake:
        model = load_model(f"openai:{MODEL}@{fake.url}")
        assert key not in repr(model) and key not in model.name
        outcome = evaluate(data, model, tmp_path / "refused", concurrency=4)
    errors = [r["error"] for r in read_results(tmp_path / "refused" / "results.jsonl")]
    assert len(errors) == 15 == sum(s.errors for s in outcome.summary.scenarios.values())
    assert all("HTTP 401" in e and "$OPENAI_API_KEY" in e and "***" in e for e in errors)
    assert _leaks(key, tmp_path / "refused") == [] and key not in caplog.text


# ----- images -----------------------------------------------------------------------------------


def _received_images(fake: FakeOpenAI) -> list[tuple[str, Image.Image]]:
    images = []
    for request in fake.chat_requests:
        for message in request.body["messages"]:
            for part in message["content"]:
                if part["type"] == "image_url":
                    mime, raw = decode_data_url(part["image_url"]["url"])
                    images.append((mime, Image.open(io.BytesIO(raw)).convert("RGB")))
    return images


def _shown_views(run: Path) -> dict[View, np.ndarray]:
    """Every view the traces say was shown, with the pixels it should have."""
    views = {}
    for result in read_results(run / "results.jsonl"):
        for turn in result["trace"]:
            crop = tuple(turn["crop"]) if turn["crop"] is not None else None
            views[View(turn["image"], crop, turn.get("resize_short_edge"))] = None
    data = json.loads((run / "run.json").read_text())["data_dir"]
    shown = {}
    for view in views:
        with Image.open(Path(data) / view.image) as image:
            shown[view] = np.asarray(apply_view(image.convert("RGB"), view))
    return shown


@pytest.mark.parametrize("image_format", ["png", "jpeg"])
def test_images_arrive_as_data_urls_of_the_views(
    data: Path, tmp_path: Path, image_format: str
) -> None:
    with FakeOpenAI() as fake:
        evaluate(data, backend(fake.url, image_format=image_format), tmp_path, concurrency=4)
        received = _received_images(fake)
    shown = _shown_views(tmp_path)
    assert len(received) == len(fake.chat_requests) >= len(shown)
    matched: set[View] = set()
    for mime, image in received:
        pixels = np.asarray(image).astype(int)
        same_size = [v for v, p in shown.items() if p.shape == pixels.shape]
        error = {v: np.abs(shown[v].astype(int) - pixels).mean() for v in same_size}
        best = min(error, key=error.__getitem__)
        if best.crop is None:  # the synthetic PNG file itself
            assert (mime, error[best]) == ("image/png", 0)
        else:  # the crop, encoded as asked
            assert mime == f"image/{image_format}"
            assert error[best] == 0 if image_format == "png" else error[best] < 3
        matched.add(best)
    assert matched == set(shown)
    coco = [v for v in shown if v.image.startswith("COCO/")]
    assert len(coco) >= 3 and all(v.crop is not None for v in coco)
    with Image.open(data / coco[0].image) as full:
        assert shown[coco[0]].shape[:2] != (full.height, full.width)  # the crop is applied


def test_untransformed_jpeg_views_reach_the_server_as_the_files_bytes(tmp_path: Path) -> None:
    """No decode, no re-encode: the server gets the file; a crop is encoded from its pixels."""
    data = write_dataset(
        tmp_path / "data",
        {
            "ROD": [rod(0, image_template="ROD/0/{image}.jpg", reference_image=1)],
            "COCO": [coco(0, image_template="COCO/0/scene.jpg")],
        },
    )
    rng = np.random.default_rng(0)
    ys, xs = np.mgrid[0:160, 0:200]
    for path in sorted(data.rglob("*.jpg")):  # gradients and grain: a re-encode would show
        base = np.stack([xs, ys, xs + ys], axis=-1) + rng.integers(0, 24, size=(160, 200, 3))
        Image.fromarray(base.clip(0, 255).astype(np.uint8)).save(path, quality=85)
    with FakeOpenAI(answers={}) as fake:
        run = tmp_path / "run"
        evaluate(data, backend(fake.url), run, concurrency=1)  # one request at a time, in order
        requests = fake.chat_requests
    turns = [turn for result in read_results(run / "results.jsonl") for turn in result["trace"]]
    assert len(turns) == len(requests) >= 2  # ROD shows its file, COCO a crop
    kinds = set()
    for turn, request in zip(turns, requests, strict=True):
        (part,) = [p for p in request.body["messages"][0]["content"] if p["type"] == "image_url"]
        mime, sent = decode_data_url(part["image_url"]["url"])
        file_bytes = (data / turn["image"]).read_bytes()
        assert mime == "image/jpeg"
        if turn["crop"] is None:
            assert sent == file_bytes
            kinds.add("file")
        else:
            assert sent != file_bytes
            with Image.open(data / turn["image"]) as full:
                expected = np.asarray(full.convert("RGB").crop(tuple(turn["crop"]))).astype(int)
            got = np.asarray(Image.open(io.BytesIO(sent)).convert("RGB")).astype(int)
            assert got.shape == expected.shape and np.abs(got - expected).mean() < 4
            kinds.add("crop")
    assert kinds == {"file", "crop"}


def test_request_bodies_splice_data_urls_and_survive_a_text_that_looks_like_a_slot(
    data: Path,
) -> None:
    """The body is the JSON of the wire messages whatever the texts contain."""
    store = ImageStore(data)
    model = backend("http://127.0.0.1:9/v1")
    model.bind_images(store)
    obs = make_episode(load_dataset(data, "COCO").records["COCO"][0]).observation
    messages = [user_turn(obs)]
    tricky = [
        [{**messages[0], "content": [*messages[0]["content"], {"type": "text", "text": text}]}]
        for text in ("\x00image-url\x00", "plain")
    ]
    for request_messages in (messages, *tricky):
        request = ChatRequest(request_messages, obs)
        body = json.loads(asyncio.run(model.inner._payload(request)))
        wire = openai_compat.openai_messages(request_messages, lambda v: store.data_url(v))
        assert body["messages"] == wire and body["model"] == MODEL


def test_proxies_come_from_the_environment_once_per_endpoint(monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3129")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")

    async def proxies() -> list[str | None]:
        session = http.Session({}, connect_timeout=1.0)
        try:
            return [
                session.proxy("http://127.0.0.1:8000/v1/chat/completions"),
                session.proxy("http://gpu-box:8000/v1/chat/completions"),
                session.proxy("https://api.openai.com/v1/chat/completions"),
            ]
        finally:
            await session.aclose()

    assert asyncio.run(proxies()) == [
        None,
        "http://proxy.example:3128",
        "http://proxy.example:3129",
    ]


# ----- reasoning models ---------------------------------------------------------------------------


def test_reasoning_models_are_known_by_name_or_option() -> None:
    from proactivebench.models.openai_compat import is_reasoning_model

    assert all(map(is_reasoning_model, ["o1", "o3-mini", "o4-mini", "gpt-5", "openai/gpt-5.2"]))
    assert not any(map(is_reasoning_model, ["gpt-4.1", "Qwen/Qwen2.5-VL-7B", "o4mini", "solo1"]))
    thinker = load_model("openai:my-thinker@http://127.0.0.1:9/v1", reasoning=True)
    assert isinstance(thinker, Resilient) and thinker.inner.reasoning


def test_a_reasoning_model_run_sends_what_the_real_api_accepts(data: Path, tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        model = load_model(f"openai:o4-mini@{fake.url}", reasoning_effort="low")
        outcome = evaluate(data, model, tmp_path / "run", EvalSettings(limit=1))
        bodies = [r.body for r in fake.chat_requests]
    assert sum(s.n for s in outcome.summary.scenarios.values()) == 7 and not outcome.errors
    for body in bodies:
        assert "max_tokens" not in body and "temperature" not in body
        assert body["max_completion_tokens"] == 50 + 8192 and body["reasoning_effort"] == "low"
    turns = [t for r in read_results(tmp_path / "run" / "results.jsonl") for t in r["trace"]]
    assert all(t["usage"]["reasoning_tokens"] == 64 for t in turns)
    config = json.loads((tmp_path / "run" / "run.json").read_text())
    assert config["model_settings"] == {
        "reasoning": True,
        "reasoning_budget": 8192,
        "reasoning_effort": "low",
    }


def test_a_refused_parameter_is_one_clear_error_not_retried(data: Path, tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        model = backend(fake.url, reasoning=False)
        # A reasoning model the backend was told is not (named so in its messages and the run).
        model.inner.model = model.inner.name = model.name = "o4-mini"
        outcome = evaluate(data, model, tmp_path / "run", EvalSettings(limit=1))
        attempts = len(fake.chat_requests)
    (reason,) = outcome.errors
    assert "HTTP 400" in reason and "max_tokens" in reason
    assert "set --model-option reasoning=true" in reason
    assert attempts == 7  # one per episode: a refusal is not retried


# ----- the response cache and the key, across servers ---------------------------------------------


def test_cached_answers_stay_with_their_servers_unless_shared_on_purpose(
    data: Path, tmp_path: Path
) -> None:
    from proactivebench.models.cache import ResponseCache

    cache = ResponseCache(tmp_path / "cache.sqlite")
    settings = EvalSettings(scenarios=("QD",))
    with FakeOpenAI() as one, FakeOpenAI() as two:
        evaluate(data, backend(one.url), tmp_path / "a", settings, cache=cache)
        evaluate(data, backend(two.url), tmp_path / "b", settings, cache=cache)
        assert one.chat_requests and two.chat_requests  # the same model name, asked apart
        shared = backend(two.url, cache_scope="model")
        evaluate(data, shared, tmp_path / "c", settings, cache=cache)
        evaluate(data, backend(one.url, cache_scope="model"), tmp_path / "d", settings, cache=cache)
        asked = len(one.chat_requests)
    assert asked == len(read_results(tmp_path / "a" / "results.jsonl"))  # "d" reused "c"'s
    cache.close()


def test_a_key_echoed_by_the_server_is_stored_nowhere(
    data: Path, tmp_path: Path, monkeypatch, caplog
) -> None:
    from proactivebench.models.cache import ResponseCache

    key = "sk-test-" + secrets.token_hex(8)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    cache_path = tmp_path / "cache.sqlite"
    with FakeOpenAI(respond=lambda body: f"Authorization: Bearer {key}") as fake:
        cache = ResponseCache(cache_path)
        evaluate(data, backend(fake.url), tmp_path / "run", EvalSettings(limit=1), cache=cache)
        cache.close()
    stored = (tmp_path / "run" / "results.jsonl").read_bytes() + cache_path.read_bytes()
    assert key.encode() not in stored and b"***" in stored
    with caplog.at_level(logging.WARNING):
        backend("http://gpu-box.example:8000/v1")
        backend("http://127.0.0.1:8000/v1")
    assert [r.getMessage() for r in caplog.records] == [
        "the API key in $OPENAI_API_KEY goes to http://gpu-box.example:8000/v1 over plain http://"
    ]


def test_the_fake_server_serves_in_the_background_until_sigterm() -> None:
    """Started as a background job (stdin closed at once), `python -m
    proactivebench.testing.server` keeps serving until SIGTERM: it used to stop as soon as its
    stdin closed."""
    import signal
    import subprocess
    import sys
    import urllib.request

    server = subprocess.Popen(
        [sys.executable, "-m", "proactivebench.testing.server", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split()[1]
        with urllib.request.urlopen(f"{url}/models", timeout=30) as response:
            assert json.loads(response.read())["object"] == "list"
        assert server.poll() is None
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
