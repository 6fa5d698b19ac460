"""Ring AllReduce and parameter-server simulations (utils.allreduce, notebook 01)."""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from utils.allreduce import (
    LINKS,
    CommStep,
    Transfer,
    chunk_bounds,
    parameter_server_allreduce,
    parameter_server_time,
    ring_allreduce,
    ring_allreduce_numpy,
    ring_allreduce_time,
    ring_initial_holdings,
)


def gradients(n: int, length: int, dtype: type = np.float64, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(length).astype(dtype) for _ in range(n)]


# ---------------------------------------------------------------- chunking


@pytest.mark.parametrize(("length", "n"), [(10, 5), (17, 5), (3, 5), (0, 3), (1, 1), (7, 2)])
def test_chunk_bounds_match_array_split(length: int, n: int) -> None:
    bounds = chunk_bounds(length, n)
    expected = [len(part) for part in np.array_split(np.arange(length), n)]
    assert [stop - start for start, stop in bounds] == expected
    assert bounds[0][0] == 0 and bounds[-1][1] == length
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))


@pytest.mark.parametrize("n", [0, -1, 1.5, True])
def test_chunk_bounds_rejects_bad_counts(n: object) -> None:
    with pytest.raises(ValueError, match="n_chunks"):
        chunk_bounds(10, n)  # type: ignore[arg-type]


def test_chunk_bounds_rejects_negative_length() -> None:
    with pytest.raises(ValueError, match="length"):
        chunk_bounds(-1, 2)


# ---------------------------------------------------------------- ring


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("length", [1, 4, 10, 17, 40])
def test_ring_result_is_exact_sum_on_every_node(n: int, length: int) -> None:
    grads = gradients(n, length)
    trace = ring_allreduce(grads)
    expected = np.sum(grads, axis=0)
    assert set(trace.outputs) == {f"gpu{i}" for i in range(n)}
    for out in trace.outputs.values():
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_ring_integers_are_exact_and_shape_kept() -> None:
    grads = [np.arange(12, dtype=np.int64).reshape(3, 4) * (i + 1) for i in range(4)]
    trace = ring_allreduce(grads)
    for out in trace.outputs.values():
        assert out.shape == (3, 4) and out.dtype == np.int64
        np.testing.assert_array_equal(out, np.arange(12).reshape(3, 4) * 10)


def test_ring_does_not_modify_inputs() -> None:
    grads = gradients(3, 9)
    before = [g.copy() for g in grads]
    ring_allreduce(grads)
    for g, b in zip(grads, before, strict=True):
        np.testing.assert_array_equal(g, b)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_ring_steps_and_traffic_when_divisible(n: int) -> None:
    length = 6 * n
    trace = ring_allreduce(gradients(n, length, np.float32))
    assert trace.num_steps == 2 * (n - 1)
    phases = [s.phase for s in trace.steps]
    assert phases == ["scatter-reduce"] * (n - 1) + ["all-gather"] * (n - 1)
    size = length * 4
    assert trace.gradient_nbytes == size
    for sent in trace.bytes_sent().values():
        assert sent == 2 * (n - 1) * size // n  # exactly 2(N−1)/N of the gradient
    assert trace.bytes_sent() == trace.bytes_received()
    # each node talks only to its right neighbour, once per step
    for step in trace.steps:
        assert len(step.transfers) == n
        for t in step.transfers:
            assert int(t.dst[3:]) == (int(t.src[3:]) + 1) % n


@pytest.mark.parametrize(("n", "length"), [(5, 17), (3, 10), (4, 2), (5, 3)])
def test_ring_traffic_with_uneven_chunks(n: int, length: int) -> None:
    trace = ring_allreduce(gradients(n, length, np.float32))
    sizes = [(b - a) * 4 for a, b in chunk_bounds(length, n)]
    sent = trace.bytes_sent()
    for i in range(n):
        # node i sends every chunk but (i+1) in scatter-reduce and every chunk but (i+2) in all-gather
        assert sent[f"gpu{i}"] == 2 * sum(sizes) - sizes[(i + 1) % n] - sizes[(i + 2) % n]
    assert sum(sent.values()) == 2 * (n - 1) * length * 4
    np.testing.assert_allclose(np.mean(list(sent.values())), 2 * (n - 1) / n * length * 4)


