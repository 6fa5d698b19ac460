"""Sync vs async SGD simulation (utils.syncsim, notebook 01)."""

from __future__ import annotations

import numpy as np
import pytest

from utils.syncsim import (
    WorkerTimes,
    make_least_squares,
    simulate_async_sgd,
    simulate_sync_sgd,
    tail_std,
)


@pytest.fixture(scope="module")
def problem():  # noqa: ANN201
    return make_least_squares(4, examples_per_worker=32, n_features=5, noise=0.5, seed=1)


def test_problem_optimum_is_a_minimum(problem) -> None:  # noqa: ANN001
    full_grad = problem.X.T @ (problem.X @ problem.w_star - problem.y) / problem.X.shape[0]
    np.testing.assert_allclose(full_grad, 0, atol=1e-12)
    mean_shard_grad = np.mean([problem.gradient(problem.w_star, i) for i in range(4)], axis=0)
    np.testing.assert_allclose(mean_shard_grad, 0, atol=1e-12)
    # with noise, the shards disagree: a single shard's gradient at w* is not zero
    assert np.linalg.norm(problem.gradient(problem.w_star, 0)) > 1e-3
    assert problem.shard_size == 32 and problem.smoothness() > 0


def test_worker_times_are_deterministic_and_straggler_is_slower() -> None:
    times = WorkerTimes(3, mean=1.0, jitter=0.0, straggler=2, slowdown=3.0)
    assert times.duration(0, 5) == 1.0 and times.duration(2, 5) == 3.0
    jittery = WorkerTimes(3, jitter=0.3, seed=7)
    assert jittery.duration(1, 4) == jittery.duration(1, 4)
    assert jittery.table(6).shape == (6, 3)


@pytest.mark.parametrize("kwargs", [{"n_workers": 0}, {"n_workers": 2, "mean": 0}, {"n_workers": 2, "straggler": 2}])
def test_worker_times_bad_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        WorkerTimes(**kwargs)


def test_sync_converges_and_step_time_is_slowest_worker(problem) -> None:  # noqa: ANN001
    times = WorkerTimes(4, jitter=0.2, straggler=1, slowdown=2.0)
    trace = simulate_sync_sgd(problem, times, lr=1.0 / problem.smoothness(), n_steps=150)
    np.testing.assert_allclose(trace.w, problem.w_star, atol=1e-8)
    assert trace.losses[-1] == pytest.approx(problem.loss_star, abs=1e-12)
    np.testing.assert_array_equal(trace.step_times, trace.worker_times.max(axis=1))
    assert (trace.worker_times.argmax(axis=1) == 1).mean() > 0.9
    np.testing.assert_allclose(trace.times, np.cumsum(trace.step_times))
    assert (trace.staleness == 0).all()


def test_async_is_stale_and_jitters(problem) -> None:  # noqa: ANN001
    times = WorkerTimes(4, jitter=0.2)
    lr = 1.0 / problem.smoothness()
    sync = simulate_sync_sgd(problem, times, lr=lr, n_steps=100)
    asynchronous = simulate_async_sgd(problem, times, lr=lr / 4, until=float(sync.times[-1]))
    assert asynchronous.mode == "async" and asynchronous.n_updates > 300
    assert np.all(np.diff(asynchronous.times) >= 0)
    assert asynchronous.staleness.mean() == pytest.approx(3, abs=0.3)  # N − 1 for equal workers
    assert tail_std(asynchronous) > 100 * tail_std(sync)
    assert asynchronous.losses[-1] < 0.1 * asynchronous.losses_initial  # still learns
    assert len(asynchronous.events) == asynchronous.n_updates


def test_one_async_worker_is_plain_sgd() -> None:
    problem = make_least_squares(1, examples_per_worker=40, n_features=3, seed=2)
    times = WorkerTimes(1, jitter=0.0)
    lr = 1.0 / problem.smoothness()
    sync = simulate_sync_sgd(problem, times, lr=lr, n_steps=30)
    asynchronous = simulate_async_sgd(problem, times, lr=lr, until=30.0)
    assert (asynchronous.staleness == 0).all()
    np.testing.assert_allclose(asynchronous.losses, sync.losses)


