"""Sharded runs and their merge; the response cache."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from PIL import Image

from clirun import eval_args, run_cli
from handmade import full_dataset
from proactivebench.benchmark.scenarios import Observation, View
from proactivebench.core.errors import ProactiveBenchError, RunMismatchError
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
from proactivebench.models.cache import CachedModel, ResponseCache, request_key
from proactivebench.models.hf import HFModel
from proactivebench.models.human import Human
from proactivebench.models.replay import Replay
from proactivebench.run.rundir import merge_runs, read_results
from proactivebench.run.settings import EvalSettings
from resultlines import comparable, flipped


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def keyed(run: Path) -> dict[tuple[str, int], str]:
    return {
        (r["scenario"], r["sample_id"]): json.dumps(r, sort_keys=True)
        for r in read_results(run / "results.jsonl")
    }


def test_shards_partition_the_run_and_merge_back(data: Path, tmp_path: Path, capsys) -> None:
    model = "baseline:random"
    whole = tmp_path / "whole"
    evaluate(data, load_model(model, seed=4), whole, EvalSettings(seed=4))
    shards = []
    for i in range(3):
        run = tmp_path / f"shard{i}"
        args = eval_args(data, run, "--shard", f"{i}/3", "--seed", "4")
        args[args.index("baseline:oracle")] = model
        assert run_cli(args, capsys)[0] == 0
        shards.append(run)
    parts = [set(keyed(s)) for s in shards]
    assert all(parts) and sum(len(p) for p in parts) == len(set().union(*parts)) == 15
    code, text = run_cli(["merge", *map(str, shards), "--out", str(tmp_path / "merged")], capsys)
    assert code == 0 and "average" in text
    assert keyed(tmp_path / "merged") == keyed(whole)
    merged = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert merged == json.loads((whole / "summary.json").read_text())


def test_merge_refuses_runs_of_other_settings(data: Path, tmp_path: Path) -> None:
    evaluate(data, load_model("baseline:oracle"), tmp_path / "a")
    evaluate(data, load_model("baseline:oracle"), tmp_path / "b", EvalSettings(hint=True))
    with pytest.raises(RunMismatchError):
        merge_runs([tmp_path / "a", tmp_path / "b"], tmp_path / "m")
    with pytest.raises(ProactiveBenchError, match="not a run directory"):
        merge_runs([tmp_path / "nothing"], tmp_path / "m2")


def test_merge_refuses_a_run_another_process_still_writes(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A shard an eval still holds (its lines still being appended) was merged as a snapshot
    of half a run, exit 0, where push and report refuse it: refused, naming the process, and
    nothing written; merged once it is released."""
    from clirun import held_by_another_process

    shards = [_shard(data, tmp_path / f"s{i}", f"{i}/2", capsys) for i in range(2)]
    out = tmp_path / "merged"
    with held_by_another_process(shards[1]) as pid:
        code, text = run_cli(["merge", *map(str, shards), "--out", str(out)], capsys)
        assert code == 1 and "Traceback" not in text
        assert f"s1 is in use by another run (PID {pid})" in " ".join(text.split()), text
        assert not out.exists()
    assert run_cli(["merge", *map(str, shards), "--out", str(out)], capsys)[0] == 0


def _shard(data: Path, run: Path, spec: str, capsys) -> Path:
    assert run_cli(eval_args(data, run, "--shard", spec), capsys)[0] == 0
    return run


