"""`proactivebench push` against a stand-in Hub on 127.0.0.1 (tests/hubupload.py): what lands
where in the dataset repo, the dataset card (front matter, model, settings, data, the summary
table), a rerun that updates, and one clear line for a refused token, a repo that may not be
created, no token at all and no network.

Pushes run in subprocesses: huggingface_hub fixes its endpoint when it is imported, so
`HF_ENDPOINT` must be in the environment of a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from clirun import run_cli
from hubupload import TOKEN, UploadHub, serve
from proactivebench.data.synth import generate
from resultlines import flipped

REPO = "someone/pb-results"
RUN_FILES = {"run.json", "results.jsonl", "summary.json"}


@pytest.fixture
def hub() -> Iterator[UploadHub]:
    yield from serve()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generated data (2 samples per scenario), the `proactive` baseline's run of it and a
    suite's output of the `mcqa` and `hint` experiments of the paper for `reactive`."""
    root = tmp_path_factory.mktemp("push")
    generate(root / "data", per_scenario=2, seed=0)
    base = [sys.executable, "-m", "proactivebench"]
    env = {**os.environ, "PROACTIVEBENCH_CACHE": str(root / "cache")}
    for args in (
        [
            "eval",
            "--data",
            str(root / "data"),
            "--model",
            "baseline:proactive",
            "--out",
            str(root / "run-a"),
        ],
        [
            "paper",
            "--data",
            str(root / "data"),
            "--model",
            "baseline:reactive",
            "--out",
            str(root / "suite"),
            "--only",
            "mcqa,hint",
        ],
    ):
        done = subprocess.run([*base, *args], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    return root


def push(
    endpoint: str, home: Path, *args: str | Path, token: str | None = TOKEN
) -> subprocess.CompletedProcess[str]:
    """`proactivebench push ARGS` in a fresh interpreter pointed at `endpoint`."""
    env = dict(os.environ)
    for name in ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        env.pop(name, None)
    env.update(
        HF_ENDPOINT=endpoint,
        HF_HOME=str(home),
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_HUB_DISABLE_XET="1",
    )
    if token is not None:
        env["HF_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "proactivebench", "push", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def rewrite_summary(run: Path) -> None:
    """summary.json of `run` rewritten from its lines, as eval writes it after a rerun."""
    from proactivebench.benchmark.metrics import summarize
    from proactivebench.run.rundir import read_run_config, run_lines, write_summary

    config = read_run_config(run)
    write_summary(run, summarize(run_lines(run, config).lines, model=config["model"]))


def assert_one_line_failure(done: subprocess.CompletedProcess[str], *wanted: str) -> str:
    output = (done.stdout + done.stderr).strip()
    assert done.returncode == 1, output
    assert "Traceback" not in output, output
    assert len(output.splitlines()) == 1, output
    for text in wanted:
        assert text in output, output
    return output


def assert_folder_is_the_run(files: dict[str, bytes], folder: str, run: Path) -> None:
    """The repo's `folder` holds the run's three files, byte for byte, and nothing else."""
    held = sorted(p for p in files if p.startswith(f"{folder}/"))
    assert held == [f"{folder}/{name}" for name in sorted(RUN_FILES)]
    for name in RUN_FILES:
        assert files[f"{folder}/{name}"] == (run / name).read_bytes(), name


def front_matter(card: str) -> dict[str, object]:
    assert card.startswith("---\n"), card[:80]
    return yaml.safe_load(card[4:].partition("\n---\n")[0])


# --- what lands where, and the card -------------------------------------------------------


def test_run_and_suite_land_under_runs_and_reports_with_a_card(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    done = push(
        hub.endpoint, tmp_path / "hf", runs / "run-a", runs / "suite", "--repo", REPO, "--private"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"pushed 3 run(s), 1 report(s) to {hub.endpoint}/datasets/{REPO}" in done.stdout

    repo = hub.repos[REPO]
    assert repo.private
    files = repo.files
    # Each run's three files, byte for byte, and its report beside them.
    for local, remote in (
        (runs / "run-a", "runs/run-a"),
        (runs / "suite" / "mcqa", "runs/suite/mcqa"),
        (runs / "suite" / "hint", "runs/suite/hint"),
    ):
        for name in RUN_FILES:
            assert files[f"{remote}/{name}"] == (local / name).read_bytes(), f"{remote}/{name}"
        assert files[f"{remote}/report/report.json"] == (local / "report/report.json").read_bytes()
    # The suite's report as a report; suite.json itself, locks and caches are not sent.
    assert files["reports/suite/report.html"] == (runs / "suite/report/report.html").read_bytes()
    assert any(p.startswith("reports/suite/tables/") for p in files)
    local_report = {
        p.relative_to(runs / "suite/report").as_posix()
        for p in (runs / "suite/report").rglob("*")
        if p.is_file() and not p.name.startswith(".")  # hidden: the report's own state
    }
    assert {
        p.removeprefix("reports/suite/") for p in files if p.startswith("reports/")
    } == local_report
    tops = {p.split("/")[0] for p in files}
    assert tops == {"README.md", "runs", "reports"}
    assert len(hub.commits) == 1  # one commit for the whole push

    card = files["README.md"].decode()
    meta = front_matter(card)
    assert hub.validated == [meta]  # the Hub's metadata check saw the card before the commit
    assert meta["viewer"] is False and "proactivebench" in meta["tags"]
    assert "## `runs/run-a`" in card and "## `runs/suite/hint`" in card
    assert "- model: `baseline:proactive`" in card and "- model: `baseline:reactive`" in card
    assert "- data: `data`" in card
    hint = card.split("## `runs/suite/hint`")[1].split("## ")[0]
    assert '"hint": true' in hint
    plain = card.split("## `runs/suite/mcqa`")[1].split("## ")[0]
    assert '"hint": false' in plain
    assert "[`reports/suite`](reports/suite/report.html)" in card


def test_card_table_is_summary_json(hub: UploadHub, runs: Path, tmp_path: Path) -> None:
    """The card's rows are summary.json's values as the terminal prints them (accuracy one
    decimal, ps rate two), every scenario then the average."""
    done = push(hub.endpoint, tmp_path / "hf", runs / "run-a", "--repo", REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    card = hub.repos[REPO].files["README.md"].decode()
    assert not hub.repos[REPO].private
    summary = json.loads((runs / "run-a/summary.json").read_text())
    table = [line for line in card.splitlines() if line.startswith("| ")]
    assert table[0] == "| scenario | n | accuracy % | ps rate | errors |"
    expected = [
        f"| {name} | {s['n']} | {s['accuracy']:.1f} | {s['ps_rate']:.2f} | {s['errors']} |"
        for name, s in [*summary["scenarios"].items(), ("average", summary["average"])]
    ]
    assert table[1:] == expected
    assert table[1].startswith("| ROD | 2 | 100.0 |")  # the proactive baseline: always right
    assert table[-1].startswith("| average | 14 | 100.0 | ")


def test_rerun_updates_the_same_paths(hub: UploadHub, runs: Path, tmp_path: Path) -> None:
    run = tmp_path / "run-a"  # without its report, which a changed line makes stale
    shutil.copytree(runs / "run-a", run, ignore=shutil.ignore_patterns("report"))
    first = push(hub.endpoint, tmp_path / "hf", run, "--repo", REPO)
    assert first.returncode == 0, first.stdout + first.stderr
    before = dict(hub.repos[REPO].files)

    # The run changed (a line edited, its summary rewritten as eval would): the rerun sends
    # only what changed, same paths.
    lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if json.loads(line)["scenario"] == "ROD")
    first = json.loads(lines[at])
    assert first["correct"]
    lines[at] = json.dumps(flipped(first)) + "\n"
    (run / "results.jsonl").write_text("".join(lines))
    rewrite_summary(run)
    second = push(hub.endpoint, tmp_path / "hf", run, "--repo", REPO)
    assert second.returncode == 0, second.stdout + second.stderr
    after = hub.repos[REPO].files
    assert set(after) == set(before)
    assert after["runs/run-a/summary.json"] == (run / "summary.json").read_bytes()
    assert "| ROD | 2 | 50.0 |" in after["README.md"].decode()  # the card regenerated
    assert sorted(hub.commits[-1].paths) == [
        "README.md",
        "runs/run-a/results.jsonl",
        "runs/run-a/summary.json",
    ]
    assert [c for c in hub.requests if c == "POST /api/repos/create"] == [
        "POST /api/repos/create"
    ] * 2

    # Nothing changed: no commit at all, and the push still succeeds.
    third = push(hub.endpoint, tmp_path / "hf", run, "--repo", REPO)
    assert third.returncode == 0, third.stdout + third.stderr
    assert len(hub.commits) == 2


def test_a_later_push_keeps_the_earlier_runs_in_the_card(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """The card is written anew each time from this push's runs and those the repo already
    holds (read back from it): a run pushed alone later does not drop the others."""
    first = push(hub.endpoint, tmp_path / "hf", runs / "suite", "--repo", REPO)
    assert first.returncode == 0, first.stdout + first.stderr
    second = push(hub.endpoint, tmp_path / "hf", runs / "run-a", "--repo", REPO)
    assert second.returncode == 0, second.stdout + second.stderr
    card = hub.repos[REPO].files["README.md"].decode()
    sections = [line for line in card.splitlines() if line.startswith("## `")]
    assert sections == ["## `runs/run-a`", "## `runs/suite/hint`", "## `runs/suite/mcqa`"]
    assert "[`reports/suite`](reports/suite/report.html)" in card  # the suite's report too
    hint = card.split("## `runs/suite/hint`")[1].split("## ")[0]
    assert "- model: `baseline:reactive`" in hint and '"hint": true' in hint
    assert "| average | 14 |" in hint  # its lines read back from the repo and counted
    # ... and what makes them not comparable, from the run.json read back (issue 45, item 4).
    assert "generated data (data synth)" in hint
    assert any(
        "/resolve/" in r and r.endswith("/runs/suite/hint/results.jsonl") for r in hub.requests
    )

    # Pushing one of them again replaces its section, never adds a second one.
    third = push(hub.endpoint, tmp_path / "hf", runs / "suite", "--repo", REPO)
    assert third.returncode == 0, third.stdout + third.stderr
    again = hub.repos[REPO].files["README.md"].decode()
    assert [line for line in again.splitlines() if line.startswith("## `")] == sections


def test_the_card_and_summary_are_the_lines_as_they_are_at_push_time(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """Lines moved out of results.jsonl after eval wrote summary.json (as the docs advise for
    lines not counted): push published the old summary.json and a card with n = 14 and ROD
    beside 12 lines and no ROD. Both are now computed from the lines at push time, and the
    stale file is named."""
    run = tmp_path / "run-a"
    shutil.copytree(runs / "run-a", run)
    stale = (run / "summary.json").read_bytes()
    from proactivebench.jobs.publish import plan_push

    # A copy keeps its report's record true (size and time of the files): pushed whole.
    assert "runs/run-a/report/report.html" in plan_push([run]).files
    lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line)["scenario"] != "ROD"]
    assert len(kept) == 12
    (run / "results.jsonl").write_text("".join(kept))
    (tmp_path / "moved-out.jsonl").write_text("".join(set(lines) - set(kept)))

    done = push(hub.endpoint, tmp_path / "hf", run, "--repo", REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = " ".join(done.stderr.split())
    assert "summary.json is not what its results.jsonl gives" in warnings
    # Its report too was built from the 14 lines: not published beside 12.
    assert f"{run / 'report'} was not built from the lines as they are now" in warnings
    assert not any("/report/" in p for p in hub.repos[REPO].files)
    files = hub.repos[REPO].files
    pushed = json.loads(files["runs/run-a/summary.json"])
    assert "ROD" not in pushed["scenarios"] and pushed["average"]["n"] == 12
    card = files["README.md"].decode()
    table = [line for line in card.splitlines() if line.startswith("| ")]
    assert not any(row.startswith("| ROD ") for row in table)
    assert table[-1].startswith("| average of 6 (VSOD, MVP-N, IN-C, QD, CIT, COCO) | 12 | 100.0 |")
    assert files["runs/run-a/results.jsonl"] == "".join(kept).encode()
    assert (run / "summary.json").read_bytes() == stale  # the run folder is not written

    # What was published is what eval writes for these lines: after a rerun's rewrite, the
    # same bytes, and no note.
    rewrite_summary(run)
    shutil.rmtree(run / "report")
    assert files["runs/run-a/summary.json"] == (run / "summary.json").read_bytes()
    again = push(hub.endpoint, tmp_path / "hf", run, "--repo", REPO)
    assert again.returncode == 0 and "warning" not in again.stderr, again.stderr


def test_a_run_pushed_where_a_suite_was_is_refused(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """Round-4 tryout: a single run pushed under the name of a suite pushed before replaced
    runs/NAME whole, deleting the suite's experiments, and left reports/NAME (the suite's
    report) beside the other model's run, linked from the card: refused now, nothing sent."""
    first = push(hub.endpoint, tmp_path / "hf", runs / "suite", "--repo", REPO)
    assert first.returncode == 0, first.stdout + first.stderr
    before = dict(hub.repos[REPO].files)
    single = tmp_path / "elsewhere" / "suite"  # the proactive run, named like the suite
    shutil.copytree(runs / "run-a", single, ignore=shutil.ignore_patterns("report"))
    done = push(hub.endpoint, tmp_path / "hf", single, "--repo", REPO)
    assert_one_line_failure(done, "runs/suite in", "holds a suite's experiments")
    assert hub.repos[REPO].files == before


def test_a_run_pushed_where_another_was_replaces_its_folder_whole(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """A second run whose folder name equals one the repo holds replaced run.json and
    results.jsonl but left the first run's report/ beside them (one model's lines, another's
    report), exit 0 without a word. The folder is now replaced whole in the same commit, and
    the clash is named."""
    first = push(hub.endpoint, tmp_path / "hf", runs / "run-a", "--repo", REPO)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "runs/run-a/report/report.json" in hub.repos[REPO].files

    other = tmp_path / "elsewhere" / "run-a"  # the reactive run, without a report
    shutil.copytree(runs / "suite" / "mcqa", other, ignore=shutil.ignore_patterns("report"))
    done = push(hub.endpoint, tmp_path / "hf", other, "--repo", REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    files = hub.repos[REPO].files
    assert_folder_is_the_run(files, "runs/run-a", other)
    assert hub.commits[-1].deleted and all(
        p.startswith("runs/run-a/report/") for p in hub.commits[-1].deleted
    )
    assert len(hub.commits) == 2  # the deletions are in the push's one commit
    warning = " ".join(done.stderr.split())
    assert "runs/run-a in someone/pb-results held another run" in warning, done.stderr
    assert 'model: "baseline:proactive" → "baseline:reactive"' in warning, done.stderr
    card = files["README.md"].decode()
    assert card.count("## `runs/run-a`") == 1 and "- model: `baseline:reactive`" in card
    # A run over a suite's folder of the same name is refused instead:
    # test_a_run_pushed_where_a_suite_was_is_refused.


def test_a_suites_stale_report_leaves_the_repo_with_its_runs(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """A suite pushed, then a line moved out of one experiment and the suite pushed again:
    push declined the stale OUT/report and replaced runs/OUT/, but left the earlier push's
    reports/OUT/ in the repo, linked from the card (the old numbers, links to deleted files).
    The suite's report folder is now replaced whole with its runs: deleted, said, unlinked."""
    suite = tmp_path / "suite"
    shutil.copytree(runs / "suite", suite)
    first = push(hub.endpoint, tmp_path / "hf", suite, "--repo", REPO)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "reports/suite/report.html" in hub.repos[REPO].files

    results = suite / "mcqa" / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[1:]))
    done = push(hub.endpoint, tmp_path / "hf", suite, "--repo", REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    files = hub.repos[REPO].files
    assert not any(p.startswith("reports/") for p in files), sorted(files)
    assert "reports/suite" not in files["README.md"].decode()
    warning = " ".join(done.stderr.split())
    assert f"{suite / 'report'} was not built from the lines as they are now" in warning
    assert "reports/suite: " in warning and "deleted (the first: reports/suite/" in warning
    section = files["README.md"].decode().split("## `runs/suite/mcqa`")[1]
    assert f"| average | {len(lines) - 1} |" in section


def another_push_lands_first(source: str, target: str) -> Callable[[UploadHub], None]:
    """A `before_commit` hook: the commit a second push made to `target`, landing between
    this push's reading of the repo and its commit. That push's files are those it made to
    the repo `source` (its card included), as it would have sent them."""

    def land(hub: UploadHub) -> None:
        hub.apply(target, "proactivebench push: the other one", dict(hub.repos[source].files))

    return land


def test_two_pushes_at_once_never_mix_two_runs_in_one_folder(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """Two pushes to one repo at once, of two runs of one folder name: the one that read the
    repo first committed over the other's, deleting from what it had read, so runs/run-a/
    held one run's lines beside the other's report/ (tryout: 2 of 4 times), both exit 0.
    The commit is now made on the head it was computed from (parent_commit); refused by the
    Hub (412), the push reads the repo again and replaces the folder whole."""
    other = "someone/other"  # where the other push's files are taken from
    first = push(hub.endpoint, tmp_path / "hf", runs / "run-a", "--repo", other)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "runs/run-a/report/report.json" in hub.repos[other].files
    mine = tmp_path / "elsewhere" / "run-a"  # the reactive run, without a report
    shutil.copytree(runs / "suite" / "mcqa", mine, ignore=shutil.ignore_patterns("report"))

    hub.before_commit.append(another_push_lands_first(other, REPO))
    done = push(hub.endpoint, tmp_path / "hf", mine, "--repo", REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    files = hub.repos[REPO].files
    assert_folder_is_the_run(files, "runs/run-a", mine)
    card = files["README.md"].decode()
    assert card.count("## `runs/") == 1 and "- model: `baseline:reactive`" in card
    # The clash with what the other push left is named, as for one pushed earlier.
    warning = " ".join(done.stderr.split())
    assert f"runs/run-a in {REPO} held another run" in warning, done.stderr
    assert [c.summary for c in hub.commits[1:]] == [
        "proactivebench push: the other one",
        "proactivebench push: runs/run-a",
    ]


def test_two_pushes_at_once_keep_both_runs_in_the_card(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """The second case of the tryout: two runs of two names pushed at once; the repo held
    both, but the card written last listed only its own run (it was computed from a repo
    without the other). Now the card is recomputed on the head it is committed to; a repo
    that keeps moving is refused in one line after a bounded number of tries."""
    other = "someone/other"
    first = push(hub.endpoint, tmp_path / "hf", runs / "run-a", "--repo", other)
    assert first.returncode == 0, first.stdout + first.stderr
    hub.before_commit.append(another_push_lands_first(other, REPO))
    done = push(hub.endpoint, tmp_path / "hf", runs / "suite", "--repo", REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    card = hub.repos[REPO].files["README.md"].decode()
    sections = [line for line in card.splitlines() if line.startswith("## `")]
    assert sections == ["## `runs/run-a`", "## `runs/suite/hint`", "## `runs/suite/mcqa`"]

    # Another commit before every one of this push's: never committed, one line.
    commits = len(hub.commits)
    hub.before_commit += [another_push_lands_first(other, REPO)] * 20
    again = tmp_path / "run-b"
    shutil.copytree(runs / "run-a", again)
    done = push(hub.endpoint, tmp_path / "hf", again, "--repo", REPO)
    assert_one_line_failure(done, f"{REPO} changed 5 times while push read it", "push again")
    assert not any(p.startswith("runs/run-b/") for p in hub.repos[REPO].files)
    assert {c.summary for c in hub.commits[commits:]} == {"proactivebench push: the other one"}
    assert len(hub.before_commit) == 15


def test_text_from_runs_is_inert_in_the_card_and_no_rate_is_nan() -> None:
    """Folder names, run.json's model, settings, judge and data went into the card as they
    were: an escape sequence, a bidirectional override (a model shown under another name), a
    line break (a fake heading) and a link's delimiters reached every reader of the Hub page,
    and a NaN or infinite rate was shown as "nan". Every such text is now written as its
    escapes; a rate that is no number is shown as missing."""
    import unicodedata

    from proactivebench.jobs.publish import PushedRun, PushPlan, dataset_card

    hostile = "gpt\x1b[31m\u202eevil`|x\n## Injected\u2066\u200b\u2028"
    config = {
        "model": hostile,
        "data_dir": f"/home/me/data{hostile}",
        "data_revision": hostile,
        "settings": {"mode": "mcqa", "note": hostile},
        "judge": {"model": hostile},
    }
    score = {"n": 2, "accuracy": float("nan"), "ps_rate": float("inf"), "errors": 0}
    summary = {"scenarios": {"ROD": score, "VS\u202eOD": score}, "average": score}
    plan = PushPlan(
        runs=[PushedRun(f"runs/a{hostile}", config, summary)],
        reports=["reports/x) [click](https://example.com"],
    )
    card = dataset_card(plan, REPO)

    body = card.partition("\n---\n")[2]
    unsafe = [c for c in body if c != "\n" and unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"}]
    assert unsafe == [], unsafe
    assert "\n## Injected" not in body  # no heading of its own
    assert "- model: ``gpt\\x1b[31m\\u202eevil`|x\\n## Injected\\u2066\\u200b\\u2028``" in body
    table = [line for line in body.splitlines() if line.startswith("| ")]
    assert table[1:] == [
        "| ROD | 2 | – | – | 0 |",
        "| VS\\u202eOD | 2 | – | – | 0 |",
        "| average of 2 (ROD, VS\\u202eOD) | 2 | – | – | 0 |",
    ]
    assert "- [`reports/x) [click](https://example.com`](reports/x%29%20%5Bclick%5D" in body


def test_a_name_with_a_pipe_is_shown_as_it_is_in_headings_and_table_cells() -> None:
    """A folder named `junk<ESC>[31m<RLO>|x|` was escaped safely in the card's heading, but
    its `|` was written `\\|` inside the heading's code span, where a backslash is shown: the
    card named another folder. `|` is escaped where it is markup (a table cell) and only there:
    rendered (markdown-it, GFM tables), every place shows the name as its escapes spell it."""
    from html.parser import HTMLParser

    from markdown_it import MarkdownIt

    from proactivebench.jobs.publish import PushedRun, PushPlan, dataset_card

    name = "runs/junk\x1b[31m\u202e|x|"
    shown = "runs/junk\\x1b[31m\\u202e|x|"  # what escapes.visible writes
    score = {"n": 2, "accuracy": 50.0, "ps_rate": 1.0, "errors": 0}
    config = {"model": "m|n", "settings": {"mode": "mcqa"}, "data_dir": "/d/da|ta"}
    summary = {"scenarios": {"a|b": score}, "average": score}
    card = dataset_card(PushPlan(runs=[PushedRun(name, config, summary)]), REPO)

    class Texts(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.stack: list[str] = []
            self.found: list[tuple[str, str]] = []

        def handle_starttag(self, tag: str, attrs: object) -> None:
            self.stack.append(tag)

        def handle_endtag(self, tag: str) -> None:
            self.stack.pop()

        def handle_data(self, data: str) -> None:
            if self.stack and data.strip():
                self.found.append(("/".join(self.stack[-2:]), data))

    html = MarkdownIt("commonmark").enable("table").render(card.partition("\n---\n")[2])
    texts = Texts()
    texts.feed(html)
    assert ("h2/code", shown) in texts.found
    assert ("li/code", "m|n") in texts.found and ("li/code", "da|ta") in texts.found
    cells = [text for where, text in texts.found if where.endswith("td")]
    assert cells[:5] == ["a|b", "2", "50.0", "1.00", "0"]  # one cell, the row intact


def test_the_card_counts_the_lines_of_runs_earlier_pushes_left(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """A run an earlier push left in the repo was carded from the summary.json there, which
    an older version pushed stale or someone edited on the Hub: its table is now counted from
    its lines read back (run_lines), and the repo's summary.json is replaced by theirs."""
    first = push(hub.endpoint, tmp_path / "hf", runs / "run-a", "--repo", REPO)
    assert first.returncode == 0, first.stdout + first.stderr
    files = hub.repos[REPO].files
    lines = files["runs/run-a/results.jsonl"].decode().splitlines(keepends=True)
    files["runs/run-a/results.jsonl"] = "".join(
        line for line in lines if json.loads(line)["scenario"] != "ROD"
    ).encode()  # as a push of 12 lines beside an older summary.json of 14 left it

    second = push(hub.endpoint, tmp_path / "hf", runs / "suite", "--repo", REPO)
    assert second.returncode == 0, second.stdout + second.stderr
    files = hub.repos[REPO].files
    section = files["README.md"].decode().split("## `runs/run-a`")[1].split("## ")[0]
    table = [line for line in section.splitlines() if line.startswith("| ")]
    assert not any(row.startswith("| ROD ") for row in table), table
    assert table[-1].startswith("| average of 6 (VSOD, MVP-N, IN-C, QD, CIT, COCO) | 12 | 100.0 |")
    summary = json.loads(files["runs/run-a/summary.json"])
    assert "ROD" not in summary["scenarios"] and summary["average"]["n"] == 12
    warning = " ".join(second.stderr.split())
    assert f"runs/run-a/summary.json in {REPO} was not what the lines beside it give" in warning

    # A line no reader counts, left there: said in the run's section, not counted.
    files["runs/run-a/results.jsonl"] += b'{"scenario": "ROD", "sample_id": "seven"}\n'
    third = push(hub.endpoint, tmp_path / "hf", runs / "suite", "--repo", REPO)
    assert third.returncode == 0, third.stdout + third.stderr
    section = hub.repos[REPO].files["README.md"].decode().split("## `runs/run-a`")[1]
    assert "1 line(s) of results.jsonl are not counted" in section.split("## ")[0]
    assert "| average of 6 (VSOD, MVP-N, IN-C, QD, CIT, COCO) | 12 | 100.0 |" in section


def test_an_earlier_run_with_lines_not_counted_keeps_its_cautions_and_counts_lines(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """A run an earlier push left, given lines no reader counts on the Hub: its section lost
    its "Read with care" block (generated data) and said "2 line(s)" for a pasted line plus a
    contradicting pair, where 3 lines are out. Its cautions are now given as report gives
    them, with the rest of its lines counted, and the count is of lines."""
    first = push(hub.endpoint, tmp_path / "hf", runs / "run-a", "--repo", REPO)
    assert first.returncode == 0, first.stdout + first.stderr
    files = hub.repos[REPO].files
    lines = [json.loads(line) for line in files["runs/run-a/results.jsonl"].splitlines()]
    pasted = {**lines[0], "sample_id": 900}  # an episode the run never selected
    contradicting = flipped(lines[-1])
    files["runs/run-a/results.jsonl"] += "".join(
        json.dumps(line) + "\n" for line in (pasted, contradicting)
    ).encode()

    done = push(hub.endpoint, tmp_path / "hf", runs / "suite", "--repo", REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    card = hub.repos[REPO].files["README.md"].decode()
    section = card.split("## `runs/run-a`")[1].split("## ")[0]
    caution, table = section.split("| scenario |")
    assert "Read with care:" in caution
    assert "not comparable with the paper's published numbers: generated data" in caution
    assert "/proactivebench-push-" not in caution  # no path of the pusher's scratch folder
    assert "3 line(s) of results.jsonl are not counted" in caution
    assert f"| average | {len(lines) - 1} |" in table  # the pair's first line is out too


def test_a_run_and_a_suite_of_one_name_are_not_pushed_into_one_folder(
    runs: Path, tmp_path: Path
) -> None:
    """`push RUN OUT` where the run and the suite's output have one name put the run's files
    and the suite's experiments in one runs/NAME/ (two runs mixed in one folder): refused,
    naming the folder."""
    from proactivebench.core.errors import PushError
    from proactivebench.jobs.publish import plan_push

    suite = tmp_path / "run-a"
    shutil.copytree(runs / "suite", suite)
    with pytest.raises(PushError, match=r"would go to runs/run-a/ in the repo, where another"):
        plan_push([runs / "run-a", suite])
    with pytest.raises(PushError, match=r"would go to runs/run-a/ in the repo"):
        plan_push([suite, runs / "run-a"])


# --- one line when it cannot -------------------------------------------------------------


def test_the_card_says_what_eval_warns_and_why_a_run_is_not_comparable(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """Issue 45, items 4 and 5: the card's table of a run whose answers designate no option
    stands under the warning eval gives (it said nothing), and under why the run is not
    comparable with the paper's numbers (generated data, 1 of 2 samples: partial); its
    text is inert Markdown (the warning's underscores and brackets escaped)."""
    agent = tmp_path / "agent.py"
    agent.write_text("def answer(messages, observation):\n    return '**The answer is (B)**'\n")
    run = tmp_path / "unreadable"
    args = ["eval", "--data", str(runs / "data"), "--model", f"python:{agent}:answer"]
    done = subprocess.run(
        [sys.executable, "-m", "proactivebench", *args, "--limit", "1", "--out", str(run)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    pushed = push(hub.endpoint, tmp_path / "hf", run, "--repo", REPO)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    card = hub.repos[REPO].files["README.md"].decode()
    section = card.split("## `runs/unreadable`")[1]
    caution, table = section.split("| scenario |")
    assert "Read with care:" in caution
    assert "designate no shown option" in caution and "ROD (100.0 %)" in caution
    assert "not comparable with the paper's published numbers: generated data" in caution
    assert "partial: ROD 1 of 2 samples selected" in caution
    assert "\\`proactivebench show\\`" in caution  # inert: no markup of its own
    assert "| ROD | 1 |" in table


def test_a_suites_experiments_of_two_judges_say_so_on_the_card(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """A suite whose judged experiments name different judges (one re-judged): its report
    warned that their differences compare the judges; the card, which sets them side by side,
    did not."""
    suite = tmp_path / "suite"
    shutil.copytree(runs / "suite", suite, ignore=shutil.ignore_patterns("report"))
    for experiment, judge in (("mcqa", "python:a.py:judge"), ("hint", "python:b.py:judge")):
        run = suite / experiment
        stamp = {"judge": judge, "votes": 1}
        config = json.loads((run / "run.json").read_text())
        config["settings"]["judge"] = stamp
        (run / "run.json").write_text(json.dumps(config))
        lines = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
        for line in lines:
            line["settings"]["judge"] = stamp
        (run / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        (run / ".finished.json").unlink(missing_ok=True)
    done = push(hub.endpoint, tmp_path / "hf", suite, "--repo", REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    card = " ".join(hub.repos[REPO].files["README.md"].decode().split())
    told = "the suite's judged experiments name different judges (mcqa: "
    assert card.count(told) == 2, card


def test_the_card_says_which_table_of_the_paper_a_runs_settings_are(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """An --all-samples run's card read like a plain run's (run.json records the selection,
    not the setting), and a run of shuffled options said nothing of its settings being no
    table's of the paper: a reader set both beside Table 1."""
    data = shutil.copytree(runs / "data", tmp_path / "data")
    (data / "synth_manifest.json").unlink()  # as the paper's data: the official filter applies
    made = []
    for name, extra in (("every", "--all-samples"), ("shuffled", "--option-order=shuffled")):
        args = ["eval", "--data", str(data), "--model", "baseline:random"]
        done = subprocess.run(
            [sys.executable, "-m", "proactivebench", *args, extra, "--out", str(tmp_path / name)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        made.append(tmp_path / name)
    pushed = push(hub.endpoint, tmp_path / "hf", *made, "--repo", REPO)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    card = " ".join(hub.repos[REPO].files["README.md"].decode().split())
    every = card.split("## `runs/every`")[1].split("## ")[0]
    assert "its settings are Table 4's: its numbers compare with that table's rows" in every
    shuffled = card.split("## `runs/shuffled`")[1].split("## ")[0]
    assert "not comparable with the paper's published numbers: " in shuffled
    assert "its settings are no table's or figure's of the paper" in shuffled
    # A run report --paper sets beside Fig. 9 is said to be Fig. 9's, not of no table (its
    # average is not compared: Fig. 9 prints none, over ROD and MVP-N only).
    icl = tmp_path / "icl"
    args = ["eval", "--data", str(data), "--model", "baseline:random", "--icl", "1"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "proactivebench",
            *args,
            "--scenarios",
            "ROD,MVP-N",
            "--out",
            str(icl),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    pushed = push(hub.endpoint, tmp_path / "hf", icl, "--repo", REPO)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    card = " ".join(hub.repos[REPO].files["README.md"].decode().split())
    section = card.split("## `runs/icl`")[1].split("## ")[0]
    assert "its settings are Fig. 9's: its numbers compare with that figure's averages" in section
    assert "no table's or figure's" not in section and "average is not comparable" not in section


def test_refused_token_is_one_line(hub: UploadHub, runs: Path, tmp_path: Path) -> None:
    done = push(hub.endpoint, tmp_path / "hf", runs / "run-a", "--repo", REPO, token="hf_wrong")
    assert_one_line_failure(done, "HTTP 401", REPO, "hf auth login", "HF_TOKEN")
    assert hub.repos == {}


def test_no_token_is_one_line_before_any_request(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    done = push(hub.endpoint, tmp_path / "hf", runs / "run-a", "--repo", REPO, token=None)
    assert_one_line_failure(done, "no Hugging Face token", REPO, "hf auth login")
    assert hub.requests == []


def test_missing_repo_without_permission_to_create_is_one_line(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    hub.may_create = False
    done = push(hub.endpoint, tmp_path / "hf", runs / "run-a", "--repo", REPO)
    assert_one_line_failure(done, "HTTP 403", REPO, "create the repo on the Hub")
    assert hub.repos == {} and hub.commits == []


@pytest.mark.parametrize(
    ("route", "body", "what"),
    [
        ("/api/repos/create", b"<html>sign in to the network</html>", "the repo"),
        ("/api/repos/create", b'{"no": "url"}', "the repo"),
        ("/tree/", b'{"not": "a list"}', "the files of"),
        ("/commit/", b"[1]", "the commit to"),
    ],
)
def test_an_answer_that_is_not_the_hubs_is_one_line(
    hub: UploadHub, runs: Path, tmp_path: Path, route: str, body: bytes, what: str
) -> None:
    """A proxy's page or JSON of another shape where the Hub's answer should be (creating the
    repo, listing its files, the commit): one line naming the endpoint, not a traceback."""
    hub.garbage[route] = body
    done = push(hub.endpoint, tmp_path / "hf", runs / "run-a", "--repo", REPO)
    assert_one_line_failure(
        done, f"{hub.endpoint} sent an answer that is not the Hub's for {what}", "HF_ENDPOINT"
    )
    assert hub.commits == []


def test_unreachable_hub_is_one_line(runs: Path, tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{s.getsockname()[1]}"
    done = push(endpoint, tmp_path / "hf", runs / "run-a", "--repo", REPO)
    assert_one_line_failure(done, "cannot reach", REPO, "HF_ENDPOINT")


@pytest.mark.parametrize(
    ("args", "wanted"),
    [
        (["--repo", "no-owner"], "--repo must be OWNER/NAME"),
        (["--repo", REPO, "--private"], "is neither a run directory"),
    ],
)
def test_bad_input_is_one_line(
    args: list[str], wanted: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Path
) -> None:
    target = runs / "run-a" if "no-owner" in args else runs / "data"
    code, text = run_cli(["push", str(target), *args], capsys)
    assert code == 1, text
    assert wanted in text and "Traceback" not in text


def test_a_directory_named_twice_is_pushed_once(runs: Path) -> None:
    """`push RUN RUN/ ./RUN` (a shell glob, a pasted list) is one run: planned, counted and
    given a section in the card once, as for a suite's output or a report named again."""
    from proactivebench.jobs.publish import dataset_card, plan_push

    run, suite = runs / "run-a", runs / "suite"
    again = [run, f"{run}/", Path(os.path.relpath(run)), suite, suite / ".." / "suite"]
    plan = plan_push(again)
    assert [r.repo_path for r in plan.runs] == ["runs/run-a", "runs/suite/mcqa", "runs/suite/hint"]
    assert plan.reports == ["reports/suite"]
    assert dataset_card(plan, REPO).count("## `runs/run-a`") == 1


def test_a_run_still_being_written_is_not_pushed(runs: Path) -> None:
    """A run another process holds (an eval still appending its results) would be published
    half-written: refused, naming the process; once it is released, pushed."""
    from clirun import held_by_another_process
    from proactivebench.core.errors import PushError
    from proactivebench.jobs.publish import plan_push

    with held_by_another_process(runs / "run-a") as pid:
        with pytest.raises(PushError, match=rf"run-a is in use by another run \(PID {pid}\)"):
            plan_push([runs / "run-a"])
        with pytest.raises(PushError, match=r"in use by another run"):
            plan_push([runs / "suite", runs / "run-a"])
    assert [r.repo_path for r in plan_push([runs / "run-a"]).runs] == ["runs/run-a"]


def test_a_torn_last_line_is_not_published(hub: UploadHub, runs: Path, tmp_path: Path) -> None:
    """A results.jsonl whose last line was cut short (a write killed midway): every reader
    leaves the fragment out, but push sent the file as it was, so the Hub's results.jsonl
    ended in a JSON fragment without a newline. Only its whole lines are pushed now, said."""
    run = tmp_path / "run-a"
    shutil.copytree(runs / "run-a", run, ignore=shutil.ignore_patterns("report"))
    data = (run / "results.jsonl").read_bytes()
    cut = data[:-30]
    (run / "results.jsonl").write_bytes(cut)
    whole = cut[: cut.rindex(b"\n") + 1]
    done = push(hub.endpoint, tmp_path / "hf", run, "--repo", REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    files = hub.repos[REPO].files
    assert files["runs/run-a/results.jsonl"] == whole
    warning = " ".join(done.stderr.split())
    assert f"{run / 'results.jsonl'} ends in a torn line ({len(cut) - len(whole)} bytes" in warning
    pushed = json.loads(files["runs/run-a/summary.json"])
    assert pushed["average"]["n"] == whole.count(b"\n")


def test_a_run_with_lines_no_reader_counts_is_not_pushed(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """A results.jsonl with a damaged line (hand-edited, another run's, bytes cut out) was
    pushed as it was, beside a card whose table (summary.json) does not count it: refused in
    one line naming the file and line, before any request to the Hub."""
    run = tmp_path / "run-a"
    shutil.copytree(runs / "run-a", run)
    with (run / "results.jsonl").open("a") as results:
        results.write('{"scenario": "ROD", "sample_id": "seven"}\n')
    number = len((run / "results.jsonl").read_text().splitlines())
    done = push(hub.endpoint, tmp_path / "hf", run, "--repo", REPO)
    assert_one_line_failure(done, f"results.jsonl:{number}: not a result line", "before pushing")
    assert hub.requests == [] and REPO not in hub.repos


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (
            {"settings": {"hint": True}},
            "played with other settings than the run's: hint: True (run.json: False)",
        ),
        ({"scenario": "XYZ"}, "scenario 'XYZ' is not one of"),
    ],
    ids=["another-runs-settings", "unknown-scenario"],
)
def test_a_whole_line_no_reader_counts_is_not_pushed(
    hub: UploadHub, runs: Path, tmp_path: Path, change: dict[str, object], named: str
) -> None:
    """A well-formed line of a run played with other settings (copied in from a hint run),
    or of a scenario the benchmark does not have, is no line of this run either: refused as
    the damaged line is, naming the line and why, before any request to the Hub."""
    run = tmp_path / "run-a"
    shutil.copytree(runs / "run-a", run)
    first = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    settings = {**first["settings"], **change.get("settings", {})}  # type: ignore[dict-item]
    stranger = {**first, **change, "settings": settings}
    with (run / "results.jsonl").open("a") as results:
        results.write(json.dumps(stranger) + "\n")
    number = len((run / "results.jsonl").read_text().splitlines())
    done = push(hub.endpoint, tmp_path / "hf", run, "--repo", REPO)
    assert_one_line_failure(done, f"results.jsonl:{number}: {named}", "before pushing")
    assert hub.requests == [] and REPO not in hub.repos


def test_a_report_directory_pushed_on_its_own_must_be_its_runs_lines(
    hub: UploadHub, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report A B --out DIR`, a line of A moved out, then `push DIR`: the report was
    published with n = 14 for A, whose results.jsonl now holds 13 lines, exit 0 without a
    word. A report named on its own is now refused, as a run's stale report/ is left out,
    naming it and the command that rebuilds it; so is one whose runs are not at hand."""
    a, b, cmp = tmp_path / "a", tmp_path / "b", tmp_path / "cmp"
    shutil.copytree(runs / "run-a", a, ignore=shutil.ignore_patterns("report"))
    shutil.copytree(runs / "suite" / "mcqa", b, ignore=shutil.ignore_patterns("report"))
    code, output = run_cli(["report", str(a), str(b), "--out", str(cmp)], capsys)
    assert code == 0, output
    from proactivebench.jobs.publish import plan_push

    assert "reports/cmp/report.html" in plan_push([cmp]).files  # as built: pushed
    lines = (a / "results.jsonl").read_text().splitlines(keepends=True)
    (a / "results.jsonl").write_text("".join(lines[1:]))

    done = push(hub.endpoint, tmp_path / "hf", cmp, "--repo", REPO)
    assert_one_line_failure(
        done, f"{cmp} was not built from its runs' lines", "proactivebench report ", "--out"
    )
    assert REPO not in hub.repos or not hub.repos[REPO].files

    shutil.move(a, tmp_path / "moved")
    done = push(hub.endpoint, tmp_path / "hf", cmp, "--repo", REPO)
    assert_one_line_failure(done, f"{cmp} was built from runs that are not at hand", str(a))


def test_the_cards_average_over_fewer_scenarios_says_which_and_why_it_is_apart(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run of ROD and QD only: the card's row read `| average | 4 | ...` with no caution,
    where eval prints "average of 2 (ROD, QD)" and report --paper sets the average apart.
    The card now labels it as eval's table does and says why in "Read with care"."""
    from proactivebench.jobs.publish import dataset_card, plan_push

    run = tmp_path / "rq"
    args = ["eval", "--data", str(runs / "data"), "--model", "baseline:oracle"]
    code, output = run_cli(
        [*args, "--scenarios", "ROD,QD", "--out", str(run), "--no-report"], capsys
    )
    assert code == 0, output
    assert "average of 2 (ROD, QD)" in output  # eval's own label
    card = dataset_card(plan_push([run]), REPO)
    table = [line for line in card.splitlines() if line.startswith("| ")]
    assert table[-1].startswith("| average of 2 (ROD, QD) | 4 | 100.0 |"), table
    caution = "the average is not comparable with the paper's: average of other scenarios"
    assert caution in card.split("Read with care:")[1].split("| scenario")[0]
    # A run of all seven keeps the plain label, and no such caution.
    full = dataset_card(plan_push([runs / "run-a"]), REPO)
    assert "| average | 14 |" in full and caution not in full


def test_a_backtick_in_a_name_is_shown_as_it_is_and_stays_inert() -> None:
    """A folder named ``x|y`<b>*z*`` was shown as `runs/x|y'<b>*z*` (its backtick changed to
    a quote), where the docs say a name shows as it is. Each name is now a code span fenced by
    more backticks than it holds (CommonMark): rendered, the exact name, no markup."""
    from markdown_it import MarkdownIt

    from proactivebench.jobs.publish import PushedRun, PushPlan, dataset_card

    names = ["runs/x|y`<b>*z*", "runs/``a```", "`runs/b`"]
    config = {"model": "m`n", "settings": {"mode": "mcqa"}, "data_dir": "/d/``da"}
    plan = PushPlan(runs=[PushedRun(n, config, None) for n in names], reports=["reports/`r"])
    html = (
        MarkdownIt("commonmark")
        .enable("table")
        .render(dataset_card(plan, REPO).partition("\n---\n")[2])
    )
    for name in names:
        escaped = name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        assert f"<h2><code>{escaped}</code></h2>" in html, html
    assert "<code>m`n</code>" in html and "<code>``da</code>" in html
    assert '<a href="reports/%60r/report.html"><code>reports/`r</code></a>' in html
    assert "<b>" not in html and "<em>" not in html


def test_a_suite_whose_experiment_lost_its_folder_is_refused(
    hub: UploadHub, runs: Path, tmp_path: Path
) -> None:
    """Tryout: a suite pushed again with one experiment's folder moved away deleted that
    experiment from the Hub (`runs/OUT/` is replaced whole), said only after the commit.
    suite.json still lists it: refused before any request, naming it, the first push too."""
    suite = tmp_path / "suite"
    shutil.copytree(runs / "suite", suite)
    first = push(hub.endpoint, tmp_path / "hf", suite, "--repo", REPO)
    assert first.returncode == 0, first.stdout + first.stderr
    before, asked = dict(hub.repos[REPO].files), len(hub.requests)
    shutil.move(suite / "hint", tmp_path / "hint")
    done = push(hub.endpoint, tmp_path / "hf", suite, "--repo", REPO)
    assert_one_line_failure(
        done, "lists the experiment hint", f"{suite / 'hint'} holds no run", "put its run"
    )
    done = push(hub.endpoint, tmp_path / "hf", suite, "--repo", "someone/fresh")
    assert_one_line_failure(done, "lists the experiment hint")
    assert hub.repos[REPO].files == before and len(hub.requests) == asked
