"""The testing kit (`proactivebench.testing`) and the offline recipes of docs/testing.md, run as
written.

Each fenced block after a `<!-- recipe: NAME -->` comment in docs/testing.md (tests/docblocks.py
finds them, as it finds the docs' other marked blocks) runs here in its own empty directory, with
this interpreter's environment first on PATH: the bash blocks through `bash -e`, the Python block
through this interpreter. The fake server block is started in the background once per session
(the `fake_server` fixture of conftest.py), as a user starts it in another shell.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from docblocks import DOCS, DOCS_URL, Block, blocks, environment, run_block

PAGE = DOCS / "testing.md"
#: One recipe per path of issue 33 item 3, and the server they share.
PATHS = {"fake-server", "openai", "inspect", "hf", "train-grpo", "verifiers", "python"}


def recipes() -> dict[str, Block]:
    return {b.name: b for b in blocks(PAGE) if b.kind == "recipe"}


def run_recipe(
    name: str,
    cwd: Path,
    timeout: float = 600,
    env: dict[str, str] | None = None,
    server: str | None = None,
) -> str:
    return run_block(recipes()[name], cwd, env=env, timeout=timeout, server=server)


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))


def test_the_testing_page_has_one_recipe_per_path() -> None:
    assert set(recipes()) == PATHS


def test_the_fake_server_recipe_serves_the_url_the_other_recipes_use(fake_server: str) -> None:
    """The page's server recipe serves at the URL the other recipes use (the tests serve the
    same recipe on a free port, `fake_server`, and point the recipes there)."""
    assert "--port 8011" in recipes()["fake-server"].body
    assert DOCS_URL == "http://127.0.0.1:8011/v1"
    assert fake_server.startswith("http://127.0.0.1:") and fake_server.endswith("/v1")
    for name in ("openai", "inspect", "verifiers"):
        assert DOCS_URL in recipes()[name].body


def test_openai_recipe(fake_server: str, tmp_path: Path) -> None:
    run_recipe("openai", tmp_path, server=fake_server)
    lines = (tmp_path / "runs/fake/results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 14  # 2 samples of each of the 7 scenarios
    assert summary(tmp_path / "runs/fake")["average"]["errors"] == 0


def test_inspect_recipe_equals_the_openai_recipe(fake_server: str, tmp_path: Path) -> None:
    """The fake server answers by a hash of the model name and what the model sees, so Inspect's
    requests, the same as ours, get the same answers: the imported run's rates equal ours."""
    pytest.importorskip("inspect_ai")
    openai = pytest.importorskip("openai")
    if tuple(int(p) for p in openai.__version__.split(".")[:2]) < (3, 4):
        pytest.skip(
            f"Inspect's openai-api provider needs openai>=3.4 (the inspect extra), this "
            f"environment has {openai.__version__} (the verifiers extra needs openai<3)"
        )
    # As a user runs it: the installed package, without the checkout put first on PYTHONPATH.
    # Inspect names a task `package/task` only when its module lies in an installed
    # distribution; one reached through PYTHONPATH is registered as plain `proactivebench`,
    # and `inspect eval proactivebench/proactivebench` finds no task.
    as_installed = environment()
    as_installed["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    run_recipe("inspect", tmp_path, env=as_installed, server=fake_server)
    run_recipe("openai", tmp_path, server=fake_server)
    ours, theirs = summary(tmp_path / "runs/fake"), summary(tmp_path / "runs/inspect-fake")
    for scenario, row in ours["scenarios"].items():
        for key in ("n", "accuracy", "ps_rate"):
            assert theirs["scenarios"][scenario][key] == pytest.approx(row[key]), (scenario, key)


def test_hf_recipe(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    run_recipe("hf", tmp_path)
    assert (tmp_path / "tiny-vlm/config.json").is_file()
    assert summary(tmp_path / "runs/tiny")["average"]["n"] == 14


def test_train_grpo_recipe(tmp_path: Path) -> None:
    for module in ("torch", "transformers", "trl", "peft", "datasets"):
        pytest.importorskip(module)
    output = run_recipe("train-grpo", tmp_path)
    assert "trained 1 steps" in output
    assert (tmp_path / "tuned/train_run.json").is_file()
    assert summary(tmp_path / "runs/tuned")["average"]["n"] == 14


#: A folder of wheels of the packages verifiers' chat program declares (docs/adapters.md:
#: `pip download -d DIR ...`, made by .ci/run before the tests): with it, uv resolves them
#: offline and the verifiers recipe runs; without it, the recipe would need the package index.
UV_WHEELS_ENV = "PROACTIVEBENCH_TEST_UV_WHEELS"


def test_verifiers_recipe(fake_server: str, tmp_path: Path) -> None:
    """vf-eval against the fake server, offline as docs/adapters.md says: uv given a folder of
    the chat program's wheels and an empty index. vf-eval exits 0 even when every rollout
    failed, so the rollouts' own verdicts (traces.jsonl's `ok`) are what is checked."""
    assert "vf-eval" in recipes()["verifiers"].body
    pytest.importorskip("verifiers")
    wheels = os.environ.get(UV_WHEELS_ENV)
    if not wheels:
        pytest.skip(
            "not offline: verifiers' null harness prepares its chat program with uv, which "
            f"resolves the program's packages from the index on every vf-eval; set {UV_WHEELS_ENV} "
            "to a folder of their wheels to run it offline (.ci/run does; docs/adapters.md)"
        )
    env = environment()
    if not any((Path(p) / "uv").is_file() for p in env["PATH"].split(os.pathsep)):
        pytest.fail("uv is not on PATH: the verifiers extra (and the test extra) install it")
    empty_index = tmp_path / "empty-index"
    empty_index.mkdir()
    env |= {
        "UV_DEFAULT_INDEX": empty_index.as_uri(),
        "UV_FIND_LINKS": str(Path(wheels).resolve()),
        "UV_OFFLINE": "1",
        "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
    }
    run_block(recipes()["verifiers"], tmp_path, env=env, server=fake_server)
    (traces,) = tmp_path.glob("outputs/*/traces.jsonl")
    episodes = [json.loads(line) for line in traces.read_text(encoding="utf-8").splitlines()]
    assert len(episodes) == 14  # 2 samples of each of the 7 scenarios
    failed = [e.get("id") for e in episodes if not e.get("ok", False)]
    assert not failed, f"rollouts that failed (see {traces}): {failed}"


def test_python_recipe(tmp_path: Path) -> None:
    output = run_recipe("python", tmp_path)
    # Every request was answered "A": the average row of a run that always says A.
    assert "'n': 14" in output
    assert summary(tmp_path / "runs/scripted")["model"] == "openai:my-agent"


def test_importing_the_kit_loads_neither_torch_nor_transformers() -> None:
    code = (
        "import sys, proactivebench.testing as kit; kit.FakeOpenAI; kit.build_tiny_vlm; "
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment(), capture_output=True, text=True
    )
    assert done.stdout.strip() == "[]", done.stderr


def test_without_the_hf_extra_the_builder_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from proactivebench.testing import tiny_vlm

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    assert tiny_vlm.main([str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        "error: a tiny checkpoint needs torch; install the extra: pip install -e '.[hf]'\n"
    )
    assert not (tmp_path / "out").exists()


def test_the_kit_answers_as_scripted_and_records_the_requests() -> None:
    """The server's contract a user's test relies on: a scripted answer, a scheduled fault
    first, every request kept."""
    import urllib.error
    import urllib.request

    from proactivebench.testing import FakeOpenAI

    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with FakeOpenAI(respond=lambda b: "B", schedule=["http500"]) as server:
        request = urllib.request.Request(
            f"{server.url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(request, timeout=30)
        assert failed.value.code == 500
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
        assert answer["choices"][0]["message"]["content"] == "B"
        assert [r.fault for r in server.chat_requests] == ["http500", None]
        assert server.chat_requests[1].body == body
