"""The response cache when it is damaged, busy or stale: a cache only saves model calls, so
none of its failures may fail an episode, and no answer may outlive the code or weights that
gave it."""

from __future__ import annotations

import os
import sqlite3
import textwrap
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from clirun import eval_args, run_cli
from handmade import full_dataset
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models.base import ChatRequest, Completion, Model
from proactivebench.models.cache import WRITE_GROUP, ResponseCache
from proactivebench.run.rundir import read_results
from sqlitefiles import FOREIGN, damage_schema


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


class Counting(Model):
    """Answers "A" to everything and counts the requests that reach it; `on_call` runs on
    the first one."""

    name = "counting"

    def __init__(self, on_call: threading.Event | None = None) -> None:
        self.calls = 0
        self.on_call = on_call

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.calls += len(requests)
        if self.on_call is not None:
            self.on_call.set()
        return [Completion("A") for _ in requests]


def cache_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "proactivebench.models.cache"]


def python_eval(data: Path, out: Path, module: Path, cache: Path, *extra: str) -> list[str]:
    args = eval_args(data, out, "--cache", str(cache), "--no-report", *extra)
    args[args.index("baseline:oracle")] = f"python:{module}:answer"
    return args


def agent(directory: Path, answer: str) -> Path:
    path = directory / "agent.py"
    path.write_text(f"def answer(messages, observation):\n    return {answer!r}\n")
    return path


def fill(cache: Path, rows: int = 300) -> None:
    """More rows, so the file has pages beyond the first few."""
    filled = ResponseCache(cache)
    for i in range(rows):
        filled.put(f"filler-{i}", Completion("x" * 100))
    filled.close()


# ----- a damaged cache ---------------------------------------------------------------------------


def test_a_damaged_cache_is_set_aside_named_and_the_run_goes_on(
    data: Path, tmp_path: Path, capsys, caplog
) -> None:
    cache = tmp_path / "cache.sqlite"
    module = agent(tmp_path, "A")
    code, _ = run_cli(python_eval(data, tmp_path / "r1", module, cache), capsys)
    assert code == 0
    fill(cache)
    with cache.open("r+b") as f:  # one page overwritten, as a bad disk or a stray write would
        f.seek(4096 * 2)
        f.write(os.urandom(4096))
    caplog.clear()
    code, text = run_cli(python_eval(data, tmp_path / "r2", module, cache), capsys)
    assert code == 0, text
    assert all(not r.get("error") for r in read_results(tmp_path / "r2" / "results.jsonl"))
    warnings = cache_warnings(caplog)
    assert len(warnings) == 1 and str(cache) in warnings[0] and "damaged" in warnings[0]
    (aside,) = [
        p for p in tmp_path.glob("cache.sqlite.damaged-*") if p.name[-4:] not in ("-wal", "-shm")
    ]
    assert str(aside) in warnings[0]
    # The fresh cache works: a rerun is answered from it, with no warning.
    caplog.clear()
    code, text = run_cli(python_eval(data, tmp_path / "r3", module, cache), capsys)
    assert code == 0 and "came from the response cache" in text and not cache_warnings(caplog)


def test_a_database_damaged_at_its_start_is_set_aside_too(tmp_path: Path, caplog) -> None:
    cache = tmp_path / "cache.sqlite"
    fill(cache, rows=3)
    damage_schema(cache)
    opened = ResponseCache(cache)
    opened.put("k", Completion("v"))
    assert opened.get("k") == Completion("v", cached=True)
    opened.close()
    assert len(cache_warnings(caplog)) == 1
    assert any(p.name.startswith("cache.sqlite.damaged-") for p in tmp_path.iterdir())


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_a_file_of_something_else_is_refused_and_left_as_it_is(
    data: Path, tmp_path: Path, capsys, kind: str
) -> None:
    """`--cache RUN/results.jsonl` by a slip, or another program's database: the file was
    taken for a damaged cache, renamed aside and a database put in its place (a run's
    results.jsonl among them), or got our table and WAL mode. Now the run is refused before
    it starts, naming the file, which is left byte for byte with nothing beside it."""
    folder = tmp_path / "theirs"
    folder.mkdir()
    given = folder / "given"
    FOREIGN[kind](given)
    before = given.read_bytes()
    module = agent(tmp_path, "A")
    code, text = run_cli(python_eval(data, tmp_path / "run", module, given), capsys)
    assert code != 0 and "Traceback" not in text, text
    assert f"cannot open the response cache {given}: it is" in text and "left as it is" in text
    assert given.read_bytes() == before and [p.name for p in folder.iterdir()] == ["given"]
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_damage_found_during_the_run_never_fails_an_episode(
    data: Path, tmp_path: Path, caplog
) -> None:
    """Damage the check at open could not see (the file was damaged after it) is found by a
    read: the cache is set aside then, and the model is asked."""
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    fill(path)  # by another process, say, which then checkpoints into the file
    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    with path.open("r+b") as f:
        f.seek(4096)
        f.write(os.urandom(4096 * 8))
    model = Counting()
    outcome = evaluate(data, model, tmp_path / "run", cache=cache)
    assert not outcome.errors and model.calls > 0
    warnings = cache_warnings(caplog)
    assert len(warnings) == 1 and str(path) in warnings[0] and "damaged" in warnings[0]
    again = Counting()  # the fresh cache took the answers
    evaluate(data, again, tmp_path / "again", cache=cache)
    cache.close()
    assert again.calls == 0


