"""Options several commands share, and turning option values into library objects.

The run settings' options are generated from their declaration (`setting_options`, see
`proactivebench.run.settings`); the decoding options (`eval`'s and the judge's), `--model-option
KEY=VALUE` and `--shard I/N` parsing, the judge's and the response cache's options are written
here, with what they make: the judge, the cache, decoding settings with the user's overrides.
Nothing here prints.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from proactivebench.core.errors import ModelSpecError
from proactivebench.core.texts import loads
from proactivebench.models import JUDGE_SPEC_HELP, Decoding, load_model
from proactivebench.models.base import decoding_field
from proactivebench.models.options import refusal
from proactivebench.run.settings import (
    JUDGED_MODES,
    Kind,
    RunOptions,
    SettingField,
    Surface,
    offered,
)

if TYPE_CHECKING:
    from proactivebench.models.cache import ResponseCache
    from proactivebench.run.judge import Judge


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def option_group(*options: Decorator) -> Decorator:
    """One decorator for several options, listed in `--help` in the order given."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


#: `--data DIR`: where the episodes come from (`eval`, `play`).
data_option = click.option(
    "--data",
    "data_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Data directory in the official layout (<stem>_preprocessed.jsonl + images).",
)


def imported_run_option(source: str) -> Decorator:
    """`--out RUN_DIR` of a command that imports another harness's log as one of our runs
    (`import-inspect`, `import-lmms-eval`); `source` names what is imported ("the log's")."""
    return click.option(
        "--out",
        "out_dir",
        required=True,
        type=click.Path(path_type=Path),
        help=f"New run directory to write {source} episodes to (results.jsonl, run.json), for "
        "report and show.",
    )


def setting_options(
    settings: type, surface: Surface = "cli", kinds: tuple[Kind, ...] | None = None
) -> Decorator:
    """The options of the declared settings of `settings` that `surface` offers, each named
    after its setting (`random_actions` is `--random-actions`) and passed by that name.

    On the `train` surface a flag left out is None rather than false, so that a config file's
    value stands unless the command line gives one.
    """
    unset_is_none = surface == "train"
    fields = offered(settings, surface, kinds)
    return option_group(*(_setting_option(spec, surface, unset_is_none) for spec in fields))


def run_options(surface: Surface = "cli", declared_by: type = RunOptions) -> Decorator:
    """The execution options `surface` offers (`RunOptions`' declaration, or a subclass's),
    handed to the command as one `options` built from them, never unpacked or rebuilt by
    hand: a field added to `RunOptions` and offered here reaches the run, no command changed."""
    names = [spec.name for spec in offered(declared_by, surface)]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def given(*args: Any, **kwargs: Any) -> Any:
            options = declared_by(**{name: kwargs.pop(name) for name in names})
            return command(*args, options=options, **kwargs)

        return setting_options(declared_by, surface)(given)

    return decorate


def _setting_option(spec: SettingField, surface: Surface, unset_is_none: bool) -> Decorator:
    info = spec.info
    text = info.help_on(surface)
    base = spec.base_type
    if base is bool:
        default = None if unset_is_none else spec.default
        return click.option(spec.flag, is_flag=True, default=default, help=text)
    kind: Any = None
    if base is int:
        bounds = info.bounds
        kind = int if bounds is None else click.IntRange(min=bounds.low, max=bounds.high)
    elif base is str and info.choices:
        kind = click.Choice(info.choices)
    return click.option(
        spec.flag,
        type=kind,
        default=None if unset_is_none else spec.default,
        show_default=spec.default is not None and not unset_is_none,
        metavar=info.metavar,
        help=text,
    )


class DecodingNumber(click.ParamType):
    """A number for one of `Decoding`'s settings, in the range its declaration gives
    (`--temperature nan` or `-1`, `--top-p 5` are refused here, naming the option)."""

    name = "float"

    def __init__(self, field: str) -> None:
        self.field = field

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        problem = refusal(decoding_field(self.field), number)
        if problem:
            self.fail(f"must be {problem}, got {value}", param, ctx)
        return number


#: `--max-tokens`, `--temperature`, `--top-p`: the tested model's decoding, over the mode's
#: defaults (`decoding_of`).
decoding_options = option_group(
    click.option(
        "--max-tokens",
        type=click.IntRange(min=1),
        default=None,
        help="Default: 50 (MCQA), 32768 (OEG).",
    ),
    click.option(
        "--temperature",
        type=DecodingNumber("temperature"),
        default=None,
        help="Default: 0, greedy (MCQA); none sent, the server's (OEG).",
    ),
    click.option(
        "--top-p",
        type=DecodingNumber("top_p"),
        default=None,
        help="Nucleus sampling: draw each token from the most likely ones that together "
        "have probability P (with a temperature above 0) [default: none sent, the "
        "backend's].",
    ),
)


