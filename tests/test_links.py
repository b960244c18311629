"""Files of a run, report, cache or data directory are never written through a link that leads
outside it (issue 29, item 6): a link in a file's place is refused by name (appends, locks,
SQLite files) or replaced by the new file (files written whole), and the file it pointed to is
left exactly as it was."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from clirun import eval_args, run_cli
from handmade import full_dataset
from proactivebench.core.errors import LinkRefusedError
from proactivebench.core.paths import open_to_write, staged_folder, write_whole
from proactivebench.data.download import RemoteFile, _State
from proactivebench.data.synth import MANIFEST_NAME, generate
from proactivebench.models.cache import ResponseCache
from proactivebench.report import write_report

PRECIOUS = b"a file outside the run, without a final newline"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    """A file the user cares about, outside every run directory."""
    path = tmp_path / "elsewhere" / "precious.txt"
    path.parent.mkdir()
    path.write_bytes(PRECIOUS)
    return path


def refused(code: int, text: str, name: str) -> None:
    assert code == 1 and "Traceback" not in text, text
    assert name in text and "symbolic link" in text, text


@pytest.mark.parametrize("name", ["results.jsonl", ".lock", ".lock.pid"])
def test_eval_refuses_a_link_in_the_run_and_leaves_its_target_alone(
    data: Path, tmp_path: Path, outside: Path, capsys, name: str
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / name).symlink_to(outside)
    code, text = run_cli([*eval_args(data, run), "--no-report"], capsys)
    refused(code, text, name)
    assert outside.read_bytes() == PRECIOUS


@pytest.mark.parametrize("suffix", ["", "-wal"])
def test_a_linked_response_cache_is_refused_by_name(
    tmp_path: Path, outside: Path, suffix: str
) -> None:
    cache = tmp_path / "responses.sqlite"
    Path(f"{cache}{suffix}").symlink_to(outside)
    with pytest.raises(LinkRefusedError, match="symbolic link") as refusal:
        ResponseCache(cache)
    assert f"{cache}{suffix}" in str(refusal.value)
    assert outside.read_bytes() == PRECIOUS


def test_files_written_whole_replace_a_link_and_never_follow_it(
    tmp_path: Path, outside: Path
) -> None:
    path = tmp_path / "summary.json"
    path.symlink_to(outside)
    write_whole(path, "{}\n")
    assert not path.is_symlink() and path.read_text() == "{}\n"
    assert outside.read_bytes() == PRECIOUS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "summary.json"]


def test_a_report_replaces_linked_files_and_refuses_a_linked_folder(
    data: Path, tmp_path: Path, outside: Path, capsys, caplog
) -> None:
    run = tmp_path / "run"
    assert run_cli([*eval_args(data, run), "--no-report"], capsys)[0] == 0
    report = run / "report"
    report.mkdir()
    (report / "report.html").symlink_to(outside)
    thumbs = tmp_path / "thumbs.sqlite"
    thumbs.symlink_to(outside)
    with caplog.at_level(logging.WARNING):
        write_report([run], thumb_cache=thumbs)  # the cache is only a saving: told, not used
    assert "<html" in (report / "report.html").read_text()
    assert outside.read_bytes() == PRECIOUS
    assert any(str(thumbs) in r.getMessage() for r in caplog.records)

    elsewhere = outside.parent
    (report / "tables").rename(tmp_path / "old-tables")
    (report / "tables").symlink_to(elsewhere, target_is_directory=True)
    code, text = run_cli(["report", str(run), "--no-thumb-cache"], capsys)
    refused(code, text, str(report / "tables"))
    assert sorted(p.name for p in elsewhere.iterdir()) == ["precious.txt"]


def test_staged_folder_refuses_a_linked_folder(tmp_path: Path, outside: Path) -> None:
    folder = tmp_path / "report"
    folder.symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(LinkRefusedError, match="symbolic link"), staged_folder(folder) as stage:
        (stage / "index.html").write_text("new")
    assert sorted(p.name for p in outside.parent.iterdir()) == ["precious.txt"]


def test_synthetic_data_replaces_links_in_its_folder(tmp_path: Path, outside: Path) -> None:
    out = tmp_path / "synth"
    out.mkdir()
    (out / MANIFEST_NAME).symlink_to(outside)
    image = out / "Realistic-Occlusion-Dataset" / "000000" / "0.png"  # the first ROD image
    image.parent.mkdir(parents=True)
    image.symlink_to(outside)
    generate(out, per_scenario=1, seed=0, split="test")
    assert not (out / MANIFEST_NAME).is_symlink() and not image.is_symlink()
    assert outside.read_bytes() == PRECIOUS


def test_a_download_marker_replaces_a_link(tmp_path: Path, outside: Path) -> None:
    state = _State(tmp_path / "data")
    state.make()
    remote = RemoteFile("test/x.zip", "x.zip", 3, "etag", "http://127.0.0.1/x.zip", {})
    state.marker("x.zip").symlink_to(outside)
    state.write_marker(remote, "abc", ["x/1.png"])
    assert state.read_marker("x.zip") == {
        **remote_fields(remote),
        "commit": "abc",
        "files": ["x/1.png"],
    }
    assert outside.read_bytes() == PRECIOUS


def remote_fields(remote: RemoteFile) -> dict[str, object]:
    return {"name": remote.name, "etag": remote.etag, "size": remote.size}


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(LinkRefusedError, match="FIFO"):
        open_to_write(fifo, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
