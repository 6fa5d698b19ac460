"""Frozen epochs (issue 50): ``fit(ds, epochs=6)`` against ``fit(ds.repeat(), steps_per_epoch=…)``.

Keras 3 makes a new tf.data iterator every epoch when ``steps_per_epoch`` is None, and
TensorFlow 2.21 frees the previous one — read inside the train function — by waiting for its
autotuning thread (docs/frozen-epochs.md). Notebook 04's CNN and doodles, ``MirroredStrategy`` on
4 logical CPU devices (``--strategy none``: no strategy), the same batches, six epochs; each fit
run two ways, alternating:

1. **plain**: ``fit(ds, epochs=6)`` — what the course did;
2. **repeated**: ``fit(ds.repeat(), epochs=6, steps_per_epoch=n // B)`` — one iterator per fit;
3. **no autotune** (``--ways plain,repeated,no-autotune``): as 2, with tf.data's autotuning off
   (``tf.data.Options().autotune.enabled = False``): no autotuning thread to wait for.

Printed: every epoch's seconds, then per way the median and worst epoch (epochs 2–6: epoch 1
traces) and how many epochs took more than 1.5× that median, and per fit the seconds outside its
epochs (set-up, and freeing the last iterator when ``fit`` returns). ``--stack-after S`` dumps every
Python thread's stack when an epoch has run ``S`` s (``faulthandler``), to see where a stall waits.

    python benchmarks/bench_epoch_stalls.py                 # make bench: 1 fit each way, ~4 min
    python benchmarks/bench_epoch_stalls.py --fits 10       # the acceptance run, ~25 min idle
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fits", type=int, default=1, help="six-epoch fits of each way")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--limit", type=int, default=12_000, help="training doodles (04 full: all)")
    p.add_argument("--strategy", choices=["mirrored", "none"], default="mirrored")
    p.add_argument("--validation", action="store_true", help="also validate after every epoch")
    p.add_argument("--ways", default="plain,repeated", help="comma-separated: plain, repeated, no-autotune")
    p.add_argument("--stack-after", type=float, default=0.0, help="dump stacks after S s of an epoch")
    args = p.parse_args(argv)

    import infra.devices
    import utils

    course = utils.setup(chapter=4, plan=infra.devices.prepare(logical_devices=4))
    import keras
    import tensorflow as tf

    from quickdraw.arrays import doodle_arrays
    from utils import models

    data = doodle_arrays("full", "train", limit=args.limit)
    val = doodle_arrays("full", "val")
    if args.strategy == "mirrored":
        strategy = tf.distribute.MirroredStrategy(course.devices)
    else:
        strategy = tf.distribute.get_strategy()
    batch = val_batch = 128  # notebook 04: 32 per replica on 4 replicas
    steps = len(data) // batch
    val_steps = -(-len(val) // val_batch)

    def dataset(x, y, b, shuffle=True, autotune=True):
        ds = tf.data.Dataset.from_tensor_slices((x, y))
        ds = ds.shuffle(len(y), seed=42) if shuffle else ds
        options = tf.data.Options()
        options.autotune.enabled = autotune
        return ds.batch(b, drop_remainder=shuffle).prefetch(tf.data.AUTOTUNE).with_options(options)

    class Clock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seconds: list[float] = []

        def on_epoch_begin(self, epoch, logs=None):
            if args.stack_after:
                faulthandler.dump_traceback_later(args.stack_after, file=sys.stderr)
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.seconds.append(time.perf_counter() - self.start)
            faulthandler.cancel_dump_traceback_later()

    def one_fit(way: str) -> list[float]:
        with strategy.scope():
            model = models.build_cnn(data.num_classes)
            model.compile(keras.optimizers.Adam(1e-3),
                          keras.losses.SparseCategoricalCrossentropy(from_logits=True))  # fmt: skip
        clock = Clock()
        start = time.perf_counter()
        autotune = way != "no-autotune"
        train_ds = dataset(data.x, data.y, batch, autotune=autotune)
        val_ds = (
            dataset(val.x, val.y, val_batch, shuffle=False, autotune=autotune) if args.validation else None
        )
        if way == "plain":  # frozen-epochs: on purpose
            model.fit(train_ds, validation_data=val_ds, epochs=args.epochs, callbacks=[clock], verbose=0)
        else:  # frozen-epochs: on purpose (--validation measures validation_data's per-epoch wait)
            model.fit(
                train_ds.repeat(),
                steps_per_epoch=steps,
                validation_data=val_ds.repeat() if val_ds is not None else None,
                validation_steps=val_steps if val_ds is not None else None,
                epochs=args.epochs,
                callbacks=[clock],
                verbose=0,
            )
        clock.seconds.append(time.perf_counter() - start - sum(clock.seconds))  # setup + teardown
        return clock.seconds

    ways = tuple(args.ways.split(","))
    epochs: dict[str, list[list[float]]] = {way: [] for way in ways}
    outside_of: dict[str, list[float]] = {way: [] for way in ways}
    for turn in range(args.fits):
        for way in ways if turn % 2 == 0 else ways[::-1]:  # alternating: the same share of any slow spell
            *seconds, outside = one_fit(way)
            epochs[way].append(seconds)
            outside_of[way].append(outside)
            print(f"fit {turn + 1} {way:>8}: epochs " + " ".join(f"{s:5.1f}" for s in seconds)
                  + f", outside the epochs {outside:4.1f} s", flush=True)  # fmt: skip
    where = f"{strategy.num_replicas_in_sync} replica(s), {course.device_kind}, {steps} steps of {batch}"
    print(f"== {args.fits} fit(s) of {args.epochs} epochs each way, {where}"
          f"{', with validation' if args.validation else ''}:")  # fmt: skip
    for way in ways:
        later = [s for fit in epochs[way] for s in fit[1:]]  # epoch 1 traces the function
        worst_outside = max(outside_of[way])
        median, worst = statistics.median(later), max(later)
        stalled = sum(s > 1.5 * median for s in later)
        print(f"{way:>8}: median epoch {median:.2f} s, worst {worst:.2f} s ({worst / median:.2f}× the median), "
              f"{stalled} of {len(later)} epochs over 1.5× the median; "
              f"outside the epochs up to {worst_outside:.1f} s a fit")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
