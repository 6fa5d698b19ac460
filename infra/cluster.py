"""Local clusters: worker processes with their own ``TF_CONFIG`` and devices, and an
in-process parameter-server cluster.

Introduced in notebook 02 (Strategy APIs); used by notebooks 04, 05 and 06 and their worker
programs in ``scripts/workers/``. ``TF_CONFIG`` text itself is :mod:`utils.tfconfig`; child
processes are started and stopped by :mod:`infra.process`; devices are assigned by
:func:`utils.devices.plan_workers`. TensorFlow is imported only inside
:func:`start_in_process_ps_cluster`, so this module also works in the Horovod environment
(TensorFlow 2.12) and in tests without TensorFlow.

Local multi-worker runs (one OS process per task)::

    from infra.cluster import LocalCluster, run_workers

    result = run_workers("scripts/workers/my_worker.py", num_workers=2, args=["--steps", "5"],
                         timeout=180, stream=True, env={"TF_USE_LEGACY_KERAS": "1"})
    print(result.chief.log)          # worker 0's stdout+stderr (the chief of MWMS)
    result.reports                   # [{...}, {...}]: what each worker passed to report()

    with LocalCluster("scripts/workers/my_worker.py", num_workers=2) as cluster:  # step by step
        print(cluster.tf_configs)    # {("worker", 0): "{...}", ...}
        print(cluster.devices)       # {"worker:0": WorkerDevices(...), ...}
        result = cluster.wait(timeout=180)

- ``target`` is a ``.py`` program; it gets ``args`` as its command line (``str`` of each).
- ``tasks={"chief": 1, "worker": 2, "ps": 1}`` instead of ``num_workers`` for other shapes.
- Each task gets ``TF_CONFIG`` (free localhost ports), the project on ``PYTHONPATH``,
  ``PYTHONUNBUFFERED=1``, ``TF_CPP_MIN_LOG_LEVEL=2``, ``COURSE_TASK`` (``"worker:0"``) and
  **its devices** (:func:`utils.devices.plan_workers`: one GPU each when there are enough,
  otherwise a shared GPU under a memory cap with the RING collective, otherwise CPU only):
  ``CUDA_VISIBLE_DEVICES``, ``TF_FORCE_GPU_ALLOW_GROWTH=true`` and ``COURSE_WORKER_DEVICES``,
  which the worker applies with :func:`infra.devices.configure_worker` before TensorFlow
  starts. ``env`` adds variables for all tasks, ``task_env={"worker:1": {...}}`` for one
  (both win over the plan). stdout and stderr go to one log per task; ``stream=True``
  prints new lines as ``[worker 0] ...`` while waiting (TensorFlow's C++ log lines left
  out); ``TaskResult.output`` is the log without that noise.
- ``wait`` returns a :class:`ClusterResult` when every task exits with code 0. It raises
  :class:`WorkerFailedError` (task, exit code, last log lines) as soon as one task fails --
  the others would wait forever in their collectives -- and :class:`ClusterTimeoutError`
  after ``timeout`` seconds. Whatever happens (success, crash, timeout, KeyboardInterrupt,
  leaving the ``with`` block) every task's whole process group is stopped, its ports are
  released and the temporary directory is deleted; tasks also get SIGTERM if the launching
  process itself is killed (:func:`infra.process.start_child`).
- ``network=net`` (a :mod:`infra.netns` network whose hosts are named like the tasks,
  ``"worker:0"``, ...) runs each task on its own host: ``TF_CONFIG`` lists the hosts'
  addresses, all on port 2222 as on real machines, and each task starts with
  ``ip netns exec <its host>``. A loopback fallback network changes nothing. Notebook 10.
- A worker reports results with ``RESULT {json}`` lines (``print("RESULT", json.dumps(...))``
  or :func:`infra.process.report`), collected into ``result.reports``.

In-process parameter-server cluster (workers and PS as ``tf.distribute.Server`` objects in
the notebook's own process, the coordinator being the notebook)::

    resolver = start_in_process_ps_cluster(num_workers=2, num_ps=1)
    strategy = tf.distribute.ParameterServerStrategy(resolver)

The workers get ``max(2, num_workers + 1)`` inter-op threads: with one, ``ClusterCoordinator``
steps hang. TensorFlow cannot stop an in-process gRPC server, so these ports stay in use
until the kernel exits; :func:`in_process_servers` lists them.
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
from typing import Any, Union

from infra.devices import detect_gpus
from infra.process import RESULT_PREFIX, child_env, read_results, start_child, stop_children
from infra.watchdog import Lifetime
from utils.config import PROJECT_ROOT
from utils.devices import GpuInfo, WorkerDevices, plan_workers
from utils.tfconfig import TASK_TYPES, make_tf_config, parse_task

# TensorFlow's C++ log lines (I0000 00:00:... file.cc:12] ...) and absl's start-up notice.
_NOISE_RE = re.compile(r"^([IWEF]\d{4} \d\d:\d\d:|WARNING: All log messages before absl)")

Target = Union[str, "os.PathLike[str]"]


# --------------------------------------------------------------------------------------------
# Ports
# --------------------------------------------------------------------------------------------
def free_ports(n: int, host: str = "localhost") -> list[int]:
    """Return ``n`` distinct TCP ports that are free on ``host`` right now.

    All ``n`` sockets are bound at the same time so the ports differ; they are closed before
    returning, so a task can bind them. Used by :class:`LocalCluster` and
    :func:`start_in_process_ps_cluster` (notebooks 02, 04–06).
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    sockets: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def port_is_free(port: int, host: str = "localhost") -> bool:
    """True when a new server could listen on ``host:port`` now (as gRPC does, SO_REUSEADDR).

    Used by the tests and by notebook 02 to show that a finished cluster released its ports.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            s.listen(1)
        except OSError:
            return False
    return True


# --------------------------------------------------------------------------------------------
# Launcher
# --------------------------------------------------------------------------------------------
class WorkerFailedError(RuntimeError):
    """A task of a :class:`LocalCluster` exited with a non-zero code (or was killed)."""

    def __init__(self, task: str, returncode: int, tail: str, logs: dict[str, str]):
        self.task, self.returncode, self.tail, self.logs = task, returncode, tail, logs
        how = f"was killed by signal {-returncode}" if returncode < 0 else f"exited with code {returncode}"
        super().__init__(
            f"{task} {how}; the other tasks were stopped. Last lines of its log:\n"
            + textwrap.indent(tail or "(empty log)", "    ")
        )


class ClusterTimeoutError(TimeoutError):
    """A :class:`LocalCluster` did not finish within its timeout; all tasks were stopped."""

    def __init__(self, timeout: float, running: list[str], tails: dict[str, str], logs: dict[str, str]):
        self.timeout, self.running, self.tails, self.logs = timeout, running, tails, logs
        parts = [
            f"{task}:\n" + textwrap.indent(tail or "(empty log)", "    ") for task, tail in tails.items()
        ]
        super().__init__(
            f"cluster still running after {timeout:g} s (unfinished: {', '.join(running)}); "
            "all tasks were stopped. Last log lines:\n" + "\n".join(parts)
        )


@dataclass
class TaskResult:
    """One finished task of a :class:`LocalCluster` run."""

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
        """The log without TensorFlow's C++/absl chatter and report lines: what the task printed."""
        return "\n".join(
            line
            for line in self.log.splitlines()
            if not _NOISE_RE.match(line) and not line.startswith(RESULT_PREFIX)
        )


