"""What notebook 07's Horovod scripts (``scripts/workers/horovod_*.py``) share that is not the lesson:
options, images, warm-up, the files each rank wrote and the per-rank report the notebook reads.
Runs in the Horovod environment too (TensorFlow 2.12 / NumPy 1.23): NumPy only.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


def parse_args(description: str, argv: list[str] | None = None) -> argparse.Namespace:
    """The options both Horovod scripts take (``--epochs``, ``--examples``, ``--out``, …)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--examples", type=int, default=2000, help="training examples, all ranks together")
    parser.add_argument("--batch-size", type=int, default=32, help="per rank (global = size × this)")
    parser.add_argument("--base-lr", type=float, default=0.01, help="learning rate for one process")
    parser.add_argument("--warmup-epochs", type=float, default=1.0)
    parser.add_argument("--image-size", type=int, default=28)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", type=Path, required=True, help="folder for checkpoints and rank reports")
    return parser.parse_args(argv)


def load_images(n: int, *, image_size: int = 28, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The built-in doodles as ``(images float32 (n, size, size, 1) in [0, 1], labels int64,
    class_names)``: every rank gets the same arrays, then keeps its own shard."""
    import quickdraw

    return quickdraw.load_arrays(n, image_size=image_size, seed=seed)


def shard_indices(n: int, size: int, rank: int) -> np.ndarray:
    """The example indices rank ``rank`` of ``size`` keeps: every ``size``-th from ``rank``, the
    rule of ``tf.data.Dataset.shard(size, rank)``."""
    if size < 1 or not 0 <= rank < size:
        raise ValueError(f"need size ≥ 1 and 0 ≤ rank < size, got size={size}, rank={rank}")
    return np.arange(rank, n, size)


def warmup_lr(epoch: float, *, target_lr: float, size: int, warmup_epochs: float) -> float:
    """Horovod's linear warm-up (``LearningRateWarmupCallback``, Goyal et al. 2017): from
    ``target_lr / size`` at epoch 0 to ``target_lr`` (base rate × ``size``) at ``warmup_epochs``,
    then constant. The callback evaluates it at ``epoch + (batch + 1) / steps_per_epoch``.
    """
    if size < 1 or target_lr <= 0 or warmup_epochs < 0:
        raise ValueError("need size ≥ 1, target_lr > 0 and warmup_epochs ≥ 0")
    if warmup_epochs == 0 or epoch >= warmup_epochs:
        return float(target_lr)
    return float(target_lr / size * (epoch * (size - 1) / warmup_epochs + 1))


class WriteLog:
    """``with WriteLog(folder) as log: save(...)``: ``log.written`` lists the files under
    ``folder`` the block created or changed (to show that rank 0 alone writes checkpoints)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.written: list[str] = []
        self._before: dict[str, tuple[int, int, int]] = {}

    def _snapshot(self) -> dict[str, tuple[int, int, int]]:
        found = {}
        if self.folder.is_dir():
            for path in self.folder.rglob("*"):
                if path.is_file():
                    st = path.stat()
                    found[str(path.relative_to(self.folder))] = (st.st_size, st.st_mtime_ns, st.st_ino)
        return found

    def __enter__(self) -> WriteLog:
        self._before = self._snapshot()
        return self

    def __exit__(self, *exc: object) -> None:
        after = self._snapshot()
        for name, stat in sorted(after.items()):
            if self._before.get(name) != stat and name not in self.written:
                self.written.append(name)


@dataclass
class RankReport:
    """What one rank did, written as ``rank<r>.json`` next to ``rank<r>.npz`` (its final weights)."""

    script: str
    rank: int
    size: int
    local_rank: int
    local_size: int
    shard_examples: int
    steps_per_epoch: int
    initial_digest: str
    final_digest: str = ""
    epochs: list[dict[str, float]] = field(default_factory=list)
    checkpoint_writes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    devices: list[str] = field(default_factory=list)
    intra_op_threads: int = 0  # what TensorFlow was told (0 = its default: all cores)

    def save(self, folder: str | os.PathLike[str], weights: Sequence[np.ndarray]) -> Path:
        """Write ``rank<r>.json`` and ``rank<r>.npz`` into ``folder``; return the JSON path."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(folder / f"rank{self.rank}.npz", *[np.asarray(w) for w in weights])
        path = folder / f"rank{self.rank}.json"
        path.write_text(json.dumps(asdict(self), indent=1))
        return path


def load_reports(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rank reports in ``folder``, sorted by rank."""
    reports = [json.loads(p.read_text()) for p in Path(folder).glob("rank*.json")]
    if not reports:
        raise FileNotFoundError(f"no rank*.json reports in {folder}: did the run fail?")
    return sorted(reports, key=lambda r: r["rank"])


def load_weights(folder: str | os.PathLike[str], rank: int) -> list[np.ndarray]:
    """The final weights rank ``rank`` saved in ``folder`` (``rank<r>.npz``), in order."""
    with np.load(Path(folder) / f"rank{rank}.npz", allow_pickle=False) as data:
        return [data[f"arr_{i}"] for i in range(len(data.files))]
