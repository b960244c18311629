"""`data download` against a stand-in Hub on 127.0.0.1: layout, resume, errors, safe unzip.

Downloads run in subprocesses: huggingface_hub fixes its endpoint when it is imported, so
`HF_ENDPOINT` must be in the environment of a fresh interpreter. The stand-in implements what
huggingface_hub asks of the Hub (revision info, tree listing, HEAD/GET resolve with ETag,
X-Repo-Commit, Content-Length, Range -> 206) and logs every request, so the tests can assert
which bytes a rerun asked for.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from huggingface_hub.constants import DOWNLOAD_CHUNK_SIZE

from clirun import run_cli
from handmade import coco, qd, rod, write_dataset
from proactivebench.data.download import (
    STATE_DIR,
    DownloadError,
    default_data_dir,
    download_dataset,
    extract_archive,
)
from standin_http import QuietHandler, git_sha1, start, stop

REPO = "tdemin16/ProactiveBench"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
RECORDS = {"ROD": [rod(0), rod(1, first_image=0)], "QD": [qd(0)], "COCO": [coco(0, "left")]}
ROD_FILE = "Realistic-Occlusion-Dataset_preprocessed.jsonl"
JSONL = [ROD_FILE, "QuickDraw_preprocessed.jsonl", "coco2014_preprocessed.jsonl"]
ARCHIVES = ["COCO.zip", "QD.zip", "ROD.zip"]


# --- the stand-in Hub ---------------------------------------------------------------------


@dataclass
class Fault:
    """On one GET: send `after` body bytes, wait for `resume` if given, then hang up."""

    after: int
    resume: threading.Event | None = None


@dataclass
class Request:
    method: str
    path: str
    range: str | None


class _Handler(QuietHandler):
    """GET and HEAD to `StandIn.answer` (its log: `StandIn.log`)."""

    def do_GET(self) -> None:
        self.server.owner.answer(self, body=True)

    def do_HEAD(self) -> None:
        self.server.owner.answer(self, body=False)


class StandIn:
    """A dataset repo in a local folder, served the way the Hub serves it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log: list[Request] = []
        self.faults: dict[str, list[Fault]] = {}
        self.etags: dict[str, str] = {}
        #: What to send instead of the JSON of a "tree" or "revision" answer (a proxy's page...).
        self.garbage: dict[str, bytes] = {}
        self.server, self.endpoint = start(_Handler, self)

    def close(self) -> None:
        for faults in self.faults.values():
            for fault in faults:
                if fault.resume is not None:
                    fault.resume.set()
        stop(self.server)

    def gets(self, repo_path: str, since: int = 0) -> list[Request]:
        """GET requests for the bytes of one file, from log entry `since` on."""
        suffix = f"/resolve/{COMMIT}/{repo_path}"
        return [r for r in self.log[since:] if r.method == "GET" and r.path.endswith(suffix)]

    def answer(self, h: BaseHTTPRequestHandler, body: bool) -> None:
        path = unquote(urlsplit(h.path).path)
        self.log.append(Request(h.command, path, h.headers.get("Range")))
        api = f"/api/datasets/{REPO}/"
        resolve = f"/datasets/{REPO}/resolve/"
        if path.startswith(api + "revision/"):
            if path.removeprefix(api + "revision/") not in ("main", COMMIT):
                return self.error(h, "RevisionNotFound", body)
            return self.json(h, {"id": REPO, "sha": COMMIT}, body)
        if path.startswith(api + "tree/"):
            _, _, folder = path.removeprefix(api + "tree/").partition("/")
            return self.tree(h, folder, body)
        if path.startswith(resolve):
            _, _, repo_path = path.removeprefix(resolve).partition("/")
            return self.file(h, repo_path, body)
        return self.error(h, "RepoNotFound", body)

    def etag(self, repo_path: str, data: bytes) -> str:
        """Like the Hub: SHA-256 for LFS files (the archives), the git blob id otherwise."""
        if repo_path in self.etags:
            return self.etags[repo_path]
        if repo_path.endswith(".zip"):
            return hashlib.sha256(data).hexdigest()
        return git_sha1(data)

    def tree(self, h: BaseHTTPRequestHandler, folder: str, body: bool) -> None:
        base = self.root / folder
        if not base.is_dir():
            return self.error(h, "EntryNotFound", body)
        entries = []
        for path in sorted(p for p in base.rglob("*") if p.is_file()):
            data = path.read_bytes()
            entry: dict[str, Any] = {
                "type": "file",
                "path": path.relative_to(self.root).as_posix(),
                "size": len(data),
                "oid": git_sha1(data),
            }
            if path.suffix == ".zip":
                entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data)}
                entry["lfs"]["pointerSize"] = 134
            entries.append(entry)
        self.json(h, entries, body)

    def file(self, h: BaseHTTPRequestHandler, repo_path: str, body: bool) -> None:
        path = self.root / repo_path
        if not path.is_file():
            return self.error(h, "EntryNotFound", body)
        data = path.read_bytes()
        start = 0
        asked = h.headers.get("Range")
        if asked:
            match = re.fullmatch(r"bytes=(\d+)-", asked)
            assert match, asked
            start = int(match[1])
        h.send_response(206 if asked else 200)
        h.send_header("ETag", f'"{self.etag(repo_path, data)}"')
        h.send_header("X-Repo-Commit", COMMIT)
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("Content-Length", str(len(data) - start))
        if asked:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        h.end_headers()
        if body:
            queued = self.faults.get(repo_path)
            self.send_body(h, data[start:], queued.pop(0) if queued else None)

    def send_body(self, h: BaseHTTPRequestHandler, data: bytes, fault: Fault | None) -> None:
        try:
            h.wfile.write(data if fault is None else data[: fault.after])
            h.wfile.flush()
            if fault is None:
                return
            if fault.resume is not None:
                fault.resume.wait(60)
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            h.close_connection = True  # the client went away (killed): nothing to answer

    def json(self, h: BaseHTTPRequestHandler, obj: Any, body: bool) -> None:
        path = urlsplit(h.path).path
        kind = "tree" if "/tree/" in path else "revision"
        payload = self.garbage[kind] if kind in self.garbage else json.dumps(obj).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        if body:
            h.wfile.write(payload)

    def error(self, h: BaseHTTPRequestHandler, code: str, body: bool) -> None:
        payload = json.dumps({"error": code}).encode()
        h.send_response(404)
        h.send_header("X-Error-Code", code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        if body:
            h.wfile.write(payload)


def make_repo(
    root: Path, *, big: bytes = b"", missing: str | None = None, records: Any = None
) -> Path:
    """A repo like the official one: `test/*_preprocessed.jsonl` and one zip per image folder.

    `big` is added to the ROD archive (stored, i.e. incompressible) so that the archive spans
    more than one of the library's write blocks; `missing` is an image left out of its archive.
    """
    staging = root.parent / f"{root.name}-staging"
    write_dataset(staging, records or RECORDS)
    if missing:
        (staging / missing).unlink()
    test = root / "test"
    test.mkdir(parents=True)
    for jsonl in staging.glob("*_preprocessed.jsonl"):
        shutil.copy(jsonl, test / jsonl.name)
    for folder in sorted(p for p in staging.iterdir() if p.is_dir()):
        with zipfile.ZipFile(test / f"{folder.name}.zip", "w") as zf:
            for path in sorted(folder.rglob("*")):
                zf.write(path, path.relative_to(staging).as_posix())
            if big and folder.name == "ROD":
                zf.writestr("ROD/big.bin", big, compress_type=zipfile.ZIP_STORED)
    (test / "notes.txt").write_text("not part of the layout")
    (root / "README.md").write_text("# stand-in\n")
    return root


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[StandIn]:
    stand_in = StandIn(tmp_path / "repo")
    yield stand_in
    stand_in.close()


def hub_env(endpoint: str, home: Path, *, progress: bool = False) -> dict[str, str]:
    """A fresh interpreter's environment pointing huggingface_hub at `endpoint`, offline-safe."""
    env = dict(os.environ)
    for name in ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_DISABLE_XET"):
        env.pop(name, None)
    env.update(
        HF_ENDPOINT=endpoint,
        HF_HOME=str(home),
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_XET="1",
    )
    if progress:
        env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    else:
        env["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    return env


COMMAND = [sys.executable, "-m", "proactivebench", "data", "download"]


def download(
    endpoint: str, home: Path, *args: str | Path, progress: bool = False
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *map(str, args)],
        env=hub_env(endpoint, home, progress=progress),
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_clean_failure(result: subprocess.CompletedProcess[str], message: str) -> None:
    """Non-zero exit, the message, and no traceback."""
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert message in output, output
    assert "Traceback" not in output, output


def partials(data: Path) -> list[Path]:
    return sorted((data / STATE_DIR).rglob("*.incomplete"))


# --- layout, skip, validation -------------------------------------------------------------


def test_official_layout_then_nothing_twice(
    hub: StandIn, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_repo(hub.root)
    data = tmp_path / "data"
    first = download(hub.endpoint, tmp_path / "hf", "--dir", data)
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"data in {data}" in first.stdout
    assert f"4 records checked, every image present: {data} is valid" in first.stdout
    for name in JSONL:
        assert (data / name).is_file()
    for image in ("ROD/0/ref.png", "ROD/1/3.png", "QD/0/0002.png", "COCO/0.png"):
        assert (data / image).is_file(), image
    assert not (data / "test").exists()
    assert not (data / "notes.txt").exists() and not (data / "README.md").exists()
    assert not list(data.rglob("*.zip")) and not partials(data)
    assert run_cli(["data", "validate", str(data)], capsys)[0] == 0

    # A rerun asks for no bytes at all, and drops a partial no file will continue.
    stale = data / STATE_DIR / "partial" / "OLD.zip.abc123.incomplete"
    stale.write_bytes(b"half")
    mark = len(hub.log)
    second = download(hub.endpoint, tmp_path / "hf", "--dir", data)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "0 file(s) downloaded, 6 already complete" in second.stdout
    assert [r for r in hub.log[mark:] if r.method == "GET" and "/resolve/" in r.path] == []
    assert not stale.exists()

    # An extracted file gone missing: only its archive is fetched and unpacked again.
    (data / "COCO/0.png").unlink()
    mark = len(hub.log)
    third = download(hub.endpoint, tmp_path / "hf", "--dir", data)
    assert third.returncode == 0, third.stdout + third.stderr
    assert (data / "COCO/0.png").is_file()
    fetched = {r.path.rsplit("/", 1)[1] for r in hub.log[mark:] if r.method == "GET"}
    assert "COCO.zip" in fetched and "ROD.zip" not in fetched and "QD.zip" not in fetched


def test_default_dir_and_progress_callback(
    hub: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_repo(hub.root)
    cache = tmp_path / "cache"
    monkeypatch.setenv("PROACTIVEBENCH_CACHE", str(cache))
    assert default_data_dir() == cache / "official"
    result = download(hub.endpoint, tmp_path / "hf", progress=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (cache / "official" / ROD_FILE).is_file()

    # The library call reports absolute byte counts that end at each file's size.
    script = (
        "import json, sys\n"
        "from proactivebench.data.download import download_dataset\n"
        "last = {}\n"
        "def note(label, done, total):\n"
        "    last[label] = [done, total]\n"
        "download_dataset(sys.argv[1], on_progress=note)\n"
        "print(json.dumps(last))\n"
    )
    data = tmp_path / "lib"
    run = subprocess.run(
        [sys.executable, "-c", script, str(data)],
        env=hub_env(hub.endpoint, tmp_path / "hf"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    last = json.loads(run.stdout)
    expected = {*JSONL, *ARCHIVES, *(f"{a} (extracting)" for a in ARCHIVES)}
    assert set(last) == expected
    assert all(done == total and total > 0 for done, total in last.values()), last


def test_broken_record_is_reported_with_file_line_and_path(hub: StandIn, tmp_path: Path) -> None:
    make_repo(hub.root, missing="ROD/1/ref.png")
    data = tmp_path / "data"
    result = download(hub.endpoint, tmp_path / "hf", "--dir", data)
    assert_clean_failure(result, f"{data / ROD_FILE}:2: image not found: ROD/1/ref.png")
    assert "1 problem(s)" in result.stderr


# --- resume -------------------------------------------------------------------------------


def test_killed_download_resumes_with_a_range_request(hub: StandIn, tmp_path: Path) -> None:
    big = os.urandom(DOWNLOAD_CHUNK_SIZE + (1 << 20))
    make_repo(hub.root, big=big)
    stall = threading.Event()
    hub.faults["test/ROD.zip"] = [Fault(after=DOWNLOAD_CHUNK_SIZE + 4096, resume=stall)]
    data = tmp_path / "data"
    env = hub_env(hub.endpoint, tmp_path / "hf")
    args = [*COMMAND, "--dir", str(data)]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not [p for p in partials(data) if p.stat().st_size >= DOWNLOAD_CHUNK_SIZE]:
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "the partial archive never reached one block"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        stall.set()
        proc.kill() if proc.poll() is None else None
        proc.communicate()
    (partial,) = partials(data)
    kept = partial.stat().st_size
    assert 0 < kept < len(big)
    assert [r.range for r in hub.gets("test/ROD.zip")] == [None]

    mark = len(hub.log)
    result = download(hub.endpoint, tmp_path / "hf", "--dir", data)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is valid" in result.stdout
    assert [r.range for r in hub.gets("test/ROD.zip", mark)] == [f"bytes={kept}-"]
    assert (data / "ROD/big.bin").read_bytes() == big
    assert not partials(data)


def test_dropped_connection_fails_cleanly_then_resumes(hub: StandIn, tmp_path: Path) -> None:
    big = os.urandom(DOWNLOAD_CHUNK_SIZE + (1 << 20))
    make_repo(hub.root, big=big)
    # One drop after a block, then drops with no progress until the library's retries run out.
    drops = [Fault(after=DOWNLOAD_CHUNK_SIZE + 4096)] + [Fault(after=0) for _ in range(5)]
    hub.faults["test/ROD.zip"] = drops
    data = tmp_path / "data"
    first = download(hub.endpoint, tmp_path / "hf", "--dir", data)
    assert_clean_failure(first, "connection lost while downloading ROD.zip")
    assert "rerun to resume" in first.stderr
    assert hub.faults["test/ROD.zip"] == []

    mark = len(hub.log)
    second = download(hub.endpoint, tmp_path / "hf", "--dir", data)
    assert second.returncode == 0, second.stdout + second.stderr
    assert [r.range for r in hub.gets("test/ROD.zip", mark)] == [f"bytes={DOWNLOAD_CHUNK_SIZE}-"]
    assert (data / "ROD/big.bin").read_bytes() == big


# --- errors -------------------------------------------------------------------------------


def test_unreachable_endpoint(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = download(f"http://127.0.0.1:{port}", tmp_path / "hf", "--dir", tmp_path / "data")
    assert_clean_failure(result, f"error: cannot reach http://127.0.0.1:{port}")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        ("tree", b"<html>sign in to the network</html>"),
        ("tree", b'{"not": "a list"}'),
        ("tree", b'[{"type": "file", "path": "test/a.jsonl", "size": "big"}]'),
        ("revision", b"<html>sign in to the network</html>"),
        ("revision", b'["a list"]'),
    ],
)
def test_an_answer_that_is_not_the_hubs_is_one_line(
    hub: StandIn, tmp_path: Path, kind: str, body: bytes
) -> None:
    """A proxy's page or JSON of another shape where the Hub's listing or revision info should
    be: one line naming the endpoint, exit 1, nothing written; never a traceback."""
    make_repo(hub.root)
    hub.garbage[kind] = body
    result = download(hub.endpoint, tmp_path / "hf", "--dir", tmp_path / "data")
    assert_clean_failure(result, f"error: {hub.endpoint} sent an answer that is not the Hub's")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not list((tmp_path / "data").glob("*.jsonl"))


def test_unknown_repo_and_revision(hub: StandIn, tmp_path: Path) -> None:
    make_repo(hub.root)
    data = tmp_path / "data"
    missing = download(hub.endpoint, tmp_path / "hf", "--dir", data, "--repo", "nobody/nothing")
    assert_clean_failure(missing, "dataset nobody/nothing not found")
    revision = download(hub.endpoint, tmp_path / "hf", "--dir", data, "--revision", "v9")
    assert_clean_failure(revision, "revision 'v9' not found in dataset")
    # An empty one (`--revision "$REV"`, REV unset) is refused, not taken for main.
    for empty in ("", " "):
        result = download(hub.endpoint, tmp_path / "hf", "--dir", data, "--revision", empty)
        assert_clean_failure(result, f"revision {empty!r} names no branch, tag or commit")
    assert not data.exists() or not list(data.glob("*.jsonl"))


def test_corrupt_archive_is_reported_and_deleted(hub: StandIn, tmp_path: Path) -> None:
    make_repo(hub.root)
    (hub.root / "test/QD.zip").write_bytes(b"PK\x03\x04" + b"\x00" * 200)
    data = tmp_path / "data"
    result = download(hub.endpoint, tmp_path / "hf", "--dir", data)
    assert_clean_failure(result, "corrupt archive QD.zip")
    assert not partials(data)


def test_checksum_mismatch_is_reported(hub: StandIn, tmp_path: Path) -> None:
    make_repo(hub.root)
    hub.etags["test/COCO.zip"] = "f" * 64
    data = tmp_path / "data"
    result = download(hub.endpoint, tmp_path / "hf", "--dir", data)
    assert_clean_failure(result, "COCO.zip: SHA-256")
    assert not partials(data)


def test_a_second_download_into_the_same_dir_is_refused(hub: StandIn, tmp_path: Path) -> None:
    from filelock import FileLock

    make_repo(hub.root)
    data = tmp_path / "data"
    (data / STATE_DIR).mkdir(parents=True)
    with FileLock(str(data / STATE_DIR / "lock")):
        result = download(hub.endpoint, tmp_path / "hf", "--dir", data)
    assert_clean_failure(result, "another download is writing to")


# --- safe extraction ----------------------------------------------------------------------


def _symlink_member(zf: zipfile.ZipFile) -> None:
    info = zipfile.ZipInfo("ROD/link.png")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    zf.writestr(info, "/etc/passwd")


BAD_MEMBERS = {
    "parent": lambda zf: zf.writestr("../evil.txt", "x"),
    "nested parent": lambda zf: zf.writestr("ROD/../../evil.txt", "x"),
    "absolute": lambda zf: zf.writestr("/tmp/evil.txt", "x"),
    "backslash parent": lambda zf: zf.writestr("..\\evil.txt", "x"),
    "symlink": _symlink_member,
    "state dir": lambda zf: zf.writestr(f"{STATE_DIR}/done/x.json", "{}"),
}


@pytest.mark.parametrize("kind", list(BAD_MEMBERS))
def test_unsafe_members_are_refused_before_anything_is_written(tmp_path: Path, kind: str) -> None:
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ROD/0/ref.png", "fine")
        BAD_MEMBERS[kind](zf)
    root = tmp_path / "data"
    root.mkdir()
    with pytest.raises(DownloadError, match=r"refusing archive bad\.zip: member"):
        extract_archive(archive, root, "bad.zip")
    assert list(root.iterdir()) == []
    assert not (tmp_path / "evil.txt").exists()


def test_a_link_inside_the_data_dir_cannot_lead_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "data"
    root.mkdir()
    (root / "ROD").symlink_to(outside)
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ROD/0/ref.png", "x")
    with pytest.raises(DownloadError, match="leads outside the data directory"):
        extract_archive(archive, root, "a.zip")
    assert list(outside.iterdir()) == []


def test_a_data_dir_that_is_or_lies_in_a_file_is_named(tmp_path: Path) -> None:
    """`--dir FILE` (or a folder under a file): one line naming the file, before any request;
    it was "disk error: Not a directory: FILE/.proactivebench/partial"."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    for target in (afile, afile / "sub"):
        with pytest.raises(DownloadError, match=rf"as the data directory: {afile} is a file$"):
            download_dataset(target)
    assert afile.read_text() == "x"
