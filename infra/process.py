"""Child processes: start, environment, watch, signal and reap — the one place that does it.

TensorFlow's device settings, memory growth and ``TF_CONFIG`` are read once per process, so
the course runs every variant, every worker and every failure in a **child process**. Every
child is started by :func:`start_child`: in its own process group (so a signal reaches its
children too), with the project importable, and on Linux with the parent-death signal set
(it gets SIGTERM if the launching process is killed outright, e.g. a kernel restart). Every
child is ended by :func:`stop_child`: SIGTERM to the group, a grace period, then SIGKILL.

- :func:`run_python` — run a snippet in a fresh interpreter, return its output (notebooks
  00, 03, 04, 09 and the tests);
- :func:`run_until` — run a script and SIGKILL it when a line it prints matches, as a crash
  would stop it (notebook 04's ``BackupAndRestore``);
- :class:`infra.cluster.LocalCluster` starts and stops its workers with the same functions.

Whatever happens — success, error, timeout, KeyboardInterrupt — nothing outlives the call.
Introduced in notebook 02 (``run_program``). No TensorFlow import.
"""

from __future__ import annotations

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from infra.watchdog import Watchdog
from utils.config import PROJECT_ROOT

# The one way a child program reports a result: a line ``RESULT {json}``. A program the
# student reads prints it with ``print("RESULT", json.dumps({...}))`` (or :func:`report`);
# launchers collect the lines with :func:`read_results`.
RESULT_PREFIX = "RESULT "


def report(**values: Any) -> None:
    """Print one ``RESULT {json}`` line (values must be JSON-serialisable). Used by the
    programs of notebooks 02, 04–07, 09 and 10 and by the tests."""
    print(RESULT_PREFIX + json.dumps(values, sort_keys=True), flush=True)


def read_results(text: str) -> list[dict[str, Any]]:
    """Every ``RESULT {json}`` line of a program's output, in order (other lines ignored)."""
    return [json.loads(line[len(RESULT_PREFIX):]) for line in text.splitlines() if line.startswith(RESULT_PREFIX)]


# --------------------------------------------------------------------------------------------
# Starting and stopping
# --------------------------------------------------------------------------------------------
def find_command(name: str) -> str | None:
    """The path of the system command ``name``: on ``PATH``, or in the sbin folders a non-login
    root shell may lack (``ip``, ``tc``, Slurm's daemons). Used by ``infra.netns`` and ``infra.slurm``."""
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
    """Start ``argv`` as a child in its own process group, stdin closed.

    ``env`` is the complete environment (build it with :func:`child_env`; default:
    ``child_env()``). On Linux the child also gets SIGTERM when the launching process dies
    (``PR_SET_PDEATHSIG``; note that it fires when the *thread* that started the child ends,
    so start children from a thread that lives as long as they should). Stop it with
    :func:`stop_child`. Ctrl-C pressed while the child starts is held until it has started,
    then raised with the child stopped, so an interrupted start leaves nothing behind.
    """
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
    """Hold Ctrl-C (SIGINT, also Jupyter's stop button) until the block ends; yield a list
    that is non-empty if it was pressed meanwhile.

    A KeyboardInterrupt inside ``subprocess.Popen``, after the fork, leaves a child running
    that nobody holds (CPython neither returns nor kills it). Only the main thread receives
    Python's signal handlers, so elsewhere nothing is held.
    """
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
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, sig)
        else:  # pragma: no cover - Windows
            proc.kill()
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


