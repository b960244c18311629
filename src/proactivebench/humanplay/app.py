"""The web app a person plays in: static pages and a small JSON API over a `Desk`.

Routes (every `/api/` one needs the session's token, as the `X-Token` header or the `token`
query parameter, compared in constant time):

- `GET /`, `/play.js`, `/play.css`: the page (package data, `humanplay/assets`);
- `GET /api/state?since=V`: the state (the turn waiting for an answer, progress, the last
  episode's outcome, the summary at the end), after waiting (long poll) for a change past
  version V;
- `GET /api/image/ID`: a view exactly as the model gets it (the same crop and resize), by an
  opaque id: the browser never learns a file name;
- `POST /api/answer` `{"turn": ID, "letter": "B"}`, `POST /api/quit`.

What leaves here is what a model is shown, never the answer key or the record's answer: the
state is built field by field from the observation, not by dumping it. The page sets every text
with `textContent`, and the Content Security Policy allows only this server's own script.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from aiohttp import web

from proactivebench.benchmark.scenarios.answers import option_letter
from proactivebench.core.errors import ImageError
from proactivebench.core.texts import dumps, loads_body
from proactivebench.data.images import ImageStore, is_transformed, pass_through_mime
from proactivebench.models.human import Desk, Turn

log = logging.getLogger(__name__)

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
ASSETS = {
    "/": ("index.html", "text/html"),
    "/play.js": ("play.js", "text/javascript"),
    "/play.css": ("play.css", "text/css"),
    # Declared by index.html: without it the browser asks for /favicon.ico, a 404 in the
    # console.
    "/favicon.svg": ("favicon.svg", "image/svg+xml"),
}
#: How long a state request waits for a change before it answers anyway (seconds).
LONG_POLL_S = 20.0


@dataclass
class PlayState:
    """What the app serves besides the desk: who plays, the progress, the token."""

    desk: Desk
    token: str
    annotator: str
    #: Episodes chosen per scenario, and those finished (earlier sessions included).
    totals: Counter[str] = field(default_factory=Counter)
    done: Counter[str] = field(default_factory=Counter)
    #: Episodes finished before this session started.
    resumed: int = 0
    images: ImageStore | None = None
    #: Set when the person asks the server to stop (`POST /api/quit`).
    stop: asyncio.Event = field(default_factory=asyncio.Event)


def _options(turn: Turn) -> list[dict[str, str]]:
    return [{"letter": option_letter(i), "text": t} for i, t in enumerate(turn.observation.options)]


def _image_url(state: PlayState, turn: Turn) -> str:
    return f"/api/image/{state.desk.image_id(turn.observation.view)}"


def turn_view(state: PlayState, turn: Turn) -> dict[str, Any]:
    """The turn as the page shows it: the observation's shown fields, never its answer key."""
    obs = turn.observation
    return {
        "id": turn.id,
        "scenario": obs.scenario,
        "sample_id": obs.sample_id,
        "turn": obs.turn,
        "max_turns": obs.max_turns,
        "prompt": obs.prompt,
        "options": _options(turn),
        "image": _image_url(state, turn),
        "history": [
            {
                "turn": earlier.observation.turn,
                "prompt": earlier.observation.prompt,
                "options": _options(earlier),
                "image": _image_url(state, earlier),
                "answer": answer,
            }
            for earlier, answer in turn.earlier
        ],
    }


def state_view(state: PlayState, history: bool) -> dict[str, Any]:
    """What the page is told: the turn waiting (if any), progress, the last episode's
    outcome, and the summary once the run is over."""
    desk = state.desk
    waiting = desk.current
    if waiting is not None and (waiting.answer is None or waiting.answer.done()):
        waiting = None  # answered: the engine is about to ask the next one
    turn = None if waiting is None else turn_view(state, waiting)
    if turn is not None and not history:
        turn["history"] = []  # the earlier turns are shown only as a model is sent them
    return {
        "version": desk.version,
        "annotator": state.annotator,
        "resumed": state.resumed,
        "progress": [
            {"scenario": s, "done": state.done[s], "total": t} for s, t in state.totals.items()
        ],
        "turn": turn,
        "finished": desk.episodes_finished,
        "last": desk.last,
        "summary": desk.summary,
    }


