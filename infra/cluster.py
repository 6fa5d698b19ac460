"""Local clusters: one process per task, each with its own ``TF_CONFIG`` and devices, and an
in-process parameter-server cluster. Introduced in notebook 02; used by notebooks 04–06, 09–11.

    result = run_workers("scripts/workers/my_worker.py", num_workers=2, args=["--steps", 5],
                         timeout=180, stream=True)
    result.chief.output              # what worker 0 printed (TensorFlow's C++ log left out)
    result.reports                   # [{...}, {...}]: what each worker passed to report()

    with LocalCluster("scripts/workers/my_worker.py", num_workers=2) as cluster:
        cluster.wait_for_output("worker:1", "step 3")   # the seconds until that line
        result = cluster.wait(timeout=180)

- ``target`` is a program file (relative to the working directory, else to the project); it
  gets ``args`` as its command line. ``tasks={"chief": 1, "worker": 2, "ps": 1}`` for other shapes.
- Each task gets ``TF_CONFIG`` (free localhost ports), ``COURSE_TASK`` (``"worker:0"``), a
  ``TMPDIR`` of the cluster's and its devices (:func:`utils.devices.plan_workers`, applied by the
  worker with :func:`infra.devices.configure_worker`). ``env`` adds variables for every task,
  ``task_env={"worker:1": {...}}`` for one; ``stream=True`` prints new lines as ``[worker 0] ...``.
- ``network=net`` (an :mod:`infra.netns` network with hosts named like the tasks) runs each task
  on its own host, at that host's address (notebook 10).
- :meth:`LocalCluster.wait` raises :class:`WorkerFailedError` as soon as a task fails (the others
  would wait forever in their collectives) and :class:`ClusterTimeoutError` after ``timeout``.
  Whatever happens, every task's process group is stopped and the temporary folder deleted; a
  guardian does it when the launching process is killed.

TensorFlow is imported only by :func:`start_in_process_ps_cluster`, so this module also works in
the Horovod environment and in tests without TensorFlow.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.devices import detect_gpus
from infra.process import RESULT_PREFIX, child_env, read_results, start_child, stop_children
from infra.watchdog import Lifetime
from utils.config import PROJECT_ROOT
from utils.devices import GpuInfo, WorkerDevices, plan_workers
from utils.tfconfig import TASK_TYPES, make_tf_config, parse_task

# TensorFlow's C++ log lines (I0000 00:00:... file.cc:12] ...) and absl's start-up notice.
_NOISE_RE = re.compile(r"^([IWEF]\d{4} \d\d:\d\d:|WARNING: All log messages before absl)")


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on localhost now (bound all at once, then released)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in sockets:
            s.bind(("localhost", 0))
        return [s.getsockname()[1] for s in sockets]


def port_is_free(port: int) -> bool:
    """True when a new server could listen on ``localhost:port`` now (as gRPC does, SO_REUSEADDR).
    Notebook 09 checks a port with it before a launch."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("localhost", port))
            s.listen(1)
        except OSError:
            return False
    return True


def _printed(text: str) -> list[str]:
    """The lines a task printed: its log without TensorFlow's chatter and the RESULT lines."""
    return [line for line in text.splitlines()
            if not _NOISE_RE.match(line) and not line.startswith(RESULT_PREFIX)]


def _tail(text: str, lines: int) -> str:
    return "\n".join(_printed(text)[-lines:])


def _indent(tail: str) -> str:
    return textwrap.indent(tail or "(empty log)", "    ")


class WorkerFailedError(RuntimeError):
    """A task exited with a non-zero code or was killed: ``task``, ``returncode``, ``tail`` (the
    end of its log) and ``logs`` (every task's)."""

    def __init__(self, task: str, returncode: int, logs: dict[str, str], lines: int):
        self.task, self.returncode, self.logs = task, returncode, logs
        self.tail = _tail(logs[task], lines)
        how = f"was killed by signal {-returncode}" if returncode < 0 else f"exited with code {returncode}"
        super().__init__(f"{task} {how}; the other tasks were stopped. Last lines of its log:\n"
                         + _indent(self.tail))


