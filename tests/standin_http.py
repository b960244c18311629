"""What the tests' stand-in Hubs share (tests/hubupload.py: push's; tests/test_download.py: the
download's): a threaded HTTP server on a free port of 127.0.0.1, served from a daemon thread so
that a test never waits on it, and the git blob id the Hub gives as a file's oid.

Each stand-in keeps its own record of requests, so the handlers log nothing; a handler reaches
its stand-in as `self.server.owner`.
"""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 (huggingface_hub keeps its connections open), silent: the stand-in's own record
    is what the tests read."""

    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the stand-in records the requests it cares about."""


def start(handler: type[BaseHTTPRequestHandler], owner: object) -> tuple[ThreadingHTTPServer, str]:
    """`handler` served on a free port of 127.0.0.1 until `stop`, each request in a daemon
    thread; the server carries `owner` (as `.owner`) for the handlers. Returns the server and
    its endpoint, `http://127.0.0.1:PORT`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.owner = owner  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host}:{port}"


def stop(server: ThreadingHTTPServer) -> None:
    """Stop serving and free the port (requests still in their threads are not waited for)."""
    server.shutdown()
    server.server_close()


def git_sha1(data: bytes) -> str:
    """The git blob id, which the Hub gives as a regular file's oid."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
