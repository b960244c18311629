"""`data download`: the official test data from the Hub, in the layout the loader reads.

The dataset repo keeps the test data under `test/`: `<stem>_preprocessed.jsonl` files and zip
archives of images. They become `<dir>/<stem>_preprocessed.jsonl` and the archives' members
under `<dir>`, which is where the records' `image_template`s point.

The archives are large and huggingface_hub (2.x) restarts an interrupted download from byte 0
on the next call, so the transfer is ours: the library resolves the commit, lists the files and
reads each file's ETag/size, and its `http_get` streams the bytes, but into a partial file that
we keep between runs and continue with a Range request from its size. The state lives in
`<dir>/.proactivebench/`: `partial/` (downloads in progress, named by ETag so that a file
changed upstream never continues a stale prefix) and `done/` (one marker per finished file,
recording its ETag, size and, for an archive, the files it extracted).

huggingface_hub is imported inside functions only: its endpoint (`HF_ENDPOINT`) is fixed at
import, and importing this module must not fix it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlsplit

from proactivebench.core.errors import DownloadError, hub_answer
from proactivebench.core.paths import cache_root, open_to_write, refuse_link, write_whole
from proactivebench.core.texts import dumps, loads
from proactivebench.data.directory import SUFFIX
from proactivebench.data.validate import DatasetCheck, validate_dataset

if TYPE_CHECKING:
    from rich.console import Console

OFFICIAL_REPO = "tdemin16/ProactiveBench"
REPO_TYPE = "dataset"
REMOTE_FOLDER = "test"
ARCHIVE_SUFFIX = ".zip"
#: Inside the data dir: partial downloads, completion markers and the lock.
STATE_DIR = ".proactivebench"
PARTIAL_SUFFIX = ".incomplete"

#: `on_progress(label, bytes_done, bytes_total)`: absolute counts, so a restarted transfer
#: (a server that ignores Range) simply moves the bar back.
ProgressCallback = Callable[[str, int, int | None], None]

_SHA256 = re.compile(r"[0-9a-f]{64}")
_DRIVE = re.compile(r"^[A-Za-z]:")


def default_data_dir() -> Path:
    """Where the data goes without `--dir`.

    The user cache rather than the working directory: the data is large, can always be fetched
    again, and one copy serves every checkout and run.
    """
    return cache_root() / "official"


@dataclass(frozen=True)
class RemoteFile:
    """One file of the repo's test folder, as the Hub describes it at the resolved commit."""

    repo_path: str
    #: Path under the data dir (the `test/` prefix dropped).
    name: str
    size: int
    etag: str
    #: Where to GET the bytes (the Hub URL or the CDN location it redirects to).
    url: str
    headers: dict[str, str] = field(compare=False)

    @property
    def is_archive(self) -> bool:
        return self.name.lower().endswith(ARCHIVE_SUFFIX)


@dataclass
class DownloadReport:
    """What a download did, and what the validation of the result found."""

    data_dir: Path
    repo_id: str
    commit: str
    fetched: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    extracted: list[str] = field(default_factory=list)
    #: Orphaned partial downloads that were deleted.
    cleaned: list[str] = field(default_factory=list)
    check: DatasetCheck = field(default_factory=DatasetCheck)

    def summary(self) -> str:
        parts = [f"{len(self.fetched)} file(s) downloaded"]
        if self.skipped:
            parts.append(f"{len(self.skipped)} already complete")
        if self.extracted:
            parts.append(f"{len(self.extracted)} archive(s) extracted")
        if self.cleaned:
            parts.append(f"{len(self.cleaned)} stale partial download(s) removed")
        return ", ".join(parts)


def human_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


# --- which repo files, and where they go ------------------------------------------------


def _unsafe(name: str) -> bool:
    """A path that could land outside the folder it is joined to."""
    posix = name.replace("\\", "/")
    return (
        not posix
        or posix.startswith("/")
        or bool(_DRIVE.match(posix))
        or ".." in PurePosixPath(posix).parts
    )


