"""A real Slurm cluster on this machine for notebook 11: a private ``munged``, ``slurmctld`` and
one ``slurmd`` per node, every file of it in one temporary folder (the commands find it through
``SLURM_CONF``). The host's ``/etc/slurm``, ``/etc/munge`` and daemons are never read or touched.

    with SlurmCluster(nodes=2) as cluster:         # returns when sinfo shows every node idle
        cluster.run(["srun", "-N", "2", "hostname"]).stdout
        cluster.address("node2")                    # '10.213.0.3' (or '127.0.0.1')

- Where network namespaces work (:func:`infra.netns.network_problem`), every node is a host of an
  :class:`infra.netns.VirtualNetwork` (links shaped by ``rate`` and ``delay``) and ``slurmctld``
  runs on a ``login`` host, where :meth:`SlurmCluster.run` runs the commands too. Elsewhere, or
  with ``network=False``, every node is on 127.0.0.1 with a port of its own.
- No accounting database: ``sacct -c`` reads what ``jobcomp/filetxt`` recorded.
- Leaving the ``with`` block, an error or Ctrl-C stops the daemons, kills every process of the
  cluster (``slurmstepd``, job steps, clients pointed at it) and deletes the folder and the
  namespaces; a guardian (:class:`infra.watchdog.Lifetime`) does it when the creator is killed,
  and :func:`reap_orphans` (run by every new cluster) when the guardian died too.
- :func:`slurm_problem` says in one line what is missing here and how to install it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from infra import netns
from infra.cluster import free_ports
from infra.netns import VirtualNetwork
from infra.process import ProcessResult, kill_until_gone, run_command, start_child, stop_children
from infra.process import find_command as _tool
from infra.watchdog import Lifetime, orphans, owner_tag

MAX_NODES = 4  # each node runs TensorFlow tasks in notebook 11, all on this machine
LABEL = "loopback: every node on 127.0.0.1 with its own port"
NETNS_LABEL = "virtual network: every node its own namespace and address (links shaped with tc)"
LOGIN = "login"  # the host of slurmctld and of the commands, a namespace of its own too
PREFIX = "course-slurm-"
COMMANDS = ("munged", "munge", "slurmctld", "slurmd", "slurmstepd", "srun", "sbatch", "sinfo", "squeue",
            "scontrol", "sacct")
INSTALL_HINT = "apt-get install slurm-wlm munge (as root; or: make slurm)"
ENV_MARK = "COURSE_SLURM_DIR"  # in every daemon's environment, inherited by slurmstepd
NODE_MARK = "COURSE_SLURM_NODE"  # ``<folder>/<node>`` in a slurmd's environment: its node's processes

_DIR_RE = re.compile(rf"^{PREFIX}(\d+)-(\d+)-")


class SlurmStartError(RuntimeError):
    """The cluster did not come up; the message has the failing daemon's last log lines."""


def slurm_problem() -> str | None:
    """``None`` when a local Slurm cluster can start here, else one line: what is missing and how
    to install it. ``COURSE_NO_SLURM=1`` forces an answer. Notebook 11's setup prints it."""
    if os.environ.get("COURSE_NO_SLURM", "") not in ("", "0"):
        return "COURSE_NO_SLURM is set, so no Slurm cluster is started"
    if sys.platform != "linux":
        return f"a local Slurm cluster needs Linux; this is {sys.platform}"
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        return "Colab cannot run Slurm's daemons (they need root and a machine of their own)"
    if os.geteuid() != 0:
        return "a local Slurm cluster needs root (slurmd starts jobs as their user); run as root, e.g. in CI"
    missing = [name for name in COMMANDS if _tool(name) is None]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} missing): {INSTALL_HINT}"
    return None


def node_names(nodes: int | Sequence[str]) -> list[str]:
    """``["node1", "node2", ...]`` for a number of nodes; a list of names is checked and kept in
    its order, which is Slurm's order of the nodes (notebook 11 names ``node8``, ``node9``, ``node10``)."""
    if isinstance(nodes, (list, tuple)):
        names = [str(n) for n in nodes]
        if (not 1 <= len(names) <= MAX_NODES or len(set(names)) != len(names)
                or not all(re.fullmatch(r"[a-z][a-z0-9]*", n) for n in names)):
            raise ValueError(f"node names must be 1 to {MAX_NODES} distinct lower-case words, got {names}")
        return names
    if not isinstance(nodes, int) or isinstance(nodes, bool) or not 1 <= nodes <= MAX_NODES:
        raise ValueError(f"nodes must be a whole number from 1 to {MAX_NODES}, got {nodes!r}")
    return [f"node{i}" for i in range(1, nodes + 1)]


