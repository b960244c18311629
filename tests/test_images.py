"""Views made concrete: crops and resizes as the protocol defines them, encodings cached once."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from proactivebench.data.images import ImageError, ImageStore
from proactivebench.runner import ResultsFile, read_results
from proactivebench.scenarios import View


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


def test_unreadable_images_raise_image_errors(store: ImageStore, tmp_path: Path) -> None:
    (tmp_path / "bad.png").write_bytes(b"nope")
    with pytest.raises(ImageError, match=r"cannot decode image bad\.png"):
        store.image(View("bad.png"))
    with pytest.raises(ImageError, match=r"image not found: gone\.png"):
        store.image(View("gone.png"))


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        (b'{"a": 1}\n{"a": 2}\n', b'{"a": 1}\n{"a": 2}\n'),  # whole lines: untouched
        (b'{"a": 1}\n{"a": ', b'{"a": 1}\n'),  # a torn last line is dropped
        (b'{"a": ', b""),  # nothing but a torn line
        (b'{"a": 1}\n' + b"x" * 200_000, b'{"a": 1}\n'),  # torn line longer than a block
    ],
)
def test_results_file_drops_only_a_torn_tail(tmp_path: Path, content: bytes, kept: bytes) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(content)
    results = ResultsFile(path)
    results.write([{"a": 3}])
    results.close()
    assert path.read_bytes() == kept + b'{"a": 3}\n'
    assert [r["a"] for r in read_results(path)][-1] == 3
