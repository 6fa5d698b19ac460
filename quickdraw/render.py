"""Strokes -> grayscale (or multi-channel) images with OpenCV.

:func:`render` draws a drawing's strokes at any size. With the default
``layout="google"`` it reproduces the geometry of Google's ``numpy_bitmap`` rendering
(Google's function, posted in quickdraw-dataset issue #19, draws with cairo): the
256x256 frame is padded by 16 + half of a 16-unit line on each side (a 304-unit frame),
the drawing is centred on its bounding box, and the line is 16 units wide with round
caps and joins. ``layout="kaggle"`` draws the 0-255 frame as is (no centring, no
padding), like the popular Kaggle kernels.

How it draws, and why it is fast: one-pixel ``cv2.polylines`` (one call per stroke, or
one for the whole drawing) on a canvas ``supersample`` times larger than the output,
then one ``cv2.dilate`` with a disk as wide as the line (a thick line with round caps and
joins is exactly a thin line dilated by a disk), then one area-averaging
``cv2.resize`` down to the output size, which gives the anti-aliasing. Drawing thick or
``LINE_AA`` lines segment by segment costs several times more.

Encodings (``encoding=``):

- ``"plain"``  - 1 channel, every stroke at full intensity (like ``numpy_bitmap``).
- ``"order"``  - 1 channel, grey by stroke order: ``255 - 13*min(i, 10)`` for stroke
  ``i`` (the "Greyscale MobileNet" Kaggle kernel's encoding; where strokes cross, the
  brighter, earlier one shows).
- ``"time"``   - 1 channel, intensity falls from 255 to 64 with the time of each point
  (raw data; point order within the drawing when there are no times).
- ``"rgb"``    - 3 channels: plain, stroke order, time - as the strong Kaggle solutions fed
  ImageNet-style networks.

Fidelity at 28x28 against Google's own bitmaps and speed against the Kaggle kernel's
``cv2.line`` approach are measured in ``CHANGELOG.md`` and
``benchmarks/bench_render.py``. Used in notebooks 04, 05 and 06 (through ``make_dataset``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from itertools import accumulate

import cv2
import numpy as np

ENCODINGS = {"plain": 1, "order": 1, "time": 1, "rgb": 3}
GOOGLE_LINE = 16.0  # line diameter in the 256 frame (Google's numpy_bitmap rendering)
GOOGLE_PAD = 16.0  # extra padding in the 256 frame on each side
GOOGLE_FRAME = 256.0 + 2 * GOOGLE_PAD + GOOGLE_LINE
_SHIFT = 4  # fractional bits for cv2 sub-pixel coordinates
POINT_BYTES = 16  # a packed point (quickdraw.pipeline.pack_strokes): float32 x, y, t, stroke index
_ONE = 1 << _SHIFT


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


def default_supersample(size: int) -> int:
    """Canvas factor: 4 up to 32 px, 2 up to 128 px, else 1 (line edges then have 5-17
    grey levels after the area-averaging downsample)."""
    return 4 if size <= 32 else (2 if size <= 128 else 1)


@lru_cache(maxsize=64)
def _kernels(width: int) -> tuple[np.ndarray, ...]:
    """Structuring elements whose successive dilations turn a 1-px line ``width`` px wide
    with round ends: a square then a 3x3 cross (an octagon, two cheap separable-ish passes)
    from width 4 up; a cross (3) or a 2x2 square (2) below."""
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
    ss = (supersample or default_supersample(size)) if antialias else 1
    width = max(1, int(round(lw * ss)))
    # an even-sized kernel is anchored half a pixel off centre: move the points to match;
    # cairo's pixel centres are at i + 0.5, OpenCV's at i
    shift = (-0.5 if width % 2 == 0 else 0.0) - 0.5
    if layout == "google":
        scale = size * ss / GOOGLE_FRAME
        return ss, width, scale, GOOGLE_FRAME / 2.0 * scale + shift, True
    return ss, width, size * ss / 256.0, shift, False


def render(
    strokes: Sequence[np.ndarray],
    size: int = 64,
    *,
    encoding: str = "plain",
    layout: str = "google",
    line_width: float | None = None,
    supersample: int | None = None,
    antialias: bool = True,
) -> np.ndarray:
    """Render one drawing to a ``uint8`` image of shape ``(size, size, C)``.

    ``strokes``: float arrays ``(n, 2)`` or ``(n, 3)`` (x, y[, t]) in the 0-255 frame, as
    returned by :mod:`quickdraw.formats`. ``line_width`` is in output pixels
    (default :func:`default_line_width`); ``supersample`` is the canvas factor (default
    :func:`default_supersample`); ``antialias=False`` draws at the output size.
    Deterministic. For many drawings :func:`render_batch` is several times faster.
    Used by the figures that show what the model sees (notebooks 04-06).
    """
    nch = channels_of(encoding)
    if len(strokes) == 0:
        return np.zeros((size, size, nch), np.uint8)
    points = strokes[0] if len(strokes) == 1 else np.concatenate(strokes)
    ends = list(accumulate(len(s) for s in strokes))
    return render_points(points, ends, size, encoding=encoding, layout=layout, line_width=line_width,
                         supersample=supersample, antialias=antialias)  # fmt: skip


def render_points(
    points: np.ndarray,
    ends: Sequence[int],
    size: int = 64,
    *,
    encoding: str = "plain",
    layout: str = "google",
    line_width: float | None = None,
    supersample: int | None = None,
    antialias: bool = True,
) -> np.ndarray:
    """Render one drawing from all its points at once (:func:`quickdraw.formats.parse_points`):
    ``points`` ``(N, 2)`` or ``(N, 3)``, ``ends`` the cumulative stroke lengths. Same
    options and result as :func:`render`."""
    nch = channels_of(encoding)
    if len(points) == 0:
        return np.zeros((size, size, nch), np.uint8)
    plan = _plan(size, layout, line_width, supersample, antialias)
    out = np.empty((size, size, nch), np.uint8)
    _render_one(points, [0, *ends], size, plan, encoding, nch, out)
    return out


def render_packed(data: bytes, size: int = 64, **kwargs: object) -> np.ndarray:
    """Render strokes packed by :func:`quickdraw.pipeline.pack_strokes`. Same options
    as :func:`render`."""
    return render_packed_batch([data], size, **kwargs)[0]  # type: ignore[arg-type]


def render_batch(drawings: Sequence[Sequence[np.ndarray]], size: int = 64, **kwargs: object) -> np.ndarray:
    """Render many drawings (each a list of strokes): ``uint8`` ``(N, size, size, C)``,
    each image exactly what :func:`render` gives. Same options as :func:`render`.
    Used by ``load_arrays`` (notebook 07) and ``load_real_test`` (notebook 06)."""
    points, ends = [], []
    for strokes in drawings:
        if len(strokes) == 0:
            points.append(np.zeros((0, 2), np.float32))
            ends.append([])
            continue
        points.append(strokes[0] if len(strokes) == 1 else np.concatenate(strokes))
        ends.append(list(accumulate(len(s) for s in strokes)))
    return render_points_batch(points, ends, size, **kwargs)  # type: ignore[arg-type]


def render_packed_batch(packed: Sequence[bytes], size: int = 64, **kwargs: object) -> np.ndarray:
    """Render drawings packed by :func:`quickdraw.pipeline.pack_strokes` (float32 rows
    ``x, y, t, stroke``; ``t`` < 0 when there are no times), all at once: what
    ``make_dataset`` calls for every batch read from class files. Same options and results
    as :func:`render`."""
    lengths = np.fromiter((len(d) // POINT_BYTES for d in packed), np.int64, len(packed))
    return render_packed_blocks([b"".join(packed)], lengths, size, **kwargs)


def render_packed_blocks(
    blocks: Sequence[bytes], lengths: np.ndarray, size: int = 64, **kwargs: object
) -> np.ndarray:
    """Render the drawings of blocks read from TFRecord shards (:mod:`quickdraw.shards`): each
    block the packed drawings end to end, ``lengths`` the points of every drawing of every
    block, in order. What ``make_dataset`` calls for a batch of blocks; the same images as
    :func:`render_packed_batch` of the drawings one by one."""
    a = np.frombuffer(b"".join(blocks), np.float32).reshape(-1, 4)
    lengths = np.asarray(lengths, np.int64)
    if int(lengths.sum()) != len(a):
        raise ValueError(f"the blocks hold {len(a)} points, their drawings' lengths add up to {int(lengths.sum())}")
    draw_off = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=draw_off[1:])
    # a new stroke where the stroke number changes or a new drawing begins
    new = np.zeros(len(a), bool)
    new[1:] = a[1:, 3] != a[:-1, 3]
    new[draw_off[:-1][lengths > 0]] = True
    stroke_off = np.append(np.flatnonzero(new), len(a))
    timed = len(a) > 0 and bool((a[:, 2] >= 0).any())
    return _render_flat(a[:, :3] if timed else a[:, :2], draw_off, stroke_off, size, **kwargs)  # type: ignore[arg-type]


def render_points_batch(
    points: Sequence[np.ndarray], ends: Sequence[Sequence[int]], size: int = 64, **kwargs: object
) -> np.ndarray:
    """Render many drawings given as :func:`render_points` takes them (one points array and
    its stroke ends each). Same options and results as :func:`render`."""
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
    return _render_flat(pts, draw_off, np.asarray(stroke_off, np.int64), size, **kwargs)  # type: ignore[arg-type]


def aligned_array(shape: tuple[int, ...], dtype: type = np.uint8, *, align: int = 64) -> np.ndarray:
    """A new uninitialised array whose data start at a multiple of ``align`` bytes: TensorFlow
    takes such an array, returned by a ``tf.numpy_function``, over as the tensor's buffer
    instead of copying it (``TF_NewTensor`` copies misaligned data, tensorflow/c/tf_tensor.cc).
    Used by the renderer and ``quickdraw.pipeline``."""
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dt.itemsize
    raw = np.empty(nbytes + align, np.uint8)
    start = -raw.ctypes.data % align
    return raw[start : start + nbytes].view(dt).reshape(shape)


_CHUNK = 128  # drawings per canvas: one polylines call per grey level, one dilation, one resize
_COLS = 16  # drawings per canvas row


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
    one dilation and one resize serve ``_CHUNK`` drawings; each tile is then exactly the
    picture the drawing would get on a canvas of its own (the 1-pixel lines stay inside
    their tile; a drawing that does not fit is drawn on a canvas of its own).
    """
    nch = channels_of(encoding)
    n = len(draw_off) - 1
    plan = _plan(size, layout, line_width, supersample, antialias)
    out = aligned_array((n, size, size, nch))  # make_dataset returns it: TensorFlow does not copy it
    if n == 0 or len(points) == 0:
        out.fill(0)
        return out
    ss, width, scale, offset, centre = plan
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
    gutter = _gutter(width, ss)
    times = points[:, 2] if points.shape[1] > 2 else None
    for sel in np.array_split(np.flatnonzero(fits), max(1, -(-int(fits.sum()) // _CHUNK))):
        if len(sel) == 0:
            continue
        _draw_tiles(out, q, times, draw_off, stroke_off, sel, size, ss, width, gutter, encoding, nch)
    for i in np.flatnonzero(~fits & (lengths > 0)).tolist():  # a canvas each, lines clipped at its edges
        a, b = draw_off[i], draw_off[i + 1]
        ends = stroke_off[(stroke_off >= a) & (stroke_off <= b)] - a
        _render_one(points[a:b], ends, size, plan, encoding, nch, out[i])
    return out


def _render_one(
    points: np.ndarray,
    stroke_off: np.ndarray,
    size: int,
    plan: tuple,
    encoding: str,
    nch: int,
    dst: np.ndarray,
) -> None:
    """One drawing on a canvas of its own (``stroke_off``: 0, then the stroke ends), into
    ``dst`` ``(size, size, nch)``. The same drawing as :func:`_draw_tiles`, with less bookkeeping."""
    ss, width, scale, offset, centre = plan
    m = scale * _ONE
    xy = np.ascontiguousarray(points[:, :2], dtype=np.float32)
    if centre:  # the bounding box's centre goes to the canvas centre (+ pixel shifts)
        bx, by, bw, bh = cv2.boundingRect(xy)  # floor(min), floor(max) - floor(min) + 1
        shift = [
            offset * _ONE + 0.5 - (bx + (bw - 1) * 0.5) * m,
            offset * _ONE + 0.5 - (by + (bh - 1) * 0.5) * m,
        ]
    else:
        shift = [offset * _ONE + 0.5, offset * _ONE + 0.5]
    q = (xy * m + np.array(shift)).astype(np.int32)  # float64 sum, as in _render_flat
    bounds = [int(x) for x in stroke_off]
    pts = [q[a:b] if b - a > 1 else q[[a, a]] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    ns = len(pts)
    times = points[:, 2] if points.shape[1] > 2 else None
    ids = np.arange(ns)
    starts = np.asarray(bounds[:-1], np.int64)
    with _borrowed((size * ss, size * ss), nch, (size, size)) as buf:
        img = _planes(pts, ids, starts, np.zeros(ns, np.int64), times, ids, np.asarray(bounds), encoding, buf)
        img = _finish(img, width, ss, buf)
        dst[...] = img.reshape(size, size, nch)  # copied before the canvas goes back to the pool


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
    nch: int,
) -> None:
    """Draw drawings ``sel`` on one canvas of tiles, widen, downsample, cut into ``out[sel]``."""
    k = len(sel)
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
    with _borrowed(
        (rows * pitch, cols * pitch), nch, (rows * (size + gutter), cols * (size + gutter))
    ) as buf:
        img = _finish(_planes(pts, rank, s_start, tile, times, s_ids, stroke_off, encoding, buf), width, ss, buf)
        tiles = img.reshape(rows, size + gutter, cols, size + gutter, nch).swapaxes(1, 2)[:, :, :size, :size]
        if k == rows * cols and sel[-1] - sel[0] == k - 1:  # one copy, straight into the output
            out[sel[0] : sel[-1] + 1].reshape(rows, cols, size, size, nch)[...] = tiles
        else:
            out[sel] = tiles.reshape(rows * cols, size, size, nch)[:k]


def _finish(img: np.ndarray, width: int, ss: int, buf: _Buffers) -> np.ndarray:
    """The 1-pixel canvas ``img`` widened to the line width (dilations by the disk's parts,
    between the two canvases of ``buf``) and area-averaged down to ``buf.small_shape`` (the
    anti-aliasing): the last steps of :func:`_render_one` and :func:`_draw_tiles` alike."""
    for kernel in _kernels(width):
        img = cv2.dilate(img, kernel, dst=buf.spare if img is not buf.spare else buf.merged)
    if ss > 1:
        img = cv2.resize(img, buf.small_shape[::-1], dst=buf.small, interpolation=cv2.INTER_AREA)
    return img


def _planes(
    pts: list[np.ndarray],
    rank: np.ndarray,
    s_start: np.ndarray,
    tile: np.ndarray,
    times: np.ndarray | None,
    s_ids: np.ndarray,
    stroke_off: np.ndarray,
    encoding: str,
    buf: _Buffers,
) -> np.ndarray:
    """The 1-pixel drawing of an encoding (before widening), in ``buf``."""
    if encoding == "plain":
        return _plain_plane(pts, buf.plane(0))
    if encoding == "order":
        return _order_plane(pts, rank, buf.plane(0))
    if encoding == "time":
        return _time_plane(pts, s_start, tile, times, s_ids, stroke_off, buf.plane(0))
    planes = [  # rgb
        _plain_plane(pts, buf.plane(0)),
        _order_plane(pts, rank, buf.plane(1)),
        _time_plane(pts, s_start, tile, times, s_ids, stroke_off, buf.plane(2)),
    ]
    return cv2.merge(planes, dst=buf.merged)


def _gutter(width: int, ss: int) -> int:
    """Output pixels between tiles: more than the ink of a line spreads (``width`` canvas px)."""
    return -(-width // ss) + 1


class _Buffers:
    """Canvases reused from call to call (fresh large arrays cost page faults)."""

    def __init__(self, shape: tuple[int, int], nch: int, small_shape: tuple[int, int]) -> None:
        self.planes = [np.empty(shape, np.uint8) for _ in range(nch)]
        self.merged = np.empty((*shape, nch) if nch > 1 else shape, np.uint8)
        self.spare = np.empty_like(self.merged)
        self.small_shape = small_shape
        self.small = np.empty((*small_shape, nch) if nch > 1 else small_shape, np.uint8)

    def plane(self, i: int) -> np.ndarray:
        """Plane ``i``, zeroed (for one channel it is the merged canvas itself)."""
        p = self.merged if len(self.planes) == 1 else self.planes[i]
        p.fill(0)
        return p


# Canvases not in use, per shape: a pool, not thread-local storage. tf.data renders batches
# in several threads at once, and each call of a tf.numpy_function gets a new Python thread
# state (py_func.cc: PyGILState_Ensure ... PyGILState_Release), so a threading.local() is
# empty at every call and its canvases were allocated anew for every batch.
_FREE: dict[tuple, list[_Buffers]] = {}
_POOL_SHAPES, _POOL_PER_SHAPE = 8, 8


@contextmanager
def _borrowed(shape: tuple[int, int], nch: int, small_shape: tuple[int, int]) -> Iterator[_Buffers]:
    """A canvas set of this shape for the ``with`` block, taken from and given back to the pool
    (``list.pop``/``append`` are atomic, so threads never share one)."""
    key = (shape, nch, small_shape)
    free = _FREE.get(key)
    if free is None:
        if len(_FREE) >= _POOL_SHAPES:
            _FREE.clear()
        free = _FREE.setdefault(key, [])
    try:
        buf = free.pop()
    except IndexError:
        buf = _Buffers(shape, nch, small_shape)
    try:
        yield buf
    finally:
        if len(free) < _POOL_PER_SHAPE:
            free.append(buf)


def _plain_plane(pts: list[np.ndarray], plane: np.ndarray) -> np.ndarray:
    cv2.polylines(plane, pts, False, 255, 1, cv2.LINE_8, _SHIFT)
    return plane


def _order_plane(pts: list[np.ndarray], rank: np.ndarray, plane: np.ndarray) -> np.ndarray:
    """Grey ``255 - 13 * min(i, 10)`` for stroke ``i``; where strokes cross, the earlier one
    shows (drawn last)."""
    level = np.minimum(rank, 10)
    for lv in range(int(level.max()), -1, -1):
        chosen = [pts[i] for i in np.flatnonzero(level == lv).tolist()]
        if chosen:
            cv2.polylines(plane, chosen, False, 255 - 13 * lv, 1, cv2.LINE_8, _SHIFT)
    return plane


def _time_plane(
    pts: list[np.ndarray],
    s_start: np.ndarray,
    tile: np.ndarray,
    times: np.ndarray | None,
    s_ids: np.ndarray,
    stroke_off: np.ndarray,
    plane: np.ndarray,
) -> np.ndarray:
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
    return plane


def reference_kernel_render(
    raw_strokes: Sequence[Sequence[Sequence[int]]], size: int = 64, lw: int = 6
) -> np.ndarray:
    """The reference approach of the public Kaggle "Greyscale MobileNet" kernel.

    Draw every segment with ``cv2.line`` on a 256x256 canvas (width 6, grey level
    ``255 - 13*min(stroke, 10)``), then resize to ``size``. Input: the decoded JSON lists.
    Only for ``benchmarks/bench_render.py``; use :func:`render` otherwise.
    """
    img = np.zeros((256, 256), np.uint8)
    for t, stroke in enumerate(raw_strokes):
        xs, ys = stroke[0], stroke[1]
        color = 255 - min(t, 10) * 13
        for i in range(len(xs) - 1):
            cv2.line(img, (xs[i], ys[i]), (xs[i + 1], ys[i + 1]), color, lw)
    return cv2.resize(img, (size, size)) if size != 256 else img
