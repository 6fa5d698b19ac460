"""Synchronous vs asynchronous data-parallel SGD, simulated on a least-squares problem.

Notebook 01 (同步更新 vs 异步更新) uses this to show, with numbers it can assert:

* **synchronous** SGD: every step all ``N`` workers compute a gradient at the same weights,
  the gradients are averaged, one update is applied, and the step lasts as long as the
  *slowest* worker (the straggler) — the others wait;
* **asynchronous** SGD: each worker reads the weights, computes, and applies its own gradient
  as soon as it is done, to weights that other workers may have changed in the meantime. Its
  gradient is then *stale*: computed on weights that are ``staleness`` updates old.

Time is simulated: each gradient computation takes a duration drawn from
:class:`WorkerTimes` (seconds of a made-up clock, not measured). Least squares has a known
optimum, so convergence can be checked exactly. NumPy only. Used in notebook 01.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "LeastSquares",
    "SGDTrace",
    "WorkerTimes",
    "make_least_squares",
    "simulate_async_sgd",
    "simulate_sync_sgd",
    "tail_std",
]


@dataclass
class LeastSquares:
    """``loss(w) = ½·mean((X·w − y)²)`` with the data split into equal worker shards.

    ``w_star`` is the exact minimiser (``numpy.linalg.lstsq``) and ``loss_star`` its loss.
    Built by :func:`make_least_squares`; used in notebook 01.
    """

    X: np.ndarray
    y: np.ndarray
    n_workers: int
    w_star: np.ndarray = field(init=False)
    loss_star: float = field(init=False)

    def __post_init__(self) -> None:
        self.w_star = np.linalg.lstsq(self.X, self.y, rcond=None)[0]
        self.loss_star = self.loss(self.w_star)

    @property
    def shard_size(self) -> int:
        """Examples per worker."""
        return self.X.shape[0] // self.n_workers

    def shard(self, worker: int) -> tuple[np.ndarray, np.ndarray]:
        """The rows ``worker`` trains on (contiguous, equal sizes)."""
        if not 0 <= worker < self.n_workers:
            raise ValueError(f"worker must be in 0..{self.n_workers - 1}, got {worker}")
        start = worker * self.shard_size
        stop = start + self.shard_size
        return self.X[start:stop], self.y[start:stop]

    def loss(self, w: np.ndarray) -> float:
        """Mean squared error over all data, halved."""
        r = self.X @ w - self.y
        return float(0.5 * np.mean(r * r))

    def gradient(self, w: np.ndarray, worker: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Gradient of the loss on ``worker``'s shard (or on ``rows`` of it: a mini-batch)."""
        X, y = self.shard(worker)
        if rows is not None:
            X, y = X[rows], y[rows]
        return X.T @ (X @ w - y) / X.shape[0]

    def full_gradient(self, w: np.ndarray) -> np.ndarray:
        """Gradient of the loss on all the data (the average of the workers' shard gradients)."""
        return self.X.T @ (self.X @ w - self.y) / self.X.shape[0]

    def smoothness(self) -> float:
        """Largest eigenvalue ``L`` of ``XᵀX/m``: gradient descent is stable for lr < 2/L."""
        return float(np.linalg.eigvalsh(self.X.T @ self.X / self.X.shape[0]).max())


