"""utils.perf: the input-bound check fails on a slow pipeline, the trace reader's arithmetic, tf.data service."""

from __future__ import annotations

import time

import psutil
import pytest

from infra.cluster import port_is_free
from infra.data_service import tf_data_service
from utils import perf

SLEEP = 0.03  # seconds: far longer than either fast side takes on any machine


def test_slow_pipeline_is_input_bound_and_fast_one_is_not() -> None:
    import tensorflow as tf

    def slow(x: tf.Tensor) -> tf.Tensor:
        return tf.py_function(lambda v: (time.sleep(SLEEP), v)[1], [x], tf.float32)

    batch = tf.ones([8, 4])
    fast_pipeline = tf.data.Dataset.from_tensors(batch).repeat()
    slow_pipeline = fast_pipeline.map(slow)  # a deliberately slow map: one sleep per batch

    @tf.function
    def fast_step(b: tf.Tensor) -> tf.Tensor:
        return tf.reduce_sum(b)

    def slow_step(b: tf.Tensor) -> tf.Tensor:
        time.sleep(SLEEP)
        return fast_step(b)

    slow_input = perf.check_input_bound(slow_pipeline, fast_step, batch, batches=5, batch_size=8)
    assert slow_input.input_bound and slow_input.headroom < 1, slow_input
    assert "INPUT-BOUND" in str(slow_input) and "examples/s" in str(slow_input)
    fast_input = perf.check_input_bound(fast_pipeline, slow_step, batch, batches=5)
    assert not fast_input.input_bound and fast_input.headroom > 1, fast_input
    assert "not input-bound" in str(fast_input)
    assert perf.pipeline_rate(slow_pipeline, batches=5) < 1 / SLEEP < perf.pipeline_rate(fast_pipeline, batches=5)


def test_side_by_side_takes_turns() -> None:
    calls: list[str] = []
    ticks = iter(range(100))
    fns = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    times = perf.side_by_side(fns, repeats=3, warmup=1, clock=lambda: float(next(ticks)))
    assert calls == ["a", "b"] * 4  # one warm-up round, then three timed rounds in turns
    assert times == {"a": [1.0] * 3, "b": [1.0] * 3}


