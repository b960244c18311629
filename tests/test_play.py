"""`proactivebench play`: a person plays through the engine, in another process, over HTTP.

A scripted person (tests/humanplayer.py) answers every turn of the seven scenarios through the
JSON API the page uses; the run it leaves must equal `eval --model replay:` of the same
letters, no response may carry the answer key, the token guards every API request, the run
lock refuses a second `play`, and a server killed mid-episode resumes with that episode from
its first turn.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from clirun import run_cli
from humanplayer import Person, json_keys, never_sent, output_of, play_process, states
from proactivebench.benchmark.registry import paper_scenarios
from proactivebench.data.synth import generate
from scripted import direct_run, lines, scripts

#: The fields of a turn the page is sent: what a model is shown, and opaque ids.
TURN_FIELDS = {"id", "scenario", "sample_id", "turn", "max_turns", "prompt", "options", "image"}
#: Seconds a refused `play` may take: were the name taken, the server would wait for a person
#: for ever (pytest-timeout fails the test instead of hanging the suite).
UNTIL_REFUSED = 60
#: Keys of the answer key, in any object: never in a response.
ANSWER_KEY = ["correct_actions", "correct_categories", "correct_category"]


def _played(line: dict[str, Any]) -> dict[str, Any]:
    """What must be equal between a person's run and the replay of their letters."""
    keep = ("turn", "image", "crop", "prompt", "options", "answer", "verdict", "action", "reason")
    return {
        "correct": line["correct"],
        "num_turns": line["num_turns"],
        "end_reason": line["end_reason"],
        "trace": [{k: t.get(k) for k in keep} for t in line["trace"]],
    }


def assert_same_as_replay(
    data: Path,
    human: Path,
    played: Any,
    capsys: pytest.CaptureFixture[str],
    flags: tuple[str, ...] = (),
) -> None:
    direct = direct_run(data, human.with_name("replayed"), played, list(flags), capsys)
    mine = json.loads((human / "summary.json").read_text())
    assert mine["scenarios"] == direct["scenarios"]
    ours, theirs = lines(human), lines(human.with_name("replayed"))
    assert ours.keys() == theirs.keys()
    for key, line in ours.items():
        assert _played(line) == _played(theirs[key]), key
    assert json.loads((human / "run.json").read_text())["model"] == "human:ann"


SETTINGS = {
    (): {},
    ("--history", "--hint", "--option-order", "shuffled", "--seed", "5"): {
        "hint": True,
        "option_order": "shuffled",
        "seed": 5,
    },
}


@pytest.mark.parametrize("flags", list(SETTINGS), ids=["plain", "history-hint-shuffled"])
def test_a_person_plays_like_the_replay_of_their_letters(
    synth_test: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...]
) -> None:
    human = tmp_path / "human"
    with play_process(synth_test, human, "--no-report", *flags) as (process, url, _):
        person = Person(url, scripts(synth_test, **SETTINGS[flags]))
        final = person.play()
        assert {p["scenario"]: (p["done"], p["total"]) for p in final["progress"]} == {
            s: (1, 1) for s, _, _ in scripts(synth_test)
        }
        # The bars in the one scenario order of every table, whatever the session's hashes.
        assert [p["scenario"] for p in final["progress"]] == list(paper_scenarios())
        person.quit()
        text = output_of(process)
    assert process.returncode == 0, text
    assert_same_as_replay(synth_test, human, person.played(), capsys, flags)
    # With --history the page shows the episode's earlier turns, as a model is sent them.
    shown = [s["turn"]["history"] for s in states(person.bodies) if s["turn"] is not None]
    assert any(shown) == ("--history" in flags)
    # What the page received: the turns' shown fields only, never the answer key or a file name.
    never_sent(person.bodies, ANSWER_KEY)
    never_sent(person.bodies, [t["image"] for ln in lines(human).values() for t in ln["trace"]])
    for state in states(person.bodies):
        if state["turn"] is not None:
            assert set(state["turn"]) == TURN_FIELDS | {"history"}
        assert not json_keys(state) & set(ANSWER_KEY)
    # The same tools as any run: a report against the replayed run, an episode shown.
    compared = tmp_path / "compared"
    args = ["report", str(human), "--vs", str(human.with_name("replayed")), "--out", str(compared)]
    code, text = run_cli(args, capsys)
    assert code == 0, text
    assert "human:ann" in text and (compared / "report.html").is_file()
    code, text = run_cli(["show", str(human), "ROD", "0"], capsys)
    assert code == 0 and text.startswith("ROD sample 0"), text
    turns = [t for line in lines(human).values() for t in line["trace"]]
    assert all(t["latency_s"] is not None for t in turns)  # the person's time is recorded


