"""`proactivebench play` in a real browser: Debian's headless Chromium, driven by Playwright.

A person plays the seven scenarios as one would: Enter past the instructions, each turn
answered by a click or by its letter key (in turn), the earlier turns shown above it
(--history), Enter or a click on "Continue" after each
verdict, "Finish" on the summary. The run equals `eval --model replay:` of the same letters,
no response the browser received holds the answer key, and the XSS payloads put into a
category, an option and a prompt are shown as text and never run.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from humanplayer import never_sent, output_of, play_process
from proactivebench.data.synth import generate
from scripted import lines, scripts
from test_play import ANSWER_KEY, assert_same_as_replay

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser")) if p is not None), None
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium binary (apt-get install -y chromium)"
)

PAYLOAD = "<img src=x onerror=\"document.title='pwned'\"><script>window.pwned=1</script>"
WHERE = re.compile(r"^(\S+) · sample (\d+) · turn (\d+) of")


def hostile_data(root: Path) -> Path:
    """The synthetic test split, its ROD sample carrying the payload in a category that is
    not the answer, in an action option and in its prompt."""
    generate(root, per_scenario=1, seed=3, split="test")
    path = root / "Realistic-Occlusion-Dataset_preprocessed.jsonl"
    record = json.loads(path.read_text().splitlines()[0])
    other = next(c for c in record["categories"] if c != record["answer"])
    record["categories"][record["categories"].index(other)] = PAYLOAD + " category"
    record["options"][record["options"].index("I do not know.")] = PAYLOAD + " option"
    record["prompt"] = PAYLOAD + " " + record["prompt"]
    path.write_text(json.dumps(record) + "\n")
    return root


def wait_for_screen(page: Any, old_turn: str | None) -> str:
    """The next screen: a turn other than `old_turn`, a verdict, or the summary."""
    page.wait_for_function(
        "(old) => ['verdict', 'summary'].includes(document.body.dataset.screen)"
        " || (document.body.dataset.screen === 'turn' && document.body.dataset.turn !== old)",
        arg=old_turn or "",
    )
    return str(page.evaluate("document.body.dataset.screen"))


#: The options on the page as (letter, text) pairs, read in one round trip.
OPTIONS_SHOWN = (
    "options => options.map(o => [o.dataset.letter, o.querySelector('.text').textContent])"
)


def test_a_person_plays_seven_scenarios_in_chromium(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = hostile_data(tmp_path / "data")
    answers = {(s, i): a for s, i, a in scripts(data)}
    human = tmp_path / "human"
    letters: dict[tuple[str, int], list[str]] = {}
    bodies: list[bytes] = []
    errors: list[str] = []
    dialogs: list[str] = []

    def record(route: Any) -> None:
        response = route.fetch()
        bodies.append(response.body())
        route.fulfill(response=response)

    with play_process(data, human, "--no-report", "--history") as (process, url, _):
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
                page.route("**/*", record)
                page.goto(url)
                assert page.locator("#intro").is_visible()
                page.keyboard.press("Enter")
                turn_id = None
                verdicts = answered = 0
                while (screen := wait_for_screen(page, turn_id)) != "summary":
                    if screen == "verdict":
                        verdicts += 1
                        if verdicts % 2:
                            page.keyboard.press("Enter")
                        else:
                            page.click("#continue")
                        turn_id = None
                        continue
                    turn_id = page.evaluate("document.body.dataset.turn")
                    where = WHERE.match(page.locator("#where").text_content() or "")
                    assert where is not None
                    scenario, sample, turn = where[1], int(where[2]), int(where[3])
                    text = answers[scenario, sample][turn - 1]
                    shown = dict(page.locator(".option").evaluate_all(OPTIONS_SHOWN))
                    if scenario == "ROD":  # the payloads are shown as the text they are
                        assert PAYLOAD + " category" in shown.values()
                        assert PAYLOAD + " option" in shown.values()
                        assert page.locator("#prompt").text_content().startswith(PAYLOAD)
                        earlier = page.locator("#history .earlier")  # --history: turns before
                        assert earlier.count() == turn - 1
                        for k in range(earlier.count()):
                            assert PAYLOAD + " option" in (earlier.nth(k).text_content() or "")
                    letter = next(k for k, v in shown.items() if text in (k, v))
                    letters.setdefault((scenario, sample), []).append(str(letter))
                    answered += 1
                    if answered % 2:
                        page.keyboard.press(str(letter).lower())
                    else:
                        page.click(f'.option[data-letter="{letter}"]')
                assert verdicts == 7
                rows = page.locator("#summary-table tbody tr")
                assert rows.count() == 7
                page.click("#finish")
                page.locator("#stopped").wait_for()
                assert page.evaluate("window.pwned") is None
                assert page.title() != "pwned"
            finally:
                browser.close()
        text = output_of(process)
    assert process.returncode == 0, text
    assert not errors and not dialogs
    played = [(s, i, a) for (s, i), a in letters.items()]
    assert_same_as_replay(data, human, played, capsys, ("--history",))
    never_sent(bodies, ANSWER_KEY)
    never_sent(bodies, [t["image"] for line in lines(human).values() for t in line["trace"]])


def _luminance(rgb: str) -> float:
    """WCAG relative luminance of a computed `rgb(r, g, b)` colour."""
    channels = [int(c) / 255 for c in re.findall(r"\d+", rgb)[:3]]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_the_page_loads_every_resource_and_its_key_hints_are_readable(tmp_path: Path) -> None:
    """Every request the page makes (its icon too) is answered, the console stays clean, and
    each key hint (<kbd>, on the blue buttons too) has WCAG AA contrast (>= 4.5:1) between its
    computed colour and background."""
    generate(tmp_path / "data", per_scenario=1, seed=3, split="test")
    failed: list[str] = []
    errors: list[str] = []
    with play_process(tmp_path / "data", tmp_path / "human", "--no-report") as (process, url, _):
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on(
                    "response",
                    lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None,
                )
                page.goto(url)
                page.wait_for_load_state("load")
                icon = page.evaluate(
                    "() => { const l = document.querySelector('link[rel~=icon]');"
                    " return l && l.href; }"
                )
                assert icon, "the page declares no icon: the browser asks for /favicon.ico"
                assert page.request.get(icon).status == 200
                hints = page.locator("kbd:visible")
                assert hints.count() >= 1
                for index in range(hints.count()):
                    fg, bg = hints.nth(index).evaluate(
                        "k => [getComputedStyle(k).color, getComputedStyle(k).backgroundColor]"
                    )
                    light, dark = sorted((_luminance(fg), _luminance(bg)), reverse=True)
                    ratio = (light + 0.05) / (dark + 0.05)
                    assert ratio >= 4.5, (fg, bg, ratio)
                page.keyboard.press("Enter")
                page.locator(".option").first.wait_for()
            finally:
                browser.close()
        process.terminate()
        process.wait(timeout=30)
    assert failed == [] and errors == []


def test_a_page_of_an_earlier_session_says_to_open_the_new_url(tmp_path: Path) -> None:
    """A restarted `play` has a new token, so a tab left open from the earlier session is
    refused (403). It said "the server does not answer" (it does) under "Waiting for the next
    turn…" and polled forever; now it says why and what to open, and stops asking."""
    generate(tmp_path / "data", per_scenario=1, seed=3, split="test")
    with play_process(tmp_path / "data", tmp_path / "human", "--no-report") as (process, url, _):
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(url.replace("token=", "token=earlier"))
                page.wait_for_function("() => document.body.dataset.screen === 'refused'")
                text = page.locator("#refused").inner_text()
                assert "Open the URL that proactivebench play printed last" in text, text
                assert not page.locator("#error").is_visible()
            finally:
                browser.close()
        process.terminate()
        process.wait(timeout=30)
