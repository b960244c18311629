"""Fuzzing the data files: whatever bytes or field values a `*_preprocessed.jsonl` holds,
`data validate` and `eval` end with an exit code and a message, never an uncaught exception.

Two generators: valid records with random fields replaced, removed or added (any JSON value,
including huge and negative integers, NaN, nested lists and objects), and valid files with
random bytes written over, inserted or cut. Each example gets a fresh data directory whose
images are those of the valid records, so that a mutation may also point at images that exist.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handmade import BUILDERS, write_dataset
from proactivebench.benchmark.protocol import scenario_strings
from proactivebench.benchmark.registry import paper_scenarios
from proactivebench.cli import main

#: Exit codes a run may end with on bad data: fine, bad input, episodes that ended in errors.
ALLOWED_EXITS = {0, 1, 3}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)
index_values = st.integers() | st.integers(-3, 12)


def _cli_exit(args: list[str]) -> int:
    """The exit code of `proactivebench ARGS`; any other exception fails the test."""
    with pytest.raises(SystemExit) as info:
        main(args)
        raise SystemExit(0)
    return int(info.value.code or 0)


def _run_everything(root: Path) -> None:
    assert _cli_exit(["data", "validate", str(root)]) in ALLOWED_EXITS
    for model in ("baseline:oracle", "baseline:random"):
        out = root / "runs" / model.replace(":", "-")
        args = ["eval", "--data", str(root), "--model", model, "--out", str(out)]
        args += ["--all-samples", "--no-cache"]
        if model == "baseline:oracle":  # the report of what fuzzed data gave: one run in two
            args.append("--no-report")
        assert _cli_exit(args) in ALLOWED_EXITS


def _fresh_dataset(directory: str, scenario: str) -> tuple[Path, Path, list[dict]]:
    """Two valid records of `scenario` with their images; (data dir, jsonl path, records)."""
    build = BUILDERS[scenario]
    records = [build(0), build(1)]
    root = write_dataset(Path(directory) / "data", {scenario: records})
    return root, root / scenario_strings(scenario).dataset_file, records


@st.composite
def mutated_records(draw: st.DrawFn) -> tuple[str, list[dict]]:
    scenario = draw(st.sampled_from(paper_scenarios()))
    base = BUILDERS[scenario](0)
    record = dict(base)
    for key in draw(st.lists(st.sampled_from(sorted(base)), max_size=4, unique=True)):
        action = draw(st.sampled_from(["replace", "index", "delete"]))
        if action == "delete":
            del record[key]
        else:
            record[key] = draw(index_values if action == "index" else json_values)
    if draw(st.booleans()):
        record[draw(st.text(max_size=8))] = draw(json_values)
    return scenario, [record, BUILDERS[scenario](1)]


fuzz = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@fuzz
@given(case=mutated_records())
def test_random_field_values_never_raise(case: tuple[str, list[dict]]) -> None:
    scenario, records = case
    with tempfile.TemporaryDirectory() as directory:
        root, path, _ = _fresh_dataset(directory, scenario)
        lines = [json.dumps(r, allow_nan=True) for r in records]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        _run_everything(root)


@fuzz
@given(
    scenario=st.sampled_from(paper_scenarios()),
    edits=st.lists(
        st.tuples(st.sampled_from(["overwrite", "insert", "cut"]), st.floats(0, 1), st.binary()),
        min_size=1,
        max_size=4,
    ),
)
def test_random_bytes_never_raise(scenario: str, edits: list[tuple[str, float, bytes]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root, path, _ = _fresh_dataset(directory, scenario)
        content = bytearray(path.read_bytes())
        for kind, where, data in edits:
            at = int(where * len(content))
            if kind == "overwrite":
                content[at : at + len(data)] = data
            elif kind == "insert":
                content[at:at] = data
            else:
                del content[at : at + 1 + len(data)]
        path.write_bytes(bytes(content))
        _run_everything(root)


@pytest.mark.parametrize("scenario", ["ROD", "VSOD", "QD"])
def test_a_record_claiming_a_billion_views_is_refused_in_bounded_memory(
    scenario: str, tmp_path: Path
) -> None:
    """A fuzzed record with `num_images` 10^9 took a test worker to 23 GB and the kernel's
    OOM killer: the check before a run listed every view an episode may show. In 4 GiB of
    address space it is now refused at its first missing image, in one line."""
    import resource
    import subprocess
    import sys

    root, path, records = _fresh_dataset(str(tmp_path), scenario)
    records[0]["num_images"] = 10**9
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))

    args = ["eval", "--data", str(root), "--model", "baseline:proactive", "--no-cache"]
    args.append("--all-samples")
    done = subprocess.run(
        [sys.executable, "-m", "proactivebench", *args, "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        preexec_fn=capped,
        timeout=300,
    )
    told = done.stdout + done.stderr
    assert done.returncode == 1, told
    assert "image not found" in told and "Traceback" not in told and "MemoryError" not in told
