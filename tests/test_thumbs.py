"""Thumbnails of the report's episode viewer: decoded at a reduced scale, made in a process
pool when there are many, and kept across reports in a content-keyed cache."""

from __future__ import annotations

import base64
import io
import logging
import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from clirun import eval_args, run_cli
from proactivebench.data import thumbnails
from proactivebench.data.synth import generate
from proactivebench.data.thumbnails import make_many, make_thumbnail
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.report import build, write_report
from proactivebench.report.thumbcache import ThumbCache
from proactivebench.report.thumbs import THUMB_EDGE, Thumbnails
from sqlitefiles import FOREIGN, damage_schema


def photo(seed: int, size: tuple[int, int] = (640, 480)) -> Image.Image:
    """A photo-like image: smooth colour fields with detail, different in every region."""
    rng = np.random.default_rng(seed)
    width, height = size
    x = np.linspace(0, 1, width)[None, :]
    y = np.linspace(0, 1, height)[:, None]
    channels = [
        127 + 100 * np.sin(2 * np.pi * (a * x + b * y) + c) for a, b, c in rng.uniform(1, 4, (3, 3))
    ]
    pixels = np.stack(channels, axis=2) + rng.normal(0, 4, (height, width, 3))
    return Image.fromarray(pixels.clip(0, 255).astype(np.uint8))


def decoded(data: bytes | str | None) -> np.ndarray:
    assert data is not None
    if isinstance(data, str):  # a data URL
        data = base64.b64decode(data.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=float)


def plain_thumbnail(path: Path, crop: tuple[float, ...] | None) -> np.ndarray:
    """The slow, obvious way: the whole file decoded, cropped, then shrunk."""
    with Image.open(path) as image:
        whole = image.convert("RGB")
    if crop is not None:
        whole = whole.crop(crop)
    whole.thumbnail((THUMB_EDGE, THUMB_EDGE), Image.Resampling.BILINEAR)
    return np.asarray(whole, dtype=float)


@pytest.mark.parametrize(
    "crop",
    [None, (100.0, 50.0, 420.0, 290.0), (333.4, 17.6, 611.2, 402.9), (300.0, 200.0, 350.0, 240.0)],
)
def test_a_crop_decoded_at_reduced_scale_shows_the_same_region(
    tmp_path: Path, crop: tuple[float, ...] | None
) -> None:
    path = tmp_path / "a.jpg"
    photo(1).save(path, quality=90)
    made, _, _ = make_thumbnail(str(path), ("a.jpg", crop, None), THUMB_EDGE, None)
    fast, slow = decoded(made), plain_thumbnail(path, crop)
    assert fast.shape == slow.shape
    assert np.abs(fast - slow).mean() < 6  # WebP at quality 50 and the scaling differ a little
    if crop is not None:  # ... while the region next to it differs a lot
        shifted = (crop[0] - 40, crop[1] + 30, crop[2] - 40, crop[3] + 30)
        assert np.abs(fast - plain_thumbnail(path, shifted)).mean() > 15


def test_a_jpeg_decodes_at_reduced_scale(tmp_path: Path, monkeypatch) -> None:
    """The decoder is asked for a reduced size: a 1/4 scale for a 112 px thumbnail of 640 px,
    1/2 for a crop of half the image."""
    path = tmp_path / "a.jpg"
    photo(2).save(path)
    asked: list[tuple[int, int]] = []
    draft = Image.Image.draft
    monkeypatch.setattr(
        "PIL.JpegImagePlugin.JpegImageFile.draft",
        lambda self, mode, size: asked.append(size) or draft(self, mode, size),
        raising=False,
    )
    make_thumbnail(str(path), ("a.jpg", None, None), THUMB_EDGE, None)
    make_thumbnail(str(path), ("a.jpg", (0.0, 0.0, 320.0, 240.0), None), THUMB_EDGE, None)
    assert asked == [(112, 84), (224, 168)]