def test_the_token_guards_every_api_request(synth_test: Path, tmp_path: Path) -> None:
    flags = ("--host", "127.0.0.1", "--limit", "1")
    with play_process(synth_test, tmp_path / "run", *flags) as (_, url, _):
        person = Person(url, scripts(synth_test))
        turn = person.state()["turn"]
        bare = httpx.Client(base_url=person.base, timeout=60)
        wrong = {"X-Token": "not-the-token"}
        assert bare.get("/api/state").status_code == 403
        assert bare.get("/api/state", headers=wrong).status_code == 403
        assert bare.get(turn["image"]).status_code == 403
        answer = {"turn": turn["id"], "letter": "A"}
        assert bare.post("/api/answer", json=answer).status_code == 403
        assert bare.post("/api/answer", json=answer, headers=wrong).status_code == 403
        assert bare.post("/api/quit", json={}).status_code == 403
        # Nothing changed: the same turn still waits. The page itself holds no data.
        assert person.client.get("/api/state").json()["turn"]["id"] == turn["id"]
        page = bare.get("/")
        assert (
            page.status_code == 200
            and "script-src 'self'" in page.headers["content-security-policy"]
        )
        assert person.client.get(turn["image"] + "?token=" + person.token).status_code == 200
        # A letter that names no option is refused, and so is a stale turn.
        assert person.post("/api/answer", {"turn": turn["id"], "letter": "Z"}).status_code == 409
        assert person.post("/api/answer", {"turn": "old", "letter": "A"}).status_code == 409
        # A body that is not a JSON object: a 400 in JSON, as every other answer of the API.
        for body in (b"{not json", b"[1, 2]"):
            bad = person.client.post("/api/answer", content=body)
            assert bad.status_code == 400 and "expected a JSON object" in bad.json()["error"]
        person.quit()


def test_a_second_play_on_the_run_is_refused(
    synth_test: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    with play_process(synth_test, run, "--limit", "1") as (_, url, _):
        args = ["play", "--data", str(synth_test), "--out", str(run), "--no-browser"]
        code, text = run_cli(args, capsys)
        assert code == 1
        assert "in use by another run" in text
        assert "play in your browser" not in text
        Person(url, []).quit()


def test_a_server_killed_mid_episode_resumes_with_that_episode_from_its_start(
    synth_test: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    human = tmp_path / "human"
    script = scripts(synth_test)
    with play_process(synth_test, human, "--no-report") as (process, url, _):
        first = Person(url, script)
        state = first.play(turns=1)
        while state["finished"] < 1 or state["turn"]["turn"] < 2:
            state = first.play(turns=1)
        unfinished = state["turn"]["scenario"], state["turn"]["sample_id"]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finished = {(s, i) for s, i in first.letters} - {unfinished}
    written = lines(human)
    assert set(written) == finished  # only finished episodes were written
    with play_process(synth_test, human, "--no-report") as (process, url, told):
        assert f"{len(finished)} of 7 episodes done, continuing" in told
        assert "an episode left unfinished starts again from its first turn" in told
        second = Person(url, script)
        restart = second.state()
        assert restart["resumed"] == len(finished)
        assert (restart["turn"]["scenario"], restart["turn"]["sample_id"]) == unfinished
        assert restart["turn"]["turn"] == 1
        second.play()
        second.quit()
        text = output_of(process)
    assert process.returncode == 0, text
    played = {**first.letters, **second.letters}
    assert_same_as_replay(synth_test, human, [(s, i, a) for (s, i), a in played.items()], capsys)


def test_eval_refuses_a_person(
    synth_test: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["eval", "--data", str(synth_test), "--model", "human:ann", "--out", str(tmp_path)]
    code, text = run_cli(args, capsys)
    assert code == 1
    assert "proactivebench play --annotator ann" in text


@pytest.mark.timeout(UNTIL_REFUSED)
def test_a_bad_annotator_name_is_refused(
    synth_test: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["play", "--data", str(synth_test), "--out", str(tmp_path / "run"), "--no-browser"]
    code, text = run_cli([*args, "--annotator", "../x"], capsys)
    assert code == 1
    assert "annotator name '../x'" in text
    assert not (tmp_path / "run").exists()


@pytest.mark.timeout(UNTIL_REFUSED)
def test_an_empty_annotator_name_is_refused_not_taken_for_the_login(
    synth_test: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--annotator "$NAME"` with NAME unset: the person's answers went to a run of
    human:<login>, merged with those of everyone who plays under that login (a lab machine's
    shared account). Leaving the option out still means the login name."""
    args = ["play", "--data", str(synth_test), "--out", str(tmp_path / "run"), "--no-browser"]
    code, text = run_cli([*args, "--annotator", ""], capsys)
    assert code == 1, text
    assert "annotator name ''" in text and "Traceback" not in text
    assert not (tmp_path / "run").exists()


def test_an_image_that_vanished_fails_without_naming_its_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    generate(data, per_scenario=1, seed=3, split="test")
    with play_process(data, tmp_path / "run", "--limit", "1") as (_, url, _):
        person = Person(url, [])
        turn = person.state()["turn"]
        images = [p for p in data.rglob("*") if p.suffix in (".png", ".jpg", ".jpeg")]
        for image in images:
            image.unlink()
        response = person.get(turn["image"])
        assert response.status_code == 500
        never_sent([response.content], [p.name for p in images])
        person.quit()
