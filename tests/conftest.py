"""Shared test setup: nothing a test does may touch the user's real cache or the network."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PROACTIVEBENCH_CACHE", str(tmp_path_factory.mktemp("user-cache")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def tiny_vlm_dir(tmp_path_factory: pytest.TempPathFactory):
    """A tiny random LLaVA-style checkpoint on disk, built once per session (see tiny_vlm.py)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from proactivebench.testing.tiny_vlm import build_tiny_vlm

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        return build_tiny_vlm(tmp_path_factory.mktemp("tiny-vlm"))


@pytest.fixture(scope="session")
def synth_train(tmp_path_factory: pytest.TempPathFactory):
    """Our generator's train split, two samples of every scenario (training data tests)."""
    from proactivebench.data.synth import generate

    root = tmp_path_factory.mktemp("synth-train")
    generate(root, per_scenario=2, seed=0, split="train")
    return root


@pytest.fixture(scope="session")
def synth_test(tmp_path_factory: pytest.TempPathFactory):
    """Our generator's test split, one sample of every scenario (7 short episodes to play)."""
    from proactivebench.data.synth import generate

    root = tmp_path_factory.mktemp("synth-test")
    generate(root, per_scenario=1, seed=3, split="test")
    return root
