"""How much of each notebook is the lesson: ``python tools/lesson_lines.py [notebooks...]``.

A **lesson line** is a line of code a student would write to train a model on several devices
or machines: building the model, optimizer and loss, a strategy and its scope, distributing a
dataset, the training step or ``fit``, device and cluster configuration (``tf.config``,
``TF_CONFIG``, cluster resolvers, ``CUDA_VISIBLE_DEVICES``), collectives and reductions,
checkpoints and fault tolerance, Horovod, DTensor, mixed precision and XLA switches. Everything
else — tables, prints, plots, asserts, timing, process orchestration, lines marked
``# extra code`` — is not. Code lines are non-blank, non-comment lines of code cells, the
``%%writefile`` programs included (their magic line excluded); the setup cell is left out (the
same in every notebook).

With ``--times REPORT.xml`` (the JUnit reports ``make test`` writes for the notebooks into
``build/test-reports/``) it adds the measured seconds of the core's cells and of all cells under
smoke settings beside the slot the notebook's Overview states (``**Lecture slot:** ~N min``):
the machine's share of a live run, the rest being the lecturer's talking.

The **core** of a notebook is the part that fits its lecture slot: every section but those whose
``##`` heading says *optional*, and nothing after an ``## Appendix`` heading. The table prints, per notebook, the core's
code lines, lesson lines and their share, and the same for the whole notebook. The patterns
are a heuristic, the same for every notebook, so shares compare notebooks and versions, not
absolute truths.

A second table, **the lecture figures** (issue 45), says whether a notebook can be presented in
its slot. Over the **visible** code cells — every code cell but the check cells (tagged
``check``: folded away, slides skip them); the setup cell is one of them, as a reader sees it:

* ``cells``: visible code cells; ``median``: their median length in lines, ``%%writefile``
  programs included (a cell's lines: all lines of its source, its magic line and blank ones
  inside included, leading and trailing blank lines not);
* ``>30``: visible cells over 30 lines, programs apart; ``prog``: the longest ``%%writefile``
  program's lines (its magic line counted);
* ``>99``: code lines over 99 characters in *every* code cell (check cells, programs and the
  setup cell included; ``(setup N)`` says how many of them are the setup cell's, which is the
  same in every notebook and changes in all of them at once);
* ``overview``: the lines of the ``## Overview`` Markdown cell, its heading and blank lines counted;
* ``asserts``: assert statements in visible cells (programs included) / in check cells —
  together the notebook's guarded claims;
* ``words``: words about the course's machinery in the Markdown prose, code spans and code blocks
  removed (:data:`MACHINERY`);
* ``slides``: the core's slides (cells of slide type ``slide`` or ``subslide``, skipped cells
  not counted).

``--check`` holds every notebook to issue 45's rules (:data:`RULES`) and exits 1, naming the
cells, when one is broken; ``tests/test_lecture_rules.py`` does the same per notebook.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LESSON = re.compile(
    r"tf\.distribute|strategy\.|\.scope\(\)|distribute_dataset|distribute_datasets_from_function"
    r"|experimental_local_results|replica_context|ReduceOp|all_reduce|\.reduce\(|CommunicationOptions"
    r"|TF_CONFIG|ClusterResolver|cluster_resolver|CUDA_VISIBLE_DEVICES|TF_FORCE_GPU_ALLOW_GROWTH"
    r"|tf\.config\.|LogicalDeviceConfiguration|keras\.(Sequential|Model|Input|layers|optimizers|losses|metrics"
    r"|callbacks|mixed_precision|utils\.set_random_seed)|\.compile\(|\.fit\(|\.evaluate\(|\.predict\("
    r"|GradientTape|\.gradient\(|apply_gradients|optimizer\.apply|compute_average_loss|tf\.nn\.compute_"
    r"|tf\.function|tf\.data\.|\.shard\(|AutoShardPolicy|auto_shard|tf\.train\.Checkpoint|CheckpointManager"
    r"|BackupAndRestore|PreemptionCheckpointHandler|\bhvd\.|horovod|dtensor|jit_compile|recompute_grad"
    r"|set_global_policy|LossScaleOptimizer|tf\.distribute\.Server|ClusterCoordinator|build_cnn|build_model"
)
EXTRA = re.compile(r"#\s*extra code")
APPENDIX = re.compile(r"^#{1,3}\s*Appendix\b", re.I | re.M)
SECTION = re.compile(r"^## .*$", re.M)
OPTIONAL = re.compile(r"\boptional\b", re.I)
SLOT = re.compile(r"\*\*Lecture slot:\*\*\s*~?\s*(\d+)\s*min")
NBVAL_CELL = re.compile(r"Cell (\d+)$")


CHECK_TAG = "check"  # tools/nbclean.py: a code cell with this tag holds the folded asserts of a claim
# Words about the course's own machinery, looked for in Markdown prose (code spans and blocks removed)
MACHINERY = re.compile(
    r"\brehears\w*|\bsmoke\w*|\bnbval\b|\bharness\w*|\bthe course's\b|\bmake test\b|(?-i:\bCI\b)", re.I
)
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
ASSERT_LINE = re.compile(r"^\s*assert\b", re.M)
LONG_LINE = 99
RULES = {  # issue 45, items 2 and 3: the most a notebook may have
    "median": 8,  # median visible code cell, lines (programs included)
    "over 30": 2,  # visible code cells over 30 lines (programs apart)
    "program": 60,  # lines of each %%writefile program
    "long lines": 0,  # code lines over 99 characters, anywhere
    "overview": 12,  # lines of the Overview cell, heading and blank lines included
    "words": 0,  # machinery words in the prose
}


def _code_lines(source: str) -> list[str]:
    lines = source.splitlines()
    if lines and lines[0].startswith("%%writefile"):
        lines = lines[1:]
    return [x for x in lines if x.strip() and not x.strip().startswith(("#", "%", "!"))]


def count(path: Path) -> dict[str, float]:
    """Code and lesson lines of the core and of the whole notebook, and their shares."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    totals = {"core code": 0, "core lesson": 0, "all code": 0, "all lesson": 0}
    in_core, appendix = True, False
    core_cells: list[int] = []  # code cells of the core, numbered as nbval numbers them (code cells only)
    code_index = -1
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            appendix = appendix or bool(APPENDIX.search(source))
            headings = SECTION.findall(source)
            if headings:
                in_core = not appendix and not OPTIONAL.search(headings[-1])
            if slot := SLOT.search(source):
                totals.setdefault("slot minutes", int(slot.group(1)))
        if cell["cell_type"] == "code":
            code_index += 1
            if in_core:
                core_cells.append(code_index)
        if cell["cell_type"] != "code" or "course = utils.setup(" in source:
            continue
        lines = _code_lines(source)
        lesson = sum(1 for x in lines if LESSON.search(x) and not EXTRA.search(x))
        totals["all code"] += len(lines)
        totals["all lesson"] += lesson
        if in_core:
            totals["core code"] += len(lines)
            totals["core lesson"] += lesson
    totals["core share"] = totals["core lesson"] / max(totals["core code"], 1)
    totals["all share"] = totals["all lesson"] / max(totals["all code"], 1)
    totals["core cells"] = core_cells
    return totals


