"""One worker of notebook 10's measured all-reduce: MultiWorkerMirroredStrategy, ring, M bytes.

Start one copy per host with its own ``TF_CONFIG`` (notebook 10 starts them on a virtual
network, ``infra.cluster.run_workers(..., network=net)``)::

    python scripts/workers/net_allreduce_worker.py --bytes 4000000 --repeats 3

Each worker all-reduces a float32 tensor of ``--bytes`` bytes ``--repeats`` times with the
RING implementation, after one warm-up all-reduce (group set-up). Worker 0 reads every
host's kernel byte counters before and after the measured all-reduces
(``infra.netns.cluster_link_bytes``) and reports them with the time of each all-reduce.
"""

from __future__ import annotations

import argparse
import json
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=4_000_000, help="size M of the tensor")
    parser.add_argument("--repeats", type=int, default=3, help="measured all-reduces")
    parser.add_argument("--timeout", type=float, default=0, help="collective timeout (s), 0: none")
    args = parser.parse_args()

    import tensorflow as tf

    from infra.devices import configure_worker
    from infra.netns import cluster_link_bytes
    from infra.process import report

    configure_worker()  # extra code – the GPU (or CPU) infra.cluster assigned, before TF starts

    # --- the distributed lines ---------------------------------------------------------------
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING,
        timeout_seconds=args.timeout or None,
    )
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    task = json.loads(os.environ["TF_CONFIG"])["task"]

    values = tf.fill([args.bytes // 4], float(task["index"] + 1))  # float32: 4 bytes each

    @tf.function
    def all_reduce():
        return strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("sum", values))

    # -----------------------------------------------------------------------------------------
    n = strategy.num_replicas_in_sync

    @tf.function
    def barrier():
        return strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("sum", tf.ones([1])))

    all_reduce()  # warm-up: group and instance set-up, function tracing
    barrier()  # a barrier: every worker is here
    before = cluster_link_bytes() if task["index"] == 0 else None
    barrier()
    seconds = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        total = all_reduce()
        total.numpy()
        seconds.append(time.perf_counter() - start)
    barrier()  # everyone finished sending
    after = cluster_link_bytes() if task["index"] == 0 else None
    tiny_seconds = []  # a 4-byte all-reduce: the latency part of the cost model
    for _ in range(5):
        start = time.perf_counter()
        barrier().numpy()
        tiny_seconds.append(time.perf_counter() - start)
    expected = n * (n + 1) / 2
    report(
        task=f"worker:{task['index']}",
        replicas=n,
        nbytes=int(values.shape[0]) * 4,
        repeats=args.repeats,
        seconds=seconds,
        tiny_seconds=tiny_seconds,
        correct=bool(float(tf.reduce_max(tf.abs(total - expected))) == 0.0),
        sent={h: after[h].sent - before[h].sent for h in before} if before else None,
        received={h: after[h].received - before[h].received for h in before} if before else None,
    )


if __name__ == "__main__":
    main()
