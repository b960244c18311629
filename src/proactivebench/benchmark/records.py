"""Typed records of the official `*_preprocessed.jsonl` files, with located validation.

`Record` holds the common fields of docs/protocol.md §2; each scenario's record type (its
extras and their checks) lives beside its episode in `benchmark/scenarios/`.
`parse_record` turns one decoded JSON line into a record or raises a `DataError` naming the
file, line and field, so that a malformed data set ends in one readable message instead of a
`KeyError` deep inside an episode. Records never touch images: paths are only formatted.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from proactivebench.core.errors import DataError


@dataclass(frozen=True)
class Source:
    """Where a record came from, for error messages and reports."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Record:
    """Fields common to every scenario."""

    scenario: ClassVar[str] = ""
    #: Placeholder names `image_template` may use in this scenario.
    template_fields: ClassVar[frozenset[str]] = frozenset({"image"})

    id: int
    image_template: str
    first_image: int
    num_images: int
    #: Fills the template in reference mode; COCO ignores it (its reference is the whole image).
    reference_image: int | str | None
    prompt: str
    options: tuple[str, ...]
    categories: tuple[str, ...]
    answer: str
    source: Source = field(compare=False, repr=False)

    # ----- what a scenario's record type may add (parse_record calls these) -----------------

    @classmethod
    def read_extra(cls, fields: Fields) -> dict[str, Any]:
        """The scenario's own fields of one JSON object, checked (none by default)."""
        return {}

    @classmethod
    def check_first_image(cls, fields: Fields, first: int, num_images: int) -> None:
        """Refuse a `first_image` outside the range this scenario's rules give it (by
        default: a file number, so not negative)."""
        if first < 0:
            raise fields.error("first_image", f"must be >= 0, got {first}")

    @classmethod
    def reads_reference(cls) -> bool:
        """Whether `reference_image` names the reference view (COCO's is its template)."""
        return True

    def own_warnings(self, warning: Callable[[str, str], DataError]) -> list[DataError]:
        """What is odd about this scenario's fields in a record that still plays."""
        return []

    def in_official_test(self) -> bool:
        """Whether the official test filter keeps this record, its id being kept."""
        return True


def check_frame(fields: Fields, first: int, num_images: int) -> None:
    """ROD and VSOD cycle through frames 0..num_images-1 and CIT moves within them, so a first
    frame outside that range is one the episode could never come back to."""
    if not 0 <= first < num_images:
        raise fields.error(
            "first_image", f"must be a frame 0..num_images-1 (num_images={num_images}), got {first}"
        )


@dataclass(frozen=True)
class Crop:
    """COCO's starting crop, in the record's own terms (see docs/protocol.md §5, COCO)."""

    top: float
    left: float
    height: float
    width: float