def test_minibatches_and_bad_arguments(problem) -> None:  # noqa: ANN001
    times = WorkerTimes(4)
    trace = simulate_sync_sgd(problem, times, lr=0.1, n_steps=5, batch_size=8)
    assert trace.n_updates == 5
    with pytest.raises(ValueError, match="batch_size"):
        simulate_sync_sgd(problem, times, lr=0.1, n_steps=5, batch_size=33)
    with pytest.raises(ValueError, match="lr"):
        simulate_sync_sgd(problem, times, lr=0.0, n_steps=5)
    with pytest.raises(ValueError, match="n_steps"):
        simulate_sync_sgd(problem, times, lr=0.1, n_steps=0)
    with pytest.raises(ValueError, match="until"):
        simulate_async_sgd(problem, times, lr=0.1, until=0)
    with pytest.raises(ValueError, match="workers"):
        simulate_sync_sgd(problem, WorkerTimes(3), lr=0.1, n_steps=5)
    with pytest.raises(ValueError, match="worker must be"):
        problem.shard(4)
    with pytest.raises(ValueError):
        make_least_squares(0)
    with pytest.raises(ValueError, match="fraction"):
        tail_std(trace, 0)


def test_async_controls_isolate_staleness(problem) -> None:  # noqa: ANN001
    """data="all" + stale=False is gradient descent, update for update, like sync SGD."""
    times = WorkerTimes(4, jitter=0.2, straggler=3, slowdown=2.0)
    lr = 0.4 / problem.smoothness()
    sync = simulate_sync_sgd(problem, times, lr=lr, n_steps=40)
    until = float(sync.times[-1])
    control = simulate_async_sgd(problem, times, lr=lr, until=until, data="all", stale=False)
    stale = simulate_async_sgd(problem, times, lr=lr, until=until, data="all")
    assert (control.staleness == 0).all() and stale.staleness.mean() > 1
    assert control.n_updates == stale.n_updates > sync.n_updates  # same workers, same timing
    assert [e[0] for e in control.events] == [e[0] for e in stale.events]
    np.testing.assert_allclose(control.losses[: sync.n_updates], sync.losses, rtol=1e-9, atol=1e-15)
    k = 20
    assert stale.losses[k] - problem.loss_star > 10 * (control.losses[k] - problem.loss_star)
    # with shard data, jitter is there with or without staleness
    shard_stale = simulate_async_sgd(problem, times, lr=lr / 4, until=until)
    shard_fresh = simulate_async_sgd(problem, times, lr=lr / 4, until=until, stale=False)
    assert tail_std(shard_fresh) > 100 * tail_std(control)
    assert 0.5 < tail_std(shard_stale) / tail_std(shard_fresh) < 2
    with pytest.raises(ValueError, match="data"):
        simulate_async_sgd(problem, times, lr=lr, until=until, data="some")
    with pytest.raises(ValueError, match="batch_size"):
        simulate_async_sgd(problem, times, lr=lr, until=until, data="all", batch_size=4)


# ---------------------------------------------------------------- the async loop of notebook 01 §2


def notebook_async_sgd():  # noqa: ANN201
    """Notebook 01 §2 writes the async-SGD loop on the page: its ``async_sgd``, defined here."""
    import heapq
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "notebooks" / "01_distributed_training_theory.ipynb"
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and "def async_sgd(" in source:
            namespace = {"np": np, "heapq": heapq}
            exec(compile(source, f"{path.name}:async_sgd", "exec"), namespace)
            return namespace["async_sgd"]
    raise AssertionError(f"{path.name} defines no async_sgd")


@pytest.mark.parametrize("stale", [True, False])
@pytest.mark.parametrize(("slowdown", "seed"), [(2.0, 0), (4.0, 3), (1.0, 7)])
def test_notebook_loop_is_the_simulator(problem, stale: bool, slowdown: float, seed: int) -> None:  # noqa: ANN001
    """The loop on the page and simulate_async_sgd (which also records events) agree update for update."""
    times = WorkerTimes(4, jitter=0.3, straggler=3, slowdown=slowdown, seed=seed)
    lr = 0.2 / problem.smoothness()
    losses, staleness = notebook_async_sgd()(problem, times, lr, 40.0, stale=stale)
    trace = simulate_async_sgd(problem, times, lr=lr, until=40.0, stale=stale)
    np.testing.assert_allclose(losses, trace.losses, rtol=1e-12)
    np.testing.assert_array_equal(staleness, trace.staleness)
    assert len(losses) > 100 and (staleness.max() > 0) == stale
