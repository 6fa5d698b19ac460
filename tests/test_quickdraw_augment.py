"""quickdraw.augment: the training-time random hand of scripts/check_sim_to_real.py."""

from __future__ import annotations

import numpy as np
import pytest

import quickdraw as qd

SQUARE = [np.array([[0, 0], [100, 0], [100, 100], [0, 100], [0, 0]], np.float32)]
SEGMENT = [np.array([[10, 50], [60, 50]], np.float32)]  # horizontal
TEN_STROKES = [np.array([[i, 0], [i, 20 + i]], np.float32) for i in range(10)]


def _extent(strokes: list[np.ndarray]) -> np.ndarray:
    xy = np.concatenate(strokes)[:, :2]
    return xy.max(0) - xy.min(0)


def test_normalise_to_frame_puts_the_drawing_at_zero_with_longer_side_255() -> None:
    drawing = [np.array([[40, 30, 0], [90, 55, 7]], np.float32), np.array([[50, 80, 9]], np.float32)]
    out = qd.normalise_to_frame(drawing)
    xy = np.concatenate(out)[:, :2]
    np.testing.assert_allclose(xy.min(0), [0, 0], atol=1e-4)
    # x spans 50, y spans 50 -> both 255; the times are untouched
    np.testing.assert_allclose(_extent(out), [255, 255], atol=1e-3)
    np.testing.assert_array_equal([s[:, 2] for s in out][0], [0, 7])
    np.testing.assert_allclose(out[1][0, :2], [(50 - 40) * 255 / 50, (80 - 30) * 255 / 50], rtol=1e-5)


def test_no_augmentation_gives_the_drawings_back_normalised() -> None:
    rng = np.random.default_rng(0)
    out = qd.augment_strokes([SQUARE, TEN_STROKES], rng, rotation=0, shear=0, aspect=0, drop_stroke=0)
    for got, want in zip(out, [SQUARE, TEN_STROKES], strict=True):
        assert len(got) == len(want)
        for g, w in zip(got, qd.normalise_to_frame(want), strict=True):
            np.testing.assert_allclose(g, w, atol=1e-4)


def test_aspect_stays_in_range_and_goes_both_ways() -> None:
    out = qd.augment_strokes([SQUARE] * 300, np.random.default_rng(1), rotation=0, shear=0, aspect=0.4)
    log_ratio = np.array([np.log(e[0] / e[1]) for e in map(_extent, out)])
    assert np.all(np.abs(log_ratio) <= 0.4 + 1e-5)
    assert log_ratio.min() < -0.3 and log_ratio.max() > 0.3  # uniform in ±0.4 over 300 drawings
    assert np.all(np.abs([_extent(o).max() for o in out] - np.float32(255)) < 1e-2)


def test_rotation_turns_a_segment_within_the_limit_and_keeps_its_shape() -> None:
    out = qd.augment_strokes([SEGMENT] * 300, np.random.default_rng(2), rotation=10, shear=0, aspect=0)
    d = np.array([s[0][1] - s[0][0] for s in out])
    angle = np.degrees(np.arctan2(d[:, 1], d[:, 0]))
    assert np.all(np.abs(angle) <= 10 + 1e-3)
    assert angle.min() < -8 and angle.max() > 8
    # a rotated square stays a square: its four sides keep one length
    square = qd.augment_strokes([SQUARE], np.random.default_rng(3), rotation=10, shear=0, aspect=0)[0][0]
    sides = np.linalg.norm(np.diff(square, axis=0), axis=1)
    np.testing.assert_allclose(sides, sides[0], rtol=1e-4)


def test_shear_slants_the_vertical_sides_only() -> None:
    out = qd.augment_strokes([SQUARE] * 50, np.random.default_rng(4), rotation=0, shear=0.3, aspect=0)
    slants = []
    for (sq,) in out:
        np.testing.assert_allclose(sq[0, 1], sq[1, 1], atol=1e-3)  # the bottom side stays level
        slants.append((sq[2, 0] - sq[1, 0]) / (sq[2, 1] - sq[1, 1]))
    assert np.all(np.abs(slants) <= 0.3 + 1e-4) and np.ptp(slants) > 0.3


def test_stroke_dropout_rate_and_never_an_empty_drawing() -> None:
    rng = np.random.default_rng(5)
    out = qd.augment_strokes(
        [TEN_STROKES] * 400 + [SEGMENT] * 50, rng, rotation=0, shear=0, aspect=0, drop_stroke=0.3
    )
    kept = np.array([len(o) for o in out[:400]])
    assert kept.min() >= 1 and kept.max() <= 10
    # one random stroke is always kept, each of the other nine with probability 0.7
    assert abs(kept.mean() - (1 + 9 * 0.7)) < 0.15  # standard error 0.07
    assert all(len(o) == 1 and len(o[0]) == 2 for o in out[400:])  # one stroke: kept whole


def test_same_generator_state_same_drawings_and_bad_arguments() -> None:
    a = qd.augment_strokes([SQUARE, SEGMENT], np.random.default_rng(6))
    b = qd.augment_strokes([SQUARE, SEGMENT], np.random.default_rng(6))
    c = qd.augment_strokes([SQUARE, SEGMENT], np.random.default_rng(7))
    np.testing.assert_array_equal(a[0][0], b[0][0])
    assert not np.allclose(a[0][0], c[0][0])
    with pytest.raises(ValueError, match="drop_stroke"):
        qd.augment_strokes([SQUARE], np.random.default_rng(0), drop_stroke=1.0)
    assert qd.augment_strokes([[], SEGMENT], np.random.default_rng(0))[0] == []


def test_warp_bends_a_straight_line_smoothly_and_zero_warp_does_not() -> None:
    line = [np.stack([np.linspace(0, 255, 64), np.full(64, 100.0)], axis=1).astype(np.float32)]
    flat = dict(rotation=0, shear=0, aspect=0, drop_stroke=0)
    (straight,) = qd.augment_strokes([line], np.random.default_rng(8), **flat, warp=0.0)[0]
    assert np.ptp(straight[:, 1]) < 1e-3  # no warp: still a horizontal line
    bent = [d[0] for d in qd.augment_strokes([line] * 50, np.random.default_rng(8), **flat, warp=0.05)]
    heights = np.array([np.ptp(b[:, 1]) for b in bent])
    assert heights.max() > 5 and np.median(heights) > 1  # the line bends ...
    # ... smoothly (neighbours 4 px apart move alike) and at most 2 waves x 0.05 x 255 each way
    # (peak to peak 51, times up to 1.25 when the warped line is scaled back to 255 wide)
    steps = np.array([np.abs(np.diff(b[:, 1])).max() for b in bent])
    assert steps.max() < 8 and heights.max() <= 2 * 2 * 0.05 * 255 * 1.25
    with pytest.raises(ValueError, match="warp"):
        qd.augment_strokes([line], np.random.default_rng(0), warp=-0.1)
