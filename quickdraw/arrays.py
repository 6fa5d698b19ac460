"""Rendered doodles held in memory and cached on disk: :func:`doodle_arrays`.

Notebooks 04, 05, 08 and 11 and the worker programs train on small arrays of 28×28 doodles;
rendering costs milliseconds per drawing, so a split is rendered once with
:func:`quickdraw.make_dataset` and kept under ``build/cache/``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
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
    """Render a doodle split once with :func:`quickdraw.make_dataset` and keep it.

    ``source`` is a built-in variant (``"smoke"``/``"full"``, generated on first use) or a
    directory in any format the data layer reads. Rendering costs milliseconds per drawing,
    so the arrays are cached as ``build/cache/doodles-<name>-<fingerprint>-<split>-<size>.npz``
    (written atomically; worker processes then load instead of rendering again; new data, a new
    fingerprint). ``limit`` keeps the first ``limit`` examples. Order is the data layer's
    unshuffled order. Used in notebooks 04, 05, 08 and 11 and their worker programs.
    """
    if split not in ("train", "val", "all"):
        raise ValueError(f"split must be 'train', 'val' or 'all', got {split!r}")
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
        # the data's fingerprint in the name: regenerated or edited data (a course update that
        # changes the built-in classes) never meets arrays rendered from the old files
        cache = Path(cache_dir) / f"doodles-{tag}-{data_fingerprint(path)}-{split}-{image_size}.npz"
        if cache.exists():
            with np.load(cache, allow_pickle=False) as data:
                arrays = DoodleArrays(data["x"], data["y"], [str(c) for c in data["class_names"]])
            return _limited(arrays, limit)
    labels = resolve_labels(path)
    xs, ys = [], []
    dataset = make_dataset(path, split=split, image_size=image_size, batch_size=256, shuffle=False)
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


def _limited(arrays: DoodleArrays, limit: int | None) -> DoodleArrays:
    if limit is None:
        return arrays
    if limit < 1:
        raise ValueError(f"limit must be ≥ 1, got {limit}")
    return DoodleArrays(arrays.x[:limit], arrays.y[:limit], arrays.class_names)
