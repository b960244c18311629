"""Shared test setup: nothing a test does may touch the user's real cache or the network."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PROACTIVEBENCH_CACHE", str(tmp_path_factory.mktemp("user-cache")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
