"""The course's watchdog: something that acts when a process stops answering or dies.

Two kinds of waiting need one:

* **a deadline inside a process** — :class:`Watchdog` calls a function after so many seconds
  unless it is cancelled first. ``infra.process.run_until`` kills a child that runs too long
  with it; :func:`exit_if_stuck` ends a Horovod rank that waits in a collective the other ranks
  never join (``scripts/workers/horovod_stall.py``, notebook 07).
* **clean-up after the owner dies** — :class:`OwnerGuard` starts a small guardian process in a
  session of its own. It holds the read end of a pipe whose write end only the owner holds:
  when the owner ends, even by SIGKILL (a killed kernel), the pipe closes, and unless the
  owner said it cleaned up itself, the guardian calls a clean-up function
  (``infra.netns``'s network namespaces in notebook 10, ``infra.cluster``'s worker folders).
* **one lifetime for everything the course starts** — :class:`Lifetime` joins the two ends:
  the owner's own ``stop`` at a normal interpreter exit (``atexit``), and an :class:`OwnerGuard`
  when the owner is killed. ``infra.cluster`` and ``infra.netns`` use it.

Process trees are read with ``psutil``.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence

from utils.config import PROJECT_ROOT

DONE = b"done"


class Watchdog:
    """Call ``on_expire()`` (in a daemon thread) after ``seconds``, unless :meth:`cancel` comes first.

    ``fired`` tells afterwards whether it did. Usable as a context manager (cancelled on exit).
    """

    def __init__(self, seconds: float, on_expire: Callable[[], object]) -> None:
        if seconds <= 0:
            raise ValueError(f"seconds must be > 0, got {seconds}")
        self.fired = False
        self._on_expire = on_expire
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        self._on_expire()

    def cancel(self) -> None:
        self._timer.cancel()

    def __enter__(self) -> Watchdog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()


@contextlib.contextmanager
def exit_if_stuck(seconds: float, what: str, *, grace: float = 2.0, exit_code: int = 3) -> Iterator[None]:
    """End this process if the block does not finish within ``seconds`` (a collective that never returns).

    ``with exit_if_stuck(5, "all-reduce 'gradient' of step 3"):`` prints ``still waiting in
    all-reduce 'gradient' of step 3 after 5 s`` (stdout, flushed), gives the other ranks
    ``grace`` seconds to print theirs, then ends the process with ``os._exit(exit_code)``:
    Horovod's launcher then stops the whole job. If the block finishes first, nothing happens.
    Used by ``scripts/workers/horovod_stall.py`` (notebook 07, "a rank that stalls").
    """
    if grace < 0:
        raise ValueError(f"grace must be >= 0, got {grace}")
    finished = threading.Event()

    def give_up() -> None:
        print(f"still waiting in {what} after {seconds:g} s", flush=True)
        if not finished.wait(grace):
            sys.stderr.flush()
            os._exit(exit_code)

    with Watchdog(seconds, give_up):
        try:
            yield
        finally:
            finished.set()


def _guardian_env() -> dict[str, str]:
    """Our environment with the project first on ``PYTHONPATH``: the guardian imports the
    clean-up function and nothing else (no TensorFlow, so no GPU rehearsal hook)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    return env


class OwnerGuard:
    """Call ``cleanup`` (``"package.module:function"``) with ``args`` in a guardian process if
    this process dies before :meth:`dismiss`.

    The guardian ignores Ctrl-C and hang-ups and lives in its own session, so neither reaches it
    when the notebook's kernel is interrupted or its process group is killed.
    """

    def __init__(self, cleanup: str, args: Sequence[str]) -> None:
        read_end, self._write_end = os.pipe()  # both non-inheritable by default
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "infra.watchdog", cleanup, *args],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=_guardian_env(),
                start_new_session=True,
                close_fds=True,
            )
        finally:
            os.close(read_end)

    def dismiss(self) -> None:
        """The owner cleaned up itself: tell the guardian to exit without doing anything."""
        if self._write_end >= 0:
            with contextlib.suppress(OSError):
                os.write(self._write_end, DONE)
            os.close(self._write_end)
            self._write_end = -1
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


class Lifetime:
    """What the course starts (worker processes, namespaces, daemons) does not outlive its owner.

    ``Lifetime(stop, cleanup, args)`` registers ``stop`` (the owner's own clean-up, e.g.
    ``cluster.stop``) to run at a normal interpreter exit, and starts an :class:`OwnerGuard`
    that calls ``cleanup`` (``"package.module:function"``) with ``args`` if this process is
    killed first. The owner calls :meth:`end` once it has cleaned up itself (idempotent).
    """

    def __init__(self, stop: Callable[[], object], cleanup: str, args: Sequence[str]) -> None:
        self._guard: OwnerGuard | None = OwnerGuard(cleanup, args)
        with _LIVE_LOCK:
            _LIVE[id(self)] = stop

    @property
    def guardian_pid(self) -> int | None:
        """The guardian's pid while there is one (its command line names what it guards)."""
        return self._guard.proc.pid if self._guard is not None else None

    def end(self) -> None:
        """The owner cleaned up: no guardian, no ``atexit`` call any more."""
        with _LIVE_LOCK:
            _LIVE.pop(id(self), None)
        if self._guard is not None:
            self._guard.dismiss()
            self._guard = None


_LIVE: dict[int, Callable[[], object]] = {}  # Lifetime id -> its owner's stop (a strong reference)
_LIVE_LOCK = threading.Lock()


@atexit.register
def _stop_all_live() -> None:  # a normal interpreter exit (Ctrl-C included): never leave anything behind
    with _LIVE_LOCK:
        stops = list(_LIVE.values())
    for stop in reversed(stops):  # the newest first: a cluster before the network it runs on
        stop()


def start_time(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), or None if there is none: with
    the pid it names one process, since a reused pid has another start time."""
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in 1/100 s since boot: short enough for a folder's or namespace's name."""
    import psutil

    started = start_time(pid)
    return None if started is None else round((started - psutil.boot_time()) * 100)


def owner_tag(pid: int | None = None) -> str:
    """``"<pid>-<start ticks>"``: names a process for the things it owns (namespaces, cluster
    folders), so that :func:`owner_alive` can tell later whether the owner is still there."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{start_ticks(pid) or 0}"


def owner_alive(pid: int, ticks: int) -> bool:
    return start_ticks(pid) == ticks  # a reused pid has another start time


def orphans(names: Iterable[str], pattern: re.Pattern[str]) -> list[str]:
    """Those of ``names`` whose owner died: ``pattern``'s first two groups are the owner's pid
    and start ticks (:func:`owner_tag`). What a live owner has is never listed, so concurrent
    runs are safe. Used by ``infra.netns`` and ``infra.slurm`` to reap what a dead owner left
    when its guardian died too."""
    found = [(name, pattern.match(name)) for name in names]
    return [name for name, match in found
            if match is not None and not owner_alive(int(match.group(1)), int(match.group(2)))]


def _guardian(cleanup: str, args: list[str]) -> None:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    said = b""
    while chunk := os.read(0, 1024):  # until the owner's write end closes
        said += chunk
    if DONE not in said:
        module, function = cleanup.split(":")
        getattr(importlib.import_module(module), function)(*args)


if __name__ == "__main__":  # the guardian of OwnerGuard
    _guardian(sys.argv[1], sys.argv[2:])