def _text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def is_check(cell: dict[str, Any]) -> bool:
    """A check cell: a code cell tagged ``check`` (tools/nbclean.py folds it, slides skip it)."""
    return cell.get("cell_type") == "code" and CHECK_TAG in (cell.get("metadata") or {}).get("tags", [])


def is_setup(cell: dict[str, Any]) -> bool:
    """The setup cell (``course = utils.setup(...)``; a program calling ``utils.setup`` is not it)."""
    return cell.get("cell_type") == "code" and "course = utils.setup(" in _text(cell) and not is_program(_text(cell))


def is_program(source: str) -> bool:
    return source.lstrip().startswith("%%writefile")


def shown_lines(source: str) -> list[str]:
    """A cell's lines as a reader sees them: leading and trailing blank lines dropped (a
    ``%%writefile`` cell's magic line is one of its lines)."""
    lines = source.strip("\n").splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def prose(markdown: str) -> str:
    """Markdown without its code blocks and code spans (what the machinery words are looked for in)."""
    return CODE_SPAN.sub(" ", FENCE.sub(" ", markdown))


def count_asserts(source: str) -> int:
    """Assert statements in a code cell (magic lines and a ``%%writefile`` line ignored)."""
    import ast

    lines = [
        "" if x.lstrip().startswith(("%", "!")) else x for x in source.splitlines()
    ]
    try:
        return sum(isinstance(n, ast.Assert) for n in ast.walk(ast.parse("\n".join(lines))))
    except SyntaxError:  # not Python (a shell script, a config file): count the lines
        return len(ASSERT_LINE.findall(source))


