"""run_python reports output and never leaves a process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from infra import process
from infra.process import run_python


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); count it as gone.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_output_and_exit_code() -> None:
    result = run_python("import sys; print('hello'); sys.exit(3)", timeout=30)
    assert result.returncode == 3 and not result.ok
    assert result.stdout.strip() == "hello"


def test_project_is_importable_in_child() -> None:
    result = run_python("import utils.config as c; print(c.PROJECT_ROOT.name)", timeout=30)
    assert result.ok, result.tail()


def test_timeout_kills_the_whole_group(tmp_path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    result = run_python(
        f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(600)
        """,
        timeout=10,  # the pid file must be written before it: Python's start-up takes seconds under load
    )
    assert result.timed_out and not result.ok
    grandchild = int(pid_file.read_text())
    deadline = time.time() + 5
    while _alive(grandchild) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(grandchild), "the grandchild process outlived the timeout"


def test_a_child_killed_at_its_timeout_leaves_no_temporary_file() -> None:
    result = run_python(
        """
        import tempfile, time
        with tempfile.NamedTemporaryFile(prefix="__autograph_generated_file", delete=False) as f:
            print(f.name, flush=True)  # as TensorFlow's autograph leaves them: removed at exit
        time.sleep(600)
        """,
        timeout=5,
    )
    assert result.timed_out
    left = Path(result.stdout.strip())
    assert left.name.startswith("__autograph") and left.parent != Path(tempfile.gettempdir())
    assert not left.exists() and not left.parent.exists()


def test_bad_timeout() -> None:
    with pytest.raises(ValueError):
        run_python("pass", timeout=0)


def test_run_until_kills_at_marker_and_runs_to_end() -> None:
    loop = "import time\nfor i in range(1000):\n    print(f'step {i}', flush=True)\n    time.sleep(0.01)\n"
    run = process.run_until(["-c", loop], kill_when=lambda line: line == "step 5")
    assert run.killed and run.returncode == -9
    assert run.lines[-1] == "step 5"
    done = process.run_until(["-c", "print('hello'); import sys; sys.exit(3)"])
    assert not done.killed and done.returncode == 3 and done.output == "hello"


def test_run_until_timeout_kills_the_child() -> None:
    with pytest.raises(TimeoutError, match="longer than"):
        process.run_until(["-c", "import time; print('up', flush=True); time.sleep(60)"], timeout=1.0)


def _popen_then_ctrl_c(started: list):
    """A ``subprocess.Popen`` that presses Ctrl-C right after the fork, as a user's stop could."""
    real_popen = subprocess.Popen

    def popen(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        signal.raise_signal(signal.SIGINT)
        return proc

    return popen


def test_ctrl_c_while_a_child_starts_leaves_no_child(monkeypatch):
    started: list = []
    monkeypatch.setattr(process.subprocess, "Popen", _popen_then_ctrl_c(started))
    with pytest.raises(KeyboardInterrupt):
        process.start_child([sys.executable, "-c", "import time; time.sleep(60)"])
    assert len(started) == 1
    assert started[0].poll() is not None, "the child started during Ctrl-C is still running"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is back


def test_ctrl_c_while_a_child_starts_is_ignored_when_sigint_is(monkeypatch):
    started: list = []
    monkeypatch.setattr(process.subprocess, "Popen", _popen_then_ctrl_c(started))
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = process.start_child([sys.executable, "-c", "import time; time.sleep(60)"])
        assert proc is started[0] and proc.poll() is None  # started and handed over
        process.stop_child(proc, grace_seconds=0)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_run_program_runs_a_file_and_reads_its_result(tmp_path) -> None:
    from infra.process import run_program

    program = tmp_path / "double.py"
    program.write_text('import json, sys\nprint("RESULT", json.dumps({"twice": 2 * int(sys.argv[1])}))\n')
    result = run_program(program, 21, timeout=60)
    assert result.ok and result.result == {"twice": 42}
    with pytest.raises(FileNotFoundError, match="writefile"):
        run_program(tmp_path / "missing.py")
