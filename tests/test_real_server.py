"""The openai backend against a real OpenAI-compatible server: `transformers serve`, offline.

The server runs the tiny checkpoint of `tiny_vlm.py`; the same checkpoint loaded by the `hf`
backend must give the very same answers (PNG images keep the pixels identical), which checks
the whole HTTP path: messages, data URLs, decoding settings, and reading the response.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from handmade import full_dataset
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.run.rundir import read_results

pytest.importorskip("fastapi", reason="needs transformers[serving]")
pytest.importorskip("uvicorn", reason="needs transformers[serving]")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tiny_vlm_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    executable = shutil.which("transformers")
    if executable is None:
        pytest.skip("the transformers command is not installed")
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1")
    args = [executable, "serve", str(tiny_vlm_dir), "--host", "127.0.0.1", "--port", str(port)]
    with log.open("w") as sink:
        process = subprocess.Popen(
            [*args, "--device", "cpu"], env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(f"transformers serve exited:\n{log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:  # refused while it starts, or an HTTP error status
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"transformers serve did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield f"{url}/v1", tiny_vlm_dir
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def answers(run: Path) -> dict[tuple[str, int], list[str]]:
    return {
        (r["scenario"], r["sample_id"]): [t["answer"] for t in r["trace"]]
        for r in read_results(run / "results.jsonl")
    }


def test_served_model_answers_like_the_local_one(served, tmp_path: Path, monkeypatch) -> None:
    url, checkpoint = served
    monkeypatch.setenv("OPENAI_API_KEY", "unused-by-a-local-server")
    data = full_dataset(tmp_path / "data")
    remote = load_model(f"openai:{checkpoint}@{url}", image_format="png")
    outcome = evaluate(data, remote, tmp_path / "served", concurrency=4)
    assert not outcome.errors
    assert remote.stats["requests"] >= 15
    local = evaluate(data, load_model(f"hf:{checkpoint}"), tmp_path / "local")
    assert not local.errors
    served_answers = answers(tmp_path / "served")
    assert len(served_answers) == 15 and all(a and a[0] for a in served_answers.values())
    assert served_answers == answers(tmp_path / "local")
