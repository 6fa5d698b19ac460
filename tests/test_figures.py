"""Figures of notebook 01 (utils.figures): they draw, and they refuse the wrong input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from utils.allreduce import ring_allreduce, ring_initial_holdings  # noqa: E402
from utils.figures import _holdings_label, plot_ring_steps, plot_timelines  # noqa: E402
from utils.syncsim import WorkerTimes, make_least_squares, simulate_async_sgd, simulate_sync_sgd  # noqa: E402


def test_holdings_label() -> None:
    assert _holdings_label(np.array([True, False, True])) == "0+2"
    assert _holdings_label(np.array([True, True])) == "Σ"


def test_ring_figure_has_one_panel_per_snapshot() -> None:
    n = 5
    trace = ring_allreduce([np.full(10, float(i)) for i in range(n)], record_holdings=True)
    fig = plot_ring_steps(trace, ring_initial_holdings(n))
    titled = [ax for ax in fig.axes if ax.get_title()]
    assert len(titled) == 1 + 2 * (n - 1)
    assert titled[-1].get_title() == f"all-gather step {n - 1}/{n - 1}"
    plt.close(fig)


def test_ring_figure_needs_holdings() -> None:
    trace = ring_allreduce([np.ones(4), np.ones(4)])
    with pytest.raises(ValueError, match="record_holdings"):
        plot_ring_steps(trace, ring_initial_holdings(2))
    trace = ring_allreduce([np.ones(4), np.ones(4)], record_holdings=True)
    with pytest.raises(ValueError, match="shape"):
        plot_ring_steps(trace, ring_initial_holdings(3))


def test_timelines() -> None:
    problem = make_least_squares(3, examples_per_worker=8, n_features=2)
    times = WorkerTimes(3, jitter=0.2, straggler=0, slowdown=2.0)
    sync = simulate_sync_sgd(problem, times, lr=0.1, n_steps=10)
    asynchronous = simulate_async_sgd(problem, times, lr=0.05, until=10.0)
    fig = plot_timelines(sync, asynchronous, until=8.0)
    assert len(fig.axes) == 2 and fig.axes[0].get_xlim() == (0.0, 8.0)
    plt.close(fig)
    with pytest.raises(ValueError, match="simulate_sync_sgd"):
        plot_timelines(asynchronous, sync, until=8.0)
