"""Every error a user may catch, in one place; the CLI prints each as one message and exits
non-zero (docs/troubleshooting.md: "When things go wrong").

    ProactiveBenchError               anything meant for the user, not a traceback
    ├── DataError                     a data file's problem: its file, line, field
    ├── DataErrors                    data problems found in one pass, all reported
    ├── ImageError                    an image that cannot be read or decoded
    ├── DownloadError                 fetching or unpacking the official data failed
    ├── PushError                     a push to the Hub failed: token, repo, network
    ├── ModelSpecError                a model spec (or backend option) not usable
    ├── HFBackendError                `hf` cannot start (extra, path, option)
    ├── ModelError                    a failed model call (one attempt, or for good)
    │   └── UserCodeError             a user's `python:` model function raised
    ├── RunAbort                      the run stops; the same command resumes it
    │   ├── ServerUnreachableError    the server did not answer before the run
    │   ├── CredentialsMissingError   the hosted API's key is not set
    │   └── TooManyFailuresError      circuit breaker: too many failures in a row
    ├── SettingsError                 a setting's value, or a combination, refused
    │   └── SuiteFileError            a suite file (suite FILE) that cannot be run
    ├── NothingToDoError              nothing to play, judge, report or compare
    ├── RunDirError                   a run directory that cannot be used as asked
    │   ├── NotARunDirError           no run.json there (or a file, not a folder)
    │   ├── DamagedRunError           run.json or a results line unreadable as one
    │   ├── RunDirInUseError          another process holds the directory's lock
    │   └── RunMismatchError          a run of other data, model or settings
    │       └── ForeignLinesError     results.jsonl holds another run's lines
    ├── LaunchError                   a torchrun/accelerate eval that cannot go on
    ├── WriteError                    a write failed (full disk, quota, read-only)
    │   ├── LinkRefusedError          a link, FIFO or device where we write a file
    │   └── ForeignFileError          another file where a cache of ours goes
    └── TrainError                    training cannot start (extra, config, setting)

A failed model call (`ModelError`, `UserCodeError`) is recorded on its episode, never scored
as a wrong answer, and retried by a rerun; `RunAbort` ends the run and keeps what finished.
Messages say what and where, and never carry a credential. The leaf classes are there so that
a caller (a script running many evals, the CLI's exit codes) tells causes apart by type, never
by a message's words.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from proactivebench.core.texts import storable


class ProactiveBenchError(Exception):
    """Base of every error meant for the user rather than for a traceback."""

    @property
    def lines(self) -> list[str]:
        """The message's lines as made: one, or a heading and its items (`listed`). A line
        feed inside one (a path's) is not a break: the terminal shows it escaped."""
        return getattr(self, "_lines", None) or [str(self)]


def listed(error: ProactiveBenchError, heading: str, items: Sequence[str]) -> ProactiveBenchError:
    """`error` whose message is `heading` and `items`, one an indented line (its `lines`)."""
    error.args = (f"{heading}:" + "".join(f"\n  {item}" for item in items),)
    error._lines = [f"{heading}:", *(f"  {item}" for item in items)]  # type: ignore[attr-defined]
    return error


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
        super().__init__()
        listed(self, f"{len(problems)} data {noun}", lines)


class ModelSpecError(ProactiveBenchError):
    """A model spec on the command line that names no known backend or is malformed."""


class SettingsError(ProactiveBenchError):
    """A run setting's value, or a combination of settings, that cannot be played (`--icl`
    with open-ended generation, more demonstrations than the data offers, a bad shard)."""


class SuiteFileError(SettingsError):
    """A suite file (`proactivebench suite FILE`) that cannot be run: not TOML, an entry
    without an id or with an unknown setting or a bad value. The message names the file, the
    entry and the key."""


class NothingToDoError(ProactiveBenchError):
    """The job has nothing to work on: no sample selected, no open-ended line to judge, no
    result to report or compare. Not a failure of the data or the model."""


class RunDirError(ProactiveBenchError):
    """A run directory that cannot be used as asked."""


class NotARunDirError(RunDirError):
    """No `run.json` where a run was expected, or a file in the run directory's place."""


class DamagedRunError(RunDirError):
    """A run's `run.json`, or a line of its results, that cannot be read as what it must be;
    the message says which file (and line) and what to do."""


class RunDirInUseError(RunDirError):
    """Another process holds the run directory's lock (its PID is in the message)."""


class RunMismatchError(RunDirError):
    """The run directory holds a run of another model, data set or settings."""


class ForeignLinesError(RunMismatchError):
    """A run directory's results.jsonl holds lines that are not this run's (other settings,
    episodes the data does not hold, contradicting lines, a malformed field, no run.json):
    a resume over them would count them as the run's."""


class ImageError(ProactiveBenchError):
    """An image that cannot be read or decoded; the episode that needs it records an error."""


class DownloadError(ProactiveBenchError):
    """Fetching or unpacking the official data failed; the message says what to do next."""


class PushError(ProactiveBenchError):
    """`push` could not put results on the Hub: no token or one refused, a repo that is
    missing and may not be created, the network; the message names the repo and what to do."""


class HFBackendError(ProactiveBenchError):
    """The `hf` backend cannot start: extra not installed, bad path, bad option."""


class TrainError(ProactiveBenchError):
    """A training run cannot start: missing extra, bad config file, unknown setting."""


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


class ServerUnreachableError(RunAbort):
    """The model's (or judge's) server did not answer the check made before the run."""


class CredentialsMissingError(RunAbort):
    """The hosted API is asked, and the environment variable of its key is not set."""


class TooManyFailuresError(RunAbort):
    """The circuit breaker: so many requests in a row failed that the run stops."""


class LaunchError(ProactiveBenchError):
    """A launched eval (torchrun, accelerate launch) cannot go on: an unusable launcher
    environment, torch missing, a rank that lost its peers, a directory that is not a
    launched run's."""


class UserCodeError(ModelError):
    """A user's `python:` model function raised; the message says what, and where in their
    code. `retryable` when it raised `TimeoutError` or `ConnectionError` (an API it calls did
    not answer), which the retry wrapper tries again."""


def episode_error(exc: Exception) -> str:
    """How a failed call is recorded on its episode: the exception's type and message, or, for
    the user's own code, the message alone (it already names the user's exception)."""
    if isinstance(exc, UserCodeError):
        return storable(str(exc))
    return storable(f"{type(exc).__name__}: {exc}")


@contextmanager
def hub_answer(
    endpoint: str,
    what: str,
    error: type[ProactiveBenchError],
    kinds: tuple[type[Exception], ...],
    passes: tuple[type[Exception], ...] = (),
) -> Iterator[None]:
    """Around one huggingface_hub call (`data download`'s, `push`'s): an answer of `endpoint`
    about `what` that is not the Hub's (a proxy's or a captive portal's HTML page, JSON of
    another shape) fails inside the library as one of `kinds` (a ValueError, TypeError,
    KeyError...), told as one `error` line naming the endpoint; `passes` (the library's own
    errors among those kinds) go on as they are."""
    try:
        yield
    except passes:
        raise
    except kinds as exc:
        raise error(
            storable(
                f"{endpoint} sent an answer that is not the Hub's for {what} "
                f"({type(exc).__name__}: {exc}); check HF_ENDPOINT, or a proxy in the way"
            )
        ) from None


#: The errors of a disk that takes no more: full, over quota, a file-size limit, read-only.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


class WriteError(ProactiveBenchError):
    """A file that cannot be written, named; on a full disk the message says what to do.

    The writers leave nothing half-written (`paths.write_whole`, `rundir.ResultsFile`), so
    the same command, run again once there is room, goes on where it stopped."""

    def __init__(self, path: str | os.PathLike[str] | None, exc: OSError) -> None:
        self.path = path
        self.errno = exc.errno
        why = exc.strerror or str(exc)
        if exc.errno in DISK_ERRNOS and exc.errno != errno.EROFS:
            why += "; make room, then run the same command again (what was written is kept)"
        super().__init__(f"cannot write {path or 'a file'}: {why}")


class LinkRefusedError(WriteError):
    """A symbolic link, FIFO or device where a run, report or cache file is written: writing
    through it would change a file outside the directory (or hang), so it is refused by name
    (`paths.open_to_write`, `paths.refuse_link`)."""

    def __init__(self, path: str | os.PathLike[str], what: str = "a symbolic link") -> None:
        super().__init__(
            path,
            OSError(
                errno.ELOOP,
                f"it is {what}, which proactivebench does not write through; remove it (the "
                "file is written anew in its place)",
            ),
        )


class ForeignFileError(WriteError):
    """A file that is not a cache database of ours where one goes (`--cache`, `--thumb-cache`):
    a file that is not SQLite, or another program's database (`paths.not_our_database`).
    Refused and left as it is, never taken for a damaged cache to set aside or remove."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.problem = problem
        super().__init__(path, OSError(errno.EEXIST, problem))
