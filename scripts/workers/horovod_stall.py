"""A rank that stalls: uneven shards give the ranks different numbers of all-reduces (notebook 07).

Run it with Horovod's launcher::

    horovodrun -np 2 -H localhost:2 --gloo python scripts/workers/horovod_stall.py --examples 5
    horovodrun -np 2 -H localhost:2 --gloo python scripts/workers/horovod_stall.py --examples 5 --equal-steps

Each rank takes its shard of ``--examples`` numbers (``dataset.shard``) and all-reduces one
"gradient" per batch, then the epoch's loss. With 5 examples on 2 ranks the shards hold 3 and
2 examples: rank 0 submits a third all-reduce "gradient" while rank 1 has moved on to
"epoch_loss", and both wait for each other forever. ``--equal-steps`` is the fix: every rank
takes ``examples // size // batch`` steps. Around each collective a watchdog
(:func:`infra.watchdog.exit_if_stuck`) prints where the rank waits and ends it after
``--patience`` seconds, so the job fails instead of hanging.
"""

from __future__ import annotations

import argparse
import os

from infra.watchdog import exit_if_stuck  # extra code – ends a rank that waits too long


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=5, help="numbers to share among the ranks")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--equal-steps", action="store_true", help="the fix: the same steps on every rank")
    parser.add_argument("--patience", type=float, default=5.0, help="seconds a rank may wait in a collective")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import horovod.tensorflow as hvd
    import tensorflow as tf

    hvd.init()
    w = tf.Variable(tf.fill([args.batch_size], float(hvd.rank())))
    hvd.broadcast_variables([w], root_rank=0)  # all ranks meet here: the steps below start together

    data = tf.data.Dataset.range(args.examples).shard(hvd.size(), hvd.rank())
    data = data.batch(args.batch_size, drop_remainder=True)
    if args.equal_steps:  # the fix: every rank takes the same number of steps
        data = data.take(args.examples // hvd.size() // args.batch_size)

    @tf.function
    def train_step(batch):
        gradient = tf.cast(batch, tf.float32) - w  # stands in for a real gradient
        w.assign_add(0.1 * hvd.allreduce(gradient, op=hvd.Average, name="gradient"))

    @tf.function
    def epoch_end(loss):
        return hvd.allreduce(loss, op=hvd.Average, name="epoch_loss")

    steps = 0
    for batch in data:
        steps += 1
        with exit_if_stuck(args.patience, f"all-reduce 'gradient' of step {steps}"):
            train_step(batch)
    with exit_if_stuck(args.patience, "all-reduce 'epoch_loss'"):
        loss = epoch_end(tf.reduce_mean(tf.square(w)))
    print(f"rank {hvd.rank()}/{hvd.size()}: {steps} steps, epoch loss {float(loss):.4f}", flush=True)


if __name__ == "__main__":
    main()