class ClusterTimeoutError(TimeoutError):
    """A cluster ran longer than its timeout; all tasks were stopped. ``running``: the unfinished
    tasks, ``tails``: the end of each log, ``logs``: every log."""

    def __init__(self, timeout: float, running: list[str], logs: dict[str, str], lines: int):
        self.timeout, self.running, self.logs = timeout, running, logs
        self.tails = {task: _tail(text, lines) for task, text in logs.items()}
        parts = [f"{task}:\n{_indent(tail)}" for task, tail in self.tails.items()]
        super().__init__(f"cluster still running after {timeout:g} s (unfinished: {', '.join(running)}); "
                         "all tasks were stopped. Last log lines:\n" + "\n".join(parts))


@dataclass
class TaskResult:
    """One finished task: its exit code, whole log, ``TF_CONFIG`` and reports."""

    task_type: str
    index: int
    returncode: int
    log: str
    tf_config: str
    reports: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        """``"worker:0"``."""
        return f"{self.task_type}:{self.index}"

    @property
    def output(self) -> str:
        """What the task printed: the log without TensorFlow's chatter and the report lines."""
        return "\n".join(_printed(self.log))


@dataclass
class ClusterResult:
    """What :meth:`LocalCluster.wait` returns; ``result["worker:1"]`` is one task's result."""

    tasks: list[TaskResult]
    elapsed: float
    cluster: dict[str, list[str]]

    @property
    def chief(self) -> TaskResult:
        """The chief task if there is one, else worker 0 (the chief of MWMS)."""
        by_name = {t.name: t for t in self.tasks}
        return by_name.get("chief:0") or by_name["worker:0"]

    @property
    def workers(self) -> list[TaskResult]:
        """The tasks of type ``worker``, in index order."""
        return [t for t in self.tasks if t.task_type == "worker"]

    @property
    def reports(self) -> list[dict[str, Any]]:
        """The last report of each task (``{}`` if it reported nothing), in task order."""
        return [t.reports[-1] if t.reports else {} for t in self.tasks]

    def __getitem__(self, name: str) -> TaskResult:
        return {t.name: t for t in self.tasks}[name]


def _program(target: str | os.PathLike[str]) -> Path:
    """The program file ``target``: relative to the working directory if there, else to the project."""
    path = Path(target)
    if not path.is_absolute() and not path.exists():
        path = PROJECT_ROOT / path
    if not path.exists():
        raise FileNotFoundError(f"worker program {target} not found")
    return path.resolve()


