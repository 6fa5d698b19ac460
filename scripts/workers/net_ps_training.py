"""Parameter-server training on notebook 10's virtual network: every task runs this program.

Start one copy per task with its own ``TF_CONFIG`` (a ``chief``, ``N`` workers, one ``ps``;
notebook 10 starts them with ``infra.cluster.run_workers(..., network=net)``)::

    python scripts/workers/net_ps_training.py --bytes 2000000 --steps 3 --done-file /tmp/done

Workers and the parameter server serve (``tf.distribute.Server``) until the chief writes
``--done-file`` (a file all hosts see); the chief is the coordinator: ``ParameterServerStrategy`` + ``ClusterCoordinator``. The model is one
float32 variable of ``--bytes`` bytes on the parameter server, trained with plain SGD on a
quadratic loss: in each step a worker reads the variable (M bytes from the PS) and sends its
gradient back (M bytes to the PS), where the update runs. After a warm-up round, the chief
schedules ``--steps`` rounds of one step per worker and reads every host's kernel byte
counters before and after (``infra.netns.cluster_link_bytes``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=2_000_000, help="size M of the model")
    parser.add_argument("--steps", type=int, default=3, help="measured rounds (one step per worker)")
    parser.add_argument("--done-file", required=True, help="the chief creates it when it is done")
    args = parser.parse_args()

    import tensorflow as tf

    from infra.devices import configure_worker

    configure_worker()  # extra code – the GPU (or CPU) infra.cluster assigned, before TF starts

    # --- the distributed lines (every task) --------------------------------------------------
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("worker", "ps"):  # workers and parameter servers just serve
        os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")
        server = tf.distribute.Server(  # starts serving at once
            resolver.cluster_spec(),
            job_name=resolver.task_type,
            task_index=resolver.task_id,
            config=tf.compat.v1.ConfigProto(inter_op_parallelism_threads=4),
            protocol="grpc",
        )
        print(f"{resolver.task_type}:{resolver.task_id} serving at {server.target}", flush=True)
        while not os.path.exists(args.done_file):  # serve until the chief is done
            time.sleep(0.2)
        os._exit(0)  # a tf.distribute.Server cannot be stopped; leave without waiting for it
    # -----------------------------------------------------------------------------------------
    try:
        train(args, tf, resolver)
    finally:
        Path(args.done_file).touch()


def train(args: argparse.Namespace, tf, resolver) -> None:
    """The coordinator's program (the chief)."""
    from infra.netns import cluster_link_bytes
    from infra.process import report

    # --- the distributed lines ---------------------------------------------------------------
    strategy = tf.distribute.ParameterServerStrategy(resolver)  # the chief coordinates
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        w = tf.Variable(tf.zeros([args.bytes // 4]), name="w")  # lives on the parameter server

    @tf.function
    def train_step():
        def replica_fn():
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(w - 1.0))  # reads w: M bytes, PS -> worker
            grad = tape.gradient(loss, w)
            w.assign_sub(0.01 * grad)  # the update runs on the PS: M bytes, worker -> PS
            return loss

        return strategy.run(replica_fn)

    # -----------------------------------------------------------------------------------------
    n_workers = len(resolver.cluster_spec().as_dict()["worker"])
    for _ in range(n_workers):  # warm-up: function shipped to every worker
        coordinator.schedule(train_step)
    coordinator.join()
    before = cluster_link_bytes()
    start = time.perf_counter()
    for _ in range(args.steps * n_workers):
        coordinator.schedule(train_step)
    coordinator.join()
    seconds = time.perf_counter() - start
    after = cluster_link_bytes()
    report(
        task="chief:0",
        workers=n_workers,
        nbytes=int(w.shape[0]) * 4,
        steps=args.steps,
        seconds=seconds,
        weight=float(w[0].numpy()),  # moved from 0 towards the optimum 1
        sent={h: after[h].sent - before[h].sent for h in before} if before else None,
        received={h: after[h].received - before[h].received for h in before} if before else None,
    )


if __name__ == "__main__":
    main()