def jpegs(root: Path, count: int) -> list[tuple[str, tuple]]:
    """`count` views of JPEG and PNG files under `root`, half of them cropped."""
    jobs = []
    for n in range(count):
        name = f"img/{n}.{'png' if n % 5 == 0 else 'jpg'}"
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        photo(n, (160 + 8 * n, 120)).save(root / name)
        crop = (10.0 + n, 5.0, 150.0, 110.0) if n % 2 else None
        jobs.append((str(root / name), (name, crop, None)))
    return jobs


def test_the_pool_makes_the_same_thumbnails_as_inline_and_leaves_no_process(
    tmp_path: Path, monkeypatch
) -> None:
    jobs = jpegs(tmp_path, 24)
    jobs.append((str(tmp_path / "missing.jpg"), ("missing.jpg", None, None)))
    inline = make_many(jobs, THUMB_EDGE, None, pool_min_views=len(jobs), hashed=True)
    monkeypatch.setattr(thumbnails, "_cores", lambda: 2)  # a pool even on one core
    pooled = make_many(jobs, THUMB_EDGE, None, pool_min_views=0, hashed=True)
    assert pooled == inline
    assert inline[-1] == (None, None, None) and all(all(made) for made in inline[:-1])
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize(("load", "pooled"), [(0.2, True), (4.0, False)])
def test_the_pool_is_used_only_when_the_load_leaves_cores_free(
    tmp_path: Path, monkeypatch, load: float, pooled: bool
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    batch = thumbnails.Batch(jpegs(tmp_path, 70), THUMB_EDGE, None, pool_min_views=0)
    try:
        assert (batch._pool is not None) == pooled  # a load of 4 on 4 cores leaves 1
    finally:
        batch.close()


def test_an_interrupted_report_leaves_no_worker_behind(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C while the plots are drawn, the thumbnails being made by workers meanwhile: the
    workers are stopped, and no report is half-written."""
    _, run = played_run(tmp_path)
    monkeypatch.setattr(thumbnails, "POOL_MIN_VIEWS", 0)
    monkeypatch.setattr(thumbnails, "_cores", lambda: 2)

    def interrupted(*args: object, **options: object) -> None:
        assert multiprocessing.active_children()  # the workers at work
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "_plots", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_report([run], thumb_cache=None)
    assert multiprocessing.active_children() == []
    assert not (run / "report").exists()


def played_run(tmp_path: Path) -> tuple[Path, Path]:
    data, run = tmp_path / "data", tmp_path / "run"
    generate(data, per_scenario=1, seed=3)
    evaluate(data, load_model("baseline:proactive"), run)
    return data, run


class MakeCounter:
    """Counts the thumbnails made (not taken from the cache), in this process."""

    def __init__(self, monkeypatch) -> None:
        self.count = 0
        real = thumbnails.make_thumbnail

        def counted(*args, **kwargs):
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(thumbnails, "make_thumbnail", counted)


def test_a_second_report_takes_its_thumbnails_from_the_cache(tmp_path: Path, monkeypatch) -> None:
    _, run = played_run(tmp_path)
    cache = tmp_path / "thumbs.sqlite"
    made = MakeCounter(monkeypatch)
    write_report([run], thumb_cache=cache)
    first = (run / "report" / "report.html").read_text()
    assert made.count > 10 and first.count("data:image/") > 10
    made.count = 0
    write_report([run], thumb_cache=cache)
    assert made.count == 0
    assert (run / "report" / "report.html").read_text() == first


def test_a_changed_image_gets_a_new_thumbnail(tmp_path: Path) -> None:
    (tmp_path / "img").mkdir()
    path = tmp_path / "img" / "a.jpg"
    photo(3).save(path)
    key = ("img/a.jpg", (10.0, 10.0, 300.0, 200.0), None)
    before = Thumbnails(tmp_path, cache=ThumbCache(tmp_path / "c.sqlite"))
    old = before.url(key)
    photo(4).save(path)  # new content (and a new modification time)
    os.utime(path, ns=(1, 1))
    after = Thumbnails(tmp_path, cache=ThumbCache(tmp_path / "c.sqlite"))
    new = after.url(key)
    assert after.made == 1 and new != old
    assert np.abs(decoded(new) - plain_thumbnail(path, key[1])).mean() < 6


@pytest.mark.parametrize("fault", ["damaged", "directory", *sorted(FOREIGN)])
def test_a_broken_thumbnail_cache_still_gives_the_report(
    tmp_path: Path, caplog, fault: str
) -> None:
    """A cache that cannot be used is told once and the report makes its thumbnails afresh. A
    damaged database of ours is removed, so the next report starts a sound one; a file of
    something else there (`--thumb-cache RUN/results.jsonl` by a slip, another program's
    database) is left byte for byte: it was taken for damage and deleted."""
    _, run = played_run(tmp_path)
    cache = tmp_path / "thumbs.sqlite"
    if fault == "damaged":
        sound = ThumbCache(cache)
        sound.put([(("/a", 1, 2), "d1")], [("k1", b"one")])
        sound.close()  # its write-ahead log moved into the file
        damage_schema(cache)
    elif fault == "directory":
        cache.mkdir()  # cannot be opened as a file
    else:
        FOREIGN[fault](cache)
    before = cache.read_bytes() if fault in FOREIGN else None
    with caplog.at_level(logging.WARNING):
        write_report([run], thumb_cache=cache)
    assert (run / "report" / "report.html").read_text().count("data:image/") > 10
    told = [r for r in caplog.records if "thumbnail cache" in r.getMessage()]
    assert len(told) == 1 and str(cache) in told[0].getMessage()
    if fault == "damaged":  # removed: the next report starts a sound cache
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            write_report([run], thumb_cache=cache)
        assert not caplog.records and ThumbCache(cache).usable
    if before is not None:
        assert "left as it is" in told[0].getMessage()
        assert cache.read_bytes() == before and not ThumbCache(cache).usable
        assert sorted(p.name for p in tmp_path.glob("thumbs.sqlite*")) == ["thumbs.sqlite"]


def test_two_writers_share_the_cache(tmp_path: Path) -> None:
    first, second = ThumbCache(tmp_path / "c.sqlite"), ThumbCache(tmp_path / "c.sqlite")
    first.put([(("/a", 1, 2), "d1")], [("k1", b"one")])
    second.put([(("/b", 3, 4), "d2")], [("k2", b"two")])
    for cache in (first, second):
        assert cache.thumbnail("k1") == b"one" and cache.thumbnail("k2") == b"two"
        assert cache.digest(("/b", 3, 4)) == "d2" and cache.digest(("/b", 3, 5)) is None


def test_report_command_thumb_cache_options(tmp_path: Path, capsys) -> None:
    _, run = played_run(tmp_path)
    default = Path(os.environ["PROACTIVEBENCH_CACHE"]) / "thumbnails.sqlite"
    code, _ = run_cli(["report", str(run), "--no-thumb-cache"], capsys)
    assert code == 0 and not default.exists()
    code, _ = run_cli(["report", str(run), "--thumb-cache", str(tmp_path / "t.sqlite")], capsys)
    assert code == 0 and (tmp_path / "t.sqlite").is_file() and not default.exists()
    code, _ = run_cli(["report", str(run)], capsys)
    assert code == 0 and default.is_file()


def test_eval_no_cache_keeps_no_thumbnail(tmp_path: Path, capsys) -> None:
    data = tmp_path / "data"
    generate(data, per_scenario=1, seed=3)
    default = Path(os.environ["PROACTIVEBENCH_CACHE"]) / "thumbnails.sqlite"
    code, _ = run_cli(eval_args(data, tmp_path / "a", "--no-cache"), capsys)
    assert code == 0 and (tmp_path / "a" / "report" / "report.html").is_file()
    assert not default.exists()
    code, _ = run_cli(eval_args(data, tmp_path / "b"), capsys)
    assert code == 0 and default.is_file()
