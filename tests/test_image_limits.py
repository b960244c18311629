"""Images that would exhaust memory or stall a run: Pillow's pixel limit, the size cap per file,
reads off the event loop, and JPEGs scaled down at decode (issue 18, item 12)."""

from __future__ import annotations

import asyncio
import io
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFile

from clirun import eval_args, run_cli
from handmade import rod, write_dataset
from proactivebench.benchmark.scenarios import View
from proactivebench.core.errors import ImageError
from proactivebench.data import images as images_module
from proactivebench.data.images import ImageStore
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models.cache import ResponseCache
from proactivebench.models.openai_compat import OpenAICompatible
from proactivebench.run.rundir import read_results
from proactivebench.run.settings import EvalSettings
from proactivebench.testing.server import FakeOpenAI


def png_claiming(width: int, height: int) -> bytes:
    """A small PNG whose header (IHDR, with a valid CRC) claims `width` x `height` pixels."""
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 30, 30)).save(buffer, format="PNG")
    data = bytearray(buffer.getvalue())
    body = b"IHDR" + struct.pack(">II", width, height) + bytes(data[24:29])
    data[16:29] = body[4:]
    data[29:33] = struct.pack(">I", zlib.crc32(body))
    return bytes(data)


def sparse_file(path: Path, head: bytes, size: int) -> None:
    """`head`, then zeros up to `size` bytes that take no disk space."""
    with open(path, "wb") as file:
        file.write(head)
        file.truncate(size)


def one_rod(tmp_path: Path) -> Path:
    return write_dataset(tmp_path / "data", {"ROD": [rod(0)]})


# ----- Pillow's pixel limit ---------------------------------------------------------------------


def test_an_image_above_the_pixel_limit_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = one_rod(tmp_path)
    (data / "ROD/0/1.png").write_bytes(png_claiming(60000, 60000))
    code, out = run_cli(eval_args(data, tmp_path / "run"), capsys)
    assert code == 1 and "Traceback" not in out
    assert "ROD/0/1.png is above Pillow's pixel limit" in out and "3600000000 pixels" in out
    assert not (tmp_path / "run" / "results.jsonl").exists()
    code, out = run_cli(["data", "validate", str(data)], capsys)
    assert code == 1 and "3600000000 pixels" in out


def test_every_decode_turns_the_pixel_limit_into_an_image_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bomb.png").write_bytes(png_claiming(60000, 60000))  # Pillow: an error
    Image.new("RGB", (40, 40)).save(tmp_path / "big.png")
    store = ImageStore(tmp_path)
    with pytest.raises(ImageError, match=r"bomb\.png is above Pillow's pixel limit"):
        store.image(View("bomb.png"))
    # Between the limit and twice the limit Pillow only warns; the image is refused all the same.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    refused = r"big\.png is 40x40 pixels, above Pillow's pixel limit of 1,000"
    with pytest.warns(Image.DecompressionBombWarning), pytest.raises(ImageError, match=refused):
        store.image(View("big.png", resize_short_edge=10))


def test_a_report_of_a_run_whose_image_grew_too_large_has_no_thumbnail_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = one_rod(tmp_path)
    run = tmp_path / "run"
    assert run_cli(eval_args(data, run, "--no-report"), capsys)[0] == 0
    (data / "ROD/0/1.png").write_bytes(png_claiming(60000, 60000))  # after the run
    code, out = run_cli(["report", str(run), "--out", str(tmp_path / "r")], capsys)
    assert code == 0 and "Traceback" not in out
    assert (tmp_path / "r" / "report.html").stat().st_size > 0


# ----- the size cap per file --------------------------------------------------------------------


