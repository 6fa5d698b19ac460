"""Download the real Quick, Draw! data (never called by the course at run time).

:func:`download_google` fetches categories from Google's public bucket (CC BY 4.0,
``https://storage.googleapis.com/quickdraw_dataset/full/<kind>/<Category>.ndjson|.npy``) into
``dest/<kind>/``, which ``make_dataset(dest / kind)`` reads. ``limit_per_class`` is applied
while downloading (ndjson streamed line by line, ``.npy`` read header first); finished files
are recorded in ``dest/<kind>/.downloads.json`` and not fetched again. Kaggle's competition
files need an account: :data:`KAGGLE_INSTRUCTIONS`. Command line:
``python -m quickdraw.download cat "The Eiffel Tower" --limit 1000``. Explained in notebook 06.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import urllib.request
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import numpy as np

from quickdraw.formats import NPY_SIDE
from quickdraw.labels import google_categories, google_name

GOOGLE_BASE_URL = "https://storage.googleapis.com/quickdraw_dataset/full"
KINDS = {"simplified": ".ndjson", "raw": ".ndjson", "numpy_bitmap": ".npy"}
KAGGLE_COMPETITION = "quickdraw-doodle-recognition"
KAGGLE_INSTRUCTIONS = f"""\
Kaggle's files need an account that accepted the rules of the competition
https://www.kaggle.com/c/{KAGGLE_COMPETITION} and the `kaggle` command line tool:

    pip install kaggle          # and put your API token in ~/.kaggle/kaggle.json
    kaggle competitions download -c {KAGGLE_COMPETITION} -f train_simplified.zip -p data/kaggle
    kaggle competitions download -c {KAGGLE_COMPETITION} -f test_simplified.csv -p data/kaggle
    cd data/kaggle && unzip train_simplified.zip -d train_simplified

then ``make_dataset("data/kaggle", ...)`` reads train_simplified/<word>.csv (340 classes)."""

_CACHE = ".downloads.json"


def google_url(category: str, kind: str = "simplified", base_url: str = GOOGLE_BASE_URL) -> str:
    """The bucket address of one category file (Google spelling, URL-encoded)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, not {kind!r}")
    return f"{base_url.rstrip('/')}/{kind}/{quote(google_name(category))}{KINDS[kind]}"


def _cached(entry: dict[str, Any] | None, path: Path, limit: int | None) -> bool:
    if entry is None or not path.is_file():
        return False
    return bool(entry.get("complete")) or (limit is not None and entry.get("rows", 0) >= limit)


def _copy_ndjson(src: IO[bytes], dst: IO[bytes], limit: int | None) -> tuple[int, bool]:
    rows = 0
    for line in src:
        if limit is not None and rows >= limit:
            return rows, False
        if not line.strip():
            continue
        if not line.endswith(b"\n"):
            line += b"\n"
        dst.write(line)
        rows += 1
    return rows, True


def _copy_npy(src: IO[bytes], dst_path: Path, limit: int | None, url: str) -> tuple[int, bool]:
    """Read a .npy header from a stream, then only the rows wanted (never pickles)."""
    version = np.lib.format.read_magic(src)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(src)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(src)
    else:
        raise ValueError(f"{url}: unsupported .npy version {version}")
    if dtype != np.uint8 or fortran or len(shape) != 2 or shape[1] != NPY_SIDE * NPY_SIDE:
        raise ValueError(f"{url}: expected a C-order uint8 (N, 784) array, got {dtype} {shape}")
    n = shape[0] if limit is None else min(limit, shape[0])
    data = src.read(n * shape[1])
    if len(data) != n * shape[1]:
        raise ValueError(f"{url}: truncated download ({len(data)} of {n * shape[1]} bytes)")
    with open(dst_path, "wb") as f:  # a file object: np.save adds no suffix
        np.save(f, np.frombuffer(data, np.uint8).reshape(n, shape[1]), allow_pickle=False)
    return n, n == shape[0]


def download_google(
    categories: Iterable[str],
    dest: str | Path,
    *,
    kind: str = "simplified",
    limit_per_class: int | None = 1000,
    base_url: str = GOOGLE_BASE_URL,
    opener: Callable[[str], IO[bytes]] | None = None,
    progress: bool = True,
    overwrite: bool = False,
) -> dict[str, Path]:
    """Fetch categories from Google's bucket into ``dest/<kind>/``; return name -> file.

    ``limit_per_class`` keeps the first N drawings of each category (None: the whole file,
    up to hundreds of MB). Cached files are reused unless ``overwrite``. ``opener`` and
    ``base_url`` can point elsewhere (a ``file://`` mirror). Unknown names raise first.
    """
    from tqdm.auto import tqdm

    names = [google_name(c) for c in categories]
    if unknown := [n for n in names if n not in google_categories()]:
        raise ValueError(f"not Quick, Draw! categories: {unknown}")
    folder = Path(dest) / kind
    folder.mkdir(parents=True, exist_ok=True)
    try:
        cache = json.loads((folder / _CACHE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cache = {}
    opener = opener or partial(urllib.request.urlopen, timeout=60)
    out: dict[str, Path] = {}
    for name in tqdm(names, desc=f"download {kind}", unit="class", disable=not progress):
        path = folder / f"{name}{KINDS[kind]}"
        out[name] = path
        if not overwrite and _cached(cache.get(name), path, limit_per_class):
            continue
        url = google_url(name, kind, base_url)
        tmp = path.with_name(f".{path.name}.part")
        try:
            with opener(url) as src:
                if kind == "numpy_bitmap":
                    rows, complete = _copy_npy(src, tmp, limit_per_class, url)
                else:
                    with open(tmp, "wb") as dst:
                        rows, complete = _copy_ndjson(src, dst, limit_per_class)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        cache[name] = {"url": url, "rows": rows, "complete": complete, "limit": limit_per_class}
        (folder / _CACHE).write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line: download categories (``--list`` prints the 345 names)."""
    p = argparse.ArgumentParser(description="Download Quick, Draw! categories from Google's public bucket.")
    p.add_argument("categories", nargs="*", help="category names, Google or Kaggle spelling")
    p.add_argument("--kind", choices=sorted(KINDS), default="simplified")
    p.add_argument("--limit", type=ast.literal_eval, default=1000, help="drawings per class (None: all)")
    p.add_argument("--dest", default="data/quickdraw")
    p.add_argument("--list", action="store_true", help="print the category names and exit")
    p.add_argument("--kaggle", action="store_true", help="print how to get Kaggle's files and exit")
    args = p.parse_args(argv)
    if args.list or args.kaggle or not args.categories:
        print("\n".join(google_categories()) if args.list else KAGGLE_INSTRUCTIONS)
        return 0
    files = download_google(args.categories, args.dest, kind=args.kind, limit_per_class=args.limit)
    for name, path in files.items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
