"""A user's Python function as the model: the `python:module:function` backend.

The spec names a function in an importable module (`python:my_agent:answer`, the current
directory is importable) or in a file (`python:path/to/agent.py:answer`). The contract:

    def answer(messages: list[dict], observation: Observation) -> str

or the same as `async def`. It is called once per turn and returns the answer text. Any
callable that takes those two positional arguments will do (defaults, `*args`, an object with
`__call__`, a `functools.partial`); another signature is refused when the model is loaded.

- `messages` is the chat in the OpenAI shape, a fresh copy per call. Text parts are
  `{"type": "text", "text": str}`; an image part is `{"type": "image", "view": View,
  "image": PIL.Image.Image}` — `view` says which file and transform, `image` is the decoded RGB
  picture the model would see (shared cache: copy it before changing it).
- `observation` is the turn's `proactivebench.benchmark.scenarios.Observation` (scenario, sample id,
  turn and step limit, prompt, options, view) with its answer key emptied: only the built-in
  baselines play from the key, and a function is measured like any model. In open-ended modes
  (`oeg`, `oeg-multiturn`) it holds only what the model is shown (`Observation.open_ended`):
  the open-ended question and the view, no options (they hold the correct category).

A sync function runs in a worker thread, one call at a time, so code that is not thread-safe
(a local model) is safe; pass `parallel=True` to let sync calls overlap (I/O-bound code). An
async function is awaited directly, as many at once as the run's concurrency. An exception it
raises (`SystemExit` too: `sys.exit()` in the function never ends the run; only Ctrl-C
does), or a return value that is not a string, is recorded as an error on that episode, with
the place in the user's code; the first time each failure occurs its traceback (the user's
frames only: it is their code to fix) is logged.

A `TimeoutError` or `ConnectionError` (or a subclass: `socket.timeout`,
`ConnectionRefusedError`, ...) is taken for an API the function calls that did not answer:
`load_model` wraps the backend in `models.resilient.Resilient`, which calls the function again
after a backoff (`max_retries`, `max_delay`), and records the error only once the retries are
spent. Any other exception is a bug in the function, which the same call would repeat: it is
recorded at once. (Libraries with exceptions of their own, e.g. `requests` or `httpx`, are
retried only if the function re-raises them as one of those two.)

The response cache keys the function's answers on the observation as well as the messages
(both are what it is handed), and on its code as well as its name: a hash of the
file that defines it and of the module the spec names — for a module in a package, of every
`.py` file of the top-level package — so an edited function is asked again, not answered from
the cache. Code elsewhere (another package it imports, a data file, a model it loads) is not
in the key, nor is state the function keeps between calls (a cached turn does not call it):
use `--no-cache` while that changes, or for a function whose answers are not a function of
its two arguments.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from hashlib import sha256
from pathlib import Path
from typing import Any

from proactivebench.benchmark.prompting import map_image_parts
from proactivebench.core.errors import ModelSpecError, UserCodeError
from proactivebench.core.texts import storable
from proactivebench.models.base import ChatRequest, Completion, Model
from proactivebench.models.daemon_threads import DaemonThreads

log = logging.getLogger(__name__)


def parse_target(value: str) -> tuple[str, str]:
    """`module:function` or `path/to/file.py:function` → (module or path, function)."""
    target, sep, function = value.rpartition(":")
    if not sep or not target or not function:
        raise ModelSpecError(
            f"python model spec needs MODULE:FUNCTION or FILE.py:FUNCTION, got {value!r}"
        )
    return target, function


def _is_file_target(target: str) -> bool:
    return target.endswith(".py") or "/" in target or os.sep in target


def _import_file(path: Path) -> Any:
    """Import a Python file as a module of its own, named after a hash of its location."""
    if not path.is_file():
        if path.exists():  # a folder, a device, a FIFO (importing one would wait on it)
            raise ModelSpecError(f"python model file {path} is not a regular file")
        raise ModelSpecError(f"python model file not found: {path}")
    digest = sha256(str(path.resolve()).encode()).hexdigest()[:8]
    name = f"_proactivebench_user_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelSpecError(f"cannot import {path} as Python code")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _import_module(name: str) -> Any:
    # Like `python -m` and uvicorn: a module in the current directory is importable, even
    # from the console script (whose sys.path does not hold the current directory).
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(name)


def load_callable(value: str) -> tuple[Callable[..., Any], Any]:
    """The function a `python:` spec names and the module it was found in; every failure is
    one clear `ModelSpecError`."""
    target, function = parse_target(value)
    try:
        module = _import_file(Path(target)) if _is_file_target(target) else _import_module(target)
    except ModelSpecError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name and (target == exc.name or target.startswith(exc.name + ".")):
            raise ModelSpecError(f"python model module {target!r} not found") from None
        raise ModelSpecError(f"importing {target!r} failed: {exc}") from None
    except STOPS_THE_RUN:
        raise
    except BaseException as exc:  # the user's module raised (or exited) while being imported
        raise ModelSpecError(f"importing {target!r} failed: {_described(exc)}") from None
    obj: Any = module
    for attribute in function.split("."):
        obj = getattr(obj, attribute, None)
        if obj is None:
            raise ModelSpecError(f"{target!r} has no attribute {function!r}")
    if not callable(obj):
        raise ModelSpecError(f"{target}:{function} is not callable")
    _check_signature(obj, f"{target}:{function}")
    return obj, module


def _check_signature(fn: Callable[..., Any], where: str) -> None:
    """Refuse, before the run, a function that cannot be called as `fn(messages, observation)`:
    otherwise every episode would fail on the call (or worse, inside it, on the wrong
    argument). Anything that binds two positional arguments passes: defaults, `*args`, a
    callable instance, a `functools.partial`."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: the call will tell
        return
    try:
        signature.bind(None, None)
    except TypeError:
        raise ModelSpecError(
            f"{where} takes {signature}, but a python model is called as "
            f"{where.rpartition(':')[2]}(messages, observation): two positional arguments, "
            "the chat messages and the turn's observation; it returns the answer text (def "
            "or async def)"
        ) from None


