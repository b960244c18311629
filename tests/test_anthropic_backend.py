"""The `anthropic:` backend (Anthropic's Messages API) end to end, against
`proactivebench.testing`'s stand-in `FakeAnthropic`, and what it shares with `openai:` through
`models/http.py`: a backend's breaker default from its `SpecKind`, usage counted by the
report's names.

Offline: every server listens on 127.0.0.1; retries use a fast policy.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import io
import json
import logging
import secrets
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from clirun import run_cli
from proactivebench import models
from proactivebench.benchmark.prompting import user_turn
from proactivebench.benchmark.registry import make_episode
from proactivebench.core.errors import CredentialsMissingError, ModelError
from proactivebench.data.directory import load_dataset
from proactivebench.data.images import ImageStore
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import SPEC_KIND, load_model, resilient
from proactivebench.models.anthropic import API_VERSION, AnthropicMessages
from proactivebench.models.base import ChatRequest, Decoding, usage_counts
from proactivebench.models.resilient import Resilient, RetryPolicy
from proactivebench.run.judge import judge_messages
from proactivebench.run.rundir import read_results
from proactivebench.run.settings import EvalSettings
from proactivebench.testing import FakeAnthropic, FakeOpenAI
from proactivebench.testing.server import Raw

FAST = RetryPolicy(max_retries=4, base_delay=0.02, max_delay=1.0)
MODEL = "claude-test"


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resilient, "DEFAULT_RETRY", FAST)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def first_request(data: Path, **decoding: Any) -> ChatRequest:
    scenario = sorted(load_dataset(data).records)[0]
    record = load_dataset(data, (scenario,)).records[scenario][0]
    obs = make_episode(record).observation
    return ChatRequest([user_turn(obs)], obs, Decoding(**decoding))


def generate(model: Any, data: Path, requests: list[ChatRequest]) -> list[Any]:
    model.bind_images(ImageStore(data))

    async def run() -> list[Any]:
        try:
            return [(await model.generate([r]))[0] for r in requests]
        finally:
            await model.aclose()

    return asyncio.run(run())


def image_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        part
        for message in body["messages"]
        if isinstance(message["content"], list)
        for part in message["content"]
        if part.get("type") == "image"
    ]


# ----- a run ------------------------------------------------------------------------------------


def test_eval_plays_against_the_messages_api(
    synth_test: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """A whole `eval` through the CLI: every request is the Messages API's shape, the answers
    are those the OpenAI stand-in gives the same requests, and each turn's usage is counted by
    the report's names."""
    key = f"sk-ant-{secrets.token_hex(8)}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    run = tmp_path / "run"
    with FakeAnthropic(api_key=key) as fake:
        args = ["eval", "--data", str(synth_test), "--model", f"anthropic:{MODEL}@{fake.url}"]
        code, text = run_cli([*args, "--out", str(run)], capsys)
        sent = fake.message_requests
    assert code == 0, text
    lines = read_results(run / "results.jsonl")
    assert len(lines) == 7 and not any("error" in line for line in lines)
    assert json.loads((run / "run.json").read_text())["model"] == f"anthropic:{MODEL}"
    assert sent and all(r.headers["x-api-key"] == key for r in sent)
    assert {r.headers["anthropic-version"] for r in sent} == {API_VERSION}
    assert "authorization" not in sent[0].headers
    for request in sent:
        body = request.body
        assert body["model"] == MODEL and body["max_tokens"] == 50 and body["temperature"] == 0
        assert "system" not in body and {m["role"] for m in body["messages"]} <= {
            "user",
            "assistant",
        }
        blocks = image_blocks(body)
        assert blocks
        for block in blocks:
            source = block["source"]
            assert source["type"] == "base64"
            with Image.open(io.BytesIO(base64.b64decode(source["data"]))) as image:
                assert source["media_type"] == Image.MIME[image.format]
    turns = [turn for line in lines for turn in line["trace"]]
    assert len(turns) == len(sent)
    for turn in turns:
        usage = turn["usage"]
        assert set(usage) == {"prompt_tokens", "completion_tokens", "total_tokens"}, usage
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert usage["prompt_tokens"] >= 256  # each request shows an image

    # The same requests in the OpenAI shape get the same answers: the wire changes nothing.
    with FakeOpenAI() as fake:
        args = ["eval", "--data", str(synth_test), "--model", f"openai:{MODEL}@{fake.url}"]
        code, text = run_cli([*args, "--out", str(tmp_path / "openai")], capsys)
    assert code == 0, text
    openai_lines = read_results(tmp_path / "openai" / "results.jsonl")

    def answers(found: list[dict[str, Any]]) -> list[Any]:
        return sorted(
            (x["scenario"], x["sample_id"], [t["answer"] for t in x["trace"]]) for x in found
        )

    assert answers(lines) == answers(openai_lines)


