"""The worker kit: what the training notebooks and their worker programs share.

Cached doodle arrays, and the two checks every distributed run ends with: a weights digest
(equal digests = bit-identical weights on every worker/rank) and the largest weight
difference between two runs. The tf.distribute lessons themselves (strategies, scopes,
``strategy.run``, checkpoints) stay in the notebooks; the model is :func:`utils.models.build_cnn`.
Used by notebooks 04, 05 and 07 and by ``scripts/workers/``. NumPy only at import time and
no NumPy-2-only API: notebook 07's Horovod environment (TensorFlow 2.12, NumPy 1.23) uses
:func:`weights_digest` and :func:`max_weight_difference` too.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from utils.config import BUILD_DIR

CACHE_DIR = BUILD_DIR / "cache"


@dataclass
class DoodleArrays:
    """Rendered doodles held in memory: images ``x`` (float32, N×H×W×C in [0, 1]), labels
    ``y`` (int32) and the class names in label order."""

    x: np.ndarray
    y: np.ndarray
    class_names: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.y)

    @property
    def num_classes(self) -> int:
        return len(self.class_names)


def doodle_arrays(
    source: str | os.PathLike[str] = "smoke",
    split: str = "train",
    image_size: int = 28,
    *,
    limit: int | None = None,
    cache_dir: str | os.PathLike[str] | None = CACHE_DIR,
) -> DoodleArrays:
    """Render a doodle split once with :func:`quickdraw.make_dataset` and keep it.

    ``source`` is a built-in variant (``"smoke"``/``"full"``, generated on first use) or a
    directory in any format the data layer reads. Rendering costs milliseconds per drawing,
    so the arrays are cached as ``build/cache/doodles-<name>-<fingerprint>-<split>-<size>.npz``
    (written atomically; worker processes then load instead of rendering again; new data, a new
    fingerprint). ``limit`` keeps the first ``limit`` examples. Order is the data layer's
    unshuffled order. Used in notebooks 04 and 05 and their worker scripts.
    """
    import quickdraw as qd

    if split not in ("train", "val", "all"):
        raise ValueError(f"split must be 'train', 'val' or 'all', got {split!r}")
    source_str = str(source)
    if source_str in ("smoke", "full"):
        path = qd.ensure_builtin_data(source_str)
        tag = f"builtin-{source_str}"
    else:
        path = Path(source_str)
        if not path.exists():
            raise FileNotFoundError(f"no doodle data at {path}")
        tag = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    cache: Path | None = None
    if cache_dir is not None:
        # the data's fingerprint in the name: regenerated or edited data (a course update that
        # changes the built-in classes) never meets arrays rendered from the old files
        cache = Path(cache_dir) / f"doodles-{tag}-{data_fingerprint(path)}-{split}-{image_size}.npz"
        if cache.exists():
            with np.load(cache, allow_pickle=False) as data:
                arrays = DoodleArrays(data["x"], data["y"], [str(c) for c in data["class_names"]])
            return _limited(arrays, limit)
    labels = qd.resolve_labels(path)
    xs, ys = [], []
    dataset = qd.make_dataset(path, split=split, image_size=image_size, batch_size=256, shuffle=False)
    for images, batch_labels in dataset.as_numpy_iterator():
        xs.append(images)
        ys.append(batch_labels)
    if not xs:
        raise ValueError(f"no {split} examples in {path}")
    arrays = DoodleArrays(
        np.concatenate(xs).astype(np.float32),
        np.concatenate(ys).astype(np.int32),
        [labels[i] for i in range(len(labels))],
    )
    if cache is not None:
        # older data's arrays, and the name used before fingerprints (never read again)
        stale = [*cache.parent.glob(f"doodles-{tag}-*-{split}-{image_size}.npz"),
                 cache.parent / f"doodles-{tag}-{split}-{image_size}.npz"]  # fmt: skip
        _write_cache(arrays, cache, stale)
    return _limited(arrays, limit)


def _write_cache(arrays: DoodleArrays, cache: Path, stale: Iterable[Path]) -> None:
    """Save ``arrays`` as ``cache`` atomically (a temporary file, then a rename), then remove
    the ``stale`` files that are not ``cache``."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache.parent, suffix=".npz")
    os.close(fd)
    try:
        np.savez(tmp, x=arrays.x, y=arrays.y, class_names=np.array(arrays.class_names))
        os.replace(tmp, cache)
        for old in stale:
            if old != cache:
                old.unlink(missing_ok=True)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def data_fingerprint(path: str | os.PathLike[str]) -> str:
    """12 hex digits that change when any data file under ``path`` changes (name, size, mtime).

    Files and folders whose name starts with a dot (the data layer's own count caches) are left
    out. Used by :func:`doodle_arrays` to name its cache.
    """
    root = Path(path)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for file in files:
        relative = file.relative_to(root) if file != root else Path(file.name)
        if any(part.startswith(".") for part in relative.parts):
            continue
        stat = file.stat()
        digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:12]


def add_pause_option(parser: argparse.ArgumentParser) -> None:
    """Give a worker script ``--pause LINE SECONDS`` (see :func:`pause_after`)."""
    parser.add_argument(
        "--pause", nargs=2, metavar=("LINE", "SECONDS"), default=None,
        help="after printing a line that starts with LINE, sleep SECONDS (the notebook acts there)",
    )  # fmt: skip


def pause_after(line: str, pause: Sequence[str] | None) -> None:
    """Sleep ``pause[1]`` seconds if ``line`` (just printed) starts with ``pause[0]``.

    Notebooks 04 and 10 kill a worker, or cut its cable, when it prints a given line; the pause
    keeps the worker at that line however late a busy notebook reads it. Used by the worker
    scripts of notebooks 04 and 10.
    """
    if pause and line.startswith(pause[0]):
        time.sleep(float(pause[1]))


def _limited(arrays: DoodleArrays, limit: int | None) -> DoodleArrays:
    if limit is None:
        return arrays
    if limit < 1:
        raise ValueError(f"limit must be ≥ 1, got {limit}")
    return DoodleArrays(arrays.x[:limit], arrays.y[:limit], arrays.class_names)


def max_weight_difference(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Largest absolute difference between two lists of weight arrays of the same shapes.

    ``max_weight_difference(model_a.get_weights(), model_b.get_weights()) < 1e-5`` is how
    notebooks 04, 05 and 07 check that two ways of training computed the same thing.
    """
    if len(a) != len(b):
        raise ValueError(f"different numbers of arrays: {len(a)} and {len(b)}")
    worst = 0.0
    for i, (u, v) in enumerate(zip(a, b, strict=True)):
        u, v = np.asarray(u), np.asarray(v)
        if u.shape != v.shape:
            raise ValueError(f"array {i}: shapes {u.shape} and {v.shape} differ")
        if u.size:
            worst = max(worst, float(np.max(np.abs(u.astype(np.float64) - v.astype(np.float64)))))
    return worst


def weights_digest(weights: Iterable[Any]) -> str:
    """A short SHA-256 of a list of arrays (dtypes, shapes and bytes): equal digests mean
    bit-identical weights.

    Worker processes and Horovod ranks report it so that notebooks 04, 05 and 07 can check
    that every replica ended with the same weights.
    """
    h = hashlib.sha256()
    count = 0
    for w in weights:
        arr = np.ascontiguousarray(np.asarray(w))
        h.update(str((arr.dtype.str, arr.shape)).encode())
        h.update(arr.tobytes())
        count += 1
    if count == 0:
        raise ValueError("no arrays to fingerprint")
    return h.hexdigest()[:16]
