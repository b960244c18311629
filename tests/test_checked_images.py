"""The checks before a run, remembered and limited (issue 34, item 1): each version of an image
file has its header read once, also across processes (`data.checked`, beside the response
cache); a file changed since (size, modification time, or replaced) is read again, and a bomb
swapped in after a clean check is refused before the run as always; `--limit` checks what its
episodes may show, not the whole data; the runs of one engine (a suite's experiments) load the
records and check the images once; the check runs off the event loop.

A new process is stood for by emptying the in-process memo of headers (`_GOOD_HEADERS`), so
that only the memory on disk can spare a read; reads are counted at `opened_image`, the one
door to Pillow.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import threading
from pathlib import Path

import pytest
from PIL import Image

from clirun import run_cli
from proactivebench.core.errors import DataErrors
from proactivebench.data import images as images_module
from proactivebench.data.checked import NAME, CheckedImages
from proactivebench.data.synth import generate
from proactivebench.jobs.evaluate import evaluate
from proactivebench.jobs.suite import parse_suite, run_suite
from proactivebench.models import load_model
from proactivebench.models.cache import ResponseCache
from proactivebench.run import selection
from proactivebench.run.engine import RunEngine
from proactivebench.run.selection import DataChecks, choose_episodes
from proactivebench.run.settings import EvalSettings
from proactivebench.testing.server import FakeOpenAI
from sqlitefiles import FOREIGN, damage_schema


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The image files whose header is read from now on, in a process that has read none."""
    monkeypatch.setattr(images_module, "_GOOD_HEADERS", set())
    opened: list[str] = []
    real = images_module.opened_image

    def counted(path, *args, **kwargs):
        opened.append(os.path.realpath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(images_module, "opened_image", counted)
    return opened


def new_process(monkeypatch: pytest.MonkeyPatch, reads: list[str]) -> None:
    """Forget what this process read (as a new process would) and the reads counted so far."""
    monkeypatch.setattr(images_module, "_GOOD_HEADERS", set())
    reads.clear()


def rod_data(root: Path, per_scenario: int = 2) -> Path:
    generate(root, per_scenario=per_scenario, seed=0, scenarios=["ROD"])
    return root


def shown(data: Path, settings: EvalSettings) -> list[str]:
    """The real paths of every image the chosen episodes may show, once each, sorted."""
    episodes = choose_episodes(data, settings).episodes
    return sorted({os.path.realpath(data / p) for e in episodes for p in e.image_paths()})


def real(*paths: Path) -> list[str]:
    return sorted(os.path.realpath(p) for p in paths)


def check(data: Path, memory: CheckedImages | None, **settings: object) -> None:
    choose_episodes(data, EvalSettings(**settings), checks=DataChecks(memory))  # type: ignore[arg-type]


def checked_once(tmp_path: Path) -> tuple[Path, CheckedImages, list[Path]]:
    """ROD data checked once with a memory (its images, in order, for the test to change)."""
    data = rod_data(tmp_path / "data")
    memory = CheckedImages(tmp_path / "cache" / NAME)
    check(data, memory)
    return data, memory, sorted((data / "Realistic-Occlusion-Dataset").rglob("*.png"))


def test_headers_read_once_are_remembered_for_later_processes(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, memory, _ = checked_once(tmp_path)
    every = sorted(reads)
    assert every == shown(data, EvalSettings()) and len(every) > 4
    new_process(monkeypatch, reads)
    check(data, memory)
    assert reads == []  # all remembered: only stat-ed
    new_process(monkeypatch, reads)
    check(data, None)  # no memory: every header read again
    assert sorted(reads) == every


def test_a_file_changed_after_its_check_is_checked_again(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, memory, images = checked_once(tmp_path)
    grown, touched, replaced = images[0], images[1], images[2]
    # Another size, written in place with its old modification time put back (as `cp -p`,
    # `rsync -t` and `tar x` do): only the size tells.
    kept = grown.stat()
    Image.new("RGB", (40, 30), (9, 9, 9)).save(grown)
    os.utime(grown, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    assert grown.stat().st_ino == kept.st_ino and grown.stat().st_size != kept.st_size
    # The same bytes, another modification time.
    os.utime(touched, ns=(10**18, 10**18))
    # Another file (another inode) moved in place, with the old size and modification time.
    before = replaced.stat()
    shutil.copyfile(replaced, tmp_path / "copy.png")
    os.replace(tmp_path / "copy.png", replaced)
    os.utime(replaced, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert replaced.stat().st_size == before.st_size and replaced.stat().st_ino != before.st_ino
    new_process(monkeypatch, reads)
    check(data, memory)
    assert sorted(reads) == real(grown, touched, replaced)
    # Read again, remembered again: the next process reads nothing.
    new_process(monkeypatch, reads)
    check(data, memory)
    assert reads == []


def test_a_bomb_swapped_in_after_a_clean_check_is_refused_before_the_run(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = rod_data(tmp_path / "data")
    memory = CheckedImages(tmp_path / "cache" / NAME)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 150_000)  # above every image generated
    check(data, memory)
    victim = sorted((data / "Realistic-Occlusion-Dataset").rglob("*.png"))[0]
    Image.new("RGB", (600, 600)).save(victim)  # 360,000 pixels
    new_process(monkeypatch, reads)
    with pytest.raises(DataErrors, match=r"above Pillow's pixel limit"):
        check(data, memory)
    assert reads == real(victim)  # the others remembered, this one read and refused
    # Passed under a higher limit, remembered; under a lower one, read again and refused.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 400_000)
    check(data, memory)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 150_000)
    new_process(monkeypatch, reads)
    with pytest.raises(DataErrors, match=r"above Pillow's pixel limit"):
        check(data, memory)
    assert real(victim)[0] in reads


@pytest.mark.parametrize("moved", ["file", "folder"])
def test_a_link_out_of_the_data_dir_after_a_clean_check_is_refused_before_the_run(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch, moved: str
) -> None:
    """A remembered image is taken on one `lstat` only where its path holds no link: a file
    moved out and linked back (the same file, the same version) is refused as it always was."""
    data, memory, images = checked_once(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    victim = images[0] if moved == "file" else images[0].parent
    os.replace(victim, outside / victim.name)  # a rename: size, time and inode kept
    victim.symlink_to(outside / victim.name, target_is_directory=moved == "folder")
    new_process(monkeypatch, reads)
    with pytest.raises(DataErrors, match="leaves the data dir"):
        check(data, memory)


def test_a_file_that_failed_is_read_again_and_refused_again(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = rod_data(tmp_path / "data")
    memory = CheckedImages(tmp_path / "cache" / NAME)
    victim = sorted((data / "Realistic-Occlusion-Dataset").rglob("*.png"))[0]
    victim.write_bytes(b"\x89PNG\r\n\x1a\n" + b"not a png at all")
    for _ in range(2):
        new_process(monkeypatch, reads)
        with pytest.raises(DataErrors, match="not a readable image"):
            check(data, memory)
        assert real(victim)[0] in reads


def test_limit_checks_only_what_its_episodes_may_show(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = rod_data(tmp_path / "data", per_scenario=4)
    # The last sample's images are broken: a run of the first two never shows them.
    last = sorted((data / "Realistic-Occlusion-Dataset").iterdir())[-1]
    for image in last.rglob("*.png"):
        image.write_bytes(b"broken")
    check(data, None, limit=2)
    assert sorted(reads) == shown(data, EvalSettings(limit=2))
    assert not set(real(*last.rglob("*.png"))) & set(reads)
    with pytest.raises(DataErrors, match="not a readable image"):
        check(data, None)


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The data dirs whose records are read (`load_dataset`) from now on."""
    loaded: list[Path] = []
    real_load = selection.load_dataset

    def counted_load(root, *args, **kwargs):
        loaded.append(root)
        return real_load(root, *args, **kwargs)

    monkeypatch.setattr(selection, "load_dataset", counted_load)
    return loaded


def test_the_runs_of_one_engine_read_records_and_check_images_once(
    tmp_path: Path, reads: list[str], loads: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = rod_data(tmp_path / "data")
    scandirs: list[str] = []
    real_scandir = os.scandir

    def counted_scandir(path):
        scandirs.append(os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", counted_scandir)
    engine = RunEngine()
    for settings in (EvalSettings(), EvalSettings(hint=True), EvalSettings(history=True)):
        choose_episodes(data, settings, checks=engine.checks)
        if len(loads) == 1:
            first_reads, first_scandirs = len(reads), len(scandirs)
    assert len(loads) == 1 and len(reads) == first_reads and len(scandirs) == first_scandirs
    # A record file written since is read again.
    records = data / "Realistic-Occlusion-Dataset_preprocessed.jsonl"
    os.utime(records, ns=(10**18, 10**18))
    choose_episodes(data, EvalSettings(), checks=engine.checks)
    assert len(loads) == 2


def test_a_suite_reads_its_records_and_headers_once_for_all_experiments(
    tmp_path: Path, reads: list[str], loads: list[Path]
) -> None:
    data = rod_data(tmp_path / "data")
    three = "".join(f'[[experiment]]\nid = "{n}"\n{s}\n' for n, s in SUITE)
    suite = parse_suite(three, "three.toml")
    cache = ResponseCache(tmp_path / "cache" / "responses.sqlite")
    with FakeOpenAI() as server, contextlib.closing(cache):
        model = lambda: load_model(f"openai:m@{server.url}")  # noqa: E731
        outcome = asyncio.run(
            run_suite(data, suite.experiments, tmp_path / "out", model=model, cache=cache)
        )
    assert [e.status for e in outcome.experiments] == ["done"] * 3
    assert len(loads) == 1
    assert sorted(reads) == shown(data, EvalSettings())  # each header once, not three times
    assert (tmp_path / "cache" / NAME).is_file()


#: Three experiments that show the same images: plain, with the hint, with the history.
SUITE = (("plain", ""), ("hint", "hint = true"), ("history", "history = true"))


def test_eval_remembers_the_checks_beside_its_response_cache(
    tmp_path: Path,
    reads: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = rod_data(tmp_path / "data")
    cache = tmp_path / "caches" / "responses.sqlite"
    with FakeOpenAI() as server:
        for run in ("first", "second"):
            new_process(monkeypatch, reads)
            args = ["eval", "--data", str(data), "--model", f"openai:m@{server.url}"]
            args += ["--out", str(tmp_path / run), "--cache", str(cache), "--no-report"]
            code, out = run_cli(args, capsys)
            assert code == 0, out
            if run == "first":
                first = sorted(reads)
    assert first == shown(data, EvalSettings()) and (cache.parent / NAME).is_file()
    assert reads == []


def test_a_damaged_memory_is_told_removed_and_the_run_checks_itself(
    tmp_path: Path, reads: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    data = rod_data(tmp_path / "data")
    where = tmp_path / "cache" / NAME
    where.parent.mkdir()
    CheckedImages(where).remember([("/elsewhere/a.png", 1, 2, 3, 4)])
    damage_schema(where)
    check(data, CheckedImages(where))
    assert sorted(reads) == shown(data, EvalSettings())
    assert "damaged, removed" in caplog.text and not where.exists()


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_a_file_of_something_else_in_its_place_is_left_as_it_is(
    tmp_path: Path, reads: list[str], caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    """Not SQLite, or another program's database: the run reads the headers itself, says so
    once, and the file is neither removed (as a damaged memory is) nor written into."""
    data = rod_data(tmp_path / "data")
    where = tmp_path / "cache" / NAME
    where.parent.mkdir()
    FOREIGN[kind](where)
    before = where.read_bytes()
    check(data, CheckedImages(where))
    assert sorted(reads) == shown(data, EvalSettings())
    assert "left as it is" in caplog.text and where.read_bytes() == before
    assert [p.name for p in where.parent.iterdir()] == [NAME]


def test_the_check_runs_off_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import proactivebench.jobs.evaluate as runner

    data = rod_data(tmp_path / "data", per_scenario=1)
    threads: list[threading.Thread] = []
    real = runner.choose_episodes

    def noted(*args, **kwargs):
        threads.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "choose_episodes", noted)
    evaluate(data, load_model("baseline:oracle"), tmp_path / "run")
    assert len(threads) == 1 and threads[0] is not threading.main_thread()


def test_a_folders_rows_read_at_once_are_those_of_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many paths under one folder are recalled as one range of the memory's keys: the
    result is the per-path look-up's, for names on either side of the separator in code-point
    order ("-", "0", "~", non-ASCII), nested folders included; the rows of folders whose names
    extend the data dir's ("data-x", "data0") are not among them."""
    memory = CheckedImages(tmp_path / "cache" / NAME)
    inside = os.path.realpath(tmp_path / "data") + os.sep
    names = ["0.png", "-.png", "~.png", "sub/b.png", "sub/deeper/c.png", "é/ü.png", "Z.png"]
    ours = [inside + n for n in names]
    others = [str(tmp_path.resolve() / n) for n in ["data-x/a.png", "data0/a.png", "data.png"]]
    versions = [(p, 10 + i, 20 + i, 30 + i, 89_478_485) for i, p in enumerate(ours + others)]
    memory.remember(versions)
    asked = [*ours[:-1], inside + "never-remembered.png"]
    expected = sorted(versions[: len(ours) - 1])
    monkeypatch.setattr("proactivebench.data.checked._RANGE_FROM", 10**9)
    assert sorted(memory.recall(asked, under=inside)) == expected  # one path at a time
    monkeypatch.setattr("proactivebench.data.checked._RANGE_FROM", 1)
    assert sorted(memory.recall(asked, under=inside)) == expected  # the folder's range


def mounts(tmp_path: Path, *lines: str) -> Path:
    """A list of mounts in the system's format (device, mount point, type, options, 0, 0)."""
    listed = tmp_path / "mounts"
    listed.write_text("".join(f"dev {line} rw 0 0\n" for line in lines), encoding="utf-8")
    return listed


def test_a_network_file_system_is_told_by_the_mount_that_holds_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mount with the longest mount point above a path's real path says its type; a mount
    point that only starts with the same letters ("/mntx") holds nothing of /mnt; spaces in
    mount points come escaped (\\040); no list of mounts: not a network one."""
    from proactivebench.data import validate

    listed = mounts(
        tmp_path,
        "/ ext4",
        "/mnt nfs4",
        "/mnt/local xfs",
        "/mntx lustre",
        "/srv/my\\040data fuse.sshfs",
    )
    monkeypatch.setattr(validate, "_MOUNTS", str(listed))
    told = {
        path: validate.on_network_file_system(path)
        for path in [
            "/mnt/a/b.png",
            "/mnt/local/b.png",
            "/mnt",
            "/mntx/b",
            "/home/b",
            "/srv/my data/b.png",
            "/srv/my/b.png",
        ]
    }
    assert told == {
        "/mnt/a/b.png": True,
        "/mnt/local/b.png": False,
        "/mnt": True,
        "/mntx/b": True,  # lustre
        "/home/b": False,
        "/srv/my data/b.png": True,
        "/srv/my/b.png": False,
    }
    monkeypatch.setattr(validate, "_MOUNTS", str(tmp_path / "no-such-list"))
    assert validate.on_network_file_system("/mnt/a/b.png") is False


@pytest.mark.parametrize("kind, pooled", [("ext4", False), ("nfs4", True)])
def test_headers_go_to_a_pool_only_on_a_network_file_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, pooled: bool
) -> None:
    """Reading a header is Python work, which threads only take turns at: the headers are read
    in the checking thread unless the data lies on a network file system, whose reads wait,
    when a pool reads them. Either way the same problems, in the data's order."""
    from proactivebench.data import validate

    data = rod_data(tmp_path / "data", per_scenario=12)
    monkeypatch.setattr(validate, "_MOUNTS", str(mounts(tmp_path, f"{data.resolve()} {kind}")))
    pngs = sorted((data / "Realistic-Occlusion-Dataset").rglob("*.png"))
    assert len(pngs) > validate._POOL_FROM
    for broken in (pngs[3], pngs[-2]):
        broken.write_bytes(b"not an image")
    readers: list[str] = []
    real = images_module.opened_image

    def counted(path, *args, **kwargs):
        readers.append(threading.current_thread().name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(images_module, "opened_image", counted)
    monkeypatch.setattr(images_module, "_GOOD_HEADERS", set())
    with pytest.raises(DataErrors) as refused:
        check(data, None)
    in_pool = [name for name in readers if name.startswith("image-check")]
    assert len(readers) >= validate._POOL_FROM  # every image an episode may show, read once
    assert len(in_pool) == (len(readers) if pooled else 0)
    told = [str(problem) for problem in refused.value.problems]
    assert len(told) == 2 and all("not a readable image" in t for t in told)
    assert [pngs[3].name in told[0], pngs[-2].name in told[1]] == [True, True]


@pytest.mark.parametrize("kind, pooled", [("xfs", False), ("lustre", True)])
def test_a_reruns_stats_go_to_a_pool_only_on_a_network_file_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, pooled: bool
) -> None:
    """A rerun `stat`s each image it remembers: in the checking thread, or on a network file
    system (where each `stat` waits on the server) by a pool; what passed is the same."""
    from proactivebench.data import validate

    data = rod_data(tmp_path / "data", per_scenario=12)
    memory = CheckedImages(tmp_path / "cache" / NAME)
    monkeypatch.setattr(images_module, "_GOOD_HEADERS", set())
    check(data, memory)  # the first run: every header read and remembered
    monkeypatch.setattr(validate, "_MOUNTS", str(mounts(tmp_path, f"{data.resolve()} {kind}")))
    monkeypatch.setattr(images_module, "_GOOD_HEADERS", set())  # a new process
    statted: list[tuple[str, int]] = []
    real = validate.passed_unchanged

    def counted(paths, max_bytes):
        statted.append((threading.current_thread().name, len(paths)))
        return real(paths, max_bytes)

    monkeypatch.setattr(validate, "passed_unchanged", counted)
    opened: list[str] = []
    monkeypatch.setattr(images_module, "opened_image", lambda path, *a, **k: opened.append(path))
    check(data, memory)
    assert opened == []  # all remembered, all unchanged: nothing read
    in_pool = sum(n for name, n in statted if name.startswith("image-check"))
    assert sum(n for _, n in statted) >= validate._POOL_FROM
    assert in_pool == (sum(n for _, n in statted) if pooled else 0)
