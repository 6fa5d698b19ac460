"""``make test`` (tools/run_tests.sh) and ``make run`` (tools/run_full.sh): what they run,
in which order, and the clean-up of the background build.

The script is run in a copy of the project layout with a fake Python (it logs its arguments)
and a fake ``setup_horovod.sh``, so these tests take seconds and build nothing.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from utils import config

SCRIPT = config.PROJECT_ROOT / "tools" / "run_tests.sh"
RUN_FULL = config.PROJECT_ROOT / "tools" / "run_full.sh"


def make_project(
    tmp_path: Path, *, python_rc: int = 0, python_sleep: float = 0, setup: str = "exit 0", after_build: bool = False,
    colab_setup: str = 'echo "/fake/venv-colab"', fail_when: str = "", slurm_setup: str = "exit 0",
) -> Path:
    root = tmp_path / "project"
    (root / "tools").mkdir(parents=True)
    (root / "notebooks").mkdir()
    for name in ("00_a.ipynb", "01_b.ipynb", "02_c.ipynb", "07_horovod.ipynb", "09_slow.ipynb"):
        (root / "notebooks" / name).write_text("{}")
    (root / "notebooks" / "zh").mkdir()
    (root / "notebooks" / "zh" / "00_a.ipynb").write_text("{}")  # the Chinese edition of 00
    (root / "tools" / "run_tests.sh").write_text(SCRIPT.read_text())
    (root / "tools" / "run_full.sh").write_text(RUN_FULL.read_text())
    # build.pid last, each file whole (written, then renamed): the fake python starts once it
    # exists, and a Ctrl-C right after must not find build.pgid still being written
    (root / "tools" / "setup_horovod.sh").write_text(
        f'ps -o pgid= -p $$ | tr -d " " > "{root}/build.pgid.tmp" && mv "{root}/build.pgid.tmp" "{root}/build.pgid"\n'
        f'echo $$ > "{root}/build.pid.tmp" && mv "{root}/build.pid.tmp" "{root}/build.pid"\n'
        f'echo "setup_horovod: fake build"\n{setup}\n'
    )
    (root / "tools" / "setup_colab_env.sh").write_text(f'echo "setup_colab_env: fake build"\n{colab_setup}\n')
    (root / "tools" / "setup_slurm.sh").write_text(f'echo "setup_slurm: fake install"\n{slurm_setup}\n')
    fake_python = root / "python"
    # after_build: the fake python first waits until the background build has started (a loaded
    # machine may start the build, at nice 10, long after the first python)
    wait = f'while [ ! -e "{root}/build.pid" ]; do sleep 0.05; done\n' if after_build else ""
    # fail_when: the calls whose arguments contain it fail (exit 1)
    fail = f'case "$*" in *{fail_when}*) exit 1;; esac\n' if fail_when else ""
    fake_python.write_text(
        f'#!/usr/bin/env bash\n{wait}echo "$*" >> "{root}/calls.log"\nsleep {python_sleep}\n{fail}exit {python_rc}\n'
    )
    fake_python.chmod(0o755)
    return root


def run(
    root: Path, script: str = "run_tests.sh", args: list[str] | None = None, **kwargs
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", f"tools/{script}", *(args or [])],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        **{"env": {**os.environ, "PY": str(root / "python")}, **kwargs},
    )


def calls(root: Path) -> list[str]:
    return (root / "calls.log").read_text().splitlines()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_runs_unit_tests_then_notebooks_beside_horovod_beside_notebook_09_and_the_rehearsals(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    scratch = tmp_path / "tmp"  # where the second stream's copy of the tree goes
    scratch.mkdir()
    result = run(root, env={**os.environ, "PY": str(root / "python"), "TMPDIR": str(scratch)})
    assert result.returncode == 0, result.stderr
    log = calls(root)  # all three streams write to it
    main = [line for line in log if any(mark in line for mark in ("notebooks/01_b.ipynb", "not beside", "ruff"))]
    assert main[0] == "-m ruff check ."  # once, in the main stream only
    assert main[1] == "-m pytest tests -m not horovod_env and not beside --durations=25"
    # not 07, not 09; the Chinese 00 in the English one's place (same code), which the rehearsals run
    assert main[2].endswith("--durations=15 notebooks/zh/00_a.ipynb notebooks/01_b.ipynb notebooks/02_c.ipynb")
    # the Horovod job: its build, then the unit test that needs it and notebook 07
    horovod = [line for line in log if "-m horovod_env" in line or "--nbval-kernel-name horovod" in line]
    assert horovod[0] == "-m pytest tests -m horovod_env"
    assert "--nbval-kernel-name horovod notebooks/07_horovod.ipynb" in horovod[1] and len(horovod) == 2
    second = [line for line in log if line not in main + horovod]  # the second stream, in its copy of the tree
    assert second[0] == "-m pytest tests -m beside and not horovod_env --durations=25"  # the long unit tests
    assert second[1].endswith("--durations=15 notebooks/09_slow.ipynb")
    # the GPU rehearsals: one T4 (00 and 04 have theirs in the faithful Colab rehearsal), three GPUs
    assert second[2].endswith("--nbval-current-env notebooks/02_c.ipynb")
    assert second[3].endswith("--nbval-current-env notebooks/00_a.ipynb notebooks/02_c.ipynb")
    assert second[4] == f"tools/colab_rehearsal.py --source {root} --faithful /fake/venv-colab"
    reports = root / "build" / "test-reports"  # both streams' notebooks report their cells' times there
    assert f"--junitxml={reports}/nbval-00_a.xml" in main[2] and f"--junitxml={reports}/nbval-09_slow.xml" in second[1]
    assert log[-1].startswith("tools/lesson_lines.py --times")  # and the table of core times beside slots ends the run
    assert "GPU rehearsal, 1x15360@7.5:Tesla T4" in result.stdout and "GPU rehearsal, 3x24576" in result.stdout
    assert "setup_horovod: fake build" in result.stdout and "setup_colab_env: fake build" in result.stdout
    assert list(scratch.iterdir()) == []  # the copy is gone


def test_a_failure_in_the_second_stream_fails_the_run_after_all_its_parts_ran(tmp_path: Path) -> None:
    root = make_project(tmp_path, fail_when="09_slow")
    result = run(root)
    assert result.returncode == 1
    log = calls(root)
    assert sum("--nbval-current-env notebooks/" in line for line in log) == 2  # both rehearsals ran
    assert any("colab_rehearsal.py" in line for line in log)  # and the Colab one
    assert any("--nbval-kernel-name horovod" in line for line in log)  # the main stream finished too


def test_without_colabs_python_the_simple_colab_rehearsal_runs(tmp_path: Path) -> None:
    root = make_project(tmp_path, colab_setup='echo "setup_colab_env: no Python 3.13" >&2; exit 3')
    result = run(root)
    assert result.returncode == 0, result.stderr
    log = calls(root)  # both streams write to it: the main stream's lines can come between the second's
    assert f"tools/colab_rehearsal.py --source {root}" in log and "the simple one instead" in result.stdout
    t4 = [i for i, line in enumerate(log) if line.endswith("--nbval-current-env notebooks/00_a.ipynb")]
    assert len(t4) == 1 and t4[0] > log.index(f"tools/colab_rehearsal.py --source {root}")  # then 00 on a T4, once
    failed = make_project(tmp_path / "failed", colab_setup="exit 1")
    result = run(failed)
    assert result.returncode == 1 and not any("colab_rehearsal" in line for line in calls(failed))


def test_slurm_is_installed_before_the_notebooks_or_said_why_not(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    result = run(root)
    assert result.returncode == 0 and "setup_slurm: fake install" in result.stdout
    cannot = make_project(tmp_path / "cannot", slurm_setup='echo "setup_slurm: not root" >&2; exit 3')
    result = run(cannot)
    assert result.returncode == 0 and "not root" in result.stdout and "notebook 11 shows its scripts only" in result.stdout
    broken = make_project(tmp_path / "broken", slurm_setup="exit 1")
    result = run(broken)
    assert result.returncode == 1
    assert not any("01_b.ipynb" in line for line in calls(broken))  # the notebooks did not run


def test_build_that_cannot_run_here_skips_notebook_07_with_a_line(tmp_path: Path) -> None:
    root = make_project(tmp_path, setup='echo "setup_horovod: no compiler" >&2; exit 3')
    result = run(root)
    assert result.returncode == 0
    assert len(calls(root)) == 9  # ruff, unit tests (two parts), notebooks, notebook 09, two GPU rehearsals, Colab, slot table; not 07
    assert not any(line.endswith("-m horovod_env") or "--nbval-kernel-name horovod" in line for line in calls(root))
    assert "no compiler" in result.stdout and "notebook 07 not run" in result.stdout


def test_failed_build_fails_the_run(tmp_path: Path) -> None:
    root = make_project(tmp_path, setup="exit 1")
    assert run(root).returncode == 1
    assert not any(line.endswith("-m horovod_env") for line in calls(root))  # notebook 07 not tried


@pytest.mark.parametrize("how", ["failure", "interrupt", "interrupt-before-setsid"])
def test_background_build_is_stopped(tmp_path: Path, how: str) -> None:
    """... and the second stream with it: also when Ctrl-C comes before the second stream's
    child has made its own process group (a loaded machine once hung `make test`'s clean-up so:
    the group did not exist yet, the stream ran on); here a setsid that waits 3 s stands in."""
    slow_build = "sleep 120 & wait"
    env = {**os.environ}
    if how == "interrupt-before-setsid":
        slow_setsid = tmp_path / "bin" / "setsid"
        slow_setsid.parent.mkdir()
        real = shutil.which("setsid")
        slow_setsid.write_text(f'#!/bin/bash\ncase "$*" in *second*) sleep 3;; esac\nexec {real} "$@"\n')
        slow_setsid.chmod(0o755)
        env["PATH"] = f"{slow_setsid.parent}:{env['PATH']}"
    if how == "failure":
        root = make_project(tmp_path, python_rc=1, python_sleep=1, setup=slow_build, after_build=True)
        result = run(root)
        assert result.returncode == 1
    else:
        root = make_project(tmp_path, python_sleep=30, setup=slow_build, after_build=True)
        proc = subprocess.Popen(
            ["bash", "tools/run_tests.sh"],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env, "PY": str(root / "python")},
            start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while not (root / "calls.log").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
        _, err = proc.communicate(timeout=30)
        assert proc.returncode != 0
        assert "stopping a background job" in err
    build_pid = int((root / "build.pid").read_text())
    group = int((root / "build.pgid").read_text())  # the Horovod job's (setsid), not make test's
    assert group != os.getpgid(0)
    deadline = time.monotonic() + 10
    while (alive(build_pid) or group_members(group)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(build_pid)
    assert group_members(group) == []  # the sleep the build started is gone too


def group_members(pgid: int) -> list[str]:
    ps = subprocess.run(["ps", "-e", "-o", "pgid=,stat=,pid="], capture_output=True, text=True, check=True)
    return [
        line for line in ps.stdout.splitlines() if line.split()[0] == str(pgid) and "Z" not in line.split()[1]
    ]


def test_full_run_executes_each_notebook_in_its_own_call(tmp_path: Path) -> None:
    """One nbconvert per notebook, so that 07 gets its own kernel; then HTML of them all."""
    root = make_project(tmp_path)
    result = run(root, "run_full.sh")
    assert result.returncode == 0, result.stderr
    log = calls(root)
    executes = [line for line in log if "--execute" in line]
    assert [line.split()[-1] for line in executes] == [
        "notebooks/00_a.ipynb",
        "notebooks/01_b.ipynb",
        "notebooks/02_c.ipynb",
        "notebooks/07_horovod.ipynb",
        "notebooks/09_slow.ipynb",
    ]
    assert (
        log[-1].endswith("build/00_a.ipynb build/01_b.ipynb build/02_c.ipynb build/07_horovod.ipynb build/09_slow.ipynb")
        and "--to html" in log[-1]
    )


def test_full_run_leaves_out_notebook_07_when_horovod_cannot_be_built(tmp_path: Path) -> None:
    root = make_project(tmp_path, setup='echo "setup_horovod: no compiler" >&2; exit 3')
    result = run(root, "run_full.sh")
    assert result.returncode == 0
    assert "07_horovod.ipynb not run" in result.stdout
    assert not any("07_" in line for line in calls(root))


def test_stages_alone(tmp_path: Path) -> None:
    """make test-unit / test-rehearsals / test-horovod run one part each."""
    root = make_project(tmp_path)
    assert run(root, "run_tests.sh", args=["unit"]).returncode == 0
    assert calls(root) == ["-m ruff check .", "-m pytest tests -m not horovod_env --durations=25"]
    (root / "calls.log").unlink()
    assert run(root, "run_tests.sh", args=["rehearsals"]).returncode == 0
    assert len(calls(root)) == 2 and all("--nbval-current-env notebooks/00_a.ipynb notebooks/02_c" in c for c in calls(root))
    (root / "calls.log").unlink()
    result = run(root, "run_tests.sh", args=["horovod"])
    assert result.returncode == 0, result.stderr
    assert "setup_horovod: fake build" in result.stdout  # built in the foreground, its output shown
    assert calls(root)[0] == "-m pytest tests -m horovod_env" and "07_horovod.ipynb" in calls(root)[1]
    bad = run(root, "run_tests.sh", args=["everything"])
    assert bad.returncode == 2 and "usage:" in bad.stderr


def test_a_lint_error_fails_make_test_before_the_tests_run(tmp_path: Path) -> None:
    """ruff runs in tools/run_tests.sh, not in pytest: CI runs only make test, so it must fail there."""
    root = make_project(tmp_path, fail_when="ruff")
    assert run(root, "run_tests.sh", args=["unit"]).returncode == 1
    assert calls(root) == ["-m ruff check ."]