@pytest.mark.parametrize(
    ("text", "usage"),
    [
        ("A", "{not json"),
        ("A", "[1, 2]"),
        ("A", '{"prompt_tokens": "many"}'),
        (b"\xff\x00", None),
        (None, None),
    ],
    ids=["usage-not-json", "usage-not-an-object", "usage-not-counts", "text-a-blob", "no-text"],
)
def test_a_damaged_entry_is_asked_again_never_an_episode_error(
    data: Path, tmp_path: Path, caplog, text: object, usage: str | None
) -> None:
    """An entry whose fields SQLite reads but we cannot use (written by hand, another tool,
    a damaged page SQLite does not notice) is a miss: the model is asked and its answer
    replaces the entry; one warning names the cache. Not an episode error, which the next
    rerun would find again in the same entry."""
    path = tmp_path / "cache.sqlite"
    evaluate(data, Counting(), tmp_path / "first", cache=ResponseCache(path))
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA ignore_check_constraints = ON")
        entries = db.execute("SELECT count(*) FROM responses").fetchone()[0]
        db.execute("DROP TABLE IF EXISTS spoiled")
        db.execute("CREATE TABLE spoiled AS SELECT key, created FROM responses")
        db.execute("DROP TABLE responses")  # text NOT NULL: a table without it holds a NULL
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, text, usage TEXT, created REAL)")
        db.execute("INSERT INTO responses SELECT key, ?, ?, created FROM spoiled", (text, usage))
    model = Counting()
    outcome = evaluate(data, model, tmp_path / "second", cache=ResponseCache(path))
    assert not outcome.errors and model.calls == entries
    assert all(r["correct"] is not None for r in read_results(tmp_path / "second/results.jsonl"))
    warnings = cache_warnings(caplog)
    assert len(warnings) == 1 and str(path) in warnings[0], warnings
    assert "entries it cannot use" in warnings[0], warnings
    again = Counting()  # the answers asked again took the damaged entries' places
    evaluate(data, again, tmp_path / "third", cache=ResponseCache(path))
    assert again.calls == 0


# ----- a busy cache ------------------------------------------------------------------------------


