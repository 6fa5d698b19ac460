"""Check quickdraw against real Quick, Draw! files (not part of the tests).

Reads a folder laid out like ``quickdraw-sample`` (course authors have it at
``/work/shared/quickdraw-sample``; see its SOURCES.md): Google ``simplified`` ndjson
(first 25 drawings of 344 categories), ``raw`` ndjson (9 categories) and
``numpy_bitmap`` ``.npy`` files (first 3000 bitmaps of 6 categories). Prints what the
loaders read, how the raw normalisation compares with Google's simplified version of the
same drawings, and how our 28x28 rendering compares with Google's own bitmaps of the
same drawings (the first N rows of a ``numpy_bitmap`` file are the first N drawings of
the ``simplified`` file). ``--figure`` saves a side-by-side picture.

    python scripts/check_quickdraw_real.py /work/shared/quickdraw-sample --figure /tmp/fid.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from quickdraw import (
    ReadReport,
    find_class_files,
    read_ndjson,
    read_npy_bitmaps,
    render,
    resolve_labels,
)


def _centroid(img: np.ndarray) -> np.ndarray:
    yy, xx = np.mgrid[: img.shape[0], : img.shape[1]]
    return np.array([(img * yy).sum(), (img * xx).sum()]) / img.sum()


def _unit_rows(a: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=1, keepdims=True)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def compare(ours: np.ndarray, google: np.ndarray) -> dict[str, float]:
    """Per-drawing agreement between two stacks of 28x28 images (float, 0-255)."""
    corr = [np.corrcoef(a.ravel(), b.ravel())[0, 1] for a, b in zip(ours, google, strict=True)]
    shift = [np.abs(_centroid(a) - _centroid(b)).max() for a, b in zip(ours, google, strict=True)]
    return {
        "n": len(ours),
        "corr_mean": float(np.mean(corr)),
        "corr_min": float(np.min(corr)),
        "mean_abs_diff": float(np.abs(ours - google).mean()),
        "ink_ratio": float(ours.sum() / google.sum()),
        "centroid_shift_max_px": float(np.max(shift)),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", type=Path)
    p.add_argument("--figure", type=Path, default=None)
    args = p.parse_args(argv)
    simp_dir = args.root / "lamnguyen5464__Sketch-dataset" / "data"
    raw_dir = args.root / "borismus__exupery" / "public" / "sketches"
    npy_dir = args.root / "sukumr__Doodle-Classifier" / "data"

    # 1. simplified ndjson: every file, strict
    files = find_class_files(simp_dir)
    labels = resolve_labels(simp_dir)
    report = ReadReport()
    simp = {
        name: list(read_ndjson(f, labels=labels, strict=True, report=report)) for name, f in files.items()
    }
    n = sum(len(v) for v in simp.values())
    assert all(d.word == name for name, ds in simp.items() for d in ds)
    pts = np.concatenate([np.concatenate(d.strokes) for ds in simp.values() for d in ds])
    print(
        f"simplified: {len(files)} files, {n} drawings, 0 bad rows ({report.skipped}); coordinates {pts.min():g}..{pts.max():g}"
    )
    print(
        f"  label map: {len(labels)} classes; 'The_Eiffel_Tower' -> {labels.index('The_Eiffel_Tower')} = 'The Eiffel Tower' -> {labels.index('The Eiffel Tower')}"
    )

    # 2. raw ndjson: normalised vs Google's simplified version of the same key_id
    by_key = {d.key_id: d for ds in simp.values() for d in ds}
    raw_report = ReadReport()
    raw = [
        d for f in find_class_files(raw_dir).values() for d in read_ndjson(f, strict=True, report=raw_report)
    ]
    rpts = np.concatenate([np.concatenate(d.strokes) for d in raw])
    print(
        f"raw: {len(raw)} drawings, all with times: {all(d.has_time for d in raw)}; normalised x,y {rpts[:, :2].min():g}..{rpts[:, :2].max():g}, t from {rpts[:, 2].min():g} ms"
    )
    pairs = [(d, by_key[d.key_id]) for d in raw if d.key_id in by_key]
    if pairs:
        ext_raw = np.array([np.ptp(np.concatenate(r.strokes)[:, :2], axis=0) for r, _ in pairs])
        ext_simp = np.array([np.ptp(np.concatenate(s.strokes), axis=0) for _, s in pairs])
        img_r = np.stack([render(r.strokes, 28)[..., 0] for r, _ in pairs]).astype(float)
        img_s = np.stack([render(s.strokes, 28)[..., 0] for _, s in pairs]).astype(float)
        c = compare(img_r, img_s)
        print(
            f"  {len(pairs)} raw drawings also in the simplified files: bounding boxes differ by at most {np.abs(ext_raw - ext_simp).max():.1f} units of 255; 28x28 renders correlate {c['corr_mean']:.3f} (min {c['corr_min']:.3f})"
        )

    # 3. numpy bitmaps, and our 28x28 rendering of the same drawings
    rows = []
    figure_rows = []
    for f in sorted(npy_dir.glob("*.npy")):
        bitmaps = read_npy_bitmaps(f)
        drawings = simp[f.stem]
        ours = np.stack([render(d.strokes, 28)[..., 0] for d in drawings]).astype(float)
        google = bitmaps[: len(drawings)].astype(float)
        # the same drawings? each of ours is closest to the bitmap in the same row
        a = _unit_rows(ours.reshape(len(ours), -1))
        b = _unit_rows(bitmaps.reshape(len(bitmaps), -1).astype(float))
        best = (a @ b.T).argmax(1)
        same = bool((best == np.arange(len(ours))).all())
        rows.append((f.stem, bitmaps.shape, same, ours, google))
        figure_rows.append(
            np.concatenate(
                [np.concatenate([g, o], axis=0) for g, o in zip(google[:8], ours[:8], strict=True)], axis=1
            )
        )
    print(
        f"numpy_bitmap: {len(rows)} files, shapes {sorted({r[1] for r in rows})} uint8; row i is the simplified file's drawing i: {all(r[2] for r in rows)}"
    )
    ours = np.concatenate([r[3] for r in rows])
    google = np.concatenate([r[4] for r in rows])
    c = compare(ours, google)
    stats = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in c.items())
    print(f"  28x28 render (defaults) vs Google's bitmap of the same drawing: {stats}")
    for name, kw in (
        ("no anti-aliasing", {"antialias": False}),
        ("kaggle layout (no centring/padding)", {"layout": "kaggle"}),
    ):
        alt = np.concatenate(
            [np.stack([render(d.strokes, 28, **kw)[..., 0] for d in simp[r[0]]]) for r in rows]
        ).astype(float)
        c = compare(alt, google)
        print(
            f"  for contrast, {name}: corr_mean {c['corr_mean']:.3f}, mean_abs_diff {c['mean_abs_diff']:.1f}, ink_ratio {c['ink_ratio']:.2f}"
        )
    if args.figure:
        import cv2

        grid = 255 - np.concatenate(figure_rows, axis=0).astype(np.uint8)
        grid = cv2.resize(grid, None, fx=4, fy=4, interpolation=cv2.INTER_NEAREST)
        cv2.imwrite(str(args.figure), grid)
        print(f"figure: {args.figure} (per class: top row Google's bitmaps, bottom row ours)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
