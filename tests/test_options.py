"""Numbers from the command line and from `--model-option` / `--judge-option` are checked
before anything runs, against one declaration of each option's type and range, and nothing
non-finite is ever written as JSON (issue 29, item 5)."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from clirun import eval_args, run_cli
from handmade import full_dataset
from proactivebench.core.errors import ModelSpecError
from proactivebench.core.texts import NotJSONError, dumps
from proactivebench.models import load_model
from proactivebench.models.base import Decoding

SRC = Path(__file__).resolve().parents[1] / "src" / "proactivebench"
#: A server nobody answers at: every case below must be refused before it is asked.
SERVER = "openai:m@http://127.0.0.1:9/v1"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def refused(code: int, text: str, *needles: str) -> None:
    assert code != 0 and "Traceback" not in text, text
    for needle in needles:
        assert needle in text, (needle, text)


@pytest.mark.parametrize(
    ("flags", "option"),
    [
        (["--temperature", "nan"], "--temperature"),
        (["--temperature", "-0.5"], "--temperature"),
        (["--temperature", "inf"], "--temperature"),
        (["--top-p", "5"], "--top-p"),
        (["--top-p", "0"], "--top-p"),
        (["--judge-temperature", "nan"], "--judge-temperature"),
    ],
)
def test_decoding_numbers_out_of_range_are_refused_by_name(
    data: Path, tmp_path: Path, capsys, flags: list[str], option: str
) -> None:
    code, text = run_cli(eval_args(data, tmp_path / "run", *flags), capsys)
    refused(code, text, option)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("pair", "says"),
    [
        ("max_response_bytes=1e309", "option max_response_bytes must be an integer >= 1"),
        ("max_retries=abc", "option max_retries must be an integer >= 0, got 'abc'"),
        ("concurrency=NaN", "option concurrency must be an integer >= 1, got nan"),
        ("headers=5", "option headers must be a JSON object of text values, got 5"),
        ("extra_body=[1]", "option extra_body must be a JSON object, got [1]"),
        ('extra_body={"seed": NaN}', "option extra_body must be a JSON object (['seed']"),
        ("timeout=NaN", "option timeout must be a number > 0, got nan"),
        ("timeout=-3", "option timeout must be a number > 0, got -3"),
        ("jpeg_quality=101", "option jpeg_quality must be an integer >= 0 and <= 100"),
        ("reasoning=maybe", "option reasoning must be true or false, got 'maybe'"),
    ],
)
def test_model_options_are_checked_before_the_run(
    data: Path, tmp_path: Path, capsys, pair: str, says: str
) -> None:
    args = eval_args(data, tmp_path / "run", "--no-cache", "--model-option", pair)
    args[args.index("baseline:oracle")] = SERVER
    code, text = run_cli(args, capsys)
    refused(code, text, "openai " + says)
    assert not (tmp_path / "run").exists()


def test_a_judge_option_is_checked_and_named_as_the_judges(
    data: Path, tmp_path: Path, capsys
) -> None:
    args = eval_args(data, tmp_path / "run", "--mode", "oeg", "--judge", SERVER)
    code, text = run_cli([*args, "--judge-option", "timeout=NaN"], capsys)
    refused(code, text, f"judge {SERVER}: openai option timeout must be a number > 0")
    assert not (tmp_path / "run").exists()


def test_good_values_pass_in_the_declared_type() -> None:
    """What JSON writes as a float (1e6) is a count all the same; an integer is a number."""
    model = load_model(
        SERVER, max_response_bytes=1e6, timeout=5, max_retries=2.0, concurrency=3, headers={}
    )
    inner = model.inner  # type: ignore[attr-defined]
    assert inner.max_response_bytes == 1_000_000 and type(inner.max_response_bytes) is int
    assert inner.timeout == 5.0 and model.retry.max_retries == 2  # type: ignore[attr-defined]
    assert model.concurrency == 3  # type: ignore[attr-defined]


def test_the_python_backends_options_are_checked(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("def answer(messages, observation):\n    return 'A'\n")
    with pytest.raises(ModelSpecError, match="python option parallel must be true or false"):
        load_model(f"python:{agent}:answer", parallel="yes")
    with pytest.raises(ModelSpecError, match="python option max_delay must be a number > 0"):
        load_model(f"python:{agent}:answer", max_delay=float("inf"))


@pytest.mark.parametrize(
    "settings",
    [
        {"temperature": math.nan},
        {"temperature": -1.0},
        {"top_p": 1.5},
        {"max_tokens": 0},
        {"extra": (("seed", math.inf),)},
    ],
)
def test_a_decoding_out_of_range_cannot_be_made(settings: dict[str, object]) -> None:
    """Python callers and adapters make `Decoding`s too: the same declaration holds."""
    with pytest.raises(ModelSpecError):
        Decoding(**settings)  # type: ignore[arg-type]


def test_no_json_writer_writes_nan() -> None:
    assert dumps({"a": [1, 0.5]}) == '{"a": [1, 0.5]}'
    for value in (math.nan, math.inf, -math.inf):
        with pytest.raises(NotJSONError):
            dumps({"temperature": value})


def test_json_is_written_by_texts_dumps_alone() -> None:
    """Every `json.dumps` / `json.dump` call of the package is in texts.py (`dumps`, which
    refuses NaN, and `shown_json`, for messages): no writer can write NaN by going round it."""
    calls = []
    for path in SRC.rglob("*.py"):
        if path == SRC / "core" / "texts.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("dump", "dumps")
                and isinstance(node.value, ast.Name)
                and node.value.id == "json"
            ):
                calls.append(f"{path.relative_to(SRC)}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module == "json":
                calls += [f"{path.relative_to(SRC)}: from json import {a.name}" for a in node.names]
    assert not calls, calls