def slurm_conf(root: Path, hostname: str, controller: tuple[str, int],
               nodes: Mapping[str, tuple[str, int]], cpus: int) -> str:
    """The text of ``slurm.conf`` for a cluster whose files all live under ``root``: the controller
    listens on ``controller`` (address, port), node ``name`` on ``nodes[name]``.

    ``hostname`` is this machine's short name: ``slurmctld`` and every ``slurmd -N node`` refuse
    to start on a host the file does not name. ``config_overrides`` lets several nodes each offer
    ``cpus`` of the same CPUs.
    """
    lines = [
        "# Written by infra/slurm.py for notebook 11: a private cluster, removed after use.",
        "ClusterName=course",
        f"SlurmctldHost={hostname}({controller[0]})",
        f"SlurmctldPort={controller[1]}",
        f"SlurmdPort={next(iter(nodes.values()))[1]}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root / 'munge' / 'munge.socket'}",  # our munged, never /run/munge
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool' / '%n'}",
        f"SlurmctldPidFile={root / 'run' / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'run' / 'slurmd.%n.pid'}",
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'log' / 'slurmd.%n.log'}",
        f"PlugStackConfig={root / 'plugstack.conf'}",  # empty: no SPANK plugins from /etc/slurm
        f"JobCompLoc={root / 'log' / 'jobcomp.txt'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SlurmdParameters=config_overrides",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/filetxt",  # read by sacct -c: no slurmdbd here
        "ReturnToService=2",  # a node whose slurmd comes back is usable again
        "SlurmdTimeout=10",  # a killed slurmd marks its node DOWN within seconds (notebook 11)
        "KillWait=5",
        "MinJobAge=300",
        "MailProg=/bin/true",
        *(f"NodeName={name} NodeAddr={address} NodeHostname={hostname} Port={port} CPUs={cpus} State=UNKNOWN"
          for name, (address, port) in nodes.items()),
        "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
    ]
    return "\n".join(lines) + "\n"


def _me() -> set[int]:
    """This process and its ancestors: never killed as a cluster's."""
    me = psutil.Process()
    return {me.pid, *(p.pid for p in me.parents())}


def _marked(mark: str) -> set[int]:
    """Processes whose command line or environment contains ``mark``, and their descendants."""
    found: set[int] = set()
    for proc in psutil.process_iter(["cmdline", "environ"]):
        env = "".join(f"{k}={v} " for k, v in (proc.info["environ"] or {}).items())
        if mark in " ".join(proc.info["cmdline"] or []) + " " + env:
            found.add(proc.pid)
            with contextlib.suppress(psutil.Error):  # a job step's processes do not carry the mark
                found |= {child.pid for child in proc.children(recursive=True)}
    return found - _me()


def _stepds(path: Path) -> set[int]:
    """The ``slurmstepd`` with a file open under ``path``: each overwrites its command line and
    environment with its title (``slurmstepd: [1.0]``), but keeps its node's log open."""
    prefix = str(path.resolve())
    found = set()
    for proc in psutil.process_iter(["name"]):
        if (proc.info["name"] or "").startswith("slurmstepd"):
            with contextlib.suppress(OSError):
                fds = Path(f"/proc/{proc.pid}/fd")
                if any(os.readlink(fds / fd).startswith(prefix) for fd in os.listdir(fds)):
                    found.add(proc.pid)
    return found


def cluster_processes(root: str | os.PathLike[str], spare: Iterable[int] = ()) -> list[int]:
    """Pids of every process of the cluster in ``root``: what names the folder (the daemons,
    clients with its ``SLURM_CONF``), its ``slurmstepd`` and their descendants, but ``spare``."""
    return sorted((_marked(str(root)) | _stepds(Path(root))) - set(spare))


def remove_cluster(root: str | os.PathLike[str], spare: Iterable[int] = ()) -> None:
    """Kill every process of the cluster in ``root``, then delete the folder; idempotent. Run by
    :meth:`SlurmCluster.stop`, its guardian and :func:`reap_orphans`."""
    spare = set(spare)
    kill_until_gone(lambda: cluster_processes(root, spare), tries=100)
    shutil.rmtree(root, ignore_errors=True)


