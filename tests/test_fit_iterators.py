"""No frozen epochs (issue 50, docs/frozen-epochs.md): every multi-epoch ``fit`` keeps one iterator.

Keras 3.15 makes a new tf.data iterator at the start of every epoch when ``steps_per_epoch``
is None (``keras/src/trainers/epoch_iterator.py``, ``_enumerate_iterator``, l. 110), and also
when a dataset of known length has run out (l. 124) — so ``steps_per_epoch`` alone does not
help on a dataset that is not repeated. TensorFlow 2.21 frees the previous iterator, read
inside the train function, by waiting for its autotuning thread: seconds to a minute, at random.
NumPy arrays are no way out: under the TensorFlow backend Keras wraps them in an autotuned
``tf.data`` pipeline of known length (``array_data_adapter.py``), so they get the same new
iterator every epoch. Validation cannot be fixed by arguments: ``fit`` makes the validation
iterator once, but ``evaluate`` drops it on every call (``backend/tensorflow/trainer.py`` l. 489,
``epoch_iterator.reset()``), so each epoch's validation frees the previous one's, whatever the
arguments: notebook 04's full run with ``validation_data=val_ds.repeat(), validation_steps=…``
still had epochs of 36 to 83 s. So a multi-epoch ``fit`` does not validate; the model is
validated once after ``fit`` with ``evaluate`` (one iterator, freed once).

The rule this test enforces on every ``.fit(`` call in ``notebooks/*.ipynb`` (English),
``scripts/**/*.py`` and ``benchmarks/*.py``:

    A ``fit`` with ``epochs`` other than a literal 1 passes ``steps_per_epoch=`` and a first
    argument that is visibly repeated: an expression containing ``.repeat(`` or a call with
    ``repeat=True`` (the data layer's ``make_dataset``), or a name assigned such an expression
    somewhere in the same file (notebook: any code cell). It passes neither
    ``validation_data=`` nor ``validation_split=``: validate after ``fit`` with ``evaluate``.

One-epoch fits (``epochs`` left out or ``epochs=1``) are allowed: one iterator per fit either
way. A call meant to show the stall carries ``# frozen-epochs: on purpose`` on one of its lines
or on the line above it. The rule reads source, not values: ``epochs=EPOCHS`` counts as several
epochs even where smoke settings make it 1. Notebook cells are read one by one: line magics
count as ``pass``, ``%%time``/``%%capture``/``%%writefile *.py`` bodies are read, other cell
magics (``%%bash``) are skipped.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARKER = "# frozen-epochs: on purpose"


def repeated_names(tree: ast.AST) -> set[str]:
    """Names assigned (anywhere) an expression that repeats a dataset."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if _repeats(node.value, set()):
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _repeats(expr: ast.AST | None, repeated: set[str]) -> bool:
    """``expr`` calls ``.repeat(``, passes ``repeat=True`` (the data layer's ``make_dataset``) or
    uses a name in ``repeated``."""
    for node in ast.walk(expr) if expr is not None else ():
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "repeat":
                return True
            if any(k.arg == "repeat" and getattr(k.value, "value", None) is True for k in node.keywords):
                return True
        if isinstance(node, ast.Name) and node.id in repeated:
            return True
    return False


def fit_problems(source: str, repeated: set[str] | None = None) -> list[tuple[int, str]]:
    """(line, problem) for every ``.fit(`` call in ``source`` that makes a new iterator per epoch.

    ``repeated``: names known to hold repeated datasets (from other cells); those assigned in
    ``source`` itself are found here."""
    tree = ast.parse(source)
    lines = source.splitlines()
    repeated = (repeated or set()) | repeated_names(tree)
    problems = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "fit"
        ):
            continue
        span = lines[max(node.lineno - 2, 0) : node.end_lineno]
        if any(MARKER in line for line in span):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        epochs = kw.get("epochs", node.args[3] if len(node.args) > 3 else None)
        if epochs is None or (isinstance(epochs, ast.Constant) and epochs.value == 1):
            continue
        x = kw.get("x", node.args[0] if node.args else None)
        if "steps_per_epoch" not in kw:
            problems.append(
                (node.lineno, "several epochs without steps_per_epoch: a new iterator every epoch")
            )
        elif not _repeats(x, repeated):
            problems.append((node.lineno, "steps_per_epoch on data that is not .repeat()ed: a new iterator "
                                          "whenever it runs out"))  # fmt: skip
        for arg in ("validation_data", "validation_split"):
            if arg in kw:
                problems.append((node.lineno, f"{arg} in a multi-epoch fit: evaluate drops the "
                                              "validation iterator every epoch; evaluate after fit"))  # fmt: skip
    return sorted(problems)


