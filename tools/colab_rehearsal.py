"""Rehearse the Colab path of the setup cell without Colab: ``python tools/colab_rehearsal.py``.

What a student gets from the *Open in Colab* button, imitated on this machine:

* a kernel in which ``google.colab`` is imported at start (a stand-in module, imported by an
  IPython start-up file, as Colab's own start-up does);
* a working directory outside the checkout (``<tmp>/content``, like Colab's ``/content``)
  holding only the notebooks;
* the clone URL pointed at a local clone of this working tree (``COURSE_REPO_URL``, which the
  setup cell reads), so the cell really runs ``git clone`` and imports ``utils`` from the clone;
* pip told to use what is installed (``PIP_NO_INDEX=1``): no network.

It executes notebook 00 and notebook 02 (multi-replica) under ``pytest --nbval-lax`` with
smoke settings and checks that the clone was made and used. Exit code: pytest's.

``--faithful PYTHON`` rehearses Colab as it is: PYTHON is an environment with Colab's package
set (built by tools/setup_colab_env.sh into the course cache: Python 3.13, TensorFlow 2.20, Keras
3.13.2), of which each run takes a fresh copy. First a session in which TensorFlow was already imported runs
notebook 00's setup cell: ``infra.colab.install`` must really replace TensorFlow 2.20 by 2.21 with
pip (from the package index or pip's cache) and ask for the restart, naming what it replaced.
Then, as after *Restart session*, the Chinese notebook 00 runs in a fresh kernel, and notebooks 00 and 04 as on
Colab's GPU runtime: under the one-GPU rehearsal (a T4; the CPU wheel stands in for
``tensorflow[and-cuda]``). ``make test`` runs these two in no other T4 rehearsal: their CPU
branches run in its main stream.
``make test`` runs the faithful rehearsal when that environment can be built, else the simple one
(tools/run_tests.sh).
After the restart the Chinese 00 runs (:func:`chinese_run`): it must print its lesson in Chinese
and draw its figure without a missing glyph (the Chinese font ``utils.figures`` registers).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ("00_course_overview.ipynb", "02_strategy_apis.ipynb")
FAITHFUL_NOTEBOOKS = ("00_course_overview.ipynb", "04_keras_distributed_training.ipynb")
CHINESE = "zh/00_course_overview.ipynb"  # after the restart: the Chinese edition, its output read
ONE_GPU = "1x15360@7.5:Tesla T4"
# A student's first cell in a session that already has Colab's TensorFlow loaded, then the setup cell.
FIRST_SESSION = """
import json, sys
import nbformat
from nbclient import NotebookClient

setup = next(c for c in nbformat.read(sys.argv[1], as_version=4).cells if "utils.setup(" in c.source)
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import tensorflow as tf\\nprint(tf.__version__)"), setup])
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
NotebookClient(nb, timeout=1800, allow_errors=True, kernel_name="python3").execute()
errors = [o for o in nb.cells[1].outputs if o.output_type == "error"]
printed = [o.get("text", "") for o in nb.cells[0].outputs if o.get("name") == "stdout"]  # not TensorFlow's log
print("RESULT", json.dumps({"first cell": "".join(printed).strip(),
                            "errors": [o.ename for o in errors], "message": " ".join(o.evalue for o in errors)}))
"""

def chinese_output(nb: dict) -> dict:
    """What the executed Chinese notebook shows: errors, Chinese lines printed, figures, and
    matplotlib's warnings of a missing glyph."""
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    text = "".join("".join(o.get("text", "")) for o in outputs if o["output_type"] == "stream")
    return {"errors": [o["ename"] for o in outputs if o["output_type"] == "error"],
            "chinese lines": len(re.findall(r"(?m)^.*[\u4e00-\u9fff].*$", text)),
            "figures": sum("image/png" in o.get("data", {}) for o in outputs),
            "missing glyphs": len(re.findall(r"Glyph \d+ .* missing", text))}


def chinese_run(python: str, content: Path, env: dict[str, str]) -> int:
    """The Chinese 00 in a fresh kernel (nbclient's ``jupyter-execute``, outputs kept in the
    file): no error, Chinese printed, its figure, no missing glyph."""
    notebook = content / Path(CHINESE).name.replace(".ipynb", ".zh.ipynb")
    execute = str(Path(python).with_name("jupyter-execute"))  # run by this copy's Python
    run = subprocess.run([python, execute, "--inplace", "--allow-errors", "--timeout=1800",
                          "--kernel_name=python3", str(notebook)], cwd=content, env=env,
                         capture_output=True, text=True)
    result = chinese_output(json.loads(notebook.read_text(encoding="utf-8")))
    print(f"colab rehearsal: the Chinese 00 ran: {result}", flush=True)
    good = not result["errors"] and result["chinese lines"] >= 3 and result["figures"] >= 1
    if run.returncode != 0 or not good or result["missing glyphs"]:
        print("colab rehearsal: expected Chinese lines, a figure, no error and no missing glyph\n"
              + run.stderr[-2000:])
        return 1
    return 0


def snapshot_repository(source: Path, bare: Path) -> str:
    """A bare repository whose ``main`` is ``source``'s working tree (tracked files, changes
    included, nothing committed in ``source``); returns the snapshot's commit."""
    commit = subprocess.run(["git", "stash", "create"], cwd=source, capture_output=True, text=True, check=True).stdout.strip()
    commit = commit or subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    subprocess.run(["git", "push", "-q", str(bare), f"{commit}:refs/heads/main"], cwd=source, check=True)
    subprocess.run(["git", "symbolic-ref", "HEAD", "refs/heads/main"], cwd=bare, check=True)
    return commit