@dataclass
class ClusterResult:
    """What :meth:`LocalCluster.wait` returns: every task's exit code, log and reports."""

    tasks: list[TaskResult]
    elapsed: float
    cluster: dict[str, list[str]]

    @property
    def chief(self) -> TaskResult:
        """The chief task if there is one, else worker 0 (the chief of MWMS)."""
        for t in self.tasks:
            if t.task_type == "chief":
                return t
        return self["worker:0"]

    @property
    def workers(self) -> list[TaskResult]:
        """The tasks of type ``worker`` in index order."""
        return [t for t in self.tasks if t.task_type == "worker"]

    @property
    def reports(self) -> list[dict[str, Any]]:
        """The last :func:`report` of each task (``{}`` if it reported nothing), task order."""
        return [t.reports[-1] if t.reports else {} for t in self.tasks]

    def __getitem__(self, name: str) -> TaskResult:
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(name)


def _target_command(target: Target, args: Sequence[Any]) -> list[str]:
    """The argv (after the interpreter) that runs the program ``target`` with ``args``."""
    path = Path(target)
    if not path.is_absolute():  # relative to this process's working directory, else the project
        path = path.resolve() if path.exists() else PROJECT_ROOT / path
    if not path.exists():
        raise FileNotFoundError(f"worker script {target} not found")
    return [str(path), *map(str, args)]


