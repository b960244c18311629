"""Errors a model backend raises once it gives up on a request.

The runner records them on the episode (never as a wrong answer) and the CLI prints them as one
line, so their messages say where and why — and never carry a credential.
"""

from __future__ import annotations

from proactivebench.errors import ProactiveBenchError


class ModelError(ProactiveBenchError):
    """A model call that failed for good: retries exhausted, or a fault retrying cannot fix.

    `endpoint` is the base URL (or other location) that answered last, `status` its HTTP status
    when there was one, and `retryable` whether the last fault was of a transient kind.
    """

    def __init__(
        self,
        message: str,
        *,
        endpoint: str | None = None,
        status: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.status = status
        self.retryable = retryable


class RunAbort(ProactiveBenchError):
    """A failure that ends the whole run rather than one episode: the server cannot be reached
    before the run, or too many requests in a row failed during it. Finished episodes are
    kept; a rerun of the same command resumes."""


class UserCodeError(ProactiveBenchError):
    """A user's `python:` function raised; the message says what, and where in their code."""


def episode_error(exc: Exception) -> str:
    """How a failed call is recorded on its episode: the exception's type and message, or, for
    the user's own code, the message alone (it already names the user's exception)."""
    if isinstance(exc, UserCodeError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
