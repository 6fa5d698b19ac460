"""Step-by-step simulations of Ring AllReduce and a parameter server, with a cost model.

Notebook 01 (分布式训练理论简介) turns the slides' pictures into experiments: every node
holds a gradient (a NumPy array), the functions here move chunks of it between nodes step by
step, exactly as the slides draw it, and record every transfer. From the record one can read

- the result on every node (it must equal the exact sum),
- how many bytes each node sends and receives,
- how many communication steps there were, and
- how long it would take on links with a given latency and bandwidth (:meth:`CommTrace.time`).

The closed-form "latency + size/bandwidth" formulas (:func:`ring_allreduce_time`,
:func:`parameter_server_time`) are checked against the simulated traces in the tests and in
the notebook. NumPy only; no TensorFlow. Used in notebook 01.

Conventions:

* A *chunk* is a contiguous slice of the flattened gradient. A gradient of ``L`` elements is
  cut into ``N`` chunks the way :func:`numpy.array_split` does: the first ``L % N`` chunks have
  one element more, so lengths need not be divisible by ``N``.
* Links are full duplex: in one step a node can send and receive at the same time, each
  direction at the full bandwidth. A step takes ``latency + busiest_link_bytes / bandwidth``,
  where the busiest link is the node that sends or receives the most bytes in that step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["LINKS", "CommStep", "CommTrace", "Link", "Transfer", "chunk_bounds", "parameter_server_allreduce",
           "parameter_server_time", "ring_allreduce", "ring_allreduce_numpy", "ring_allreduce_time",
           "ring_initial_holdings"]


# --- Records of a simulated collective


@dataclass(frozen=True)
class Transfer:
    """One message: ``src`` sends ``nbytes`` bytes (chunk ``chunk`` of the gradient) to ``dst``."""

    src: str
    dst: str
    nbytes: int
    chunk: int


@dataclass
class CommStep:
    """One communication step: messages that travel at the same time.

    ``holdings`` is a snapshot taken after the step, for the figures: ``holdings[i, c]`` is
    the set of original nodes whose values are summed into chunk ``c`` on node ``i``, stored
    as a boolean array of shape ``(nodes, chunks, sources)``. Only the ring fills it.
    """

    phase: str
    transfers: list[Transfer] = field(default_factory=list)
    holdings: np.ndarray | None = None

    def busiest_bytes(self) -> int:
        """The most bytes any single node sends or receives in this step."""
        sent: dict[str, int] = {}
        received: dict[str, int] = {}
        for t in self.transfers:
            sent[t.src] = sent.get(t.src, 0) + t.nbytes
            received[t.dst] = received.get(t.dst, 0) + t.nbytes
        return max([0, *sent.values(), *received.values()])


@dataclass
class CommTrace:
    """What a simulated all-reduce did: results, every step, and byte counts per node.

    Returned by :func:`ring_allreduce` and :func:`parameter_server_allreduce` (notebook 01).
    """

    algorithm: str
    nodes: list[str]
    outputs: dict[str, np.ndarray]
    steps: list[CommStep]
    gradient_nbytes: int

    @property
    def num_steps(self) -> int:
        """Number of communication steps (rounds of messages that travel together)."""
        return len(self.steps)

    def bytes_sent(self) -> dict[str, int]:
        """Total bytes each node sent, over all steps."""
        totals = dict.fromkeys(self.nodes, 0)
        for step in self.steps:
            for t in step.transfers:
                totals[t.src] += t.nbytes
        return totals

    def bytes_received(self) -> dict[str, int]:
        """Total bytes each node received, over all steps."""
        totals = dict.fromkeys(self.nodes, 0)
        for step in self.steps:
            for t in step.transfers:
                totals[t.dst] += t.nbytes
        return totals

    def time(self, bandwidth: float, latency: float = 0.0) -> float:
        """Seconds the collective takes on links of ``bandwidth`` bytes/s and ``latency`` s.

        Each step costs ``latency + busiest_bytes / bandwidth`` (see the module docstring);
        steps run one after the other.
        """
        _check_link(bandwidth, latency)
        return sum(latency + step.busiest_bytes() / bandwidth for step in self.steps)


# --- Argument checks and chunking


def _check_link(bandwidth: float, latency: float) -> None:
    if not np.isfinite(bandwidth) or bandwidth <= 0:
        raise ValueError(f"bandwidth must be a positive number of bytes/s, got {bandwidth!r}")
    if not np.isfinite(latency) or latency < 0:
        raise ValueError(f"latency must be ≥ 0 seconds, got {latency!r}")


def _check_count(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a whole number ≥ 1, got {value!r}")


def _as_gradients(tensors: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Validate one gradient per node and return them flattened (copies)."""
    if isinstance(tensors, np.ndarray):
        raise TypeError("pass a list with one array per node, not a single array")
    arrays = [np.asarray(t) for t in tensors]
    if not arrays:
        raise ValueError("need at least one node (N ≥ 1): the list of gradients is empty")
    shape, dtype = arrays[0].shape, arrays[0].dtype
    for i, a in enumerate(arrays):
        if not (np.issubdtype(a.dtype, np.number) and not np.issubdtype(a.dtype, np.bool_)):
            raise TypeError(f"gradient {i} has dtype {a.dtype}; all-reduce needs numbers")
        if a.shape != shape:
            raise ValueError(f"all gradients must have one shape: node 0 has {shape}, node {i} has {a.shape}")
        if a.dtype != dtype:
            raise ValueError(f"all gradients must have one dtype: node 0 has {dtype}, node {i} has {a.dtype}")
    if arrays[0].size == 0:
        raise ValueError("the gradients are empty (0 elements): there is nothing to all-reduce")
    return [a.reshape(-1).copy() for a in arrays]


