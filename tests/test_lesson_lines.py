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


def test_measured_seconds_of_core_and_all_cells_beside_the_slot(tmp_path: Path, capsys) -> None:
    from tools.lesson_lines import main

    path = tmp_path / "05_x.ipynb"
    path.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "source": "## Overview\n**Lecture slot:** ~30 min (core: §1)\n## 1 · Core\n"},
        {"cell_type": "code", "source": "model.fit(ds)\n"},
        {"cell_type": "markdown", "source": "## 2 · More — *optional*\n"},
        {"cell_type": "code", "source": "x = 1\n"},
    ]}))
    report = tmp_path / "notebooks.xml"  # as pytest --junitxml writes it for nbval (code cells numbered from 0)
    report.write_text('<testsuites><testsuite name="pytest">'
                      '<testcase classname="notebooks.05_x.ipynb" name="Cell 0" time="90.0" />'
                      '<testcase classname="notebooks.05_x.ipynb" name="Cell 1" time="30.0" />'
                      '<testcase classname="notebooks.zh.05_x.ipynb" name="Cell 1" time="99.0" />'  # zh: not counted beside the English run
                      '</testsuite></testsuites>')
    assert count(path)["slot minutes"] == 30 and count(path)["core cells"] == [0]
    main([str(path), "--times", str(report)])
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[-4:] == ["30", "min", "1.5m", "2.0m"]  # slot, core 90 s, all 120 s
    # the Chinese edition's run (same cells, same code) stands for an English notebook not run
    only_zh = tmp_path / "zh.xml"
    only_zh.write_text('<testsuites><testsuite name="pytest">'
                       '<testcase classname="notebooks.zh.05_x.ipynb" name="Cell 0" time="60.0" />'
                       '<testcase classname="notebooks.zh.05_x.ipynb" name="Cell 1" time="60.0" />'
                       '</testsuite></testsuites>')
    main([str(path), "--times", str(only_zh)])
    assert capsys.readouterr().out.splitlines()[1].split()[-4:] == ["30", "min", "1.0m", "2.0m"]
