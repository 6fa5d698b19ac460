"""Child processes: start, environment, signal and reap — the one place that does it.

:func:`start_child` starts a child in its own process group (Linux: SIGTERM when its parent dies);
:func:`stop_child` ends the group. :func:`run_program`, :func:`run_python`, :func:`run_command` and
:func:`run_streaming` run one to its end; nothing outlives the call. Introduced in notebook 02.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from utils.config import PROJECT_ROOT

# How a child program reports a result: a line ``RESULT {json}`` (see :func:`report`).
RESULT_PREFIX = "RESULT "


def report(**values: Any) -> None:
    """Print one ``RESULT {json}`` line (values must be JSON-serialisable)."""
    print(RESULT_PREFIX + json.dumps(values, sort_keys=True), flush=True)


def read_results(text: str) -> list[dict[str, Any]]:
    """Every ``RESULT {json}`` line of a program's output, in order (other lines ignored)."""
    return [json.loads(line[len(RESULT_PREFIX):]) for line in text.splitlines()
            if line.startswith(RESULT_PREFIX)]


def find_command(name: str) -> str | None:
    """The path of the system command ``name``: on ``PATH``, or in the sbin folders a non-login
    root shell may lack (``ip``, ``tc``, Slurm's daemons)."""
    return shutil.which(name) or next(
        (p for p in (f"/usr/sbin/{name}", f"/sbin/{name}", f"/usr/bin/{name}") if os.access(p, os.X_OK)), None
    )


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child: ours, quiet TensorFlow logs, unbuffered output, the
    project root first on ``PYTHONPATH`` (after the GPU rehearsal's start-up hook when
    ``COURSE_REHEARSE_GPUS`` is set), then ``extra`` (which wins)."""
    from infra import rehearsal

    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONUNBUFFERED"] = "1"
    paths = [str(PROJECT_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    if extra:
        env.update(extra)
    if env.get(rehearsal.ENV_VAR):
        env["PYTHONPATH"] = rehearsal.child_pythonpath(env["PYTHONPATH"])
    return env


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """In the child: get SIGTERM when the thread that started it dies (Linux prctl)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not glibc: best effort only
        pass


