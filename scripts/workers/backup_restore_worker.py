"""Train with ``BackupAndRestore`` and print progress, so the notebook can kill it (notebook 04).

    python scripts/workers/backup_restore_worker.py --backup-dir /tmp/backup --epochs 4

Keras 3 ``fit`` under ``MirroredStrategy`` over ``--replicas`` logical CPU devices (real
GPUs when present). Prints ``epoch E batch B`` after every batch and, at the start, the
epoch and optimizer step it resumes from and a digest of the restored weights; at each
epoch end, the digest of the weights just backed up. Notebook 04 kills the process with
SIGKILL in the middle of an epoch, starts it again and checks that it continued from
the last backup. Ends with one ``infra.process.report(...)`` line.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    from utils import training  # numpy only: TensorFlow is imported after the arguments are read

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backup-dir", required=True)
    parser.add_argument("--data", default="smoke")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--batch-per-replica", type=int, default=32)
    parser.add_argument("--slow", type=float, default=0.0, help="sleep this long after each batch")
    training.add_pause_option(parser)
    args = parser.parse_args()

    import tensorflow as tf

    from infra import devices
    from utils.devices import plan_devices, strategy_devices

    # extra code – the course's device plan: --replicas logical CPUs, 2 logical GPUs on one GPU, or the GPUs
    devices.apply_plan(plan_devices(devices.detect_gpus(), args.replicas))
    import keras

    from infra.process import report
    from quickdraw.arrays import doodle_arrays
    from utils.models import build_cnn
    from utils.training import weights_digest

    keras.utils.set_random_seed(42)
    strategy = tf.distribute.MirroredStrategy(strategy_devices())
    data = doodle_arrays(args.data, "train", limit=args.limit)
    global_batch = args.batch_per_replica * strategy.num_replicas_in_sync
    dataset = (
        tf.data.Dataset.from_tensor_slices((data.x, data.y))
        .shuffle(len(data), seed=42)
        .batch(global_batch, drop_remainder=True)
        .repeat()  # one iterator for the whole fit (notebook 04 §5)
    )
    steps_per_epoch = len(data) // global_batch
    with strategy.scope():
        model = build_cnn(data.num_classes)
        model.compile(
            optimizer=keras.optimizers.Adam(1e-3),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )

    epochs_run: list[int] = []

    class Progress(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):  # runs after BackupAndRestore's
            step = int(self.model.optimizer.iterations.numpy())
            print(
                f"start epoch {self.model._initial_epoch or 0} step {step} "  # noqa: SLF001
                f"weights {weights_digest(self.model.get_weights())}",
                flush=True,
            )

        def on_epoch_begin(self, epoch, logs=None):
            epochs_run.append(int(epoch))

        def on_train_batch_end(self, batch, logs=None):
            line = f"epoch {epochs_run[-1]} batch {batch}"
            print(line, flush=True)
            if args.slow:
                time.sleep(args.slow)
            training.pause_after(line, args.pause)

        def on_epoch_end(self, epoch, logs=None):
            print(
                f"backed up epoch {epoch} step {int(self.model.optimizer.iterations.numpy())} "
                f"weights {weights_digest(self.model.get_weights())}",
                flush=True,
            )

    backup = keras.callbacks.BackupAndRestore(backup_dir=args.backup_dir)
    history = model.fit(
        dataset,
        epochs=args.epochs,
        steps_per_epoch=steps_per_epoch,
        callbacks=[backup, Progress()],
        verbose=0,
    )
    report(
        epochs_run=epochs_run,
        steps_per_epoch=steps_per_epoch,
        final_step=int(model.optimizer.iterations.numpy()),
        accuracy=[float(a) for a in history.history["accuracy"]],
    )


if __name__ == "__main__":
    main()
