"""quickdraw.synthetic: the built-in doodle set is seeded, valid and cached."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from quickdraw import synthetic
from quickdraw.formats import read_kaggle_csv
from quickdraw.labels import LabelMap, google_categories
from quickdraw.synthetic import (
    CLASSES,
    doodle,
    ensure_builtin_data,
    generate_builtin,
    generate_drawings,
    load_arrays,
    rdp,
)


def test_classes_are_google_names() -> None:
    assert len(CLASSES) >= 10 and set(CLASSES) <= set(google_categories())


def test_deterministic_and_valid() -> None:
    for word in CLASSES:
        a, b = generate_drawings(word, 4, seed=3), generate_drawings(word, 4, seed=3)
        assert [d.key_id for d in a] == [d.key_id for d in b]
        for x, y in zip(a, b, strict=True):
            assert all(np.array_equal(s, t) for s, t in zip(x.strokes, y.strokes, strict=True))
            pts = np.concatenate(x.strokes)
            # Google's frame: top-left at 0, longer side 255; RDP (epsilon 2) may drop an
            # extreme point by up to 2 units, as in Google's own files
            assert pts.min(axis=0).max() <= 2 and 245 <= pts.max() <= 255
            assert np.array_equal(pts, np.rint(pts))
        c = generate_drawings(word, 4, seed=4)
        assert any(
            not np.array_equal(np.concatenate(x.strokes), np.concatenate(y.strokes))
            for x, y in zip(a, c, strict=True)
        )


def test_variation() -> None:
    rng = np.random.default_rng(0)
    houses = [doodle("house", rng) for _ in range(30)]
    assert len({len(h) for h in houses}) >= 2  # door/window/extra stroke vary
    assert len({tuple(h[0][0]) for h in houses}) > 20  # start points differ


def test_rdp() -> None:
    t = np.linspace(0, 1, 50)
    line = np.stack([t * 100, t * 50], axis=1)
    assert len(rdp(line, 2.0)) == 2
    corner = np.concatenate([line, line[-1] + np.stack([t * 0, t * 100], axis=1)])
    assert len(rdp(corner, 2.0)) == 3


def test_generate_builtin_files(tmp_path) -> None:
    root = generate_builtin(tmp_path / "b", per_class=3, test_per_class=1, classes=CLASSES[:4])
    files = sorted(p.name for p in (root / "train_simplified").iterdir())
    assert files == sorted(f"{w}.csv" for w in CLASSES[:4])
    rows = list(read_kaggle_csv(root / "train_simplified" / f"{CLASSES[0]}.csv", strict=True))
    assert len(rows) == 3 and rows[0].word == CLASSES[0]
    test = list(read_kaggle_csv(root / "test_simplified.csv", strict=True))
    solution = (root / "test_solution.csv").read_text().splitlines()
    assert len(test) == 4 and solution[0] == "key_id,word" and len(solution) == 5
    train_keys = {
        d.key_id for w in CLASSES[:4] for d in read_kaggle_csv(root / "train_simplified" / f"{w}.csv")
    }
    assert not train_keys & {d.key_id for d in test}
    assert LabelMap.load(root) == LabelMap(CLASSES[:4])
    assert json.loads((root / "manifest.json").read_text())["counts"][CLASSES[0]] == 3


def test_ensure_builtin_data_caches(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(synthetic.VARIANTS, "tiny", {"per_class": 2, "test_per_class": 0})
    path = ensure_builtin_data("tiny", data_dir=tmp_path)
    assert path == tmp_path / "builtin" / "tiny" and (path / "manifest.json").is_file()
    stamp = (path / "manifest.json").stat().st_mtime_ns
    assert ensure_builtin_data("tiny", data_dir=tmp_path) == path
    assert (path / "manifest.json").stat().st_mtime_ns == stamp  # reused, not rewritten
    monkeypatch.setitem(synthetic.VARIANTS, "tiny", {"per_class": 3, "test_per_class": 0})
    ensure_builtin_data("tiny", data_dir=tmp_path)  # sizes changed: regenerated
    assert len(list(read_kaggle_csv(path / "train_simplified" / "circle.csv"))) == 3
    assert not [p for p in (tmp_path / "builtin").iterdir() if p.name.startswith(".")]  # no temp dirs left
    with pytest.raises(ValueError, match="unknown built-in variant"):
        ensure_builtin_data("huge", data_dir=tmp_path)


def test_ensure_builtin_data_removes_what_killed_runs_left(tmp_path, monkeypatch) -> None:
    import subprocess
    import sys

    monkeypatch.setitem(synthetic.VARIANTS, "tiny", {"per_class": 1, "test_per_class": 0})
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    live = str(os.getppid())
    for name in (f".tiny.tmp-{dead}", f".tiny.old-{dead}", f".tiny.tmp-{live}", f".full.tmp-{dead}"):
        (tmp_path / "builtin" / name).mkdir(parents=True)
    ensure_builtin_data("tiny", data_dir=tmp_path)
    left = sorted(p.name for p in (tmp_path / "builtin").iterdir())
    assert left == sorted([f".tiny.tmp-{live}", f".full.tmp-{dead}", "tiny"])  # only this variant's dead ones


def test_files_match_in_memory_generation(tmp_path) -> None:
    root = generate_builtin(tmp_path, per_class=4, classes=["star"])
    from_file = list(read_kaggle_csv(root / "train_simplified" / "star.csv"))
    in_memory = generate_drawings("star", 2)
    assert [d.key_id for d in from_file[:2]] == [d.key_id for d in in_memory]


def test_load_arrays() -> None:
    x, y, names = load_arrays(30, image_size=28, seed=1)
    assert x.shape == (30, 28, 28, 1) and x.dtype == np.float32 and 0 <= x.min() and x.max() <= 1
    assert y.dtype == np.int64 and names == list(CLASSES) and set(y.tolist()) == set(range(len(CLASSES)))
    x2, y2, _ = load_arrays(30, image_size=28, seed=1)
    assert np.array_equal(x, x2) and np.array_equal(y, y2)
    _, y3, _ = load_arrays(30, image_size=28, seed=2)
    assert sorted(y3.tolist()) == sorted(y.tolist()) and not np.array_equal(y3, y)
    with pytest.raises(ValueError):
        load_arrays(0)


def test_proportions_match_the_real_drawings() -> None:
    """Per class, the generator's median aspect ratio, stroke and point counts are close to
    those of Google's real drawings of the class (data/real): measured on both sides."""
    from quickdraw import read_real_test

    def stats(strokes: list[np.ndarray]) -> tuple[float, int, int]:
        w, h = np.ptp(np.concatenate(strokes), axis=0)
        return float(np.log(max(w, 1) / max(h, 1))), len(strokes), sum(len(s) for s in strokes)

    real = read_real_test()
    rng = np.random.default_rng(0)
    for word in CLASSES:
        r = np.median([stats(d.strokes) for d in real if d.word == word], axis=0)
        s = np.median([stats(doodle(word, rng)) for _ in range(150)], axis=0)
        assert abs(s[0] - r[0]) < np.log(1.5), (word, "aspect", np.exp(s[0]), np.exp(r[0]))
        assert abs(s[1] - r[1]) <= 2 and abs(s[2] - r[2]) <= 12, (word, "strokes, points", s[1:], r[1:])
