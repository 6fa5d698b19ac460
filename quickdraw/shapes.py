"""The built-in doodle classes: one procedural template per Quick, Draw! class.

Each template draws one doodle of its class as strokes in the order a person would draw them,
in a unit frame (about -1..1, y down), with the variety of real drawings of the class (which
parts, their proportions, where people start). :func:`quickdraw.synthetic.doodle` then adds the
hand (wobble, sloppy joins, pose) and Google's simplification. The templates were tuned on real
drawings (``data/real/``, CC BY 4.0 Google; history in CHANGELOG.md), and
``scripts/check_sim_to_real.py`` measures how a model trained on them does on real ones.
NumPy only (also NumPy 1.23, for notebook 07). Used through :mod:`quickdraw.synthetic`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

Stroke = np.ndarray  # (n, 2) float64, x right, y down
Rng = np.random.Generator
TAU = 2 * np.pi
T = TypeVar("T", list, np.ndarray)


# Primitives
def arc(cx: float, cy: float, rx: float, ry: float, a0: float, a1: float, n: int | None = None) -> Stroke:
    """Points of an elliptic arc from angle ``a0`` to ``a1`` (radians; y down)."""
    if n is None:
        n = max(4, int(abs(a1 - a0) * 10))
    t = np.linspace(a0, a1, n)
    return np.stack([cx + rx * np.cos(t), cy + ry * np.sin(t)], axis=1)


def seg(*points: Sequence[float]) -> Stroke:
    """A polyline through ``points``."""
    return np.asarray(points, dtype=np.float64).reshape(-1, 2)


def box(x0: float, y0: float, x1: float, y1: float) -> Stroke:
    """The four corners of a rectangle, from ``(x0, y0)`` along y = y0 first."""
    return seg((x0, y0), (x1, y0), (x1, y1), (x0, y1))


def jitter(rng: Rng, points: Stroke, sigma: float) -> Stroke:
    """Move every vertex by a normal offset (corners that are not quite where meant)."""
    return points + rng.normal(0, sigma, points.shape)


def loop(rng: Rng, cx: float, cy: float, rx: float, ry: float, *, wobble: float = 0.05) -> Stroke:
    """A hand-drawn closed curve: random start and direction, a radius that drifts a
    little (low harmonics), and an end that stops short of or runs past the start."""
    a0 = rng.uniform(0, TAU)
    turn = rng.uniform(0.96, 1.12) * TAU * (1 if rng.random() < 0.5 else -1)
    t = np.linspace(0, 1, max(10, int(abs(turn) * 7)))
    ang = a0 + turn * t
    r = 1 + rng.normal(0, wobble, 1) * np.cos(2 * ang + rng.uniform(0, TAU))
    r = r + rng.normal(0, wobble / 2, 1) * np.cos(3 * ang + rng.uniform(0, TAU))
    r = r * (1 + rng.normal(0, wobble / 2) * t)  # a slight spiral: the end misses the start
    return np.stack([cx + rx * r * np.cos(ang), cy + ry * r * np.sin(ang)], axis=1)


def _unit(d: np.ndarray) -> np.ndarray:
    return d / (np.linalg.norm(d) or 1.0)


def polygon(rng: Rng, corners: Stroke, *, closure: float = 0.08, split: float = 0.0) -> list[Stroke]:
    """A closed polygon drawn by hand: starts at a random corner, either direction, ends a
    bit before or after the start; with probability ``split`` drawn as two strokes."""
    c = np.asarray(corners, dtype=np.float64)
    k = len(c)
    s = int(rng.integers(0, k))
    order = np.r_[np.arange(s, k), np.arange(0, s)]
    order = flip(rng, order)
    ring = np.concatenate([c[order], c[order[:1]]])
    # the end: stop short of the start or run past it along the first side
    e = rng.uniform(-closure, closure * 1.5) * (float(np.ptp(c, axis=0).max()) or 1.0)
    if e >= 0:
        ring = np.concatenate([ring, ring[-1:] + _unit(ring[1] - ring[0]) * e])
    else:
        ring[-1] = ring[-1] - _unit(ring[-2] - ring[-1]) * e
    if split > 0 and rng.random() < split and k >= 3:
        m = int(rng.integers(1, k))
        return [ring[: m + 1], ring[m:]]
    return [ring]


def polygon_or_sides(rng: Rng, corners: Stroke, closure: float, one: float, two: float) -> list[Stroke]:
    """A polygon drawn as one stroke (probability ``one``), as two strokes meeting at the third
    corner (probability ``two - one``) or as one stroke a side (squares, triangles)."""
    style = rng.random()
    if style < one:
        return polygon(rng, corners, closure=closure)
    if style < two:
        return [seg(*corners[:3]), seg(*corners[2:], corners[0])]
    return [seg(corners[i], corners[(i + 1) % len(corners)]) for i in range(len(corners))]


def scallops(rng: Rng, points: Stroke, bulge: float, *, outward: int = 1) -> Stroke:
    """Bumps between consecutive ``points`` (clouds, umbrella edges, ice-cream scoops):
    half-ellipses bulging to one side of the direction of travel."""
    p = np.asarray(points, dtype=np.float64)
    out = [p[:1]]
    for a, b in zip(p[:-1], p[1:], strict=True):
        d = b - a
        h = bulge * rng.uniform(0.7, 1.3)
        t = np.linspace(0, 1, 7)[1:]
        out.append(a + np.outer(t, d) + np.outer(np.sin(np.pi * t) * h, np.array([d[1], -d[0]]) * outward))
    return np.concatenate(out)


def dot(rng: Rng, x: float, y: float, r: float = 0.04) -> Stroke:
    """An eye, a knob, a button: a tiny loop, a short dash or a single touch."""
    v = rng.random()
    if v < 0.45:
        return loop(rng, x, y, r, r * rng.uniform(0.8, 1.3), wobble=0.1)
    if v < 0.8:
        a = rng.uniform(0, np.pi)
        return seg((x - r * np.cos(a), y - r * np.sin(a)), (x + r * np.cos(a), y + r * np.sin(a)))
    return seg((x, y))


def spiral(rng: Rng, cx: float, cy: float, r: float, turns: float) -> Stroke:
    """An Archimedean spiral from the centre out (lollipops, shells)."""
    t = np.linspace(0, 1, max(12, int(turns * 14)))
    a = rng.uniform(0, TAU) + turns * TAU * t * (1 if rng.random() < 0.5 else -1)
    return np.stack([cx + r * t * np.cos(a), cy + r * t * np.sin(a)], axis=1)


def scribble(rng: Rng, cx: float, cy: float, r: float) -> Stroke:
    """A part coloured in: strokes back and forth across a small disc (pupils, dark lenses)."""
    k = int(rng.integers(4, 9))
    a = rng.uniform(0, np.pi)
    d, n = np.array([np.cos(a), np.sin(a)]), np.array([-np.sin(a), np.cos(a)])
    off = np.linspace(-0.85, 0.85, k) * r
    half = np.sqrt(np.maximum(r * r - off**2, 0)) * rng.uniform(0.8, 1.1, k)
    side = np.where(np.arange(k) % 2 == 0, 1.0, -1.0)
    ends = [(o * n + s * h * d, o * n - s * h * d) for o, h, s in zip(off, half, side, strict=True)]
    return np.array([cx, cy]) + np.array([p for pair in ends for p in pair])


def rotate(strokes: list[Stroke], angle: float) -> list[Stroke]:
    """The drawing turned by ``angle`` (radians, clockwise on screen)."""
    c, s = np.cos(angle), np.sin(angle)
    return [p @ np.array([[c, s], [-s, c]]) for p in strokes]


def maybe(rng: Rng, p: float) -> bool:
    """True with probability ``p``."""
    return bool(rng.random() < p)


def flip(rng: Rng, items: T, p: float = 0.5) -> T:
    """``items`` (a stroke's points or a list of strokes) reversed with probability ``p``."""
    return items[::-1] if maybe(rng, p) else items


def u(rng: Rng, lo: float, hi: float) -> float:
    """A uniform number in [lo, hi)."""
    return float(rng.uniform(lo, hi))


# Templates (alphabetical; each returns strokes in drawing order)
def apple(rng: Rng) -> list[Stroke]:
    w, h = u(rng, 0.72, 1.05), u(rng, 0.8, 1.1)
    dip = u(rng, 0.08, 0.4)
    a = -np.pi / 2 + TAU * np.linspace(0, 1, 44)  # from the top, clockwise on screen
    r = 1 + rng.normal(0.04, 0.04) * np.cos(2 * a) + rng.normal(0, 0.04) * np.cos(a)
    x = w * r * np.cos(a) * (1 + u(rng, -0.15, 0.15) * np.sin(a))  # wider at the top or at the bottom
    top = np.exp(-(((np.angle(np.exp(1j * (a + np.pi / 2)))) / 0.45) ** 2))  # 1 at the top
    y = h * r * np.sin(a) + dip * h * top
    if maybe(rng, 0.35):  # a dimple at the bottom too
        y = y - 0.5 * dip * h * np.exp(-(((np.angle(np.exp(1j * (a - np.pi / 2)))) / 0.35) ** 2))
    body = np.stack([x, y], axis=1)
    if maybe(rng, 0.25):  # two halves from the dimple down, like a heart
        half = len(body) // 2
        return [body[: half + 1], body[half:][::-1]] + _apple_top(rng, h, dip)
    shift = int(rng.integers(0, len(body) // 2)) if maybe(rng, 0.5) else 0
    body = np.roll(body[:-1], -shift, axis=0)
    strokes = [flip(rng, np.concatenate([body, body[: int(rng.integers(1, 4))]]))] + _apple_top(rng, h, dip)
    if maybe(rng, 0.08):  # a bite
        strokes.append(arc(w * 0.95, 0, 0.25, 0.3, np.pi / 2, 3 * np.pi / 2))
    return strokes


def _apple_top(rng: Rng, h: float, dip: float) -> list[Stroke]:
    strokes: list[Stroke] = []
    top_y = -h + dip * h
    if maybe(rng, 0.9):  # the stem
        lean = u(rng, -0.3, 0.3)
        strokes.append(seg((0, top_y + 0.05), (lean * 0.5, top_y - 0.2), (lean, top_y - u(rng, 0.3, 0.65))))
    if maybe(rng, 0.55):  # a leaf
        side = 1 if maybe(rng, 0.7) else -1
        lx, ly = side * u(rng, 0.15, 0.25), top_y - u(rng, 0.15, 0.3)
        tip = np.array([lx + side * u(rng, 0.35, 0.55), ly - u(rng, 0.0, 0.25)])
        base = np.array([side * 0.03, top_y - 0.12])
        d = tip - base
        t = np.linspace(0, 1, 8)[:, None]
        bulge = np.sin(np.pi * t) * (np.array([-d[1], d[0]]) * 0.3)
        strokes.append(np.concatenate([base + t * d + bulge, (base + t * d - bulge)[::-1][1:]]))
    return strokes


def bowtie(rng: Rng) -> list[Stroke]:
    w, h = 1.0, u(rng, 0.4, 0.8)
    knot, pinch = u(rng, 0.1, 0.25), u(rng, 0.1, 0.35) * h
    style = rng.random()
    strokes: list[Stroke] = []
    if style < 0.45:  # two triangles meeting at the knot, one stroke
        left = seg((-knot, -pinch), (-w, -h), (-w, h), (-knot, pinch))
        right = seg((knot, pinch), (w, h), (w, -h), (knot, -pinch))
        strokes.append(np.concatenate([left, right, left[:1]]))
    elif style < 0.85:  # each side its own stroke
        for side in (-1, 1):
            strokes += polygon(rng, seg((side * knot, 0), (side * w, -h), (side * w, h)), closure=0.05)
    else:  # rounded lobes
        s = np.linspace(0, TAU, 20)
        for side in (-1, 1):
            x = side * (knot + (w - knot) * (1 - np.cos(s)) / 2)
            strokes.append(np.stack([x, h * np.sin(s) * ((1 - np.cos(s)) / 2) ** 0.3], axis=1))
    if maybe(rng, 0.8):  # the knot
        if maybe(rng, 0.5):
            strokes.append(loop(rng, 0, 0, knot * 1.2, pinch + 0.12, wobble=0.08))
        else:
            strokes += polygon(rng, box(-knot, -pinch - 0.1, knot, pinch + 0.1))
    if maybe(rng, 0.2):  # folds
        for side in (-1, 1):
            strokes.append(seg((side * (knot + 0.1), 0), (side * w * 0.6, u(rng, -0.3, 0.3) * h)))
    return flip(rng, strokes, 0.3)


def candle(rng: Rng) -> list[Stroke]:
    w = u(rng, 0.1, 0.25)
    top, bottom = u(rng, -0.45, -0.2), 1.0
    strokes: list[Stroke] = []
    style = rng.random()
    if style < 0.5:
        strokes += polygon(rng, box(-w, top, w, bottom), split=0.3)
    elif style < 0.7:  # two lines (and maybe the top)
        strokes += [seg((-w, top), (-w, bottom)), seg((w, top), (w, bottom))]
        if maybe(rng, 0.4):
            strokes.append(seg((-w, top), (w, top)))
    else:  # open at the top (or the top drawn as an ellipse)
        strokes.append(seg((-w, top), (-w, bottom), (w, bottom), (w, top)))
        if maybe(rng, 0.5):
            strokes.append(loop(rng, 0, top, w, w * 0.3, wobble=0.05))
    wick = top - u(rng, 0.08, 0.2)
    if maybe(rng, 0.6):
        strokes.append(seg((0, top), (u(rng, -0.03, 0.03), wick)))
    if maybe(rng, 0.9):  # the flame: a teardrop
        fh, fw = u(rng, 0.3, 0.6), u(rng, 0.1, 0.22)
        base_y = wick if maybe(rng, 0.5) else top - 0.03
        t = np.linspace(0, 1, 16)
        xs = fw * np.sin(np.pi * t) * np.cos(np.pi * t / 2)  # widest near the base
        ys = np.concatenate([-fh * t, -fh * t[::-1]])
        flame = flip(rng, np.stack([np.concatenate([xs, -xs[::-1]]), base_y + ys], axis=1))
        strokes.append(flame + np.array([u(rng, -0.05, 0.05), 0]))
        if maybe(rng, 0.2):
            strokes.append(loop(rng, 0, base_y - fh * 0.35, fw * 0.4, fh * 0.2, wobble=0.1))
    if maybe(rng, 0.2):  # a holder
        strokes.append(loop(rng, 0, bottom, w + u(rng, 0.15, 0.4), u(rng, 0.06, 0.15), wobble=0.05))
    if maybe(rng, 0.15):  # drips
        for _ in range(int(rng.integers(1, 3))):
            x = u(rng, -w, w)
            strokes.append(seg((x, top), (x, top + u(rng, 0.1, 0.3))))
    return strokes


def circle(rng: Rng) -> list[Stroke]:
    ry = u(rng, 0.85, 1.12)
    if maybe(rng, 0.08):  # two half circles
        a0 = u(rng, 0, TAU)
        return [arc(0, 0, 1, ry, a0, a0 + np.pi * 1.05, 18), arc(0, 0, 1, ry, a0 + np.pi, a0 + TAU + 0.1, 18)]
    strokes = [loop(rng, 0, 0, 1, ry, wobble=u(rng, 0.02, 0.07))]
    if maybe(rng, 0.04):
        strokes.append(dot(rng, u(rng, -0.3, 0.3), u(rng, -0.3, 0.3)))
    return strokes


def cloud(rng: Rng) -> list[Stroke]:
    rx, ry = 1.0, u(rng, 0.35, 0.62)
    k = int(rng.integers(4, 13))
    ang = u(rng, 0, TAU) + TAU * (np.arange(k) + rng.uniform(-0.2, 0.2, k)) / k
    pts = np.stack([rx * np.cos(ang), ry * np.sin(ang)], axis=1)
    if maybe(rng, 0.4):  # a flat bottom
        pts[:, 1] = np.minimum(pts[:, 1], ry * u(rng, 0.2, 0.6))
    # bumps outward: travel is counter-clockwise on screen for increasing angle with y down
    strokes = [flip(rng, scallops(rng, np.concatenate([pts, pts[:1]]), u(rng, 0.25, 0.5)))]
    if maybe(rng, 0.1):  # rain
        for _ in range(int(rng.integers(2, 5))):
            x = u(rng, -0.7, 0.7)
            strokes.append(seg((x, ry + 0.15), (x - 0.05, ry + u(rng, 0.3, 0.5))))
    return strokes


def diamond(rng: Rng) -> list[Stroke]:
    style = rng.random()
    w = u(rng, 0.7, 1.0)
    if style < 0.25:  # a rhombus or a kite
        h = u(rng, 0.8, 1.3)
        mid = u(rng, -0.4, 0.15) * h
        return polygon(rng, jitter(rng, seg((0, -h), (w, mid), (0, h), (-w, mid)), 0.05), split=0.2)
    # a gem: table, crown, pavilion to a point (the crown can be almost flat: a shield)
    top, tip = -u(rng, 0.5, 0.9), u(rng, 0.7, 1.0)
    girdle = top + u(rng, 0.0, 0.6) * (0 - top)
    tw = w * u(rng, 0.5, 1.0)
    if maybe(rng, 0.15):  # a rounded pavilion: the bottom drawn as a curve, cup-like
        t = np.linspace(0, np.pi, 12)
        bottom = np.stack([w * np.cos(t), girdle + (tip - girdle) * np.sin(t) ** u(rng, 0.6, 1.2)], axis=1)
        outline = np.concatenate([seg((-tw, top), (tw, top)), bottom])
    else:
        outline = seg((-tw, top), (tw, top), (w, girdle), (0, tip), (-w, girdle))
    strokes = polygon(rng, jitter(rng, outline, 0.03), split=0.25)
    if maybe(rng, 0.12):  # shading: parallel strokes across the pavilion
        vertical = maybe(rng, 0.5)
        for f in np.linspace(0.2, 0.8, int(rng.integers(3, 7))):
            if vertical:
                x = -w + 2 * w * f
                strokes.append(seg((x, girdle), (x * 0.3, girdle + (tip - girdle) * (1 - abs(x) / w * 0.7))))
            else:
                yy, half = girdle + (tip - girdle) * f, w * (1 - f) * 0.95
                strokes.append(seg((-half, yy), (half, yy)))
        return strokes
    if style < 0.75:
        strokes.append(seg((-w, girdle), (w, girdle)))
        if maybe(rng, 0.6):  # facets
            for x in np.linspace(-tw, tw, int(rng.integers(2, 4))):
                start = [(x, top), (x * 0.6, girdle)] if maybe(rng, 0.5) else [(x, girdle)]
                strokes.append(seg(*start, (0, tip)))
    return strokes


def door(rng: Rng) -> list[Stroke]:
    w, h = u(rng, 0.45, 0.95), 1.0
    strokes: list[Stroke] = []
    if maybe(rng, 0.55):  # three sides, open at the floor
        strokes.append(jitter(rng, seg((-w, h), (-w, -h), (w, -h), (w, h)), 0.02))
        if maybe(rng, 0.3):
            strokes.append(seg((-w - 0.2, h), (w + 0.2, h)))
    else:
        strokes += polygon(rng, jitter(rng, box(-w, -h, w, h), 0.02), split=0.15)
    if maybe(rng, 0.85):  # the knob
        side = 1 if maybe(rng, 0.75) else -1
        strokes.append(dot(rng, side * w * u(rng, 0.55, 0.8), u(rng, -0.1, 0.25), u(rng, 0.04, 0.1)))
    if maybe(rng, 0.12):  # panels
        for y0, y1 in ((-0.8, -0.2), (0.1, 0.8)):
            strokes += polygon(rng, box(-w * 0.6, y0, w * 0.6, y1))
    if maybe(rng, 0.12):  # a frame
        strokes.append(seg((-w - 0.12, h), (-w - 0.12, -h - 0.12), (w + 0.12, -h - 0.12), (w + 0.12, h)))
    if maybe(rng, 0.1):  # a window
        strokes += polygon(rng, box(-w * 0.5, -0.8, w * 0.5, -0.45))
    return strokes


def envelope(rng: Rng) -> list[Stroke]:
    w, h = 1.0, u(rng, 0.35, 0.62)
    rect = jitter(rng, box(-w, -h, w, h), 0.03)
    strokes = polygon(rng, rect, split=0.2)
    vx, vy = u(rng, -0.15, 0.15), u(rng, -0.2, 0.45) * h
    style = rng.random()
    if style < 0.75:  # the flap
        strokes.append(seg(rect[0], (vx, vy), rect[1]))
    elif style < 0.9:  # a cross
        strokes += [seg(rect[0], rect[2]), seg(rect[1], rect[3])]
    else:
        strokes += [seg(rect[0], (vx, vy), rect[1]), seg(rect[3], (vx, vy + 0.1), rect[2])]
    if maybe(rng, 0.25):  # flap first
        strokes = strokes[-1:] + strokes[:-1]
    if maybe(rng, 0.08):  # a stamp
        strokes += polygon(rng, box(0.6, -h + 0.1, 0.85, -h + 0.35))
    return strokes


def eye(rng: Rng) -> list[Stroke]:
    w, h, lift = 1.0, u(rng, 0.4, 0.75), u(rng, -0.1, 0.1)
    t = np.linspace(0, 1, 18)
    up_k, low_k = u(rng, 0.7, 1.1), u(rng, 0.6, 1.0)
    if maybe(rng, 0.25):  # a rounder eye: lids bulging right from the corners
        up_k, low_k = u(rng, 0.3, 0.6), u(rng, 0.3, 0.6)
    upper = np.stack([-w + 2 * w * t, lift * (2 * t - 1) - h * np.sin(np.pi * t) ** up_k], axis=1)
    lower = np.stack([-w + 2 * w * t, lift * (2 * t - 1) + h * low_k * np.sin(np.pi * t)], axis=1)
    strokes: list[Stroke] = []
    if maybe(rng, 0.5):  # two lids, often crossing at the corners
        over = u(rng, 0.0, 0.15) if maybe(rng, 0.5) else 0.0
        ext = np.array([[-over, over * 0.5]]), np.array([[over, over * 0.5]])
        upper = np.concatenate([upper[:1] + ext[0], upper, upper[-1:] + ext[1]])
        lower = np.concatenate([lower[:1] + ext[0] * (1, -1), lower, lower[-1:] + ext[1] * (1, -1)])
        strokes += [upper, flip(rng, lower)]
    elif maybe(rng, 0.7):  # one stroke round the almond
        strokes.append(np.concatenate([upper, lower[::-1][1:]]))
    else:  # a round eye: an oval outline, no corners
        h = u(rng, 0.6, 0.85)
        strokes.append(loop(rng, 0, 0, w, h, wobble=0.05))
        up_k = low_k = 0.01  # the lids' height is h everywhere but at the very ends
    cx = u(rng, -0.3, 0.3)
    if maybe(rng, 0.45):  # a big iris, hidden under the lids
        ir = h * u(rng, 0.9, 1.3)
        a = np.linspace(0, TAU, 40)
        ring = np.stack([cx + ir * np.cos(a), ir * np.sin(a)], axis=1)
        tt = np.clip((ring[:, 0] + w) / (2 * w), 0, 1)
        below_upper = ring[:, 1] > -h * np.sin(np.pi * tt) ** up_k * 0.95
        inside = below_upper & (ring[:, 1] < h * low_k * np.sin(np.pi * tt) * 0.95)
        for side in (ring[:, 0] < cx, ring[:, 0] >= cx):
            part = ring[inside & side]
            if len(part) > 1:
                strokes.append(part[np.argsort(part[:, 1])])
        ir = ir * 0.7
    else:
        ir = h * u(rng, 0.55, 0.95)
        if maybe(rng, 0.9):  # the iris
            strokes.append(loop(rng, cx, 0.0, ir, ir * u(rng, 0.9, 1.1), wobble=0.05))
    if maybe(rng, 0.75):  # the pupil
        pr = ir * u(rng, 0.25, 0.5)
        style = rng.random()
        if style < 0.35:
            strokes.append(spiral(rng, cx, 0.0, pr, u(rng, 1.5, 3.0)))
        elif style < 0.7:
            strokes.append(loop(rng, cx, 0.0, pr, pr, wobble=0.1))
        else:  # coloured in
            strokes.append(scribble(rng, cx, 0.0, pr))
    if maybe(rng, 0.35):  # lashes
        for x in np.linspace(-0.6, 0.6, int(rng.integers(3, 7))):
            y = -h * np.sin(np.pi * (x + w) / (2 * w))
            strokes.append(seg((x, y), (x * 1.2, y - u(rng, 0.15, 0.3))))
    if maybe(rng, 0.1):  # the brow
        strokes.append(arc(0, 0.2, w * 0.9, h + 0.55, np.pi * 1.15, np.pi * 1.85))
    return strokes


def eyeglasses(rng: Rng) -> list[Stroke]:
    r, gap = u(rng, 0.3, 0.42), u(rng, 0.05, 0.3)
    ry, cx = r * u(rng, 0.7, 1.05), gap / 2 + r  # the lenses' half height, their centres' x
    strokes: list[Stroke] = []
    rectangular = maybe(rng, 0.25)
    for side in (-1, 1):
        if rectangular:
            strokes += polygon(rng, box(side * cx - r, -ry, side * cx + r, ry))
        else:
            strokes.append(loop(rng, side * cx, 0, r, ry, wobble=0.05))
    if maybe(rng, 0.15):  # dark lenses
        strokes += [spiral(rng, side * cx, 0, min(r, ry) * 0.9, u(rng, 2.0, 3.5)) for side in (-1, 1)]
    if maybe(rng, 0.9):  # the bridge
        strokes.insert(1, arc(0, 0.0, gap / 2 + 0.02, ry * u(rng, 0.2, 0.5), np.pi, TAU, 6))
    arms = rng.random()
    if arms < 0.75:  # the arms, from the top corners, about level (a little up or down)
        rise, length = rng.normal(-0.1, 0.25), u(rng, 0.25, 0.9)
        for side in (-1, 1):
            x0, y0 = side * (cx + r * 0.9), -ry * u(rng, 0.4, 0.9)
            strokes.append(seg((x0, y0), (x0 + side * length, y0 + rise * length)))
    elif arms < 0.87:  # one line along the top, across both lenses and out to the arms
        y0, reach = -ry * u(rng, 0.7, 1.0), cx + r + u(rng, 0.1, 0.6)
        strokes.append(seg((-reach, y0 + rng.normal(0, 0.05)), (reach, y0 + rng.normal(0, 0.05))))
    return strokes


def fish(rng: Rng) -> list[Stroke]:
    bw, bh = u(rng, 0.55, 0.8), u(rng, 0.22, 0.6)  # half length and half height of the body
    cx = -1 + 2 * bw  # where the body closes (the tail starts); the head is at x = -1
    tail_w, tail_h = u(rng, 0.25, 0.9), bh * u(rng, 0.7, 1.6)  # tails are often as big as the body
    style = rng.random()
    strokes: list[Stroke] = []
    if style < 0.4:  # the "alpha" fish: one stroke, the body's outline crossing into the tail
        a = np.linspace(0.15, TAU - 0.15, 26)  # round the body from the lower side of the crossing
        body = np.stack([cx - bw + bw * np.cos(a), bh * np.sin(a) * (1 - 0.25 * np.cos(a))], axis=1)
        tip_top, tip_bottom = (cx + tail_w, -tail_h), (cx + tail_w, tail_h)
        strokes.append(np.concatenate([seg(tip_top), body, seg(tip_bottom)]))
        if maybe(rng, 0.3):  # the tail closed
            strokes.append(seg(tip_top, (cx + tail_w + u(rng, -0.05, 0.1), 0), tip_bottom))
    elif style < 0.8:  # an oval body, a separate tail (the commonest way in the real drawings)
        strokes.append(loop(rng, cx - bw, 0, bw, bh, wobble=0.04))
        tail = seg((cx - 0.05, 0), (cx + tail_w, -tail_h), (cx + tail_w, tail_h))
        strokes += polygon(rng, tail, closure=0.05) if maybe(rng, 0.7) else [tail]
    else:  # one closed outline with the tail
        t = np.linspace(0, 1, 16)
        top = np.stack([-1 + 2 * bw * t, -bh * np.sin(np.pi * t) ** 0.8], axis=1)
        fin = seg((cx + tail_w, -tail_h), (cx + tail_w * u(rng, 0.6, 0.9), 0), (cx + tail_w, tail_h))
        strokes.append(np.concatenate([top, fin, (top * np.array([1, -1]))[::-1]]))
    if maybe(rng, 0.7):  # the eye
        strokes.append(dot(rng, -1 + bw * u(rng, 0.35, 0.6), -bh * u(rng, 0.1, 0.4), u(rng, 0.03, 0.08)))
    if maybe(rng, 0.2):  # the gill
        strokes.append(arc(-1 + bw * 0.4, 0, bw * 0.4, bh * 0.7, -np.pi / 3, np.pi / 3, 6))
    if maybe(rng, 0.25):  # a fin
        fx = cx - bw * u(rng, 0.6, 1.2)
        strokes.append(seg((fx - 0.2, -bh * 0.9), (fx, -bh - u(rng, 0.15, 0.35)), (fx + 0.2, -bh * 0.9)))
    if maybe(rng, 0.1):  # scales or stripes
        for x in np.linspace(cx - bw * 1.2, cx - bw * 0.4, 3):
            strokes.append(arc(x, 0, 0.1, bh * 0.7, -np.pi / 2, np.pi / 2, 6))
    if maybe(rng, 0.08):  # bubbles
        strokes.append(dot(rng, -1.2, -bh - 0.2, 0.06))
    strokes = rotate(strokes, rng.normal(0, 0.22))  # fish swim about level, some drawn rising
    return [s * np.array([-1.0, 1.0]) for s in strokes] if maybe(rng, 0.5) else strokes


def house(rng: Rng) -> list[Stroke]:
    w, eave, apex = u(rng, 0.55, 0.95), u(rng, -0.25, 0.2), -1.0
    over = u(rng, 0.0, 0.15)  # how far the roof reaches past the walls
    body = jitter(rng, box(-w, eave, w, 1), 0.02)
    style = rng.random()
    strokes: list[Stroke] = []
    if style < 0.6:  # a box (closed, or open at the top) and a roof on it
        strokes += polygon(rng, body, split=0.15) if maybe(rng, 0.6) else [body[[0, 3, 2, 1]]]
        strokes.append(seg((-w - over, eave + 0.02), (u(rng, -0.1, 0.1), apex), (w + over, eave + 0.02)))
    elif style < 0.85:  # the roof first, as a triangle
        strokes += polygon(rng, seg((-w - over, eave), (0, apex), (w + over, eave)), split=0.1)
        strokes.append(seg((-w, eave), (-w, 1), (w, 1), (w, eave)))
    else:  # the outline in one stroke
        strokes += polygon(rng, seg((-w, 1), (-w, eave), (0, apex), (w, eave), (w, 1)))
    if maybe(rng, 0.6):  # a door
        dw = u(rng, 0.15, 0.3)
        dx = u(rng, -w + dw + 0.1, w - dw - 0.1)
        top = u(rng, 0.3, 0.6)
        strokes.append(seg((dx - dw, 1), (dx - dw, top), (dx + dw, top), (dx + dw, 1)))
        if maybe(rng, 0.3):
            strokes.append(dot(rng, dx + dw * 0.5, (top + 1) / 2, 0.03))
    for _ in range(int(rng.choice([0, 0, 1, 1, 2]))):  # windows
        wx, wy, ws = u(rng, -w + 0.25, w - 0.25), u(rng, eave + 0.15, 0.5), u(rng, 0.1, 0.18)
        strokes += polygon(rng, box(wx - ws, wy - ws, wx + ws, wy + ws))
        if maybe(rng, 0.4):
            strokes += [seg((wx, wy - ws), (wx, wy + ws)), seg((wx - ws, wy), (wx + ws, wy))]
    if maybe(rng, 0.15):  # a chimney
        cx = u(rng, 0.25, 0.5) * w
        cy = eave + (apex - eave) * (1 - cx / (w + over))
        right = cy + 0.15 * (apex - eave) / w
        strokes.append(seg((cx, cy), (cx, cy - 0.3), (cx + 0.15, cy - 0.3), (cx + 0.15, right)))
    return strokes


def ice_cream(rng: Rng) -> list[Stroke]:
    w, rim = u(rng, 0.3, 0.55), u(rng, -0.3, 0.0)
    cone = seg((-w, rim), (u(rng, -0.05, 0.05), 1.0), (w, rim))
    strokes = polygon(rng, cone, closure=0.04) if maybe(rng, 0.5) else [cone]
    if maybe(rng, 0.2):  # waffle lines
        for k in range(int(rng.integers(1, 4))):
            f = (k + 1) / 4
            strokes.append(seg((-w * (1 - f), rim + (1 - rim) * f), (w * (1 - f * 0.2), rim + 0.02)))
            strokes.append(seg((w * (1 - f), rim + (1 - rim) * f), (-w * (1 - f * 0.2), rim + 0.02)))
    y = rim
    for _ in range(1 if maybe(rng, 0.8) else 2):  # scoops
        r, sh = w * u(rng, 1.0, 1.4), u(rng, 0.7, 1.1)
        if maybe(rng, 0.5):  # a bumpy scoop above the rim
            top = arc(0, y, r, r * sh * 1.4, np.pi, TAU, 16)
            if maybe(rng, 0.6):
                k = int(rng.integers(3, 6))
                edge = np.stack([np.linspace(r, -r, k + 1), np.full(k + 1, y)], 1)
                top = np.concatenate([top, scallops(rng, edge, 0.25)])
            strokes.append(top)
        else:
            strokes.append(loop(rng, 0, y - r * sh * 0.7, r, r * sh, wobble=0.06))
        y = y - r * sh * 1.3
    if maybe(rng, 0.1):  # a cherry
        strokes.append(loop(rng, 0, y - 0.12, 0.1, 0.1))
    return strokes


def ladder(rng: Rng) -> list[Stroke]:
    w, taper = u(rng, 0.22, 0.6), u(rng, 0.0, 0.1)
    rails = flip(rng, [seg((-w + taper, -1), (-w, 1)), seg((w - taper, -1), (w, 1))])
    k = int(rng.choice([2, 3, 3, 4, 4, 5, 6, 7]))  # real ladders: mostly 3-5 rungs
    if maybe(rng, 0.3):  # the first and last rung at the ends of the rails
        k = min(k + 1, 7)
        ys = np.linspace(-0.93, 0.93, k) + rng.normal(0, 0.03, k)
    else:
        ys = np.linspace(-1, 1, k + 2)[1:-1] + rng.normal(0, 0.03, k)
    out = u(rng, 0.05, 0.3) if maybe(rng, 0.25) else 0.0  # rungs that stick out
    rungs = [seg((-w + taper * (1 - y) / 2 - out, y), (w - taper * (1 - y) / 2 + out, y)) for y in ys]
    rungs = flip(rng, rungs)
    strokes = rungs + rails if maybe(rng, 0.15) else rails + rungs
    return rotate(strokes, rng.normal(0, 0.2))  # ladders are often drawn leaning


def lightning(rng: Rng) -> list[Stroke]:
    style = rng.random()
    if style < 0.15:  # a storm cloud with bolts under it
        strokes = [s * np.array([1.0, 0.6]) + np.array([0, -0.6]) for s in cloud(rng)[:1]]
        for _ in range(int(rng.integers(1, 4))):
            x = u(rng, -0.6, 0.6)
            strokes.append(seg((x, -0.2), (x - 0.2, 0.3), (x + 0.1, 0.3), (x - 0.15, 1.0)))
        return strokes
    lean = rng.normal(0, 0.35)
    if style < 0.55:  # the outline of a bolt
        w, k = u(rng, 0.45, 0.75), u(rng, 0.1, 0.3)
        pts = seg(
            (w * 0.5, -1), (-w * 0.6, k * 0.3), (0.0 + u(rng, -0.05, 0.1), k), (-w * 0.5, 1),
            (w * 0.7, -k * 0.3), (0.05 + u(rng, -0.1, 0.05), -k * 0.6), (w, -1),
        )
        return rotate(polygon(rng, jitter(rng, pts, 0.04), closure=0.05), lean)
    n = int(rng.integers(3, 6))  # a zigzag line
    xs = np.where(np.arange(n + 1) % 2 == 0, u(rng, 0.25, 0.6), -u(rng, 0.25, 0.6))
    xs = xs + np.linspace(u(rng, 0.1, 0.4), -u(rng, 0.1, 0.4), n + 1)
    strokes = [jitter(rng, np.stack([xs, np.linspace(-1, 1, n + 1)], axis=1), 0.05)]
    if maybe(rng, 0.3):  # an arrow head
        tip = strokes[0][-1]
        strokes.append(seg(tip + (-0.2, -0.2), tip, tip + (0.2, -0.15)))
    return rotate(strokes, lean)


def line(rng: Rng) -> list[Stroke]:
    ang = rng.normal(0, 0.06) if maybe(rng, 0.75) else u(rng, 0, np.pi)
    bend = rng.normal(0, 0.02)
    d = np.array([np.cos(ang), np.sin(ang)])
    n = np.array([-d[1], d[0]])
    t = np.linspace(-1, 1, 5)[:, None]
    strokes = [t * d + (1 - t**2) * bend * n]
    if maybe(rng, 0.05):
        strokes.append(strokes[0] + n * 0.04)
    return strokes


def lollipop(rng: Rng) -> list[Stroke]:
    r = u(rng, 0.3, 0.5)
    cy, stick = -1 + r, u(rng, 0.8, 1.4)
    strokes = [loop(rng, 0, cy, r, r * u(rng, 0.85, 1.1), wobble=0.05)]
    if maybe(rng, 0.35):  # the swirl
        strokes.append(spiral(rng, 0, cy, r * 0.8, u(rng, 1.5, 3.0)))
    sx, y0 = u(rng, -0.05, 0.05), cy + r
    if maybe(rng, 0.85):
        strokes.append(seg((sx, y0), (sx + u(rng, -0.1, 0.1), y0 + stick)))
    else:  # a stick with width
        x0, x1 = sx - 0.05, sx + 0.05
        strokes.append(seg((x0, y0), (x0, y0 + stick), (x1, y0 + stick), (x1, y0)))
    return flip(rng, strokes, 0.2)


def moon(rng: Rng) -> list[Stroke]:
    if maybe(rng, 0.12):  # a full moon with craters
        strokes = [loop(rng, 0, 0, 1, 1, wobble=0.04)]
        for _ in range(int(rng.integers(1, 5))):
            x, y = u(rng, -0.5, 0.5), u(rng, -0.5, 0.5)
            strokes.append(loop(rng, x, y, u(rng, 0.08, 0.2), u(rng, 0.08, 0.2)))
        return strokes
    # a crescent: an outer arc (half of it: span) and an inner curve d (the thickness) inside it
    span, d = u(rng, 0.6, 0.92) * np.pi, u(rng, 0.05, 0.45)
    face = 0.0 if maybe(rng, 0.78) else np.pi  # the open side: mostly right (a "C"), or left
    face += rng.normal(0, 0.3)
    outer = arc(0, 0, 1, 1, face + np.pi - span, face + np.pi + span, 24)
    # the inner curve: through both horns, bulging the same way, less
    h0, h1 = outer[0], outer[-1]
    mid = np.array([np.cos(face + np.pi), np.sin(face + np.pi)]) * (1 - 2 * d)
    t = np.linspace(0, 1, 14)[:, None]
    inner = (1 - t) ** 2 * h1 + 2 * (1 - t) * t * (2 * mid - (h0 + h1) / 2) + t**2 * h0
    strokes = [np.concatenate([outer, inner[1:]])] if maybe(rng, 0.75) else [outer, inner]
    if maybe(rng, 0.1):  # a star beside it
        strokes.append(seg((0.7, -0.7), (0.8, -0.5), (0.9, -0.7), (0.7, -0.6), (0.9, -0.6), (0.7, -0.7)))
    if maybe(rng, 0.1):  # a face
        strokes.append(dot(rng, np.cos(face + np.pi) * 0.5, -0.2, 0.05))
    return strokes


def mountain(rng: Rng) -> list[Stroke]:
    k = int(rng.choice([1, 1, 2, 2, 2, 3, 3, 4]))
    xs = np.linspace(-1, 1, 2 * k + 1)[1:-1] + rng.normal(0, 0.3 / k, 2 * k - 1)
    peaks, valleys = xs[::2], xs[1::2]
    top = 1 - u(rng, 1.0, 2.0)  # the highest peak (the base is at y = 1)
    pts = [(-1.0, 1.0)]
    for i, x in enumerate(peaks):
        pts.append((x, top + u(rng, 0.0, 0.8) * (1 - top) * (i > 0)))
        if i < len(valleys):
            pts.append((valleys[i], top + u(rng, 0.3, 0.8) * (1 - top)))
    p = seg(*pts, (1.0, 1.0))
    if k > 1:
        p[1 + 2 * int(rng.integers(0, k)), 1] = top  # the highest peak is somewhere
    if maybe(rng, 0.12):  # rounded hills
        t = np.linspace(0, 1, 10)[:, None]
        bump = np.sin(np.pi * t) * np.array([0, -0.15])
        p = np.concatenate([a + t * (b - a) + bump for a, b in zip(p[:-1], p[1:], strict=True)])
    strokes = [p]
    if maybe(rng, 0.25):  # a snow cap
        x, y = p[np.argmin(p[:, 1])]
        strokes.append(seg((x - 0.25, y + 0.35), (x - 0.1, y + 0.25), (x, y + 0.4),
                           (x + 0.1, y + 0.25), (x + 0.25, y + 0.35)))
    if k > 1 and maybe(rng, 0.15):  # the ground (under one peak it would make a triangle)
        strokes.append(seg((-1.1, 1.0), (1.1, 1.0)))
    if maybe(rng, 0.08):  # a sun
        strokes.append(loop(rng, 0.8, -0.8, 0.15, 0.15))
    return strokes


def rainbow(rng: Rng) -> list[Stroke]:
    k = int(rng.choice([1, 1, 2, 2, 2, 3, 3, 4, 5]))
    span, mid, gap = u(rng, 0.85, 1.05) * np.pi, -np.pi / 2 + rng.normal(0, 0.1), u(rng, 0.1, 0.2)
    strokes = []
    for i in range(k):
        r = 1 - i * gap
        band = arc(0, 0.4, r, r * u(rng, 0.85, 1.25), mid - span / 2, mid + span / 2, 18)
        strokes.append(flip(rng, band, 0.3))
    strokes = flip(rng, strokes, 0.1)
    if maybe(rng, 0.12):  # clouds at the ends
        strokes += [loop(rng, side * (1 - k * gap / 2), 0.45, 0.25, 0.15) for side in (-1, 1)]
    return strokes


def smiley_face(rng: Rng) -> list[Stroke]:
    ry = u(rng, 0.9, 1.15)
    outline = maybe(rng, 0.88)
    strokes = [loop(rng, 0, 0, 1, ry, wobble=0.04)] if outline else []
    ex, ey, es = u(rng, 0.25, 0.45), u(rng, -0.5, -0.2), u(rng, 0.04, 0.14)  # the eyes: x, y, size
    for side in (-1, 1):
        if maybe(rng, 0.5):
            strokes.append(dot(rng, side * ex, ey, es))
        else:
            strokes.append(seg((side * ex, ey - es * 1.5), (side * ex + u(rng, -0.02, 0.02), ey + es * 1.5)))
    if maybe(rng, 0.12):  # a nose
        strokes.append(seg((0, -0.1), (-0.05, 0.1), (0.03, 0.12)))
    mw, my, depth = u(rng, 0.35, 0.65), u(rng, 0.15, 0.45), u(rng, 0.15, 0.4)
    smile = arc(0, my - depth * 0.5, mw, depth, np.pi * 0.1, np.pi * 0.9, 14)
    strokes.append(flip(rng, smile))
    if maybe(rng, 0.15):  # a grin: close the mouth
        strokes.append(seg(smile[0], smile[-1]))
    if not outline and maybe(rng, 0.5):
        strokes.append(arc(0, 0, 1, ry, np.pi * 0.1, np.pi * 0.9))
    if maybe(rng, 0.08):  # hair
        strokes += [seg((x, -ry), (x * 1.3, -ry - 0.25)) for x in np.linspace(-0.3, 0.3, 3)]
    return strokes


def snowman(rng: Rng) -> list[Stroke]:
    if maybe(rng, 0.35):  # three balls
        radii = [u(rng, 0.5, 0.6), u(rng, 0.36, 0.46), u(rng, 0.26, 0.34)]
    else:
        radii = [u(rng, 0.5, 0.6), u(rng, 0.32, 0.44)]
    y = 1.0
    centres = []
    for r in radii:
        cy = y - r
        centres.append((rng.normal(0, 0.03), cy, r))
        y = cy - r * u(rng, 0.8, 1.0)
    strokes = []
    for cx, cy, r in flip(rng, centres, 0.6):  # often the head first
        strokes.append(loop(rng, cx, cy, r * u(rng, 1.0, 1.35), r, wobble=0.05))  # balls drawn wide
    hx, hy, hr = centres[-1]
    if maybe(rng, 0.4):  # eyes
        strokes += [dot(rng, hx + side * hr * 0.4, hy - hr * 0.25, 0.03) for side in (-1, 1)]
    if maybe(rng, 0.25):  # a carrot nose
        strokes.append(seg((hx, hy), (hx + u(rng, 0.2, 0.35), hy + 0.05), (hx, hy + 0.08)))
    if maybe(rng, 0.15):  # a hat
        top, hw = hy - hr * 0.9, hr * 0.55
        strokes.append(seg((hx - hr * 0.9, top), (hx + hr * 0.9, top)))
        crown = top - 0.35
        strokes += polygon(rng, seg((hx - hw, top), (hx - hw, crown), (hx + hw, crown), (hx + hw, top)))
    bx, by, br = centres[-2]  # the body, under the head
    if maybe(rng, 0.2):  # stick arms
        for side in (-1, 1):
            x0 = bx + side * br * 0.9
            x1 = x0 + side * u(rng, 0.3, 0.55)
            y1 = by - u(rng, 0.1, 0.4)
            strokes.append(seg((x0, by), (x1, y1)))
            if maybe(rng, 0.5):
                strokes.append(seg((x1 - side * 0.1, y1 - 0.12), (x1, y1), (x1 + side * 0.02, y1 + 0.12)))
    if maybe(rng, 0.15):  # buttons
        strokes += [dot(rng, bx, by - br * 0.5 + k * br * 0.45, 0.03) for k in range(int(rng.integers(2, 4)))]
    return strokes


def square(rng: Rng) -> list[Stroke]:
    h = u(rng, 0.8, 1.2)
    return polygon_or_sides(rng, jitter(rng, box(-1, -h, 1, h), 0.04), 0.06, 0.8, 0.93)


def star(rng: Rng) -> list[Stroke]:
    style = rng.random()
    phase = -np.pi / 2 + rng.normal(0, 0.1)
    a = phase + TAU * np.arange(5) / 5
    outer = np.stack([np.cos(a), np.sin(a)], axis=1)
    if style < 0.5:  # the one-stroke pentagram
        pts = jitter(rng, outer[[0, 2, 4, 1, 3]], u(rng, 0.03, 0.12))
        return polygon(rng, pts, closure=0.05, split=0.1)
    if style < 0.9:  # the outline with ten corners
        inner_r = u(rng, 0.3, 0.55) * rng.uniform(0.8, 1.2, 5)  # arms of uneven width
        b = phase + np.pi / 5 + TAU * np.arange(5) / 5 + rng.normal(0, 0.08, 5)
        pts = np.empty((10, 2))
        pts[0::2] = outer * rng.uniform(0.8, 1.1, (5, 1))
        pts[1::2] = np.stack([inner_r * np.cos(b), inner_r * np.sin(b)], axis=1)
        return polygon(rng, jitter(rng, pts, u(rng, 0.02, 0.08)), closure=0.04, split=0.1)
    a = -np.pi / 2 + TAU * np.arange(3) / 3  # a six-pointed star: two triangles
    triangle = np.stack([np.cos(a), np.sin(a)], axis=1)
    return polygon(rng, triangle) + polygon(rng, -triangle)


def sun(rng: Rng) -> list[Stroke]:
    r = u(rng, 0.35, 0.6)
    strokes = [loop(rng, 0, 0, r, r * u(rng, 0.9, 1.1), wobble=0.05)]
    k = int(rng.integers(4, 14))
    phase = u(rng, 0, TAU)
    if rng.random() < 0.8:  # separate rays, from r + gap out to r1
        gap = u(rng, 0.05, 0.2)
        for i in range(k):
            a = phase + TAU * i / k + rng.normal(0, 0.05)
            r0, r1 = r + gap, u(rng, 0.75, 1.0)
            strokes.append(seg((r0 * np.cos(a), r0 * np.sin(a)), (r1 * np.cos(a), r1 * np.sin(a))))
    else:  # a zigzag of spikes around it
        a = phase + TAU * np.arange(2 * k + 1) / (2 * k)
        rr = np.where(np.arange(2 * k + 1) % 2 == 0, r + 0.05, u(rng, 0.75, 1.0))
        strokes.append(np.stack([rr * np.cos(a), rr * np.sin(a)], axis=1))
    if maybe(rng, 0.2):  # a face
        strokes += [dot(rng, side * r * 0.35, -r * 0.25, 0.03) for side in (-1, 1)]
        strokes.append(arc(0, r * 0.1, r * 0.4, r * 0.3, 0.2 * np.pi, 0.8 * np.pi, 8))
    return strokes


def triangle(rng: Rng) -> list[Stroke]:
    apex = u(rng, -0.45, 0.45) if maybe(rng, 0.85) else float(rng.choice([-1.0, 1.0]))
    h = float(np.exp(u(rng, -0.6, 0.45)))  # wide and flat to tall and thin
    pts = jitter(rng, seg((apex, -h), (1, h), (-1, h)), 0.05)
    if maybe(rng, 0.05):  # upside down
        pts[:, 1] *= -1
    return polygon_or_sides(rng, pts, 0.07, 0.85, 0.95)


def umbrella(rng: Rng) -> list[Stroke]:
    w, ch = 1.0, u(rng, 0.45, 0.8)  # ch: the canopy's height
    base = -1 + ch
    top = arc(0, base, w, ch, np.pi, TAU, 20)
    style = rng.random()
    k = int(rng.integers(3, 6))
    edge_x = np.linspace(w, -w, k + 1)
    if style < 0.55:  # a scalloped edge: arcs up between the ribs, or down
        bulge, out = u(rng, 0.08, 0.18), -1 if maybe(rng, 0.5) else 1
        edge = scallops(rng, np.stack([edge_x, np.full(k + 1, base)], axis=1), bulge, outward=out)
        strokes = [np.concatenate([top, edge[1:]])]
    elif style < 0.85:  # a straight edge
        strokes = [np.concatenate([top, seg((-w, base))])]
    else:
        strokes = [top]
    if maybe(rng, 0.3):  # ribs
        strokes += [seg((0, -1), (x, base)) for x in edge_x[1:-1]]
    if maybe(rng, 0.2):  # a tip
        strokes.append(seg((0, -1), (0, -1.12)))
    sx = u(rng, -0.05, 0.05)
    shaft_top = -1 if maybe(rng, 0.3) else base
    bottom = u(rng, 0.7, 1.0)
    shaft = seg((sx, shaft_top), (sx, bottom))
    if maybe(rng, 0.85):  # the hook
        hr = u(rng, 0.12, 0.25)
        side = 1 if maybe(rng, 0.5) else -1
        hook = arc(sx + side * hr, bottom, hr, hr, 0 if side < 0 else np.pi, np.pi if side < 0 else 0, 8)
        shaft = np.concatenate([shaft, hook[1:]])
    strokes.append(shaft)
    return strokes


def wine_glass(rng: Rng) -> list[Stroke]:
    bw, bowl_bottom = u(rng, 0.45, 0.75), u(rng, -0.15, 0.25)  # the bowl's half width, its bottom's y
    rim, foot = -1.0, 1.0
    if rng.random() < 0.7:  # a round bowl
        t = np.linspace(0, 1, 16)
        ys = rim + (bowl_bottom - rim) * np.sin(np.pi * t) ** u(rng, 0.6, 1.2)
        bowl = np.stack([bw * np.cos(np.pi * t), ys], axis=1)
    else:  # a trapezoid / V bowl
        low = bw * u(rng, 0.2, 0.7), -bw * u(rng, 0.2, 0.7)
        bowl = seg((bw, rim), (low[0], bowl_bottom), (low[1], bowl_bottom), (-bw, rim))
    if maybe(rng, 0.5):
        strokes = [np.concatenate([bowl, bowl[:1]])]  # the rim line
    else:
        strokes = [bowl]
        if maybe(rng, 0.4):
            strokes.append(loop(rng, 0, rim, bw, u(rng, 0.06, 0.15), wobble=0.04))
    sw = u(rng, 0.0, 0.07)
    if sw < 0.03:
        strokes.append(seg((0, bowl_bottom), (0, foot)))
    else:
        strokes += [seg((-sw, bowl_bottom), (-sw, foot)), seg((sw, bowl_bottom), (sw, foot))]
    fw = u(rng, 0.3, 0.6)
    if maybe(rng, 0.5):
        strokes.append(seg((-fw, foot), (fw, foot)))
    else:
        strokes.append(loop(rng, 0, foot, fw, u(rng, 0.05, 0.12), wobble=0.04))
    if maybe(rng, 0.3):  # the wine
        ly = rim + (bowl_bottom - rim) * u(rng, 0.3, 0.5)
        strokes.append(seg((-bw * 0.9, ly), (bw * 0.9, ly)))
    return strokes


#: Class name (Google's spelling: the template's name with spaces) -> template, in label order.
TEMPLATES: dict[str, Callable[[Rng], list[Stroke]]] = {
    f.__name__.replace("_", " "): f
    for f in (apple, bowtie, candle, circle, cloud, diamond, door, envelope, eye, eyeglasses, fish, house,
              ice_cream, ladder, lightning, line, lollipop, moon, mountain, rainbow, smiley_face, snowman,
              square, star, sun, triangle, umbrella, wine_glass)
}
