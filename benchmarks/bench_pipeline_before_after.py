"""The data pipeline's rate before and after issue 47's simplification, side by side.

The same measurement runs on the ``quickdraw`` package as it is now and as it was at
``BEFORE`` (the last commit before the simplification, taken out with ``git archive``), each
in a fresh process, the two alternating, and the medians are printed with their ratio (issue
47's bar: within about 10 %). What is measured: the shard pipeline (``make_dataset`` on
TFRecord shards written by the same package) on the built-in smoke doodles, 64×64, batch 64,
with float32 and with uint8 images; drawings per second of wall clock and per CPU-second of
the process (the latter moves less when other work shares the cores). The ratio printed is the
median of each round's after/before, the two measured one right after the other.

    python benchmarks/bench_pipeline_before_after.py              # 3 rounds
    python benchmarks/bench_pipeline_before_after.py --rounds 5 --before e870828
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "e870828"  # the tree before make_dataset's 27 -> 12 parameters and the renderer's pool went


def measure(shards: Path, dtype: str, batches: int) -> dict[str, float]:
    """In the child: drawings/s of the shard pipeline, wall clock and per CPU-second."""
    import quickdraw as qd

    ds = qd.make_dataset(shards, split="train", image_size=64, batch_size=64, repeat=True,
                         drop_remainder=True, image_dtype=dtype)  # fmt: skip
    it = iter(ds)
    for _ in range(128):  # warm-up: a few render calls' worth, before and after alike
        next(it)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(batches):
        next(it)
    n = batches * 64
    return {"wall": n / (time.perf_counter() - wall), "cpu": n / (time.process_time() - cpu)}


def child(shards: Path, batches: int) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import quickdraw as qd

    if not shards.exists():
        qd.write_shards(qd.ensure_builtin_data("smoke"), shards, num_shards=4, progress=False)
    rates = {dtype: measure(shards, dtype, batches) for dtype in ("float32", "uint8")}
    print(json.dumps({"package": qd.__file__, "rates": rates}))


def run(tree: Path, shards: Path, batches: int) -> dict:
    """One child on the package in ``tree`` (first on PYTHONPATH, the rest from the repository)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys([str(tree), str(ROOT)]))}
    out = subprocess.run([sys.executable, __file__, "--child", str(shards), str(batches)], env=env,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    result = json.loads(out.strip().splitlines()[-1])
    assert Path(result["package"]).is_relative_to(tree), f"{result['package']} is not from {tree}"
    return result["rates"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", default=BEFORE, help="the commit to compare with")
    p.add_argument("--rounds", type=int, default=3, help="processes per side, alternating")
    p.add_argument("--batches", type=int, default=256, help="batches of 64 timed per process")
    args = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="qd-before-after-"))
    try:
        archive = subprocess.run(["git", "archive", args.before, "quickdraw"], cwd=ROOT, capture_output=True)
        if archive.returncode:
            print(f"skipped: no commit {args.before} here ({archive.stderr.decode().strip()})")
            return 0
        (tmp / "before").mkdir()
        subprocess.run(["tar", "-x", "-C", str(tmp / "before")], input=archive.stdout, check=True)
        sides = {"before": tmp / "before", "after": ROOT}
        rates: dict[str, list[dict]] = {side: [] for side in sides}
        for _ in range(args.rounds):
            for side, tree in sides.items():
                rates[side].append(run(tree, tmp / f"shards-{side}", args.batches))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"shard pipeline, built-in smoke doodles, 64x64, batch 64: medians of {args.rounds} processes "
          f"per side, alternating; before = {args.before}, after = this tree; {os.cpu_count()} CPU cores")
    print(f"{'drawings/s':32s} {'before':>9s} {'after':>9s} {'after/before':>13s}  (each round's ratio)")
    for dtype in ("float32", "uint8"):
        for clock, name in (("wall", "wall clock"), ("cpu", "per CPU-second")):
            before, after = ([r[dtype][clock] for r in rates[side]] for side in sides)
            ratios = [a / b for a, b in zip(after, before, strict=True)]
            print(f"{dtype + ' images, ' + name:32s} {statistics.median(before):9,.0f} "
                  f"{statistics.median(after):9,.0f} {statistics.median(ratios):13.2f}  "
                  f"({', '.join(f'{r:.2f}' for r in ratios)})")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        raise SystemExit(main())
