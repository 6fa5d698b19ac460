"""Run Horovod jobs from notebook 07 and read what each rank printed (``[1]<stdout>:epoch 1 …``).

:func:`run_horovod` runs ``horovodrun`` with a timeout, splits its output per rank and kills what
the run left behind. No TensorFlow or Horovod import: this runs in both environments.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from infra.process import run_streaming

MARKER_VAR = "COURSE_HOROVOD_RUN"  # set to a fresh id for every process of one run_horovod

# horovodrun with Gloo prefixes each line with the rank and the stream; with
# --prefix-output-with-timestamp a date comes first: "Mon Nov 22 04:21:19 2026[0]<stdout>:x".
_RANK_LINE = re.compile(r"^(?P<time>[^\[]*)\[(?P<rank>\d+)(?:,\d+)?\]<(?P<stream>stdout|stderr)>:(?P<text>.*)$")
# Horovod's own log at HOROVOD_LOG_LEVEL=trace names every tensor a rank submits:
# "[2026-11-23 23:35:29.592804: T .../operations.cc:1539] [1]: Enqueued epoch_loss; ".
_ENQUEUED = re.compile(r"\]: Enqueued (?:tensors for \w+: )?(?P<names>.*)$")
_CHECK_LINE = re.compile(r"^\s*\[(?P<mark>[ X])\]\s+(?P<name>\S.*?)\s*$")


def hosts_arg(slots: Mapping[str, int]) -> str:
    """The ``-H`` value for ``horovodrun``: ``{"server1": 4, "server2": 4}`` → ``server1:4,server2:4``
    (slots: processes, normally one per GPU)."""
    if not slots:
        raise ValueError("give at least one host")
    parts = []
    for host, n in slots.items():
        if not host or any(c in host for c in ",: "):
            raise ValueError(f"bad host name {host!r}: no commas, colons or spaces")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"host {host!r} needs a whole number of slots ≥ 1, got {n!r}")
        parts.append(f"{host}:{n}")
    return ",".join(parts)


def horovodrun_path(python: str | os.PathLike[str] | None = None) -> str:
    """The ``horovodrun`` next to ``python`` (default: this interpreter, the Horovod environment's
    in notebook 07), else the one on PATH."""
    candidate = Path(python or sys.executable).parent / "horovodrun"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    if found := shutil.which("horovodrun"):
        return found
    raise FileNotFoundError(
        f"horovodrun not found next to {python or sys.executable} nor on PATH: build the Horovod "
        "environment with `make horovod` and run notebook 07 with the kernel 'Python (horovod)'"
    )


def horovodrun_command(
    command: Sequence[str],
    *,
    np: int,
    hosts: Mapping[str, int] | None = None,
    horovodrun: str = "horovodrun",
    options: Sequence[str] = (),
) -> list[str]:
    """``horovodrun -np N -H hosts [options] command…`` as an argument list; ``hosts`` defaults to
    ``{"localhost": np}`` and must have at least ``np`` slots."""
    if not isinstance(np, int) or isinstance(np, bool) or np < 1:
        raise ValueError(f"np must be a whole number ≥ 1, got {np!r}")
    if not command:
        raise ValueError("give the command each rank runs, e.g. ['python', 'train.py']")
    hosts = {"localhost": np} if hosts is None else hosts
    host_value = hosts_arg(hosts)
    if sum(hosts.values()) < np:
        raise ValueError(f"-H {host_value} has {sum(hosts.values())} slot(s) but -np asks for {np} processes")
    return [horovodrun, "-np", str(np), "-H", host_value, *options, *command]


@dataclass
class RankLine:
    """One line a rank printed, as horovodrun relays it."""

    rank: int
    stream: str
    text: str


def parse_rank_lines(output: str) -> tuple[list[RankLine], list[str]]:
    """Split horovodrun's output into ``(rank_lines, the launcher's own lines)``."""
    ranked: list[RankLine] = []
    other: list[str] = []
    for line in output.splitlines():
        match = _RANK_LINE.match(line)
        if match:
            ranked.append(RankLine(int(match["rank"]), match["stream"], match["text"]))
        elif line.strip():
            other.append(line)
    return ranked, other


@dataclass
class HorovodRun:
    """What one ``horovodrun`` call did: command, exit code, output, time, cleanup."""

    command: list[str]
    returncode: int
    output: str
    seconds: float
    timed_out: bool = False
    run_id: str = ""
    survivors: list[str] = field(default_factory=list)  # command lines of what was left and killed
    lines: list[RankLine] = field(default_factory=list)
    launcher_lines: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def ranks(self) -> list[int]:
        """The ranks that printed something, sorted."""
        return sorted({line.rank for line in self.lines})

    def rank_output(self, rank: int, stream: str | None = "stdout") -> list[str]:
        """The lines one rank printed (``stream=None``: stdout and stderr together)."""
        return [x.text for x in self.lines if x.rank == rank and (stream is None or x.stream == stream)]

    def tail(self, lines: int = 20) -> str:
        """The last lines the ranks wrote to stderr, then the launcher's, for error messages."""
        errors = [f"[{x.rank}] {x.text}" for x in self.lines if x.stream == "stderr" and x.text.strip()]
        return "\n".join(errors[-lines:] + ["(horovodrun)"] + self.launcher_lines[-5:])

    def check(self) -> HorovodRun:
        """Raise ``RuntimeError`` with the output's tail unless the run succeeded."""
        if self.timed_out:
            raise RuntimeError(f"horovodrun timed out after {self.seconds:.0f} s:\n{self.tail()}")
        if self.returncode != 0:
            raise RuntimeError(f"horovodrun exited with {self.returncode}:\n{self.tail()}")
        return self


