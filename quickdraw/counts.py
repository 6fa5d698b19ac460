"""How many drawings each split holds, counted once and kept in a manifest beside the data.

``steps_per_epoch`` needs the number of training drawings, and counting them means parsing
every row. :func:`split_counts` parses each class file once, counts train / val / all for the
split settings asked for and keeps the result in ``.counts.json`` beside the data (under
``build/cache/`` when the folder is read-only), keyed by the file's name, size and mtime. Used by
:func:`quickdraw.pipeline.count_examples`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

MANIFEST_NAME = ".counts.json"
_FORMAT = "quickdraw-counts/1"


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
        data = None
    empty = {"format": _FORMAT, "files": {}}
    return data if isinstance(data, dict) and data.get("format") == _FORMAT else empty


def _write(manifest: Path, data: dict) -> None:
    """Replace ``manifest`` at once: a reader in another process never sees half a file."""
    manifest.parent.mkdir(parents=True, exist_ok=True)
    tmp = manifest.with_name(f".counts-{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, manifest)


def split_counts(
    files: Sequence[Path], settings: dict, count_file: Callable[[Path], dict[str, int]],
    root: Path | None = None,
) -> dict[str, int]:
    """Train / val / all counts summed over ``files``, from the manifest where it has them for
    these ``settings`` (what the counts depend on, JSON), else by ``count_file(path)`` (one parse
    of the file), whose results are added to the manifest. Used by ``count_examples``."""
    key = hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    files = [Path(f) for f in files]
    root = Path(root) if root is not None else Path(os.path.commonpath([str(f.parent) for f in files]))
    manifest = manifest_path(root)
    data, counts, changed = _read(manifest), [], False
    for f in files:
        name = os.path.relpath(f, root)
        entry = data["files"].get(name)
        if entry is None or entry.get("stamp") != _stamp(f):  # new or changed: counted again
            entry = data["files"][name] = {"stamp": _stamp(f), "counts": {}}
        if key not in entry["counts"]:
            entry["counts"][key], changed = count_file(f), True
        counts.append(entry["counts"][key])
    if changed:
        _write(manifest, data)
    return {split: sum(c[split] for c in counts) for split in ("train", "val", "all")}
