"""What notebook 07 reaches must run on TensorFlow 2.12 / Keras 2 / NumPy 1.23 (Horovod's environment).

The rule used to live only in prose (CONTRIBUTING.md). Here it is checked two ways: statically,
by following the imports of notebook 07 and its scripts through ``utils`` and looking for
NumPy-2-only names and top-level TensorFlow/Keras imports; and, when ``.venv-horovod`` is
built (``make test`` builds it), by importing every reached module there.
"""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import pytest

from utils import config

ROOT = config.PROJECT_ROOT
ENTRY_POINTS = [
    ROOT / "scripts" / "workers" / "horovod_keras.py",
    ROOT / "scripts" / "workers" / "horovod_custom_loop.py",
    ROOT / "scripts" / "workers" / "horovod_allreduce.py",
]
# NumPy 2.0 added these; NumPy 1.23 has none of them.
NUMPY2_ONLY = {"trapezoid", "concat", "isdtype", "unstack", "permute_dims", "matrix_transpose", "vecdot",
               "astype", "bitwise_count", "cumulative_sum", "cumulative_prod", "unique_values", "unique_counts"}
HEAVY = {"tensorflow", "keras", "tf_keras"}
COURSE_PACKAGES = {"utils", "infra", "quickdraw"}


def notebook07_sources() -> list[str]:
    nb = json.loads((ROOT / "notebooks" / "07_horovod.ipynb").read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def utils_imports(tree: ast.AST) -> set[str]:
    """The course's modules (``utils``, ``infra``, ``quickdraw``) a file imports anywhere in it."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in COURSE_PACKAGES:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] in COURSE_PACKAGES)
    return found


def module_file(name: str) -> Path | None:
    path = ROOT / Path(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def reached_modules() -> dict[str, ast.AST]:
    todo = set()
    for source in notebook07_sources():
        todo |= utils_imports(ast.parse("\n".join(line for line in source.splitlines() if not line.startswith(("%", "!")))))
    for path in ENTRY_POINTS:
        todo |= utils_imports(ast.parse(path.read_text()))
    todo |= {"utils", "utils.notebook"}  # utils.setup(chapter=7, ...) in the setup cell
    seen: dict[str, ast.AST] = {}
    while todo:
        name = todo.pop()
        path = module_file(name)
        if name in seen or path is None:
            continue
        seen[name] = tree = ast.parse(path.read_text())
        todo |= utils_imports(tree)
    return seen


def test_the_modules_notebook_07_reaches_are_found() -> None:
    reached = reached_modules()
    assert {"infra.horovod", "infra.horovod_job", "utils.training", "utils.models", "quickdraw"} <= set(reached)


@pytest.mark.parametrize("name", sorted(reached_modules()))
def test_no_numpy2_only_names_and_no_top_level_tensorflow(name: str) -> None:
    tree = reached_modules()[name]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy"):
            assert node.attr not in NUMPY2_ONLY, f"{name}:{node.lineno}: np.{node.attr} needs NumPy 2"
    for node in tree.body:  # module level only: inside functions TensorFlow is imported lazily
        if isinstance(node, ast.Import):
            assert not {a.name.split(".")[0] for a in node.names} & HEAVY, f"{name}:{node.lineno}: top-level TF"
        if isinstance(node, ast.ImportFrom) and node.module:
            assert node.module.split(".")[0] not in HEAVY, f"{name}:{node.lineno}: top-level TF/Keras import"


def test_the_check_catches_numpy2_code(tmp_path: Path) -> None:
    tree = ast.parse("import numpy as np\nx = np.concat([a, b])\n")
    hits = [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in NUMPY2_ONLY]
    assert hits == ["concat"]


HOROVOD_PYTHON = ROOT / ".venv-horovod" / "bin" / "python"


@pytest.mark.slow
@pytest.mark.horovod_env
@pytest.mark.skipif(not HOROVOD_PYTHON.exists(), reason="Horovod environment not built (make horovod)")
def test_reached_modules_import_in_the_horovod_environment() -> None:
    names = sorted(reached_modules())
    code = "import importlib, numpy, tensorflow as tf\n" + "".join(f"importlib.import_module({n!r})\n" for n in names)
    code += "print(numpy.__version__, tf.__version__)"
    result = subprocess.run([str(HOROVOD_PYTHON), "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    numpy_version, tf_version = result.stdout.split()
    assert numpy_version.startswith("1.23") and tf_version.startswith("2.12")
