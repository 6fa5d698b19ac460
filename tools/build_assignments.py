"""Build the homework (issue 48) with otter-grader: `make assignments`.

Each master notebook assignments/source/NN_name/NN_name.ipynb (solutions, public and hidden tests)
goes through `otter assign`:

* the student version (solutions and hidden tests stripped, public tests in tests/) is copied to
  assignments/student/NN_name/ — committed: students open it from git or Colab;
* its Chinese version NN_name.zh.ipynb beside it, where assignments/i18n/zh_CN/NN_name.po exists
  (same code; Markdown, comments and printed text from the catalog, as notebooks/zh/ is made),
  with its public tests in tests/zh/: the same tests, each assert's message from the catalog
  (entries `qN#message`, msgid = the literal as otter writes it, quotes and all); its grader line
  reads them (`otter.Notebook(tests_dir="tests/zh")`), the one line of code that differs;
* the autograder (solutions notebook, every test, and the zip `otter run -a` / Gradescope take) stays
  in build/assignments/NN_name/autograder/ — build output, not committed.

The student notebook's cell ids are made stable (otter gives new random ones), so a rebuild of an
unchanged master changes nothing in git (tests/test_assignments.py compares a rebuild with git).

    python -m tools.build_assignments            # build all, copy the student versions
    python -m tools.build_assignments 01 12      # only these
    python -m tools.build_assignments --check    # build into a temporary folder, compare with git
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import filecmp
import io
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script (python tools/build_assignments.py): import tools.*
    sys.path.insert(0, str(ROOT))
SOURCE = ROOT / "assignments" / "source"
STUDENT = ROOT / "assignments" / "student"
BUILD = ROOT / "build" / "assignments"
ZH_CATALOGS = ROOT / "assignments" / "i18n" / "zh_CN"


def masters(numbers: list[str] | None = None) -> list[Path]:
    """The master notebooks, in order; `numbers` (e.g. ["01", "12"]) keeps only those."""
    found = sorted(SOURCE.glob("[0-9][0-9]_*/[0-9][0-9]_*.ipynb"))
    return [m for m in found if not numbers or m.stem[:2] in numbers]


def otter_assign(master: Path, out: Path, *, run_tests: bool = True, quiet: bool = False) -> Path:
    """Run `otter assign` on `master` into `out` (emptied first); returns `out`."""
    from otter.assign import main as assign

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink) if quiet else contextlib.nullcontext():
        assign(str(master), str(out), no_pdfs=True, no_run_tests=not run_tests)
    return out


def stabilise(notebook: Path) -> None:
    """Give the cells stable ids (`NN-index`) and drop the empty metadata otter leaves."""
    nb = nbformat.read(notebook, as_version=4)
    for index, cell in enumerate(nb.cells):
        cell.id = f"{notebook.stem[:2]}-{index:02d}"
    nbformat.write(nb, notebook)


def grader_line(chinese: bool = False) -> str:
    """The setup cell's line that makes the grader: the Chinese notebook's reads tests/zh/. No
    notebook file name, as otter assign writes it for Colab, where the notebook is not in the
    working directory (otter would fail to read it); grader.check needs only the tests."""
    return 'grader = otter.Notebook(tests_dir="tests/zh")' if chinese else "grader = otter.Notebook()"


def message_literals(code: str) -> list:
    """The string-literal messages of a test file's asserts, in source order (as tools.i18n's
    printed literals: text, place, {…} fields)."""
    from tools import i18n

    nodes = [n.msg for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Assert)]
    found = [i18n.literal_at(code, m) for m in nodes if isinstance(m, (ast.Constant, ast.JoinedStr))]
    return sorted(found, key=lambda literal: literal.start)


def message_entries(tests: Path) -> list:
    """The catalog entries of a student version's public tests: one per distinct assert message
    of each tests/qN.py (msgctxt `qN#message`, msgid the literal as written)."""
    from tools import i18n

    entries = []
    for path in sorted(tests.glob("q*.py")):
        code = path.read_text(encoding="utf-8")
        texts = [literal.text for literal in message_literals(code)]
        entries += [i18n.Entry(f"{path.stem}#message", t) for t in dict.fromkeys(texts)]
    return entries


def translate_messages(code: str, usable: dict[tuple[str, str], str], question: str) -> str:
    """A test file with each assert message replaced by its translation (the code unchanged)."""
    from tools import i18n

    translations = {text: chinese for (context, text), chinese in usable.items() if context == f"{question}#message"}
    return i18n.replace_literals(code, message_literals(code), translations, question)


def chinese_version(notebook: Path, *, update_catalog: bool = False) -> Path | None:
    """NN_name.zh.ipynb beside the student notebook and its public tests in tests/zh/, from the
    catalog in assignments/i18n/zh_CN/ (the lecture notebooks' format and tools: i18n/README.md;
    plus the tests' messages); None without a catalog. `update_catalog` merges the notebook's
    English into the catalog first (new entries empty, changed ones fuzzy), as `make i18n` does
    for the lecture notebooks."""
    import polib

    from tools import i18n
    from tools.nbclean import dumps

    catalog = ZH_CATALOGS / f"{notebook.stem}.po"
    if not catalog.is_file():
        return None
    nb = i18n.load(notebook)
    tests = notebook.parent / "tests"
    entries = i18n.extract(nb, notebook.name) + message_entries(tests)
    po, _ = i18n.merge(polib.pofile(str(catalog), wrapwidth=0), entries)
    if update_catalog and catalog.read_text(encoding="utf-8") != po.__unicode__():
        catalog.write_text(po.__unicode__(), encoding="utf-8")
    zh = i18n.generate_notebook(nb, po, set())
    english_line, chinese_line = grader_line(), grader_line(chinese=True)
    setup = [c for c in zh["cells"] if english_line in i18n.source(c).split("\n")]
    if len(setup) != 1:
        raise ValueError(f"{notebook.name}: no setup cell with the line {english_line!r}")
    setup[0]["source"] = i18n.lines_of(i18n.source(setup[0]).replace(english_line, chinese_line))
    out = notebook.with_name(f"{notebook.stem}.zh.ipynb")
    out.write_text(dumps(zh), encoding="utf-8")
    usable = i18n.translations(po)
    (tests / "zh").mkdir(exist_ok=True)
    for path in sorted(tests.glob("q*.py")):
        code = translate_messages(path.read_text(encoding="utf-8"), usable, path.stem)
        (tests / "zh" / path.name).write_text(code, encoding="utf-8")
    return out


def student_version(built: Path, dest: Path, *, update_catalog: bool = False) -> Path:
    """Copy otter's student/ folder of a build to `dest` (replaced), with stable cell ids, and
    the Chinese version where the assignment has a catalog."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(built / "student", dest, ignore=shutil.ignore_patterns(".OTTER_LOG"))
    for notebook in sorted(dest.glob("*.ipynb")):
        stabilise(notebook)
        chinese_version(notebook, update_catalog=update_catalog)
    return dest


def build(master: Path, build_dir: Path, student_dir: Path, *, run_tests: bool = True,
          quiet: bool = False, update_catalog: bool = False) -> Path:
    """Build one assignment: otter's output in build_dir, the student version in student_dir."""
    built = otter_assign(master, build_dir, run_tests=run_tests, quiet=quiet)
    return student_version(built, student_dir, update_catalog=update_catalog)


def differences(left: Path, right: Path) -> list[str]:
    """Files that differ between two folders (recursively), or exist in one only."""
    cmp = filecmp.dircmp(left, right, ignore=["__pycache__", ".ipynb_checkpoints", ".OTTER_LOG"])
    out = [f"{left.name}/{n}" for n in cmp.left_only + cmp.right_only + cmp.diff_files]
    # dircmp compares by os.stat first: compare the common files' contents too
    out += [f"{left.name}/{n}" for n in cmp.same_files
            if (left / n).read_bytes() != (right / n).read_bytes()]
    for sub in cmp.common_dirs:
        out += [f"{left.name}/{d}" for d in differences(left / sub, right / sub)]
    return sorted(set(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("numbers", nargs="*", help="two-digit numbers of the assignments (all if none)")
    parser.add_argument("--check", action="store_true",
                        help="build into a temporary folder and compare with assignments/student/")
    args = parser.parse_args(argv)
    stale = []
    for master in masters(args.numbers):
        name = master.stem
        if args.check:
            with tempfile.TemporaryDirectory() as tmp:
                student = build(master, Path(tmp) / "build", Path(tmp) / name, run_tests=False,
                                quiet=True)
                stale += differences(student, STUDENT / name) if (STUDENT / name).is_dir() else [name]
            continue
        student = build(master, BUILD / name, STUDENT / name, update_catalog=True)
        zips = sorted((BUILD / name / "autograder").glob("*.zip"))
        print(f"{name}: student version {student.relative_to(ROOT)}, "
              f"autograder {zips[-1].relative_to(ROOT) if zips else '(none)'}")
    if stale:
        print("stale student versions (run `make assignments`):", ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