def _tail(text: str, lines: int) -> str:
    """The last ``lines`` lines of a log, leaving out TensorFlow's C++ log chatter."""
    kept = [line for line in text.rstrip("\n").splitlines() if not _NOISE_RE.match(line)]
    return "\n".join(kept[-lines:])


class LocalCluster:
    """Run one process per task on localhost, each with its own ``TF_CONFIG`` (see module doc).

    Used in notebook 02 (MultiWorkerMirroredStrategy) and notebooks 04–06.
    """

    def __init__(
        self,
        target: Target,
        num_workers: int = 2,
        *,
        args: Sequence[Any] = (),
        tasks: Mapping[str, int] | None = None,
        env: Mapping[str, str] | None = None,
        task_env: Mapping[str, Mapping[str, str]] | None = None,
        timeout: float | None = 300.0,
        stream: bool = False,
        tail_lines: int = 20,
        python: str = sys.executable,
        host: str = "localhost",
        grace: float = 3.0,
        gpus: Sequence[GpuInfo] | None = None,
        network: Any = None,
    ):
        if tasks is None:
            tasks = {"worker": num_workers}
        tasks = {t: int(n) for t, n in tasks.items() if int(n) > 0}
        for t in tasks:
            parse_task((t, 0))
        if "worker" not in tasks and "chief" not in tasks:
            raise ValueError(f"tasks={tasks}: a cluster needs at least one worker or chief")
        self.target, self.args, self.task_counts = target, list(args), tasks
        self.env = dict(env or {})
        self.task_env = {name: dict(values) for name, values in (task_env or {}).items()}
        self.timeout, self.stream, self.tail_lines = timeout, stream, tail_lines
        self.python, self.host, self.grace = python, host, grace
        names = [(t, i) for t in TASK_TYPES if t in tasks for i in range(tasks[t])]
        # network=: each task on its own host of a infra.netns network, at that host's address
        self.network = network
        if network is not None:
            addresses = [network.task_address(f"{t}:{i}") for t, i in names]
            self.ports = [int(address.rsplit(":", 1)[1]) for address in addresses]
        else:
            self.ports = free_ports(len(names), host)
            addresses = [f"{host}:{port}" for port in self.ports]
        self.cluster: dict[str, list[str]] = {}
        for (t, _), address in zip(names, addresses, strict=True):
            self.cluster.setdefault(t, []).append(address)
        self.tf_configs: dict[tuple[str, int], str] = {
            task: make_tf_config(self.cluster, task) for task in names
        }
        unknown = set(self.task_env) - {f"{t}:{i}" for t, i in self.tf_configs}
        if unknown:
            raise ValueError(f"task_env names tasks that are not in the cluster: {sorted(unknown)}")
        # which GPU (if any) each task trains on: utils.devices.plan_workers, faked GPUs in tests
        self.devices: dict[str, WorkerDevices] = plan_workers(
            detect_gpus() if gpus is None else gpus, [f"{t}:{i}" for t, i in names]
        )
        self._procs: dict[tuple[str, int], subprocess.Popen[bytes]] = {}
        self._logs: dict[tuple[str, int], Path] = {}
        self._log_text: dict[tuple[str, int], str] = {}
        self._streamed: dict[tuple[str, int], int] = {}
        self._workdir: Path | None = None
        self._lifetime: Lifetime | None = None
        self._stopped = False

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def pids(self) -> list[int]:
        """Process ids of the tasks (their process groups are killed on stop)."""
        return [p.pid for p in self._procs.values()]

    def start(self) -> LocalCluster:
        """Start every task; if one cannot be started, stop the ones already running."""
        if self._procs:
            raise RuntimeError("this LocalCluster was already started; create a new one")
        self._workdir = Path(tempfile.mkdtemp(prefix="course-cluster-"))
        # stopped at exit; if this process is killed (a killed kernel), a guardian removes the
        # folder and the tasks
        self._lifetime = Lifetime(self.stop, "infra.cluster:_remove_after_owner", [str(self._workdir)])
        try:
            command = [self.python, *_target_command(self.target, self.args)]
            # a killed task cannot run its atexit clean-up (TensorFlow's autograph files, the
            # workers' own temporary folders): they go in the folder that stop() removes
            (self._workdir / "tmp").mkdir()
            base_env = child_env({"TMPDIR": str(self._workdir / "tmp"), **self.env})
            visible = _launcher_visible_gpus()
            for task, tf_config in self.tf_configs.items():
                log_path = self._workdir / f"{task[0]}-{task[1]}.log"
                name = f"{task[0]}:{task[1]}"
                env = {**base_env, **self.devices[name].env(visible), **self.env}
                env.update(TF_CONFIG=tf_config, COURSE_TASK=name, **self.task_env.get(name, {}))
                argv = command
                if self.network is not None:  # run inside the task's host: `ip netns exec <host> ...`
                    env.update(self.network.task_env())
                    argv = self.network.command(name, command)
                with open(log_path, "wb") as log:
                    self._procs[task] = start_child(
                        argv, env=env, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT, text=False
                    )
                self._logs[task] = log_path
                self._streamed[task] = 0
                with open(self._workdir / "pgids", "a") as pgids:  # each task leads its process group
                    pgids.write(f"{self._procs[task].pid}\n")
        except BaseException:
            self.stop()
            raise
        return self

    def _read_log(self, task: tuple[str, int]) -> str:
        path = self._logs.get(task)
        if path is not None and path.exists():
            self._log_text[task] = path.read_bytes().decode("utf-8", "replace")
        return self._log_text.get(task, "")

    def _stream_new_output(self) -> None:
        for task in self._procs:
            text = self._read_log(task)
            done = self._streamed[task]
            end = text.rfind("\n") + 1  # only whole lines
            if end > done:
                for line in text[done:end].splitlines():
                    if not line.startswith(RESULT_PREFIX) and not _NOISE_RE.match(line):
                        print(f"[{task[0]} {task[1]}] {line}", flush=True)
                self._streamed[task] = end

    def logs(self) -> dict[str, str]:
        """Everything each task has written so far, ``{"worker:0": text, ...}``."""
        return {f"{t}:{i}": self._read_log((t, i)) for (t, i) in self._procs}

    def _raise_if_failed_or_late(self, started: float, timeout: float | None,
                                 failures_expected: bool = False) -> dict[tuple[str, int], int | None]:
        """The tasks' exit codes so far; raise if one failed (unless expected) or ``timeout`` has passed."""
        codes = {task: p.poll() for task, p in self._procs.items()}
        failed = [(t, c) for t, c in codes.items() if c not in (None, 0)]
        if failed and not failures_expected:
            (task_type, index), code = failed[0]
            logs = self.logs()
            name = f"{task_type}:{index}"
            raise WorkerFailedError(name, code, _tail(logs[name], self.tail_lines), logs)
        if timeout is not None and time.monotonic() - started > timeout:
            logs = self.logs()
            running = [f"{t}:{i}" for (t, i), c in codes.items() if c is None]
            raise ClusterTimeoutError(timeout, running, {k: _tail(v, self.tail_lines) for k, v in logs.items()}, logs)
        return codes

    def wait_for_output(self, task: str, text: str, timeout: float = 300.0, *,
                        failures_expected: bool = False) -> float:
        """Return the seconds it took until ``task`` (e.g. ``"worker:0"``) had written ``text``;
        start the cluster if needed.

        Raises like :meth:`wait` (stopping the cluster) when a task fails or ``timeout`` passes
        first, and :class:`WorkerFailedError` when ``task`` ended without writing ``text``. Lets a
        notebook time a hang from the moment a worker reached a given line, not from a start-up
        whose length depends on the machine's load (notebook 09). After a fault made on purpose
        (a worker killed, a cable cut: notebooks 04 and 10), ``failures_expected=True`` waits for
        the survivor's line although tasks exit with errors, and also returns when ``task``
        itself has ended without the line (a crash is an answer too: :meth:`exit_code` and
        :meth:`logs` tell which); only the timeout raises then.
        """
        names = {f"{t}:{i}": (t, i) for t, n in self.task_counts.items() for i in range(n)}
        if task not in names:
            raise ValueError(f"no task {task!r} in this cluster; tasks: {sorted(names)}")
        if not self._procs:
            self.start()
        started = time.monotonic()
        try:
            while text not in self._read_log(names[task]):
                if self.stream:
                    self._stream_new_output()
                code = self._raise_if_failed_or_late(started, timeout, failures_expected)[names[task]]
                if code is not None and text not in self._read_log(names[task]):  # ended without it
                    if failures_expected:
                        break
                    logs = self.logs()
                    raise WorkerFailedError(task, code, _tail(logs[task], self.tail_lines), logs)
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return time.monotonic() - started

    def exit_code(self, task: str) -> int | None:
        """``task``'s exit code (negative: the signal that killed it), or None while it runs."""
        for (task_type, index), proc in self._procs.items():
            if f"{task_type}:{index}" == task:
                return proc.poll()
        raise ValueError(f"no started task {task!r} in this cluster")

    def wait(self, timeout: float | None = None) -> ClusterResult:
        """Wait for all tasks; return their results or raise (always stopping the cluster).

        Raises :class:`WorkerFailedError` when a task exits with a non-zero code and
        :class:`ClusterTimeoutError` after ``timeout`` (default: the constructor's) seconds.
        """
        if not self._procs:
            self.start()
        timeout = self.timeout if timeout is None else timeout
        start = time.monotonic()
        try:
            while True:
                if self.stream:
                    self._stream_new_output()
                codes = self._raise_if_failed_or_late(start, timeout)
                if all(c == 0 for c in codes.values()):
                    break
                time.sleep(0.05)
            if self.stream:
                self._stream_new_output()
            logs = self.logs()
            results = []
            for (t, i), p in self._procs.items():
                text = logs[f"{t}:{i}"]
                results.append(TaskResult(t, i, p.returncode, text, self.tf_configs[(t, i)], read_results(text)))
            return ClusterResult(results, time.monotonic() - start, self.cluster)
        finally:
            self.stop()

    def stop(self) -> None:
        """Terminate every task's process group (SIGTERM, then SIGKILL), delete temp files.

        Idempotent and safe to call from ``finally``/``atexit``; logs stay readable
        through :meth:`logs`.
        """
        stop_children(list(self._procs.values()), self.grace)
        if self._workdir is not None:
            for task in self._procs:
                self._read_log(task)
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        if self._lifetime is not None:
            self._lifetime.end()
            self._lifetime = None
        self._logs = {}
        self._stopped = True

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else ("running" if self._procs else "not started")
        return f"LocalCluster({self.cluster}, {state})"


