"""The programs the notebooks write with ``%%writefile programs/NAME.py`` (``infra.programs``):
each name written by one notebook only (they share the kernel's ``programs/`` folder), and
each program valid Python that passes the project's ruff rules — ruff skips a notebook cell
that starts with a cell magic, so without this test nothing would lint them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infra import programs
from utils.config import NOTEBOOKS_DIR, PROJECT_ROOT

NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))


def test_every_program_name_is_written_by_one_notebook() -> None:
    writers: dict[str, list[str]] = {}
    for notebook in NOTEBOOKS:
        for name in programs.programs_in(notebook):
            writers.setdefault(name, []).append(notebook.name)
    assert writers, "no notebook writes a program"
    assert {name: nbs for name, nbs in writers.items() if len(nbs) > 1} == {}


def test_a_program_written_twice_in_one_notebook_is_refused(tmp_path: Path) -> None:
    cell = {"cell_type": "code", "source": ["%%writefile programs/a.py\n", "print(1)\n"]}
    notebook = tmp_path / "99_x.ipynb"
    notebook.write_text(__import__("json").dumps({"cells": [cell, cell]}))
    with pytest.raises(ValueError, match="writes programs/a.py twice"):
        programs.programs_in(notebook)


@pytest.mark.parametrize("notebook", [nb for nb in NOTEBOOKS if programs.programs_in(nb)], ids=lambda p: p.name[:2])
def test_programs_pass_ruff(notebook: Path, tmp_path: Path) -> None:
    written = programs.extract(notebook, tmp_path)
    # E402: a program sets what TensorFlow reads at start-up (CUDA_VISIBLE_DEVICES) before importing it;
    # W292: a cell's last line has no newline
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(PROJECT_ROOT / "pyproject.toml"),
         "--ignore", "E402,W292", *map(str, written.values())],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
