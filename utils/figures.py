"""The course's figures: one plot style, ``save_fig``, and the figures notebooks share.

- :func:`use_course_style` — the matplotlib settings every notebook gets from ``utils.setup``;
- :func:`save_fig` — save a figure as ``images/<chapter>/<name>.png`` (every notebook);
- :func:`plot_ring_steps`, :func:`plot_timelines` — the ring all-reduce step by step and
  worker timelines of notebook 01's simulations.

matplotlib is imported inside the functions; each plot returns its figure so the notebook
can pass it to :func:`save_fig`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from utils import config

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from utils.allreduce import CommTrace
    from utils.syncsim import SGDTrace

__all__ = ["plot_ring_steps", "plot_timelines", "save_fig", "use_course_style"]

_chapter: int | None = None
_CHINESE_FONT = Path(__file__).parent / "fonts" / "NotoSansCJKsc-course.otf"


def _chinese_font() -> str:
    """Register the Chinese font the course ships (the Chinese edition's plot labels; made by
    tools/cjk_font.py) with matplotlib and return its family name."""
    from matplotlib import font_manager

    font_manager.fontManager.addfont(str(_CHINESE_FONT))
    return font_manager.FontProperties(fname=str(_CHINESE_FONT)).get_name()


def use_course_style(chapter: int | None = None) -> None:
    """Apply the course's matplotlib style (labels readable in a lecture hall) and remember
    the chapter whose ``images/`` folder :func:`save_fig` writes to. Called by ``utils.setup``."""
    import matplotlib as mpl

    global _chapter
    _chapter = chapter
    mpl.rcParams.update(
        {
            "font.family": ["sans-serif", _chinese_font()],  # Chinese characters: the fallback
            "figure.figsize": (7, 4),
            "figure.dpi": 100,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.titlesize": 13,
            "axes.labelsize": 12,
            "legend.fontsize": 10,
            "savefig.bbox": "tight",
        }
    )


def save_fig(name: str, *, fig: Any = None, chapter: int | None = None, dpi: int = 150) -> Path:
    """Save a matplotlib figure as ``images/<chapter>/<name>.png`` and return the path.

    ``images/`` is ignored by git. Uses the chapter of the last ``setup`` call unless one is
    given. Used in every notebook with figures.
    """
    import matplotlib.pyplot as plt

    if not name or "/" in name or "\\" in name:
        raise ValueError(f"name must be a plain file name without folders, got {name!r}")
    chapter = chapter if chapter is not None else _chapter
    folder = config.IMAGES_DIR / (f"{chapter:02d}" if chapter is not None else "misc")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (name if name.endswith(".png") else f"{name}.png")
    (fig or plt.gcf()).savefig(path, dpi=dpi)
    return path


def _holdings_label(held: np.ndarray) -> str:
    """``"Σ"`` when every source is in, else the sources joined by ``+`` (``"0+3"``)."""
    if held.all():
        return "Σ"
    return "+".join(str(s) for s in np.flatnonzero(held))


def plot_ring_steps(trace: CommTrace, initial: np.ndarray, *, ncols: int = 3) -> Figure:
    """Draw what every node holds of every chunk before and after each ring step.

    One panel per snapshot (before, then after each of the ``2(N−1)`` steps); rows are
    nodes, columns are chunks. A cell shows which nodes' values are summed into that chunk
    (``Σ`` = all of them), shaded by how many; cells that just received data have a red
    frame. ``trace`` must come from ``ring_allreduce(..., record_holdings=True)`` and
    ``initial`` from ``ring_initial_holdings(N)``. Used in notebook 01.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    if any(step.holdings is None for step in trace.steps):
        raise ValueError("record the holdings: ring_allreduce(tensors, record_holdings=True)")
    n = len(trace.nodes)
    if initial.shape != (n, n, n):
        raise ValueError(f"initial holdings must have shape {(n, n, n)}, got {initial.shape}")
    snapshots = [("before: each node has only its own gradient", initial, [])]
    counts = {"scatter-reduce": 0, "all-gather": 0}
    for step in trace.steps:
        counts[step.phase] += 1
        title = f"{step.phase} step {counts[step.phase]}/{n - 1}"
        received = [(int(t.dst.removeprefix("gpu")), t.chunk) for t in step.transfers]
        snapshots.append((title, step.holdings, received))
    ncols = min(ncols, len(snapshots))
    nrows = -(-len(snapshots) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, (0.5 * n + 0.8) * nrows), squeeze=False)
    chunk_names = [chr(ord("a") + c) if c < 26 else str(c) for c in range(n)]
    for ax, (title, held, received) in zip(axes.flat, snapshots, strict=False):
        fill = held.sum(axis=2) / n
        ax.imshow(fill, cmap="Blues", vmin=0, vmax=1.25, aspect="auto")
        for i in range(n):
            for c in range(n):
                label = _holdings_label(held[i, c])
                ax.text(c, i, label, ha="center", va="center", fontsize=9 if len(label) < 6 else 7,
                        color="white" if fill[i, c] > 0.7 else "black")
        for i, c in received:
            ax.add_patch(Rectangle((c - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
        ax.set_title(title, fontsize=10)
        ax.set_xticks(range(n), [f"chunk {name}" for name in chunk_names], fontsize=8)
        ax.set_yticks(range(n), trace.nodes, fontsize=8)
        ax.grid(False)
    for ax in list(axes.flat)[len(snapshots):]:
        ax.axis("off")
    fig.suptitle(f"Ring AllReduce on {n} nodes: which nodes' values each chunk holds (red: just received)")
    fig.tight_layout()
    return fig


def plot_timelines(sync: SGDTrace, asynchronous: SGDTrace, *, until: float) -> Figure:
    """Gantt charts of who computes when, sync (with idle time) above async.

    Bars are gradient computations in simulated seconds; in the sync chart the hatched part
    of each step is time a worker waits for the slowest one. Shows the interval ``[0, until]``.
    Used in notebook 01.
    """
    import matplotlib.pyplot as plt

    if sync.worker_times is None or sync.step_times is None:
        raise ValueError("the first trace must come from simulate_sync_sgd")
    if asynchronous.mode != "async":
        raise ValueError("the second trace must come from simulate_async_sgd")
    n_workers = sync.worker_times.shape[1]
    fig, (ax_s, ax_a) = plt.subplots(2, 1, figsize=(9, 1.0 + 0.9 * n_workers), sharex=True)
    starts = np.concatenate([[0.0], sync.times[:-1]])
    for k, start in enumerate(starts):
        if start >= until:
            break
        for w in range(n_workers):
            busy = sync.worker_times[k, w]
            ax_s.barh(w, busy, left=start, color=f"C{w}", edgecolor="black", linewidth=0.5)
            idle = sync.step_times[k] - busy
            if idle > 0:
                ax_s.barh(w, idle, left=start + busy, color="white", edgecolor="grey", hatch="///", linewidth=0.5)
    for w, start, end in asynchronous.events:
        if start >= until:
            continue
        ax_a.barh(w, end - start, left=start, color=f"C{w}", edgecolor="black", linewidth=0.5)
    for ax, title in ((ax_s, "synchronous: every step waits for the slowest worker (hatched = idle)"),
                      (ax_a, "asynchronous: each worker updates as soon as it is done")):
        ax.set_yticks(range(n_workers), [f"worker {w}" for w in range(n_workers)])
        ax.invert_yaxis()
        ax.set_title(title, fontsize=11)
        ax.set_xlim(0, until)
    ax_a.set_xlabel("simulated time (s)")
    fig.tight_layout()
    return fig