def test_the_system_prompt_goes_apart(monkeypatch) -> None:
    """A judge's request: its system prompt is the body's `system`, never a message; a
    judge's vote seed is not sent (the API takes none)."""
    with FakeAnthropic(respond=lambda body: "ps: 1, cp: 0") as fake:
        model = load_model(f"anthropic:{MODEL}@{fake.url}")
        messages = judge_messages("What is it?", "dog", "a dog")
        decoding = Decoding(max_tokens=64).with_extra(seed=2)
        (answer,) = asyncio.run(model.generate([ChatRequest(messages, None, decoding)]))
        (sent,) = fake.message_requests
    assert answer.text == "ps: 1, cp: 0"
    assert sent.body["system"] == messages[0]["content"]
    assert [m["role"] for m in sent.body["messages"]] == ["user"]
    assert sent.body["max_tokens"] == 64 and "seed" not in sent.body
    assert model.sent_decoding(decoding) == {"max_tokens": 64, "temperature": 0.0}


def test_images_are_base64_blocks_of_their_own_media_type(synth_test: Path) -> None:
    """A view of an untransformed file is that file's bytes, of its own type; a transformed
    one is encoded as `image_format` says."""
    request = first_request(synth_test)
    for image_format, quality in (("jpeg", 90), ("png", 90)):
        with FakeAnthropic() as fake:
            model = load_model(f"anthropic:{MODEL}@{fake.url}", image_format=image_format)
            store = ImageStore(synth_test)
            generate(model, synth_test, [request])
            (sent,) = fake.message_requests
        (view,) = [p["view"] for p in request.messages[0]["content"] if p.get("type") == "image"]
        url = store.data_url(view, image_format.upper(), quality)
        media_type, _, data = url.removeprefix("data:").partition(";base64,")
        (block,) = image_blocks(sent.body)
        assert block == {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }


# ----- failures ---------------------------------------------------------------------------------


def test_an_overloaded_answer_is_retried_after_its_retry_after(synth_test: Path) -> None:
    with FakeAnthropic(schedule=["http529", "http429"], retry_after="0.05") as fake:
        model = load_model(f"anthropic:{MODEL}@{fake.url}")
        assert isinstance(model, Resilient)
        model.bind_images(ImageStore(synth_test))
        request = first_request(synth_test)

        async def once() -> Any:
            try:
                return await model.inner.generate([request])
            finally:
                await model.inner.aclose()

        with pytest.raises(ModelError) as caught:
            asyncio.run(once())
        assert caught.value.retryable and caught.value.status == 529
        assert caught.value.retry_after == 0.05 and "Overloaded (injected)" in str(caught.value)
        (answer,) = generate(model, synth_test, [request])
        faults = [r.fault for r in fake.message_requests]
    assert answer.text and faults == ["http529", "http429", None]
    assert model.stats["retries"] == 1 and model.stats["requests"] == 1


