"""Unit tests for utils.training, the worker kit (notebooks 04, 05 and 07); its doodle arrays: tests/test_quickdraw_arrays.py."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from utils import training


def test_max_weight_difference_and_shapes() -> None:
    a = [np.zeros((2, 3)), np.ones(4)]
    b = [np.zeros((2, 3)), np.ones(4) + 0.25]
    assert training.max_weight_difference(a, a) == 0.0
    assert training.max_weight_difference(a, b) == pytest.approx(0.25)
    assert training.max_weight_difference([], []) == 0.0
    with pytest.raises(ValueError, match="numbers of arrays"):
        training.max_weight_difference(a, a[:1])
    with pytest.raises(ValueError, match="shapes"):
        training.max_weight_difference([np.zeros(2)], [np.zeros(3)])


def test_weights_digest_detects_any_change() -> None:
    w = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(2, np.float32)]
    same = [x.copy() for x in w]
    assert training.weights_digest(w) == training.weights_digest(same)
    changed = [x.copy() for x in w]
    changed[1][0] = np.nextafter(np.float32(1), np.float32(2))
    assert training.weights_digest(w) != training.weights_digest(changed)
    # same bytes, other shape: a different digest
    assert training.weights_digest([w[0].reshape(3, 2)]) != training.weights_digest([w[0]])


def test_pause_after_a_line_that_starts_with_the_pause_line(monkeypatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(training.time, "sleep", slept.append)
    pause = ["worker:1 step 7 ", "2.5"]
    training.pause_after("worker:1 step 6 t=1.0", pause)
    training.pause_after("worker:1 step 70 t=1.0", pause)
    training.pause_after("worker:1 step 7 t=1.0", pause)
    training.pause_after("worker:1 step 7 t=1.0", None)
    assert slept == [2.5]


def test_weights_digest_needs_arrays() -> None:
    with pytest.raises(ValueError, match="no arrays"):
        training.weights_digest([])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
