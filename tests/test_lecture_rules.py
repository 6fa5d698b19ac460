"""Every notebook can be presented in its slot (issue 45, items 2 and 3): short visible code
cells, programs of one idea, no line over 99 characters, a short Overview, no words about the
course's machinery in the prose. The figures and the rules are tools/lesson_lines.py's
(``python tools/lesson_lines.py --check`` prints them for every notebook)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.lesson_lines import violations
from utils import config

NOTEBOOKS = sorted(config.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))  # the English notebooks


def test_every_notebook_is_held_to_the_rules() -> None:
    assert len(NOTEBOOKS) >= 10


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_keeps_the_lecture_rules(path: Path) -> None:
    problems = violations(path)
    assert not problems, f"{path.name} breaks issue 45's rules:\n" + "\n".join(problems)
