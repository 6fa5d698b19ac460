"""Keep notebooks in git clean: no outputs, no execution counts, whitelisted metadata.

Cell metadata kept: ``tags``, ``slideshow.slide_type`` (the slide types of
tools/slidemeta.py, which ``make format`` runs next) and, on a **check cell**, what folds it
away: ``jupyter.source_hidden`` (JupyterLab) and ``cellView: form`` (Colab); everything else
goes. Notebooks of
nbformat 4.5+ need an ``id`` on every cell (nbformat warns, and will refuse, otherwise): a
missing one is derived from the cell's position and source, so cleaning stays deterministic.

``python tools/nbclean.py [--check] NB...``: ``make format`` rewrites notebooks with
:func:`clean_notebook`; ``make lint`` (``--check``) and the hygiene test check that doing so
would change nothing (exit code 1 and the list of notebooks that need it). Project tooling,
not used inside notebooks.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

KERNELS = {
    "python3": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
    "horovod": {"name": "horovod", "display_name": "Python (horovod)", "language": "python"},
}
ALLOWED_CELL_METADATA = {"tags", "slideshow", "jupyter", "cellView"}
CHECK_TAG = "check"
SLIDE_TYPES = ("slide", "subslide", "fragment", "skip", "notes", "-")


def is_check(cell: dict[str, Any]) -> bool:
    """A **check cell**: a code cell tagged ``check``, its first line ``#@title Check: …``.

    It holds the asserts that guard the claim the cell before it prints; it opens folded in
    JupyterLab and Colab, and slides skip it."""
    return cell.get("cell_type") == "code" and CHECK_TAG in cell.get("metadata", {}).get("tags", [])


def _keep_folding(metadata: dict[str, Any], check: bool) -> None:
    """A check cell gets the metadata that folds it and the slide type skip; no other cell folds."""
    if check:
        metadata["jupyter"] = {"source_hidden": True}
        metadata["cellView"] = "form"
        metadata["slideshow"] = {"slide_type": "skip"}
    else:
        metadata.pop("jupyter", None)
        metadata.pop("cellView", None)


def clean_notebook(nb: dict[str, Any]) -> dict[str, Any]:
    """Return a cleaned copy of a notebook given as parsed JSON."""
    nb = json.loads(json.dumps(nb))
    kernel_name = nb.get("metadata", {}).get("kernelspec", {}).get("name", "python3")
    if kernel_name not in KERNELS:
        kernel_name = "python3"
    nb["metadata"] = {"kernelspec": dict(KERNELS[kernel_name]), "language_info": {"name": "python"}}
    if (nb.get("nbformat", 4), nb.get("nbformat_minor", 0)) >= (4, 5):
        _give_cells_ids(nb.get("cells", []))
    for cell in nb.get("cells", []):
        metadata = {k: v for k, v in cell.get("metadata", {}).items() if k in ALLOWED_CELL_METADATA}
        if not metadata.get("tags", True):
            metadata.pop("tags")
        _keep_folding(metadata, is_check(cell))
        if "slideshow" in metadata:
            slide_type = (metadata["slideshow"] or {}).get("slide_type")
            if slide_type in SLIDE_TYPES:
                metadata["slideshow"] = {"slide_type": slide_type}
            else:
                metadata.pop("slideshow")
        cell["metadata"] = metadata
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        else:
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
            if not cell.get("attachments"):
                cell.pop("attachments", None)
    return nb


def _give_cells_ids(cells: list[dict[str, Any]]) -> None:
    """Give every cell without an ``id`` a deterministic one, unique within the notebook."""
    taken = {cell["id"] for cell in cells if cell.get("id")}
    for index, cell in enumerate(cells):
        if cell.get("id"):
            continue
        source = "".join(cell.get("source", []))
        digest = hashlib.sha1(f"{index}:{source}".encode()).hexdigest()
        length = 8
        while digest[:length] in taken:  # another cell already has it: take more of the digest
            length += 1
        cell["id"] = digest[:length]
        taken.add(cell["id"])


def dumps(nb: dict[str, Any]) -> str:
    """Serialise the way Jupyter does (indent 1, non-ASCII kept, trailing newline)."""
    return json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def needs_cleaning(path: Path) -> bool:
    """True when :func:`clean_notebook` would change the file at ``path``."""
    text = path.read_text(encoding="utf-8")
    return dumps(clean_notebook(json.loads(text))) != text


def clean_file(path: Path) -> bool:
    """Clean ``path`` in place; return True if it changed."""
    text = path.read_text(encoding="utf-8")
    new = dumps(clean_notebook(json.loads(text)))
    if new != text:
        path.write_text(new, encoding="utf-8")
        return True
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Strip outputs and normalise notebook metadata.")
    parser.add_argument("--check", action="store_true", help="report, do not write")
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args(argv)
    dirty = []
    for path in args.notebooks:
        if args.check:
            if needs_cleaning(path):
                dirty.append(path)
        elif clean_file(path):
            print(f"cleaned {path}")
    if dirty:
        print("not clean (run `make format`): " + ", ".join(map(str, dirty)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