class LocalCluster:
    """One process per task on this machine, each with its own ``TF_CONFIG`` (see the module doc).

    ``tf_configs``, ``devices`` and ``cluster`` are known before :meth:`start`; ``grace`` is how
    long a stopped task may take to exit before SIGKILL, ``tail_lines`` how much log an error shows.
    """

    def __init__(
        self,
        target: str | os.PathLike[str],
        num_workers: int = 2,
        *,
        args: Sequence[Any] = (),
        tasks: Mapping[str, int] | None = None,
        env: Mapping[str, str] | None = None,
        task_env: Mapping[str, Mapping[str, str]] | None = None,
        timeout: float | None = 300.0,
        stream: bool = False,
        tail_lines: int = 20,
        grace: float = 3.0,
        gpus: Sequence[GpuInfo] | None = None,
        network: Any = None,
    ):
        tasks = {t: int(n) for t, n in ({"worker": num_workers} if tasks is None else tasks).items()
                 if int(n) > 0}
        for t in tasks:
            parse_task((t, 0))
        if "worker" not in tasks and "chief" not in tasks:
            raise ValueError(f"tasks={tasks}: a cluster needs at least one worker or chief")
        names = [f"{t}:{i}" for t in TASK_TYPES if t in tasks for i in range(tasks[t])]
        unknown = set(task_env or {}) - set(names)
        if unknown:
            raise ValueError(f"task_env names tasks that are not in the cluster: {sorted(unknown)}")
        self.target, self.args = target, [str(a) for a in args]
        self.env = dict(env or {})
        self.task_env = {name: dict(values) for name, values in (task_env or {}).items()}
        self.timeout, self.stream, self.tail_lines, self.grace = timeout, stream, tail_lines, grace
        self.network = network
        if network is not None:  # each task on its own host, all on one port as on real machines
            addresses = [network.task_address(name) for name in names]
            self.ports = [int(address.rsplit(":", 1)[1]) for address in addresses]
        else:
            self.ports = free_ports(len(names))
            addresses = [f"localhost:{port}" for port in self.ports]
        self.cluster: dict[str, list[str]] = {}
        for name, address in zip(names, addresses, strict=True):
            self.cluster.setdefault(parse_task(name)[0], []).append(address)
        self.tf_configs = {name: make_tf_config(self.cluster, name) for name in names}
        self.devices: dict[str, WorkerDevices] = plan_workers(detect_gpus() if gpus is None else gpus, names)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: dict[str, str] = {}  # what each task wrote, kept when stop() deletes the files
        self._streamed = dict.fromkeys(names, 0)
        self._workdir: Path | None = None
        self._lifetime: Lifetime | None = None

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def pids(self) -> list[int]:
        """Process ids of the tasks; each leads its own process group."""
        return [p.pid for p in self._procs.values()]

    def start(self) -> LocalCluster:
        """Start every task; if one cannot be started, stop the ones already running."""
        if self._procs:
            raise RuntimeError("this LocalCluster was already started; create a new one")
        command = [sys.executable, str(_program(self.target)), *self.args]
        self._workdir = Path(tempfile.mkdtemp(prefix="course-cluster-"))
        # stop() at exit; if this process is killed, a guardian kills the tasks and deletes the folder
        self._lifetime = Lifetime(self.stop, "infra.cluster:_remove_after_owner", [str(self._workdir)])
        try:
            # a killed task cannot remove its temporary files (TensorFlow's too): they go in our folder
            (self._workdir / "tmp").mkdir()
            base_env = child_env({"TMPDIR": str(self._workdir / "tmp"), **self.env})
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")  # a GPU's number as this machine counts
            visible_ids = [v.strip() for v in visible.split(",")] if visible else None
            for name, tf_config in self.tf_configs.items():
                env = {**base_env, **self.devices[name].env(visible_ids), **self.env,
                       "TF_CONFIG": tf_config, "COURSE_TASK": name, **self.task_env.get(name, {})}
                argv = command
                if self.network is not None:  # `ip netns exec <host> ...`
                    env.update(self.network.task_env())
                    argv = self.network.command(name, command)
                with open(self._log_path(name), "wb") as log:
                    self._procs[name] = start_child(argv, env=env, cwd=PROJECT_ROOT, stdout=log,
                                                    stderr=subprocess.STDOUT, text=False)
                with open(self._workdir / "pgids", "a") as pgids:  # read by _remove_after_owner
                    pgids.write(f"{self._procs[name].pid}\n")
        except BaseException:
            self.stop()
            raise
        return self

    def _log_path(self, name: str) -> Path:
        return self._workdir / f"{name.replace(':', '-')}.log"  # worker-0.log: no colon in a file name

    def _read_log(self, name: str) -> str:
        if self._workdir is not None:
            with contextlib.suppress(FileNotFoundError):
                self._logs[name] = self._log_path(name).read_bytes().decode("utf-8", "replace")
        return self._logs.get(name, "")

    def logs(self) -> dict[str, str]:
        """Everything each task has written so far, ``{"worker:0": text, ...}``."""
        return {name: self._read_log(name) for name in self._procs}

    def _poll(self, started: float, timeout: float | None,
              failures_expected: bool = False) -> dict[str, int | None]:
        """The tasks' exit codes so far (streaming their new lines if asked); raise when one
        failed (unless expected) or ``timeout`` has passed."""
        codes = {name: p.poll() for name, p in self._procs.items()}
        if self.stream:
            self._print_new_lines()
        failed = [name for name, code in codes.items() if code not in (None, 0)]
        if failed and not failures_expected:
            raise WorkerFailedError(failed[0], codes[failed[0]], self.logs(), self.tail_lines)
        if timeout is not None and time.monotonic() - started > timeout:
            running = [name for name, code in codes.items() if code is None]
            raise ClusterTimeoutError(timeout, running, self.logs(), self.tail_lines)
        return codes

    def _print_new_lines(self) -> None:
        for name in self._procs:
            text = self._read_log(name)
            end = text.rfind("\n") + 1  # whole lines only
            for line in _printed(text[self._streamed[name]:end]):
                print(f"[{name.replace(':', ' ')}] {line}", flush=True)
            self._streamed[name] = end

    def wait_for_output(self, task: str, text: str, timeout: float = 300.0, *,
                        failures_expected: bool = False) -> float:
        """The seconds until ``task`` (``"worker:0"``) has written ``text``; starts the cluster if needed.

        Raises like :meth:`wait` (stopping the cluster) when a task fails or ``timeout`` passes
        first, and :class:`WorkerFailedError` when ``task`` ends without writing ``text``. After a
        fault made on purpose (notebooks 04 and 10), ``failures_expected=True`` ignores failed
        tasks and also returns when ``task`` has ended without the line; only the timeout raises.
        """
        if task not in self.tf_configs:
            raise ValueError(f"no task {task!r} in this cluster; tasks: {sorted(self.tf_configs)}")
        if not self._procs:
            self.start()
        started = time.monotonic()
        try:
            while text not in self._read_log(task):
                code = self._poll(started, timeout, failures_expected)[task]
                if code is not None and text not in self._read_log(task):  # it ended without the line
                    if failures_expected:
                        break
                    raise WorkerFailedError(task, code, self.logs(), self.tail_lines)
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return time.monotonic() - started

    def exit_code(self, task: str) -> int | None:
        """``task``'s exit code (negative: the signal that killed it), or None while it runs."""
        if task not in self._procs:
            raise ValueError(f"no started task {task!r} in this cluster")
        return self._procs[task].poll()

    def wait(self, timeout: float | None = None) -> ClusterResult:
        """Wait for every task (``timeout``: the constructor's unless given) and return their
        results, or raise; the cluster is stopped either way."""
        if not self._procs:
            self.start()
        timeout = self.timeout if timeout is None else timeout
        started = time.monotonic()
        try:
            while not all(code == 0 for code in self._poll(started, timeout).values()):
                time.sleep(0.05)
            results = []
            for name, text in self.logs().items():
                task_type, index = parse_task(name)
                results.append(TaskResult(task_type, index, self._procs[name].returncode, text,
                                          self.tf_configs[name], read_results(text)))
            return ClusterResult(results, time.monotonic() - started, self.cluster)
        finally:
            self.stop()

    def stop(self) -> None:
        """Stop every task's process group (SIGTERM, then SIGKILL after ``grace`` seconds) and
        delete the temporary folder; idempotent. :meth:`logs` stays readable."""
        stop_children(list(self._procs.values()), self.grace)
        if self._workdir is not None:
            self.logs()
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        if self._lifetime is not None:
            self._lifetime.end()
            self._lifetime = None


