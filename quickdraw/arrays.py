"""Rendered doodles held in memory and cached on disk: :func:`doodle_arrays` (notebooks 04,
05, 08, 11 and their worker programs train on small arrays of 28×28 doodles)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from quickdraw.pipeline import make_dataset, resolve_labels
from quickdraw.synthetic import ensure_builtin_data
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
    """A doodle split rendered once with :func:`quickdraw.make_dataset` (unshuffled) and kept.

    ``source``: a built-in variant (``"smoke"``/``"full"``, generated on first use) or a folder
    in any format the data layer reads. The arrays are cached as
    ``<cache_dir>/doodles-<name>-<fingerprint>-<split>-<size>.npz`` (new data, a new
    fingerprint), so worker processes load them. ``limit`` keeps the first ``limit`` examples.
    """
    source_str = str(source)
    if source_str in ("smoke", "full"):
        path = ensure_builtin_data(source_str)
        tag = f"builtin-{source_str}"
    else:
        path = Path(source_str)
        if not path.exists():
            raise FileNotFoundError(f"no doodle data at {path}")
        tag = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    cache: Path | None = None
    if cache_dir is not None:
        cache = Path(cache_dir) / f"doodles-{tag}-{data_fingerprint(path)}-{split}-{image_size}.npz"
        if cache.exists():
            with np.load(cache, allow_pickle=False) as data:
                arrays = DoodleArrays(data["x"], data["y"], [str(c) for c in data["class_names"]])
            return _limited(arrays, limit)
    dataset = make_dataset(path, split=split, image_size=image_size, batch_size=256, shuffle=False)
    batches = list(dataset.as_numpy_iterator())
    if not batches:
        raise ValueError(f"no {split} examples in {path}")
    x, y = (np.concatenate(parts) for parts in zip(*batches, strict=True))
    arrays = DoodleArrays(x.astype(np.float32), y.astype(np.int32), list(resolve_labels(path)))
    if cache is not None:
        _write_cache(arrays, cache, cache.parent.glob(f"doodles-{tag}-*-{split}-{image_size}.npz"))
    return _limited(arrays, limit)


def _write_cache(arrays: DoodleArrays, cache: Path, stale: Iterable[Path]) -> None:
    """Save ``arrays`` as ``cache`` at once (a rename), then remove the ``stale`` files (older data's)."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.stem}-{os.getpid()}.npz")  # a dot file: never taken for a cache
    np.savez(tmp, x=arrays.x, y=arrays.y, class_names=np.array(arrays.class_names))
    os.replace(tmp, cache)
    for old in stale:
        if old != cache:
            old.unlink(missing_ok=True)


def data_fingerprint(path: str | os.PathLike[str]) -> str:
    """12 hex digits that change when any data file under ``path`` changes (name, size, mtime);
    dot files and folders (the data layer's count caches) are left out."""
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


def _limited(arrays: DoodleArrays, limit: int | None) -> DoodleArrays:
    if limit is None:
        return arrays
    if limit < 1:
        raise ValueError(f"limit must be ≥ 1, got {limit}")
    return DoodleArrays(arrays.x[:limit], arrays.y[:limit], arrays.class_names)
