"""Training-time augmentation of drawings: a random hand on the strokes, redrawn every epoch.

:func:`augment_strokes` gives every training drawing a fresh random affine each epoch
(rotation, shear, aspect ratio) and drops a stroke now and then, before rendering, so that a
model trained on the built-in doodles learns less of the generator's specifics. The result
is normalised back to Google's frame, so the renderer centres it as it does a real drawing.

    rng = np.random.default_rng([seed, epoch])
    images = qd.render_batch(qd.augment_strokes(train_strokes, rng), 32)

Used by ``scripts/check_sim_to_real.py`` and ``qd.make_dataset(..., augment=True)`` (notebook 06).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from quickdraw.formats import normalise_to_frame

__all__ = ["augment_strokes"]

TAU = 2 * np.pi


def augment_strokes(
    drawings: Sequence[Sequence[np.ndarray]],
    rng: np.random.Generator,
    *,
    rotation: float = 8.0,
    shear: float = 0.15,
    aspect: float = 0.15,
    drop_stroke: float = 0.1,
    warp: float = 0.0,
) -> list[list[np.ndarray]]:
    """Each drawing under its own random affine (and stroke dropout), normalised to the frame.

    Per drawing: rotation uniform in ±``rotation`` degrees, horizontal shear uniform in
    ±``shear``, aspect ratio ``exp(u)`` with ``u`` uniform in ±``aspect``, then every stroke
    but one dropped with probability ``drop_stroke``, then :func:`normalise_to_frame`.
    ``warp`` > 0 first bends the drawing with a smooth random displacement field (two plane
    waves per axis, amplitudes up to ``warp`` x 255). All zeros give the drawings back
    normalised only; an empty drawing stays empty. ``drawings``: lists of float ``(n, 2)``
    or ``(n, 3)`` arrays in the 0-255 frame.
    """
    if rotation < 0 or shear < 0 or aspect < 0 or warp < 0 or not 0 <= drop_stroke < 1:
        raise ValueError(
            f"need rotation, shear, aspect, warp >= 0 and 0 <= drop_stroke < 1, got "
            f"{rotation}, {shear}, {aspect}, {warp}, {drop_stroke}"
        )
    n = len(drawings)
    theta = np.deg2rad(rng.uniform(-rotation, rotation, n))
    k = rng.uniform(-shear, shear, n)
    half = rng.uniform(-aspect, aspect, n) / 2
    out: list[list[np.ndarray]] = []
    for i, strokes in enumerate(drawings):
        if len(strokes) == 0:  # nothing to move (the renderer draws a blank)
            out.append([])
            continue
        kept = _drop_strokes(list(strokes), rng, drop_stroke)
        bend = _random_warp(rng, warp) if warp else None
        m = _affine(theta[i], k[i], half[i]).T.astype(np.float32)
        moved = []
        for p in kept:
            q = p.astype(np.float32, copy=True)
            q[:, :2] = (p[:, :2] if bend is None else _warped(p[:, :2], *bend)) @ m
            moved.append(q)
        out.append(normalise_to_frame(moved))
    return out


def _affine(theta: float, k: float, half: float) -> np.ndarray:
    """rotate(shear(scale(p))): a 2x2 matrix, applied to row vectors as ``p @ m.T``."""
    c, s = np.cos(theta), np.sin(theta)
    stretch = np.exp(half)
    return np.array([[c, -s], [s, c]]) @ np.array([[1.0, k], [0.0, 1.0]]) @ np.diag([stretch, 1 / stretch])


def _drop_strokes(strokes: list[np.ndarray], rng: np.random.Generator, p: float) -> list[np.ndarray]:
    """Every stroke dropped with probability ``p``, but one kept (one stroke: kept whole)."""
    if not p or len(strokes) < 2:
        return strokes
    keep = rng.random(len(strokes)) >= p
    keep[rng.integers(len(strokes))] = True
    return [q for q, on in zip(strokes, keep, strict=True) if on]


def _random_warp(rng: np.random.Generator, warp: float) -> tuple[np.ndarray, ...]:
    """A smooth random displacement field: two plane waves per axis (frequency in cycles
    per frame, direction, phase, amplitude up to ``warp`` x 255)."""
    freq = rng.uniform(0.5, 1.5, (2, 2)) * TAU / 255
    direction = rng.uniform(0, TAU, (2, 2))
    phase = rng.uniform(0, TAU, (2, 2))
    amp = rng.uniform(0, warp * 255, (2, 2))
    return freq, direction, phase, amp


def _warped(
    xy: np.ndarray, freq: np.ndarray, direction: np.ndarray, phase: np.ndarray, amp: np.ndarray
) -> np.ndarray:
    """The points ``xy`` moved by the field of :func:`_random_warp`."""
    xy = xy.astype(np.float64)
    for axis in range(2):
        cos, sin = np.cos(direction[axis])[:, None], np.sin(direction[axis])[:, None]
        proj = cos * xy[:, 0] + sin * xy[:, 1]
        wave = amp[axis][:, None] * np.sin(freq[axis][:, None] * proj + phase[axis][:, None])
        xy[:, axis] += wave.sum(axis=0)
    return xy
