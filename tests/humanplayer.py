"""`proactivebench play` in another process, and a scripted person who plays it over HTTP.

The person answers as tests/scripted.py's policies do (the test knows the answer key; the
server never tells it): each answer text is turned into the letter of the option shown, and
every letter pressed is kept, so the run can be compared with `eval --model replay:` of the
same letters. Every response body is kept too, to look for what must never be sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from scripted import Played


@contextlib.contextmanager
def play_process(
    data: Path, out: Path, *flags: str
) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """`proactivebench play` serving on a free port: (process, printed URL, what it printed
    before the URL)."""
    command = [sys.executable, "-m", "proactivebench", "play", "--data", str(data)]
    command += ["--out", str(out), "--no-browser", "--annotator", "ann", *flags]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        seen.append(line)
        if "play in your browser: " in line:
            url = line.split("play in your browser: ", 1)[1].strip()
            break
    else:
        process.wait(timeout=60)
        raise AssertionError("play never printed its URL:\n" + "".join(seen))
    try:
        yield process, url, "".join(seen)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=60)
        process.stdout.close()


def output_of(process: subprocess.Popen[str]) -> str:
    """What the process printed after its URL, once it ended."""
    assert process.stdout is not None
    text = process.stdout.read()
    process.wait(timeout=120)
    return text


class Person:
    """Plays over the JSON API as the page does; `letters` holds what was pressed."""

    def __init__(self, url: str, scripts: Played) -> None:
        parts = urlsplit(url)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.token = parse_qs(parts.query)["token"][0]
        self.client = httpx.Client(base_url=self.base, headers={"X-Token": self.token}, timeout=60)
        self.answers = {(s, i): a for s, i, a in scripts}
        self.letters: dict[tuple[str, int], list[str]] = {}
        self.bodies: list[bytes] = []
        self.version = -1

    def get(self, path: str) -> httpx.Response:
        response = self.client.get(path)
        self.bodies.append(response.content)
        return response

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        response = self.client.post(path, json=body)
        self.bodies.append(response.content)
        return response

    def state(self) -> dict[str, Any]:
        response = self.get(f"/api/state?since={self.version}")
        assert response.status_code == 200, response.text
        state = response.json()
        self.version = state["version"]
        return state

    def letter(self, turn: dict[str, Any]) -> str:
        """The scripted answer of this turn, as the letter of the option that says it."""
        script = self.answers[turn["scenario"], turn["sample_id"]]
        text = script[turn["turn"] - 1]
        for option in turn["options"]:
            if text in (option["letter"], option["text"]):
                return str(option["letter"])
        raise AssertionError(f"{text!r} is none of the options of {turn}")

    def play(self, turns: int | None = None) -> dict[str, Any]:
        """Answer turns until the summary shows (or `turns` answers were given); the last
        state seen."""
        given = 0
        self.version = -1  # the state as it is now, then each change
        while True:
            state = self.state()
            turn = state["turn"]
            if turn is None:
                if state["summary"] is not None:
                    return state
                continue
            if turns is not None and given == turns:
                return state
            self.get(turn["image"]).raise_for_status()
            letter = self.letter(turn)
            response = self.post("/api/answer", {"turn": turn["id"], "letter": letter})
            assert response.status_code == 200, response.text
            self.letters.setdefault((turn["scenario"], turn["sample_id"]), []).append(letter)
            given += 1

    def quit(self) -> None:
        self.post("/api/quit", {}).raise_for_status()

    def played(self) -> Played:
        """The letters pressed, as a replay script."""
        return [(s, i, letters) for (s, i), letters in self.letters.items()]


def never_sent(bodies: list[bytes], forbidden: list[str]) -> None:
    """No response body holds any of the `forbidden` texts."""
    for body in bodies:
        text = body.decode("utf-8", "replace")
        for word in forbidden:
            assert word not in text, f"{word!r} was sent: {text[:300]}"


def json_keys(value: Any) -> set[str]:
    """Every key of a JSON value, at any depth."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in json_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in json_keys(v)}
    return set()


def states(bodies: list[bytes]) -> list[dict[str, Any]]:
    """The state responses among the bodies."""
    found = []
    for body in bodies:
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            value = json.loads(body)
            if isinstance(value, dict) and "version" in value:
                found.append(value)
    return found