def make_least_squares(
    n_workers: int, examples_per_worker: int = 64, n_features: int = 10, noise: float = 0.5, seed: int = 0
) -> LeastSquares:
    """A random least-squares problem ``y = X·w_true + noise``, one shard per worker.

    The noise makes the shards disagree (each shard alone has a different optimum), which
    is what makes asynchronous updates jitter. Used in notebook 01.
    """
    for name, value in (("n_workers", n_workers), ("examples_per_worker", examples_per_worker), ("n_features", n_features)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number ≥ 1, got {value!r}")
    if noise < 0:
        raise ValueError(f"noise must be ≥ 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    m = n_workers * examples_per_worker
    X = rng.standard_normal((m, n_features))
    w_true = rng.standard_normal(n_features)
    y = X @ w_true + noise * rng.standard_normal(m)
    return LeastSquares(X, y, n_workers)


@dataclass(frozen=True)
class WorkerTimes:
    """Simulated seconds each gradient computation takes, per worker and per step.

    Durations are ``mean · exp(jitter · z)`` with ``z`` standard normal (log-normal jitter);
    worker ``straggler`` (if any) is ``slowdown`` times slower. The duration of a given
    (worker, step) is always the same number, so sync and async runs see the same machines.
    Used in notebook 01.
    """

    n_workers: int
    mean: float = 1.0
    jitter: float = 0.1
    straggler: int | None = None
    slowdown: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.n_workers, bool) or not isinstance(self.n_workers, int) or self.n_workers < 1:
            raise ValueError(f"n_workers must be a whole number ≥ 1, got {self.n_workers!r}")
        if self.mean <= 0 or self.jitter < 0 or self.slowdown <= 0:
            raise ValueError("need mean > 0, jitter ≥ 0 and slowdown > 0")
        if self.straggler is not None and not 0 <= self.straggler < self.n_workers:
            raise ValueError(f"straggler must be a worker index 0..{self.n_workers - 1}, got {self.straggler}")

    def duration(self, worker: int, step: int) -> float:
        """Seconds (simulated) of ``worker``'s ``step``-th gradient computation."""
        z = np.random.default_rng([self.seed, worker, step]).standard_normal()
        seconds = self.mean * float(np.exp(self.jitter * z))
        return seconds * (self.slowdown if worker == self.straggler else 1.0)

    def table(self, n_steps: int) -> np.ndarray:
        """Durations as an array of shape ``(n_steps, n_workers)``."""
        return np.array([[self.duration(w, s) for w in range(self.n_workers)] for s in range(n_steps)])


@dataclass
class SGDTrace:
    """One simulated run: the loss after every update and when that update happened.

    ``times[k]`` (simulated seconds) and ``losses[k]`` are taken right after update ``k``;
    ``losses_initial`` is the loss before training. ``staleness[k]`` is how many updates
    other workers applied between the read and the write of update ``k`` (always 0 for
    sync). For sync, ``step_times[k]`` is the length of step ``k`` and ``worker_times[k]``
    the workers' durations in it; for async, ``events`` lists ``(worker, start, end)``.
    """

    mode: str
    times: np.ndarray
    losses: np.ndarray
    losses_initial: float
    w: np.ndarray
    staleness: np.ndarray
    step_times: np.ndarray | None = None
    worker_times: np.ndarray | None = None
    events: list[tuple[int, float, float]] = field(default_factory=list)

    @property
    def n_updates(self) -> int:
        return len(self.losses)


def _check_run(problem: LeastSquares, times: WorkerTimes, lr: float, batch_size: int | None) -> None:
    if times.n_workers != problem.n_workers:
        raise ValueError(f"WorkerTimes has {times.n_workers} workers but the problem has {problem.n_workers}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    if batch_size is not None and not 1 <= batch_size <= problem.shard_size:
        raise ValueError(f"batch_size must be in 1..{problem.shard_size} or None (whole shard), got {batch_size}")


def _rows(rng: np.random.Generator, problem: LeastSquares, batch_size: int | None) -> np.ndarray | None:
    if batch_size is None:
        return None
    return rng.choice(problem.shard_size, size=batch_size, replace=False)


def simulate_sync_sgd(
    problem: LeastSquares,
    times: WorkerTimes,
    *,
    lr: float,
    n_steps: int,
    batch_size: int | None = None,
    seed: int = 0,
) -> SGDTrace:
    """Synchronous data-parallel SGD: average the ``N`` gradients, one update per step.

    Every worker computes its gradient at the same weights; the step ends when the slowest
    worker is done, so ``step_time = max(worker durations)``. ``batch_size=None`` uses the
    whole shard (then sync SGD *is* full-batch gradient descent). Used in notebook 01.
    """
    _check_run(problem, times, lr, batch_size)
    if n_steps < 1:
        raise ValueError(f"n_steps must be ≥ 1, got {n_steps}")
    rng = np.random.default_rng(seed)
    w = np.zeros(problem.X.shape[1])
    initial = problem.loss(w)
    durations = times.table(n_steps)
    step_times = durations.max(axis=1)
    losses = np.empty(n_steps)
    for k in range(n_steps):
        grads = [problem.gradient(w, i, _rows(rng, problem, batch_size)) for i in range(problem.n_workers)]
        w = w - lr * np.mean(grads, axis=0)
        losses[k] = problem.loss(w)
    return SGDTrace(
        mode="sync",
        times=np.cumsum(step_times),
        losses=losses,
        losses_initial=initial,
        w=w,
        staleness=np.zeros(n_steps, dtype=int),
        step_times=step_times,
        worker_times=durations,
    )


def _check_async_run(
    problem: LeastSquares, times: WorkerTimes, lr: float, batch_size: int | None, until: float, data: str
) -> None:
    """:func:`simulate_async_sgd`'s arguments, checked before it starts (ValueError)."""
    _check_run(problem, times, lr, batch_size)
    if data not in ("shard", "all"):
        raise ValueError(f"data must be 'shard' or 'all', got {data!r}")
    if data == "all" and batch_size is not None:
        raise ValueError("batch_size applies to shards only (data='shard')")
    if not until > 0:
        raise ValueError(f"until must be > 0 simulated seconds, got {until!r}")


def simulate_async_sgd(
    problem: LeastSquares,
    times: WorkerTimes,
    *,
    lr: float,
    until: float,
    batch_size: int | None = None,
    seed: int = 0,
    data: str = "shard",
    stale: bool = True,
) -> SGDTrace:
    """Asynchronous SGD until simulated time ``until``: nobody waits for anybody.

    Each worker repeatedly reads the current weights, computes its gradient for as long as
    :meth:`WorkerTimes.duration` says, and applies it with step ``lr`` to the weights *as they
    are then*. The staleness of an update is the number of updates applied by others in
    between. Events at the same instant are applied in worker order. Used in notebook 01, whose
    §2 shows the same loop as ``async_sgd`` (tests/test_syncsim.py checks the two agree).

    Controls for notebook 01's fair comparison: ``data="all"`` makes every gradient one of the
    *whole* data set (as a synchronous step's average is), instead of the worker's shard;
    ``stale=False`` computes each gradient at the weights as they are when it is applied
    (same workers, same timing, same order, staleness 0).
    """
    _check_async_run(problem, times, lr, batch_size, until, data)
    rng = np.random.default_rng(seed)
    w = np.zeros(problem.X.shape[1])
    initial = problem.loss(w)
    version = 0
    queue: list[tuple[float, int, int, float, int, np.ndarray]] = []
    for i in range(problem.n_workers):
        # (finish time, worker, its step, start time, version read, weights read)
        heapq.heappush(queue, (times.duration(i, 0), i, 0, 0.0, version, w.copy()))
    out_t, out_loss, out_stale, events = [], [], [], []
    while queue and queue[0][0] <= until:
        end, i, k, start, read_version, w_read = heapq.heappop(queue)
        if not stale:
            w_read, read_version = w, version
        g = problem.full_gradient(w_read) if data == "all" else problem.gradient(w_read, i, _rows(rng, problem, batch_size))
        w = w - lr * g
        out_stale.append(version - read_version)
        version += 1
        out_t.append(end)
        out_loss.append(problem.loss(w))
        events.append((i, start, end))
        heapq.heappush(queue, (end + times.duration(i, k + 1), i, k + 1, end, version, w.copy()))
    return SGDTrace(
        mode="async",
        times=np.array(out_t),
        losses=np.array(out_loss),
        losses_initial=initial,
        w=w,
        staleness=np.array(out_stale, dtype=int),
        events=events,
    )


def tail_std(trace: SGDTrace, fraction: float = 0.5) -> float:
    """Standard deviation of the loss over the last ``fraction`` of the updates: the jitter.

    Used in notebook 01 to compare how much sync and async losses still move at the end.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    if trace.n_updates == 0:
        raise ValueError("the trace has no updates")
    k = max(1, int(round(trace.n_updates * fraction)))
    return float(np.std(trace.losses[-k:]))
