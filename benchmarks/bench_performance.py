"""Notebook 08's speed-ups side by side, in one run: mixed precision, XLA, steps per call, tf.data service.

Under ``MirroredStrategy`` on 2 replicas (logical CPU devices without a GPU, as in the
notebooks), the course's small CNN on built-in doodles; each pair of variants is timed in
turns (``utils.perf.side_by_side``), so the load of a shared machine falls on both alike:

1. mixed precision: a float32 step vs a ``mixed_bfloat16`` step (``mixed_float16`` on GPUs)
   with Keras 3's ``LossScaleOptimizer``;
2. XLA: the replica's gradient computation with and without ``jit_compile=True``;
3. fewer launches: K steps as K calls of a one-step ``tf.function`` vs one call of a
   ``tf.range`` loop of K steps;
4. tf.data service: one epoch of the capstone's pipeline (``quickdraw.make_dataset``)
   locally vs through an in-process dispatcher and worker (``infra.data_service.tf_data_service``).

A ratio above 1 means the second variant is faster. Numbers without a GPU come from
simulated replicas sharing the CPU: they show what each change costs or saves here, not on GPUs.

    python benchmarks/bench_performance.py              # make bench runs this
    python benchmarks/bench_performance.py --repeats 30 --k 16
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from infra.data_service import tf_data_service

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=15, help="timed turns per variant")
    p.add_argument("--k", type=int, default=8, help="steps per call for the fewer-launches pair")
    p.add_argument("--batch-size", type=int, default=64, help="global batch")
    args = p.parse_args(argv)

    import infra.devices
    import utils

    course = utils.setup(chapter=8, plan=infra.devices.prepare(logical_devices=2))
    import keras
    import tensorflow as tf

    import quickdraw as qd
    from quickdraw.arrays import doodle_arrays
    from utils import models, perf

    strategy = tf.distribute.MirroredStrategy(course.devices)
    doodles = doodle_arrays("smoke", "train", 28, limit=1024)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    batches = tf.data.Dataset.from_tensor_slices((doodles.x, doodles.y)).batch(args.batch_size, drop_remainder=True)
    where = "simulated replicas on this CPU" if course.simulated else f"{course.replicas} {course.device_kind}s"
    low = "mixed_float16" if course.device_kind == "gpu" else "mixed_bfloat16"

    def trainer(policy: str = "float32", jit: bool = False):
        """A one-step and a K-step tf.function for a fresh model (custom loop, as in notebook 08)."""
        keras.mixed_precision.set_global_policy(policy)
        try:
            with strategy.scope():
                keras.utils.set_random_seed(42)
                model = models.build_cnn(doodles.num_classes, 28)
                opt = keras.optimizers.SGD(0.05)
                if policy != "float32":
                    opt = keras.optimizers.LossScaleOptimizer(opt)
                opt.build(model.trainable_variables)
        finally:
            keras.mixed_precision.set_global_policy("float32")

        def gradients(x, y):
            with tf.GradientTape() as tape:
                logits = tf.cast(model(x, training=True), tf.float32)
                loss = tf.nn.compute_average_loss(loss_fn(y, logits), global_batch_size=args.batch_size)
                scaled = opt.scale_loss(loss)
            return tape.gradient(scaled, model.trainable_variables)

        if jit:
            gradients = tf.function(gradients, jit_compile=True)

        def replica_step(x, y):
            opt.apply_gradients(zip(gradients(x, y), model.trainable_variables, strict=True))

        iterator = iter(strategy.experimental_distribute_dataset(batches.repeat()))

        @tf.function
        def one():
            x, y = next(iterator)
            strategy.run(replica_step, args=(x, y))

        @tf.function
        def many(k):
            for _ in tf.range(k):
                x, y = next(iterator)
                strategy.run(replica_step, args=(x, y))

        def sync() -> None:
            model.trainable_variables[0].numpy()

        return (lambda: (one(), sync())), (lambda: (many(tf.constant(args.k)), sync()))

    rows: list[tuple[str, str, str, float, float]] = []

    def pair(name: str, a: str, b: str, fa, fb, per_call: int = 1) -> None:  # noqa: ANN001 - callables
        times = perf.side_by_side({a: fa, b: fb}, repeats=args.repeats, warmup=2)
        ta, tb = (statistics.median(times[v]) / per_call for v in (a, b))
        rows.append((name, a, b, ta, tb))
        print(f"  measured: {name}", flush=True)

    print(f"TensorFlow {tf.__version__}, Keras {keras.__version__}; {strategy.num_replicas_in_sync} replicas ({where})")
    f32_one, f32_many = trainer()
    low_one, _ = trainer(low)
    pair("mixed precision", "float32", low, f32_one, low_one)
    xla_one, _ = trainer(jit=True)
    pair("XLA (replica's gradients)", "no XLA", "jit_compile", f32_one, xla_one)

    def k_calls() -> None:
        for _ in range(args.k):
            f32_one()

    pair(f"{args.k} steps per call", "1 step/call", f"{args.k} steps/call", k_calls, f32_many, per_call=args.k)

    source = qd.ensure_builtin_data("smoke")
    pipe = qd.make_dataset(source, image_size=64, encoding="order", batch_size=args.batch_size, limit_per_class=60,
                           labels=qd.resolve_labels(source))  # fmt: skip

    def epoch(ds) -> None:  # noqa: ANN001 - a tf.data.Dataset
        for _ in ds:
            pass

    with tf_data_service(workers=1) as service:
        remote = pipe.apply(tf.data.experimental.service.distribute("distributed_epoch", service))
        pair("tf.data service (1 epoch)", "local pipeline", "tf.data service", lambda: epoch(pipe), lambda: epoch(remote))

    print(f"\n{'':28s} {'variant A':>16s} {'ms':>8s} {'variant B':>16s} {'ms':>8s} {'A/B':>6s}")
    for name, a, b, ta, tb in rows:
        print(f"{name:28s} {a:>16s} {ta * 1e3:8.2f} {b:>16s} {tb * 1e3:8.2f} {ta / tb:6.2f}")
    print(f"(A/B > 1: B is faster; medians of {args.repeats} turns, per step, the tf.data row per epoch; {where})")
    return 0


if __name__ == "__main__":
    start = time.perf_counter()
    code = main()
    print(f"bench_performance: {time.perf_counter() - start:.0f} s")
    raise SystemExit(code)