def test_a_file_above_the_size_cap_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = one_rod(tmp_path)
    head = (data / "ROD/0/2.png").read_bytes()
    sparse_file(data / "ROD/0/2.png", head, 2 << 30)  # 2 GB, a valid PNG at its start
    opened: list[str] = []
    real_open = open
    monkeypatch.setattr(
        images_module, "open", lambda p, *a: opened.append(str(p)) or real_open(p, *a), False
    )
    code, out = run_cli(eval_args(data, tmp_path / "run"), capsys)
    assert code == 1 and "Traceback" not in out
    assert "ROD/0/2.png is 2,147.5 MB, above the cap of 50 MB" in out and "--max-image-mb" in out
    assert not any(p.endswith("2.png") for p in opened)  # refused from its size alone
    store = ImageStore(data)
    with pytest.raises(ImageError, match="above the cap"):
        store.data_url(View("ROD/0/2.png"))
    with pytest.raises(ImageError, match="above the cap"):
        store.file_hash(View("ROD/0/2.png"))
    assert not any(p.endswith("2.png") for p in opened)
    # The cap is an option: raised above the file, the run goes on.
    code, out = run_cli(eval_args(data, tmp_path / "big", "--max-image-mb", "3000"), capsys)
    assert code == 0, out


# ----- reads off the event loop -----------------------------------------------------------------


def test_image_files_are_read_and_encoded_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = one_rod(tmp_path)
    on_loop: list[tuple[str, bool]] = []

    def spy(name: str):
        real = getattr(ImageStore, name)

        def wrapper(self, *args, **kwargs):
            try:
                asyncio.get_running_loop()
                on_loop.append((name, True))
            except RuntimeError:  # no running loop in this thread: a worker thread
                on_loop.append((name, False))
            return real(self, *args, **kwargs)

        monkeypatch.setattr(ImageStore, name, wrapper)

    for name in ("read_bytes", "image"):
        spy(name)
    settings = EvalSettings(resize_short_edge=16)  # decoded and encoded, not sent as a file
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAI() as fake:
        model = OpenAICompatible("m", endpoints=[fake.url])
        evaluate(data, model, tmp_path / "run", settings, cache=cache)
        plain = OpenAICompatible("m", endpoints=[fake.url])
        evaluate(data, plain, tmp_path / "plain", EvalSettings(), cache=cache)
    cache.close()
    assert {name for name, _ in on_loop} == {"read_bytes", "image"}
    assert not any(loop for _, loop in on_loop), on_loop
    assert all(not r.get("error") for r in read_results(tmp_path / "run" / "results.jsonl"))


# ----- scaled-down JPEGs decode at a reduced scale ----------------------------------------------


def test_a_jpeg_scaled_down_is_decoded_at_a_reduced_scale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(0)
    small = rng.integers(0, 255, (30, 40, 3), dtype=np.uint8)
    big = Image.fromarray(small).resize((4000, 3000), Image.Resampling.BILINEAR)
    big.save(tmp_path / "big.jpg", quality=90)
    loaded: list[tuple[int, int]] = []
    real_load = ImageFile.ImageFile.load
    monkeypatch.setattr(
        ImageFile.ImageFile, "load", lambda self: loaded.append(self.size) or real_load(self)
    )
    view = View("big.jpg", resize_short_edge=224)
    shown = ImageStore(tmp_path).image(view)
    # Decoded at a quarter of each edge (1000x750: still twice the target), never whole.
    assert set(loaded) == {(1000, 750)}
    assert shown.size == (298, 224)  # the size the full decode gives
    with Image.open(tmp_path / "big.jpg") as full:
        reference = np.asarray(full.convert("RGB").resize((298, 224))).astype(int)
    assert np.abs(np.asarray(shown).astype(int) - reference).mean() < 3


@pytest.mark.parametrize("name", ["a.png", "a.jpg"])
def test_views_not_scaled_down_are_the_full_decode(tmp_path: Path, name: str) -> None:
    rng = np.random.default_rng(1)
    Image.fromarray(rng.integers(0, 255, (60, 80, 3), dtype=np.uint8)).save(tmp_path / name)
    store = ImageStore(tmp_path)
    with Image.open(tmp_path / name) as full:
        rgb = full.convert("RGB")
        expected = {
            View(name): rgb,
            View(name, crop=(10.0, 5.0, 50.0, 45.0), resize_short_edge=20): rgb.crop(
                (10.0, 5.0, 50.0, 45.0)
            ).resize((20, 20)),
            View(name, resize_short_edge=50): rgb.resize((66, 50)),  # no smaller scale fits
        }
    for view, image in expected.items():
        assert np.array_equal(np.asarray(store.image(view)), np.asarray(image)), view