def make_app(state: PlayState, *, history: bool = False) -> web.Application:
    """The aiohttp application of one play session."""

    @web.middleware
    async def guarded(request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.startswith("/api/"):
            given = request.headers.get("X-Token") or request.query.get("token") or ""
            if not hmac.compare_digest(given.encode(), state.token.encode()):
                response: web.StreamResponse = web.json_response(
                    {"error": "missing or wrong token: open the URL the command printed"},
                    status=403,
                )
            else:
                response = await handler(request)
            response.headers["Cache-Control"] = "no-store"
        else:
            response = await handler(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"  # the URL carries the token
        return response

    async def asset(request: web.Request) -> web.Response:
        name, content_type = ASSETS[request.path]
        text = resources.files("proactivebench.humanplay").joinpath("assets", name).read_text()
        return web.Response(text=text, content_type=content_type, charset="utf-8")

    async def get_state(request: web.Request) -> web.Response:
        try:
            since = int(request.query.get("since", "-1"))
        except ValueError:
            return web.json_response({"error": "since must be an integer"}, status=400)
        if since >= state.desk.version:
            await state.desk.changed(since, LONG_POLL_S)
        return web.json_response(state_view(state, history))

    async def seen(request: web.Request) -> web.Response:
        body = await _body(request)
        state.desk.seen(str(body.get("turn", "")))
        return web.json_response({"ok": True})

    async def answer(request: web.Request) -> web.Response:
        body = await _body(request)
        problem = state.desk.answer(str(body.get("turn", "")), str(body.get("letter", "")).upper())
        if problem is not None:
            return web.json_response({"error": problem}, status=409)
        return web.json_response({"ok": True})

    async def image(request: web.Request) -> web.Response:
        view = state.desk.views.get(request.match_info["id"])
        if view is None or state.images is None:
            return web.json_response({"error": "no such image"}, status=404)
        try:
            payload, mime = await asyncio.to_thread(_view_bytes, state.images, view)
        except ImageError as exc:  # told in the terminal: the message names the file
            log.warning("%s", exc)
            return web.json_response({"error": "the image could not be read"}, status=500)
        return web.Response(body=payload, content_type=mime)

    async def quit_(request: web.Request) -> web.Response:
        state.stop.set()
        state.desk.bump()
        return web.json_response({"ok": True})

    app = web.Application(middlewares=[guarded])
    for path in ASSETS:
        app.router.add_get(path, asset)
    app.router.add_get("/api/state", get_state)
    app.router.add_get("/api/image/{id}", image)
    app.router.add_post("/api/seen", seen)
    app.router.add_post("/api/answer", answer)
    app.router.add_post("/api/quit", quit_)
    return app


async def _body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object, read by the project's one rule (`texts.loads_body`): a body
    that is not JSON, nests too deeply or declares an unknown charset is a 400, never a 500."""
    try:
        body = loads_body(await request.read(), request.charset)
    except json.JSONDecodeError as exc:
        raise _bad_request(f"expected a JSON object ({exc.msg})") from None
    if not isinstance(body, dict):
        raise _bad_request("expected a JSON object")
    return body


def _bad_request(message: str) -> web.HTTPBadRequest:
    """A 400 whose body is JSON `{"error": ...}`, as every other answer of the API: the page
    reads each answer as JSON and shows its `error`."""
    return web.HTTPBadRequest(text=dumps({"error": message}), content_type="application/json")


def _view_bytes(store: ImageStore, view: Any) -> tuple[bytes, str]:
    """The view as the model gets it: an untransformed file's own bytes, else the decoded,
    cropped and resized view as PNG (lossless)."""
    if not is_transformed(view):
        payload = store.read_bytes(view)
        mime = pass_through_mime(payload)
        if mime is not None:
            return payload, mime
    return store.encoded(view, "PNG"), "image/png"
