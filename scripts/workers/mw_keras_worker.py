"""One worker of a multi-worker ``model.fit`` run (notebook 04, section "Multi-worker").

Start one copy per worker with its own ``TF_CONFIG`` (``infra.cluster.run_workers`` does
that on localhost; on real machines export ``TF_CONFIG`` and run it on each host)::

    python scripts/workers/mw_keras_worker.py --data smoke --epochs 3
    TF_USE_LEGACY_KERAS=1 python scripts/workers/mw_keras_worker.py ...   # Keras 2 (tf-keras)

``tf.keras`` is Keras 3 by default; with ``TF_USE_LEGACY_KERAS=1`` (and ``tf-keras``
installed) it is Keras 2. Keras 3's ``fit`` under ``MultiWorkerMirroredStrategy`` fails
(keras-team/keras#20585); Keras 2's works. With ``--backup-dir`` training is wrapped in
``BackupAndRestore`` so a restarted cluster resumes from the last finished epoch.
Each worker prints ``epoch E batch B`` progress lines and ends with one
``infra.process.report(...)`` line: epochs run, history, validation accuracy, weights digest.
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    from utils import training  # numpy only: TensorFlow is imported after the arguments are read

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="smoke", help="built-in variant or a doodle directory")
    parser.add_argument("--image-size", type=int, default=28)
    parser.add_argument("--limit", type=int, default=None, help="use the first N training doodles")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-per-replica", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3, help="learning rate for one replica")
    parser.add_argument("--autoshard", choices=["auto", "data", "off"], default="data")
    parser.add_argument("--backup-dir", default=None, help="wrap fit in BackupAndRestore")
    parser.add_argument("--slow", type=float, default=0.0, help="sleep this long after each batch")
    training.add_pause_option(parser)
    args = parser.parse_args()

    import tensorflow as tf

    from infra.devices import configure_worker
    from infra.process import report
    from quickdraw.arrays import doodle_arrays
    from utils.models import build_cnn
    from utils.training import weights_digest

    keras = tf.keras  # Keras 3, or Keras 2 (tf-keras) when TF_USE_LEGACY_KERAS=1
    legacy = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
    keras_version = __import__("tf_keras" if legacy else "keras").__version__
    task = os.environ.get("COURSE_TASK", "worker:0")
    worker = configure_worker()  # extra code – the GPU (or CPU) infra.cluster assigned, before TF starts
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=worker.collective
        )
    )
    replicas = strategy.num_replicas_in_sync
    print(f"{task}: Keras {keras_version}, {replicas} replicas in sync", flush=True)

    train = doodle_arrays(args.data, "train", args.image_size, limit=args.limit)
    val = doodle_arrays(args.data, "val", args.image_size)
    global_batch = args.batch_per_replica * replicas
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = {
        "auto": tf.data.experimental.AutoShardPolicy.AUTO,
        "data": tf.data.experimental.AutoShardPolicy.DATA,
        "off": tf.data.experimental.AutoShardPolicy.OFF,
    }[args.autoshard]
    train_ds = (
        tf.data.Dataset.from_tensor_slices((train.x, train.y))
        .shuffle(len(train), seed=42)
        .batch(global_batch, drop_remainder=True)
        .repeat()  # one iterator for the whole fit (notebook 04 §5)
        .with_options(options)
    )
    steps_per_epoch = len(train) // global_batch
    val_ds = tf.data.Dataset.from_tensor_slices((val.x, val.y)).batch(global_batch).with_options(options)

    with strategy.scope():
        model = build_cnn(train.num_classes, args.image_size, keras_module=keras)
        model.compile(
            optimizer=keras.optimizers.Adam(args.lr * replicas),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )

    epochs_run: list[int] = []

    class Progress(keras.callbacks.Callback):
        """Print machine-readable progress lines (the notebook watches for them)."""

        def on_epoch_begin(self, epoch, logs=None):
            epochs_run.append(int(epoch))
            print(f"{task}: epoch {epoch} begin", flush=True)

        def on_train_batch_end(self, batch, logs=None):
            line = f"{task}: epoch {epochs_run[-1]} batch {batch}"
            print(line, flush=True)
            if args.slow:
                time.sleep(args.slow)
            training.pause_after(line, args.pause)

        def on_epoch_end(self, epoch, logs=None):
            print(f"{task}: epoch {epoch} end", flush=True)

    callbacks = []
    if args.backup_dir:
        callbacks.append(keras.callbacks.BackupAndRestore(backup_dir=args.backup_dir))
    callbacks.append(Progress())
    history = model.fit(
        train_ds,
        epochs=args.epochs,
        steps_per_epoch=steps_per_epoch,
        callbacks=callbacks,
        verbose=2 if task.endswith(":0") else 0,
    )
    results = model.evaluate(val_ds, verbose=0, return_dict=True)
    report(
        task=task,
        keras_version=keras_version,
        replicas=replicas,
        global_batch=global_batch,
        epochs_run=epochs_run,
        history={k: [float(v) for v in vs] for k, vs in history.history.items()},
        val_accuracy=float(results["accuracy"]),
        weights=weights_digest(model.get_weights()),
    )


if __name__ == "__main__":
    main()