def decoding_of(
    mode: str, max_tokens: int | None, temperature: float | None, top_p: float | None
) -> Decoding:
    """The decoding `decoding_options` describe, over the defaults of `mode`."""
    from proactivebench.run.judge import oeg_decoding

    base = oeg_decoding() if mode in JUDGED_MODES else Decoding()
    return with_overrides(base, max_tokens=max_tokens, temperature=temperature, top_p=top_p)


def parse_model_options(
    pairs: tuple[str, ...], param_hint: str = "--model-option"
) -> dict[str, Any]:
    """`KEY=VALUE` pairs -> keyword options; values that parse as JSON are typed (8, true)."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint=param_hint)
        try:
            value = loads(raw)
        except json.JSONDecodeError:
            value = raw
        options[key.strip().replace("-", "_")] = value
    return options


#: What a run gives every backend it loads, so that no `--model-option` or `--judge-option`
#: may: `load_model` would be handed it twice.
RUN_GIVEN = {"seed": "the run's --seed seeds the model and the judge"}


def backend_options(pairs: tuple[str, ...], param_hint: str = "--model-option") -> dict[str, Any]:
    """`parse_model_options` of a backend's options (`--model-option`, `--judge-option`),
    without what the run gives the backend itself (`RUN_GIVEN`)."""
    options = parse_model_options(pairs, param_hint)
    for key, why in RUN_GIVEN.items():
        if key in options:
            raise click.BadParameter(f"{key} is not a backend option: {why}", param_hint=param_hint)
    return options


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` -> (I, N) with 0 <= I < N."""
    index, sep, count = text.partition("/")
    try:
        shard = (int(index), int(count))
    except ValueError:
        raise click.BadParameter(f"expected I/N, got {text!r}", param_hint="--shard") from None
    if not sep or not 0 <= shard[0] < shard[1]:
        raise click.BadParameter(f"need 0 <= I < N, got {text!r}", param_hint="--shard")
    return shard


#: The options that choose and shape a judge of open-ended answers (`make_judge`).
judge_options = option_group(
    click.option(
        "--judge",
        "judge_spec",
        default=None,
        help=f"OEG: the judge model, a spec of a model that answers requests ({JUDGE_SPEC_HELP}).",
    ),
    click.option(
        "--judge-votes",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="OEG: judge each answer N times and take the majority.",
    ),
    click.option(
        "--judge-option",
        "judge_options",
        multiple=True,
        metavar="KEY=VALUE",
        help="OEG: a backend option of the judge, repeatable (as --model-option).",
    ),
    click.option(
        "--judge-max-tokens",
        type=click.IntRange(min=1),
        default=None,
        help="OEG: the judge's token limit [default: 32768].",
    ),
    click.option(
        "--judge-temperature",
        type=DecodingNumber("temperature"),
        default=None,
        help="OEG: the judge's temperature [default: none sent, the server's].",
    ),
)


#: `--cache PATH` and `--no-cache`.
cache_options = option_group(
    click.option(
        "--cache",
        "cache_path",
        type=click.Path(path_type=Path),
        default=None,
        help="SQLite response cache [default: the user cache dir's responses.sqlite].",
    ),
    click.option(
        "--no-cache",
        is_flag=True,
        help="Do not read or write the response cache, nor the report's thumbnail cache.",
    ),
)


def open_cache(cache_path: Path | None, no_cache: bool, wanted: bool) -> ResponseCache | None:
    """The response cache the options name, when a real model or judge will ask anything."""
    from proactivebench.core.paths import response_cache_path
    from proactivebench.models.cache import ResponseCache

    if no_cache or not wanted:
        return None
    return ResponseCache(cache_path or response_cache_path())


def make_judge(
    spec: str | None,
    votes: int,
    options: tuple[str, ...],
    max_tokens: int | None,
    temperature: float | None,
    seed: int = 0,
) -> Judge | None:
    """The judge the options describe, or None without `--judge`."""
    from proactivebench.run.judge import Judge, oeg_decoding

    if spec is None:
        return None
    decoding = with_overrides(oeg_decoding(), max_tokens=max_tokens, temperature=temperature)
    try:
        model = load_model(spec, seed=seed, **backend_options(options, "--judge-option"))
    except ModelSpecError as exc:  # say it is the judge's (--judge, --judge-option)
        raise ModelSpecError(f"judge {spec}: {exc}") from None
    return Judge(model, votes=votes, decoding=decoding)


def with_overrides(decoding: Decoding, **overrides: Any) -> Decoding:
    """`decoding` with the settings a user gave on the command line."""
    return dataclasses.replace(decoding, **{k: v for k, v in overrides.items() if v is not None})