# ----- issue 20, item 5: a header checked once per file version; one hop per new image ---------


def test_a_header_is_read_once_per_version_of_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.png"
    Image.new("RGB", (8, 6)).save(path)
    opened: list[str] = []
    real = images_module.opened_image

    def counted(*args, **kwargs):
        opened.append(str(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(images_module, "opened_image", counted)
    for _ in range(3):
        images_module.check_header(path, "x.png", max_bytes=None)
    assert len(opened) == 1
    with pytest.raises(ImageError, match="above the cap"):  # the cap holds, read or not
        images_module.check_header(path, "x.png", max_bytes=10)
    # Written again (another size): read again, and a broken file is refused.
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"not a png at all")
    with pytest.raises(ImageError, match=r"x\.png"):
        images_module.check_header(path, "x.png", max_bytes=None)
    # Same size, another time: read again too.
    Image.new("RGB", (8, 6), (1, 2, 3)).save(path)
    images_module.check_header(path, "x.png", max_bytes=None)
    size = path.stat().st_size
    Image.new("RGB", (8, 6), (1, 2, 3)).save(path)
    os.utime(path, ns=(1, 1))
    assert path.stat().st_size == size
    before = len(opened)
    images_module.check_header(path, "x.png", max_bytes=None)
    assert len(opened) == before + 1


def test_a_url_from_bytes_read_for_the_key_is_the_url_of_before(tmp_path: Path) -> None:
    data = one_rod(tmp_path)
    views = [View(str(p.relative_to(data))) for p in sorted(data.rglob("*.png"))[:3]]
    assert views
    fresh, reused = ImageStore(data), ImageStore(data)
    for view in views:
        assert reused.ready_data_url(view) is None  # not read yet: a worker thread reads it
        digest = reused.file_hash(view)  # the cache key's read
        assert digest == fresh.file_hash(view)
        url = reused.ready_data_url(view)
        assert url is not None and url == fresh.data_url(view)
        assert reused.data_url(view) is url
    crop = View(views[0].image, crop=(0, 0, 4, 4))
    assert reused.ready_data_url(crop, "PNG") is None  # a decode: never on the event loop
    made = reused.data_url(crop, "PNG")
    assert reused.ready_data_url(crop, "PNG") is made


def test_a_request_with_new_images_costs_one_worker_thread_hop(
    synth_test: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The response cache's key and the data URL of a new file come from one read, in one
    worker-thread hop (two before: the key's hash, then the data URL). The scenarios whose
    views are the files themselves (COCO's crops are decoded: a hop of their own)."""
    from proactivebench.testing.server import decode_data_url

    hops = 0
    real = asyncio.to_thread

    async def counted(func, *args, **kwargs):
        nonlocal hops
        # Image work only (results are fsynced in worker threads too): the cache key's file
        # hashes and the data URLs.
        hops += "keys_of" in func.__qualname__ or "_data_urls" in func.__qualname__
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", counted)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    settings = EvalSettings(scenarios=("ROD", "VSOD", "MVP-N", "IN-C", "QD", "CIT"))
    with FakeOpenAI() as fake:
        model = OpenAICompatible("m", endpoints=[fake.url])
        evaluate(synth_test, model, tmp_path / "run", settings, cache=cache, concurrency=1)
        bodies = [r.body for r in fake.chat_requests]
    cache.close()
    seen: set[bytes] = set()
    new = 0  # requests that show a file no earlier request showed
    for body in bodies:
        files = {
            decode_data_url(part["image_url"]["url"])[1]
            for message in body["messages"]
            if isinstance(message["content"], list)
            for part in message["content"]
            if part.get("type") == "image_url"
        }
        new += bool(files - seen)
        seen |= files
    assert new >= 6
    assert hops == new
    assert all(not r.get("error") for r in read_results(tmp_path / "run" / "results.jsonl"))
