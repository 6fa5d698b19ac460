"""A minimal MultiWorkerMirroredStrategy training script: the same file runs on every machine.

Used by ``docs/cluster.md`` (several machines, Slurm, Kubernetes) and by ``tests/test_cluster.py``
(two local workers through ``infra.cluster``); notebook 02 teaches the same steps in a cell.

Who this process is comes from the environment:

- ``TF_CONFIG`` (set by hand, by ``python -m utils.tfconfig``, by ``infra.cluster.LocalCluster``
  or by the Kubeflow TFJob operator), or
- ``--slurm``: Slurm's variables (``SLURM_PROCID``, ``SLURM_STEP_NODELIST``, ...) through
  ``tf.distribute.cluster_resolver.SlurmClusterResolver``.

Every worker trains a small regression model with a custom loop (Keras 3 ``fit`` does not
work under MultiWorkerMirroredStrategy, keras-team/keras#20585), prints its loss, and prints a
SHA-256 of its final weights: identical on all workers. Only the chief writes ``--out``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="training steps (default: 20)")
    parser.add_argument("--batch-per-replica", type=int, default=32)
    parser.add_argument(
        "--implementation",
        choices=["AUTO", "RING", "NCCL"],
        default="AUTO",
        help="collective implementation (default: AUTO)",
    )
    parser.add_argument("--slurm", action="store_true", help="read the cluster from Slurm's variables")
    parser.add_argument("--port-base", type=int, default=8888, help="first port per node with --slurm")
    parser.add_argument(
        "--gpus-per-node",
        type=int,
        default=None,
        help="with --slurm: GPUs per node (default: ask nvidia-smi, which CPU-only nodes lack)",
    )
    parser.add_argument("--out", type=Path, default=None, help="the chief writes a JSON summary here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import numpy as np
    import tensorflow as tf

    resolver = None
    if args.slurm:
        # Reads SLURM_PROCID, SLURM_STEP_NODELIST, ...; sets CUDA_VISIBLE_DEVICES per task.
        resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
            port_base=args.port_base, gpus_per_node=args.gpus_per_node
        )
    elif "TF_CONFIG" not in os.environ:
        print("no TF_CONFIG: running as a single worker", file=sys.stderr)
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=getattr(tf.distribute.experimental.CommunicationImplementation, args.implementation)
    )
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=resolver, communication_options=options
    )
    resolver = strategy.cluster_resolver
    task_type, task_id = resolver.task_type or "worker", resolver.task_id or 0
    is_chief = task_type == "chief" or (task_type == "worker" and task_id == 0)
    print(
        f"{task_type} {task_id}: {strategy.num_replicas_in_sync} replicas in sync, "
        f"cluster {json.dumps(resolver.cluster_spec().as_dict())}",
        flush=True,
    )

    import keras

    keras.utils.set_random_seed(42)
    global_batch = args.batch_per_replica * strategy.num_replicas_in_sync
    rng = np.random.default_rng(task_id)  # each worker reads different data
    x = rng.normal(size=(global_batch * args.steps, 8)).astype("float32")
    y = x @ np.arange(1, 9, dtype="float32")[:, None]
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
    with strategy.scope():
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
        optimizer = keras.optimizers.SGD(0.05)
        optimizer.build(model.trainable_variables)  # needed with 2+ replicas in Keras 3

    @tf.function
    def train_step(batch):
        def step(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(model(xb) - yb)) / global_batch
            optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
            return loss

        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(step, args=batch), axis=None)

    losses = [float(train_step(batch)) for batch in strategy.experimental_distribute_dataset(dataset)]
    weights = np.concatenate([w.numpy().ravel() for w in model.weights])
    digest = hashlib.sha256(weights.tobytes()).hexdigest()
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; weights sha256 {digest}", flush=True)
    try:
        from infra.process import report

        report(task=f"{task_type}:{task_id}", losses=losses, sha256=digest)
    except ImportError:  # run outside the course: the printed lines are enough
        pass
    if is_chief and args.out is not None:
        args.out.write_text(json.dumps({"losses": losses, "sha256": digest}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
