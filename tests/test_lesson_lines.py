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


def _cells(tmp_path: Path, cells: list[dict], name: str = "nb.ipynb") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"cells": cells}))
    return path


def _code(source: str, tags: list[str] | None = None) -> dict:
    return {"cell_type": "code", "source": source, "metadata": {"tags": tags} if tags else {}}


def _md(source: str) -> dict:
    return {"cell_type": "markdown", "source": source, "metadata": {}}


SETUP = "import utils\n\ncourse = utils.setup(chapter=1)  # " + "x" * 90 + "\n"
LONG = "\n".join(f"x{i} = {i}" for i in range(31))  # a 31-line cell


def _lecture_notebook(tmp_path: Path) -> Path:
    return _cells(tmp_path, [
        _md("# 1 · Title\n"),
        _md("## Overview\n\nYou will learn:\n\n* one thing;\n* another.\n\n**Lecture slot:** ~30 min (core: §1)\n"),
        _md("## Setup\n"),
        _code(SETUP),  # the setup cell: a visible cell (3 lines), its long line counted apart
        _md("## 1 · Core\n\nThe smoke test of the harness (`nbval` and `make test` in code spans don't count).\n\n"
            "```\nrehearsal in a code block\n```\n"),
        _code("a = 1\nb = 2\n\nprint(a + b)\n\n"),  # 4 lines: blank line inside counted, trailing not
        _code("#@title Check: three\nassert a + b == 3\nassert b == 2  # " + "y" * 90 + "\n", ["check"]),
        _code("x = 1\n"),
        _code(LONG),
        _code("%%writefile programs/w.py\n" + "\n".join(f"assert f({i})" for i in range(61)) + "\n"),
        _md("### A detail\n\nCI runs it."),
        _code("y = 2\nassert y > x\n"),
        _md("## 2 · More — *optional*\n"),
        _code(LONG),
        _code(LONG),
        _code("z = 3\n"),
        _code("z = 4\n"),
    ])


def test_lecture_figures_count_visible_cells_only(tmp_path: Path) -> None:
    from tools.lesson_lines import lecture

    f = lecture(_lecture_notebook(tmp_path))
    assert f["cells"] == 10  # check cells left out; the setup cell and the program counted as cells
    assert f["median"] == 3.5  # of 3, 4, 1, 31, 62, 2, 31, 31, 1, 1 lines — setup and program included
    assert f["over 30"] == [8, 13, 14] and f["programs"] == [(9, 62)] and f["program"] == 62
    assert f["long lines"] == [(3, 3), (6, 3)] and f["setup long lines"] == 1  # check and setup cells too
    assert f["overview"] == 8  # every line of the cell, heading and blank lines included
    assert f["asserts"] == {"visible": 62, "check": 2}  # the program's asserts are visible ones
    assert sorted(w for _, w in f["words"]) == ["CI", "harness", "smoke"]  # code spans and blocks apart
    assert f["core slides"] == 5  # title, Overview, Setup (no slide type given: an H2), §1, the H3


def test_rules_name_what_is_broken(tmp_path: Path) -> None:
    from tools.lesson_lines import violations

    problems = violations(_lecture_notebook(tmp_path))
    text = "\n".join(problems)
    assert "3 visible code cells over 30 lines > 2 (cells [8, 13, 14])" in text
    assert "%%writefile programs over 60 lines: cells 9 (62)" in text
    assert "2 code lines over 99 characters (cells [3, 6]) — 1 in the setup cell" in text
    assert "machinery words" in text and "median" not in text and "Overview" not in text
    good = _cells(tmp_path, [
        _md("## Overview\n\n" + "line\n" * 10),  # 12 lines: the bound
        _code(SETUP.replace("x" * 90, "")),
        _md("## 1 · Core\n\nThe course's ring is not the course's machinery… but the words are held anyway.\n"),
        _code("a = 1\n"),
    ], "good.ipynb")
    assert violations(good) == ["machinery words in the prose: [2] \"The course's\", [2] \"the course's\""]
    good.write_text(good.read_text().replace("The course's ring is not the course's", "Our ring"))
    assert violations(good) == []
    no_overview = _cells(tmp_path, [_code("a = 1\n")], "bare.ipynb")
    assert violations(no_overview) == ["no `## Overview` cell"]


def test_check_flag_exits_1_on_a_broken_rule(tmp_path: Path, capsys) -> None:
    from tools.lesson_lines import main

    path = _lecture_notebook(tmp_path)
    assert main([str(path)]) == 0  # the tables only
    assert main([str(path), "--check"]) == 1
    out = capsys.readouterr().out
    assert "cells median" in out and "nb.ipynb: 3 visible code cells over 30" in out
    assert out.rstrip().endswith("lecture rules: 4 broken")
