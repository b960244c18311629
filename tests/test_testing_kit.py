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
import re
import subprocess
import sys
from pathlib import Path

import pytest

from docblocks import DOCS, DOCS_URL, ROOT, Block, blocks, environment, run_block

PAGE = DOCS / "testing.md"
#: One recipe per path of issue 33 item 3, and the server they share.
PATHS = {"fake-server", "openai", "inspect", "hf", "train-grpo", "verifiers", "python", "judge"}


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


def heredoc(text: str, name: str) -> str:
    """The file a block writes with `cat > NAME <<'PY'`: its text as the reader sees it."""
    return text.split(f"cat > {name} <<'PY'\n", 1)[1].split("\nPY\n", 1)[0]


def test_judge_recipe_judges_some_answers_right(tmp_path: Path) -> None:
    """The ten-line judge reads the protocol's judge prompt and answers in the verdict format:
    every vote parses, and the baseline's options name a correct answer in some episodes and
    not in others (all zero was the symptom of a judge the runner could not read)."""
    run_recipe("judge", tmp_path)
    average = summary(tmp_path / "runs/judged")["average"]
    assert average["n"] == 14 and average["unparsed"] == 0.0
    assert 0 < average["ps"] < 100 or 0 < average["cp"] < 100, average


def test_the_readme_judge_is_the_testing_pages_judge() -> None:
    """The README's offline `paper` example writes the judge this page shows: one judge to
    read, kept alike by this test."""
    readme = next(b for b in blocks(ROOT / "README.md") if "--judge python:judge.py" in b.body)
    assert heredoc(readme.body, "judge.py") == heredoc(recipes()["judge"].body, "judge.py")


def test_the_fake_server_judges_in_the_format_the_judge_reads() -> None:
    """A judge's request (the protocol's prompt, `judge_messages`) gets a 0/1 per correct
    answer that `parse_verdict` reads, by a hash of the request: the same request the same
    verdict, different generations both verdicts; any other request still gets an option."""
    import asyncio

    from proactivebench import load_model
    from proactivebench.benchmark import registry
    from proactivebench.run.judge import Judge, parse_verdict
    from proactivebench.testing import FakeOpenAI

    # QD's: an intervention, then the category (the protocol's list, the category filled in).
    shown = registry.scenario("QD").strings.oeg_answers
    assert shown is not None
    valid = shown.format(categories="cat")
    generations = [f"Answer {i}: perhaps a cat" for i in range(24)]
    with FakeOpenAI() as server:
        judge = Judge(load_model(f"openai:fake-judge@{server.url}", max_retries=0))
        requests = [r for g in generations for r in judge.requests("What is it?", valid, g)]
        model = judge.model
        outputs = [c.text for c in asyncio.run(model.generate(requests))]
        again = [c.text for c in asyncio.run(model.generate(requests[:3]))]
        asked = [r.body["messages"] for r in server.chat_requests]
    assert again == outputs[:3]
    assert asked[0][0]["content"].startswith("You are an automatic evaluation system.")
    verdicts = [parse_verdict(valid, output, "QD") for output in outputs]
    assert all(v.parsed for v in verdicts), outputs
    assert {v.proactive_suggestion for v in verdicts} == {0, 1}
    assert {v.category_prediction for v in verdicts} == {0, 1}
    for output in outputs:  # two marks, one per correct answer, on the last line
        assert re.fullmatch(r"[01],[01]", output.splitlines()[-1]), output


def test_the_families_command_builds_a_family_checkpoint(tmp_path: Path) -> None:
    """`python -m proactivebench.testing.families FAMILY OUT`, as `tiny_vlm`'s command: the
    family's own checkpoint (Qwen2.5-VL's model type, as transformers names it), its path
    printed."""
    for module in ("torch", "transformers", "torchvision"):
        pytest.importorskip(module)
    out = tmp_path / "tiny-qwen"
    command = [sys.executable, "-m", "proactivebench.testing.families", "qwen2.5-vl", str(out)]
    done = subprocess.run(command, env=environment(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["model_type"] == "qwen2_5_vl"
    assert (out / "model.safetensors").is_file() and (out / "chat_template.jinja").is_file()


def test_an_unknown_family_is_refused_naming_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from proactivebench.testing import families

    assert families.main(["qwen9", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        "error: unknown family 'qwen9'; known: llava-1.5, qwen2.5-vl, llava-onevision, "
        "internvl3, smolvlm, gemma3\n"
    )
    assert set(families.FAMILIES) == {
        "llava-1.5", "qwen2.5-vl", "llava-onevision", "internvl3", "smolvlm", "gemma3"
    }  # fmt: skip
    assert not (tmp_path / "out").exists()


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
