"""One worker of the auto-shard demo (notebook 04, section "Datasets and sharding").

Run on two localhost workers by ``infra.cluster.run_workers``. Each worker distributes the
same small datasets under ``MultiWorkerMirroredStrategy`` with each ``AutoShardPolicy`` and
reports which elements it received, or the error it got: ``FILE`` on a dataset that reads
no files, and ``AUTO`` on a one-file TFRecord dataset with two workers (the message
students meet when they have fewer files than workers).
"""

from __future__ import annotations

import tempfile


def _elements(strategy, dataset) -> list:
    seen = []
    for batch in strategy.experimental_distribute_dataset(dataset):
        for local in strategy.experimental_local_results(batch):
            seen += [v.decode() if isinstance(v, bytes) else int(v) for v in local.numpy()]
    return seen


def main() -> None:
    import tensorflow as tf

    from infra.devices import configure_worker
    from infra.process import report

    worker = configure_worker()  # extra code – the GPU (or CPU) infra.cluster assigned, before TF starts
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=worker.collective
        )
    )
    policies = tf.data.experimental.AutoShardPolicy
    out: dict[str, object] = {"workers": strategy.cluster_resolver.cluster_spec().num_tasks("worker")}
    for name in ("AUTO", "DATA", "OFF", "FILE"):
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = getattr(policies, name)
        dataset = tf.data.Dataset.range(16).batch(4).with_options(options)  # global batch 4
        try:
            out[name] = _elements(strategy, dataset)
        except Exception as err:  # noqa: BLE001 - the error is what we report
            out[name] = f"{type(err).__name__}: {str(err).splitlines()[0][:400]}"
    with tempfile.TemporaryDirectory() as folder:  # one TFRecord file, two workers
        with tf.io.TFRecordWriter(f"{folder}/part-0.tfrecord") as writer:
            for i in range(8):
                writer.write(str(i).encode())
        files = tf.data.Dataset.list_files(f"{folder}/*.tfrecord", shuffle=False)
        dataset = files.interleave(tf.data.TFRecordDataset).batch(2)  # AUTO by default
        try:
            out["one_file_AUTO"] = _elements(strategy, dataset)
        except Exception as err:  # noqa: BLE001
            out["one_file_AUTO"] = f"{type(err).__name__}: {' '.join(str(err).split())[:600]}"
    report(**out)


if __name__ == "__main__":
    main()
