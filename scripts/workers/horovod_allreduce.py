"""Horovod's all-reduce on its own: every rank contributes a vector, every rank gets the sum.

Run it with Horovod's launcher (notebook 07, section 1)::

    horovodrun -np 2 -H localhost:2 python scripts/workers/horovod_allreduce.py --out /tmp/hvd-allreduce

Each rank writes ``<out>/allreduce-rank<r>.npz`` with its input, the sum and the average
Horovod returned, and the time of ``--repeats`` all-reduces of ``--megabytes`` MB (after
one warm-up), so the notebook can compare the result with NumPy's exact sum and with the
ring all-reduce simulation of notebook 01.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=10, help="elements of the vector to sum")
    parser.add_argument("--megabytes", type=float, default=4.0, help="size of the timed tensor")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import horovod.tensorflow as hvd
    import numpy as np
    import tensorflow as tf

    hvd.init()
    rng = np.random.default_rng(hvd.rank())
    mine = rng.integers(-9, 10, size=args.length).astype(np.float32)  # small whole numbers: exact sums
    total = hvd.allreduce(tf.constant(mine), op=hvd.Sum, name="demo_sum").numpy()
    mean = hvd.allreduce(tf.constant(mine), op=hvd.Average, name="demo_mean").numpy()
    print(
        f"rank {hvd.rank()}/{hvd.size()}: mine {mine.astype(int).tolist()} -> sum {total.astype(int).tolist()}",
        flush=True,
    )

    big = tf.random.stateless_normal([int(args.megabytes * 2**20 / 4)], seed=[hvd.rank(), 0])
    hvd.allreduce(big, op=hvd.Sum, name="warmup")
    seconds = []
    for i in range(args.repeats):
        start = time.perf_counter()
        hvd.allreduce(big, op=hvd.Sum, name=f"timed_{i}").numpy()
        seconds.append(time.perf_counter() - start)
    print(
        f"rank {hvd.rank()}: all-reduce of {args.megabytes:g} MB: median {np.median(seconds) * 1e3:.1f} ms",
        flush=True,
    )

    args.out.mkdir(parents=True, exist_ok=True)
    np.savez(
        args.out / f"allreduce-rank{hvd.rank()}.npz",
        mine=mine,
        total=total,
        mean=mean,
        seconds=np.array(seconds),
        nbytes=np.array(big.numpy().nbytes),
        size=np.array(hvd.size()),
    )


if __name__ == "__main__":
    main()
