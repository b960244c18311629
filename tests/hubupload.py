"""A stand-in Hub on 127.0.0.1 that takes uploads: the requests huggingface_hub (2.x) sends for
`HfApi.create_repo` and `HfApi.create_commit` (read from its `hf_api.py` and `_commit_api.py`):

- `POST /api/repos/create` {name, organization, type, visibility?} → 200 {url}, 409 when the
  repo exists (with its url, which the library reads and goes on), 403 when `may_create` is off;
- `GET /api/datasets/{repo}[/revision/{rev}]` → {id, sha, private} (the library asks it after a
  refused create, and when a commit would change nothing);
- `POST /api/validate-yaml` {content, repoType} → the README's front matter parsed as YAML,
  400 with the parser's message when it is not;
- `GET /api/datasets/{repo}/tree/{rev}` and `HEAD`/`GET /datasets/{repo}/resolve/{rev}/{path}`
  → what the repo holds (the push reads earlier runs back for the card);
- `POST /api/datasets/{repo}/preupload/{rev}` {files: [{path, sample, size}]} → every file
  "regular" (its bytes inline in the commit), with the git blob id of the file the repo holds
  under that path, so that the library leaves out what did not change;
- `POST /api/datasets/{repo}/commit/{rev}` (NDJSON: a header, then one `file` line per file,
  base64, and one `deletedFile` line per file deleted) → the files stored and deleted, the
  commit recorded, {commitUrl, commitOid}; a header whose `parentCommit` is not the repo's
  head (another commit came in since the pusher read it) → the Hub's 412, "A commit has
  happened since. Please refresh and try again." (huggingface_hub's own tests check it), and
  nothing written.

`before_commit`: callables run, one per commit request, before it is answered, each making
another commit (`UploadHub.apply`) as a second pusher's would land between a push's reading of
the repo and its commit: two pushes at once, in a fixed order, without timing.

Every request must carry `Authorization: Bearer <token>`; any other token gets the Hub's 401.
`repos` holds what each repo holds now; `commits` every commit, in order.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote, urlsplit

import yaml

from standin_http import QuietHandler, git_sha1, start, stop

TOKEN = "hf_standin_write_token"


@dataclass
class Repo:
    private: bool
    files: dict[str, bytes] = field(default_factory=dict)
    sha: str = "0" * 40


@dataclass
class Commit:
    repo: str
    summary: str
    #: The paths the commit sent (the library leaves out files the repo holds unchanged).
    paths: list[str]
    #: The paths the commit deleted.
    deleted: list[str] = field(default_factory=list)


class _Handler(QuietHandler):
    """Every request to `UploadHub.answer` (its record: `UploadHub.requests`)."""

    def do_GET(self) -> None:
        self.server.owner.answer(self, None)

    def do_HEAD(self) -> None:
        self.server.owner.answer(self, None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.server.owner.answer(self, self.rfile.read(length))


class UploadHub:
    """Dataset repos in memory, written the way the Hub's commit API writes them."""

    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.commits: list[Commit] = []
        self.requests: list[str] = []
        self.may_create = True
        self.validated: list[dict[str, Any]] = []
        #: A body sent (200, as JSON) instead of the answer to a request whose path holds the
        #: key: a proxy's page or JSON of another shape where the Hub's answer should be.
        self.garbage: dict[str, bytes] = {}
        #: Run (and removed), one per commit request, before it is answered: another
        #: pusher's commit landing between a push's reading of the repo and its commit.
        self.before_commit: list[Callable[[UploadHub], None]] = []
        self.lock = threading.Lock()
        self.server, self.endpoint = start(_Handler, self)

    def close(self) -> None:
        stop(self.server)

    def answer(self, h: BaseHTTPRequestHandler, body: bytes | None) -> None:
        path = unquote(urlsplit(h.path).path)
        with self.lock:
            self.requests.append(f"{h.command} {path}")
            if h.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self.send(
                    h,
                    401,
                    {"error": "Invalid credentials in Authorization header"},
                    message="Invalid credentials in Authorization header",
                )
            for key, junk in self.garbage.items():
                if key in path:
                    return self.send_bytes(h, 200, junk)
            if h.command == "POST" and path == "/api/repos/create":
                return self.create(h, json.loads(body or b"{}"))
            if h.command == "POST" and path == "/api/validate-yaml":
                return self.validate(h, json.loads(body or b"{}"))
            if path.startswith("/datasets/") and "/resolve/" in path:
                return self.resolve(h, path)
            parts = path.removeprefix("/api/datasets/").split("/")
            repo_id = "/".join(parts[:2])
            repo = self.repos.get(repo_id)
            if not path.startswith("/api/datasets/") or repo is None:
                return self.send(h, 404, {"error": "Repository not found"}, code="RepoNotFound")
            action = parts[2] if len(parts) > 2 else ""
            if h.command == "GET" and action in ("", "revision"):
                return self.send(h, 200, {"id": repo_id, "sha": repo.sha, "private": repo.private})
            if h.command == "GET" and action == "tree":
                return self.send(
                    h,
                    200,
                    [
                        {"type": "file", "path": name, "size": len(data), "oid": git_sha1(data)}
                        for name, data in sorted(repo.files.items())
                    ],
                )
            if h.command == "POST" and action == "preupload":
                return self.preupload(h, repo, json.loads(body or b"{}"))
            if h.command == "POST" and action == "commit":
                return self.commit(h, repo_id, repo, body or b"")
            return self.send(h, 404, {"error": "no such route"}, code="EntryNotFound")

    def resolve(self, h: BaseHTTPRequestHandler, path: str) -> None:
        """A file's bytes (GET) or its headers (HEAD), as the Hub's resolve URL serves them."""
        repo_id, _, rest = path.removeprefix("/datasets/").partition("/resolve/")
        repo_path = rest.partition("/")[2]
        repo = self.repos.get(repo_id)
        data = repo.files.get(repo_path) if repo is not None else None
        if repo is None or data is None:
            return self.send(h, 404, {"error": "not found"}, code="EntryNotFound")
        h.send_response(200)
        h.send_header("ETag", f'"{git_sha1(data)}"')
        h.send_header("X-Repo-Commit", repo.sha)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command == "GET":
            h.wfile.write(data)

    def create(self, h: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
        repo_id = f"{payload['organization']}/{payload['name']}"
        assert payload.get("type") == "dataset", payload
        url = f"{self.endpoint}/datasets/{repo_id}"
        if repo_id in self.repos:  # the Hub's 409 names the repo's URL too (the library reads it)
            return self.send(h, 409, {"error": "You already created this dataset repo", "url": url})
        if not self.may_create:
            return self.send(h, 403, {"error": "no"}, message="You don't have the rights")
        self.repos[repo_id] = Repo(private=payload.get("visibility") == "private")
        return self.send(h, 200, {"url": url, "name": repo_id})

    def validate(self, h: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
        content = payload["content"]
        head, sep, _ = content.partition("\n---\n")
        if not (content.startswith("---\n") and sep):
            return self.send(h, 400, {"errors": [{"message": "no YAML front matter"}]})
        try:
            meta = yaml.safe_load(head.removeprefix("---\n"))
        except yaml.YAMLError as exc:
            return self.send(h, 400, {"errors": [{"message": str(exc)}]})
        if not isinstance(meta, dict):
            return self.send(h, 400, {"errors": [{"message": "front matter is not a mapping"}]})
        self.validated.append(meta)
        return self.send(h, 200, {"errors": [], "warnings": []})

    def preupload(self, h: BaseHTTPRequestHandler, repo: Repo, payload: dict[str, Any]) -> None:
        files = []
        for entry in payload["files"]:
            held = repo.files.get(entry["path"])
            files.append(
                {
                    "path": entry["path"],
                    "uploadMode": "regular",
                    "shouldIgnore": False,
                    "oid": git_sha1(held) if held is not None else None,
                }
            )
        return self.send(h, 200, {"files": files, "commitOid": repo.sha})

    def commit(self, h: BaseHTTPRequestHandler, repo_id: str, repo: Repo, body: bytes) -> None:
        items = [json.loads(line) for line in body.splitlines() if line.strip()]
        assert items[0]["key"] == "header", items[0]
        if self.before_commit:
            self.before_commit.pop(0)(self)
        parent = items[0]["value"].get("parentCommit")
        if parent is not None and parent != repo.sha:
            return self.send(
                h, 412, {"error": "A commit has happened since. Please refresh and try again."}
            )
        added, deleted = {}, []
        for item in items[1:]:
            if item["key"] == "deletedFile":
                deleted.append(item["value"]["path"])
                continue
            assert item["key"] == "file" and item["value"]["encoding"] == "base64", item["key"]
            added[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
        self.apply(repo_id, items[0]["value"]["summary"], added, deleted)
        url = f"{self.endpoint}/datasets/{repo_id}/commit/{repo.sha}"
        return self.send(h, 200, {"commitUrl": url, "commitOid": repo.sha})

    def apply(
        self, repo_id: str, summary: str, added: dict[str, bytes], deleted: Sequence[str] = ()
    ) -> None:
        """One commit to `repo_id`: `deleted` removed (the Hub refuses a file it does not
        hold), `added` written, the commit recorded and the repo's head moved."""
        repo = self.repos[repo_id]
        for path in deleted:
            del repo.files[path]
        repo.files.update(added)
        self.commits.append(Commit(repo_id, summary, list(added), list(deleted)))
        repo.sha = hashlib.sha1(f"{repo_id}:{len(self.commits)}".encode()).hexdigest()

    def send(self, h: BaseHTTPRequestHandler, status: int, obj: Any, **headers: str | None) -> None:
        """`obj` as JSON; `code` and `message` as in `send_bytes`."""
        self.send_bytes(h, status, json.dumps(obj).encode(), **headers)

    def send_bytes(
        self,
        h: BaseHTTPRequestHandler,
        status: int,
        payload: bytes,
        *,
        code: str | None = None,
        message: str | None = None,
    ) -> None:
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        if code:
            h.send_header("X-Error-Code", code)
        if message:
            h.send_header("X-Error-Message", message)
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(payload)


def serve() -> Iterator[UploadHub]:
    """A fixture's body: the stand-in, closed afterwards."""
    hub = UploadHub()
    try:
        yield hub
    finally:
        hub.close()