def hold_exclusive(path: Path) -> sqlite3.Connection:
    """Another writer's exclusive transaction on the cache, as another process would hold it."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN EXCLUSIVE")
    other.execute("INSERT INTO responses VALUES ('other', 'x', NULL, 0)")
    return other


def test_a_busy_cache_is_waited_for(data: Path, tmp_path: Path, caplog) -> None:
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    other = hold_exclusive(path)
    asked = threading.Event()

    def release() -> None:  # once the model answered, i.e. while the run wants to write
        asked.wait()
        other.rollback()

    releaser = threading.Thread(target=release)
    releaser.start()
    model = Counting(on_call=asked)
    outcome = evaluate(data, model, tmp_path / "one", cache=cache)
    releaser.join()
    assert not outcome.errors and not cache_warnings(caplog)
    again = Counting()
    evaluate(data, again, tmp_path / "two", cache=cache)
    assert again.calls == 0  # every answer was written once the lock was released
    cache.close()


def test_answers_are_written_in_groups_and_all_kept_when_a_run_ends(
    data: Path, tmp_path: Path
) -> None:
    path = tmp_path / "cache.sqlite"
    cache, other = ResponseCache(path), ResponseCache(path)  # e.g. two shards
    cache.put("k", Completion("x"))
    assert cache.get("k") == Completion("x", cached=True)  # its own, not written yet
    assert other.get("k") is None
    cache.flush()
    assert other.get("k") == Completion("x", cached=True)
    for i in range(WRITE_GROUP):  # a full group is written without waiting for a flush
        cache.put(f"g{i}", Completion(str(i)))
    assert other.get(f"g{WRITE_GROUP - 1}") == Completion(str(WRITE_GROUP - 1), cached=True)
    # A run writes every answer it got when it ends, before anyone closes the cache.
    model, again = Counting(), Counting()
    evaluate(data, model, tmp_path / "one", cache=cache)
    evaluate(data, again, tmp_path / "two", cache=other)
    assert model.calls > 0 and again.calls == 0
    cache.close()
    other.close()


def test_a_cache_busy_past_its_timeout_never_fails_an_episode(
    data: Path, tmp_path: Path, caplog
) -> None:
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path, busy_timeout=0.01)
    other = hold_exclusive(path)
    model = Counting()
    outcome = evaluate(data, model, tmp_path / "run", cache=cache)
    other.rollback()
    cache.close()
    assert not outcome.errors
    assert len(read_results(tmp_path / "run" / "results.jsonl")) == 15
    warnings = cache_warnings(caplog)
    assert len(warnings) == 1 and str(path) in warnings[0] and "locked" in warnings[0]


# ----- answers keyed on the code and weights that gave them --------------------------------------


def test_a_python_function_changed_is_asked_again(
    data: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    cache = tmp_path / "cache.sqlite"
    module = agent(tmp_path, "B")
    code, text = run_cli(python_eval(data, tmp_path / "r1", module, cache), capsys)
    # Each turn's observation is in the key: none answers another's (turns of equal messages
    # included), so the first run asks every turn.
    assert code == 0 and "came from the response cache" not in text
    module = agent(tmp_path, "Abstain")  # the user edits the function
    code, text = run_cli(python_eval(data, tmp_path / "r2", module, cache), capsys)
    assert code == 0
    answers = {t["answer"] for r in read_results(tmp_path / "r2/results.jsonl") for t in r["trace"]}
    assert answers == {"Abstain"}
    first = read_results(tmp_path / "r2/results.jsonl")[0]["trace"][0]
    assert not first.get("cached")
    # Unchanged code is still answered from the cache.
    code, text = run_cli(python_eval(data, tmp_path / "r3", module, cache), capsys)
    answers_r3 = read_results(tmp_path / "r3/results.jsonl")
    assert code == 0 and all(t.get("cached") for r in answers_r3 for t in r["trace"])


def test_the_code_key_covers_the_package_of_the_module(tmp_path: Path, monkeypatch) -> None:
    from proactivebench.models.python_callable import PythonCallable

    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("ANSWER = 'A'\n")
    (package / "agent.py").write_text(
        textwrap.dedent("""
        from mypkg.helper import ANSWER

        def answer(messages, observation):
            return ANSWER
        """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    before = PythonCallable("mypkg.agent:answer").cache_name
    (package / "helper.py").write_text("ANSWER = 'B'\n")
    after = PythonCallable("mypkg.agent:answer").cache_name
    assert before != after and before.startswith("python:mypkg.agent:answer")


def test_hf_weights_rewritten_under_one_path_are_another_model(
    tiny_vlm_dir: Path, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    import shutil

    from proactivebench.models.hf import HFModel, checkpoint_identity
    from proactivebench.testing.tiny_vlm import build_tiny_vlm

    checkpoint = Path(shutil.copytree(tiny_vlm_dir, tmp_path / "ckpt"))
    before = checkpoint_identity(str(checkpoint))
    assert before == checkpoint_identity(str(checkpoint))  # stable while nothing changes
    build_tiny_vlm(checkpoint, seed=1)  # trained further, saved over the same path
    assert checkpoint_identity(str(checkpoint)) != before
    model = HFModel(str(checkpoint), device="cpu", dtype="float32")
    assert model.name == f"hf:{checkpoint}" and model.cache_name != model.name
    assert checkpoint_identity(str(checkpoint)) in model.cache_name
    # A hub id is keyed by the commit it resolved to (what transformers records at load).
    assert checkpoint_identity("org/model", commit="abc123") == "commit=abc123"