def _package_files(source: Path) -> list[Path]:
    """`source`, or every `.py` file of the top-level package it belongs to."""
    top = None
    directory = source.parent
    while (directory / "__init__.py").is_file():
        top, directory = directory, directory.parent
    return [source] if top is None else sorted(top.rglob("*.py"))


def _source_file(obj: Any) -> Path | None:
    """The file that defines `obj` (a function, a class, or an instance of one), if any."""
    for candidate in (obj, type(obj)):
        try:
            name = inspect.getsourcefile(candidate)
        except TypeError:  # built in: no source file
            continue
        if name:
            return Path(name)
    return None


def code_hash(fn: Callable[..., Any], module: Any) -> str:
    """A hash of the code behind `fn`: see the module docstring for what it covers."""
    sources = {p for p in (_source_file(fn), _source_file(module)) if p and p.is_file()}
    digest = sha256()
    for path in sorted({f.resolve() for source in sources for f in _package_files(source)}):
        with contextlib.suppress(OSError):  # a file that vanished while we looked
            digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


#: Where the standard library lives: its frames before the user's (asyncio's hand-off to a
#: worker thread) are not the user's to see.
_STDLIB = os.path.dirname(os.__file__) + os.sep


#: What a user's function raises when an API it calls did not answer: worth another call.
RETRYABLE = (TimeoutError, ConnectionError)

#: What user code may raise that stops the run as it would anywhere else: Ctrl-C, and the
#: cancellation asyncio stops a task with (a `CancelledError` the function raises while its
#: task is not being cancelled is its own failure: `_stopping`). Anything else it raises, a
#: `SystemExit` (`sys.exit`, `exit()`) or another `BaseException` included, is the function's
#: failure: an episode error, or a refused spec at import, never the tool ending silently with
#: exit 0.
STOPS_THE_RUN = (KeyboardInterrupt, asyncio.CancelledError)


