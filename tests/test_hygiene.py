"""Notebooks in git are clean, shaped alike, lint-free and use no removed TensorFlow names."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tools.nbclean import ALLOWED_CELL_METADATA, KERNELS, is_check, needs_cleaning
from tools.slidemeta import heading_level, missing
from utils import config

ROOT = config.PROJECT_ROOT


def colab_url(notebook_name: str) -> str:
    """The Open-in-Colab address of a notebook, as its badge must give it."""
    return f"https://colab.research.google.com/github/{config.COURSE_REPO}/blob/{config.COURSE_BRANCH}/notebooks/{notebook_name}"


def source_url(notebook_name: str) -> str:
    """The View-source address of a notebook on GitHub, as its badge must give it."""
    return f"https://github.com/{config.COURSE_REPO}/blob/{config.COURSE_BRANCH}/notebooks/{notebook_name}"
NOTEBOOKS = sorted(config.NOTEBOOKS_DIR.glob("*.ipynb"))
# The Chinese edition (tools/i18n.py, generated): the same checks apply, its shape is checked below.
ZH_NOTEBOOKS = sorted((config.NOTEBOOKS_DIR / "zh").glob("*.ipynb"))
BOTH = NOTEBOOKS + ZH_NOTEBOOKS


def nb_id(path: Path) -> str:
    return f"zh/{path.name}" if path.parent.name == "zh" else path.name
NAME = re.compile(r"^(\d\d)_[a-z0-9_]+\.ipynb$")
TITLE = re.compile(r"^# (\d+) · .+ \(.*[\u4e00-\u9fff].*\)\s*$")

# Names the slides use that TensorFlow 2.21 removed or deprecated. They may appear only in the
# one code cell tagged `old-names` (notebook 02's mapping table) and in Markdown prose.
OLD_NAMES = {
    "experimental_run_v2": r"experimental_run_v2",
    "experimental.TPUStrategy": r"experimental\.TPUStrategy",
    "experimental.MultiWorkerMirroredStrategy": r"experimental\.MultiWorkerMirroredStrategy",
    "experimental.ParameterServerStrategy": r"experimental\.ParameterServerStrategy",
    "set_virtual_device_configuration": r"(set|get)_virtual_device_configuration",
    "VirtualDeviceConfiguration": r"VirtualDeviceConfiguration",
    "CollectiveCommunication": r"CollectiveCommunication",
    "tf.keras.optimizers.legacy": r"keras\.optimizers\.legacy",
    'save_format="tf"': r"save_format\s*=\s*['\"]tf['\"]",
    "experimental_distribute_datasets_from_function": r"experimental_distribute_datasets_from_function",
    "tf.estimator": r"tf\.estimator\b",
    "config.experimental.list_*_devices": r"config\.experimental\.list_(physical|logical)_devices",
}
# Horovod 0.28.1 runs on TensorFlow 2.12, where its Keras DistributedOptimizer needs the
# legacy optimizers: notebook 07 may use that one name.
ALLOWED_IN_HOROVOD = {"tf.keras.optimizers.legacy"}


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def test_numbering_follows_the_outline() -> None:
    """Numbers are unique; a gap is allowed only for a chapter notebook 00's outline announces."""
    numbers = []
    for path in NOTEBOOKS:
        match = NAME.match(path.name)
        assert match, f"{path.name}: name must look like NN_snake_case.ipynb"
        numbers.append(int(match.group(1)))
    assert numbers == sorted(set(numbers)) and numbers[0] == 0, f"notebook numbers {numbers} repeat"
    outline = "".join("".join(c["source"]) for c in code_cells(load(NOTEBOOKS[0])))
    for gap in sorted(set(range(max(numbers) + 1)) - set(numbers)):
        assert f'("{gap:02d}", ' in outline, f"notebook {gap:02d} is missing and not in notebook 00's outline"


@pytest.mark.parametrize("path", BOTH, ids=nb_id)
def test_notebook_is_clean(path: Path) -> None:
    nb = load(path)
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{path.name} cell {index} has outputs"
            assert cell["execution_count"] is None, f"{path.name} cell {index} has an execution count"
        assert set(cell.get("metadata", {})) <= ALLOWED_CELL_METADATA, f"{path.name} cell {index}: metadata"
        folded = "jupyter" in cell.get("metadata", {}) or "cellView" in cell.get("metadata", {})
        assert folded == is_check(cell), f"{path.name} cell {index}: only check cells fold (`make format`)"
    assert set(nb["metadata"]) <= {"kernelspec", "language_info"}, f"{path.name}: notebook metadata"
    kernel = "horovod" if path.name.startswith("07_") else "python3"
    assert nb["metadata"]["kernelspec"] == KERNELS[kernel], f"{path.name}: kernelspec must be {kernel}"
    assert not needs_cleaning(path), f"{path.name}: run `make format`"


