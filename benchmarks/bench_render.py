"""Render speed: utils.quickdraw.render vs the "Greyscale MobileNet" Kaggle kernel's approach.

The reference (public Kaggle kernel "Greyscale MobileNet", Quick, Draw! competition 2018)
draws every segment with ``cv2.line`` on a 256x256 canvas, width 6, grey level by stroke
order, then resizes to 64x64. Ours validates the drawing into one point array
(``parse_points``), draws each stroke with one 1-pixel ``cv2.polylines`` call on a canvas
2x the output, widens the lines with ``cv2.dilate`` and area-averages down
(``render_points``; see ``utils/quickdraw/render.py``). Both run on the same drawings, in the same process, on one
core (``cv2.setNumThreads(1)``), in alternating repeats, and the script prints
drawings/second for each and their ratio, by wall-clock time and by CPU time (the CPU
time is what "per core" means when other processes share the machine).

Measurements: "render" starts from the decoded JSON lists (what the kernel's ``draw_cv2``
gets): ours first validates them into one array (``parse_points``) and then renders;
"render only" times ``render_points`` on the already parsed arrays (each renderer from
its own parsed form); "parse + render" starts from the JSON text of the CSV column.

    python benchmarks/bench_render.py                    # built-in smoke doodles
    python benchmarks/bench_render.py --data /path/to/simplified   # real drawings
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from utils.quickdraw import ensure_builtin_data, find_class_files, parse_strokes, render  # noqa: E402
from utils.quickdraw.formats import iter_file, parse_points, strokes_to_json  # noqa: E402
from utils.quickdraw.render import reference_kernel_render, render_points  # noqa: E402


def load_json_texts(source: Path, limit: int) -> list[str]:
    """JSON texts of up to ``limit`` drawings, round-robin over the class files."""
    files = list(find_class_files(source).values())
    per = max(1, -(-limit // len(files)))
    texts: list[str] = []
    for f in files:
        texts.extend(strokes_to_json(d.strokes) for d in iter_file(f, limit=per))
    return texts[:limit]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--data", type=Path, default=None, help="a Quick, Draw! directory (default: built-in smoke set)"
    )
    p.add_argument("--n", type=int, default=2000, help="drawings")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args(argv)
    cv2.setNumThreads(1)
    source = args.data or ensure_builtin_data("smoke")
    texts = load_json_texts(source, args.n)
    lists = [json.loads(t) for t in texts]
    n, size = len(texts), args.size
    points = sum(len(s[0]) for d in lists for s in d)

    def ref_render() -> None:
        for d in lists:
            reference_kernel_render(d, size)

    def ours_render() -> None:
        for d in lists:
            render_points(*parse_points(d), size, encoding="order")

    parsed = [parse_points(d) for d in lists]

    def ours_render_only() -> None:
        for pts, ends in parsed:
            render_points(pts, ends, size, encoding="order")

    def ours_render_fast() -> None:
        for pts, ends in parsed:
            render_points(pts, ends, size, encoding="order", antialias=False)

    def ref_parse_render() -> None:
        for t in texts:
            reference_kernel_render(json.loads(t), size)

    def ours_parse_render() -> None:
        for t in texts:
            render_points(*parse_points(t), size, encoding="order")

    cases = {
        "render / reference (cv2.line on 256x256, resize)": ref_render,
        "render / utils.quickdraw (validate + render)": ours_render,
        "render / utils.quickdraw (render only)": ours_render_only,
        "render / utils.quickdraw (render only, antialias=False)": ours_render_fast,
        "parse + render / reference": ref_parse_render,
        "parse + render / utils.quickdraw.render": ours_parse_render,
    }
    wall: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    for fn in cases.values():  # warm-up
        fn()
    for _ in range(args.repeats):  # alternate, so that load from other processes hits both
        for name, fn in cases.items():
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - w0)
            cpu[name].append(time.process_time() - c0)

    print(f"{n} drawings from {source} ({points / n:.1f} points each), {size}x{size} output, one core")
    print(f"{'':58s} {'drawings/s (wall)':>18s} {'drawings/s (CPU)':>17s}")
    rates = {}
    for name in cases:
        rw, rc = n / statistics.median(wall[name]), n / statistics.median(cpu[name])
        rates[name] = (rw, rc)
        print(f"{name:58s} {rw:18,.0f} {rc:17,.0f}")
    names = list(cases)
    pairs = (
        (names[0], names[1], "validate + render from the decoded lists"),
        (names[0], names[2], "render only (each from its own parsed form)"),
        (names[0], names[3], "render only, antialias=False"),
        (names[4], names[5], "JSON text -> image"),
    )
    for ref, ours, label in pairs:
        print(
            f"speed-up of utils.quickdraw.render over the reference, {label}: "
            f"{rates[ours][0] / rates[ref][0]:.2f}x (wall), {rates[ours][1] / rates[ref][1]:.2f}x (CPU)"
        )
    # the two renderers draw the same thing: compare the pictures (after matching layouts)
    a = np.stack([reference_kernel_render(d, size) for d in lists[:200]]).astype(np.float32)
    b = np.stack(
        [
            render(parse_strokes(d), size, encoding="order", layout="kaggle", line_width=6 * size / 256)[
                ..., 0
            ]
            for d in lists[:200]
        ]
    ).astype(np.float32)
    corr = np.corrcoef(a.ravel(), b.ravel())[0, 1]
    print(
        f"pixel correlation with the reference when drawn in its layout (layout='kaggle', width 6/256): {corr:.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
