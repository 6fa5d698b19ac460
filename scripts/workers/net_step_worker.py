"""One worker of notebook 10's two-host training step, measured at several link rates in one run.

Start one copy per host with its own ``TF_CONFIG`` (notebook 10: ``run_workers`` /
``LocalCluster`` with ``network=net``)::

    python scripts/workers/net_step_worker.py --gate-dir /tmp/gate --phases 3

The doodle CNN of notebooks 04/05 (``utils.models.build_cnn``) trains with a custom loop
under ``MultiWorkerMirroredStrategy`` (RING all-reduce). Before each phase worker 0 says
"ready" through ``infra.netns.Gate`` (with the last phase's numbers) and waits for "go":
meanwhile the notebook sets the link rate. In each phase both workers measure

- ``t1``: the compute of one step (forward, backward, gradients) with no communication,
- ``step``: one real training step (compute + all-reduce of the gradients + update), and
  ``comm``: the median of step minus compute, both measured back to back,
- ``t2``: an all-reduce of ``--allreduce-bytes`` bytes, and ``tiny``: of 4 bytes (latency),
- the bytes each host's card sent during the training steps (kernel counters),

each as the median of several repetitions. Worker 0 hands them over through the gate.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gate-dir", required=True)
    parser.add_argument("--phases", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8, help="timed steps per phase")
    parser.add_argument("--allreduce-bytes", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3, help="timed all-reduces per phase")
    parser.add_argument("--batch-per-replica", type=int, default=64)
    parser.add_argument("--image-size", type=int, default=28)
    args = parser.parse_args()

    import keras
    import numpy as np
    import tensorflow as tf

    from infra.devices import configure_worker
    from infra.netns import Gate, cluster_link_bytes
    from infra.process import report
    from utils.models import build_cnn

    index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    configure_worker()  # extra code – the GPU (or CPU) infra.cluster assigned, before TF starts

    # --- the distributed lines ---------------------------------------------------------------
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING
    )
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    global_batch = args.batch_per_replica * strategy.num_replicas_in_sync
    with strategy.scope():
        model = build_cnn(10, args.image_size)
        optimizer = keras.optimizers.SGD(0.01)
        optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

    def gradients(x, y):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(
                loss_fn(y, model(x, training=True)), global_batch_size=global_batch
            )
        return loss, tape.gradient(loss, model.trainable_variables)

    @tf.function
    def train_step(x, y):  # compute, all-reduce of the gradients, update
        def replica_step(x, y):
            loss, grads = gradients(x, y)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss

        return strategy.run(replica_step, args=(x, y))

    # -----------------------------------------------------------------------------------------
    @tf.function
    def compute_only(x, y):  # the same compute, nothing sent: t1
        return strategy.run(lambda x, y: tf.linalg.global_norm(gradients(x, y)[1]), args=(x, y))

    big = tf.fill([args.allreduce_bytes // 4], 1.0)
    tiny = tf.ones([1])

    @tf.function
    def all_reduce_big():
        return strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("sum", big))

    @tf.function
    def all_reduce_tiny():
        return strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("sum", tiny))

    rng = np.random.default_rng(index)
    x = tf.constant(
        rng.random((args.batch_per_replica, args.image_size, args.image_size, 1), dtype="float32")
    )
    y = tf.constant(rng.integers(0, 10, args.batch_per_replica))
    grad_bytes = sum(int(np.prod(v.shape)) * 4 for v in model.trainable_variables)

    def median_seconds(fn, repeats):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            out = fn()
            tf.nest.map_structure(lambda t: t.numpy(), out)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    for fn in (lambda: train_step(x, y), lambda: compute_only(x, y), all_reduce_big, all_reduce_tiny):
        fn()  # warm-up: tracing, collective groups
    gate = Gate(args.gate_dir)
    results = []
    for phase in range(args.phases):
        all_reduce_tiny()  # barrier
        if index == 0:
            gate.ready(phase, {"grad_bytes": grad_bytes, "phases": results})
            gate.wait_go(phase)
        all_reduce_tiny()  # barrier: worker 1 waits here while the link changes
        row: dict = {"phase": phase}
        t1s, steps, sent = [], [], []
        for _ in range(args.steps):  # alternate, so that both see the same load on the cores
            t1s.append(median_seconds(lambda: compute_only(x, y), 1))
            all_reduce_tiny()
            before = cluster_link_bytes() if index == 0 else None
            steps.append(median_seconds(lambda: train_step(x, y), 1))
            all_reduce_tiny()
            after = cluster_link_bytes() if index == 0 else None
            if before:
                sent.append({h: after[h].sent - before[h].sent for h in before})
        row["t1"] = statistics.median(t1s)
        row["step"] = statistics.median(steps)
        row["comm"] = statistics.median(s - t for s, t in zip(steps, t1s, strict=True))  # step - compute
        if sent:  # bytes of one step (the barrier's few hundred bytes included)
            row["sent_per_step"] = {h: statistics.median(d[h] for d in sent) for h in sent[0]}
        row["t2"] = median_seconds(all_reduce_big, args.repeats)
        row["tiny"] = median_seconds(all_reduce_tiny, args.repeats * 3)
        results.append(row)
        print(f"worker:{index} phase {phase}: " + json.dumps(row), flush=True)
    if index == 0:
        gate.ready(args.phases, {"grad_bytes": grad_bytes, "phases": results})
    report(
        task=f"worker:{index}",
        replicas=strategy.num_replicas_in_sync,
        grad_bytes=grad_bytes,
        allreduce_bytes=int(big.shape[0]) * 4,
        phases=results,
    )


if __name__ == "__main__":
    main()
