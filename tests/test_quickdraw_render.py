"""quickdraw.render: shapes, dtypes, ranges, determinism, geometry, encodings."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

from quickdraw.formats import read_kaggle_csv, read_ndjson, read_npy_bitmaps
from quickdraw.render import default_line_width, reference_kernel_render, render, render_batch

FIX = Path(__file__).parent / "fixtures" / "quickdraw"
DRAWINGS = [d.strokes for d in read_kaggle_csv(FIX / "kaggle" / "train_simplified" / "smiley face.csv")]
RAW = [d.strokes for d in read_ndjson(FIX / "google" / "raw" / "circle.ndjson")]


@pytest.mark.parametrize("size", [28, 32, 64, 128])
@pytest.mark.parametrize(("encoding", "channels"), [("plain", 1), ("order", 1), ("time", 1), ("rgb", 3)])
def test_shape_dtype_range(size: int, encoding: str, channels: int) -> None:
    img = render(DRAWINGS[0], size, encoding=encoding)
    assert img.shape == (size, size, channels) and img.dtype == np.uint8
    assert img.max() > 100 and img.min() == 0
    assert 0.02 < (img > 0).mean() < 0.6  # ink but not a filled square


def test_input_forms_agree() -> None:
    from quickdraw.pipeline import pack_strokes
    from quickdraw.render import POINT_BYTES, render_packed_batch, render_packed_blocks, render_points

    strokes = DRAWINGS[1]
    a = render(strokes, 28)
    assert np.array_equal(a, render([s.astype(np.float64) for s in strokes], 28))  # any float dtype
    assert np.array_equal(a, render_packed_batch([pack_strokes(strokes)], 28)[0])  # non-contiguous views
    ends = np.cumsum([len(s) for s in strokes]).tolist()
    assert np.array_equal(a, render_points(np.concatenate(strokes), ends, 28))
    assert np.array_equal(
        render(RAW[0], 32, encoding="rgb"), render_packed_batch([pack_strokes(RAW[0])], 32, encoding="rgb")[0]
    )
    # shard blocks (several drawings end to end in one string): the drawings' own images, in order
    packed = [pack_strokes(d) for d in RAW[:3]] + [b""] + [pack_strokes(d) for d in DRAWINGS[:4]]  # one empty
    lengths = np.array([len(d) // POINT_BYTES for d in packed])
    blocks = [b"".join(packed[:4]), b"".join(packed[4:])]
    from_blocks = render_packed_blocks(blocks, lengths, 32, encoding="rgb")
    assert np.array_equal(from_blocks, render_packed_batch(packed, 32, encoding="rgb"))
    assert np.array_equal(from_blocks[0], render(RAW[0], 32, encoding="rgb")) and not from_blocks[3].any()
    with pytest.raises(ValueError, match="lengths add up"):
        render_packed_blocks(blocks, lengths[1:], 32)


def test_deterministic() -> None:
    a = render_batch(DRAWINGS, 64, encoding="rgb")
    b = render_batch(DRAWINGS, 64, encoding="rgb")
    assert a.shape == (5, 64, 64, 3) and np.array_equal(a, b)


def test_google_layout_centres_and_pads() -> None:
    # a horizontal line across the whole frame: centred vertically, padded at both ends
    line = [np.array([[0, 0], [255, 0]], np.float32)]
    img = render(line, 28)[..., 0].astype(float)
    rows = img.sum(axis=1)
    assert abs((rows * np.arange(28)).sum() / rows.sum() - 13.5) < 0.3
    cols = np.flatnonzero(img.sum(axis=0))
    assert cols[0] >= 1 and cols[-1] <= 26  # 24 of 304 units of padding each side
    top = [np.array([[0, 16], [255, 16]], np.float32)]
    kag = render(top, 28, layout="kaggle")[..., 0]
    assert kag[:4].sum() > 0 and kag[6:].sum() == 0  # the 0-255 frame as is: y=16 stays on top


def test_line_width_scales_with_size() -> None:
    assert default_line_width(28) == pytest.approx(16 * 28 / 304)
    assert default_line_width(64) == pytest.approx(2 * default_line_width(32))
    line = [np.array([[0, 128], [255, 128]], np.float32)]
    ink = {s: (render(line, s)[..., 0].astype(float).sum(axis=0)[s // 2] / 255) for s in (28, 64, 128)}
    for s, w in ink.items():
        assert w == pytest.approx(default_line_width(s), rel=0.16)
    thick = render(line, 64, line_width=8)[..., 0].astype(float).sum(axis=0)[32] / 255
    assert thick == pytest.approx(8, rel=0.16)


def test_order_and_time_encodings() -> None:
    two = [np.array([[0, 0], [255, 0]], np.float32), np.array([[0, 255], [255, 255]], np.float32)]
    img = render(two, 64, encoding="order", antialias=False)[..., 0]
    assert img[:32].max() == 255 and img[32:].max() == 255 - 13  # later strokes are darker
    rgb = render(two, 64, encoding="rgb", antialias=False)
    assert rgb[32:, :, 0].max() == 255 and rgb[32:, :, 1].max() == 242
    t = render(RAW[0], 64, encoding="time")[..., 0]
    assert t.max() >= 230 and 0 < t[t > 0].min() < 128  # bright start, dimmer end


def test_single_point_and_empty() -> None:
    dot = render([np.array([[128, 128]], np.float32)], 28)
    assert dot.sum() > 0 and render([], 28).shape == (28, 28, 1) and render([], 28).sum() == 0


def test_close_to_google_bitmaps() -> None:
    # the fixture bitmaps were made by this renderer; the real-data comparison is in
    # quickdraw/README.md. Here: rendering is stable against a committed file.
    bm = read_npy_bitmaps(FIX / "google" / "numpy_bitmap" / "circle.npy")
    ours = np.stack(
        [
            render(d.strokes, 28)[..., 0]
            for d in read_kaggle_csv(FIX / "kaggle" / "train_simplified" / "circle.csv")
        ]
    )
    assert np.abs(ours.astype(int) - bm).max() <= 1


def test_reference_kernel_render() -> None:
    lists = [[[int(v) for v in s[:, 0]], [int(v) for v in s[:, 1]]] for s in DRAWINGS[0]]
    img = reference_kernel_render(lists, 64)
    assert img.shape == (64, 64) and img.dtype == np.uint8 and img.max() > 0


@pytest.mark.parametrize("encoding", ["plain", "order", "time", "rgb"])
@pytest.mark.parametrize(("size", "layout", "antialias"), [(28, "google", True), (64, "google", True),
                                                          (64, "kaggle", True), (32, "google", False)])  # fmt: skip
def test_batch_equals_one_by_one(encoding: str, size: int, layout: str, antialias: bool) -> None:
    """Tiles on one canvas give exactly the images of separate canvases: no ink crosses a
    gutter, drawings that do not fit their tile are drawn apart, dots and empty drawings too."""
    from quickdraw.pipeline import pack_strokes
    from quickdraw.render import render_packed_batch, render_points_batch

    dense = [np.array([[x, 0], [x, 255]], np.float32) for x in range(0, 256, 8)]  # ink up to the edges
    misfit = [np.array([[-40, 10], [300, 250]], np.float32)]  # outside the 0-255 frame
    dot = [np.array([[128, 128]], np.float32)]
    drawings = [*DRAWINGS, dense, *RAW, dense, misfit, dot, [], *DRAWINGS] * 12  # > one canvas
    opts = dict(encoding=encoding, layout=layout, antialias=antialias)
    one_by_one = np.stack([render(d, size, **opts) for d in drawings])
    assert np.array_equal(render_batch(drawings, size, **opts), one_by_one)
    packed = [pack_strokes(d) if len(d) else b"" for d in drawings]
    assert np.array_equal(render_packed_batch(packed, size, **opts), one_by_one)
    full = [d for d in drawings if len(d)]
    points = [np.concatenate(d) for d in full]
    ends = [np.cumsum([len(s) for s in d]).tolist() for d in full]
    assert np.array_equal(
        render_points_batch(points, ends, size, **opts), np.stack([render(d, size, **opts) for d in full])
    )
    assert one_by_one[len(DRAWINGS) + 1 + len(RAW) + 2].any()  # the misfit is drawn (clipped), not lost


def test_without_gutters_tiles_would_share_ink(monkeypatch) -> None:
    """The control for the test above: with no gutter between the tiles, a drawing inked up
    to its edges changes its neighbours (so the equality above is a real check)."""
    module = importlib.import_module("quickdraw.render")  # the module, not the function

    dense = [np.array([[x, 0], [x, 255]], np.float32) for x in range(0, 256, 8)]
    drawings = [dense, DRAWINGS[0], dense]
    separate = np.stack([render(d, 64, layout="kaggle") for d in drawings])
    assert np.array_equal(render_batch(drawings, 64, layout="kaggle"), separate)
    monkeypatch.setattr(module, "_gutter", lambda width, ss: 0)
    assert not np.array_equal(render_batch(drawings, 64, layout="kaggle"), separate)


def test_threads_draw_the_same_images() -> None:
    """Batches drawn in 8 threads at once (as tf.data's parallel map draws them) are the
    images drawn one after another."""
    import threading

    drawings = [*DRAWINGS, *RAW] * 20
    want = render_batch(drawings, 64, encoding="rgb")
    got: list[np.ndarray | None] = [None] * 8

    def draw(i: int) -> None:
        got[i] = render_batch(drawings, 64, encoding="rgb")

    threads = [threading.Thread(target=draw, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(g, want) for g in got)


def test_empty_drawings_in_a_large_batch_are_black() -> None:
    """The output array is uninitialised memory: an empty drawing among many is black, and
    the others are drawn as one by one."""
    from quickdraw.pipeline import pack_strokes
    from quickdraw.render import render_packed_batch

    for _ in range(2):  # the second time, in memory the first batch may have left behind
        mixed = render_packed_batch([b""] + [pack_strokes(DRAWINGS[0])] * 299, 64)
        assert mixed[0].max() == 0 and np.array_equal(mixed[1], render(DRAWINGS[0], 64))