def start_child(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stdout: int | IO[Any] | None = subprocess.PIPE,
    stderr: int | IO[Any] | None = subprocess.PIPE,
    text: bool = True,
) -> subprocess.Popen[Any]:
    """Start ``argv`` in its own process group, stdin closed, ``env`` complete (default ``child_env()``).
    Linux: it gets SIGTERM when the *thread* that started it ends. Ctrl-C during the start is
    raised once the child is stopped, so an interrupted start leaves nothing behind."""
    with _ctrl_c_held() as pressed:
        proc = subprocess.Popen(
            list(argv),
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=text,
            env=dict(env) if env is not None else child_env(),
            cwd=str(cwd) if cwd is not None else None,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
    if pressed:
        try:
            signal.raise_signal(signal.SIGINT)  # delivered now, to the handler that was there before
        except BaseException:
            stop_child(proc, grace_seconds=0)  # the caller never got this child: end it here
            raise
    return proc


@contextmanager
def _ctrl_c_held() -> Iterator[list[int]]:
    """Hold Ctrl-C (SIGINT, Jupyter's stop button) until the block ends; the list yielded is
    non-empty if it was pressed. (A KeyboardInterrupt inside ``Popen`` after the fork would
    leave a child nobody holds.) Only the main thread gets signals: elsewhere nothing is held."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is None:
        yield []  # not the main thread, or a handler installed outside Python that we could not put back
        return
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, previous)


def signal_group(proc: subprocess.Popen[Any], sig: int) -> None:
    """Send ``sig`` to the child's whole process group (no error if it is gone already)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_children(procs: Sequence[subprocess.Popen[Any]], grace_seconds: float = 3.0) -> None:
    """End several children together: SIGTERM to every group, one shared grace period, then
    SIGKILL to every group (also grandchildren that ignored SIGTERM) and reap them all."""
    for proc in procs:
        if proc.poll() is None:
            signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for proc in procs:
        signal_group(proc, signal.SIGKILL)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
            pass


def stop_child(proc: subprocess.Popen[Any], grace_seconds: float = 3.0) -> None:
    """End one child started by :func:`start_child` and everything it started."""
    stop_children([proc], grace_seconds)


def kill_until_gone(find: Callable[[], Iterable[int]], tries: int) -> set[int]:
    """SIGKILL the processes ``find()`` lists, again and again until it lists none (a dying one may
    still fork) or ``tries`` rounds passed; returns the pids killed. Used by ``infra.netns`` (what
    runs in a namespace) and ``infra.slurm`` (a cluster's or a node's daemons)."""
    killed: set[int] = set()
    for _ in range(tries):
        pids = set(find())
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed |= pids
        time.sleep(0.05)
    return killed


@dataclass
class ProcessResult:
    """What a child process did: exit code, output, time taken, whether it timed out, and whether
    :func:`run_streaming` killed it at a line (its stderr is then merged into ``stdout``)."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    killed: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    @property
    def output(self) -> str:
        return self.stdout

    @property
    def result(self) -> dict[str, Any]:
        """The last ``RESULT {json}`` line the child printed (``{}`` if none): see :func:`report`."""
        results = read_results(self.stdout)
        return results[-1] if results else {}

    def tail(self, lines: int = 15) -> str:
        """The last lines of stderr (or stdout when stderr is empty), for error messages."""
        text = self.stderr.strip() or self.stdout.strip()
        return "\n".join(text.splitlines()[-lines:])


def run_python(code: str, *, env: Mapping[str, str] | None = None, timeout: float = 120.0) -> ProcessResult:
    """Run ``code`` in a fresh interpreter, as :func:`run_command` runs a command."""
    return run_command([sys.executable, "-c", textwrap.dedent(code)], env=env, timeout=timeout)


def run_program(path: str | os.PathLike[str], *args: Any, env: Mapping[str, str] | None = None,
                timeout: float = 120.0) -> ProcessResult:
    """Run the program file ``path`` (a notebook's ``%%writefile programs/…`` cell) with ``args``
    in a fresh interpreter, as :func:`run_command` runs a command. Notebooks 02–04, 09, 11."""
    program = Path(path)
    if not program.is_file():
        raise FileNotFoundError(f"{program}: no such program (run its %%writefile cell first)")
    return run_command([sys.executable, str(program.resolve()), *map(str, args)], env=env, timeout=timeout)


def run_command(argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 120.0,
                cwd: str | os.PathLike[str] | None = None) -> ProcessResult:
    """Run ``argv`` with :func:`child_env` plus ``env`` and return its output. After ``timeout``
    seconds it is killed with its whole process group (``timed_out=True``)."""
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    start = time.perf_counter()
    # a child killed at its timeout cannot remove its temporary files (TensorFlow's autograph
    # files): they go in a folder removed here
    with tempfile.TemporaryDirectory(prefix="course-run-") as tmp:
        proc = start_child(list(argv), env=child_env({"TMPDIR": tmp, **(env or {})}), cwd=cwd)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            stop_child(proc)
            stdout, stderr = proc.communicate()
            timed_out = True
        except BaseException:
            stop_child(proc)
            raise
    return ProcessResult(proc.returncode, stdout, stderr, time.perf_counter() - start, timed_out)


def run_streaming(argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                  cwd: str | os.PathLike[str] | None = None, timeout: float = 300.0,
                  on_line: Callable[[str], object] | None = None,
                  on_exit: Callable[[bool], object] | None = None) -> ProcessResult:
    """Run ``argv`` (with :func:`child_env` plus ``env``; stderr merged) and pass each line to
    ``on_line`` as it comes; a true answer SIGKILLs the group, as a crash would. Stopped after
    ``timeout`` seconds or on an exception (Ctrl-C too). ``on_exit(timed_out)`` runs once it ended,
    before its last lines are read: the moment to end what it started outside its group (which may
    hold the pipe open)."""
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    start = time.perf_counter()
    proc = start_child(argv, env=child_env(env), cwd=cwd, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    lines: list[str] = []
    killed = timed_out = False

    def pump() -> None:  # in a thread: the main thread waits with a timeout and gets Ctrl-C
        nonlocal killed
        for raw in proc.stdout:
            lines.append(raw.rstrip("\n"))
            if on_line is not None and on_line(lines[-1]):
                killed = True
                signal_group(proc, signal.SIGKILL)
                return

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        stop_child(proc)
    except BaseException:
        stop_child(proc)
        raise
    finally:
        if on_exit is not None:
            on_exit(timed_out)
        reader.join(timeout=5)
        if not reader.is_alive():  # else a process outside the group holds the pipe: close would block
            proc.stdout.close()
    seconds = time.perf_counter() - start
    return ProcessResult(proc.returncode, "\n".join(lines), "", seconds, timed_out, killed)


def run_until(argv: Sequence[str], kill_when: Callable[[str], bool] | None = None, *,
              env: Mapping[str, str] | None = None, timeout: float = 300.0) -> ProcessResult:
    """Run ``python argv...`` in the project root and SIGKILL it when a line it prints makes
    ``kill_when(line)`` true (see :func:`run_streaming`); ``TimeoutError`` after ``timeout``
    seconds. Used in notebook 04 (``BackupAndRestore``)."""
    run = run_streaming([sys.executable, *map(str, argv)], env=env, cwd=PROJECT_ROOT,
                        timeout=timeout, on_line=kill_when)
    if run.timed_out:
        raise TimeoutError(f"{argv[0]} ran longer than {timeout} s and was stopped; last lines:\n"
                           + "\n".join(run.lines[-10:]))
    return run