@pytest.mark.parametrize("path", BOTH, ids=nb_id)
def test_notebook_is_a_slideshow(path: Path) -> None:
    """Every cell has a slide type (`make format`), every H1/H2 heading starts a slide."""
    nb = load(path)
    assert not missing(nb), f"{path.name}: cells {missing(nb)[:5]} have no slide type: run `make format`"
    types = [c["metadata"]["slideshow"]["slide_type"] for c in nb["cells"]]
    # the Chinese edition's "## Setup" is in Chinese: the English cell at the same place says which it is
    english = load(config.NOTEBOOKS_DIR / path.name)["cells"] if path.parent.name == "zh" else nb["cells"]
    for index, cell in enumerate(nb["cells"]):
        if heading_level(cell) in (1, 2) and "## Setup" not in "".join(english[index]["source"]):
            assert types[index] == "slide", f"{path.name} cell {index}: a heading that does not start a slide"
    assert types.count("slide") >= 4, f"{path.name}: fewer than 4 slides"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_shape(path: Path) -> None:
    nb = load(path)
    number = int(path.name[:2])
    first = "".join(nb["cells"][0]["source"]) if nb["cells"] else ""
    title = first.splitlines()[0] if first else ""
    match = TITLE.match(title)
    assert match, f"{path.name}: first line must be '# N · English title (中文)', got {title!r}"
    assert int(match.group(1)) == number, f"{path.name}: title number {match.group(1)} ≠ {number}"
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    if nb["metadata"]["kernelspec"]["name"] == "horovod":  # Horovod's environment cannot run on Colab
        assert "colab.research.google.com" not in markdown, f"{path.name}: no Colab button for a Horovod notebook"
        assert "*No Colab button:*" in markdown, f"{path.name}: say why there is no Colab button"
    else:
        assert colab_url(path.name) in markdown, f"{path.name}: Open-in-Colab badge missing or wrong"
    assert source_url(path.name) in markdown, f"{path.name}: View-source link missing or wrong"
    for heading in ("## Overview", "## Setup", "## Summary", "## Exercises"):
        assert heading in markdown, f"{path.name}: no '{heading}' section"
    overview = next(("".join(c["source"]) for c in nb["cells"] if "".join(c["source"]).startswith("## Overview")), "")
    assert "**Lecture slot:** ~" in overview, f"{path.name}: the Overview says no lecture slot (README, Lecturing)"
    setup_cells = [c for c in code_cells(nb) if "course = utils.setup(" in "".join(c["source"])]
    assert len(setup_cells) == 1, f"{path.name}: needs exactly one setup cell `course = utils.setup(...)`"
    source = "".join(setup_cells[0]["source"])
    assert re.search(rf"utils\.setup\(\s*chapter={number}\b", source), f"{path.name}: setup chapter"
    assert '"google.colab" in sys.modules' in source, f"{path.name}: setup cell lacks Colab detection"
    asserts = sum("assert " in "".join(c["source"]) for c in code_cells(nb))
    assert asserts >= 1, f"{path.name}: no cell checks a claim with assert"


ZH_TITLE = re.compile(r"^# (\d+) · .*[\u4e00-\u9fff]")


@pytest.mark.parametrize("path", ZH_NOTEBOOKS, ids=nb_id)
def test_chinese_notebook_shape(path: Path) -> None:
    """A Chinese notebook: its English one exists, Chinese title with the number, badges that open
    the Chinese edition (none to Colab for Horovod), the same setup cell (tests/test_i18n.py
    checks the code of every cell)."""
    english = config.NOTEBOOKS_DIR / path.name
    assert english.is_file(), f"zh/{path.name} has no English notebook: run `make i18n`"
    nb = load(path)
    match = ZH_TITLE.match("".join(nb["cells"][0]["source"]).split("\n")[0])
    assert match and int(match.group(1)) == int(path.name[:2]), f"zh/{path.name}: title '# N · 中文标题'"
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    if nb["metadata"]["kernelspec"]["name"] == "horovod":
        assert "colab.research.google.com" not in markdown, f"zh/{path.name}: no Colab button for Horovod"
    else:
        assert colab_url(f"zh/{path.name}") in markdown, f"zh/{path.name}: Open-in-Colab badge missing or wrong"
    assert source_url(f"zh/{path.name}") in markdown, f"zh/{path.name}: View-source link missing or wrong"
    assert len([c for c in code_cells(nb) if "course = utils.setup(" in "".join(c["source"])]) == 1


