"""A generated data set in Kaggle's layout at Kaggle's scale: the rehearsal of the real-data path.

:func:`write_kaggle_scale` writes ``rows`` rows over the built-in classes as Kaggle's
``train_simplified/<word>.csv`` (and optionally the test files): a pool of doodles per class,
each written many times with its own key_id, so a row costs what a real row costs to read.
Class sizes are uneven on purpose (the largest has three times the rows of the smallest, as in
Kaggle's files). Used by ``make bench`` (``benchmarks/bench_pipeline_1m.py``) and
``tests/test_train_quickdraw.py``.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from quickdraw.formats import strokes_to_json
from quickdraw.labels import LabelMap
from quickdraw.synthetic import CLASSES, GENERATOR_VERSION, generate_drawings, write_test_set


def class_sizes(rows: int, num_classes: int) -> list[int]:
    """``rows`` split over the classes in sizes rising linearly from 1 to 3 parts (sum exact)."""
    if rows < num_classes:
        raise ValueError(f"{rows} rows cannot give each of {num_classes} classes one")
    weights = np.linspace(1.0, 3.0, num_classes)
    sizes = np.maximum(1, np.floor(rows * weights / weights.sum()).astype(int))
    sizes[-1] += rows - int(sizes.sum())  # the remainder to the largest class
    return [int(n) for n in sizes]


def write_kaggle_scale(root: str | Path, rows: int, *, classes: Sequence[str] = CLASSES, pool: int = 200,
                       test_per_class: int = 0, seed: int = 7) -> Path:
    """Write ``rows`` training rows and ``test_per_class`` test drawings a class in Kaggle's
    layout under ``root`` (once: reused while ``manifest.json`` matches); return ``root``."""
    root = Path(root)
    want = {"rows": rows, "pool": pool, "test_per_class": test_per_class, "seed": seed,
            "generator_version": GENERATOR_VERSION, "classes": list(classes)}
    manifest = root / "manifest.json"
    if manifest.is_file() and json.loads(manifest.read_text(encoding="utf-8")) == want:
        return root
    shutil.rmtree(root, ignore_errors=True)
    (root / "train_simplified").mkdir(parents=True)
    for c, (word, n) in enumerate(zip(classes, class_sizes(rows, len(classes)), strict=True)):
        texts = [strokes_to_json(d.strokes) for d in generate_drawings(word, min(pool, n), seed=seed)]
        with open(root / "train_simplified" / f"{word}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(("countrycode", "drawing", "key_id", "recognized", "timestamp", "word"))
            base = 4_600_000_000_000_000 + c * 100_000_000  # unique key_ids, up to 10^8 rows a class
            for j in range(n):
                w.writerow(("US", texts[j % len(texts)], base + j, "True", "2017-03-01 00:00:00.00000", word))
    if test_per_class:
        write_test_set(root, classes, test_per_class, seed)
    LabelMap(classes).save(root / "labels.json")
    manifest.write_text(json.dumps(want) + "\n", encoding="utf-8")  # last: its presence means complete
    return root

