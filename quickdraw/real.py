"""The real test set shipped with the course: Google's own drawings of the built-in classes.

``data/real/simplified/<class>.ndjson`` holds, byte for byte, the first 25 drawings of
Google's ``simplified`` file of every built-in class; ``data/real/raw/`` the first raw lines
(with timings) of five of them. Google's Quick, Draw! dataset, CC BY 4.0: ``data/README.md``
gives the attribution and sources, ``data/real/manifest.json`` each file's size, drawings and
SHA-256 (:func:`verify_real_test_set`). A model trained on the built-in doodles is scored on
them (the sim-to-real gap of notebook 06); never train on them. Made once with
``python -m quickdraw.real build <quickdraw-sample folder>``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np

from quickdraw.formats import Drawing, read_ndjson
from quickdraw.labels import LabelMap

REAL_DIR = Path(__file__).resolve().parent.parent / "data" / "real"
MANIFEST = "manifest.json"
PER_CLASS = 25  # the sample holds the first 25 drawings of every simplified file
RAW_CLASSES = ("apple", "diamond", "eye", "fish", "house")  # the built-in classes with raw files
RAW_PER_CLASS = 5
LICENCE = "CC BY 4.0"
ATTRIBUTION = (
    "Quick, Draw! dataset by Google, Inc., https://quickdraw.withgoogle.com/data, "
    "licensed under CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/)"
)
#: Where the sample's files came from (see data/README.md).
SOURCES = {
    "simplified": {
        "dir": "lamnguyen5464__Sketch-dataset/data",
        "repository": "https://github.com/lamnguyen5464/Sketch-dataset",
        "commit": "51bbdbb35220f1639cd219f926b619e490201518",
        "origin": "https://storage.googleapis.com/quickdraw_dataset/full/simplified/<class>.ndjson"
        ", lines 1-25",
    },
    "raw": {
        "dir": "borismus__exupery/public/sketches",
        "repository": "https://github.com/borismus/exupery",
        "commit": "5ab788cb27b61d790d9f289d2fb3944748115f85",
        "origin": "https://storage.googleapis.com/quickdraw_dataset/full/raw/<class>.ndjson, first lines",
    },
}


class RealDataError(RuntimeError):
    """The shipped real test set is missing or does not match its manifest."""


def real_test_dir(kind: str = "simplified", root: str | Path | None = None) -> Path:
    """``data/real/simplified`` (25 drawings per built-in class) or ``data/real/raw``: a Google
    ndjson folder with ``labels.json`` (the built-in classes). Used in notebook 06."""
    if kind not in ("simplified", "raw"):
        raise ValueError(f"kind must be 'simplified' or 'raw', not {kind!r}")
    return Path(root or REAL_DIR) / kind


def read_real_test(kind: str = "simplified") -> list[Drawing]:
    """Every drawing of the shipped real test set, class by class in label order, with
    ``label`` set. ``strict`` reading: a damaged file raises. Used in notebook 06."""
    folder = real_test_dir(kind)
    labels = LabelMap.load(folder)
    out: list[Drawing] = []
    for name in labels:
        path = folder / f"{name}.ndjson"
        if path.is_file():  # raw files exist for a few classes only
            out.extend(read_ndjson(path, labels=labels, strict=True))
    if not out:
        raise RealDataError(f"no drawings in {folder}")
    return out


def load_real_test(
    image_size: int = 32, *, encoding: str = "plain"
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The real test set as arrays: ``float32`` images ``(N, size, size, C)`` in [0, 1],
    ``int64`` labels and the class names, rendered like ``make_dataset`` renders.
    Runs without TensorFlow. Used in notebook 06 and ``scripts/check_sim_to_real.py``."""
    from quickdraw.render import render_batch

    drawings = read_real_test()
    images = render_batch([d.strokes for d in drawings], image_size, encoding=encoding)
    labels = np.array([d.label for d in drawings], np.int64)
    return images.astype(np.float32) / 255.0, labels, list(LabelMap.load(real_test_dir()))


