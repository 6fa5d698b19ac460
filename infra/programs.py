"""The programs a notebook starts, taken from its ``%%writefile programs/NAME`` cells.

A worker or a variant a notebook runs in a fresh process is written whole in the notebook,
in a cell that begins ``%%writefile programs/NAME.py`` (the lesson on the page). Running the
cell writes the file into the kernel's working directory; tests, benchmarks and the GPU check
that need the same program without running the notebook take it from the notebook itself
with :func:`extract`, so there is one copy of every program. Used by ``tests/`` and
``benchmarks/``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from utils.config import NOTEBOOKS_DIR

FOLDER = "programs"
_CELL = re.compile(rf"^%%writefile\s+{FOLDER}/(?P<name>[\w.-]+\.py)\s*\n")


def programs_in(notebook: str | Path) -> dict[str, str]:
    """``{name: source}`` of every ``%%writefile programs/NAME.py`` cell of ``notebook``
    (a path, or a notebook's number such as ``"04"``). Raises on a name written twice."""
    path = _notebook_path(notebook)
    found: dict[str, str] = {}
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        match = _CELL.match(source) if cell["cell_type"] == "code" else None
        if match:
            if match["name"] in found:
                raise ValueError(f"{path.name} writes {FOLDER}/{match['name']} twice")
            found[match["name"]] = source[match.end():]
    return found


def extract(notebook: str | Path, destination: str | Path) -> dict[str, Path]:
    """Write the programs of ``notebook`` into ``destination``; returns ``{name: path}``."""
    folder = Path(destination)
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, source in programs_in(notebook).items():
        written[name] = folder / name
        written[name].write_text(source, encoding="utf-8")
    return written


def _notebook_path(notebook: str | Path) -> Path:
    text = str(notebook)
    if re.fullmatch(r"\d\d", text):
        matches = sorted(NOTEBOOKS_DIR.glob(f"{text}_*.ipynb"))
        if len(matches) != 1:
            raise FileNotFoundError(f"no single notebook {text}_*.ipynb in {NOTEBOOKS_DIR}")
        return matches[0]
    return Path(notebook)
