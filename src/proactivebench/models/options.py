"""The types and ranges of backend options (`--model-option KEY=VALUE`, `--judge-option`,
`load_model(spec, **options)`), checked before anything is built.

Each option is declared once, in its backend's signature (`OpenAICompatible.__init__`,
`HFModel.__init__`, `PythonCallable.__init__`, `AnthropicMessages.__init__`,
`Resilient.__init__`): the annotation is its
type, and `Annotated[float, Range(0, low_open=True)]` adds its range. `check_options` reads those
annotations, so that a new option is checked as soon as it is declared, and a value from the
command line (JSON when it parses: `timeout=NaN` is a float NaN, `max_retries=abc` the text
"abc") is refused with one line naming the option instead of failing later, deep inside a
request, or being written into `run.json` as something that is not JSON.
"""

from __future__ import annotations

import math
import reprlib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from proactivebench.core.errors import ModelSpecError
from proactivebench.core.ranges import Range

__all__ = ["Annotated", "check_option", "check_options", "finite_json", "refusal"]


class _Refused(Exception):
    """The value does not fit the type (the caller says which option)."""


_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 60


def finite_json(value: Any) -> bool:
    """Whether every number in `value` (nested lists and dicts, any depth) is finite: JSON
    has no NaN or infinity, so nothing else can be sent to a server or written to a file."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return True


def check_option(name: str, annotation: Any, value: Any, owner: str = "") -> Any:
    """`value` as option `name` of type `annotation` takes it (an integral float as an int, an
    int as a float), or `ModelSpecError` naming the option (of `owner`, e.g. "openai"), what
    it must be and the value."""
    try:
        return _fit(annotation, value)
    except _Refused as exc:
        label = f"{owner} option {name}" if owner else f"option {name}"
        raise ModelSpecError(f"{label} must be {exc}, got {_short.repr(value)}") from None


def refusal(annotation: Any, value: Any) -> str | None:
    """What a value of `annotation` must be, when `value` is not one; None when it is."""
    try:
        _fit(annotation, value)
    except _Refused as exc:
        return str(exc)
    return None


def check_options(
    function: Callable[..., Any], options: dict[str, Any], owner: str = ""
) -> dict[str, Any]:
    """`options` checked against the annotations of `function`'s keyword arguments."""
    hints = typing.get_type_hints(function, include_extras=True)
    return {k: check_option(k, hints.get(k, Any), v, owner) for k, v in options.items()}


def _fit(annotation: Any, value: Any) -> Any:
    """`value` converted to `annotation`, or `_Refused` saying what it must be."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        try:
            fitted = _fit(args[0], value)
        except _Refused:
            raise _Refused(_describe(annotation)) from None
        for rule in args[1:]:
            if isinstance(rule, Range) and not rule.holds(fitted):
                raise _Refused(_describe(annotation))
        return fitted
    if origin is typing.Union or isinstance(annotation, types.UnionType):
        if value is None and type(None) in args:
            return None
        choices = [a for a in args if a is not type(None)]
        if len(choices) == 1:
            return _fit(choices[0], value)  # its own refusal says the most
        for choice in choices:
            try:
                return _fit(choice, value)
            except _Refused:
                continue
        raise _Refused(" or ".join(_describe(c) for c in choices))
    if origin is typing.Literal:
        if value not in args:
            raise _Refused("one of " + ", ".join(map(str, args)))
        return value
    return _fit_plain(annotation, origin, args, value)


def _fit_plain(annotation: Any, origin: Any, args: tuple[Any, ...], value: Any) -> Any:
    """`_fit` for a type that is no union, `Annotated` or `Literal`."""
    kind = origin or annotation
    if kind is Any:
        if not finite_json(value):
            raise _Refused(_describe(Any))
        return value
    if kind is bool:
        if not isinstance(value, bool):
            raise _Refused(_describe(kind))
        return value
    if kind is int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)  # 1e6, as JSON may write a count
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Refused(_describe(kind))
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Refused(_describe(kind))
        if not math.isfinite(value):
            raise _Refused("a finite number")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise _Refused(_describe(kind))
        return value
    if kind in (dict, Mapping):
        if not isinstance(value, dict):
            raise _Refused(_describe(annotation))
        item = args[1] if len(args) == 2 else Any
        return {_fit(str, k): _item(annotation, item, k, v) for k, v in value.items()}
    if kind in (list, Sequence, tuple):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise _Refused(_describe(annotation))
        item = args[0] if args else Any
        return [_item(annotation, item, i, v) for i, v in enumerate(value)]
    if isinstance(kind, type) and not isinstance(value, kind):
        raise _Refused(_describe(kind))
    return value


def _item(container: Any, annotation: Any, key: object, value: Any) -> Any:
    """One item of a list or object, fitted; a refusal says which item."""
    try:
        return _fit(annotation, value)
    except _Refused as exc:
        raise _Refused(f"{_describe(container)} ([{key!r}] must be {exc})") from None


def _describe(annotation: Any) -> str:
    """What a value of `annotation` is, in words."""
    origin = typing.get_origin(annotation) or annotation
    args = typing.get_args(annotation)
    if origin is Annotated:
        rules = [r.bounds() for r in args[1:] if isinstance(r, Range)]
        return " ".join([_describe(args[0]), *rules])
    if origin is Any:
        return "JSON (finite numbers only)"
    if origin in (dict, Mapping):
        inner = f" of {_describe(args[1])} values" if len(args) == 2 and args[1] is not Any else ""
        return f"a JSON object{inner}"
    if origin in (list, Sequence, tuple):
        inner = f" of {_describe(args[0])} items" if args and args[0] is not Any else ""
        return f"a JSON list{inner}"
    words = {bool: "true or false", int: "an integer", float: "a number", str: "text"}
    if origin in words:
        return words[origin]
    return getattr(origin, "__name__", str(origin))