def setup_cell(path: Path) -> str:
    cells = [c for c in code_cells(load(path)) if "course = utils.setup(" in "".join(c["source"])]
    return "".join(cells[0]["source"]) if cells else ""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_setup_cells_are_the_same_but_for_the_setup_arguments(path: Path) -> None:
    """Every python3 notebook starts alike (COURSE_STYLE.md): notebook 00's cell, other arguments."""
    if load(path)["metadata"]["kernelspec"]["name"] != "python3":
        return
    template = setup_cell(config.NOTEBOOKS_DIR / "00_course_overview.ipynb")
    strip = re.compile(r"course = utils\.setup\(.*\)\s*$", re.S)
    assert strip.sub("", setup_cell(path)) == strip.sub("", template), f"{path.name}: setup cell differs from 00's"
    assert "COURSE_REPO_URL" in template and config.COURSE_REPO in template  # the clone URL and its override


@pytest.mark.parametrize("path", BOTH, ids=nb_id)
def test_no_removed_tensorflow_names(path: Path) -> None:
    nb = load(path)
    allowed = ALLOWED_IN_HOROVOD if path.name.startswith("07_") else set()
    tagged = [c for c in code_cells(nb) if "old-names" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) <= 1, f"{path.name}: at most one cell may be tagged old-names"
    if tagged:
        assert path.name.startswith("02_"), "only notebook 02 tabulates old names"
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code" or cell in tagged:
            continue
        source = "".join(cell["source"])
        for name, pattern in OLD_NAMES.items():
            if name not in allowed:
                assert not re.search(pattern, source), f"{path.name} cell {index} uses old name {name}"


def test_old_name_patterns_catch_old_code() -> None:
    old = "strategy.experimental_run_v2(step)\ntf.config.experimental.set_virtual_device_configuration(g, c)"
    hits = {name for name, pattern in OLD_NAMES.items() if re.search(pattern, old)}
    assert hits == {"experimental_run_v2", "set_virtual_device_configuration"}
    new = "strategy.run(step)\ntf.config.set_logical_device_configuration(g, c)"
    assert not any(re.search(pattern, new) for pattern in OLD_NAMES.values())


def _distribute_calls(source: str) -> list[int]:
    """Lines of ``source`` that use ``tf.distribute.…`` in code (docstrings and comments aside)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "tf" and node.attr == "distribute":
                found.append(node.lineno)
    return found


# The one package code that may call tf.distribute, and why: machinery, not a lesson step.
DISTRIBUTE_ALLOWED = {
    # start_in_process_ps_cluster: tf.distribute.Server objects in the kernel stand in for the
    # other machines of a parameter-server cluster (on real machines each is a process started
    # apart); the notebooks build the ParameterServerStrategy and its coordinator themselves
    "infra/cluster.py": "start_in_process_ps_cluster",
}


def _package_distribute_calls() -> dict[str, list[int]]:
    """``{path: lines}`` of every ``tf.distribute`` use in the packages (utils, infra, quickdraw, tools)."""
    return {str(p.relative_to(ROOT)): lines
            for package in ("utils", "infra", "quickdraw", "tools")
            for p in sorted((ROOT / package).rglob("*.py"))
            if (lines := _distribute_calls(p.read_text(encoding="utf-8")))}


def test_packages_hide_no_tf_distribute_call() -> None:
    """Notebook 00 §2: the tf.distribute calls stay in the notebooks (or the programs they show
    whole), never hidden in a package; the one exception is named, with the function it is in."""
    assert _distribute_calls("import tensorflow as tf\ns = tf.distribute.MirroredStrategy()\n") == [2]
    assert _distribute_calls('"""tf.distribute.MirroredStrategy() in a docstring"""\n# tf.distribute\n') == []
    import ast

    found = _package_distribute_calls()
    assert set(found) <= set(DISTRIBUTE_ALLOWED), set(found) - set(DISTRIBUTE_ALLOWED)
    for path, function in DISTRIBUTE_ALLOWED.items():
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        spans = [(n.lineno, n.end_lineno) for n in tree.body
                 if isinstance(n, ast.FunctionDef) and n.name == function]
        assert spans, f"{path} has no function {function} any more: remove the exception"
        outside = [line for line in found.get(path, []) if not spans[0][0] <= line <= spans[0][1]]
        assert outside == [], f"{path}: tf.distribute outside {function}, lines {outside}"


STRAY = re.compile(r"(\.orig|\.rej|\.bak|\.swp|~|\.pyc|\.DS_Store|\.ipynb_checkpoints/.*|__pycache__/.*)$")


def test_no_stray_files_are_tracked() -> None:
    """Merge leftovers, editor backups and caches never enter git (.gitignore keeps most out)."""
    assert STRAY.search("scripts/workers/mw_custom_loop_worker.py.orig")
    assert not STRAY.search("scripts/workers/mw_custom_loop_worker.py")
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: nothing tracked to check")
    assert [name for name in listed.stdout.splitlines() if STRAY.search(name)] == []
