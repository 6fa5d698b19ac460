"""The parts of notebook 07's Horovod training scripts that are not the lesson.

``scripts/horovod_keras.py`` and ``scripts/horovod_custom_loop.py`` keep every Horovod call
in view; what they share lives here: the training images (the built-in doodles of
``utils.quickdraw`` when that module is available, else a small deterministic synthetic
set), a weight fingerprint, a record of which files each rank wrote, and the per-rank
report the notebook reads back to check that the ranks agree.

Introduced in notebook 07. Runs under TensorFlow 2.12 / NumPy 1.23 (the Horovod
environment) and under the main environment (tests): NumPy only; TensorFlow is imported
inside :func:`build_model` alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
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
    parser.add_argument("--data", choices=["auto", "doodles", "synthetic"], default="auto")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", type=Path, required=True, help="folder for checkpoints and rank reports")
    return parser.parse_args(argv)


def build_model(num_classes: int, image_size: int) -> Any:
    """The small CNN both Horovod scripts train (Keras 2 in the Horovod environment)."""
    import tensorflow as tf  # only here: the rest of this module is NumPy

    return tf.keras.Sequential(
        [
            tf.keras.layers.Input((image_size, image_size, 1)),
            tf.keras.layers.Conv2D(16, 3, activation="relu"),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Conv2D(32, 3, activation="relu"),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(num_classes),
        ]
    )


SYNTHETIC_CLASSES = ("ring", "bar", "cross", "diagonal", "corner", "dots", "frame", "wave", "blob", "stripes")


def _template(kind: str, size: int) -> np.ndarray:
    yy, xx = np.mgrid[0:size, 0:size] / (size - 1) * 2 - 1  # coordinates in [-1, 1]
    r = np.hypot(xx, yy)
    shapes = {
        "ring": np.abs(r - 0.6) < 0.12,
        "bar": np.abs(xx) < 0.15,
        "cross": (np.abs(xx) < 0.12) | (np.abs(yy) < 0.12),
        "diagonal": np.abs(xx - yy) < 0.18,
        "corner": ((np.abs(xx + 0.5) < 0.12) & (yy > -0.6)) | ((np.abs(yy - 0.5) < 0.12) & (xx > -0.6)),
        "dots": (np.hypot(xx - 0.45, yy - 0.45) < 0.2) | (np.hypot(xx + 0.45, yy + 0.45) < 0.2),
        "frame": (np.maximum(np.abs(xx), np.abs(yy)) > 0.6) & (np.maximum(np.abs(xx), np.abs(yy)) < 0.8),
        "wave": np.abs(yy - 0.4 * np.sin(3 * xx)) < 0.12,
        "blob": r < 0.45,
        "stripes": np.abs(np.sin(4 * yy)) > 0.85,
    }
    return shapes[kind].astype(np.float32)


def synthetic_images(
    n: int, *, image_size: int = 28, num_classes: int = 10, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``n`` small grey images of simple shapes (ring, bar, cross, …), shifted and noisy.

    Returns ``(images, labels, class_names)``: float32 ``(n, size, size, 1)`` in [0, 1],
    int64 labels ``0 … num_classes-1`` in a balanced, shuffled order. The same arguments give
    the same arrays on every rank and every machine. The stand-in for the doodles in
    notebook 07 when ``utils.quickdraw`` is not available.
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a whole number ≥ 1, got {n!r}")
    if not 2 <= num_classes <= len(SYNTHETIC_CLASSES):
        raise ValueError(f"num_classes must be 2–{len(SYNTHETIC_CLASSES)}, got {num_classes}")
    if image_size < 8:
        raise ValueError(f"image_size must be ≥ 8 pixels, got {image_size}")
    rng = np.random.default_rng(seed)
    names = list(SYNTHETIC_CLASSES[:num_classes])
    templates = np.stack([_template(k, image_size) for k in names])
    labels = rng.permutation(np.arange(n) % num_classes).astype(np.int64)
    images = templates[labels]
    shift = max(1, image_size // 10)
    for i, (dy, dx) in enumerate(rng.integers(-shift, shift + 1, size=(n, 2))):
        images[i] = np.roll(images[i], (int(dy), int(dx)), axis=(0, 1))
    images = images * rng.uniform(0.6, 1.0, size=(n, 1, 1)).astype(np.float32)
    images = images + rng.normal(0.0, 0.15, size=images.shape).astype(np.float32)
    return np.clip(images, 0.0, 1.0)[..., None].astype(np.float32), labels, names


def load_images(
    n: int, *, image_size: int = 28, seed: int = 0, source: str = "auto"
) -> tuple[np.ndarray, np.ndarray, list[str], str]:
    """Training images for the Horovod scripts: ``(images, labels, class_names, source)``.

    ``source="doodles"`` uses the course's built-in doodles (``utils.quickdraw``),
    ``"synthetic"`` the shapes of :func:`synthetic_images`, ``"auto"`` the doodles when
    ``utils.quickdraw`` can be imported and the shapes otherwise. Every rank calls this
    with the same arguments and gets the same arrays; each then keeps its own shard.
    Used by the scripts of notebook 07.
    """
    if source not in ("auto", "doodles", "synthetic"):
        raise ValueError(f"source must be 'auto', 'doodles' or 'synthetic', got {source!r}")
    if source in ("auto", "doodles"):
        try:
            from utils import quickdraw  # noqa: F401  (issue 5: the built-in doodles)

            images, labels, names = _doodles(n, image_size=image_size, seed=seed)
            return images, labels, names, "doodles"
        except (ImportError, AttributeError) as error:
            if source == "doodles":
                raise RuntimeError(f"the built-in doodles are not available here: {error}") from error
    images, labels, names = synthetic_images(n, image_size=image_size, seed=seed)
    return images, labels, names, "synthetic"


def _doodles(n: int, *, image_size: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The built-in doodles as arrays (kept separate so the adapter is one small function)."""
    from utils import quickdraw

    images, labels, names = quickdraw.load_arrays(n, image_size=image_size, seed=seed)
    images = np.asarray(images, dtype=np.float32)
    if images.ndim == 3:
        images = images[..., None]
    if images.max() > 1.0:
        images = images / 255.0
    return images, np.asarray(labels, dtype=np.int64), list(names)


