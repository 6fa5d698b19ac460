"""One worker of a multi-worker custom training loop (notebook 05; notebook 04 points here).

Start one copy per worker with its own ``TF_CONFIG`` (``infra.cluster.run_workers`` does it
on localhost)::

    python scripts/workers/mw_custom_loop_worker.py --data smoke --epochs 2

Keras 3 model and optimizer, ``MultiWorkerMirroredStrategy``, ``strategy.run`` inside a
``tf.function``, ``tf.nn.compute_average_loss`` with the global batch size and metrics
updated in replica context -- the loop of notebook 05, which works with Keras 3 where
``model.fit`` under this strategy does not (keras-team/keras#20585). Each worker reports
the per-epoch loss and accuracy, the validation accuracy, a digest of its weights and the
seconds each epoch took (notebook 10 computes throughput from them).
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="smoke")
    parser.add_argument("--image-size", type=int, default=28)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-per-replica", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    import keras
    import tensorflow as tf

    from infra.devices import configure_worker
    from infra.process import report
    from quickdraw.arrays import doodle_arrays
    from utils.models import build_cnn
    from utils.training import weights_digest

    task = os.environ.get("COURSE_TASK", "worker:0")
    worker = configure_worker()  # extra code – the GPU (or CPU) infra.cluster assigned, before TF starts
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=worker.collective
        )
    )
    replicas = strategy.num_replicas_in_sync
    global_batch = args.batch_per_replica * replicas
    train = doodle_arrays(args.data, "train", args.image_size, limit=args.limit)
    val = doodle_arrays(args.data, "val", args.image_size)

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        batch = context.get_per_replica_batch_size(global_batch)
        ds = tf.data.Dataset.from_tensor_slices((train.x, train.y))
        ds = ds.shard(context.num_input_pipelines, context.input_pipeline_id)  # this worker's part
        # repeated: the loop below takes `steps` batches an epoch from one iterator (a new order every pass)
        return ds.shuffle(len(train), seed=42).batch(batch, drop_remainder=True).repeat()

    train_dist = strategy.distribute_datasets_from_function(dataset_fn)

    with strategy.scope():
        model = build_cnn(train.num_classes, args.image_size)
        optimizer = keras.optimizers.Adam(args.lr * replicas)
        optimizer.build(model.trainable_variables)  # Keras 3: build in scope before strategy.run
        train_accuracy = keras.metrics.SparseCategoricalAccuracy()
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

    @tf.function
    def train_step(iterator):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss = tf.nn.compute_average_loss(loss_fn(y, logits), global_batch_size=global_batch)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            train_accuracy.update_state(y, logits)
            return loss

        per_replica = strategy.run(replica_step, args=next(iterator))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    steps = len(train) // global_batch
    history: dict[str, list[float]] = {"loss": [], "accuracy": []}
    epoch_seconds: list[float] = []  # per worker (not in history: notebook 05 compares histories)
    # one iterator for every epoch: freeing one that a tf.function has read can stall (notebook 08 §3)
    iterator = iter(train_dist)
    for epoch in range(args.epochs):
        total = 0.0
        start = time.perf_counter()
        for _ in range(steps):
            total += float(train_step(iterator))
        epoch_seconds.append(time.perf_counter() - start)  # the first epoch includes tracing
        history["loss"].append(total / steps)
        history["accuracy"].append(float(train_accuracy.result()))
        train_accuracy.reset_state()
        print(
            f"{task}: epoch {epoch} loss {history['loss'][-1]:.4f} accuracy {history['accuracy'][-1]:.4f}",
            flush=True,
        )

    logits = model.predict(val.x, batch_size=512, verbose=0)  # every worker: the whole val set
    report(
        task=task,
        keras_version=keras.__version__,
        replicas=replicas,
        global_batch=global_batch,
        steps_per_epoch=steps,
        history=history,
        epoch_seconds=epoch_seconds,
        val_accuracy=float((logits.argmax(axis=1) == val.y).mean()),
        weights=weights_digest(model.get_weights()),
    )


if __name__ == "__main__":
    main()