def test_run_json_records_the_shard_and_a_resume_keeps_to_it(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = _shard(data, tmp_path / "s0", "0/2", capsys)
    assert json.loads((run / "run.json").read_text())["shard"] == {"index": 0, "count": 2}
    code, text = run_cli(eval_args(data, run, "--shard", "1/2"), capsys)
    assert code != 0 and "shard.index: 0 → 1" in text


def test_merge_refuses_a_missing_shard_unless_partial(
    data: Path, tmp_path: Path, capsys, caplog
) -> None:
    first = _shard(data, tmp_path / "s0", "0/2", capsys)
    code, text = run_cli(["merge", str(first), "--out", str(tmp_path / "m")], capsys)
    assert code != 0 and "shard(s) 1/2 missing" in text and "--partial" in text
    assert not (tmp_path / "m" / "results.jsonl").exists()
    args = ["merge", str(first), "--out", str(tmp_path / "m"), "--partial"]
    code, text = run_cli(args, capsys)
    assert code == 0 and "partial merge: shard(s) 1/2 missing" in caplog.text
    assert keyed(tmp_path / "m") == keyed(first)
    # The merged directory is the whole run's: resuming it plays only what was missing.
    assert "shard" not in json.loads((tmp_path / "m" / "run.json").read_text())
    assert run_cli(eval_args(data, tmp_path / "m"), capsys)[0] == 0
    second = _shard(data, tmp_path / "s1", "1/2", capsys)
    assert keyed(tmp_path / "m") == keyed(first) | keyed(second)


def test_merge_refuses_a_shard_given_twice_or_other_splits(
    data: Path, tmp_path: Path, capsys
) -> None:
    out = str(tmp_path / "merged")
    first = _shard(data, tmp_path / "s0", "0/2", capsys)
    second = _shard(data, tmp_path / "s1", "1/2", capsys)
    code, text = run_cli(["merge", str(first), str(second), str(first), "--out", out], capsys)
    assert code != 0 and f"shard 0/2 given 2 times ({first}, {first})" in text
    third = _shard(data, tmp_path / "t0", "0/3", capsys)
    code, text = run_cli(["merge", str(first), str(third), "--out", out], capsys)
    assert code != 0 and "split into different numbers of shards" in text
    whole = tmp_path / "whole"
    assert run_cli(eval_args(data, whole), capsys)[0] == 0
    code, text = run_cli(["merge", str(whole), str(whole), "--out", out], capsys)
    assert code != 0 and "shard 0/1 given 2 times" in text


def test_bad_shard_spec(data: Path, tmp_path: Path, capsys) -> None:
    code, text = run_cli(eval_args(data, tmp_path / "r", "--shard", "3/3"), capsys)
    assert code != 0 and "0 <= I < N" in text


class Counting(Model):
    """Answers by reading the image's mean brightness, and counts its calls."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        assert self.images is not None
        self.calls += len(requests)
        out = []
        for r in requests:
            view = r.messages[0]["content"][0]["view"]
            level = int(np.asarray(self.images.image(view)).mean())
            out.append(Completion(f"answer {level}", usage={"prompt_tokens": 1}))
        return out


def test_cache_makes_a_rerun_free_and_misses_on_changed_images(data: Path, tmp_path: Path) -> None:
    data = Path(shutil.copytree(data, tmp_path / "data"))  # this test edits an image
    cache = ResponseCache(tmp_path / "cache.sqlite")
    first = Counting()
    evaluate(data, first, tmp_path / "one", cache=cache)
    # Identical requests (same prompt, same image bytes) are asked once even within a run.
    assert 0 < first.calls < 15
    cache = ResponseCache(tmp_path / "cache.sqlite")  # reopened, as by a new process
    second = Counting()
    evaluate(data, second, tmp_path / "two", cache=cache)
    assert second.calls == 0
    one, two = (read_results(tmp_path / run / "results.jsonl") for run in ("one", "two"))
    assert sorted(map(str, map(comparable, one))) == sorted(map(str, map(comparable, two)))
    assert all(t.get("cached") for r in two for t in r["trace"])  # and says so, turn by turn
    # Another decoding setting is another request.
    third = Counting()
    settings = EvalSettings(
        scenarios=("ROD",), decoding=EvalSettings().decoding.__class__(max_tokens=7)
    )
    evaluate(
        data, third, tmp_path / "three", settings, cache=ResponseCache(tmp_path / "cache.sqlite")
    )
    assert third.calls == 1  # the two ROD episodes ask the same (blank images alike)
    # An edited image file is a different request too.
    Image.new("RGB", (200, 160), (10, 200, 30)).save(data / "QD/0/0000.png")
    fourth = Counting()
    evaluate(
        data,
        fourth,
        tmp_path / "four",
        EvalSettings(scenarios=("QD",)),
        cache=ResponseCache(tmp_path / "cache.sqlite"),
    )
    assert fourth.calls == 1


#: A `python:` agent whose answer depends on the observation only (never on the messages):
#: the sample and the turn choose the letter, as a policy that counts its turns would.
TURN_READER = """
def answer(messages, observation):
    letters = "ABCDEFGH"[: len(observation.options)]
    return letters[(observation.sample_id + 2 * observation.turn) % len(letters)]
"""


def test_a_cached_run_of_an_agent_that_reads_the_observation_is_the_uncached_run(
    data: Path, tmp_path: Path
) -> None:
    agent = tmp_path / "turn_reader.py"
    agent.write_text(TURN_READER)
    spec = f"python:{agent}:answer"
    evaluate(data, load_model(spec), tmp_path / "plain")  # --no-cache
    cold = ResponseCache(tmp_path / "cache.sqlite")
    evaluate(data, load_model(spec), tmp_path / "cold", cache=cold)
    cold.close()
    warm = ResponseCache(tmp_path / "cache.sqlite")
    evaluate(data, load_model(spec), tmp_path / "warm", cache=warm)
    runs = {
        name: sorted(json.dumps(comparable(r), sort_keys=True) for r in read_results(path))
        for name in ("plain", "cold", "warm")
        for path in [tmp_path / name / "results.jsonl"]
    }
    assert runs["cold"] == runs["plain"] and runs["warm"] == runs["plain"]
    # The warm run was answered by the cache, turn by turn: the equality is the cache's.
    warm_lines = read_results(tmp_path / "warm" / "results.jsonl")
    assert all(t.get("cached") for r in warm_lines for t in r["trace"])


def test_turns_with_equal_messages_are_cached_apart_when_the_backend_reads_the_turn(
    tmp_path: Path,
) -> None:
    agent = tmp_path / "turn_reader.py"
    agent.write_text(TURN_READER)
    messages = [{"role": "user", "content": [{"type": "text", "text": "same words"}]}]
    turns = [
        ChatRequest(messages, _observation(turn=turn)) for turn in (1, 2, 3)
    ]  # options A-D: turn 1 -> C, 2 -> A, 3 -> C
    model = CachedModel(load_model(f"python:{agent}:answer"), ResponseCache(tmp_path / "c"))
    answers = [c.text for c in asyncio.run(model.generate(turns))]
    assert answers == ["C", "A", "C"]
    again = [c for c in asyncio.run(model.generate(turns))]
    assert [c.text for c in again] == answers and all(c.cached for c in again)


def test_backends_whose_answer_is_not_a_function_of_the_request_are_not_cached(
    data: Path, tmp_path: Path
) -> None:
    (tmp_path / "replay.jsonl").write_text("")
    for model in (
        load_model("baseline:random"),
        load_model("baseline:oracle"),
        Replay(tmp_path / "replay.jsonl"),
        Human("ann"),
    ):
        assert not model.cacheable
        with pytest.raises(ProactiveBenchError, match="not cacheable"):
            CachedModel(model, ResponseCache(tmp_path / "c"))
    # A real model's keys are as they were: the messages and decoding, nothing more.
    request = ChatRequest([{"role": "user", "content": "hi"}], _observation(turn=1))
    assert load_model("openai:m@http://127.0.0.1:9/v1").answer_inputs(request) == {}


def test_a_sampling_hf_model_keys_its_answers_on_the_seed() -> None:
    messages = [{"role": "user", "content": "hi"}]
    greedy = ChatRequest(messages, decoding=Decoding(temperature=0.0))
    sampled = ChatRequest(messages, decoding=Decoding(temperature=0.7))
    default = ChatRequest(messages, decoding=Decoding(temperature=None))
    own = ChatRequest(messages, decoding=Decoding(temperature=0.7).with_extra(seed=5))
    hf = SimpleNamespace(seed=3)  # all `answer_inputs` reads of the model
    assert HFModel.answer_inputs(hf, greedy) == {}  # type: ignore[arg-type]
    assert HFModel.answer_inputs(hf, sampled) == {"seed": 3}  # type: ignore[arg-type]
    assert HFModel.answer_inputs(hf, default) == {"seed": 3}  # type: ignore[arg-type]
    assert HFModel.answer_inputs(hf, own) == {}  # type: ignore[arg-type]  # in the decoding
    keys = {
        request_key("hf", sampled, None, HFModel.answer_inputs(SimpleNamespace(seed=s), sampled))  # type: ignore[arg-type]
        for s in (1, 2)
    }
    assert len(keys) == 2


def _observation(turn: int) -> Observation:
    return Observation(
        scenario="ROD",
        sample_id=0,
        turn=turn,
        max_turns=5,
        prompt="What is it?",
        options=("Move it.", "apple", "cup", "dog"),
        action_options=("Move it.",),
        categories=("apple", "cup", "dog"),
        view=View("ROD/0/2.png"),
        correct_actions=(),
        correct_categories=(),
    )


def test_what_an_openai_body_adds_to_the_messages_is_in_the_key() -> None:
    request = ChatRequest([{"role": "user", "content": "hi"}])
    spec = "openai:o4-mini@http://127.0.0.1:9/v1"  # a reasoning model by its name

    def key(**options: Any) -> str:
        model = load_model(spec, **options)
        return request_key(model.cache_name, request, None, model.answer_inputs(request))

    efforts = {key(reasoning_effort=e) for e in ("low", "high")}
    bodies = {key(reasoning=False, extra_body={"top_k": k}) for k in (1, 2)}
    assert len(efforts) == 2 and len(bodies) == 2
    # Neither: the key of the messages and decoding alone, as before.
    plain = load_model(spec, reasoning=False)
    assert key(reasoning=False) == request_key(plain.cache_name, request, None)


def test_merge_names_a_file_given_as_a_run_and_a_run_json_that_is_no_file(
    data: Path, tmp_path: Path, capsys
) -> None:
    """What `merge` is handed in place of a run directory is named for what it is: a file is
    not a run directory, and a folder in run.json's place cannot be read (no errno, no Python
    repr of the path)."""
    first = _shard(data, tmp_path / "s0", "0/2", capsys)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("hello\n")
    code, text = run_cli(["merge", str(first), str(a_file), "--out", str(tmp_path / "m")], capsys)
    assert code == 1, text
    assert f"error: {a_file} is not a run directory (a file, not a folder)\n" in text, text
    odd = tmp_path / "odd"
    (odd / "run.json").mkdir(parents=True)
    code, text = run_cli(["merge", str(first), str(odd), "--out", str(tmp_path / "m")], capsys)
    assert code == 1, text
    expected = (
        f"error: cannot read {odd / 'run.json'}: not a regular file (a FIFO, device or folder)"
    )
    assert expected in text and "Errno" not in text and "PosixPath" not in text, text


def test_a_shard_beyond_the_samples_says_so(data: Path, tmp_path: Path, capsys) -> None:
    """More shards than samples (a Slurm array larger than a --limit trial): an empty shard
    names itself and how many samples there are to split, not only the record files."""
    args = eval_args(data, tmp_path / "s", "--scenarios", "ROD", "--limit", "2", "--shard", "2/3")
    code, text = run_cli(args, capsys)
    assert code == 1, text
    assert (
        "nothing to play: shard 2/3 holds no sample (the selection has 2 samples for 3 "
        "shards: use at most 2 shards)"
    ) in text, text


@pytest.mark.parametrize("how", ["killed", "interrupted"])
def test_merge_tells_a_shard_that_stopped_before_it_ended(
    data: Path, tmp_path: Path, capsys, caplog, how: str
) -> None:
    """A shard killed outright (the OOM killer, a node lost, a job's time limit) may lack the
    episodes it had in flight, and its last line may be torn; one stopped by Ctrl-C, SIGTERM or
    an error that ends the run records an end time as a finished one does, and its `stopped_by`
    says why. Merge cannot know which episodes such a shard lacks, but it says which shard
    stopped so, instead of a merged run that looks whole. The merged run is then resumed with
    eval (exit 0 for the merge)."""
    first = _shard(data, tmp_path / "s0", "0/2", capsys)
    second = _shard(data, tmp_path / "s1", "1/2", capsys)
    whole_first = keyed(first)
    config = json.loads((first / "run.json").read_text())
    assert "stopped_by" not in config["provenance"][-1]  # a finished invocation
    if how == "killed":  # its last invocation never ended (ended: null), its last line torn
        config["provenance"][-1]["ended"] = None
        results = (first / "results.jsonl").read_bytes()
        (first / "results.jsonl").write_bytes(results[:-30])
        signs = (
            "run.json: its last invocation has no end time; results.jsonl: its last line is cut off"
        )
    else:
        config["provenance"][-1]["stopped_by"] = "interrupted"
        signs = "run.json: its last invocation was stopped (interrupted)"
    (first / "run.json").write_text(json.dumps(config))
    out = tmp_path / "m"
    code, text = run_cli(["merge", str(first), str(second), "--out", str(out)], capsys)
    assert code == 0, text
    told = [r.getMessage() for r in caplog.records if "stopped before it ended" in r.getMessage()]
    assert told == [
        f"{first} stopped before it ended ({signs}): the merged run may lack episodes it had in "
        f"flight; `proactivebench eval ... --out {out}` plays what is missing"
    ], told
    torn = 1 if how == "killed" else 0
    assert len(keyed(out)) == len(whole_first) - torn + len(keyed(second))
    caplog.clear()
    second_out = tmp_path / "m2"
    assert run_cli(["merge", str(second), "--out", str(second_out), "--partial"], capsys)[0] == 0
    assert not [r for r in caplog.records if "stopped before it ended" in r.getMessage()]


def test_merge_counts_neither_of_two_shards_different_results_for_one_episode(
    data: Path, tmp_path: Path, capsys, caplog
) -> None:
    """The shards partition a run, so two shards holding one episode means one of them holds a
    line it never played: with a shard recorded before run.json named its selection, that
    line passes its own shard's reading. When the two say different things of the episode,
    the merge names them and counts neither (as `run_lines` does within one run), never
    taking the first found."""
    first = _shard(data, tmp_path / "s0", "0/2", capsys)
    second = _shard(data, tmp_path / "s1", "1/2", capsys)
    theirs = read_results(second / "results.jsonl")[0]
    pasted = flipped(theirs)
    with (first / "results.jsonl").open("a") as f:
        f.write(json.dumps(pasted) + "\n")
    config = json.loads((first / "run.json").read_text())
    del config["selection"]  # a shard of a version that did not record it
    (first / "run.json").write_text(json.dumps(config))
    out = tmp_path / "m"
    code, text = run_cli(["merge", str(first), str(second), "--out", str(out)], capsys)
    assert code == 0, text
    key = (theirs["scenario"], theirs["sample_id"])
    told = [
        r.getMessage() for r in caplog.records if "different finished results" in r.getMessage()
    ]
    assert told == [
        f"different finished results for {key[0]} sample {key[1]} in {first}, {second}; "
        "none of them counted"
    ], told
    merged = keyed(out)
    assert key not in merged
    assert merged == {k: v for k, v in (keyed(first) | keyed(second)).items() if k != key}


def test_merge_says_when_the_shards_were_played_with_different_limits(
    data: Path, tmp_path: Path, capsys, caplog
) -> None:
    """Shards of one run played with --limit 1 and --limit 2: together not the slices of any
    one selection (each shard is the N-th part of one list), so the merge says so in one
    warning; shards of one --limit merge without it."""
    out = str(tmp_path / "m")
    first = _shard(data, tmp_path / "s0", "0/2", capsys)
    assert (
        run_cli(eval_args(data, tmp_path / "s1", "--shard", "1/2", "--limit", "1"), capsys)[0] == 0
    )
    code, text = run_cli(["merge", str(first), str(tmp_path / "s1"), "--out", out], capsys)
    told = [r.getMessage() for r in caplog.records if "did not select" in r.getMessage()]
    assert code == 0 and len(told) == 1, told
    assert told[0].startswith("the shards did not select the slices of one run (")
    assert "another --limit" in told[0]
    caplog.clear()
    second = _shard(data, tmp_path / "t1", "1/2", capsys)
    code, text = run_cli(["merge", str(first), str(second), "--out", str(tmp_path / "m2")], capsys)
    assert code == 0 and "did not select" not in caplog.text + text