def run_workers(target: str | os.PathLike[str], num_workers: int = 2, **kwargs: Any) -> ClusterResult:
    """Start a :class:`LocalCluster` (``kwargs`` are its own), wait for it, return its result."""
    with LocalCluster(target, num_workers, **kwargs) as cluster:
        return cluster.wait()


def _remove_after_owner(workdir: str) -> None:
    """A :class:`LocalCluster`'s guardian, when its owner died without stopping it: kill the
    tasks' process groups (listed in ``workdir/pgids``) and delete ``workdir``."""
    with contextlib.suppress(OSError):
        for pgid in Path(workdir, "pgids").read_text().split():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pgid), signal.SIGKILL)
    shutil.rmtree(workdir, ignore_errors=True)


_IN_PROCESS_SERVERS: list[Any] = []  # TensorFlow cannot stop them: they serve until the process exits


def start_in_process_ps_cluster(num_workers: int = 2, num_ps: int = 1) -> Any:
    """Start workers and parameter servers as ``tf.distribute.Server`` objects in this process
    (the coordinator); returns a ``SimpleClusterResolver`` for ``ParameterServerStrategy``.

    Workers get ``num_workers + 1`` (at least 2) inter-op threads: with one, the coordinator's
    steps hang. The servers hold their ports until the process exits. Notebook 09.
    """
    if num_workers < 1 or num_ps < 1:
        raise ValueError("a parameter-server cluster needs at least one worker and one ps")
    import tensorflow as tf

    os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")  # as the TF guide recommends
    addresses = [f"localhost:{port}" for port in free_ports(num_workers + num_ps)]
    spec = tf.train.ClusterSpec({"worker": addresses[:num_workers], "ps": addresses[num_workers:]})
    threads = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=max(2, num_workers + 1))
    for i in range(num_workers):
        _IN_PROCESS_SERVERS.append(
            tf.distribute.Server(spec, job_name="worker", task_index=i, config=threads, protocol="grpc"))
    for i in range(num_ps):
        _IN_PROCESS_SERVERS.append(tf.distribute.Server(spec, job_name="ps", task_index=i, protocol="grpc"))
    return tf.distribute.cluster_resolver.SimpleClusterResolver(spec, rpc_layer="grpc")