def verify_real_test_set(root: str | Path | None = None) -> dict:
    """Check every shipped file against ``manifest.json`` (present, same bytes, same
    number of drawings) and that the licence file is there; return the manifest.
    Raises :class:`RealDataError` naming the first problem. Used by the tests."""
    root = Path(root or REAL_DIR)
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RealDataError(f"cannot read {root / MANIFEST}: {exc}") from None
    if not (root / "LICENSE").is_file():
        raise RealDataError(f"no licence file in {root}")
    for rel, entry in manifest["files"].items():
        path = root / rel
        if not path.is_file():
            raise RealDataError(f"{path} is missing")
        data = path.read_bytes()
        if len(data) != entry["bytes"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise RealDataError(f"{path} differs from the manifest (size or SHA-256)")
        lines = sum(1 for line in data.splitlines() if line.strip())
        if lines != entry["drawings"]:
            raise RealDataError(f"{path}: {lines} drawings, the manifest says {entry['drawings']}")
    return manifest


def build_real_test_set(sample: str | Path, out: str | Path | None = None) -> Path:
    """Copy the real test set out of a sample folder laid out like the course authors'
    (:data:`SOURCES`): whole simplified files, the first :data:`RAW_PER_CLASS` lines of the raw
    ones, byte for byte, with ``labels.json``, ``manifest.json`` and ``LICENSE``."""
    from quickdraw.synthetic import CLASSES

    sample, out = Path(sample), Path(out or REAL_DIR)
    classes = list(CLASSES)
    files: dict[str, dict] = {}
    for kind, names, limit in (("simplified", classes, None), ("raw", list(RAW_CLASSES), RAW_PER_CLASS)):
        src_dir = sample / SOURCES[kind]["dir"]
        dst_dir = out / kind
        dst_dir.mkdir(parents=True, exist_ok=True)
        LabelMap(classes).save(dst_dir / "labels.json")
        for name in names:
            src = src_dir / f"{name}.ndjson"
            data = src.read_bytes()
            if limit is not None:
                data = b"".join(data.splitlines(keepends=True)[:limit])
            dst = dst_dir / src.name
            dst.write_bytes(data)
            files[f"{kind}/{src.name}"] = {
                "bytes": len(data),
                "drawings": sum(1 for line in data.splitlines() if line.strip()),
                "sha256": hashlib.sha256(data).hexdigest(),
                "source": f"{SOURCES[kind]['repository']}/blob/{SOURCES[kind]['commit']}/"
                + f"{SOURCES[kind]['dir'].split('/', 1)[1]}/{name}.ndjson".replace(" ", "%20"),
                "whole_file": limit is None,
            }
    manifest = {
        "licence": LICENCE,
        "attribution": ATTRIBUTION,
        "classes": classes,
        "per_class": PER_CLASS,
        "sources": SOURCES,
        "files": files,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    (out / "LICENSE").write_text(
        f"The files under this folder are Google's Quick, Draw! data, copied unchanged.\n\n{ATTRIBUTION}.\n"
        "The licence's full text: https://creativecommons.org/licenses/by/4.0/legalcode\n"
        "Provenance of every file: ../README.md and manifest.json.\n",
        encoding="utf-8",
    )
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m quickdraw.real build <sample folder> [--out DIR]``: build the set, then verify it."""
    p = argparse.ArgumentParser(description="Copy the course's real Quick, Draw! test set out of a sample")
    p.add_argument("command", choices=["build"])
    p.add_argument("sample", type=Path, help="a quickdraw-sample folder")
    p.add_argument("--out", type=Path, default=REAL_DIR)
    args = p.parse_args(argv)
    print(f"wrote {build_real_test_set(args.sample, args.out)}")
    m = verify_real_test_set(args.out)
    n = sum(f["drawings"] for f in m["files"].values())
    print(f"ok: {len(m['files'])} files, {n} drawings, {len(m['classes'])} classes ({m['licence']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