def local_name(repo_path: str) -> str | None:
    """The path under the data dir of a repo file, or None for a file we do not fetch.

    The loader reads `<dir>/<stem>_preprocessed.jsonl` and images relative to `<dir>`, so the
    `test/` prefix goes. Only top-level JSONL files (where the loader looks) and zip archives
    are fetched; anything else under `test/` is not part of the layout.
    """
    prefix = REMOTE_FOLDER + "/"
    if not repo_path.startswith(prefix):
        return None
    name = repo_path[len(prefix) :]
    if _unsafe(name):
        raise DownloadError(f"refusing a repo file with an unsafe path: {repo_path!r}")
    if name.endswith(SUFFIX) and "/" not in name:
        return name
    if name.lower().endswith(ARCHIVE_SUFFIX):
        return name
    return None


def _flat(name: str) -> str:
    """One file name for a (possibly nested) repo path, for the state folder."""
    return name.replace("/", "__")


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc


# --- talking to the Hub -------------------------------------------------------------------


def _endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def _hub_answer(what: str) -> AbstractContextManager[None]:
    """huggingface_hub reading the Hub's answer about `what` (`errors.hub_answer`): a body
    that is not the Hub's fails inside the library as a ValueError, TypeError, KeyError or
    AttributeError, told as one `DownloadError`. The library's own errors (HTTP statuses, a
    bad repo id) pass on."""
    from huggingface_hub import errors

    kinds = (ValueError, TypeError, KeyError, AttributeError)
    return hub_answer(_endpoint(), what, DownloadError, kinds, (errors.HFValidationError,))


def _resolve_commit(repo_id: str, revision: str, token: str | bool | None) -> str:
    """Pin the revision to one commit, so every file comes from the same snapshot."""
    from huggingface_hub import HfApi

    with _hub_answer(f"revision {revision!r} of {repo_id}"):
        info = HfApi().dataset_info(repo_id, revision=revision, token=token)
        sha = info.sha
    if not sha:
        raise DownloadError(f"{_endpoint()} did not say which commit {revision!r} of {repo_id} is")
    return sha


def _list_test_files(repo_id: str, commit: str, token: str | bool | None) -> list[tuple[str, int]]:
    """(repo path, size) of every file under `test/` at the commit."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    with _hub_answer(f"the files of {repo_id}/{REMOTE_FOLDER}"):
        tree = HfApi().list_repo_tree(
            repo_id,
            path_in_repo=REMOTE_FOLDER,
            recursive=True,
            revision=commit,
            repo_type=REPO_TYPE,
            token=token,
        )
        files = [(e.path, e.size) for e in tree if isinstance(e, RepoFile)]
        for path, size in files:  # what the sizes and names are used for needs these types
            if not isinstance(path, str) or isinstance(size, bool) or not isinstance(size, int):
                raise TypeError(f"a file of path {path!r} and size {size!r}")
            if size < 0:
                raise ValueError(f"a file of path {path!r} and size {size!r}")
    return sorted(files)


def _describe(
    repo_id: str, commit: str, repo_path: str, name: str, listed_size: int, token: str | bool | None
) -> RemoteFile:
    """ETag, size and download location of one file, from a HEAD request on its Hub URL."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.utils import build_hf_headers

    url = hf_hub_url(repo_id, repo_path, repo_type=REPO_TYPE, revision=commit)
    meta = get_hf_file_metadata(url, token=token, retry_on_errors=True)
    if meta.commit_hash is None or meta.etag is None:
        raise DownloadError(
            f"{url} answered without the X-Repo-Commit/ETag headers: {_endpoint()} does not "
            "look like a Hugging Face Hub (check HF_ENDPOINT)"
        )
    headers = build_hf_headers(token=token)
    # Byte ranges must count the stored bytes, not a compressed rendition of them.
    headers["Accept-Encoding"] = "identity"
    if _origin(meta.location) != _origin(url):
        headers.pop("authorization", None)  # a signed CDN URL: the token stays with the Hub
    size = meta.size if meta.size is not None else listed_size
    return RemoteFile(repo_path, name, size, meta.etag, meta.location, headers)


# --- state between runs -------------------------------------------------------------------


