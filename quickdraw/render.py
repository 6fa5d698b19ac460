"""Strokes -> grayscale (or multi-channel) images with OpenCV.

``layout="google"`` (the default) reproduces the geometry of Google's ``numpy_bitmap``
rendering: the 256x256 frame padded by 16 + half of a 16-unit line on each side (a 304-unit
frame), the drawing centred on its bounding box, a 16-unit line with round caps and joins.
``layout="kaggle"`` draws the 0-255 frame as is, like the popular Kaggle kernels.

How it draws: one-pixel ``cv2.polylines`` on a canvas ``supersample`` times larger than the
output, one ``cv2.dilate`` by a disk as wide as the line (a thick line with round caps and
joins is a thin line dilated by a disk), then an area-averaging ``cv2.resize`` down to the
output size, which anti-aliases. Many drawings share one canvas, each in a tile of its own.

Encodings (``encoding=``):

- ``"plain"``  - 1 channel, every stroke at full intensity (like ``numpy_bitmap``).
- ``"order"``  - 1 channel, grey ``255 - 13*min(i, 10)`` for stroke ``i`` (the "Greyscale
  MobileNet" Kaggle kernel's encoding; where strokes cross, the earlier one shows).
- ``"time"``   - 1 channel, intensity falls from 255 to 64 with the time of each point
  (point order when there are no times).
- ``"rgb"``    - 3 channels: plain, stroke order, time.

Options, the same for every function here: ``encoding``, ``layout``, ``line_width`` (output
pixels, default :func:`default_line_width`), ``supersample`` (canvas factor, default 4 up to
32 px, 2 up to 128 px, else 1), ``antialias`` (False: draw at the output size). Used in
notebooks 04, 05 and 06 (through ``make_dataset``); speed in ``benchmarks/bench_render.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate
from typing import Any

import cv2
import numpy as np

ENCODINGS = {"plain": 1, "order": 1, "time": 1, "rgb": 3}
GOOGLE_LINE = 16.0  # line diameter in the 256 frame (Google's numpy_bitmap rendering)
GOOGLE_PAD = 16.0  # extra padding in the 256 frame on each side
GOOGLE_FRAME = 256.0 + 2 * GOOGLE_PAD + GOOGLE_LINE
_SHIFT = 4  # fractional bits for cv2 sub-pixel coordinates
POINT_BYTES = 16  # a packed point (quickdraw.pipeline.pack_strokes): float32 x, y, t, stroke index
_ONE = 1 << _SHIFT
_CHUNK = 128  # drawings per canvas: one polylines call per grey level, one dilation, one resize
_COLS = 16  # drawings per canvas row


def channels_of(encoding: str) -> int:
    """Number of image channels an encoding produces."""
    try:
        return ENCODINGS[encoding]
    except KeyError:
        raise ValueError(f"unknown encoding {encoding!r}; choose from {sorted(ENCODINGS)}") from None


def default_line_width(size: int, layout: str = "google") -> float:
    """Line width in output pixels: Google's 16 units of a 304-unit frame, scaled to
    ``size`` (1.47 px at 28, 3.4 px at 64); for ``layout="kaggle"`` 6 units of 256."""
    if layout == "google":
        return GOOGLE_LINE * size / GOOGLE_FRAME
    return 6.0 * size / 256.0


def render(strokes: Sequence[np.ndarray], size: int = 64, **style: Any) -> np.ndarray:
    """Render one drawing to a ``uint8`` image of shape ``(size, size, C)``.

    ``strokes``: float arrays ``(n, 2)`` or ``(n, 3)`` (x, y[, t]) in the 0-255 frame, as
    :mod:`quickdraw.formats` returns them; ``style``: the options of this module. Deterministic.
    Used by the figures that show what the model sees (notebooks 04-06).
    """
    return render_batch([strokes], size, **style)[0]


def render_points(points: np.ndarray, ends: Sequence[int], size: int = 64, **style: Any) -> np.ndarray:
    """Render one drawing from all its points at once (:func:`quickdraw.formats.parse_points`):
    ``points`` ``(N, 2)`` or ``(N, 3)``, ``ends`` the cumulative stroke lengths."""
    return render_points_batch([points], [ends], size, **style)[0]


def render_batch(drawings: Sequence[Sequence[np.ndarray]], size: int = 64, **style: Any) -> np.ndarray:
    """Render many drawings (each a list of strokes): ``uint8`` ``(N, size, size, C)``, each
    image what :func:`render` gives. Used by ``load_arrays`` (notebook 07) and notebook 06."""
    points = [np.concatenate(s) if len(s) else np.zeros((0, 2), np.float32) for s in drawings]
    ends = [list(accumulate(len(s) for s in strokes)) for strokes in drawings]
    return render_points_batch(points, ends, size, **style)


def render_packed_batch(packed: Sequence[bytes], size: int = 64, **style: Any) -> np.ndarray:
    """Render drawings packed by :func:`quickdraw.pipeline.pack_strokes` (float32 rows
    ``x, y, t, stroke``; ``t`` < 0 when there are no times): what ``make_dataset`` calls for
    the drawings read from class files."""
    lengths = np.fromiter((len(d) // POINT_BYTES for d in packed), np.int64, len(packed))
    return render_packed_blocks([b"".join(packed)], lengths, size, **style)


def render_packed_blocks(
    blocks: Sequence[bytes], lengths: np.ndarray, size: int = 64, **style: Any
) -> np.ndarray:
    """Render the drawings of blocks read from TFRecord shards (:mod:`quickdraw.shards`): each
    block the packed drawings end to end, ``lengths`` the points of every drawing of every
    block, in order. What ``make_dataset`` calls for a batch of blocks."""
    a = np.frombuffer(b"".join(blocks), np.float32).reshape(-1, 4)
    lengths = np.asarray(lengths, np.int64)
    if (total := int(lengths.sum())) != len(a):
        raise ValueError(f"the blocks hold {len(a)} points, their drawings' lengths add up to {total}")
    draw_off = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=draw_off[1:])
    # a new stroke where the stroke number changes or a new drawing begins
    new = np.zeros(len(a), bool)
    new[1:] = a[1:, 3] != a[:-1, 3]
    new[draw_off[:-1][lengths > 0]] = True
    stroke_off = np.append(np.flatnonzero(new), len(a))
    timed = len(a) > 0 and bool((a[:, 2] >= 0).any())
    return _render_flat(a[:, :3] if timed else a[:, :2], draw_off, stroke_off, size, **style)


def render_points_batch(
    points: Sequence[np.ndarray], ends: Sequence[Sequence[int]], size: int = 64, **style: Any
) -> np.ndarray:
    """Render many drawings given as :func:`render_points` takes them (one points array and
    its stroke ends each)."""
    lengths = [len(p) for p in points]
    draw_off = np.zeros(len(points) + 1, np.int64)
    np.cumsum(lengths, out=draw_off[1:])
    stroke_off = [0]
    for base, e in zip(draw_off[:-1].tolist(), ends, strict=True):
        stroke_off.extend(base + int(x) for x in e)
    width = 3 if any(p.shape[1] > 2 for p in points if len(p)) else 2
    flat = [
        p[:, :width] if p.shape[1] >= width else np.pad(p, ((0, 0), (0, 1)), constant_values=-1)
        for p in points
    ]
    pts = np.concatenate(flat) if len(flat) > 1 else flat[0][:, :width]
    return _render_flat(pts, draw_off, np.asarray(stroke_off, np.int64), size, **style)


def aligned_array(shape: tuple[int, ...], dtype: type = np.uint8, *, align: int = 64) -> np.ndarray:
    """A new uninitialised array whose data start at a multiple of ``align`` bytes: TensorFlow
    takes such an array, returned by a ``tf.numpy_function``, as the tensor's buffer instead
    of copying it (``TF_NewTensor`` copies misaligned data)."""
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dt.itemsize
    raw = np.empty(nbytes + align, np.uint8)
    start = -raw.ctypes.data % align
    return raw[start : start + nbytes].view(dt).reshape(shape)


@lru_cache(maxsize=64)
def _kernels(width: int) -> tuple[np.ndarray, ...]:
    """Structuring elements whose successive dilations turn a 1-px line ``width`` px wide
    with round ends: a square then a 3x3 cross (an octagon) from width 4 up; a cross (3) or
    a 2x2 square (2) below."""
    if width <= 1:
        return ()
    if width == 2:
        return (np.ones((2, 2), np.uint8),)
    cross = cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))
    if width == 3:
        return (cross,)
    return (np.ones((width - 2, width - 2), np.uint8), cross)


@lru_cache(maxsize=256)
def _plan(
    size: int, layout: str, line_width: float | None, supersample: int | None, antialias: bool
) -> tuple[int, int, float, float, bool]:
    """(supersample, line width in canvas px, scale, offset, centre?) for these options."""
    if layout not in ("google", "kaggle"):
        raise ValueError(f"unknown layout {layout!r}; use 'google' or 'kaggle'")
    lw = line_width if line_width is not None else default_line_width(size, layout)
    ss = (supersample or (4 if size <= 32 else 2 if size <= 128 else 1)) if antialias else 1
    width = max(1, int(round(lw * ss)))
    # an even-sized kernel is anchored half a pixel off centre: move the points to match;
    # cairo's pixel centres are at i + 0.5, OpenCV's at i
    shift = (-0.5 if width % 2 == 0 else 0.0) - 0.5
    if layout == "google":
        scale = size * ss / GOOGLE_FRAME
        return ss, width, scale, GOOGLE_FRAME / 2.0 * scale + shift, True
    return ss, width, size * ss / 256.0, shift, False


def _render_flat(
    points: np.ndarray,
    draw_off: np.ndarray,
    stroke_off: np.ndarray,
    size: int,
    *,
    encoding: str = "plain",
    layout: str = "google",
    line_width: float | None = None,
    supersample: int | None = None,
    antialias: bool = True,
) -> np.ndarray:
    """The renderer. ``points`` ``(T, 2|3)`` of all drawings; drawing ``i`` is
    ``points[draw_off[i]:draw_off[i+1]]``; strokes start at ``stroke_off[:-1]``.

    Drawings are placed on one canvas in a grid of tiles, each tile ``size`` output pixels
    plus a gutter wider than the ink spreads, so that one polylines call per grey level,
    one dilation and one resize serve ``_CHUNK`` drawings; each tile is exactly the picture
    the drawing would get on a canvas of its own. A drawing that does not fit its tile gets
    a tile of its own without a gutter, its lines clipped at the edges.
    """
    nch = channels_of(encoding)
    n = len(draw_off) - 1
    ss, width, scale, offset, centre = _plan(size, layout, line_width, supersample, antialias)
    out = aligned_array((n, size, size, nch))  # make_dataset returns it: TensorFlow does not copy it
    if n == 0 or len(points) == 0:
        out.fill(0)
        return out
    m = scale * _ONE
    xy = np.ascontiguousarray(points[:, :2], dtype=np.float32)
    lengths = np.diff(draw_off)
    full = np.flatnonzero(lengths > 0)
    out[lengths == 0] = 0  # empty drawings are black; every other image is drawn whole below
    starts = draw_off[full]
    base = np.full((len(full), 2), offset * _ONE + 0.5)
    if centre:  # bounding-box centre to the canvas centre, as cv2.boundingRect rounds it
        lo = np.floor(np.minimum.reduceat(xy, starts, axis=0))
        hi = np.floor(np.maximum.reduceat(xy, starts, axis=0))
        base -= (lo + hi) * 0.5 * m
    shift = np.zeros((n, 2))
    shift[full] = base
    q = (xy * m + np.repeat(shift, lengths, axis=0)).astype(np.int32)  # +0.5, truncate: rounding
    qmin = np.minimum.reduceat(q, starts, axis=0).min(axis=1)
    qmax = np.maximum.reduceat(q, starts, axis=0).max(axis=1)
    fits = np.zeros(n, bool)
    half = _ONE // 2  # cv2 rounds fixed-point coordinates to the nearest pixel
    fits[full] = (qmin >= -half) & (qmax < size * ss * _ONE - half)
    times = points[:, 2] if points.shape[1] > 2 else None
    tiles = np.array_split(np.flatnonzero(fits), max(1, -(-int(fits.sum()) // _CHUNK)))
    gutter = _gutter(width, ss)
    for sel in tiles:
        if len(sel):
            _draw_tiles(out, q, times, draw_off, stroke_off, sel, size, ss, width, gutter, encoding)
    for i in np.flatnonzero(~fits & (lengths > 0)).tolist():
        _draw_tiles(out, q, times, draw_off, stroke_off, np.array([i]), size, ss, width, 0, encoding)
    return out


def _draw_tiles(
    out: np.ndarray,
    q: np.ndarray,
    times: np.ndarray | None,
    draw_off: np.ndarray,
    stroke_off: np.ndarray,
    sel: np.ndarray,
    size: int,
    ss: int,
    width: int,
    gutter: int,
    encoding: str,
) -> None:
    """Draw drawings ``sel`` on one canvas of tiles, widen, downsample, cut into ``out[sel]``."""
    k, nch = len(sel), out.shape[-1]
    cols = min(k, _COLS)
    rows = -(-k // cols)
    pitch = (size + gutter) * ss  # canvas pixels per tile
    # the points and strokes of the selected drawings, each moved to its tile
    lo, hi = draw_off[sel], draw_off[sel + 1]
    lengths = hi - lo
    if k == 1 or (sel[-1] - sel[0] == k - 1):  # consecutive drawings: one slice
        qs = q[lo[0] : hi[-1]]
        s_ids = np.arange(np.searchsorted(stroke_off, lo[0]), np.searchsorted(stroke_off, hi[-1]))
    else:
        qs = q[np.concatenate([np.arange(a, b) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)])]
        s_lo, s_hi = np.searchsorted(stroke_off, lo), np.searchsorted(stroke_off, hi)
        s_ids = np.concatenate([np.arange(a, b) for a, b in zip(s_lo.tolist(), s_hi.tolist(), strict=True)])
    t = np.arange(k)
    origin = np.stack([t % cols, t // cols], axis=1).astype(np.int32) * np.int32(pitch * _ONE)
    qs = qs + np.repeat(origin, lengths, axis=0)
    local0 = np.zeros(k, np.int64)  # where each drawing starts in qs
    np.cumsum(lengths[:-1], out=local0[1:])
    tile = np.repeat(t, np.diff(np.searchsorted(s_ids, np.searchsorted(stroke_off, lo)), append=len(s_ids)))
    s_start = stroke_off[s_ids] - lo[tile] + local0[tile]  # stroke starts in qs
    rank = s_ids - s_ids[np.searchsorted(s_start, local0[tile], side="left")]
    bounds = [*s_start.tolist(), len(qs)]
    pts = [
        qs[a:b] if b - a > 1 else qs[[a, a]] for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    ]  # dot: 0-length line
    planes = []
    for layer in ("plain", "order", "time") if encoding == "rgb" else (encoding,):
        plane = np.zeros((rows * pitch, cols * pitch), np.uint8)
        if layer == "plain":
            cv2.polylines(plane, pts, False, 255, 1, cv2.LINE_8, _SHIFT)
        elif layer == "order":
            _order_plane(pts, rank, plane)
        else:
            _time_plane(pts, tile, times, s_ids, stroke_off, plane)
        planes.append(plane)
    img = planes[0] if nch == 1 else cv2.merge(planes)
    for kernel in _kernels(width):
        cv2.dilate(img, kernel, dst=img)  # in place: a new canvas a call costs more than drawing
    if ss > 1:
        img = cv2.resize(img, (cols * (size + gutter), rows * (size + gutter)), interpolation=cv2.INTER_AREA)
    tiles = img.reshape(rows, size + gutter, cols, size + gutter, nch).swapaxes(1, 2)[:, :, :size, :size]
    if k == rows * cols and sel[-1] - sel[0] == k - 1:  # one copy, straight into the output
        out[sel[0] : sel[-1] + 1].reshape(rows, cols, size, size, nch)[...] = tiles
    else:
        out[sel] = tiles.reshape(rows * cols, size, size, nch)[:k]


def _gutter(width: int, ss: int) -> int:
    """Output pixels between tiles: more than the ink of a line spreads (``width`` canvas px)."""
    return -(-width // ss) + 1


def _order_plane(pts: list[np.ndarray], rank: np.ndarray, plane: np.ndarray) -> None:
    """Grey ``255 - 13 * min(i, 10)`` for stroke ``i``; where strokes cross, the earlier one
    shows (drawn last)."""
    level = np.minimum(rank, 10)
    for lv in range(int(level.max()), -1, -1):
        chosen = [pts[i] for i in np.flatnonzero(level == lv).tolist()]
        if chosen:
            cv2.polylines(plane, chosen, False, 255 - 13 * lv, 1, cv2.LINE_8, _SHIFT)


def _time_plane(
    pts: list[np.ndarray],
    tile: np.ndarray,
    times: np.ndarray | None,
    s_ids: np.ndarray,
    stroke_off: np.ndarray,
    plane: np.ndarray,
) -> None:
    """Segments coloured from 255 (a drawing's first point) down to 64 (its last point) by
    time (by point order when there are no times); within a stroke the earlier segments
    show on top."""
    firsts = np.flatnonzero(np.diff(tile, prepend=-1))  # each drawing's first stroke
    for f, nxt in zip(firsts.tolist(), [*firsts[1:].tolist(), len(tile)], strict=True):
        a0 = int(stroke_off[s_ids[f]])
        a1 = int(stroke_off[s_ids[nxt - 1] + 1])
        tt = times[a0:a1] if times is not None and times[a0] >= 0 else np.arange(a1 - a0, dtype=np.float32)
        t0 = float(tt.min())
        span = float(tt.max()) - t0 or 1.0
        grey = (255.0 - 191.0 * (tt - t0) / span).astype(np.int32).tolist()
        for i in range(f, nxt):
            p = pts[i].tolist()
            g0 = int(stroke_off[s_ids[i]]) - a0
            if int(stroke_off[s_ids[i] + 1]) - int(stroke_off[s_ids[i]]) == 1:
                cv2.line(plane, p[0], p[0], grey[g0], 1, cv2.LINE_8, _SHIFT)
                continue
            for j in range(len(p) - 2, -1, -1):  # later segments first: earlier ones show on top
                cv2.line(plane, p[j], p[j + 1], grey[g0 + j], 1, cv2.LINE_8, _SHIFT)


def reference_kernel_render(
    raw_strokes: Sequence[Sequence[Sequence[int]]], size: int = 64, lw: int = 6
) -> np.ndarray:
    """The public Kaggle "Greyscale MobileNet" kernel's approach, the yardstick of
    ``benchmarks/bench_render.py``: every segment drawn with ``cv2.line`` on a 256x256 canvas
    (width 6, grey ``255 - 13*min(stroke, 10)``), then resized to ``size``. Input: the
    decoded JSON lists."""
    img = np.zeros((256, 256), np.uint8)
    for t, stroke in enumerate(raw_strokes):
        xs, ys = stroke[0], stroke[1]
        color = 255 - min(t, 10) * 13
        for i in range(len(xs) - 1):
            cv2.line(img, (xs[i], ys[i]), (xs[i + 1], ys[i + 1]), color, lw)
    return cv2.resize(img, (size, size)) if size != 256 else img
