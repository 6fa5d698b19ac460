"""Horovod + Keras (``model.fit``): the recipe of notebook 07, one process per rank.

Run it with Horovod's launcher, one process per GPU (here: per CPU slot)::

    horovodrun -np 2 -H localhost:2 python scripts/workers/horovod_keras.py --epochs 3 --out /tmp/hvd

Each rank writes ``<out>/ranks/rank<r>.json`` (what it did) and ``rank<r>.npz`` (its final
weights) so the notebook can check that the ranks agree; checkpoints go to
``<out>/checkpoints`` from rank 0 only. Needs the Horovod environment (``make horovod``:
TensorFlow 2.12, Keras 2); Horovod 0.28.1 does not run on Keras 3.
"""

from __future__ import annotations

import os
import time

from infra import horovod_job  # extra code – options, data, reports
from utils.models import build_cnn
from utils.training import weights_digest


def main(argv: list[str] | None = None) -> None:
    args = horovod_job.parse_args(__doc__.splitlines()[0], argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    start = time.perf_counter()

    import horovod.tensorflow.keras as hvd
    import tensorflow as tf

    # Step 1: start Horovod. Every process learns its rank (0…size-1), the number of
    # processes, and its local rank on this machine.
    hvd.init()

    # Step 2: one GPU per process, chosen by local rank, with memory growth. On a CPU-only
    # machine there is nothing to pin: instead split the cores between the local processes.
    gpus = tf.config.list_physical_devices("GPU")
    for gpu in gpus:
        tf.config.experimental.set_memory_growth(gpu, True)
    if gpus:
        tf.config.set_visible_devices(gpus[hvd.local_rank()], "GPU")
    else:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        tf.config.threading.set_intra_op_parallelism_threads(max(1, cores // hvd.local_size()))

    # Different seeds per rank on purpose: the ranks start with different weights, and only
    # the broadcast of step 5 makes them agree.
    tf.keras.utils.set_random_seed(args.seed + hvd.rank())

    # Step 8 (data): every rank reads the same examples and keeps every size-th one, starting
    # at its rank. Equal shards give every rank the same number of steps per epoch.
    images, labels, class_names = horovod_job.load_images(
        args.examples, image_size=args.image_size, seed=args.seed
    )
    shard_size = len(images) // hvd.size()
    steps_per_epoch = shard_size // args.batch_size
    if steps_per_epoch < 1:
        raise SystemExit(f"{shard_size} examples per rank is less than one batch of {args.batch_size}")
    dataset = (
        tf.data.Dataset.from_tensor_slices((images, labels))
        .shard(hvd.size(), hvd.rank())
        .shuffle(shard_size, seed=args.seed + hvd.rank())
        .batch(args.batch_size, drop_remainder=True)
        .repeat()  # one iterator for the whole fit, with steps_per_epoch (docs/frozen-epochs.md)
        .prefetch(tf.data.AUTOTUNE)
    )

    model = build_cnn(len(class_names), args.image_size, keras_module=tf.keras)  # the CNN of notebooks 04-05

    # Step 3: scale the learning rate by the number of processes (the global batch is size ×
    # larger); the warm-up callback below ramps it up from base_lr over the first epochs.
    scaled_lr = args.base_lr * hvd.size()
    # The legacy optimizer: Horovod 0.28.1's warm-up callback also rescales the momentum
    # ("momentum correction"), which needs the momentum to be a variable as in the optimizers
    # before Keras 2.11; with tf.keras.optimizers.SGD it fails ('float' object has no
    # attribute 'dtype').
    optimizer = tf.keras.optimizers.legacy.SGD(learning_rate=scaled_lr, momentum=0.9)

    # Step 4: wrap the optimizer. Gradients are averaged across ranks with ring all-reduce
    # before they are applied.
    optimizer = hvd.DistributedOptimizer(optimizer)
    model.compile(
        optimizer=optimizer,
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    initial_digest = weights_digest(model.get_weights())

    callbacks = [
        # Step 5: after the first batch, copy rank 0's weights and optimizer state to all.
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),
        # Step 6: average the epoch metrics over ranks (each rank only saw its shard).
        hvd.callbacks.MetricAverageCallback(),
        # Step 3, continued: warm-up from scaled_lr / size to scaled_lr.
        hvd.callbacks.LearningRateWarmupCallback(
            initial_lr=scaled_lr, warmup_epochs=args.warmup_epochs, steps_per_epoch=steps_per_epoch
        ),
    ]
    checkpoint_dir = args.out / "checkpoints"
    writes = horovod_job.WriteLog(checkpoint_dir)  # extra code – which files this rank wrote

    class RecordedCheckpoint(tf.keras.callbacks.ModelCheckpoint):  # extra code – notes its writes
        def on_epoch_end(self, epoch, logs=None):
            with writes:
                super().on_epoch_end(epoch, logs)

    # Step 7: checkpoints and logs on rank 0 only: the other ranks hold the same weights, and
    # several processes writing one file would corrupt it.
    if hvd.rank() == 0:
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        callbacks.append(
            RecordedCheckpoint(str(checkpoint_dir / "epoch-{epoch:02d}.h5"), save_weights_only=True)
        )

    print(
        f"rank {hvd.rank()}/{hvd.size()} (local {hvd.local_rank()}/{hvd.local_size()}): "
        f"{shard_size} of {len(images)} doodle examples, {steps_per_epoch} steps/epoch, "
        f"initial weights {initial_digest}",
        flush=True,
    )
    history = model.fit(
        dataset,
        epochs=args.epochs,
        steps_per_epoch=steps_per_epoch,
        callbacks=callbacks,
        verbose=2 if hvd.rank() == 0 else 0,
    )

    weights = model.get_weights()
    report = horovod_job.RankReport(
        script="keras",
        rank=hvd.rank(),
        size=hvd.size(),
        local_rank=hvd.local_rank(),
        local_size=hvd.local_size(),
        shard_examples=shard_size,
        steps_per_epoch=steps_per_epoch,
        initial_digest=initial_digest,
        final_digest=weights_digest(weights),
        epochs=[
            {key: float(values[i]) for key, values in history.history.items()}
            for i in range(len(history.history["loss"]))
        ],
        checkpoint_writes=writes.written,
        seconds=time.perf_counter() - start,
        devices=[d.name for d in tf.config.list_logical_devices()],
        intra_op_threads=tf.config.threading.get_intra_op_parallelism_threads(),
    )
    report.save(args.out / "ranks", weights)
    print(
        f"rank {hvd.rank()}: done in {report.seconds:.1f} s, final weights {report.final_digest}, "
        f"wrote {len(writes.written)} checkpoint file(s)",
        flush=True,
    )


if __name__ == "__main__":
    main()
