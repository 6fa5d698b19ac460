"""Unit tests for quickdraw.arrays: a doodle split rendered once, cached (notebooks 04, 05, 08, 11)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from quickdraw import arrays


def test_doodle_arrays_renders_caches_and_limits(tmp_path) -> None:
    import quickdraw as qd

    data = qd.generate_builtin(tmp_path / "doodles", per_class=6, classes=qd.BUILTIN_CLASSES[:3], seed=1)
    cache = tmp_path / "cache"
    first = arrays.doodle_arrays(data, "all", 16, cache_dir=cache)
    assert first.x.shape == (18, 16, 16, 1) and first.x.dtype == np.float32
    assert first.y.dtype == np.int32 and set(first.y) == {0, 1, 2}
    assert 0.0 <= first.x.min() and first.x.max() <= 1.0 and first.x.max() > 0.5
    assert first.class_names == list(qd.BUILTIN_CLASSES[:3]) and first.num_classes == 3
    assert len(list(cache.glob("*.npz"))) == 1
    again = arrays.doodle_arrays(data, "all", 16, cache_dir=cache, limit=5)  # from the cache
    assert len(again) == 5 and np.array_equal(again.x, first.x[:5])
    with pytest.raises(ValueError, match="split"):
        arrays.doodle_arrays(data, "test", 16, cache_dir=cache)
    with pytest.raises(FileNotFoundError):
        arrays.doodle_arrays(tmp_path / "missing", cache_dir=None)


def test_doodle_arrays_cache_follows_the_data(tmp_path) -> None:
    """Regenerated data (other classes, as after a course update) is rendered again, not read
    from the old cache, and the old cache file is removed."""
    import quickdraw as qd

    cache = tmp_path / "cache"
    data = qd.generate_builtin(tmp_path / "doodles", per_class=4, classes=qd.BUILTIN_CLASSES[:2], seed=1)
    old = arrays.doodle_arrays(data, "all", 16, cache_dir=cache)
    assert old.num_classes == 2
    shutil.rmtree(data)
    data = qd.generate_builtin(tmp_path / "doodles", per_class=4, classes=qd.BUILTIN_CLASSES[:5], seed=1)
    new = arrays.doodle_arrays(data, "all", 16, cache_dir=cache)
    assert new.num_classes == 5 and set(new.y) == set(range(5)), new.class_names
    assert len(list(cache.glob("*.npz"))) == 1  # the old data's arrays are gone
    # the count caches the data layer writes beside the data (dot files) do not change it
    before = arrays.data_fingerprint(data)
    (data / ".counts.json").write_text("{}")
    assert arrays.data_fingerprint(data) == before