def _space(events: list[tuple[str, str, int, int, dict[str, int]]]):
    """An XSpace with one host plane; events as (line, name, start µs, duration µs, int stats)."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add(name="/host:CPU")
    ids: dict[str, int] = {}

    def metadata(table, name: str) -> int:
        if name not in ids:
            ids[name] = len(ids) + 1
            table[ids[name]].id = ids[name]
            table[ids[name]].name = name
        return ids[name]

    lines: dict[str, object] = {}
    for line_name, name, start, duration, stats in events:
        if line_name not in lines:
            lines[line_name] = plane.lines.add(name=line_name, timestamp_ns=1000)
        ev = lines[line_name].events.add(metadata_id=metadata(plane.event_metadata, name))
        ev.offset_ps, ev.duration_ps = start * 1_000_000, duration * 1_000_000
        for key, value in stats.items():
            ev.stats.add(metadata_id=metadata(plane.stat_metadata, key), int64_value=value)
    return space


def test_read_trace_splits_a_step_into_disjoint_parts(tmp_path) -> None:
    events = [
        ("python", "train", 0, 10_000, {"step_num": 0}),
        ("python", "train", 10_000, 5_000, {"step_num": 1}),
        # step 0: input 0-1 ms, compute 1-6 ms on two replicas at once (counted once), all-reduce
        # 5-7 ms on both replicas (overlapping compute by 1 ms: all-reduce wins), nothing 7-10 ms
        ("get_next", "IteratorGetNextOp::DoCompute", 0, 1_000, {}),
        ("compute/1", "model/conv:Conv2D", 1_000, 5_000, {}),
        ("compute/2", "replica_1/model/conv:Conv2D", 1_500, 4_000, {}),
        ("collective/1", "sgd/CollectiveReduceV2:CollectiveReduceV2", 5_000, 2_000, {"instance_key": 7}),
        ("collective/2", "sgd/CollectiveReduceV2_1:CollectiveReduceV2", 5_500, 1_000, {"instance_key": 7}),
        ("threads", "ThreadpoolListener::Record", 8_000, 1_000, {}),  # not an op: ignored
        # step 1: only compute, 2 ms
        ("compute/1", "model/dense:MatMul", 11_000, 2_000, {}),
    ]
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(_space(events).SerializeToString())
    first, second = perf.read_trace(tmp_path)
    assert (first.total, first.input, first.compute, first.allreduce, first.other) == pytest.approx((10, 1, 4, 2, 3))
    assert first.instances == {7: 2} and first.allreduce_events == 2
    assert first.spans == {7: [pytest.approx((5, 7)), pytest.approx((5.5, 6.5))]}
    assert first.covered == pytest.approx(0.7)
    assert (second.total, second.compute, second.allreduce, second.other) == pytest.approx((5, 2, 0, 3))
    assert second.instances == {}


def test_rendezvous_splits_waiting_from_exchange() -> None:
    # replica 0 enters at 1 ms and waits; replica 1 enters at 4 ms; both leave at 5 ms
    together = perf.rendezvous([(1.0, 5.0), (4.0, 5.0)])
    assert (together.wait, together.exchange, together.synchronised) == (3.0, 1.0, True)
    # events that cover only launching the op: replica 0's ends before replica 1 enters
    launched = perf.rendezvous([(1.0, 1.1), (4.0, 4.1)])
    assert not launched.synchronised and launched.wait == 3.0
    assert perf.rendezvous([(1.0, 3.95), (4.0, 4.1)], slack=0.1).synchronised
    with pytest.raises(ValueError, match="without events"):
        perf.rendezvous([])


def test_read_trace_without_a_profile_says_so(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="xplane"):
        perf.read_trace(tmp_path)


def _listening_ports() -> set[int]:
    return {c.laddr.port for c in psutil.Process().net_connections("tcp") if c.status == psutil.CONN_LISTEN}


def test_tf_data_service_serves_and_stops() -> None:
    import tensorflow as tf

    before = _listening_ports()
    with tf_data_service(workers=1) as target:
        port = int(target.rsplit(":", 1)[1])
        ds = tf.data.Dataset.range(10).apply(
            tf.data.experimental.service.distribute("distributed_epoch", target)
        )
        assert sorted(int(v) for v in ds) == list(range(10))
        assert port in _listening_ports()
    after = _listening_ports()
    assert port not in after and after == before  # the dispatcher and the worker were stopped


def test_tf_data_service_stops_when_the_cell_is_interrupted() -> None:
    """Jupyter's stop button raises KeyboardInterrupt inside the block: the servers still stop."""

    before = _listening_ports()
    with pytest.raises(KeyboardInterrupt):
        with tf_data_service(workers=2) as target:
            port = int(target.rsplit(":", 1)[1])
            assert port in _listening_ports()
            raise KeyboardInterrupt  # what an interrupted cell raises here
    after = _listening_ports()
    assert port not in after and after == before


@pytest.mark.slow
def test_a_data_worker_in_another_process_serves_and_nothing_is_left(tmp_path) -> None:
    """Notebook 08 §6: its program ``data_worker.py`` started with ``process.start_child`` beside a
    dispatcher of ``tf_data_service(workers=0)``, stopped with ``process.stop_child``: no child
    process is left and no port open (the notebook once asserted both at its end)."""
    import sys

    import nbformat
    import tensorflow as tf

    from infra import process
    from utils import config

    notebook = config.PROJECT_ROOT / "notebooks" / "08_performance.ipynb"
    cells = [c.source for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
    [source] = [c for c in cells if c.startswith("%%writefile programs/data_worker.py\n")]
    program = tmp_path / "data_worker.py"
    program.write_text(source.split("\n", 1)[1])
    children, before = psutil.Process().children(recursive=True), _listening_ports()
    with tf_data_service(workers=0) as service:
        dispatcher_port = int(service.rsplit(":", 1)[1])
        worker = process.start_child([sys.executable, str(program), service.split("://")[-1]])
        try:
            assert worker.stdout.readline().strip() == "worker ready"
            worker_ports = {
                c.laddr.port
                for c in psutil.Process(worker.pid).net_connections("tcp")
                if c.status == psutil.CONN_LISTEN
            }
            ds = tf.data.Dataset.range(10).apply(
                tf.data.experimental.service.distribute("distributed_epoch", service)
            )
            assert sorted(int(v) for v in ds) == list(range(10))  # served by the other process
        finally:
            process.stop_child(worker)
    assert worker_ports and worker.poll() is not None
    assert psutil.Process().children(recursive=True) == children, "a child process was left"
    after = _listening_ports()
    assert dispatcher_port not in after and after == before
    assert all(port_is_free(p) for p in worker_ports), "the worker's port is still open"
