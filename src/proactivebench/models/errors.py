"""Errors a model backend raises once it gives up on a request.

The runner records them on the episode (never as a wrong answer) and the CLI prints them as one
line, so their messages say where and why — and never carry a credential.
"""

from __future__ import annotations

from proactivebench.errors import ProactiveBenchError


class ModelError(ProactiveBenchError):
    """A model call that failed: one attempt, as a backend raises it, or for good, as the
    retry wrapper (`models.resilient.Resilient`) raises it once its retries are exhausted.

    `endpoint` is the base URL (or other location) that answered last, `status` its HTTP status
    when there was one, and `retryable` whether the fault was of a transient kind (another
    attempt may succeed). `retry_after` is how many seconds the server asked us to wait, when
    it said, and `reason` the fault alone, without who and where (e.g. `HTTP 500 Internal
    Server Error`): the wrapper's messages name those themselves.
    """

    def __init__(
        self,
        message: str,
        *,
        endpoint: str | None = None,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.reason = reason


class RunAbort(ProactiveBenchError):
    """A failure that ends the whole run rather than one episode: the server cannot be reached
    before the run, or too many requests in a row failed during it. Finished episodes are
    kept; a rerun of the same command resumes."""


class UserCodeError(ProactiveBenchError):
    """A user's `python:` function raised; the message says what, and where in their code.

    `retryable`: the function raised `TimeoutError` or `ConnectionError` (an API it calls did
    not answer), which the retry wrapper tries again.
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


def episode_error(exc: Exception) -> str:
    """How a failed call is recorded on its episode: the exception's type and message, or, for
    the user's own code, the message alone (it already names the user's exception)."""
    if isinstance(exc, UserCodeError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
