"""Write the small Quick, Draw! fixture files the tests read (tests/fixtures/quickdraw/).

One directory per published layout, each with good rows and deliberately broken ones:

- ``kaggle/train_simplified/<word>.csv`` and ``kaggle/test_simplified.csv`` (Kaggle)
- ``google/simplified/<word>.ndjson`` and ``google/raw/<word>.ndjson`` (Google)
- ``google/numpy_bitmap/<word>.npy`` (Google) and ``bad_npy/*.npy`` (wrong shape, dtype,
  pickled objects, truncated)

The drawings come from the built-in generator, so the files are deterministic. Run
``python tools/make_quickdraw_fixtures.py`` to rebuild them; ``EXPECTED`` below is what
the tests check against.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from quickdraw.formats import Drawing, write_kaggle_csv, write_ndjson
from quickdraw.render import render
from quickdraw.synthetic import generate_drawings

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "quickdraw"
GOOD = {"circle": 6, "smiley face": 5, "square": 5, "triangle": 4}

# Broken rows appended to kaggle/train_simplified/triangle.csv: (reason the reader gives, row)
KAGGLE_BAD = [
    ("malformed JSON", 'US,"[[[1, 2, 3], [4, 5",5000000000000001,True,2017-03-01 00:00:00.00000,triangle'),
    ("empty drawing", "US,[],5000000000000002,True,2017-03-01 00:00:00.00000,triangle"),
    (
        "different lengths",
        'US,"[[[1, 2, 3], [4, 5]]]",5000000000000003,True,2017-03-01 00:00:00.00000,triangle',
    ),
    (
        "out of range",
        'US,"[[[1, 2, 300], [4, 5, 6]]]",5000000000000004,True,2017-03-01 00:00:00.00000,triangle',
    ),
    ("unknown class", 'US,"[[[1, 2, 3], [4, 5, 6]]]",5000000000000005,True,2017-03-01 00:00:00.00000,zebra'),
    ("bad key_id", 'US,"[[[1, 2, 3], [4, 5, 6]]]",not-a-number,True,2017-03-01 00:00:00.00000,triangle'),
    ("truncated", 'US,"[[[1, 2, 3], [4, 5, 6]]]",5000000000000007,True'),
]
NDJSON_BAD = [
    ("malformed JSON", '{"word": "triangle", "key_id": "6000000000000001", "drawing": [[[1, 2], [3, 4]]'),
    ("empty stroke", '{"word": "triangle", "key_id": "6000000000000002", "drawing": [[[], []]]}'),
    ("out of range", '{"word": "triangle", "key_id": "6000000000000003", "drawing": [[[-5, 2], [3, 4]]]}'),
]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _raw(d: Drawing, rng: np.random.Generator) -> Drawing:
    """Turn a simplified drawing into raw-like screen coordinates with times."""
    scale, dx, dy = rng.uniform(1.5, 3.0), rng.uniform(-40, 300), rng.uniform(-40, 200)
    t, strokes = 0.0, []
    for s in d.strokes:
        n = len(s)
        times = t + np.cumsum(rng.uniform(8, 25, size=n)) - 8
        t = float(times[-1]) + rng.uniform(150, 400)
        xs = s[:, 0] * scale + dx + rng.normal(0, 0.3, n)
        ys = s[:, 1] * scale * rng.uniform(0.9, 1.1) + dy + rng.normal(0, 0.3, n)
        strokes.append(np.stack([xs, ys, times], axis=1).astype(np.float32))
    return Drawing(d.word, d.key_id, strokes, d.countrycode, d.recognized, d.timestamp)


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    rng = np.random.default_rng(5)
    drawings = {w: generate_drawings(w, n, seed=11) for w, n in GOOD.items()}

    # Kaggle layout
    kag = OUT / "kaggle"
    for w, ds in drawings.items():
        write_kaggle_csv(kag / "train_simplified" / f"{w}.csv", ds)
    with open(kag / "train_simplified" / "triangle.csv", "a", encoding="utf-8") as f:
        f.write("\n".join(row for _, row in KAGGLE_BAD))  # the truncated row has no newline
    test = [d for w in GOOD for d in generate_drawings(w, 2, seed=11, stream=1, key_offset=1)]
    write_kaggle_csv(kag / "test_simplified.csv", test, test=True)

    # Google layout: simplified, raw, numpy_bitmap
    goo = OUT / "google"
    for w, ds in drawings.items():
        write_ndjson(goo / "simplified" / f"{w}.ndjson", ds)
    with open(goo / "simplified" / "triangle.ndjson", "a", encoding="utf-8") as f:
        f.write("\n".join(row for _, row in NDJSON_BAD[1:]) + "\n")
        f.write(NDJSON_BAD[0][1])  # a truncated last line (no newline)
    for w in ("circle", "square"):
        write_ndjson(goo / "raw" / f"{w}.ndjson", [_raw(d, rng) for d in drawings[w]])
    with open(goo / "raw" / "square.ndjson", "a", encoding="utf-8") as f:
        bad = {
            "word": "square",
            "key_id": "7000000000000001",
            "recognized": True,
            "drawing": [[[10.5, 20.5, 30.5], [1.0, 2.0, 3.0], [0, 16]]],
        }  # t list too short
        f.write(json.dumps(bad) + "\n")
    for w in ("circle", "square"):
        bitmaps = np.stack([render(d.strokes, 28)[..., 0].reshape(784) for d in drawings[w]])
        (goo / "numpy_bitmap").mkdir(parents=True, exist_ok=True)
        np.save(goo / "numpy_bitmap" / f"{w}.npy", bitmaps.astype(np.uint8))

    # Broken .npy files
    bad = OUT / "bad_npy"
    bad.mkdir(parents=True)
    np.save(bad / "wrong_shape.npy", np.zeros((3, 28, 27), np.uint8))
    np.save(bad / "wrong_dtype.npy", np.zeros((3, 784), np.float32))
    np.save(bad / "object.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    good = (goo / "numpy_bitmap" / "circle.npy").read_bytes()
    (bad / "truncated.npy").write_bytes(good[: len(good) // 2])
    np.save(bad / "reshaped_1x784.npy", np.zeros((2, 1, 784), np.uint8) + 7)  # a common re-save

    body = __doc__.split("\n\n", 1)[1].split("The drawings")[0].strip()
    note = "Made by `tools/make_quickdraw_fixtures.py` from the built-in generator; do not edit by hand."
    _write(OUT / "README.md", f"# Quick, Draw! test fixtures\n\n{body}\n\n{note}\n")
    print(f"wrote fixtures under {OUT}")


if __name__ == "__main__":
    main()