def _launcher_visible_gpus() -> list[str] | None:
    """This process's ``CUDA_VISIBLE_DEVICES`` entries, so that a worker's GPU index is given
    in the numbering the machine uses (None when the variable is not set)."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    return [v.strip() for v in value.split(",")] if value else None


def run_workers(target: Target, num_workers: int = 2, **kwargs: Any) -> ClusterResult:
    """Start a :class:`LocalCluster`, wait for it and return its :class:`ClusterResult`.

    Keyword arguments are those of :class:`LocalCluster`. Used in notebooks 02, 04–06.
    """
    with LocalCluster(target, num_workers, **kwargs) as cluster:
        return cluster.wait()


# --------------------------------------------------------------------------------------------
# In-process parameter-server cluster
# --------------------------------------------------------------------------------------------
_IN_PROCESS_SERVERS: list[Any] = []
_IN_PROCESS_CLUSTERS: list[dict[str, list[str]]] = []


def _remove_after_owner(workdir: str) -> None:
    """What a :class:`LocalCluster`'s guardian does when its owner died without stopping it:
    kill the tasks' process groups (their ids are in ``workdir/pgids``), delete ``workdir``."""
    with contextlib.suppress(OSError):
        for pgid in Path(workdir, "pgids").read_text().split():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pgid), signal.SIGKILL)
    shutil.rmtree(workdir, ignore_errors=True)