def overview_lines(cells: list[dict[str, Any]]) -> int | None:
    """Lines of the ``## Overview`` cell, heading and blank lines included (None: no Overview)."""
    for cell in cells:
        text = _text(cell).strip()
        if cell.get("cell_type") == "markdown" and re.match(r"##\s+Overview\b", text):
            return len(text.splitlines())
    return None


def _heading_slide(source: str) -> str:
    """A cell's slide type when it has none yet: by its heading, as tools/slidemeta.py gives it."""
    match = re.match(r"(#{1,6})\s", source.lstrip("\n"))
    return "" if not match else "slide" if len(match.group(1)) <= 2 else "subslide"


def lecture(path: Path) -> dict[str, Any]:
    """The lecture figures of one notebook (issue 45's table), with the cells behind them."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    visible: list[tuple[int, int]] = []  # (cell index, lines) of visible code cells, programs apart
    programs: list[tuple[int, int]] = []
    long_lines: list[tuple[int, int]] = []  # (cell index, line number)
    setup_long = 0
    asserts = {"visible": 0, "check": 0}
    words: list[tuple[int, str]] = []
    slides, in_core, appendix = 0, True, False
    for index, cell in enumerate(cells):
        source = _text(cell)
        if cell.get("cell_type") == "markdown":
            appendix = appendix or bool(APPENDIX.search(source))
            headings = SECTION.findall(source)
            if headings:
                in_core = not appendix and not OPTIONAL.search(headings[-1])
            words += [(index, m.group(0)) for m in MACHINERY.finditer(prose(source))]
        kind = (cell.get("metadata") or {}).get("slideshow", {}).get("slide_type") or _heading_slide(source)
        if in_core and kind in ("slide", "subslide") and not is_check(cell):
            slides += 1
        if cell.get("cell_type") != "code":
            continue
        for number, line in enumerate(source.splitlines(), 1):
            if len(line) > LONG_LINE:
                long_lines.append((index, number))
                setup_long += is_setup(cell)
        asserts["check" if is_check(cell) else "visible"] += count_asserts(source)
        if is_check(cell):
            continue
        n = len(shown_lines(source))
        (programs if is_program(source) else visible).append((index, n))
    sizes = [n for _, n in visible + programs]
    return {
        "cells": len(visible) + len(programs),
        "median": statistics.median(sizes) if sizes else 0,
        "over 30": [i for i, n in visible if n > 30],
        "programs": programs,
        "program": max((n for _, n in programs), default=0),
        "long lines": long_lines,
        "setup long lines": setup_long,
        "overview": overview_lines(cells),
        "asserts": asserts,
        "words": words,
        "core slides": slides,
    }


def violations(path: Path, figures: dict[str, Any] | None = None) -> list[str]:
    """Issue 45's rules a notebook breaks, each with the cells that break it (empty: none)."""
    f = figures or lecture(path)
    out = []
    if f["median"] > RULES["median"]:
        out.append(f"median visible code cell {f['median']:g} lines > {RULES['median']}")
    if len(f["over 30"]) > RULES["over 30"]:
        out.append(f"{len(f['over 30'])} visible code cells over 30 lines > {RULES['over 30']} "
                   f"(cells {f['over 30']})")
    if long := [f"{i} ({n})" for i, n in f["programs"] if n > RULES["program"]]:
        out.append(f"%%writefile programs over {RULES['program']} lines: cells {', '.join(long)}")
    if f["long lines"]:
        cells = sorted({i for i, _ in f["long lines"]})
        setup = f" — {f['setup long lines']} in the setup cell (the same in every notebook)" if f[
            "setup long lines"] else ""
        out.append(f"{len(f['long lines'])} code lines over {LONG_LINE} characters (cells {cells}){setup}")
    if f["overview"] is None:
        out.append("no `## Overview` cell")
    elif f["overview"] > RULES["overview"]:
        out.append(f"Overview {f['overview']} lines > {RULES['overview']}")
    if f["words"]:
        out.append("machinery words in the prose: " + ", ".join(f"[{i}] {w!r}" for i, w in f["words"]))
    return out