def shard_indices(n: int, size: int, rank: int) -> np.ndarray:
    """The example indices rank ``rank`` of ``size`` keeps: every ``size``-th from ``rank``.

    The same rule as ``tf.data.Dataset.shard(size, rank)``, shown in notebook 07.
    """
    if size < 1 or not 0 <= rank < size:
        raise ValueError(f"need size ≥ 1 and 0 ≤ rank < size, got size={size}, rank={rank}")
    return np.arange(rank, n, size)


def weights_digest(arrays: Iterable[np.ndarray]) -> str:
    """A short SHA-256 fingerprint of a list of weight arrays (shapes, dtypes and bytes).

    Two ranks with the same digest hold bit-identical weights. Used in notebook 07.
    """
    digest = hashlib.sha256()
    count = 0
    for array in arrays:
        a = np.ascontiguousarray(array)
        digest.update(f"{a.shape}{a.dtype}".encode())
        digest.update(a.tobytes())
        count += 1
    if count == 0:
        raise ValueError("no arrays to fingerprint")
    return digest.hexdigest()[:16]


def warmup_lr(epoch: float, *, target_lr: float, size: int, warmup_epochs: float) -> float:
    """Horovod's linear warm-up: from ``target_lr / size`` at epoch 0 to ``target_lr``.

    ``target_lr`` is the already scaled rate (base rate × ``size``); after ``warmup_epochs``
    the rate stays at ``target_lr``. The rule of ``LearningRateWarmupCallback`` (Goyal et
    al. 2017), which evaluates it at ``epoch + (batch + 1) / steps_per_epoch`` before each
    batch; used by the custom-loop script and the warm-up figure of notebook 07.
    """
    if size < 1 or target_lr <= 0 or warmup_epochs < 0:
        raise ValueError("need size ≥ 1, target_lr > 0 and warmup_epochs ≥ 0")
    if warmup_epochs == 0 or epoch >= warmup_epochs:
        return float(target_lr)
    return float(target_lr / size * (epoch * (size - 1) / warmup_epochs + 1))


class WriteLog:
    """Notes which files under a folder this process created or changed.

    ``with WriteLog(folder) as log: save(...)`` compares each file's size, mtime and inode
    before and after; ``log.written`` lists the changed files. The scripts of notebook 07
    use it to show that rank 0 alone writes checkpoints.
    """

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
    """What one rank did, written as ``rank<r>.json`` next to ``rank<r>.npz`` (its final weights).

    Notebook 07 reads the reports of all ranks to check that they agree.
    """

    script: str
    rank: int
    size: int
    local_rank: int
    local_size: int
    data_source: str
    shard_examples: int
    steps_per_epoch: int
    initial_digest: str
    final_digest: str = ""
    epochs: list[dict[str, float]] = field(default_factory=list)
    checkpoint_writes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    devices: list[str] = field(default_factory=list)

    def save(self, folder: str | os.PathLike[str], weights: Sequence[np.ndarray]) -> Path:
        """Write ``rank<r>.json`` and ``rank<r>.npz`` into ``folder``; return the JSON path."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(folder / f"rank{self.rank}.npz", *[np.asarray(w) for w in weights])
        path = folder / f"rank{self.rank}.json"
        path.write_text(json.dumps(asdict(self), indent=1))
        return path


def load_reports(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rank reports in ``folder``, sorted by rank (notebook 07)."""
    reports = [json.loads(p.read_text()) for p in Path(folder).glob("rank*.json")]
    if not reports:
        raise FileNotFoundError(f"no rank*.json reports in {folder}: did the run fail?")
    return sorted(reports, key=lambda r: r["rank"])


def load_weights(folder: str | os.PathLike[str], rank: int) -> list[np.ndarray]:
    """The final weights rank ``rank`` saved in ``folder`` (``rank<r>.npz``), in order."""
    with np.load(Path(folder) / f"rank{rank}.npz", allow_pickle=False) as data:
        return [data[f"arr_{i}"] for i in range(len(data.files))]


def max_weight_difference(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    """The largest absolute difference between two lists of weight arrays (notebook 07)."""
    if len(a) != len(b):
        raise ValueError(f"different numbers of arrays: {len(a)} vs {len(b)}")
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape:
            raise ValueError(f"shape mismatch {x.shape} vs {y.shape}")
        if x.size:
            worst = max(worst, float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))))
    return worst