def test_a_refusal_is_one_error_line_and_not_retried(
    synth_test: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeAnthropic(schedule=["http400"]) as fake:
        args = ["eval", "--data", str(synth_test), "--model", f"anthropic:{MODEL}@{fake.url}"]
        code, text = run_cli([*args, "--out", str(tmp_path / "run"), "--concurrency", "1"], capsys)
        sent = fake.message_requests
    assert code == 3, text
    errors = [x["error"] for x in read_results(tmp_path / "run" / "results.jsonl") if "error" in x]
    assert len(errors) == 1 and "\n" not in errors[0]
    assert "HTTP 400" in errors[0] and "invalid image (injected)" in errors[0]
    assert "not retried" in errors[0]
    refused = sent[0].body
    assert sum(r.body == refused for r in sent) == 1  # sent once


def test_a_spend_limit_is_not_retried() -> None:
    """A 429 that says the organization's spend limit is reached lasts until it is raised."""
    body = (
        b'{"type": "error", "error": {"type": "rate_limit_error", "message": "spend limit", '
        b'"details": {"error_code": "enforced_spend_limit_reached"}}}'
    )
    raw = Raw(body, 429, {"content-type": "application/json", "retry-after": "0"})
    with FakeAnthropic(raw=lambda path, sent: raw) as fake:
        model = load_model(f"anthropic:{MODEL}@{fake.url}")
        with pytest.raises(ModelError, match=r"spend limit.*not retried") as caught:
            asyncio.run(model.generate([ChatRequest([{"role": "user", "content": "hi"}])]))
        assert not caught.value.retryable and len(fake.message_requests) == 1


def test_no_text_at_the_token_limit_is_not_retried() -> None:
    answer = b'{"type": "message", "content": [], "stop_reason": "max_tokens", "usage": {}}'
    with FakeAnthropic(raw=lambda path, sent: Raw(answer)) as fake:
        model = load_model(f"anthropic:{MODEL}@{fake.url}")
        with pytest.raises(ModelError, match=r"stop_reason 'max_tokens'.*--max-tokens"):
            asyncio.run(model.generate([ChatRequest([{"role": "user", "content": "hi"}])]))
        assert len(fake.message_requests) == 1


def test_the_key_goes_in_its_header_and_nowhere_else(
    synth_test: Path, tmp_path: Path, caplog, monkeypatch
) -> None:
    """A server that refuses the key and echoes it: the errors name the variable, never the
    key, and no file of the run holds it."""
    key = f"sk-ant-{secrets.token_hex(16)}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    caplog.set_level(logging.DEBUG)
    with FakeAnthropic(api_key="another-key") as fake:
        model = load_model(f"anthropic:{MODEL}@{fake.url}")
        assert key not in repr(model) and key not in model.name
        outcome = evaluate(synth_test, model, tmp_path / "refused", EvalSettings(), concurrency=4)
        assert {r.headers["x-api-key"] for r in fake.message_requests} == {key}
    errors = [x["error"] for x in read_results(tmp_path / "refused" / "results.jsonl")]
    assert len(errors) == 7 == sum(s.errors for s in outcome.summary.scenarios.values())
    assert all("HTTP 401" in e and "$ANTHROPIC_API_KEY" in e and "***" in e for e in errors)
    assert key not in caplog.text
    files = [p for p in (tmp_path / "refused").rglob("*") if p.is_file()]
    assert not [str(p) for p in files if key.encode() in p.read_bytes()]


def test_the_hosted_api_without_a_key_is_refused_before_the_run() -> None:
    model = load_model(f"anthropic:{MODEL}")
    assert isinstance(model.inner, AnthropicMessages)
    assert model.inner.urls == ["https://api.anthropic.com/v1"]
    with pytest.raises(CredentialsMissingError, match=r"\$ANTHROPIC_API_KEY is not set"):
        asyncio.run(model.preflight())


# ----- what the backends share --------------------------------------------------------------------


def test_a_backends_breaker_default_is_its_spec_kinds(monkeypatch) -> None:
    assert not hasattr(models, "BREAKER_DEFAULTS")
    assert SPEC_KIND["anthropic"].breaker == SPEC_KIND["openai"].breaker == 20
    assert SPEC_KIND["hf"].breaker == SPEC_KIND["python"].breaker == 0
    model = load_model(f"anthropic:{MODEL}@http://127.0.0.1:9/v1")
    assert model.max_consecutive_failures == 20
    changed = dataclasses.replace(SPEC_KIND["anthropic"], breaker=3)
    monkeypatch.setitem(SPEC_KIND, "anthropic", changed)
    assert load_model(f"anthropic:{MODEL}@http://127.0.0.1:9/v1").max_consecutive_failures == 3
    asked = load_model(f"anthropic:{MODEL}@http://127.0.0.1:9/v1", max_consecutive_failures=5)
    assert asked.max_consecutive_failures == 5


def test_usage_is_counted_by_the_reports_names() -> None:
    anthropic = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 2,
        "cache_read_input_tokens": 3,
        "output_tokens": 4,
        "service_tier": "standard",
        "server_tool_use": {"web_search_requests": 0},
    }
    sums = {
        "prompt_tokens": ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"),
        "completion_tokens": ("output_tokens",),
    }
    assert usage_counts(anthropic, sums) == {
        "prompt_tokens": 15,
        "completion_tokens": 4,
        "total_tokens": 19,
    }
    openai = {
        "prompt_tokens": 7,
        "completion_tokens": 70,
        "total_tokens": 77,
        "completion_tokens_details": {"reasoning_tokens": 64},
        "flag": True,
        "fraction": 0.5,
    }
    assert usage_counts(openai) == {
        "prompt_tokens": 7,
        "completion_tokens": 70,
        "total_tokens": 77,
        "reasoning_tokens": 64,
    }
    assert usage_counts(None) is None and usage_counts({"x": "y"}) is None


def test_options_are_checked_as_for_openai() -> None:
    with pytest.raises(Exception, match="extra_body may not set 'system'"):
        load_model(f"anthropic:{MODEL}@http://127.0.0.1:9/v1", extra_body={"system": "x"})
    with pytest.raises(Exception, match=r"unknown option.*reasoning"):
        load_model(f"anthropic:{MODEL}@http://127.0.0.1:9/v1", reasoning=True)
    model = load_model(f"anthropic:{MODEL}@http://127.0.0.1:9/v1/messages", image_format="png")
    assert model.name == f"anthropic:{MODEL}[png]"
    assert model.inner.urls == ["http://127.0.0.1:9/v1"]
