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
smoke settings and checks that the clone was made and used. ``make test`` runs it
(tools/run_tests.sh). Exit code: pytest's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ("00_course_overview.ipynb", "02_strategy_apis.ipynb")


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT, help="the checkout to clone (default: this one)")
    parser.add_argument("--notebooks", nargs="+", default=list(NOTEBOOKS))
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="colab-rehearsal-"))
    try:
        commit = snapshot_repository(args.source, work / "origin.git")
        content = work / "content"
        content.mkdir()
        for name in args.notebooks:
            shutil.copy(args.source / "notebooks" / name, content / name)
        env = {
            **os.environ,
            **stand_in_colab(work),
            "COURSE_REPO_URL": (work / "origin.git").as_uri(),
            "COURSE_SMOKE": "1",
            "PIP_NO_INDEX": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        print(f"colab rehearsal: snapshot {commit[:12]} of {args.source}, working directory {content}", flush=True)
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(content),
             "--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout=900", *args.notebooks],
            cwd=content, env=env,
        )
        clone = content / "course"
        if result.returncode == 0:
            if not (clone / "utils" / "colab.py").exists():
                print("colab rehearsal: the setup cell did not clone the course into content/course")
                return 1
            if not list((clone / "images").glob("00/*.png")):  # save_fig wrote into the clone: its utils ran
                print("colab rehearsal: notebook 00's figure is not in the clone (utils came from elsewhere?)")
                return 1
            print("colab rehearsal: the setup cell cloned the course, installed nothing new, and ran")
        return result.returncode
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
