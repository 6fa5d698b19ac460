"""Unit tests for utils.training, the worker kit (notebooks 04, 05 and 07)."""

from __future__ import annotations

import shutil
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


def test_doodle_arrays_renders_caches_and_limits(tmp_path) -> None:
    import quickdraw as qd

    data = qd.generate_builtin(tmp_path / "doodles", per_class=6, classes=qd.BUILTIN_CLASSES[:3], seed=1)
    cache = tmp_path / "cache"
    first = training.doodle_arrays(data, "all", 16, cache_dir=cache)
    assert first.x.shape == (18, 16, 16, 1) and first.x.dtype == np.float32
    assert first.y.dtype == np.int32 and set(first.y) == {0, 1, 2}
    assert 0.0 <= first.x.min() and first.x.max() <= 1.0 and first.x.max() > 0.5
    assert first.class_names == list(qd.BUILTIN_CLASSES[:3]) and first.num_classes == 3
    assert len(list(cache.glob("*.npz"))) == 1
    again = training.doodle_arrays(data, "all", 16, cache_dir=cache, limit=5)  # from the cache
    assert len(again) == 5 and np.array_equal(again.x, first.x[:5])
    with pytest.raises(ValueError, match="split"):
        training.doodle_arrays(data, "test", 16, cache_dir=cache)
    with pytest.raises(FileNotFoundError):
        training.doodle_arrays(tmp_path / "missing", cache_dir=None)


def test_doodle_arrays_cache_follows_the_data(tmp_path) -> None:
    """Regenerated data (other classes, as after a course update) is rendered again, not read
    from the old cache, and the old cache file is removed."""
    import quickdraw as qd

    cache = tmp_path / "cache"
    data = qd.generate_builtin(tmp_path / "doodles", per_class=4, classes=qd.BUILTIN_CLASSES[:2], seed=1)
    old = training.doodle_arrays(data, "all", 16, cache_dir=cache)
    assert old.num_classes == 2
    shutil.rmtree(data)
    data = qd.generate_builtin(tmp_path / "doodles", per_class=4, classes=qd.BUILTIN_CLASSES[:5], seed=1)
    new = training.doodle_arrays(data, "all", 16, cache_dir=cache)
    assert new.num_classes == 5 and set(new.y) == set(range(5)), new.class_names
    assert len(list(cache.glob("*.npz"))) == 1  # the old data's arrays are gone
    # the count caches the data layer writes beside the data (dot files) do not change it
    before = training.data_fingerprint(data)
    (data / ".counts.json").write_text("{}")
    assert training.data_fingerprint(data) == before


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
