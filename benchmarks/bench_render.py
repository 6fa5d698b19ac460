"""Render speed: quickdraw.render vs the "Greyscale MobileNet" Kaggle kernel's approach.

The reference (public Kaggle kernel "Greyscale MobileNet", Quick, Draw! competition 2018)
draws every segment with ``cv2.line`` on a 256x256 canvas, width 6, grey level by stroke
order, then resizes to 64x64, one drawing at a time. Ours (``quickdraw/render.py``)
draws each stroke as a 1-pixel polyline on a canvas 2x the output, widens the lines with
``cv2.dilate`` and area-averages down (anti-aliasing, Google's ``numpy_bitmap`` geometry);
for a batch it places the drawings as tiles of one canvas, so that one polylines call per
grey level, one dilation and one resize serve many drawings (each tile is bit-identical to
the one-drawing result; ``tests/test_quickdraw_render.py``).

Both run on the same drawings, in one process, on one core (``cv2.setNumThreads(1)``), in
alternating repeats; the script prints drawings/second by CPU time (the per-core figure;
wall-clock rates are printed too but suffer from other processes on a shared machine) and
the ratios, on two sets side by side: the built-in doodles and the real drawings shipped
in ``data/real`` (or any Google/Kaggle folder with ``--real``).

What is timed, per set:
  render only      each renderer from its own parsed form (the kernel: decoded JSON lists;
                   ours: ``parse_points`` arrays), batch of ``--batch`` drawings for ours
  validate+render  ours from the decoded lists: validation into arrays, then render
  one at a time    ours, ``render_points`` per drawing (no batching)
  JSON -> image    from the CSV column's JSON text: ``json.loads`` + the kernel's drawing,
                   against ``parse_points_batch`` (validation and conversion of a batch of
                   texts in NumPy, no ``json.loads``) + our batch render

    python benchmarks/bench_render.py
    python benchmarks/bench_render.py --real /work/shared/quickdraw-sample/lamnguyen5464__Sketch-dataset/data
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

from quickdraw import ensure_builtin_data, find_class_files, real_test_dir
from quickdraw.formats import iter_file, parse_points, parse_points_batch, strokes_to_json
from quickdraw.render import (
    reference_kernel_render,
    render,
    render_points,
    render_points_batch,
)


def load_json_texts(source: Path, limit: int) -> list[str]:
    """JSON texts of up to ``limit`` drawings, round-robin over the class files."""
    files = list(find_class_files(source).values())
    per = max(1, -(-limit // len(files)))
    texts: list[str] = []
    for f in files:
        texts.extend(strokes_to_json(d.strokes) for d in iter_file(f, limit=per))
    return texts[:limit]


def cases_for(texts: list[str], size: int, batch: int) -> dict[str, Callable[[], None]]:
    """The timed functions for one set of drawings."""
    lists = [json.loads(t) for t in texts]
    parsed = [parse_points(d) for d in lists]

    def batched(items: list[tuple[np.ndarray, list[int]]]) -> None:
        for i in range(0, len(items), batch):
            chunk = items[i : i + batch]
            render_points_batch([p for p, _ in chunk], [e for _, e in chunk], size, encoding="order")

    return {
        "reference: render": lambda: [reference_kernel_render(d, size) for d in lists],
        "ours: render only": lambda: batched(parsed),
        "ours: validate + render": lambda: batched([parse_points(d) for d in lists]),
        "ours: one at a time": lambda: [render_points(p, e, size, encoding="order") for p, e in parsed],
        "reference: JSON -> image": lambda: [reference_kernel_render(json.loads(t), size) for t in texts],
        "ours: JSON -> image": lambda: [
            batched(parse_points_batch(texts[i : i + batch])) for i in range(0, len(texts), batch)
        ],  # fmt: skip
    }


def measure(cases: dict[str, Callable[[], None]], n: int, repeats: int) -> dict[str, tuple[float, float]]:
    """Median drawings/s (wall, CPU) of each case, repeats alternating between the cases."""
    wall: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    for fn in cases.values():  # warm-up
        fn()
    for _ in range(repeats):  # alternate, so that load from other processes hits all cases
        for name, fn in cases.items():
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - w0)
            cpu[name].append(time.process_time() - c0)
    return {k: (n / statistics.median(wall[k]), n / statistics.median(cpu[k])) for k in cases}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--builtin", default="smoke", help="built-in variant (generated on first use)")
    p.add_argument("--real", type=Path, default=None, help="real drawings (default: data/real/simplified)")
    p.add_argument("--n", type=int, default=2000, help="drawings per set")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--batch", type=int, default=128, help="drawings per render call (ours)")
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args(argv)
    cv2.setNumThreads(1)
    sets = {
        "built-in doodles": ensure_builtin_data(args.builtin),
        "real drawings": args.real or real_test_dir(),
    }
    pairs = (
        ("render only", "reference: render", "ours: render only"),
        ("validate + render", "reference: render", "ours: validate + render"),
        ("one at a time", "reference: render", "ours: one at a time"),
        ("JSON text -> image", "reference: JSON -> image", "ours: JSON -> image"),
    )
    table = {}
    for label, source in sets.items():
        texts = load_json_texts(Path(source), args.n)
        points = sum(len(s[0]) for t in texts for s in json.loads(t))
        rates = measure(cases_for(texts, args.size, args.batch), len(texts), args.repeats)
        print(f"\n{label}: {len(texts)} drawings from {source} ({points / len(texts):.1f} points each), "
              f"{args.size}x{args.size}, one core")  # fmt: skip
        print(f"  {'':28s} {'drawings/s (CPU)':>17s} {'drawings/s (wall)':>18s}")
        for name, (rw, rc) in rates.items():
            print(f"  {name:28s} {rc:17,.0f} {rw:18,.0f}")
        table[label] = {what: rates[ours][1] / rates[ref][1] for what, ref, ours in pairs}
        table[label]["wall, render only"] = rates["ours: render only"][0] / rates["reference: render"][0]
    print("\nspeed-up of quickdraw.render over the reference (CPU time per core):")
    print(f"  {'':22s}" + "".join(f"{k:>20s}" for k in sets))
    for what in next(iter(table.values())):
        print(f"  {what:22s}" + "".join(f"{table[k][what]:19.2f}x" for k in sets))

    # the two renderers draw the same thing: compare the pictures (after matching layouts)
    lists = [json.loads(t) for t in load_json_texts(Path(sets["real drawings"]), 200)]
    a = np.stack([reference_kernel_render(d, args.size) for d in lists]).astype(np.float32)
    b = np.stack(
        [
            render(
                [np.asarray(s[:2], np.float32).T for s in d],
                args.size,
                encoding="order",
                layout="kaggle",
                line_width=6 * args.size / 256,
            )[..., 0]
            for d in lists
        ]
    ).astype(np.float32)
    corr = np.corrcoef(a.ravel(), b.ravel())[0, 1]
    print(
        f"pixel correlation with the reference when drawn in its layout (layout='kaggle', width 6/256): {corr:.3f}"
    )
    print(
        "fidelity to Google's own 28x28 bitmaps: scripts/check_quickdraw_real.py (quickdraw/README.md)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