def test_ring_with_one_node_sends_nothing() -> None:
    grads = gradients(1, 5)
    trace = ring_allreduce(grads)
    assert trace.num_steps == 0
    assert trace.bytes_sent() == {"gpu0": 0}
    np.testing.assert_array_equal(trace.outputs["gpu0"], grads[0])
    assert trace.time(bandwidth=1e9, latency=1.0) == 0.0


def test_ring_holdings_follow_the_algorithm() -> None:
    n = 5
    trace = ring_allreduce(gradients(n, 10), record_holdings=True)
    initial = ring_initial_holdings(n)
    assert initial.shape == (n, n, n) and initial.sum() == n * n
    after_scatter = trace.steps[n - 2].holdings
    assert after_scatter is not None
    for i in range(n):
        complete = [c for c in range(n) if after_scatter[i, c].all()]
        assert complete == [(i + 1) % n]
    assert trace.steps[-1].holdings.all()  # type: ignore[union-attr]
    # counts grow by one per scatter-reduce step in the chunk that was received
    assert ring_allreduce(gradients(n, 10)).steps[0].holdings is None


def test_time_matches_closed_form_ring() -> None:
    n, length = 4, 1024
    trace = ring_allreduce(gradients(n, length, np.float32))
    for bandwidth, latency in [(1e9, 0.0), (1e9, 5e-6), (12.5e9, 1e-5)]:
        simulated = trace.time(bandwidth, latency)
        assert simulated == pytest.approx(ring_allreduce_time(length * 4, n, bandwidth, latency))


# ---------------------------------------------------------------- parameter server


@pytest.mark.parametrize("n", [1, 2, 5])
@pytest.mark.parametrize("servers", [1, 2, 3])
def test_parameter_server_sum_and_traffic(n: int, servers: int) -> None:
    length = 12
    grads = gradients(n, length, np.float32)
    trace = parameter_server_allreduce(grads, n_servers=servers)
    expected = np.sum(grads, axis=0)
    for i in range(n):
        np.testing.assert_allclose(trace.outputs[f"worker{i}"], expected, rtol=1e-5, atol=1e-6)
    assert trace.num_steps == 2
    size = length * 4
    sent, received = trace.bytes_sent(), trace.bytes_received()
    for i in range(n):
        assert sent[f"worker{i}"] == received[f"worker{i}"] == size
    assert sum(sent[f"ps{j}"] for j in range(servers)) == n * size
    if servers == 1:
        assert sent["ps0"] == received["ps0"] == n * size  # N gradients each way
    assert trace.time(1e9, 1e-6) == pytest.approx(parameter_server_time(size, n, 1e9, 1e-6, servers))


def test_parameter_server_uneven_shards() -> None:
    trace = parameter_server_allreduce(gradients(3, 7, np.float32), n_servers=2)
    received = trace.bytes_received()
    assert received["ps0"] == 3 * 4 * 4 and received["ps1"] == 3 * 3 * 4


# ---------------------------------------------------------------- bad arguments


@pytest.mark.parametrize("algorithm", [ring_allreduce, parameter_server_allreduce])
def test_bad_arguments_give_clear_errors(algorithm) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="at least one node"):
        algorithm([])
    with pytest.raises(ValueError, match="empty"):
        algorithm([np.zeros(0), np.zeros(0)])
    with pytest.raises(ValueError, match="one shape"):
        algorithm([np.zeros(3), np.zeros(4)])
    with pytest.raises(ValueError, match="one dtype"):
        algorithm([np.zeros(3, np.float32), np.zeros(3, np.float64)])
    with pytest.raises(TypeError, match="numbers"):
        algorithm([np.array(["a", "b"]), np.array(["c", "d"])])
    with pytest.raises(TypeError, match="one array per node"):
        algorithm(np.zeros((2, 3)))


def test_bad_server_count() -> None:
    with pytest.raises(ValueError, match="n_servers"):
        parameter_server_allreduce([np.ones(3)], n_servers=0)