def _stopping() -> bool:
    """Whether the task is being cancelled (the run stops: Ctrl-C, SIGTERM), as opposed to a
    `CancelledError` the user's code raised of its own."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _described(exc: BaseException) -> str:
    """`Type: message`; a `SystemExit` says it came from `sys.exit` (its message is only the
    exit status)."""
    if isinstance(exc, SystemExit):
        return f"SystemExit: the code called sys.exit({exc.code!r})"
    return f"{type(exc).__name__}: {exc}"


def _ours(filename: str) -> bool:
    return filename == __file__ or filename.startswith(_STDLIB)


#: Where sync functions run: daemon threads, so that a call that never returns cannot keep
#: Ctrl-C or SIGTERM from ending the run (see `daemon_threads`).
_THREADS = DaemonThreads("proactivebench-python-model")


class PythonCallable(Model):
    """Calls the user's function once per request (no batching)."""

    max_batch = 1

    def __init__(self, value: str, *, seed: int = 0, parallel: bool = False) -> None:
        self.name = f"python:{value}"
        self.seed = seed
        self.fn, module = load_callable(value)
        #: What the response cache keys answers on besides the name (see `cache_name`).
        self.code_hash = code_hash(self.fn, module)
        self.is_async = inspect.iscoroutinefunction(self.fn) or inspect.iscoroutinefunction(
            getattr(self.fn, "__call__", None)  # noqa: B004 - an async __call__ on an instance
        )
        self._lock: threading.Lock | None = None if parallel else threading.Lock()
        #: Failures whose traceback was logged already (each is shown once per run).
        self._reported: set[str] = set()
        self._reported_lock = threading.Lock()

    @property
    def cache_name(self) -> str:
        """The name and the code: an edited function is another model to the cache."""
        return f"{self.name}#code={self.code_hash}"

    @property
    def code_digest(self) -> str | None:
        """The code's hash, as the cache keys it: an edited function is told on resume."""
        return self.code_hash

    def answer_inputs(self, request: ChatRequest) -> dict[str, Any]:
        """The observation, which the function is handed with the messages: two turns whose
        messages are equal (a turn that shows the same picture again) may be answered apart
        by a function that reads the turn, the sample or the options, so a cached answer is
        one given to the same observation."""
        if request.observation is None:  # a judge's request: the messages are all it gets
            return {}
        return {"observation": dataclasses.asdict(request.observation)}

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return [await self._answer(request) for request in requests]

    async def _answer(self, request: ChatRequest) -> Completion:
        messages = self._messages(request)
        started = time.perf_counter()
        raised: BaseException | None = None
        try:
            if self.is_async:
                text = await self.fn(messages, request.observation)
            else:
                call = functools.partial(self._call_sync, messages, request)
                text, raised = await _THREADS.run(call)
            if raised is None and inspect.isawaitable(text):  # a sync wrapper's coroutine
                text = await text
        except asyncio.CancelledError as exc:
            if _stopping():
                raise
            raised = exc  # the function's own (a library it calls, cancelled inside)
        except STOPS_THE_RUN:
            raise
        except BaseException as exc:  # SystemExit included: see STOPS_THE_RUN
            raised = exc
        if raised is not None:
            raise self._user_error(raised) from None
        if not isinstance(text, str):
            raise TypeError(f"{self.name} returned {type(text).__name__}, expected str")
        return Completion(text=text, latency_s=time.perf_counter() - started)

    def _user_error(self, exc: BaseException) -> UserCodeError:
        """`exc` as raised by the user's code: where, and (the first time) the traceback."""
        tb = exc.__traceback__
        while tb is not None and _ours(tb.tb_frame.f_code.co_filename):
            tb = tb.tb_next  # our frames and asyncio's come first: not the user's to fix
        frames = traceback.extract_tb(tb) if tb is not None else []
        message = _described(exc)
        if frames:  # none when the exception lost its traceback on the way
            message += f" (at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name})"
        retryable = isinstance(exc, RETRYABLE)
        with self._reported_lock:
            first = message not in self._reported
            self._reported.add(message)
        if first:
            # The user's exception text enters here: made storable like the error it becomes
            # (a lone surrogate in a log record cannot be written as UTF-8).
            text = storable("".join(traceback.format_exception(type(exc), exc, tb)).rstrip())
            then = (
                "the call is retried while retries remain"
                if retryable
                else "the episode is recorded as an error"
            )
            log.warning("%s raised (shown once; %s):\n%s", self.name, then, text)
        return UserCodeError(message, retryable=retryable)

    def _call_sync(
        self, messages: list[dict[str, Any]], request: ChatRequest
    ) -> tuple[Any, BaseException | None]:
        """What the function returned, or what it raised: handed back, not raised, because
        asyncio replaces a `TimeoutError` from a worker thread by a new one without its
        traceback, i.e. without the place in the user's code."""
        try:
            if self._lock is None:
                return self.fn(messages, request.observation), None
            with self._lock:
                return self.fn(messages, request.observation), None
        except KeyboardInterrupt:  # a CancelledError in this thread is the function's own
            raise
        except BaseException as exc:  # SystemExit included: see STOPS_THE_RUN
            return None, exc

    def _messages(self, request: ChatRequest) -> list[dict[str, Any]]:
        """A copy of the messages the function may keep or change; images decoded."""
        store = self.images
        if store is None:
            return [{**m} for m in request.messages]
        return map_image_parts(
            request.messages,
            lambda view: {"type": "image", "view": view, "image": store.image(view)},
        )
