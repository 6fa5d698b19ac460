"""A tf.data service for notebook 08 §6 and ``benchmarks/bench_performance.py``: a dispatcher
and workers as servers in this process, always stopped."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def tf_data_service(workers: int = 1) -> Iterator[str]:
    """Start a dispatcher and ``workers`` workers here (free ports, nothing on disk); yield its address.

    All of them stop when the ``with`` block ends, also after an error or Ctrl-C. Use the address
    with ``dataset.apply(tf.data.experimental.service.distribute("parallel_epochs", address))``.
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
