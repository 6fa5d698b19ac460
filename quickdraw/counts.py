"""How many drawings each split holds, counted once and kept in a manifest beside the data.

``steps_per_epoch`` needs the number of training drawings, and counting them means
parsing every row (bad rows do not count, and the split is a hash of each key_id). For
Kaggle's 50 million rows that is minutes of Python per pass, so it is done once per class
file: :func:`split_counts` parses a file, counts train / val / all for the split settings
asked for, and stores the result in ``.counts.json`` beside the data (or under
``build/cache/`` when the data folder is read-only), keyed by the file's name, size and
modification time. Later calls, other processes and the other workers of a multi-worker
job read the manifest instead; a lock file makes a second process wait for the first
one's count rather than parse the same files again. TFRecord shards carry their counts in
the ``manifest.json`` that :func:`quickdraw.shards.write_shards` writes.

Used by :func:`quickdraw.pipeline.count_examples` (notebook 06, ``scripts/train_quickdraw.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

MANIFEST_NAME = ".counts.json"
_FORMAT = "quickdraw-counts/1"


def settings_key(
    val_fraction: float,
    split_seed: int,
    limit_per_class: int | None,
    recognized_only: bool,
    labels: Sequence[str] | None,
) -> str:
    """The split settings a count depends on, as one string (the manifest's key)."""
    names = hashlib.sha1("\n".join(labels).encode()).hexdigest()[:12] if labels is not None else "-"
    return f"val={val_fraction!r};seed={split_seed};limit={limit_per_class};recognized={recognized_only};labels={names}"


def manifest_path(root: Path) -> Path:
    """``root/.counts.json`` when ``root`` is writable, else a file under ``build/cache``."""
    if os.access(root, os.W_OK):
        return root / MANIFEST_NAME
    from utils.config import BUILD_DIR

    digest = hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:16]
    return BUILD_DIR / "cache" / f"counts-{digest}.json"


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


def _read(manifest: Path) -> dict:
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"format": _FORMAT, "files": {}}
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return {"format": _FORMAT, "files": {}}
    return data


def _write(manifest: Path, data: dict) -> None:
    manifest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=manifest.parent, prefix=".counts-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, manifest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)


@contextlib.contextmanager
def _locked(manifest: Path) -> Iterator[None]:
    """An exclusive lock on the manifest's folder (POSIX ``flock``; elsewhere no lock), so
    that a second process waits for the first one's counts instead of parsing too."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    manifest.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(manifest.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def split_counts(
    files: Sequence[Path], key: str, count_file: Callable[[Path], dict[str, int]], root: Path | None = None
) -> dict[str, int]:
    """Train / val / all counts summed over ``files``, from the manifest where it has them;
    ``count_file(path)`` (one parse of the file) for the others, whose results are added
    to the manifest. ``key``: :func:`settings_key`. Used by ``count_examples``."""
    files = [Path(f) for f in files]
    root = Path(root) if root is not None else Path(os.path.commonpath([str(f.parent) for f in files]))
    manifest = manifest_path(root)
    names = {f: os.path.relpath(f, root) for f in files}

    def cached(data: dict, f: Path) -> dict[str, int] | None:
        entry = data["files"].get(names[f])
        if entry is None or entry.get("stamp") != _stamp(f):
            return None
        return entry.get("counts", {}).get(key)

    data = _read(manifest)
    if any(cached(data, f) is None for f in files):
        with _locked(manifest):
            data = _read(manifest)  # another process may have counted meanwhile
            missing = [f for f in files if cached(data, f) is None]
            for f in missing:
                entry = data["files"].get(names[f])
                if entry is None or entry.get("stamp") != _stamp(f):
                    entry = data["files"][names[f]] = {"stamp": _stamp(f), "counts": {}}
                entry["counts"][key] = count_file(f)
            if missing:
                _write(manifest, data)
    total = {"train": 0, "val": 0, "all": 0}
    for f in files:
        for split, n in cached(data, f).items():  # type: ignore[union-attr]
            total[split] += n
    return total
