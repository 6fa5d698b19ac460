"""tools/lesson_lines.py: the share of lesson lines, core and appendix counted apart."""

from __future__ import annotations

import json
from pathlib import Path

from tools.lesson_lines import count


def _notebook(tmp_path: Path, cells: list[tuple[str, str]]) -> Path:
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": t, "source": s} for t, s in cells]}))
    return path


def test_lesson_lines_are_counted_in_core_and_appendix(tmp_path: Path) -> None:
    path = _notebook(tmp_path, [
        ("code", "import utils\n\ncourse = utils.setup(chapter=1)\n"),  # the setup cell: left out
        ("code", "strategy = tf.distribute.MirroredStrategy()\nprint(strategy)\n# a comment\n"),
        ("code", "%%writefile programs/w.py\nwith strategy.scope():\n    model = keras.Sequential([])\nx = 1\n"),
        ("code", "table = pd.DataFrame(rows)  # extra code – a table\nrun(strategy)  # extra code – plumbing\n"),
        ("markdown", "## Appendix\n"),
        ("code", "model.fit(ds)\nassert ok\n"),
    ])
    c = count(path)
    assert (c["core code"], c["core lesson"]) == (7, 3)  # strategy = …, scope, keras.Sequential; not print(strategy)
    assert (c["all code"], c["all lesson"]) == (9, 4)


def test_sections_marked_optional_are_not_core(tmp_path: Path) -> None:
    path = _notebook(tmp_path, [
        ("markdown", "## 1 · Core\n"),
        ("code", "model.fit(ds)\n"),
        ("markdown", "## 2 · Extra — *optional*\n"),
        ("code", "model.fit(ds)\nx = 1\n"),
        ("markdown", "## 3 · Core again\n"),
        ("code", "strategy.run(step)\n"),
    ])
    c = count(path)
    assert (c["core code"], c["core lesson"], c["all code"], c["all lesson"]) == (2, 2, 4, 3)
