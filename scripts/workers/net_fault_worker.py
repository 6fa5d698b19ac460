"""One worker of notebook 10's network-fault demo: ``fit`` with ``BackupAndRestore`` every K steps.

Start one copy per host with its own ``TF_CONFIG`` and ``TF_USE_LEGACY_KERAS=1`` (Keras 2:
Keras 3's ``fit`` does not run under ``MultiWorkerMirroredStrategy``, see notebook 04)::

    TF_USE_LEGACY_KERAS=1 python scripts/workers/net_fault_worker.py --backup-dir /tmp/b \
        --epochs 2 --steps-per-epoch 20 --save-freq 5 --timeout 10

Every all-reduce has a timeout (``CommunicationOptions(timeout_seconds=...)``), so a worker
whose peer went silent fails with ``DeadlineExceededError`` instead of waiting forever;
``BackupAndRestore(save_freq=K)`` saves every K steps, so a restarted job resumes from the
last backup. ``--pause "worker:1 step S " P`` makes worker 1 wait P seconds after step S, so
that notebook 10 cuts the cable between two steps however busy the machine is: a cut just
after a backup made the survivor log the timeout and then hang in 2 of 17 tries (TF 2.21).
Each worker prints ``worker:I step S`` (S counts steps from the start of the job) after
every step, and ends with a ``infra.process.report`` line.
"""

from __future__ import annotations

import argparse
import json
import os
import time


def main() -> None:
    from utils import training  # numpy only: TensorFlow is imported after the arguments are read

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backup-dir", required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps-per-epoch", type=int, default=20)
    parser.add_argument("--save-freq", type=int, default=5, help="back up every K steps")
    parser.add_argument("--timeout", type=float, default=10.0, help="collective timeout (s)")
    parser.add_argument("--batch-per-replica", type=int, default=32)
    parser.add_argument("--slow", type=float, default=0.0, help="sleep this long after each step")
    training.add_pause_option(parser)  # keep SECONDS < --timeout
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf

    from infra.devices import configure_worker
    from infra.process import report

    keras = tf.keras  # Keras 2 (tf-keras) with TF_USE_LEGACY_KERAS=1
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    name = f"{task['type']}:{task['index']}"

    configure_worker()  # extra code – the GPU (or CPU) infra.cluster assigned, before TF starts

    # --- the distributed lines ---------------------------------------------------------------
    options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=args.timeout)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    with strategy.scope():
        model = keras.Sequential(
            [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)]
        )
        model.compile(
            optimizer=keras.optimizers.SGD(0.05),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    backup = keras.callbacks.BackupAndRestore(backup_dir=args.backup_dir, save_freq=args.save_freq)
    # -----------------------------------------------------------------------------------------

    rng = np.random.default_rng(0)
    global_batch = args.batch_per_replica * strategy.num_replicas_in_sync
    n = global_batch * args.steps_per_epoch
    x = rng.normal(size=(n, 32)).astype("float32")
    y = (x[:, :10].argmax(axis=1)).astype("int64")
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch, drop_remainder=True).repeat()
    steps_run: list[int] = []

    class Progress(keras.callbacks.Callback):
        """Print ``worker:I step S`` after every step (S counts from the start of the job)."""

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

        def on_train_batch_end(self, batch, logs=None):
            step = int(self.epoch) * args.steps_per_epoch + int(batch) + 1
            steps_run.append(step)
            line = f"{name} step {step} t={time.time():.3f}"
            print(line, flush=True)
            if args.slow:
                time.sleep(args.slow)
            training.pause_after(line, args.pause)  # a quiet moment between two steps: the cable cut

    model.fit(
        data,
        epochs=args.epochs,
        steps_per_epoch=args.steps_per_epoch,
        callbacks=[backup, Progress()],
        verbose=0,
    )
    report(
        task=name,
        first_step=steps_run[0] if steps_run else None,
        last_step=steps_run[-1] if steps_run else None,
        steps_run=len(steps_run),
    )


if __name__ == "__main__":
    main()