class Fields:
    """Typed access to one JSON object; every failure is a `DataError` at file:line/field
    (what a record type's `read_extra` reads its fields with)."""

    def __init__(self, obj: dict[str, Any], source: Source) -> None:
        self.obj = obj
        self.source = source

    def error(self, name: str, message: str) -> DataError:
        return DataError(message, path=self.source.path, line=self.source.line, field=name)

    def get(self, name: str) -> Any:
        if name not in self.obj:
            raise self.error(name, "missing")
        return self.obj[name]

    def int(self, name: str, minimum: int | None = None) -> int:
        value = self.get(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"expected an integer, got {type(value).__name__} {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(name, f"must be >= {minimum}, got {value}")
        return value

    def number(self, name: str, container: dict[str, Any] | None = None) -> float:
        """A JSON number; `container` is a nested object (the field name keeps its dotted path)."""
        value = self.get(name) if container is None else container[name.rpartition(".")[2]]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(name, f"expected a number, got {type(value).__name__} {value!r}")
        return value

    def str(self, name: str) -> str:
        value = self.get(name)
        if not isinstance(value, str):
            raise self.error(name, f"expected a string, got {type(value).__name__}")
        return value

    def bool(self, name: str) -> bool:
        value = self.get(name)
        if not isinstance(value, bool):
            raise self.error(name, f"expected true or false, got {value!r}")
        return value

    def str_list(self, name: str, *, nonempty: bool = True) -> tuple[str, ...]:
        value = self.get(name)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(name, "expected a list of strings")
        if nonempty and not value:
            raise self.error(name, "must not be empty")
        return tuple(value)

    def int_list(self, name: str) -> tuple[int, ...]:
        value = self.get(name)
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise self.error(name, "expected a list of integers")
        return tuple(value)


def _check_template(f: Fields, template: str, allowed: frozenset[str]) -> None:
    """Refuse templates that cannot be formatted or that point outside the data dir."""
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise f.error("image_template", f"not a valid format string: {exc}") from None
    unknown = {n for n in names if n not in allowed}
    if unknown:
        raise f.error(
            "image_template",
            f"unknown placeholder(s) {sorted(unknown)}; this scenario fills {sorted(allowed)}",
        )
    # The parts of the path as PurePosixPath names them (empty and "." parts dropped), by
    # string operations: this runs for every record of every run.
    posix = template.replace("\\", "/")
    absolute = posix.startswith("/")
    parts = [part for part in posix.split("/") if part not in ("", ".")]
    if not parts and not absolute:
        raise f.error("image_template", f"must name image files, got {template!r}")
    if absolute or ":" in parts[0]:
        raise f.error("image_template", f"must be relative to the data dir, got {template!r}")
    if ".." in parts:
        raise f.error("image_template", f"must not leave the data dir ('..'): {template!r}")


def _distinct(f: Fields, name: str, values: tuple[str, ...]) -> tuple[str, ...]:
    """Refuse a value given twice: two options of one category both end an episode on the
    answer (both "correct"), so an episode's choices are no longer the paper's."""
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise f.error(name, f"{value!r} is given twice")
        seen.add(value)
    return values


def record_warnings(record: Record) -> list[DataError]:
    """What is odd about a record that still loads and plays (docs/protocol.md §2).

    The reference loads these records and only fails, or never succeeds, once an episode gets
    there; so do we, instead of refusing the whole file for one record.
    """
    source = record.source

    def warning(name: str, message: str) -> DataError:
        return DataError(message, path=source.path, line=source.line, field=name)

    found: list[DataError] = []
    if record.answer not in record.categories:
        found.append(
            warning("answer", f"{record.answer!r} is not one of the categories: never correct")
        )
    return found + record.own_warnings(warning)


def parse_record(record_type: type[Record], obj: Any, source: Source) -> Record:
    """Validate one decoded JSON line of a scenario's file and build its typed record
    (`record_type`: the scenario's, from `registry.scenario(short).record_type`)."""
    if not isinstance(obj, dict):
        raise DataError(
            f"expected a JSON object, got {type(obj).__name__}", path=source.path, line=source.line
        )
    f = Fields(obj, source)
    template = f.str("image_template")
    _check_template(f, template, record_type.template_fields)
    categories = _distinct(f, "categories", f.str_list("categories"))
    answer = f.str("answer")
    reference = f.get("reference_image")
    if not record_type.reads_reference():
        reference = None
    elif isinstance(reference, bool) or not isinstance(reference, int | str):
        raise f.error("reference_image", "expected an integer or a string")
    common: dict[str, Any] = dict(
        id=f.int("id", minimum=0),
        image_template=template,
        first_image=f.int("first_image"),
        num_images=f.int("num_images", minimum=1),
        reference_image=reference,
        prompt=f.str("prompt"),
        options=f.str_list("options", nonempty=False),
        categories=categories,
        answer=answer,
        source=source,
    )
    record_type.check_first_image(f, common["first_image"], common["num_images"])
    return record_type(**common, **record_type.read_extra(f))