def chunk_bounds(length: int, n_chunks: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` of ``n_chunks`` contiguous chunks covering ``range(length)``.

    Same split as :func:`numpy.array_split`: the first ``length % n_chunks`` chunks are one
    element longer, so chunk sizes differ by at most one (some are empty if
    ``length < n_chunks``). Used by the ring simulation (notebook 01).
    """
    _check_count("n_chunks", n_chunks)
    if isinstance(length, bool) or not isinstance(length, int | np.integer) or length < 0:
        raise ValueError(f"length must be a whole number ≥ 0, got {length!r}")
    base, extra = divmod(int(length), int(n_chunks))
    bounds, start = [], 0
    for c in range(n_chunks):
        stop = start + base + (1 if c < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


# --- Ring AllReduce


def ring_allreduce(tensors: Sequence[np.ndarray], *, record_holdings: bool = False) -> CommTrace:
    """Simulate Ring AllReduce over ``N = len(tensors)`` nodes, one gradient per node.

    Node ``i`` sends only to node ``(i + 1) % N``. The gradient is cut into ``N`` chunks.

    1. **Scatter-reduce**, ``N − 1`` steps: in step ``s`` (0-based) node ``i`` sends chunk
       ``(i − s) % N`` to its right neighbour, which adds it to its own copy. Afterwards node
       ``i`` holds the complete sum of chunk ``(i + 1) % N``.
    2. **All-gather**, ``N − 1`` steps: in step ``s`` node ``i`` sends chunk
       ``(i + 1 − s) % N`` (complete) to its right neighbour, which overwrites its copy.

    So ``2(N − 1)`` steps, and each node sends and receives ``2(N − 1)`` chunks, i.e.
    ``2(N − 1)/N`` of the gradient when the length divides by ``N``. With
    ``record_holdings=True`` each step keeps a snapshot of which original nodes each chunk on
    each node already contains (for the step-by-step figure in notebook 01).

    Nodes are named ``"gpu0" … "gpu{N-1}"``; ``outputs`` have the input shape and dtype.
    """
    flat = _as_gradients(tensors)
    shape = np.asarray(tensors[0]).shape
    n = len(flat)
    nodes = [f"gpu{i}" for i in range(n)]
    bounds = chunk_bounds(flat[0].size, n)
    itemsize = flat[0].itemsize
    chunk_nbytes = [(stop - start) * itemsize for start, stop in bounds]
    buffers = flat  # node i's working copy, updated in place
    holdings = ring_initial_holdings(n)  # [node, chunk, source]
    steps: list[CommStep] = []

    for phase in ("scatter-reduce", "all-gather"):
        for s in range(n - 1):
            step = _ring_step(phase, s, buffers, holdings, bounds, nodes, chunk_nbytes)
            if record_holdings:
                step.holdings = holdings.copy()
            steps.append(step)

    return CommTrace(
        algorithm="ring",
        nodes=nodes,
        outputs={nodes[i]: buffers[i].reshape(shape) for i in range(n)},
        steps=steps,
        gradient_nbytes=flat[0].nbytes,
    )


def _ring_step(
    phase: str,
    s: int,
    buffers: list[np.ndarray],
    holdings: np.ndarray,
    bounds: list[tuple[int, int]],
    nodes: list[str],
    chunk_nbytes: list[int],
) -> CommStep:
    """Step ``s`` of a ring phase: every node sends one chunk to its right neighbour, which
    adds it (scatter-reduce) or overwrites its copy (all-gather). ``buffers`` and ``holdings``
    change in place; the step's transfers are returned."""
    n = len(buffers)
    offset = 0 if phase == "scatter-reduce" else 1
    # Every node sends at the same time: read all outgoing chunks before anyone writes.
    outgoing = []
    for i in range(n):
        c = (i + offset - s) % n
        start, stop = bounds[c]
        outgoing.append((i, (i + 1) % n, c, buffers[i][start:stop].copy(), holdings[i, c].copy()))
    step = CommStep(phase)
    for src, dst, c, data, held in outgoing:
        start, stop = bounds[c]
        if phase == "scatter-reduce":
            buffers[dst][start:stop] += data
            holdings[dst, c] |= held
        else:
            buffers[dst][start:stop] = data
            holdings[dst, c] = held
        step.transfers.append(Transfer(nodes[src], nodes[dst], chunk_nbytes[c], c))
    return step


# The ring as notebook 01 §3 writes it on the page (d2l's ``#@save``): the same source, kept
# identical by tests/test_allreduce.py. No trace, only the results and the bytes each node sent.
def ring_allreduce_numpy(grads: list[np.ndarray]) -> tuple[list[np.ndarray], list[int]]:
    """Ring AllReduce: every node ends with the sum. Returns the results and bytes sent."""
    n = len(grads)
    chunks = [np.array_split(g.copy(), n) for g in grads]  # chunks[node][c]
    sent = [0] * n  # bytes each node sends
    for step in range(2 * (n - 1)):
        reduce = step < n - 1  # n - 1 scatter-reduce steps, then n - 1 all-gather steps
        s = step if reduce else step - (n - 1)
        # node i sends chunk (i - s) % n while reducing, (i + 1 - s) % n while gathering
        out = [(i, (i - s + (0 if reduce else 1)) % n) for i in range(n)]
        data = [chunks[i][c].copy() for i, c in out]  # everyone sends first ...
        for (i, c), d in zip(out, data, strict=True):  # ... then everyone receives
            right = (i + 1) % n
            chunks[right][c] = chunks[right][c] + d if reduce else d
            sent[i] += d.nbytes
    return [np.concatenate(c) for c in chunks], sent


def ring_initial_holdings(n: int) -> np.ndarray:
    """Before any step of the ring, node ``i`` holds only its own value of every chunk.

    Shape ``(n, n, n)`` as in :attr:`CommStep.holdings`; for the figure in notebook 01.
    """
    _check_count("n", n)
    holdings = np.zeros((n, n, n), dtype=bool)
    for i in range(n):
        holdings[i, :, i] = True
    return holdings


# --- Parameter server


def parameter_server_allreduce(tensors: Sequence[np.ndarray], *, n_servers: int = 1) -> CommTrace:
    """Simulate summing gradients through ``n_servers`` parameter servers (push, then pull).

    The gradient is cut into ``n_servers`` shards (as :func:`chunk_bounds` does); server ``j``
    owns shard ``j``. Step 1 (*push*): every worker sends shard ``j`` of its gradient to server
    ``j``, which sums what it receives. Step 2 (*pull*): every server sends its summed shard to
    every worker. With one server its link carries ``N`` gradients in and ``N`` out, while each
    worker sends and receives one gradient. Workers are named ``"worker0" …`` and servers
    ``"ps0" …``; ``outputs`` holds the workers' results. Used in notebook 01.
    """
    flat = _as_gradients(tensors)
    _check_count("n_servers", n_servers)
    shape = np.asarray(tensors[0]).shape
    n = len(flat)
    workers = [f"worker{i}" for i in range(n)]
    servers = [f"ps{j}" for j in range(n_servers)]
    bounds = chunk_bounds(flat[0].size, n_servers)
    itemsize = flat[0].itemsize

    push = CommStep("push")
    shards = []
    for j, (start, stop) in enumerate(bounds):
        total = np.zeros(stop - start, dtype=flat[0].dtype)
        for i in range(n):
            total += flat[i][start:stop]
            push.transfers.append(Transfer(workers[i], servers[j], (stop - start) * itemsize, j))
        shards.append(total)

    pull = CommStep("pull")
    outputs = {}
    for i in range(n):
        out = np.empty_like(flat[i])
        for j, (start, stop) in enumerate(bounds):
            out[start:stop] = shards[j]
            pull.transfers.append(Transfer(servers[j], workers[i], (stop - start) * itemsize, j))
        outputs[workers[i]] = out.reshape(shape)

    return CommTrace(
        algorithm="parameter server" if n_servers == 1 else f"parameter server ×{n_servers}",
        nodes=workers + servers,
        outputs=outputs,
        steps=[push, pull],
        gradient_nbytes=flat[0].nbytes,
    )


# --- Closed-form cost model: latency + size / bandwidth


def ring_allreduce_time(nbytes: float, n: int, bandwidth: float, latency: float = 0.0) -> float:
    """Seconds for Ring AllReduce of ``nbytes`` over ``n`` nodes: ``2(n−1)·(latency + nbytes/(n·bandwidth))``.

    Exact for the simulation when ``nbytes`` splits evenly into ``n`` chunks. The bandwidth
    term ``2(n−1)/n · nbytes/bandwidth`` hardly grows with ``n``; the latency term does.
    Used in notebook 01.
    """
    _check_count("n", n)
    _check_link(bandwidth, latency)
    if nbytes < 0:
        raise ValueError(f"nbytes must be ≥ 0, got {nbytes!r}")
    return 2 * (n - 1) * (latency + nbytes / (n * bandwidth))


def parameter_server_time(
    nbytes: float, n: int, bandwidth: float, latency: float = 0.0, n_servers: int = 1
) -> float:
    """Seconds for push + pull of ``nbytes`` from ``n`` workers through ``n_servers`` servers.

    Each step is limited by the busiest link: a server moves ``n·nbytes/n_servers``, a worker
    ``nbytes``. So ``2·(latency + max(n/n_servers, 1)·nbytes/bandwidth)``: it grows linearly
    with ``n`` for one server. Used in notebook 01.
    """
    _check_count("n", n)
    _check_count("n_servers", n_servers)
    _check_link(bandwidth, latency)
    if nbytes < 0:
        raise ValueError(f"nbytes must be ≥ 0, got {nbytes!r}")
    return 2 * (latency + max(n / n_servers, 1.0) * nbytes / bandwidth)


# --- Link bandwidths, with sources


@dataclass(frozen=True)
class Link:
    """A kind of interconnect with its peak data rate **per direction**, in bytes/s.

    ``how`` says how the number follows from the cited source. Used in notebook 01.
    """

    name: str
    bytes_per_second: float
    how: str
    source: str


def _pcie_x16(gigatransfers_per_s: float) -> float:
    # PCIe 3.0 and later: 1 bit per transfer per lane, 128b/130b line code, 16 lanes.
    return gigatransfers_per_s * 1e9 * (128 / 130) / 8 * 16


LINKS: dict[str, Link] = {
    "10 GbE": Link(
        "10 Gigabit Ethernet",
        10e9 / 8,
        "10 Gb/s line rate ÷ 8 bits/byte (frame headers take a little more in practice)",
        "IEEE Std 802.3ae-2002 (10 Gb/s operation); IEEE 802.3 Ethernet Working Group, https://www.ieee802.org/3/",
    ),
    "100 GbE": Link(
        "100 Gigabit Ethernet",
        100e9 / 8,
        "100 Gb/s line rate ÷ 8 bits/byte",
        "IEEE Std 802.3ba-2010 (40 Gb/s and 100 Gb/s operation); IEEE 802.3 Ethernet Working Group, https://www.ieee802.org/3/",
    ),
    "PCIe 3.0 x16": Link(
        "PCI Express 3.0, 16 lanes",
        _pcie_x16(8.0),
        "8 GT/s per lane × 128/130 encoding × 16 lanes ÷ 8 bits/byte",
        "PCI-SIG, PCI Express Base Specification 3.0 (2010), https://pcisig.com/specifications",
    ),
    "PCIe 4.0 x16": Link(
        "PCI Express 4.0, 16 lanes",
        _pcie_x16(16.0),
        "16 GT/s per lane × 128/130 encoding × 16 lanes ÷ 8 bits/byte",
        "PCI-SIG, PCI Express Base Specification 4.0 (2017), https://pcisig.com/specifications",
    ),
    "NVLink 2 (V100)": Link(
        "NVLink 2.0, all 6 links of a V100",
        300e9 / 2,
        "300 GB/s total, both directions together ÷ 2",
        "NVIDIA Tesla V100 GPU Architecture whitepaper (2017), "
        "https://images.nvidia.com/content/volta-architecture/pdf/volta-architecture-whitepaper.pdf",
    ),
    "NVLink 4 (H100)": Link(
        "NVLink 4.0, all 18 links of an H100",
        900e9 / 2,
        "900 GB/s total, both directions together ÷ 2",
        "NVIDIA NVLink and NVSwitch, https://www.nvidia.com/en-us/data-center/nvlink/",
    ),
}
