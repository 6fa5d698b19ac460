"""The kernel freeze after a failed ``fit`` (notebook 08 §3): a garbage collection late vs right away.

A ``fit`` that fails under ``MirroredStrategy`` (here: ``steps_per_execution`` > 1, notebook 08
§4) leaves its input iterator in a reference cycle through the exception's traceback. Python frees
it at the next full garbage collection, and TensorFlow's iterator destructor then waits for the
iterator's autotuning thread while holding Python's lock. Two ways, in turns:

1. **late**: the cycle left alone, another pipeline used for ``--age`` seconds, then ``gc.collect()``;
2. **right away**: ``gc.collect()`` in the ``finally`` of the failing call (what notebooks 02, 08
   and 12 do), then the same wait and a second ``gc.collect()``.

Printed: each collection's time. The notebook's advice holds if the late collection is often
slow (seconds, up to about ``--age``: the wait does not come every time) and both collections of
the second way take well under a second.

The same wait without any failure: a distributed iterator that a ``tf.function`` reads from,
freed after ``--age`` seconds of use, with tf.data autotuning on (the default) and, as
the control, off (``tf.data.Options().autotune.enabled = False``: no autotuning thread to wait for).

    python benchmarks/bench_failed_fit_gc.py            # make bench runs this
    python benchmarks/bench_failed_fit_gc.py --age 90 --repeats 2
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--age", type=float, default=20.0, help="seconds between the failed fit and the late collection"
    )
    p.add_argument("--repeats", type=int, default=3, help="turns of each way")
    args = p.parse_args(argv)

    import infra.devices
    import utils

    course = utils.setup(chapter=8, plan=infra.devices.prepare(logical_devices=2))
    import keras
    import tensorflow as tf

    from quickdraw.arrays import doodle_arrays
    from utils import models

    strategy = tf.distribute.MirroredStrategy(course.devices)
    doodles = doodle_arrays("smoke", "train", 28, limit=1024)

    def batches() -> tf.data.Dataset:
        return (
            tf.data.Dataset.from_tensor_slices((doodles.x, doodles.y)).batch(64, drop_remainder=True).repeat()
        )

    def failing_fit(collect_now: bool) -> float:
        """fit(steps_per_execution=4) under the strategy, which fails; the seconds of the collection in ``finally``."""
        with strategy.scope():
            model = models.build_cnn(doodles.num_classes, 28)
            model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                          steps_per_execution=4)  # fmt: skip
        try:
            model.fit(batches(), steps_per_epoch=8, epochs=1, verbose=0)
            raise SystemExit("fit(steps_per_execution=4) worked under MirroredStrategy: nothing to measure")
        except tf.errors.InvalidArgumentError:
            pass
        finally:
            start = time.perf_counter()
            if collect_now:
                gc.collect()
        return time.perf_counter() - start

    def wait_then_collect() -> float:
        """``--age`` seconds of another pipeline in use, then a timed full collection."""
        iterator, start = iter(strategy.experimental_distribute_dataset(batches())), time.perf_counter()
        while time.perf_counter() - start < args.age:
            next(iterator)
        start = time.perf_counter()
        gc.collect()
        return time.perf_counter() - start

    def read_in_function_then_free(autotune: bool) -> float:
        """``--age`` seconds of calls of a new ``tf.function`` that reads the iterator; the seconds to free both."""
        options = tf.data.Options()
        options.autotune.enabled = autotune
        iterator = iter(strategy.experimental_distribute_dataset(batches().with_options(options)))

        @tf.function
        def first_image_sum(iterator):
            x, _ = next(iterator)
            return strategy.reduce("SUM", strategy.run(lambda x: tf.reduce_sum(x[0]), args=(x,)), axis=None)

        start = time.perf_counter()
        while time.perf_counter() - start < args.age:
            first_image_sum(iterator)
        start = time.perf_counter()
        del iterator, first_image_sum
        gc.collect()  # whatever a trace keeps in a cycle, freed too
        return time.perf_counter() - start

    gc.disable()  # collections only where timed
    times: dict[str, list[float]] = {
        "late": [],
        "right away": [],
        "right away, later": [],
        "del, autotune on": [],
        "del, autotune off": [],
    }
    for turn in range(args.repeats):
        failing_fit(collect_now=False)
        times["late"].append(wait_then_collect())
        times["right away"].append(failing_fit(collect_now=True))
        times["right away, later"].append(wait_then_collect())
        for autotune in (True, False):
            times[f"del, autotune {'on' if autotune else 'off'}"].append(read_in_function_then_free(autotune))
        print(
            f"turn {turn + 1}: " + ", ".join(f"{way} {t[-1]:.2f} s" for way, t in times.items()), flush=True
        )
    medians = {way: statistics.median(t) for way, t in times.items()}
    print(
        f"median collection after a failed fit, iterator {args.age:.0f} s old: {medians['late']:.2f} s; "
        f"collected right away: {medians['right away']:.2f} s, and {medians['right away, later']:.2f} s at the same "
        f"later moment; an iterator read in a tf.function, freed after {args.age:.0f} s: "
        f"{medians['del, autotune on']:.2f} s, with autotuning off: {medians['del, autotune off']:.2f} s "
        f"({course.replicas} replicas, {course.device_kind})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
