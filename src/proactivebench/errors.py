"""Errors a user can cause; the CLI prints them as one message and exits non-zero."""

from __future__ import annotations


class ProactiveBenchError(Exception):
    """Base of every error meant for the user rather than for a traceback."""


class DataError(ProactiveBenchError):
    """A problem with a data file, located as precisely as we know: file, line, field."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or ""
        if self.line is not None:
            where += f":{self.line}"
        if self.field is not None:
            where += f": field '{self.field}'"
        return f"{where}: {self.message}" if where else self.message


class DataErrors(ProactiveBenchError):
    """Several data problems found in one pass, reported together."""

    def __init__(self, problems: list[DataError], limit: int = 20) -> None:
        self.problems = problems
        lines = [str(p) for p in problems[:limit]]
        if len(problems) > limit:
            lines.append(f"... and {len(problems) - limit} more")
        noun = "problem" if len(problems) == 1 else "problems"
        super().__init__(f"{len(problems)} data {noun}:\n  " + "\n  ".join(lines))


class ModelSpecError(ProactiveBenchError):
    """A model spec on the command line that names no known backend or is malformed."""


class RunMismatchError(ProactiveBenchError):
    """The run directory holds a run of another model, data set or settings."""
