"""Views made concrete: crops and resizes as the protocol defines them, encodings cached once."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from proactivebench.benchmark.scenarios import View
from proactivebench.core.errors import ImageError
from proactivebench.data.images import ImageStore
from proactivebench.run.rundir import ResultsFile, read_results


@pytest.fixture
def store(tmp_path: Path) -> ImageStore:
    pixels = np.arange(40 * 30 * 3, dtype=np.uint8).reshape(30, 40, 3)
    Image.fromarray(pixels).save(tmp_path / "a.png")
    return ImageStore(tmp_path)


def test_crop_then_resize(store: ImageStore) -> None:
    assert store.image(View("a.png", crop=(10.0, 5.0, 30.0, 25.0))).size == (20, 20)
    # The short edge becomes 60; the long one scales with it (int() as the reference does).
    assert store.image(View("a.png", resize_short_edge=60)).size == (80, 60)
    assert store.image(View("a.png", (0, 0, 20, 10), 5)).size == (10, 5)


def test_a_resize_above_pillows_pixel_limit_is_refused_not_allocated(
    store: ImageStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--resize-short-edge scales up as well as down: a 40x30 image at a short edge of 3,000
    would be 4,000x3,000 = 12 million pixels. Above Pillow's pixel limit (lowered here to
    10 million; 89.5 million by default: 268 MB of RGB each) the view is refused with what
    to change, instead of the memory being taken (or a MemoryError called a decode fault)."""
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 10_000_000)
    assert store.image(View("a.png", resize_short_edge=2_000)).size == (2_666, 2_000)
    with pytest.raises(ImageError) as info:
        store.image(View("a.png", resize_short_edge=3_000))
    assert str(info.value) == (
        "image a.png at a short edge of 3000 pixels would be 4000x3000 pixels, above "
        "Pillow's pixel limit of 10,000,000 (Image.MAX_IMAGE_PIXELS): lower --resize-short-edge"
    )
    with pytest.raises(ImageError, match="lower --resize-short-edge"):
        store.data_url(View("a.png", resize_short_edge=3_000), "JPEG", 90)


def test_data_url_is_encoded_once_and_decodes_to_the_view(store, monkeypatch) -> None:
    calls = []
    encode = store.encoded
    monkeypatch.setattr(store, "encoded", lambda *a: calls.append(a) or encode(*a))
    view = View("a.png", crop=(0, 0, 8, 4))
    first = store.data_url(view, "PNG")
    assert store.data_url(view, "png") is first and len(calls) == 1
    header, payload = first.split(",", 1)
    assert header == "data:image/png;base64"
    decoded = Image.open(io.BytesIO(base64.b64decode(payload)))
    assert np.array_equal(np.asarray(decoded), np.asarray(store.image(view)))
    assert store.data_url(view).startswith("data:image/jpeg;base64,") and len(calls) == 2


@pytest.mark.parametrize(
    ("fmt", "mime"),
    [("JPEG", "image/jpeg"), ("PNG", "image/png"), ("WEBP", "image/webp"), ("GIF", "image/gif")],
)
def test_untransformed_views_are_the_files_own_bytes(tmp_path: Path, fmt: str, mime: str) -> None:
    Image.new("RGB", (32, 24), (200, 30, 90)).save(tmp_path / "x.img", format=fmt)
    store = ImageStore(tmp_path)
    url = store.data_url(View("x.img"), "PNG")  # the asked encoding does not apply
    header, payload = url.split(",", 1)
    assert header == f"data:{mime};base64"
    assert base64.b64decode(payload) == (tmp_path / "x.img").read_bytes()
    assert store.decodes == 0  # nothing decoded
    assert store.data_url(View("x.img")) is url  # cached
    cropped = store.data_url(View("x.img", crop=(0, 0, 8, 8)), "PNG")
    assert cropped.startswith("data:image/png;base64,") and store.decodes == 1


def test_other_formats_are_encoded_as_asked(tmp_path: Path) -> None:
    Image.new("RGB", (16, 8), (1, 2, 3)).save(tmp_path / "x.bmp")
    store = ImageStore(tmp_path)
    for fmt, mime in (("PNG", "image/png"), ("JPEG", "image/jpeg")):
        header, payload = store.data_url(View("x.bmp"), fmt).split(",", 1)
        assert header == f"data:{mime};base64"
        assert Image.open(io.BytesIO(base64.b64decode(payload))).size == (16, 8)


def test_caches_are_bounded_by_bytes_and_views_decode_once(tmp_path: Path) -> None:
    for i in range(6):
        Image.new("RGB", (100, 100), (i, i, i)).save(tmp_path / f"{i}.png")
    store = ImageStore(tmp_path, max_decoded_bytes=3 * 100 * 100 * 3)
    views = [View(f"{i}.png") for i in range(6)]
    for view in views[:3] * 4:  # three views fit: decoded once each, however often shown
        store.image(view)
    assert store.decodes == 3
    for view in views[3:]:  # three more push the first three out
        store.image(view)
    store.image(views[0])
    assert store.decodes == 7


def test_unreadable_images_raise_image_errors(store: ImageStore, tmp_path: Path) -> None:
    (tmp_path / "bad.png").write_bytes(b"nope")
    with pytest.raises(ImageError, match=r"cannot decode image bad\.png"):
        store.image(View("bad.png"))
    with pytest.raises(ImageError, match=r"image not found: gone\.png"):
        store.image(View("gone.png"))


def line(n: int) -> bytes:
    """A finished result line, as short as a reader takes (`results.shape_problem`)."""
    return b'{"scenario": "ROD", "sample_id": %d, "num_turns": 1, "correct": false}' % n


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        (line(1) + b"\n" + line(2) + b"\n", line(1) + b"\n" + line(2) + b"\n"),  # untouched
        (line(1) + b'\n{"scenario": "RO', line(1) + b"\n"),  # a torn last line is dropped
        (b'{"scenario": "RO', b""),  # nothing but a torn line
        (line(1) + b"\n" + b"x" * 200_000, line(1) + b"\n"),  # torn line longer than a block
    ],
)
def test_results_file_drops_only_a_torn_tail(tmp_path: Path, content: bytes, kept: bytes) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(content)
    results = ResultsFile(path)
    last = {"scenario": "QD", "sample_id": 3, "num_turns": 1, "correct": False}
    results.write([last])
    results.close()
    assert path.read_bytes() == kept + json.dumps(last).encode() + b"\n"
    assert [r["sample_id"] for r in read_results(path)][-1] == 3
