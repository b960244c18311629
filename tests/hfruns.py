"""Helpers for the `hf:` backend's tests: requests to generate, and what the processor made of them.

`record_encodes` keeps every batch that the backend encodes — its requests and the processor's
tensors — so a test can check, per request, that each image part became image tokens in
`input_ids` and an image in the pixel values, whatever the family's processor.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from proactivebench.benchmark.prompting import image_views, user_turn
from proactivebench.benchmark.registry import make_episode
from proactivebench.data.directory import load_dataset
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
from proactivebench.models.hf import HFModel


def first_turn_requests(data: Path, decoding: Decoding) -> list[ChatRequest]:
    """The first request of every episode of the data set: prompts of many lengths."""
    requests = []
    for records in load_dataset(data).records.values():
        for record in records:
            obs = make_episode(record).reset()
            requests.append(ChatRequest([user_turn(obs)], obs, decoding))
    return requests


def generate(model: Model, requests: list[ChatRequest]) -> list[Completion]:
    return asyncio.run(model.generate(requests))


def assert_batched_equals_alone(model: HFModel, requests: list[ChatRequest]) -> None:
    """Left-padded batches of `model.max_batch` give what each request gives alone."""
    assert model.max_batch > 1 and len(requests) > 1
    batched = generate(model, requests)
    alone = [generate(model, [r])[0] for r in requests]
    assert [c.text for c in batched] == [c.text for c in alone]
    assert [c.usage for c in batched] == [c.usage for c in alone]
    prompt_lengths = {c.usage["prompt_tokens"] for c in alone}
    assert len(prompt_lengths) > 1, "the batch must need padding for this test to mean anything"
    for c in batched:
        max_tokens = requests[0].decoding.max_tokens
        assert 0 < c.usage["completion_tokens"] <= max_tokens and c.latency_s > 0


Encoded = tuple[list[ChatRequest], Any]


def record_encodes(model: HFModel, monkeypatch: pytest.MonkeyPatch) -> list[Encoded]:
    """From now on, every batch the model encodes: its requests and the processor's output."""
    encoded: list[Encoded] = []
    encode = model._encode

    def recording(requests: list[ChatRequest]) -> Any:
        inputs = encode(requests)
        encoded.append((list(requests), inputs))
        return inputs

    monkeypatch.setattr(model, "_encode", recording)
    return encoded


def image_parts(request: ChatRequest) -> int:
    return len(image_views(request.messages))


def image_token_runs(input_ids: Any, image_token_id: int) -> list[int]:
    """Per row, how many runs of consecutive image tokens it holds (one per expanded image)."""
    is_image = (input_ids == image_token_id).int()
    starts = is_image[:, 1:] > is_image[:, :-1]
    return (starts.sum(dim=1) + is_image[:, 0]).tolist()


def images_in_pixels(inputs: Any) -> int:
    """How many images the processor's pixel values hold, in each processor's convention: one
    grid per image (Qwen), a batch of padded image slots with a pixel mask (Idefics3, SmolVLM),
    or one entry per image (the others)."""
    if "image_grid_thw" in inputs:
        return len(inputs["image_grid_thw"])
    if "pixel_attention_mask" in inputs:
        return int(inputs["pixel_attention_mask"].flatten(2).any(dim=-1).sum())
    return len(inputs["pixel_values"])
