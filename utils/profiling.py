"""Which operations a function really executed, read from TensorFlow's profiler trace.

Notebook 12 counts with it: the matrix multiplications `tf.recompute_grad` adds (§2) and the
all-reduces DTensor inserts (§4), which no Python graph shows (DTensor adds them at run time).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any

import tensorflow as tf
from tensorflow.experimental import dtensor

from utils.perf import trace_events, trace_spaces


def wait_for(*outputs: Any) -> None:
    """Fetch every result (a DTensor shard by shard), so the operations behind it have run."""
    for t in tf.nest.flatten(outputs, expand_composites=True):
        for part in dtensor.unpack(t) if dtensor.is_dtensor(t) else [t]:
            part.numpy()


def _trace_names(logdir: str) -> set[str]:
    return {name for space in trace_spaces(logdir) for _, name, *_ in trace_events(space)}


def executed_ops(fn: Callable[..., Any], *args: Any, max_sessions: int = 10) -> set[str]:
    """Names (``node:type``) of the operations that calls of ``fn(*args)`` executed.

    ``fn`` runs twice per profiler session, its results fetched before the trace stops (eager
    dispatch is asynchronous); names are pooled until two sessions in a row add none, so a name
    may be missed but is never invented.
    """
    names: set[str] = set()
    quiet = 0
    for _ in range(max_sessions):
        with tempfile.TemporaryDirectory(prefix="profile-") as logdir:
            tf.profiler.experimental.start(logdir)
            try:
                wait_for(fn(*args), fn(*args))
            finally:
                tf.profiler.experimental.stop()
            found = _trace_names(logdir)
        quiet = quiet + 1 if found <= names else 0
        names |= found
        if quiet == 2:
            break
    return names


def count_ops(names: set[str], op_type: str) -> int:
    """How many distinct nodes of ``names`` (from :func:`executed_ops`) have a type containing
    ``op_type`` (``"MatMul"`` also counts ``BatchMatMulV2``)."""
    return sum(op_type in name.rpartition(":")[2] for name in names)