def _marked(run_id: str) -> list[psutil.Process]:
    """The processes whose environment has ``COURSE_HOROVOD_RUN=run_id``."""
    return [proc for proc in psutil.process_iter(["environ"])  # environ is None where we may not read it
            if proc.pid != os.getpid() and (proc.info["environ"] or {}).get(MARKER_VAR) == run_id]


def _end_run(run_id: str, settle_seconds: float) -> list[str]:
    """Give a run's processes ``settle_seconds`` to exit, then SIGTERM, SIGKILL those left;
    return their command lines."""
    deadline = time.monotonic() + settle_seconds
    while (left := _marked(run_id)) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = []
    for proc in left:
        with contextlib.suppress(psutil.Error):
            survivors.append(" ".join(proc.cmdline()) or f"pid {proc.pid}")
    for kill in (psutil.Process.terminate, psutil.Process.kill):
        for proc in left:
            with contextlib.suppress(psutil.Error):
                kill(proc)
        deadline = time.monotonic() + 2.0
        while (left := _marked(run_id)) and time.monotonic() < deadline:
            time.sleep(0.05)
    return survivors


def run_horovod(
    command: Sequence[str],
    *,
    np: int = 2,
    timeout: float = 300.0,
    env: Mapping[str, str] | None = None,
    horovodrun: str | None = None,
    options: Sequence[str] = (),
    echo: Callable[[str], None] | None = None,
    settle_seconds: float = 3.0,
) -> HorovodRun:
    """Run ``horovodrun -np N -H localhost:N [options] command`` and return its output per rank;
    ``echo`` (e.g. ``print``) gets each line as it arrives. The launcher is stopped after ``timeout``
    seconds or on Ctrl-C; then what still carries the run's marker gets ``settle_seconds`` (none
    after a timeout) to exit and is killed, listed in ``survivors``."""
    argv = horovodrun_command(command, np=np, horovodrun=horovodrun or horovodrun_path(), options=options)
    run_id = uuid.uuid4().hex
    survivors: list[str] = []

    def end_run(timed_out: bool) -> None:
        survivors.extend(_end_run(run_id, 0.0 if timed_out else settle_seconds))

    done = run_streaming(argv, env={**(env or {}), MARKER_VAR: run_id}, timeout=timeout,
                         on_line=echo, on_exit=end_run)
    lines, other = parse_rank_lines(done.stdout)
    return HorovodRun(argv, done.returncode, done.stdout, done.seconds, done.timed_out, run_id, survivors,
                      lines, other)


def enqueued_tensors(lines: Sequence[RankLine]) -> dict[int, list[str]]:
    """``{rank: [tensor name, …]}``: the collectives each rank submitted, in order, from Horovod's
    ``HOROVOD_LOG_LEVEL=trace`` log (``[r]: Enqueued <name>; ``). Notebook 07, "a rank that stalls"."""
    found: dict[int, list[str]] = {}
    for line in lines:
        match = _ENQUEUED.search(line.text)
        if match:
            names = [n.strip() for n in match["names"].split(";") if n.strip()]
            found.setdefault(line.rank, []).extend(names)
    return found


_MISSING = re.compile(r"^(?P<rank>\d+)(?P<mark>!?): \[(?P<names>.*)\]$")
# Horovod's own log lines ("[2026-11-24 00:27:52.5: T /…/operations.cc:1539] …"): other threads
# of the coordinator may write them between the lines of one report.
_HOROVOD_LOG = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:.]+: [TDIWEF] ")


def stall_reports(lines: Sequence[RankLine]) -> list[dict[int, tuple[list[str], bool]]]:
    """The reports of Horovod's stall inspector, in order: one ``{rank: ([tensor, …], marked)}`` each.

    Rank 0 logs a warning ending in ``Missing ranks:``, then one line per rank the others wait
    for: ``1: [epoch_loss]``, or ``1!: [...]`` once it is past the shutdown time (marked).
    """
    reports: list[dict[int, tuple[list[str], bool]]] = []
    current: dict[int, tuple[list[str], bool]] | None = None
    reporter: tuple[int, str] = (-1, "")  # the rank and stream that hold the report (rank 0, stderr)
    for line in lines:
        if line.text.rstrip().endswith("Missing ranks:"):
            current, reporter = {}, (line.rank, line.stream)
            reports.append(current)
            continue
        if (line.rank, line.stream) != reporter or _HOROVOD_LOG.match(line.text):
            continue  # another rank's, stream's or thread's line
        match = _MISSING.match(line.text.strip()) if current is not None else None
        if current is not None and match:
            names = [n.strip() for n in match["names"].removesuffix(" ...").split(",")]  # " ..." after 6
            current[int(match["rank"])] = (names, match["mark"] == "!")
        else:
            current = None
    return reports


def parse_check_build(output: str) -> dict[str, bool]:
    """Read ``horovodrun --check-build``'s ``[X] name`` / ``[ ] name`` lines:
    ``{"TensorFlow": True, "MPI": False, "Gloo": True, …}``."""
    found: dict[str, bool] = {}
    for line in output.splitlines():
        match = _CHECK_LINE.match(line)
        if match:
            found[match["name"]] = match["mark"] == "X"
    if not found:
        raise ValueError("no '[X] name' / '[ ] name' lines found: is this horovodrun --check-build output?")
    return found
