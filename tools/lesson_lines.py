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
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

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
    return 0


if __name__ == "__main__":
    sys.exit(main())