def start_in_process_ps_cluster(
    num_workers: int = 2,
    num_ps: int = 1,
    *,
    worker_inter_op_threads: int | None = None,
    host: str = "localhost",
) -> Any:
    """Start workers and parameter servers as ``tf.distribute.Server`` s in this process.

    Returns a ``SimpleClusterResolver`` for ``tf.distribute.ParameterServerStrategy``; this
    process is the coordinator. Workers get ``max(2, num_workers + 1)`` inter-op threads
    unless ``worker_inter_op_threads`` says otherwise (with 1 the coordinator's steps hang).
    Sets ``GRPC_FAIL_FAST=use_caller`` as the TF guide recommends. The servers cannot be
    stopped (TensorFlow does not implement it) and live until the process exits.
    Used in notebooks 02 and 05.
    """
    if num_workers < 1 or num_ps < 1:
        raise ValueError("a parameter-server cluster needs at least one worker and one ps")
    import tensorflow as tf

    os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")
    threads = worker_inter_op_threads or max(2, num_workers + 1)
    if threads < 2:
        raise ValueError("workers need more than one inter-op thread (with one they hang)")
    ports = free_ports(num_workers + num_ps, host)
    cluster = {
        "worker": [f"{host}:{p}" for p in ports[:num_workers]],
        "ps": [f"{host}:{p}" for p in ports[num_workers:]],
    }
    spec = tf.train.ClusterSpec(cluster)
    worker_config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=threads)
    for i in range(num_workers):
        _IN_PROCESS_SERVERS.append(
            tf.distribute.Server(spec, job_name="worker", task_index=i, config=worker_config, protocol="grpc")
        )
    for i in range(num_ps):
        _IN_PROCESS_SERVERS.append(tf.distribute.Server(spec, job_name="ps", task_index=i, protocol="grpc"))
    _IN_PROCESS_CLUSTERS.append(cluster)
    return tf.distribute.cluster_resolver.SimpleClusterResolver(spec, rpc_layer="grpc")


def in_process_servers() -> list[dict[str, list[str]]]:
    """The clusters started by :func:`start_in_process_ps_cluster` in this process."""
    return [dict(c) for c in _IN_PROCESS_CLUSTERS]