# --------------------------------------------------------------------------------------------
# Run a snippet and collect its output
# --------------------------------------------------------------------------------------------
@dataclass
class ProcessResult:
    """What a child process did: exit code, output, time taken, and whether it timed out."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def result(self) -> dict[str, Any]:
        """The last ``RESULT {json}`` line the child printed (``{}`` if none): see :func:`report`."""
        results = read_results(self.stdout)
        return results[-1] if results else {}

    def tail(self, lines: int = 15) -> str:
        """The last lines of stderr (or stdout when stderr is empty), for error messages."""
        text = self.stderr.strip() or self.stdout.strip()
        return "\n".join(text.splitlines()[-lines:])


def run_python(
    code: str,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
    cwd: str | os.PathLike[str] | None = None,
    python: str | None = None,
) -> ProcessResult:
    """Run ``code`` with a fresh Python interpreter and return its output.

    ``env`` adds to (and overrides) the current environment; the project root is put on
    ``PYTHONPATH``. A child still running after ``timeout`` seconds is killed with its
    whole process group and reported with ``timed_out=True``. Used in notebooks 00, 03, 04
    and 09 and in the tests.
    """
    return _run([python or sys.executable, "-c", textwrap.dedent(code)], env, timeout, cwd)


def run_program(
    path: str | os.PathLike[str],
    *args: Any,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
    cwd: str | os.PathLike[str] | None = None,
    python: str | None = None,
) -> ProcessResult:
    """Run the program file ``path`` (a notebook's ``%%writefile programs/…`` cell) with
    ``args`` in a fresh interpreter, as :func:`run_python` runs code. Used in notebooks 03, 09."""
    program = Path(path)
    if not program.is_file():
        raise FileNotFoundError(f"{program}: no such program (run its %%writefile cell first)")
    return _run([python or sys.executable, str(program.resolve()), *map(str, args)], env, timeout, cwd)


def run_command(argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 120.0,
                cwd: str | os.PathLike[str] | None = None) -> ProcessResult:
    """Run any command as :func:`run_python` runs code: killed with its whole process group after
    ``timeout`` seconds (``timed_out=True``). Used by ``make gpu-check``."""
    return _run(list(argv), env, timeout, cwd)


def _run(argv: list[str], env: Mapping[str, str] | None, timeout: float,
         cwd: str | os.PathLike[str] | None) -> ProcessResult:
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    start = time.perf_counter()
    # a child killed at its timeout cannot run its atexit clean-up (TensorFlow's autograph
    # files): its temporary files go in a folder removed here
    with tempfile.TemporaryDirectory(prefix="course-run-") as tmp:
        proc = start_child(argv, env=child_env({"TMPDIR": tmp, **(env or {})}), cwd=cwd)
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


# --------------------------------------------------------------------------------------------
# Run a script and kill it at a chosen line
# --------------------------------------------------------------------------------------------
@dataclass
class KilledRun:
    """What :func:`run_until` saw: output lines, whether it killed the process, exit code."""

    lines: list[str]
    killed: bool
    returncode: int
    seconds: float

    @property
    def output(self) -> str:
        return "\n".join(self.lines)


def run_until(
    argv: Sequence[str],
    kill_when: Callable[[str], bool] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 300.0,
    echo: Callable[[str], Any] | None = None,
) -> KilledRun:
    """Run ``python argv...`` and SIGKILL it (its whole process group) when a line it prints
    makes ``kill_when(line)`` true, as a crash or a preempted machine would stop it.

    Without ``kill_when`` the process runs to the end. On a timeout, an exception or a
    keyboard interrupt the process group is killed too, so nothing outlives the call
    (a timeout then raises ``TimeoutError``). stderr is merged into the lines; the working
    directory is the project root. Used in notebook 04 (``BackupAndRestore``).
    """
    start = time.perf_counter()
    proc = start_child(
        [sys.executable, *map(str, argv)], env=child_env(env), cwd=PROJECT_ROOT, stderr=subprocess.STDOUT
    )
    lines: list[str] = []
    killed = False
    watchdog = Watchdog(timeout, lambda: signal_group(proc, signal.SIGKILL))
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            lines.append(line)
            if echo is not None:
                echo(line)
            if kill_when is not None and kill_when(line):
                signal_group(proc, signal.SIGKILL)
                killed = True
                break
        proc.wait(timeout=30)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            stop_child(proc, grace_seconds=0)
        if proc.stdout is not None:
            proc.stdout.close()
    if watchdog.fired:
        raise TimeoutError(
            f"{argv[0]} ran longer than {timeout} s and was killed; last lines:\n" + "\n".join(lines[-10:])
        )
    return KilledRun(lines, killed, proc.returncode, time.perf_counter() - start)

