"""Is training input-bound? The Quick, Draw! pipeline alone vs a training step, one run.

Measures on this machine, in one process and one run (printed side by side):

1. the input pipeline alone: examples/second of ``quickdraw.make_dataset`` (parse,
   render, batch, prefetch), read from the Kaggle-format CSVs and from TFRecord shards
   made once by ``write_shards`` (into a temporary directory, removed at the end), beside
   the renderer alone in one thread (the same drawings, as many a call as the pipeline
   draws); the rates measured before a change are in ``CHANGELOG.md``;
2. the training step alone: examples/second of ``model.fit`` on one batch held in memory
   (``Dataset.from_tensors(batch).repeat()``, so no input work at all), for the
   capstone's models from ``utils.models``;
3. both together: ``model.fit`` fed by the pipeline.

When (1) is below (2) the input pipeline limits training (input-bound); when (3) is close
to (2) it does not. Numbers are for this machine's CPU cores; a GPU makes (2) much faster
and so makes the pipeline matter more.

    python benchmarks/bench_pipeline.py                       # built-in smoke doodles
    python benchmarks/bench_pipeline.py --models compact --image-size 32 --steps 20
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def rate_of_dataset(ds, batches: int, batch_size: int, per_call: int) -> float:
    """Examples/second over ``batches`` batches, at least eight render calls' worth
    (``per_call`` drawings each), after two calls' worth of warm-up: the render map draws
    several batches a call, so a window of a few batches would time batches drawn before it."""
    calls = max(1, per_call // batch_size)
    batches = max(batches, 8 * calls)
    it = iter(ds)
    for _ in range(2 * calls):
        next(it)
    start = time.perf_counter()
    for _ in range(batches):
        next(it)
    return batches * batch_size / (time.perf_counter() - start)


def rate_of_renderer(source: Path, size: int, encoding: str, per_call: int, n: int = 4096) -> float:
    """Drawings/second of the renderer alone, in this thread, on ``n`` drawings of ``source``
    drawn ``per_call`` at a time as the pipeline's render map draws them: the yardstick
    beside the pipeline's rate (the pipeline adds reading, batching and the hand-offs)."""
    from itertools import islice

    import cv2

    import quickdraw as qd
    from quickdraw.render import render_packed_batch

    cv2.setNumThreads(1)
    packed = [qd.pack_strokes(s) for s, _, _ in islice(qd.iter_examples(source), n)]
    render_packed_batch(packed[:per_call], size, encoding=encoding)  # warm-up
    start = time.perf_counter()
    for i in range(0, len(packed), per_call):
        render_packed_batch(packed[i : i + per_call], size, encoding=encoding)
    return len(packed) / (time.perf_counter() - start)


def rate_of_fit(model, ds, steps: int, batch_size: int) -> float:
    """Examples/second of ``model.fit`` over ``steps`` steps, timed inside one ``fit`` call
    from the end of step 3 (tracing and warm-up excluded) to the end of the last step."""
    import keras

    stamps: list[float] = []

    class Clock(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):  # noqa: ANN001 - Keras signature
            stamps.append(time.perf_counter())

    model.fit(ds, steps_per_epoch=steps + 3, epochs=1, verbose=0, callbacks=[Clock()])
    return steps * batch_size / (stamps[-1] - stamps[2])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--data", type=Path, default=None, help="Quick, Draw! directory (default: built-in doodles)"
    )
    p.add_argument("--variant", default="smoke", help="built-in variant when --data is not given")
    p.add_argument("--models", default="compact,mobilenet", help="comma-separated utils.models kinds")
    p.add_argument("--alpha", type=float, default=1.0, help="MobileNet width multiplier")
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--encoding", default="plain")
    p.add_argument("--steps", type=int, default=30, help="batches/steps per measurement")
    p.add_argument("--shards", type=int, default=4, help="TFRecord shards to compare with (0: skip)")
    args = p.parse_args(argv)

    import keras
    import tensorflow as tf

    import quickdraw as qd
    from quickdraw.pipeline import drawings_per_call
    from quickdraw.render import channels_of
    from utils.models import build_model

    source = args.data or qd.ensure_builtin_data(args.variant)
    labels = qd.resolve_labels(source)
    size, bs = args.image_size, args.batch_size
    common = dict(image_size=size, batch_size=bs, encoding=args.encoding, repeat=True, drop_remainder=True)
    print(
        f"data: {source} ({len(labels)} classes), images {size}x{size}, batch {bs}, {os.cpu_count()} CPU cores"
    )
    print(
        f"TensorFlow {tf.__version__}, Keras {keras.__version__}; devices: {[d.device_type for d in tf.config.list_physical_devices()]}"
    )

    rows: list[tuple[str, float]] = []
    tmp = Path(tempfile.mkdtemp(prefix="qd-bench-"))
    try:
        ds_csv = qd.make_dataset(source, split="train", **common)
        per_call = drawings_per_call(bs, size * size * channels_of(args.encoding) * 4)  # float32 images
        rows.append(("renderer alone, one thread (yardstick)", rate_of_renderer(source, size, args.encoding, per_call)))
        rows.append(("pipeline alone, from CSV files", rate_of_dataset(ds_csv, args.steps, bs, per_call)))
        if args.shards:
            t0 = time.perf_counter()
            qd.write_shards(source, tmp / "shards", num_shards=args.shards, progress=False)
            print(f"write_shards: {args.shards} shards in {time.perf_counter() - t0:.1f} s (one-time)")
            ds_tfr = qd.make_dataset(tmp / "shards", split="train", **common)
            rows.append(("pipeline alone, from TFRecord shards", rate_of_dataset(ds_tfr, args.steps, bs, per_call)))
        x, y = next(iter(ds_csv))
        in_memory = tf.data.Dataset.from_tensors((x, y)).repeat()
        for kind in [k.strip() for k in args.models.split(",") if k.strip()]:
            keras.utils.set_random_seed(0)
            model = build_model(kind, len(labels), size, x.shape[-1], alpha=args.alpha)
            model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            rows.append(
                (f"train step alone ({kind}, batch in memory)", rate_of_fit(model, in_memory, args.steps, bs))
            )
            rows.append(
                (f"train step fed by the pipeline ({kind}, CSV)", rate_of_fit(model, ds_csv, args.steps, bs))
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\n{'':50s} {'examples/s':>12s}")
    for name, rate in rows:
        print(f"{name:50s} {rate:12,.0f}")
    pipe = rows[1][1]  # from CSV files
    for name, rate in rows:
        if name.startswith("train step alone"):
            verdict = "input-bound" if pipe < rate else "not input-bound"
            print(
                f"{name.split('(')[1].split(',')[0]}: pipeline/step = {pipe / rate:.2f} -> {verdict} on this machine"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
