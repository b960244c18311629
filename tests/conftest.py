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


@pytest.fixture(scope="session")
def fake_server(tmp_path_factory: pytest.TempPathFactory):
    """The fake OpenAI-compatible server of docs/testing.md, started from that page's
    `<!-- recipe: fake-server (background) -->` block, as a user starts it in another shell,
    but on a free port (`--port 0` for the docs' `--port 8011`: another test session on the
    machine may hold that one): served for the whole session. Yields the URL it prints, where
    the tests point the docs' commands (`docblocks.run_block(..., server=URL)`)."""
    import subprocess

    from docblocks import DOCS, DOCS_PORT, blocks, environment

    (recipe,) = [
        b for b in blocks(DOCS / "testing.md") if b.kind == "recipe" and b.name == "fake-server"
    ]
    assert recipe.background, "the server recipe serves until Ctrl-C: mark it (background)"
    docs_port = f"--port {DOCS_PORT}"
    assert docs_port in recipe.body, f"{recipe.where} serves at {docs_port}, as the pages say"
    server = subprocess.Popen(
        ["bash", "-c", f"exec {recipe.body.replace(docs_port, '--port 0')}"],
        cwd=tmp_path_factory.mktemp("server"),
        env=environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line.startswith("URL "):
            server.kill()
            rest = server.stdout.read()
            pytest.fail(f"the fake server did not start:\n{line}{rest}")
        yield line.split()[1]
    finally:
        server.terminate()
        server.wait(timeout=30)
