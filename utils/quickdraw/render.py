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
``cv2.line`` approach are measured in ``utils/quickdraw/README.md`` and
``benchmarks/bench_render.py``. Used in notebooks 04, 05 and 06 (through ``make_dataset``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate

import cv2
import numpy as np

ENCODINGS = {"plain": 1, "order": 1, "time": 1, "rgb": 3}
GOOGLE_LINE = 16.0  # line diameter in the 256 frame (Google's numpy_bitmap rendering)
GOOGLE_PAD = 16.0  # extra padding in the 256 frame on each side
GOOGLE_FRAME = 256.0 + 2 * GOOGLE_PAD + GOOGLE_LINE
_SHIFT = 4  # fractional bits for cv2 sub-pixel coordinates
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
    returned by :mod:`utils.quickdraw.formats`. ``line_width`` is in output pixels
    (default :func:`default_line_width`); ``supersample`` is the canvas factor (default
    :func:`default_supersample`); ``antialias=False`` draws at the output size.
    Deterministic. Used by ``make_dataset`` (notebooks 04-06) and the figures that show
    what the model sees.
    """
    if len(strokes) == 0:
        return np.zeros((size, size, channels_of(encoding)), np.uint8)
    points = strokes[0] if len(strokes) == 1 else np.concatenate(strokes)
    ends = list(accumulate(len(s) for s in strokes))
    return render_points(
        points,
        ends,
        size,
        encoding=encoding,
        layout=layout,
        line_width=line_width,
        supersample=supersample,
        antialias=antialias,
    )


def render_packed(data: bytes, size: int = 64, **kwargs: object) -> np.ndarray:
    """Render strokes packed by :func:`utils.quickdraw.pipeline.pack_strokes`. Same options
    as :func:`render`; used inside ``make_dataset``."""
    a = np.frombuffer(data, np.float32).reshape(-1, 4)
    if len(a) == 0:
        return render([], size, **kwargs)  # type: ignore[arg-type]
    ends = (np.flatnonzero(np.diff(a[:, 3])) + 1).tolist() + [len(a)]
    points = a[:, :3] if a[0, 2] >= 0 else a[:, :2]
    return render_points(points, ends, size, **kwargs)  # type: ignore[arg-type]


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
    """Render from all points at once (:func:`utils.quickdraw.formats.parse_points`):
    ``points`` ``(N, 2)`` or ``(N, 3)``, ``ends`` the cumulative stroke lengths. The
    fastest entry; same options and result as :func:`render`."""
    nch = channels_of(encoding)
    ss, width, scale, offset, centre = _plan(size, layout, line_width, supersample, antialias)
    canvas = size * ss
    m = scale * _ONE
    xy = np.ascontiguousarray(points[:, :2], dtype=np.float32)  # no copy when it already is
    if centre:  # the bounding box's centre goes to the canvas centre (+ pixel shifts)
        bx, by, bw, bh = cv2.boundingRect(xy)  # exact for integer coordinates
        shift = (
            offset * _ONE + 0.5 - (bx + (bw - 1) * 0.5) * m,
            offset * _ONE + 0.5 - (by + (bh - 1) * 0.5) * m,
        )
    else:
        shift = (offset * _ONE + 0.5, offset * _ONE + 0.5)
    q = (xy * m + shift).astype(np.int32)  # + 0.5 then truncation: rounding (coordinates > 0)
    ends = list(ends)
    starts = [0, *ends[:-1]]
    pts = [
        q[a:b] if b - a > 1 else q[[a, a]] for a, b in zip(starts, ends, strict=True)
    ]  # a dot: 0-length line
    if encoding == "plain":
        img = np.zeros((canvas, canvas), np.uint8)
        cv2.polylines(img, pts, False, 255, 1, cv2.LINE_8, _SHIFT)
    elif encoding == "order":
        img = _order_plane(pts, canvas)
    elif encoding == "time":
        img = _time_plane(q, starts, ends, points[:, 2] if points.shape[1] > 2 else None, canvas)
    else:  # rgb
        first = np.zeros((canvas, canvas), np.uint8)
        cv2.polylines(first, pts, False, 255, 1, cv2.LINE_8, _SHIFT)
        times = points[:, 2] if points.shape[1] > 2 else None
        img = cv2.merge([first, _order_plane(pts, canvas), _time_plane(q, starts, ends, times, canvas)])
    for kernel in _kernels(width):
        img = cv2.dilate(img, kernel)
    if ss > 1:
        img = cv2.resize(img, (size, size), interpolation=cv2.INTER_AREA)
    return img.reshape(size, size, nch)


def _order_plane(pts: list[np.ndarray], canvas: int) -> np.ndarray:
    plane = np.zeros((canvas, canvas), np.uint8)
    for i in range(len(pts) - 1, -1, -1):  # earliest stroke last: it shows where strokes cross
        cv2.polylines(plane, [pts[i]], False, 255 - 13 * min(i, 10), 1, cv2.LINE_8, _SHIFT)
    return plane


def _time_plane(
    q: np.ndarray, starts: list[int], ends: list[int], times: np.ndarray | None, canvas: int
) -> np.ndarray:
    """Segments coloured from 255 (first point) down to 64 (last point) by time
    (by point order when there are no times)."""
    plane = np.zeros((canvas, canvas), np.uint8)
    t = times if times is not None else np.arange(len(q), dtype=np.float32)
    t0 = float(t.min())
    span = float(t.max()) - t0 or 1.0
    grey = (255.0 - 191.0 * (t - t0) / span).astype(np.int32).tolist()
    pts = q.tolist()
    for a, b in zip(starts, ends, strict=True):
        if b - a == 1:
            cv2.line(plane, pts[a], pts[a], grey[a], 1, cv2.LINE_8, _SHIFT)
        for j in range(b - 2, a - 1, -1):  # later segments first: earlier ones show on top
            cv2.line(plane, pts[j], pts[j + 1], grey[j], 1, cv2.LINE_8, _SHIFT)
    return plane


def render_batch(drawings: Sequence[Sequence[np.ndarray]], size: int = 64, **kwargs: object) -> np.ndarray:
    """Render many drawings: ``uint8`` array ``(N, size, size, C)``. Same options as
    :func:`render`."""
    nch = channels_of(str(kwargs.get("encoding", "plain")))
    out = np.empty((len(drawings), size, size, nch), np.uint8)
    for i, strokes in enumerate(drawings):
        out[i] = render(strokes, size, **kwargs)  # type: ignore[arg-type]
    return out


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