@pytest.mark.parametrize(("bandwidth", "latency"), [(0, 0), (-1, 0), (1e9, -1), (float("nan"), 0)])
def test_bad_links(bandwidth: float, latency: float) -> None:
    with pytest.raises(ValueError):
        ring_allreduce_time(100, 2, bandwidth, latency)
    with pytest.raises(ValueError):
        parameter_server_time(100, 2, bandwidth, latency)
    with pytest.raises(ValueError):
        ring_allreduce([np.ones(4), np.ones(4)]).time(bandwidth, latency)


def test_closed_forms_reject_bad_sizes() -> None:
    with pytest.raises(ValueError, match="n must"):
        ring_allreduce_time(100, 0, 1e9)
    with pytest.raises(ValueError, match="nbytes"):
        parameter_server_time(-1, 2, 1e9)


# ---------------------------------------------------------------- cost model and links


def test_ring_beats_single_server_as_n_grows() -> None:
    size, bw = 100e6, 12.5e9
    ring = [ring_allreduce_time(size, n, bw) for n in range(2, 33)]
    ps = [parameter_server_time(size, n, bw) for n in range(2, 33)]
    assert max(ring) < 2 * size / bw  # bandwidth term bounded by 2·size/bandwidth
    assert all(r < p for r, p in zip(ring, ps, strict=True))
    assert ps[-1] / ps[0] == pytest.approx(32 / 2)  # linear in N


def test_busiest_bytes_counts_both_directions() -> None:
    step = CommStep("x", [Transfer("a", "c", 10, 0), Transfer("b", "c", 5, 0), Transfer("c", "a", 3, 0)])
    assert step.busiest_bytes() == 15
    assert CommStep("empty").busiest_bytes() == 0


def test_links_are_sourced_and_ordered() -> None:
    for link in LINKS.values():
        assert link.bytes_per_second > 0 and link.source.startswith(("IEEE", "PCI-SIG", "NVIDIA"))
        assert "http" in link.source
    assert LINKS["PCIe 3.0 x16"].bytes_per_second == pytest.approx(15.75e9, rel=1e-3)
    assert LINKS["PCIe 4.0 x16"].bytes_per_second == pytest.approx(31.5e9, rel=1e-3)
    assert LINKS["10 GbE"].bytes_per_second == 1.25e9
    assert LINKS["100 GbE"].bytes_per_second < LINKS["PCIe 3.0 x16"].bytes_per_second
    assert LINKS["NVLink 4 (H100)"].bytes_per_second > LINKS["NVLink 2 (V100)"].bytes_per_second


# ---------------------------------------------------------------- the ring of notebook 01 §3

NOTEBOOK_01 = Path(__file__).resolve().parent.parent / "notebooks" / "01_distributed_training_theory.ipynb"


def notebook_function(path: Path, name: str) -> str:
    """The source of the top-level function ``name`` defined in a code cell of notebook ``path``."""
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or f"def {name}(" not in source:
            continue
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return ast.get_source_segment(source, node) or ""
    raise AssertionError(f"{path.name} defines no function {name}")


def normalised(source: str) -> str:
    return "\n".join(line.rstrip() for line in textwrap.dedent(source).strip().splitlines())


def test_notebook_ring_is_the_utils_ring() -> None:
    """Notebook 01 writes the ring on the page; utils holds the same code (d2l's ``#@save``)."""
    on_page = notebook_function(NOTEBOOK_01, "ring_allreduce_numpy")
    assert normalised(on_page) == normalised(inspect.getsource(ring_allreduce_numpy))


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("length", [1, 10, 17])
def test_ring_numpy_equals_the_recorded_ring(n: int, length: int) -> None:
    grads = gradients(n, length, np.float32)
    outputs, sent = ring_allreduce_numpy(grads)
    trace = ring_allreduce(grads)
    for i in range(n):
        np.testing.assert_array_equal(outputs[i], trace.outputs[f"gpu{i}"])
    assert sent == [trace.bytes_sent()[f"gpu{i}"] for i in range(n)]


def test_ring_numpy_does_not_modify_inputs() -> None:
    grads = gradients(3, 7)
    before = [g.copy() for g in grads]
    ring_allreduce_numpy(grads)
    for g, b in zip(grads, before, strict=True):
        np.testing.assert_array_equal(g, b)