def lecture_table(paths: list[Path]) -> list[str]:
    """The lecture figures as text lines, one row per notebook and a total."""
    head = (f"{'notebook':44} {'cells':>5} {'median':>6} {'>30':>4} {'prog':>5} {'>99':>5} {'(setup)':>7} "
            f"{'overview':>8} {'asserts':>9} {'words':>5} {'slides':>6}")
    rows, total = [head], {"cells": 0, ">30": 0, ">99": 0, "vis": 0, "chk": 0, "words": 0, "slides": 0}
    for path in paths:
        f = lecture(path)
        a = f["asserts"]
        overview = "—" if f["overview"] is None else str(f["overview"])
        rows.append(
            f"{path.name:44} {f['cells']:5d} {f['median']:6g} {len(f['over 30']):4d} {f['program']:5d} "
            f"{len(f['long lines']):5d} {f['setup long lines']:7d} {overview:>8} "
            f"{a['visible']:4d}/{a['check']:<4d} {len(f['words']):5d} {f['core slides']:6d}"
        )
        for key, value in (("cells", f["cells"]), (">30", len(f["over 30"])), (">99", len(f["long lines"])),
                           ("vis", a["visible"]), ("chk", a["check"]), ("words", len(f["words"])),
                           ("slides", f["core slides"])):
            total[key] += value
    rows.append(f"{'total':44} {total['cells']:5d} {'':6} {total['>30']:4d} {'':5} {total['>99']:5d} {'':7} "
                f"{'':>8} {total['vis']:4d}/{total['chk']:<4d} {total['words']:5d} {total['slides']:6d}")
    return rows


def cell_seconds(reports: list[Path]) -> dict[str, dict[int, float]]:
    """Seconds per nbval cell, by notebook file name, from JUnit XML reports (the last report wins).

    A Chinese edition's run (notebooks/zh/: the same cells, the same code) stands for its English
    notebook when that one was not run: `make test` runs the Chinese 00 and 02 in their place."""
    seconds: dict[str, dict[int, float]] = {}
    chinese: dict[str, dict[int, float]] = {}
    for report in reports:
        for case in ET.parse(report).getroot().iter("testcase"):
            cell = NBVAL_CELL.search(case.get("name", ""))
            where = case.get("classname", "") + " " + case.get("file", "")
            notebook = re.search(r"(\d\d_[\w-]+)\.ipynb", where)
            if cell and notebook:
                edition = chinese if re.search(r"(^|[./])zh[./]", where) else seconds
                edition.setdefault(notebook.group(1) + ".ipynb", {})[int(cell.group(1))] = float(case.get("time", 0))
    return chinese | seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--times", nargs="+", type=Path, default=[], metavar="REPORT.xml",
                        help="JUnit reports of nbval runs: add the measured seconds of core and all cells")
    parser.add_argument("--check", action="store_true",
                        help="hold every notebook to issue 45's rules (exit 1 naming the cells if one is broken)")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    seconds = cell_seconds([r for r in args.times if r.exists()])
    times_header = f"   {'slot':>6} {'core run':>8} {'all run':>8}" if args.times else ""
    print(f"{'notebook':44} {'core code':>9} {'lesson':>6} {'share':>6}   {'all code':>8} {'lesson':>6} {'share':>6}"
          + times_header)
    for path in paths:
        c = count(path)
        line = (f"{path.name:44} {c['core code']:9d} {c['core lesson']:6d} {c['core share']:6.0%}   "
                f"{c['all code']:8d} {c['all lesson']:6d} {c['all share']:6.0%}")
        if args.times:
            cells = seconds.get(path.name, {})
            slot = f"{c['slot minutes']} min" if "slot minutes" in c else "—"
            core = sum(t for i, t in cells.items() if i in c["core cells"])
            line += (f"   {slot:>6} {core / 60:7.1f}m {sum(cells.values()) / 60:7.1f}m" if cells
                     else f"   {slot:>6} {'not run':>8} {'':>8}")
        print(line)
    print()
    print("\n".join(lecture_table(paths)))
    if not args.check:
        return 0
    broken = 0
    for path in paths:
        for problem in violations(path):
            print(f"{path.name}: {problem}")
            broken += 1
    print(f"lecture rules: {broken} broken" if broken else "lecture rules: all kept")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
