"""Horovod + a custom training loop (``DistributedGradientTape``): notebook 07, one process per rank.

Run it with Horovod's launcher::

    horovodrun -np 2 -H localhost:2 python scripts/workers/horovod_custom_loop.py --epochs 3 --out /tmp/hvd

Each rank writes ``<out>/ranks/rank<r>.json`` (what it did, including its own loss before
averaging) and ``rank<r>.npz`` (its final weights); ``tf.train.Checkpoint`` files go to
``<out>/checkpoints`` from rank 0 only. Needs the Horovod environment (``make horovod``).
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

    import horovod.tensorflow as hvd
    import tensorflow as tf

    # Step 1: start Horovod.
    hvd.init()

    # Step 2: one GPU per process by local rank (memory growth on); on CPU, share the cores.
    gpus = tf.config.list_physical_devices("GPU")
    for gpu in gpus:
        tf.config.experimental.set_memory_growth(gpu, True)
    if gpus:
        tf.config.set_visible_devices(gpus[hvd.local_rank()], "GPU")
    else:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        tf.config.threading.set_intra_op_parallelism_threads(max(1, cores // hvd.local_size()))

    tf.keras.utils.set_random_seed(args.seed + hvd.rank())  # different on purpose (see step 5)

    # Step 8 (data): the same examples everywhere, every rank keeps its own shard.
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
    )

    model = build_cnn(len(class_names), args.image_size, keras_module=tf.keras)  # the CNN of notebooks 04-05
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    # Step 3: scale the learning rate by size; warm it up from scaled_lr / size.
    scaled_lr = args.base_lr * hvd.size()
    optimizer = tf.keras.optimizers.SGD(learning_rate=scaled_lr, momentum=0.9)
    initial_digest = weights_digest(model.get_weights())

    @tf.function
    def train_step(x, y, first_batch):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        # Step 4: wrap the tape; its gradients come back averaged over all ranks.
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        # (no zip(..., strict=True): AutoGraph in TensorFlow 2.12 rejects it)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))  # noqa: B905
        # Step 5: after the first step (when the optimizer's slots exist), give everyone
        # rank 0's weights and optimizer state.
        if first_batch:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(optimizer.variables(), root_rank=0)
        return loss

    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    checkpoint_dir = args.out / "checkpoints"
    writes = horovod_job.WriteLog(checkpoint_dir)  # extra code – which files this rank wrote
    print(
        f"rank {hvd.rank()}/{hvd.size()} (local {hvd.local_rank()}/{hvd.local_size()}): "
        f"{shard_size} of {len(images)} doodle examples, {steps_per_epoch} steps/epoch, "
        f"initial weights {initial_digest}",
        flush=True,
    )

    epochs = []
    step = 0
    for epoch in range(args.epochs):
        losses = []
        for x, y in dataset:
            lr = horovod_job.warmup_lr(  # the rule of hvd.callbacks.LearningRateWarmupCallback
                (step + 1) / steps_per_epoch,
                target_lr=scaled_lr,
                size=hvd.size(),
                warmup_epochs=args.warmup_epochs,
            )
            optimizer.learning_rate.assign(lr)
            losses.append(float(train_step(x, y, tf.constant(step == 0))))
            step += 1
        local_loss = sum(losses) / len(losses)
        # Step 6: average the metric over ranks (each saw only its shard).
        mean_loss = float(hvd.allreduce(tf.constant(local_loss), op=hvd.Average))
        epochs.append({"loss": mean_loss, "local_loss": local_loss, "lr": float(lr)})
        # Step 7: log and checkpoint on rank 0 only.
        if hvd.rank() == 0:
            print(
                f"epoch {epoch + 1}/{args.epochs}: loss {mean_loss:.4f} (averaged over {hvd.size()} ranks), lr {lr:.4f}",
                flush=True,
            )
            with writes:
                checkpoint.save(str(checkpoint_dir / "ckpt"))

    weights = model.get_weights()
    report = horovod_job.RankReport(
        script="custom_loop",
        rank=hvd.rank(),
        size=hvd.size(),
        local_rank=hvd.local_rank(),
        local_size=hvd.local_size(),
        shard_examples=shard_size,
        steps_per_epoch=steps_per_epoch,
        initial_digest=initial_digest,
        final_digest=weights_digest(weights),
        epochs=epochs,
        checkpoint_writes=writes.written,
        seconds=time.perf_counter() - start,
        devices=[d.name for d in tf.config.list_logical_devices()],
        intra_op_threads=tf.config.threading.get_intra_op_parallelism_threads(),
    )
    report.save(args.out / "ranks", weights)
    print(
        f"rank {hvd.rank()}: local loss {epochs[-1]['local_loss']:.4f}, done in {report.seconds:.1f} s, "
        f"final weights {report.final_digest}, wrote {len(writes.written)} checkpoint file(s)",
        flush=True,
    )


if __name__ == "__main__":
    main()