def stand_in_colab(work: Path) -> dict[str, str]:
    """A fake ``google.colab`` package and an IPython start-up file that imports it."""
    package = work / "fake-colab" / "google" / "colab"
    package.mkdir(parents=True)  # google/ stays a namespace package: google.protobuf must still import
    (package / "__init__.py").write_text('"""Stand-in for Colab\'s google.colab (tools/colab_rehearsal.py)."""\n')
    startup = work / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-colab.py").write_text("import google.colab  # what Colab's kernel start-up does\n")
    return {"PYTHONPATH": str(work / "fake-colab"), "IPYTHONDIR": str(work / "ipython")}


def run_nbval(python: str, notebooks: list[str], content: Path, env: dict[str, str]) -> int:
    """pytest --nbval-lax over ``notebooks`` in ``content`` with ``python``'s kernel."""
    return subprocess.run(
        [python, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(content),
         "--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout=900", *notebooks],
        cwd=content, env=env,
    ).returncode


def installed(python: str, package: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def faithful(base: Path, work: Path, content: Path, env: dict[str, str]) -> int:
    """The three steps of ``--faithful`` (module docstring) in a copy of the environment ``base``."""
    venv = work / "colab-venv"
    fresh_copy(base, venv)  # Colab's package set, fresh for this run
    python = str(venv / "bin" / "python")
    before = installed(python, "tensorflow")
    env = {k: v for k, v in env.items() if k != "PIP_NO_INDEX"}  # the real install, as on Colab
    start = time.perf_counter()
    first = subprocess.run([python, "-c", FIRST_SESSION, str(content / FAITHFUL_NOTEBOOKS[0])], cwd=content, env=env,
                           capture_output=True, text=True)
    result = next((json.loads(line[7:]) for line in first.stdout.splitlines() if line.startswith("RESULT ")), None)
    after = installed(python, "tensorflow")
    print(f"colab rehearsal (faithful): a session with TensorFlow {result and result['first cell']} loaded; the setup "
          f"cell left {after} installed ({time.perf_counter() - start:.0f} s) and said: {result and result['message']}",
          flush=True)
    if result is None or result["errors"] != ["RestartRequired"] or not after.startswith("2.21."):
        print("colab rehearsal (faithful): expected TensorFlow 2.21 installed and RestartRequired\n" + first.stderr[-2000:])
        return 1
    if f"tensorflow {before} → {after}" not in result["message"]:
        print("colab rehearsal (faithful): the restart message does not name the TensorFlow it replaced")
        return 1
    code = chinese_run(python, content, env)  # after Runtime → Restart session: the Chinese 00
    if code == 0:  # on Colab's GPU runtime, the one a GPU course is run on: its T4 rehearsed
        code = run_nbval(python, list(FAITHFUL_NOTEBOOKS), content, {**env, "COURSE_REHEARSE_GPUS": ONE_GPU})
    if installed(str(base / "bin" / "python"), "tensorflow") != before:  # the copy's links shared a changed file
        print(f"colab rehearsal (faithful): {base} no longer has TensorFlow {before}: rebuild it with FORCE=1")
        return 1
    return code


def fresh_copy(base: Path, venv: Path) -> None:
    """``base`` copied to ``venv`` as hard links (4 s for Colab's 2.5 GB, against 30 s copied):
    pip and Python never write into an installed file (pip unlinks before writing, Python
    replaces its ``.pyc`` files), so the copy can change without changing ``base``. Across
    file systems, where links cannot be made, a real copy."""
    if subprocess.run(["cp", "-al", str(base), str(venv)], capture_output=True).returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        shutil.copytree(base, venv, symlinks=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT, help="the checkout to clone (default: this one)")
    parser.add_argument("--notebooks", nargs="+", default=None)
    parser.add_argument("--faithful", type=Path, metavar="VENV", help="an environment with Colab's package set")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    args.notebooks = args.notebooks or list(FAITHFUL_NOTEBOOKS if args.faithful else NOTEBOOKS)
    work = Path(tempfile.mkdtemp(prefix="colab-rehearsal-"))
    try:
        commit = snapshot_repository(args.source, work / "origin.git")
        content = work / "content"
        content.mkdir()
        for name in args.notebooks:
            shutil.copy(args.source / "notebooks" / name, content / name)
        if args.faithful:  # as Colab opens notebooks/zh/00_…: the same name, here beside the English
            shutil.copy(args.source / "notebooks" / CHINESE, content / Path(CHINESE).name.replace(".ipynb", ".zh.ipynb"))
        env = {
            **os.environ,
            **stand_in_colab(work),
            "COURSE_REPO_URL": (work / "origin.git").as_uri(),
            "COURSE_SMOKE": "1",
            "PIP_NO_INDEX": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        print(f"colab rehearsal: snapshot {commit[:12]} of {args.source}, working directory {content}", flush=True)
        if args.faithful:
            returncode = faithful(args.faithful, work, content, env)
        else:
            returncode = run_nbval(sys.executable, args.notebooks, content, env)
        clone = content / "course"
        if returncode == 0:
            if not (clone / "infra" / "colab.py").exists():
                print("colab rehearsal: the setup cell did not clone the course into content/course")
                return 1
            if not list((clone / "images").glob("00/*.png")):  # save_fig wrote into the clone: its utils ran
                print("colab rehearsal: notebook 00's figure is not in the clone (utils came from elsewhere?)")
                return 1
            print("colab rehearsal: the setup cell cloned the course and ran"
                  + (" after replacing Colab's TensorFlow" if args.faithful else ", installing nothing new"))
        return returncode
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