def notebook_programs(path: Path) -> list[tuple[int, str]]:
    """(cell index, Python source) per code cell: line magics become ``pass`` (same line numbers),
    ``%%time``/``%%capture`` and ``%%writefile *.py`` bodies are kept (the magic line blanked),
    other cell magics (``%%bash``, ``%%writefile`` of other files) are left out."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    programs = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        lines = "".join(cell["source"]).splitlines()
        if lines and lines[0].startswith("%%"):
            magic = lines[0].split()
            if not (
                magic[0] in ("%%time", "%%capture")
                or (magic[0] == "%%writefile" and magic[-1].endswith(".py"))
            ):
                continue
            lines[0] = ""
        lines = [re.sub(r"^(\s*)[%!].*", r"\1pass", line) for line in lines]
        programs.append((index, "\n".join(lines)))
    return programs


def _problems_in(path: Path) -> list[str]:
    if path.suffix != ".ipynb":
        return [f"line {line}: {why}" for line, why in fit_problems(path.read_text(encoding="utf-8"))]
    programs = notebook_programs(path)
    repeated = set().union(*(repeated_names(ast.parse(source)) for _, source in programs))
    return [f"cell [{index}] line {line}: {why}" for index, source in programs
            for line, why in fit_problems(source, repeated)]  # fmt: skip


def _files() -> list[Path]:
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))
    return notebooks + sorted((ROOT / "scripts").rglob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fit_keeps_one_iterator(path: Path) -> None:
    found = _problems_in(path)
    assert not found, "\n".join(f"{path.relative_to(ROOT)} {where}" for where in found)


WRONG = """
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)
model.fit(ds, epochs=6)
model.fit(ds, epochs=EPOCHS, steps_per_epoch=10)
model.fit(x, y, batch_size=64, epochs=3)
train = ds.repeat()
model.fit(train, epochs=6, steps_per_epoch=10, validation_data=val_ds)
model.fit(train, epochs=6, steps_per_epoch=10, validation_data=val.repeat(), validation_steps=3)
model.fit(x, y, batch_size=64, epochs=3, steps_per_epoch=10, validation_split=0.1)
"""

RIGHT = """
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)
train = ds.repeat()
model.fit(train, epochs=6, steps_per_epoch=10)
model.evaluate(val)
model.fit(ds.repeat(), epochs=EPOCHS, steps_per_epoch=10)
model.fit(ds, epochs=1, validation_data=val)
model.fit(x, y, batch_size=64)
model.fit(ds, epochs=6)  # frozen-epochs: on purpose
# frozen-epochs: on purpose
model.fit(train, epochs=6, steps_per_epoch=10, validation_data=val.repeat(), validation_steps=3)
"""


def test_the_rule_finds_each_wrong_call_and_passes_the_right_ones() -> None:
    assert [line for line, _ in fit_problems(WRONG)] == [3, 4, 5, 7, 8, 9, 9]
    assert fit_problems(RIGHT) == []


def test_a_notebook_is_read_across_cells_with_magics_blanked(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "code", "source": ["train = ds.repeat()\n"]},
        {"cell_type": "markdown", "source": ["model.fit(ds, epochs=6)"]},
        {"cell_type": "code", "source": ["%%bash\n", "model.fit(ds, epochs=6)\n"]},
        {
            "cell_type": "code",
            "source": [
                "%%time\n",
                "if True:\n",
                "    %env A=1\n",
                "model.fit(train, epochs=6, steps_per_epoch=3)\n",
                "model.fit(ds, epochs=6)\n",
            ],
        },  # fmt: skip
    ]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    assert _problems_in(path) == [
        "cell [3] line 5: several epochs without steps_per_epoch: a new iterator every epoch"
    ]