def leftovers(owner: int | None = None) -> list[Path]:
    """The course's cluster folders that exist now, only those of process ``owner`` if given."""
    tmp = Path(tempfile.gettempdir())
    found = sorted(p for p in tmp.glob(f"{PREFIX}*") if _DIR_RE.match(p.name) and p.is_dir())
    return found if owner is None else [p for p in found if p.name.startswith(f"{PREFIX}{owner}-")]


def reap_orphans() -> list[Path]:
    """Remove the clusters of dead owners (live owners' are left alone); returns their folders."""
    folders = {path.name: path for path in leftovers()}
    dead = [folders[name] for name in orphans(folders, _DIR_RE)]
    for path in dead:
        remove_cluster(path)
    return dead


def _alive(pid: int) -> bool:
    """Running: neither gone nor a zombie (dead, only not reaped yet)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class SlurmCluster:
    """``munged``, ``slurmctld`` and a ``slurmd`` per node with private files (see the module doc).

    ``nodes``: how many (``node1`` …) or their names; ``cpus``: what each node offers to jobs
    (they share this machine's CPUs). ``network=None`` puts the nodes in namespaces where they
    work, ``True`` insists, ``False`` keeps them on loopback. Start it with ``with SlurmCluster(2)
    as cluster:`` or :meth:`start` and :meth:`stop`. Notebook 11 and ``make slurm``.
    """

    def __init__(self, nodes: int | Sequence[str] = 2, *, cpus: int = 2, start_timeout: float = 60.0,
                 network: bool | None = None, rate: str | float | None = None,
                 delay: str | float | None = None) -> None:
        self.nodes = node_names(nodes)
        if cpus < 1:
            raise ValueError(f"cpus must be >= 1, got {cpus}")
        self.cpus, self.start_timeout = cpus, start_timeout
        self.network, self._link = network, {"rate": rate, "delay": delay}
        self.net: VirtualNetwork | None = None
        self.root: Path | None = None
        self.hostname = socket.gethostname().split(".")[0]
        self.start_seconds: float | None = None
        self._daemons: dict[str, subprocess.Popen[Any]] = {}
        self._lifetime: Lifetime | None = None

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def env(self) -> dict[str, str]:
        """What a command needs to talk to this cluster: ``{"SLURM_CONF": ...}``."""
        return {"SLURM_CONF": str(self._require_root() / "slurm.conf")}

    @property
    def label(self) -> str:
        """How the nodes are connected: :data:`LABEL` or :data:`NETNS_LABEL`."""
        return NETNS_LABEL if self.net is not None else LABEL

    def address(self, node: str) -> str:
        """The node's ``NodeAddr``; ``"login"`` is the controller's host."""
        if node not in self.nodes and not (node == LOGIN and self.net is not None):
            raise KeyError(f"no node {node!r}; the nodes are {self.nodes}")
        return self.net.address(node) if self.net is not None else "127.0.0.1"

    def command(self, argv: Sequence[str], host: str = LOGIN) -> list[str]:
        """``argv`` prefixed to run on ``host``; unchanged on loopback. ``nsenter --net``, as
        ``ip netns exec`` mounts a ``/sys`` without ``/sys/fs/cgroup`` and slurmd will not start."""
        if self.net is None:
            return list(argv)
        self.address(host)
        return [_tool("nsenter") or "nsenter", f"--net=/run/netns/{self.net.namespace(host)}", *argv]

    def start(self) -> SlurmCluster:
        """Write the files and start the daemons; on any error remove everything again."""
        if self.root is not None:
            raise RuntimeError("this cluster is already running")
        problem = slurm_problem()
        if problem:
            raise SlurmStartError(problem)
        reap_orphans()
        started = time.perf_counter()
        self.root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{owner_tag()}-"))
        # first: covers a SIGKILL during the start too
        self._lifetime = Lifetime(self.stop, "infra.slurm:remove_cluster", [str(self.root)])
        try:
            self._make_network()
            self._write_files()
            self._start_daemons()
            self.wait_idle(self.start_timeout)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.perf_counter() - started
        return self

    def stop(self) -> None:
        """Stop the daemons, kill whatever else belongs to the cluster, delete its folder and
        namespaces (idempotent)."""
        if self.root is None:
            return
        # nodes, then the controller, munge last: slurmctld would wait seconds for a gone socket
        slurmds = [p for name, p in self._daemons.items() if name.startswith("slurmd.")]
        for group in (slurmds, [self._daemons.get("slurmctld")], [self._daemons.get("munged")]):
            stop_children([p for p in group if p is not None], grace_seconds=1.0)
        guardian = self._lifetime.guardian_pid if self._lifetime is not None else None
        remove_cluster(self.root, [guardian] if guardian else [])  # the guardian names the folder too
        if self._lifetime is not None:
            self._lifetime.end()
            self._lifetime = None
        self._daemons.clear()
        if self.net is not None:
            self.net.destroy()
            self.net = None
        self.root = None

    def _require_root(self) -> Path:
        if self.root is None:
            raise RuntimeError("the cluster is not running (use it inside 'with SlurmCluster(...)')")
        return self.root

    def _make_network(self) -> None:
        if self.network is False:
            return
        problem = netns.network_problem()
        if problem is None and _tool("nsenter") is None:
            problem = "the 'nsenter' command (util-linux) is missing"
        if problem and self.network:
            raise SlurmStartError(f"no network namespaces for the nodes: {problem}")
        if not problem:
            self.net = netns.VirtualNetwork([LOGIN, *self.nodes], **self._link).create()

    def _write_files(self) -> None:
        root = self._require_root()
        root.chmod(0o755)  # munged wants every folder on its socket's path searchable by all
        for sub in ("munge", "state", "run", "log", "tmp", *(f"spool/{n}" for n in self.nodes)):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "secret").mkdir(mode=0o700)  # munged refuses a key others could read
        key = root / "secret" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        (root / "plugstack.conf").write_text("")
        if self.net is None:  # one address: every daemon its own free port
            ctld_port, *node_ports = free_ports(1 + len(self.nodes))
        else:  # own addresses: Slurm's usual ports, as on separate machines
            ctld_port, node_ports = 6817, [6818] * len(self.nodes)
        nodes = {n: (self.address(n), port) for n, port in zip(self.nodes, node_ports, strict=True)}
        controller = (self.address(LOGIN) if self.net else "127.0.0.1", ctld_port)
        (root / "slurm.conf").write_text(slurm_conf(root, self.hostname, controller, nodes, self.cpus))

    def _start(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> None:
        root = self._require_root()
        env = {**os.environ, **self.env, ENV_MARK: str(root), **(env or {})}
        with open(root / "log" / f"{name}.out", "ab") as out:
            self._daemons[name] = start_child(argv, env=env, stdout=out, stderr=subprocess.STDOUT, text=False)

    def _start_daemons(self) -> None:
        root = self._require_root()
        sock = root / "munge" / "munge.socket"
        self._start("munged", [_tool("munged") or "munged", "--foreground", f"--socket={sock}",
                               f"--key-file={root / 'secret' / 'munge.key'}",
                               f"--seed-file={root / 'secret' / 'seed'}",
                               f"--pid-file={root / 'munge' / 'munged.pid'}",
                               f"--log-file={root / 'log' / 'munged.log'}"])
        self._wait(sock.exists, 20, "munged did not create its socket")
        ctld = [_tool("slurmctld") or "slurmctld", "-D", "-f", str(root / "slurm.conf")]
        self._start("slurmctld", self.command(ctld))
        for node in self.nodes:
            self.start_node(node)

    def start_node(self, node: str) -> None:
        """Start (or restart) the ``slurmd`` of ``node``. Notebook 11 brings a node back with it."""
        self.address(node)
        old = self._daemons.get(f"slurmd.{node}")
        if old is not None and old.poll() is None:
            raise RuntimeError(f"the slurmd of {node} is running already")
        argv = [_tool("slurmd") or "slurmd", "-D", "-N", node, "-f", str(self._require_root() / "slurm.conf")]
        self._start(f"slurmd.{node}", self.command(argv, node), env={NODE_MARK: f"{self.root}/{node}"})

    def kill_node(self, node: str) -> None:
        """Kill everything on ``node`` with SIGKILL, as if the machine had died. The controller
        marks the node DOWN after ``SlurmdTimeout`` (10 s), or at once after ``scontrol update
        nodename=... state=down``. Notebook 11 takes a node down with it."""
        self.address(node)
        proc = self._daemons.get(f"slurmd.{node}")
        if proc is not None:
            stop_children([proc], grace_seconds=0)
        killed = kill_until_gone(lambda: self.node_processes(node), tries=50)
        deadline = time.monotonic() + 10  # an exiting process has no environment left to be found by
        while (left := [pid for pid in killed if _alive(pid)]) and time.monotonic() < deadline:
            time.sleep(0.05)
        left += self.node_processes(node)
        if left:
            raise RuntimeError(f"processes of {node} survived SIGKILL: {left}")

    def node_processes(self, node: str) -> list[int]:
        """Pids of what runs on ``node``: its ``slurmd`` (marked with ``COURSE_SLURM_NODE``), the job
        steps it started (``SLURMD_NODENAME``, this cluster's only), their ``slurmstepd`` (by the
        node's log it keeps open, and as their parent) and, in a namespace, every process in it."""
        self.address(node)
        root = self._require_root()
        # whole variables: "node1 " is not a prefix of "node10 " (_marked ends each with a space)
        found = _marked(f"{NODE_MARK}={root}/{node} ")
        found |= _marked(f"SLURMD_NODENAME={node} ") & set(cluster_processes(root))
        found |= _stepds(root / "log" / f"slurmd.{node}.log")
        for pid in list(found):
            with contextlib.suppress(psutil.Error):
                parent = psutil.Process(pid).parent()
                if parent is not None and parent.name().startswith("slurmstepd"):
                    found.add(parent.pid)
        if self.net is not None:  # a machine of its own: everything in its namespace is on it
            found |= set(netns.namespace_pids(self.net.namespace(node)))
        return sorted(found - _me())

    def _wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            dead = {name: p.returncode for name, p in self._daemons.items() if p.poll() is not None}
            if dead:
                name = next(iter(dead))
                raise SlurmStartError(f"{name} exited with code {dead[name]}:\n{self._tail(name)}")
            if time.monotonic() > deadline:
                raise SlurmStartError(f"{what} within {timeout:.0f} s:\n" + "\n".join(
                    f"--- {name}\n{self._tail(name)}" for name in self._daemons))
            time.sleep(0.1)

    def _tail(self, name: str, lines: int = 12) -> str:
        """The last lines of a daemon's log file and console output."""
        folder, text = self._require_root() / "log", ""
        for path in (folder / f"{name}.log", folder / f"{name}.out"):
            with contextlib.suppress(OSError):
                text += path.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def node_states(self) -> dict[str, str]:
        """``{"node1": "idle", ...}`` as ``sinfo -N`` reports them (``{}`` if the controller
        does not answer)."""
        result = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=20)
        states = dict(line.split() for line in result.stdout.splitlines() if len(line.split()) == 2)
        return states if result.ok else {}

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Return when ``sinfo`` shows every node idle; raise :class:`SlurmStartError` after
        ``timeout`` seconds or as soon as a daemon exits."""
        self._wait(lambda: self.node_states() == dict.fromkeys(self.nodes, "idle"), timeout,
                   f"the nodes {self.nodes} were not idle")

    def run(self, argv: Sequence[str], *, timeout: float = 120.0, env: Mapping[str, str] | None = None,
            cwd: str | os.PathLike[str] | None = None) -> ProcessResult:
        """Run a Slurm command (``srun``, ``sbatch``, ...) against this cluster, killed after
        ``timeout`` seconds; ``env`` adds variables. Its jobs inherit the cluster's ``TMPDIR``,
        removed with it (a job killed on a dead node leaves TensorFlow's files)."""
        env = {"TMPDIR": str(self._require_root() / "tmp"), **self.env, **(env or {})}
        return run_command(self.command(argv), env=env, timeout=timeout, cwd=cwd)

    def __repr__(self) -> str:
        state = f"running in {self.root}" if self.root else "stopped"
        return f"SlurmCluster({len(self.nodes)} nodes, {self.label}, {state})"


def _check(nodes: int) -> int:
    """``python -m infra.slurm --check N`` (``make slurm``): start N nodes, ``srun -N N hostname``, stop."""
    problem = slurm_problem()
    if problem:
        print(f"slurm: {problem}", file=sys.stderr)
        return 3
    with SlurmCluster(nodes) as cluster:
        result = cluster.run(["srun", "-N", str(nodes), "hostname"], timeout=60)
        print(f"slurm: {nodes} nodes started in {cluster.start_seconds:.1f} s ({cluster.label}); "
              f"srun -N {nodes} hostname: {result.stdout.split()}")
    if not result.ok or len(result.stdout.split()) != nodes:
        print(f"slurm: srun failed (exit {result.returncode}): {result.tail()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--check" or not sys.argv[2].isdigit():
        sys.exit("usage: python -m infra.slurm --check N")
    sys.exit(_check(int(sys.argv[2])))
