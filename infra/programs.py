"""The programs the notebooks write in ``%%writefile programs/NAME.py`` cells, read from the
notebooks themselves, so there is one copy of every program. Used by ``tests/test_programs.py``,
which lints them (ruff skips a cell that starts with a cell magic)."""

from __future__ import annotations

import json
import re
from pathlib import Path

FOLDER = "programs"
_CELL = re.compile(rf"^%%writefile\s+{FOLDER}/(?P<name>[\w.-]+\.py)\s*\n")


def programs_in(notebook: str | Path) -> dict[str, str]:
    """``{name: source}`` of every ``%%writefile programs/NAME.py`` cell of the notebook file
    ``notebook``. Raises on a name written twice."""
    found: dict[str, str] = {}
    for cell in json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        match = _CELL.match(source) if cell["cell_type"] == "code" else None
        if match:
            if match["name"] in found:
                raise ValueError(f"{Path(notebook).name} writes {FOLDER}/{match['name']} twice")
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
