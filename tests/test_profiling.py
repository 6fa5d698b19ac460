"""utils.profiling: the profiler sees what ran, and only that."""

from __future__ import annotations

import tensorflow as tf

from utils import profiling


def test_executed_ops_counts_the_matmuls_that_ran() -> None:
    a = tf.ones([4, 4])

    @tf.function
    def two(x):
        return (x @ x) @ x

    @tf.function
    def none(x):
        return x + 1.0

    assert profiling.count_ops(profiling.executed_ops(two, a), "MatMul") == 2
    assert profiling.count_ops(profiling.executed_ops(none, a), "MatMul") == 0
