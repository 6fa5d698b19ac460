"""Things that act when a process stops answering or dies.

* :func:`exit_if_stuck` ends a Horovod rank stuck in a collective (notebook 07).
* :class:`Lifetime`: what ``infra.cluster``, ``infra.netns`` and ``infra.slurm`` start does not
  outlive them: their ``stop`` at a normal exit, a guardian process's clean-up when they are killed.
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

import psutil

from infra.process import child_env

DONE = b"done"


@contextlib.contextmanager
def exit_if_stuck(seconds: float, what: str, *, grace: float = 2.0, exit_code: int = 3) -> Iterator[None]:
    """End this process if the block does not finish within ``seconds`` (a collective that never
    returns): ``with exit_if_stuck(5, "step 3"):`` prints ``still waiting in step 3 after 5 s``, waits
    ``grace`` seconds for the other ranks to print theirs, then ``os._exit(exit_code)``."""
    if seconds <= 0 or grace < 0:
        raise ValueError(f"need seconds > 0 and grace >= 0, got {seconds} and {grace}")
    finished = threading.Event()

    def give_up() -> None:
        print(f"still waiting in {what} after {seconds:g} s", flush=True)
        if not finished.wait(grace):
            sys.stderr.flush()
            os._exit(exit_code)

    timer = threading.Timer(seconds, give_up)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        finished.set()
        timer.cancel()


class Lifetime:
    """What the course starts (workers, namespaces, daemons) does not outlive its owner.

    ``stop`` (e.g. ``cluster.stop``) runs at a normal exit. If this process is killed first (even by
    SIGKILL), a guardian process, in its own session and deaf to Ctrl-C, calls ``cleanup``
    (``"package.module:function"``) with ``args``. The owner calls :meth:`end` once it cleaned up.
    """

    def __init__(self, stop: Callable[[], object], cleanup: str, args: Sequence[str]) -> None:
        read_end, self._write_end = os.pipe()  # both non-inheritable by default
        try:
            self._guardian: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-m", "infra.watchdog", cleanup, *args], stdin=read_end,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env(),
                start_new_session=True, close_fds=True,
            )
        finally:
            os.close(read_end)
        with _LIVE_LOCK:
            _LIVE[id(self)] = stop

    @property
    def guardian_pid(self) -> int | None:
        """The guardian's pid while there is one (its command line names what it guards)."""
        return self._guardian.pid if self._guardian is not None else None

    def end(self) -> None:
        """The owner cleaned up: the guardian exits doing nothing; no ``atexit`` call any more."""
        with _LIVE_LOCK:
            _LIVE.pop(id(self), None)
        if self._guardian is None:
            return
        with contextlib.suppress(OSError):
            os.write(self._write_end, DONE)
        os.close(self._write_end)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._guardian.wait(timeout=5)
        self._guardian = None


_LIVE: dict[int, Callable[[], object]] = {}  # Lifetime id -> its owner's stop (a strong reference)
_LIVE_LOCK = threading.Lock()


@atexit.register
def _stop_all_live() -> None:  # a normal interpreter exit (Ctrl-C included): never leave anything behind
    with _LIVE_LOCK:
        stops = list(_LIVE.values())
    for stop in reversed(stops):  # the newest first: a cluster before the network it runs on
        stop()


def _start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in 1/100 s since boot (None: no such process)."""
    try:
        started = psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    return round((started - psutil.boot_time()) * 100)


def owner_tag(pid: int | None = None) -> str:
    """``"<pid>-<start ticks>"``: names a process in what it owns (namespaces, folders); with
    the start time it names one process, since a reused pid has another."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{_start_ticks(pid) or 0}"


def orphans(names: Iterable[str], pattern: re.Pattern[str]) -> list[str]:
    """Those of ``names`` whose owner died: ``pattern``'s first two groups are the owner's pid
    and start ticks (:func:`owner_tag`). Used by ``infra.netns`` and ``infra.slurm`` to reap what
    an owner left when its guardian died too."""
    found = [(name, pattern.match(name)) for name in names]
    return [name for name, match in found
            if match is not None and _start_ticks(int(match.group(1))) != int(match.group(2))]


def _guardian(cleanup: str, args: list[str]) -> None:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    said = b""
    while chunk := os.read(0, 1024):  # until the owner's write end closes
        said += chunk
    if DONE not in said:
        module, function = cleanup.split(":")
        getattr(importlib.import_module(module), function)(*args)


if __name__ == "__main__":  # a Lifetime's guardian
    _guardian(sys.argv[1], sys.argv[2:])
