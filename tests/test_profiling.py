"""utils.profiling: the profiler sees what ran, and only that."""

from __future__ import annotations

import tempfile

import pytest
import tensorflow as tf

from utils import config, profiling

NOTEBOOK_08 = config.PROJECT_ROOT / "notebooks" / "08_performance.ipynb"


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


# ---- the profiler is stopped afterwards (notebook 08 once asserted it at its end) ----------
def _profiler_running() -> bool:
    """True if a profiling session runs in this process (stopping it is then the only way to tell)."""
    try:
        tf.profiler.experimental.stop()  # raises if no profiling session is running
    except tf.errors.UnavailableError:
        return False
    return True


def test_the_profiler_is_stopped_after_executed_ops_also_after_an_error() -> None:
    import psutil

    a = tf.ones([2, 2])
    children = psutil.Process().children(recursive=True)

    def failing(x):
        raise RuntimeError("a step that fails while traced")

    profiling.executed_ops(tf.function(lambda x: x @ x), a, max_sessions=1)
    assert not _profiler_running()
    with pytest.raises(RuntimeError, match="fails while traced"):
        profiling.executed_ops(failing, a)
    assert not _profiler_running()
    assert psutil.Process().children(recursive=True) == children  # the profiler starts no process
    tf.profiler.experimental.start(tempfile.mkdtemp(prefix="profile-"))  # the control: it can tell
    assert _profiler_running() and not _profiler_running()


def test_notebook_08s_profile_cell_stops_the_profiler_when_a_step_fails(tmp_path) -> None:
    """Notebook 08 §1's cell traces steps between start and stop; an error (or Ctrl-C) in a step
    still stops the profiler (``finally``), or the next start in the kernel would fail."""
    import time

    import nbformat

    import utils

    cells = [c.source for c in nbformat.read(NOTEBOOK_08, as_version=4).cells if c.cell_type == "code"]
    [profile_cell] = [c for c in cells if "tf.profiler.experimental.start(" in c]
    steps = []

    def train_step(iterator):
        steps.append(len(steps))
        if len(steps) == 3:
            raise KeyboardInterrupt  # what Jupyter's stop button raises inside the loop
        return tf.constant(0.0)

    namespace = {
        "tf": tf,
        "time": time,
        "utils": utils,
        "RUN_DIR": tmp_path,
        "iterator": None,
        "train_step": train_step,
    }
    with pytest.raises(KeyboardInterrupt):
        exec(profile_cell, namespace)  # noqa: S102 - the notebook's own code
    assert steps == [0, 1, 2] and len(namespace["python_ms"]) == 2
    assert not _profiler_running()
    steps.clear()
    namespace["train_step"] = lambda iterator: steps.append(len(steps)) or tf.constant(0.0)
    exec(profile_cell, namespace)  # noqa: S102 - a second run in the same kernel starts again
    assert len(steps) == namespace["PROFILE_STEPS"] and not _profiler_running()
    assert list((tmp_path / "profile").rglob("*.xplane.pb")), "the trace was written"