class _State:
    """Partial downloads and completion markers of one data dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.partial_dir = root / STATE_DIR / "partial"
        self.done_dir = root / STATE_DIR / "done"

    def make(self) -> None:
        self.partial_dir.mkdir(parents=True, exist_ok=True)
        self.done_dir.mkdir(parents=True, exist_ok=True)

    def partial(self, remote: RemoteFile) -> Path:
        """Named by ETag: a file changed upstream gets a new partial, never a stale prefix."""
        tag = re.sub(r"[^0-9A-Za-z]", "", remote.etag)[:64]
        return self.partial_dir / f"{_flat(remote.name)}.{tag}{PARTIAL_SUFFIX}"

    def marker(self, name: str) -> Path:
        return self.done_dir / f"{_flat(name)}.json"

    def read_marker(self, name: str) -> dict[str, Any] | None:
        try:
            data = loads(self.marker(name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def write_marker(self, remote: RemoteFile, commit: str, files: list[str] | None) -> None:
        data: dict[str, Any] = {"name": remote.name, "etag": remote.etag, "size": remote.size}
        data["commit"] = commit
        if files is not None:
            data["files"] = files
        write_whole(self.marker(remote.name), dumps(data))

    def is_done(self, remote: RemoteFile) -> bool:
        """Complete with this ETag and size, and its result still on disk.

        For an archive that means every file it extracted is still there; otherwise it is
        fetched and extracted again (the archive itself is not kept).
        """
        marker = self.read_marker(remote.name)
        if not marker or marker.get("etag") != remote.etag or marker.get("size") != remote.size:
            return False
        if remote.is_archive:
            files = marker.get("files")
            return isinstance(files, list) and all((self.root / f).is_file() for f in files)
        target = self.root / remote.name
        return target.is_file() and target.stat().st_size == remote.size

    def clean_orphans(self, keep: set[Path]) -> list[str]:
        """Delete partial downloads no file of this run will continue."""
        removed = []
        for path in sorted(self.partial_dir.glob(f"*{PARTIAL_SUFFIX}")):
            if path not in keep:
                path.unlink(missing_ok=True)
                removed.append(path.name)
        return removed


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One download per data dir: two runs appending to one partial file would corrupt it."""
    from filelock import FileLock, Timeout

    refuse_link(root / STATE_DIR / "lock")  # filelock opens it by name, with O_TRUNC
    lock = FileLock(str(root / STATE_DIR / "lock"), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise DownloadError(f"another download is writing to {root}; wait for it to end") from None
    try:
        yield
    finally:
        lock.release()


# --- bytes --------------------------------------------------------------------------------


class _PartialFile:
    """The partial file as `http_get` sees it: every chunk reaches the disk and is reported.

    Each chunk is flushed at once, so whatever a killed run received is on disk for the next
    run to continue from, whatever the chunk size and the write buffer's.
    """

    def __init__(self, raw: BinaryIO, report: Callable[[int], None]) -> None:
        self._raw = raw
        self._report = report

    def write(self, data: bytes) -> int:
        written = self._raw.write(data)
        self._raw.flush()
        self._report(self._raw.tell())
        return written

    def tell(self) -> int:
        return self._raw.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._raw.seek(offset, whence)

    def truncate(self, size: int | None = None) -> int:
        result = self._raw.truncate(size)
        self._report(self._raw.tell())
        return result

    def flush(self) -> None:
        self._raw.flush()


def _check_space(folder: Path, needed: int) -> None:
    free = shutil.disk_usage(folder).free
    if needed > free:
        raise DownloadError(
            f"not enough disk space in {folder}: {human_size(needed)} needed, "
            f"{human_size(free)} free"
        )


def _fetch(remote: RemoteFile, target: Path, on_progress: ProgressCallback | None) -> None:
    """Bring `target` to the remote file's full size, continuing from what is already there."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import tqdm

    have = target.stat().st_size if target.exists() else 0
    if have > remote.size:  # cannot be a prefix of this file
        target.unlink()
        have = 0
    if have == remote.size:
        return
    _check_space(target.parent, remote.size - have)

    def report(done: int) -> None:
        if on_progress is not None:
            on_progress(remote.name, done, remote.size)

    # With our own callback drawing progress, the library's bar is switched off.
    bar = None if on_progress is None else partial(tqdm, disable=True)
    with open(open_to_write(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as raw:
        report(have)
        try:
            http_get(
                remote.url,
                _PartialFile(raw, report),  # type: ignore[arg-type]
                resume_size=have,
                headers=remote.headers,
                expected_size=remote.size,
                displayed_filename=remote.name,
                tqdm_class=bar,  # type: ignore[arg-type]
            )
        except HfHubHTTPError:
            raise
        except httpx2.TransportError as exc:
            kept = human_size(raw.tell())
            raise DownloadError(
                f"connection lost while downloading {remote.name} ({exc}); {kept} of "
                f"{human_size(remote.size)} kept, rerun to resume"
            ) from None
        except OSError as exc:
            if exc.errno is not None:
                raise  # the disk, reported as such by the caller
            raise DownloadError(
                f"download of {remote.name} stopped at {human_size(raw.tell())} of "
                f"{human_size(remote.size)}; rerun to resume"
            ) from None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _verify(remote: RemoteFile, path: Path) -> None:
    """Size always; content too when the ETag is a SHA-256 (LFS files, i.e. the archives).

    A file assembled from several runs is exactly where a silent corruption would hide.
    A mismatching file is deleted: resuming it could never produce the right bytes.
    """
    size = path.stat().st_size
    if size != remote.size:
        path.unlink()
        raise DownloadError(
            f"{remote.name}: got {size} bytes, the Hub announced {remote.size}; the partial "
            "file was deleted, rerun to download it again"
        )
    if _SHA256.fullmatch(remote.etag) and (got := _sha256(path)) != remote.etag:
        path.unlink()
        raise DownloadError(
            f"{remote.name}: SHA-256 {got[:12]}… does not match the Hub's {remote.etag[:12]}…; "
            "the file was deleted, rerun to download it again"
        )


# --- archives -----------------------------------------------------------------------------


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def safe_members(zf: zipfile.ZipFile, root: Path, label: str) -> list[zipfile.ZipInfo]:
    """Every member of the archive, after checking that none can write outside `root`.

    Refused: absolute paths, `..`, symbolic links, our own state folder, and paths that an
    existing link inside `root` would lead out of. All members are checked before anything
    is written, so a hostile archive leaves nothing behind.
    """
    base = root.resolve()
    members = []
    for info in zf.infolist():
        name = info.filename
        if _is_symlink(info):
            problem = "is a symbolic link"
        elif _unsafe(name):
            problem = "has an absolute path or '..'"
        elif PurePosixPath(name.replace("\\", "/")).parts[0] == STATE_DIR:
            problem = f"writes into {STATE_DIR}/"
        elif not (root / name.replace("\\", "/")).resolve().is_relative_to(base):
            problem = "leads outside the data directory"
        else:
            members.append(info)
            continue
        raise DownloadError(f"refusing archive {label}: member {name!r} {problem}")
    return members


def extract_archive(
    archive: Path, root: Path, label: str, on_progress: ProgressCallback | None = None
) -> list[str]:
    """Unpack a zip archive into `root`; the paths of the files written, for the marker."""
    written: list[str] = []
    try:
        with zipfile.ZipFile(archive) as zf:
            members = safe_members(zf, root, label)
            total = sum(m.file_size for m in members if not m.is_dir())
            _check_space(root, total)
            done = 0
            for info in members:
                relative = info.filename.replace("\\", "/")
                target = root / relative
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                created = open_to_write(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                with zf.open(info) as src, open(created, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                written.append(relative.rstrip("/"))
                done += info.file_size
                if on_progress is not None:
                    on_progress(f"{label} (extracting)", done, total)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        raise DownloadError(f"corrupt archive {label}: {exc}") from None
    return written


# --- the whole download -------------------------------------------------------------------


@contextmanager
def _hub_errors(repo_id: str, revision: str) -> Iterator[None]:
    """The library's and the OS's exceptions as one `DownloadError` line each."""
    import httpx2
    from huggingface_hub import errors

    endpoint = _endpoint()
    try:
        yield
    except DownloadError:
        raise
    except errors.OfflineModeIsEnabled:
        raise DownloadError("HF_HUB_OFFLINE is set: unset it to download") from None
    except errors.RepositoryNotFoundError:
        raise DownloadError(
            f"dataset {repo_id} not found on {endpoint} (or it is private or gated: log in with "
            "`hf auth login`)"
        ) from None
    except errors.RevisionNotFoundError:
        raise DownloadError(f"revision {revision!r} not found in dataset {repo_id}") from None
    except errors.RemoteEntryNotFoundError as exc:
        raise DownloadError(f"not found in {repo_id}@{revision}: {exc.response.url}") from None
    except errors.HfHubHTTPError as exc:
        response = exc.response
        what = f"HTTP {response.status_code} for {response.url}" if response is not None else exc
        raise DownloadError(f"{endpoint} answered {what}; try again later") from None
    except errors.HFValidationError as exc:
        raise DownloadError(f"invalid repo or revision: {exc}") from None
    except httpx2.TransportError as exc:
        raise DownloadError(
            f"cannot reach {endpoint} ({exc or type(exc).__name__}); check the network or "
            "HF_ENDPOINT"
        ) from None
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        raise DownloadError(f"disk error: {exc.strerror or exc}{where}") from None


def _process(
    remote: RemoteFile,
    state: _State,
    commit: str,
    report: DownloadReport,
    on_progress: ProgressCallback | None,
) -> None:
    """Fetch one file, verify it, and put it (or its archive's members) in place."""
    part = state.partial(remote)
    _fetch(remote, part, on_progress)
    _verify(remote, part)
    report.fetched.append(remote.name)
    if not remote.is_archive:
        target = state.root / remote.name
        os.replace(part, target)
        state.write_marker(remote, commit, None)
        return
    try:
        files = extract_archive(part, state.root, remote.name, on_progress)
    except DownloadError as exc:
        part.unlink(missing_ok=True)  # a corrupt archive must not be reused as complete
        raise DownloadError(f"{exc}; the archive was deleted") from None
    state.write_marker(remote, commit, files)
    part.unlink(missing_ok=True)
    report.extracted.append(remote.name)


def _download(
    root: Path,
    repo_id: str,
    revision: str,
    token: str | bool | None,
    on_progress: ProgressCallback | None,
) -> DownloadReport:
    commit = _resolve_commit(repo_id, revision, token)
    wanted = [
        (path, name, size)
        for path, size in _list_test_files(repo_id, commit, token)
        if (name := local_name(path)) is not None
    ]
    if not any(name.endswith(SUFFIX) for _, name, _ in wanted):
        raise DownloadError(
            f"no {REMOTE_FOLDER}/*{SUFFIX} files in {repo_id}@{commit[:12]}: not a ProactiveBench "
            "dataset repo?"
        )
    remotes = [_describe(repo_id, commit, p, n, s, token) for p, n, s in wanted]
    state = _State(root)
    report = DownloadReport(root, repo_id, commit)
    todo = [r for r in remotes if not state.is_done(r)]
    report.skipped = [r.name for r in remotes if r not in todo]
    report.cleaned = state.clean_orphans({state.partial(r) for r in todo})
    # The small JSONL files first: a broken connection later still leaves them usable.
    for remote in sorted(todo, key=lambda r: (r.is_archive, r.name)):
        _process(remote, state, commit, report, on_progress)
    return report


def download_dataset(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    repo_id: str = OFFICIAL_REPO,
    revision: str | None = None,
    token: str | bool | None = None,
    on_progress: ProgressCallback | None = None,
) -> DownloadReport:
    """Download the official test data into `data_dir` and validate the result.

    Safe to rerun: finished files are skipped, interrupted archives continue where they
    stopped. Network, Hub, archive and disk failures raise `DownloadError`; validation
    problems are returned in the report (the data may be usable apart from them).
    """
    root = Path(data_dir) if data_dir is not None else default_data_dir()
    if revision is None:
        revision = "main"
    elif not revision.strip():  # `--revision "$REV"` with REV unset: not a wish for main
        raise DownloadError(
            f"revision {revision!r} names no branch, tag or commit: name one, or leave it out "
            "for main"
        )
    for folder in (root, *root.parents):  # told by name, not as "disk error: Not a directory"
        if folder.is_file():
            raise DownloadError(f"cannot use {root} as the data directory: {folder} is a file")
    with _hub_errors(repo_id, revision):
        state = _State(root)
        state.make()
        with _locked(root):
            report = _download(root, repo_id, revision, token, on_progress)
    report.check = validate_dataset(root)
    return report


@contextmanager
def byte_progress(console: Console) -> Iterator[ProgressCallback | None]:
    """A rich progress display fed by `on_progress`, one bar per file.

    Yields None when `HF_HUB_DISABLE_PROGRESS_BARS` (or the library's switch) turns bars off,
    so the library's own, equally disabled, bars are used.
    """
    from huggingface_hub.utils import are_progress_bars_disabled
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    if are_progress_bars_disabled():
        yield None
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console) as progress:
        tasks: dict[str, TaskID] = {}

        def update(label: str, done: int, total: int | None) -> None:
            if label not in tasks:
                tasks[label] = progress.add_task(label, total=total)
            progress.update(tasks[label], completed=done, total=total)

        yield update
