"""A tf.data service for notebook 08 §6 and ``benchmarks/bench_performance.py``: a dispatcher
and workers as servers in this process, always stopped."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def tf_data_service(workers: int = 1) -> Iterator[str]:
    """Start a tf.data service dispatcher and ``workers`` workers here; yield its address.

    The servers run in this process on free localhost ports (port 0) with no work
    directory (nothing written to disk); all of them are stopped when the ``with`` block
    ends, also after an error or Ctrl-C. Use the address with
    ``dataset.apply(tf.data.experimental.service.distribute("parallel_epochs", address))``.
    Used in notebook 08 §6 and ``benchmarks/bench_performance.py``.
    """
    import tensorflow as tf

    service = tf.data.experimental.service
    dispatcher = service.DispatchServer(service.DispatcherConfig(port=0, fault_tolerant_mode=False))
    started: list[Any] = [dispatcher]
    try:
        address = dispatcher.target.split("://")[-1]
        for _ in range(workers):
            started.append(service.WorkerServer(service.WorkerConfig(dispatcher_address=address, port=0)))
        yield dispatcher.target
    finally:
        for server in reversed(started):  # workers first, then the dispatcher
            server._stop()
