"""A real Slurm cluster on this machine: a private munge, ``slurmctld`` and one ``slurmd`` per node.

Notebook 11 (集群上运行) submits its jobs to it with the usual commands (``sinfo``, ``srun``,
``sbatch``, ``squeue``, ``sacct``). Everything lives in one temporary folder: munge's key,
socket and seed, ``slurm.conf``, the controller's state, each node's spool and every log;
the commands find the cluster through ``SLURM_CONF`` (:attr:`SlurmCluster.env`). The host's
``/etc/slurm``, ``/etc/munge`` and any munge or Slurm daemon already running are never read
or touched.

API::

    from infra.slurm import SlurmCluster, slurm_problem

    with SlurmCluster(nodes=2) as cluster:          # ~1-2 s to start
        cluster.run(["srun", "-N", "2", "hostname"]).stdout
        cluster.address("node2")                     # '10.213.0.3' (or '127.0.0.1')
        cluster.env                                  # {"SLURM_CONF": ".../slurm.conf"}
        cluster.logs()["slurmd.node1"]

- Where network namespaces work (root, iproute2: :func:`infra.netns.network_problem`), every
  node is a host of an :class:`infra.netns.VirtualNetwork` with its own address and a link
  ``tc`` can shape (``rate``, ``delay``), and ``slurmctld`` runs on a ``login`` host of its
  own, where :meth:`SlurmCluster.run` also runs the commands (``nsenter --net``): Slurm's
  usual ports, as on separate machines. Elsewhere (or ``network=False``) all nodes are on
  loopback (``NodeAddr=127.0.0.1``), each ``slurmd`` on its own port. One ``slurmd -N nodeK``
  per node either way (Debian's build supports several per host); ``label`` says which.
- Plugins that need nothing from the machine: ``proctrack/linuxproc``, ``task/none``,
  ``select/cons_tres``, no accounting database. Finished jobs are recorded by
  ``jobcomp/filetxt``; ``sacct -c`` (``--completion``) reads that record, plain ``sacct``
  answers "accounting storage is disabled" (it needs ``slurmdbd``).
- Clean-up is absolute: leaving the ``with`` block, an error or Ctrl-C stops the daemons,
  kills every process that belongs to the cluster (``slurmstepd``, job steps, clients
  pointed at it), deletes the folder and the namespaces. A guardian (:class:`infra.watchdog.Lifetime`)
  does the same when the creator dies in any way, SIGKILL included, and
  :func:`reap_orphans` (called by every new cluster) removes what a dead owner left if the
  watchdog died too (the namespaces have :mod:`infra.netns`'s own watchdog). The daemons
  also get SIGTERM when their creator dies (:func:`infra.process.start_child`).
- :func:`slurm_problem` says in one line what is missing (not Linux, not root, Slurm or munge
  not installed) and the command that installs it (``make slurm``).

No TensorFlow here.
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
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from infra import netns
from infra.cluster import free_ports
from infra.netns import VirtualNetwork
from infra.process import ProcessResult, run_command, start_child, stop_children
from infra.process import find_command as _tool
from infra.watchdog import Lifetime, orphans, owner_tag

__all__ = [
    "COMMANDS",
    "INSTALL_HINT",
    "LABEL",
    "LOGIN",
    "MAX_NODES",
    "NETNS_LABEL",
    "SlurmCluster",
    "SlurmStartError",
    "cluster_processes",
    "leftovers",
    "node_names",
    "reap_orphans",
    "slurm_conf",
    "slurm_problem",
]

MAX_NODES = 4
"""At most this many ``slurmd`` on one machine (each node runs TensorFlow tasks in notebook 11)."""
LABEL = "loopback: every node on 127.0.0.1 with its own port"
NETNS_LABEL = "virtual network: every node its own namespace and address (links shaped with tc)"
LOGIN = "login"  # the host of slurmctld and of the commands, with a namespace of its own too
PREFIX = "course-slurm-"
COMMANDS = ("munged", "munge", "slurmctld", "slurmd", "slurmstepd", "srun", "sbatch", "sinfo", "squeue",
            "scontrol", "sacct")
INSTALL_HINT = "apt-get install slurm-wlm munge (as root; or: make slurm)"
ENV_MARK = "COURSE_SLURM_DIR"  # in every daemon's environment, inherited by slurmstepd
NODE_MARK = "COURSE_SLURM_NODE"  # ``<folder>/<node>`` in a slurmd's environment: its node's processes

_DIR_RE = re.compile(rf"^{PREFIX}(\d+)-(\d+)-")


class SlurmStartError(RuntimeError):
    """The cluster did not come up; the message has the failing daemon's last log lines."""


# --------------------------------------------------------------------------------------------
# Can it run here?
# --------------------------------------------------------------------------------------------
def slurm_problem() -> str | None:
    """``None`` when a local Slurm cluster can start here, else one line: what is missing and
    the command that installs it. ``COURSE_NO_SLURM=1`` forces the answer (tests, users who
    want notebook 11 to only show its scripts). Notebook 11's setup cell prints it."""
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


# --------------------------------------------------------------------------------------------
# Configuration (pure functions)
# --------------------------------------------------------------------------------------------
def node_names(nodes: int | Sequence[str]) -> list[str]:
    """``["node1", "node2", ...]``: the names ``sinfo`` shows and ``SLURM_STEP_NODELIST`` lists.
    A list or tuple of names is checked and kept in its order, which is Slurm's order of the nodes
    (notebook 11 §5 names its nodes ``node8``, ``node9``, ``node10``: not their string order)."""
    if isinstance(nodes, (list, tuple)):
        names = [str(n) for n in nodes]
        if (not 1 <= len(names) <= MAX_NODES or len(set(names)) != len(names)
                or not all(re.fullmatch(r"[a-z][a-z0-9]*", n) for n in names)):
            raise ValueError(f"node names must be 1 to {MAX_NODES} distinct lower-case words, got {names}")
        return names
    if not isinstance(nodes, int) or isinstance(nodes, bool) or not 1 <= nodes <= MAX_NODES:
        raise ValueError(f"nodes must be a whole number from 1 to {MAX_NODES}, got {nodes!r}")
    return [f"node{i}" for i in range(1, nodes + 1)]


def slurm_conf(
    root: str | os.PathLike[str],
    nodes: Sequence[str],
    *,
    hostname: str,
    ctld_port: int,
    node_ports: Sequence[int],
    cpus: int = 2,
    address: str = "127.0.0.1",
    node_addresses: Sequence[str] | None = None,
) -> str:
    """The text of ``slurm.conf`` for a cluster whose files all live under ``root``.

    ``hostname`` is this machine's short name: ``slurmctld`` refuses to start on a host
    that ``SlurmctldHost`` does not name, and every ``slurmd -N nodeK`` checks that its
    ``NodeHostname`` is this host. The controller listens on ``address:ctld_port``, node K on
    ``node_addresses[K]`` (default: all on ``address``) and ``node_ports[K]``; nodes that share
    an address need their own ports. ``config_overrides`` lets several nodes each claim
    ``cpus`` of the same CPUs.
    """
    root = Path(root)
    ports = [int(p) for p in node_ports]
    addrs = list(node_addresses) if node_addresses is not None else [address] * len(nodes)
    _check_conf(nodes, addrs, ports, address, int(ctld_port), cpus)
    lines = [
        "# Written by infra/slurm.py for notebook 11: a private cluster, removed after use.",
        "ClusterName=course",
        f"SlurmctldHost={hostname}({address})",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={ports[0]}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        *_conf_files(root),
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SlurmdParameters=config_overrides",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/filetxt",  # read by sacct -c: no slurmdbd here (JobCompLoc above)
        "ReturnToService=2",  # a node whose slurmd comes back is usable again
        "SlurmdTimeout=10",  # a killed slurmd marks its node DOWN within seconds (notebook 11)
        "KillWait=5",
        "MinJobAge=300",
        "MailProg=/bin/true",
    ]
    for name, addr, port in zip(nodes, addrs, ports, strict=True):
        lines.append(f"NodeName={name} NodeAddr={addr} NodeHostname={hostname} Port={port} CPUs={cpus} State=UNKNOWN")
    lines.append("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def _conf_files(root: Path) -> list[str]:
    """The lines of ``slurm.conf`` that put every file of the cluster under ``root``."""
    return [
        f"AuthInfo=socket={root / 'munge' / 'munge.socket'}",  # our munged, never /run/munge
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool' / '%n'}",
        f"SlurmctldPidFile={root / 'run' / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'run' / 'slurmd.%n.pid'}",
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'log' / 'slurmd.%n.log'}",
        f"PlugStackConfig={root / 'plugstack.conf'}",  # empty: no SPANK plugins from /etc/slurm
        f"JobCompLoc={root / 'log' / 'jobcomp.txt'}",
    ]


def _check_conf(nodes: Sequence[str], addrs: list[str], ports: list[int], address: str,
                ctld_port: int, cpus: int) -> None:
    """Raise ``ValueError`` for a cluster :func:`slurm_conf` cannot describe."""
    if len(ports) != len(nodes) or len(addrs) != len(nodes):
        raise ValueError(f"need a port and an address for each of the {len(nodes)} nodes: {ports}, {addrs}")
    endpoints = [(address, ctld_port), *zip(addrs, ports, strict=True)]
    if len(set(endpoints)) != len(endpoints):
        raise ValueError(f"nodes on one address need distinct ports, not the controller's: {endpoints}")
    if not all(0 < p < 65536 for p in [*ports, ctld_port]):
        raise ValueError(f"ports must be 1..65535: {ctld_port}, {ports}")
    if not nodes or len(set(nodes)) != len(nodes) or not all(re.fullmatch(r"[a-z][a-z0-9]*", n) for n in nodes):
        raise ValueError(f"node names must be distinct lower-case words: {list(nodes)}")
    if cpus < 1:
        raise ValueError(f"cpus must be >= 1, got {cpus}")


# --------------------------------------------------------------------------------------------
# Owners, processes, clean-up
# --------------------------------------------------------------------------------------------
def cluster_processes(root: str | os.PathLike[str], spare: Iterable[int] = ()) -> list[int]:
    """Pids of every process that belongs to the cluster in ``root``: those whose command line
    or environment names the folder (the daemons, ``slurmstepd``, clients with its
    ``SLURM_CONF``) and all their descendants (job steps, batch scripts). ``spare`` and this
    process's own ancestors are never listed. Used by the clean-up and the tests."""
    return sorted(set(_marked_processes([os.fsencode(str(root))], spare)) | set(_stepds(root, spare)))


def _stepds(root: str | os.PathLike[str], spare: Iterable[int] = ()) -> list[int]:
    """The ``slurmstepd`` with a file open under ``root`` (a cluster's folder, or one node's log
    file in it). Each overwrites its command line and
    environment with its title (``slurmstepd: [1.0]``), so neither names the folder; its open
    files do (the node's log, its socket in the spool), deleted or not."""
    prefix = str(Path(root).resolve())
    found = []
    for proc in psutil.process_iter(["name"]):
        if not (proc.info["name"] or "").startswith("slurmstepd") or proc.pid in set(spare):
            continue
        with contextlib.suppress(OSError):
            fds = Path(f"/proc/{proc.pid}/fd")
            if any(os.readlink(fds / fd).startswith(prefix) for fd in os.listdir(fds)):
                found.append(proc.pid)
    return found


def _marked_processes(marks: Sequence[bytes], spare: Iterable[int] = ()) -> list[int]:
    """Processes whose command line or environment contains one of ``marks``, and their descendants."""
    me = psutil.Process()
    spare_set = set(spare) | {me.pid} | {p.pid for p in me.parents()}
    found: set[int] = set()
    for proc in psutil.process_iter(["cmdline", "environ"]):
        text = " ".join(proc.info["cmdline"] or []) + " " + "".join(
            f"{k}={v} " for k, v in (proc.info["environ"] or {}).items())
        if any(os.fsdecode(mark) in text for mark in marks):
            found.add(proc.pid)
            with contextlib.suppress(psutil.Error):  # a job step's processes do not carry the mark
                found |= {child.pid for child in proc.children(recursive=True)}
    return sorted(found - spare_set)


def _process(pid: int) -> psutil.Process | None:
    """The live process ``pid`` (``None`` if it is gone or a zombie: dead, only not yet reaped)."""
    try:
        proc = psutil.Process(pid)
        return None if proc.status() == psutil.STATUS_ZOMBIE else proc
    except psutil.Error:
        return None


def remove_cluster(root: str | os.PathLike[str], spare: Iterable[int] = ()) -> None:
    """SIGKILL every process of the cluster in ``root`` (until none is left), then delete the
    folder. Idempotent. Called by :meth:`SlurmCluster.stop`, the watchdog and :func:`reap_orphans`."""
    spare = set(spare)
    for _ in range(100):
        pids = cluster_processes(root, spare)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    shutil.rmtree(root, ignore_errors=True)


def leftovers(owner: int | None = None) -> list[Path]:
    """The course's cluster folders that exist now; only those of process ``owner`` if given.
    Notebook 11 and the tests check ``leftovers(owner=os.getpid()) == []`` after a cluster."""
    tmp = Path(tempfile.gettempdir())
    found = sorted(p for p in tmp.glob(f"{PREFIX}*") if _DIR_RE.match(p.name) and p.is_dir())
    return found if owner is None else [p for p in found if p.name.startswith(f"{PREFIX}{owner}-")]


def reap_orphans() -> list[Path]:
    """Remove the clusters (processes and folders) of dead owners — an owner is dead when its
    pid is gone or belongs to a process with another start time; live owners' clusters are
    left alone. Returns the removed folders. Called by every new :class:`SlurmCluster`."""
    folders = {path.name: path for path in leftovers()}
    dead = [folders[name] for name in orphans(folders, _DIR_RE)]
    for path in dead:
        remove_cluster(path)
    return dead


# --------------------------------------------------------------------------------------------
# The cluster
# --------------------------------------------------------------------------------------------
class SlurmCluster:
    """munged, slurmctld and ``nodes`` slurmd daemons with private files (see module doc).

    ``nodes``: how many (named ``node1`` …) or their names. ``cpus`` is what each node offers to jobs (they share this machine's CPUs). ``network``:
    ``True`` puts every node (and a ``login`` host for the controller and the commands) in its
    own network namespace of :mod:`infra.netns` with links of ``rate``/``delay``; ``False``
    keeps all on loopback; ``None`` (default) uses namespaces where they work and says in
    :attr:`loopback_reason` why not. Start it with ``with SlurmCluster(2) as cluster:`` (or
    :meth:`start` and :meth:`stop`); ``start`` returns when ``sinfo`` shows every node idle.
    Used in notebook 11 and ``make slurm``.
    """

    def __init__(self, nodes: int | Sequence[str] = 2, *, cpus: int = 2, start_timeout: float = 60.0, network: bool | None = None,
                 rate: str | float | None = None, delay: str | float | None = None) -> None:
        self.nodes = node_names(nodes)
        if cpus < 1:
            raise ValueError(f"cpus must be >= 1, got {cpus}")
        self.cpus = cpus
        self.network, self._link = network, {"rate": rate, "delay": delay}
        self.net: VirtualNetwork | None = None
        self.loopback_reason: str | None = None
        self.start_timeout = start_timeout
        self.root: Path | None = None
        self.hostname = socket.gethostname().split(".")[0]
        self._daemons: dict[str, subprocess.Popen[Any]] = {}
        self._lifetime: Lifetime | None = None
        self.start_seconds: float | None = None

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def alive(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self.root is not None

    @property
    def conf_path(self) -> Path:
        return self._require_root() / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self._require_root() / "munge" / "munge.socket"

    @property
    def env(self) -> dict[str, str]:
        """What a command needs to talk to this cluster: ``{"SLURM_CONF": ...}``."""
        return {"SLURM_CONF": str(self.conf_path)}

    @property
    def label(self) -> str:
        """How the nodes are connected: :data:`LABEL` or :data:`NETNS_LABEL` (for figures)."""
        return NETNS_LABEL if self.net is not None else LABEL

    def address(self, node: str) -> str:
        """The node's ``NodeAddr`` (what a resolver must map its name to); ``"login"`` is the
        controller's host."""
        if node not in self.nodes and not (node == LOGIN and self.net is not None):
            raise KeyError(f"no node {node!r}; the nodes are {self.nodes}")
        return self.net.address(node) if self.net is not None else "127.0.0.1"

    def command(self, argv: Sequence[str], host: str = LOGIN) -> list[str]:
        """``argv`` prefixed to run on ``host`` (default: the login host, where commands such as
        ``sbatch`` run); unchanged on loopback. ``nsenter --net`` rather than ``ip netns exec``:
        the latter mounts a fresh ``/sys`` without ``/sys/fs/cgroup``, and slurmd will not start."""
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
        tag = owner_tag()
        self.root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{tag}-"))
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
        """Stop the daemons, kill whatever else belongs to the cluster, delete its folder
        (idempotent)."""
        if self.root is None:
            return
        # nodes first, then the controller, munge last: all at once, slurmctld waits seconds
        # for the munge socket that is already gone
        slurmds = [p for name, p in self._daemons.items() if name.startswith("slurmd.")]
        for group in (slurmds, [self._daemons.get("slurmctld")], [self._daemons.get("munged")]):
            stop_children([p for p in group if p is not None], grace_seconds=1.0)  # its state is deleted anyway
        guardian = self._lifetime.guardian_pid if self._lifetime is not None else None
        remove_cluster(self.root, [guardian] if guardian else [])  # the guardian names the folder too
        if self._lifetime is not None:
            self._lifetime.end()
            self._lifetime = None
        self._daemons.clear()
        if self.net is not None:
            self.net.destroy()  # its own watchdog covers a dead owner
            self.net = None
        self.root = None

    def _require_root(self) -> Path:
        if self.root is None:
            raise RuntimeError("the cluster is not running (use it inside 'with SlurmCluster(...)')")
        return self.root

    def _make_network(self) -> None:
        if self.network is False:
            self.loopback_reason = "network=False"
            return
        problem = netns.network_problem() or (None if _tool("nsenter") else "the 'nsenter' command (util-linux) is missing")
        if problem and self.network:
            raise SlurmStartError(f"no network namespaces for the nodes: {problem}")
        if problem:
            self.loopback_reason = problem
            return
        self.net = netns.VirtualNetwork([LOGIN, *self.nodes], **self._link).create()

    def _write_files(self) -> None:
        root = self._require_root()
        root.chmod(0o755)  # munged wants every folder on its socket's path searchable by all
        for sub in ("munge", "state", "run", "log", "tmp", *(f"spool/{n}" for n in self.nodes)):
            (root / sub).mkdir(parents=True, exist_ok=True)
        secret = root / "secret"
        secret.mkdir(mode=0o700)  # munged refuses a key others could read
        key = secret / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        (root / "plugstack.conf").write_text("")
        if self.net is None:  # one address: every daemon its own free port
            ctld_port, *node_ports = free_ports(1 + len(self.nodes))
        else:  # own addresses: Slurm's usual ports, as on separate machines
            ctld_port, node_ports = 6817, [6818] * len(self.nodes)
        self.conf_path.write_text(
            slurm_conf(root, self.nodes, hostname=self.hostname, ctld_port=ctld_port, node_ports=node_ports,
                       cpus=self.cpus, address=self.address(LOGIN) if self.net else "127.0.0.1",
                       node_addresses=[self.address(n) for n in self.nodes])
        )

    def _daemon_env(self) -> dict[str, str]:
        return {**os.environ, **self.env, ENV_MARK: str(self._require_root())}

    def _start(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> None:
        with open(self._require_root() / "log" / f"{name}.out", "ab") as out:
            self._daemons[name] = start_child(argv, env={**self._daemon_env(), **(env or {})}, stdout=out,
                                              stderr=subprocess.STDOUT, text=False)

    def _start_daemons(self) -> None:
        root = self._require_root()
        sock = self.munge_socket
        self._start("munged", [_tool("munged") or "munged", "--foreground", f"--socket={sock}",
                               f"--key-file={root / 'secret' / 'munge.key'}", f"--seed-file={root / 'secret' / 'seed'}",
                               f"--pid-file={root / 'munge' / 'munged.pid'}", f"--log-file={root / 'log' / 'munged.log'}"])
        self._wait(lambda: sock.exists(), 20, "munged did not create its socket")
        self._start("slurmctld", self.command([_tool("slurmctld") or "slurmctld", "-D", "-f", str(self.conf_path)]))
        for node in self.nodes:
            self.start_node(node)

    def start_node(self, node: str) -> None:
        """Start (or restart) the ``slurmd`` of ``node``. Notebook 11 brings a node back with it."""
        self.address(node)
        old = self._daemons.get(f"slurmd.{node}")
        if old is not None and old.poll() is None:
            raise RuntimeError(f"the slurmd of {node} is running already")
        self._start(f"slurmd.{node}", self.command([_tool("slurmd") or "slurmd", "-D", "-N", node, "-f",
                                                   str(self.conf_path)], node), env={NODE_MARK: f"{self._require_root()}/{node}"})

    def kill_node(self, node: str) -> None:
        """Kill everything on ``node`` with SIGKILL, as if the machine had died: its ``slurmd``,
        its ``slurmstepd`` and their job steps (in a namespace: every process in it). The
        controller marks the node DOWN after ``SlurmdTimeout`` (10 s), or at once after
        ``scontrol update nodename=... state=down``. Notebook 11 takes a node down with it."""
        self.address(node)
        proc = self._daemons.get(f"slurmd.{node}")
        if proc is not None:
            stop_children([proc], grace_seconds=0)
        killed: set[int] = set()
        for _ in range(50):  # until nothing is left: a dying slurmstepd may still fork
            pids = self.node_processes(node)
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            killed |= set(pids)
            time.sleep(0.05)
        # a process that is exiting has no environment left to be found by: wait for the exits
        _, alive = psutil.wait_procs([p for p in map(_process, killed) if p is not None], timeout=10)
        alive = [p.pid for p in alive if _process(p.pid) is not None]
        if self.node_processes(node) or alive:
            raise RuntimeError(f"processes of {node} survived SIGKILL: {self.node_processes(node) + alive}")

    def node_processes(self, node: str) -> list[int]:
        """Pids of what runs on ``node``: its ``slurmd`` (it carries ``COURSE_SLURM_NODE``), the
        job steps it started (``SLURMD_NODENAME``), their ``slurmstepd`` (which overwrites its own
        environment with its title, so it is found by the node's log it keeps open and as their
        parent) and, in a namespace, every process in it. Used by :meth:`kill_node` and the tests."""
        self.address(node)
        # whole variables: "node1 " is not a prefix of "node10 " (the scan ends each with a space)
        root = self._require_root()
        found = set(_marked_processes([f"{NODE_MARK}={root}/{node} ".encode()]))  # its slurmd
        # job steps: every cluster on this machine has a node1, so only this cluster's (SLURM_CONF)
        found |= set(_marked_processes([f"SLURMD_NODENAME={node} ".encode()])) & set(cluster_processes(root))
        found |= set(_stepds(root / "log" / f"slurmd.{node}.log"))  # a slurmstepd writes its node's log
        for pid in list(found):
            with contextlib.suppress(psutil.Error):
                parent = psutil.Process(pid).parent()
                if parent is not None and parent.name().startswith("slurmstepd"):
                    found.add(parent.pid)
        if self.net is not None:  # a machine of its own: everything in its namespace belongs to it
            found |= set(netns.namespace_pids(self.net.namespace(node)))
        me = psutil.Process()
        return sorted(found - {me.pid, *(p.pid for p in me.parents())})

    def _wait(self, ready: Any, timeout: float, what: str) -> None:
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
        ``timeout`` seconds; ``env`` adds variables. The jobs it submits inherit ``TMPDIR``: the
        cluster's own, removed with it (a job killed on a dead node leaves TensorFlow's files)."""
        tmp = {"TMPDIR": str(self._require_root() / "tmp")}
        return run_command(self.command(argv), env={**tmp, **self.env, **(env or {})}, timeout=timeout, cwd=cwd)

    def logs(self) -> dict[str, str]:
        """Every log of the cluster: ``{"slurmctld": ..., "slurmd.node1": ..., "munged": ...}``
        (the daemons' own log files; their console output under ``name.out``)."""
        folder = self._require_root() / "log"
        return {p.stem if p.suffix == ".log" else p.name: p.read_text(errors="replace")
                for p in sorted(folder.iterdir()) if p.is_file()}

    def _tail(self, name: str, lines: int = 12) -> str:
        root = self.root
        if root is None:
            return ""
        text = ""
        for path in (root / "log" / f"{name}.log", root / "log" / f"{name}.out"):
            with contextlib.suppress(OSError):
                text += path.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def __repr__(self) -> str:
        state = f"running in {self.root}" if self.root else "stopped"
        return f"SlurmCluster({len(self.nodes)} nodes, {self.label}, {state})"


def _main(argv: Sequence[str]) -> int:
    """``python -m infra.slurm --remove DIR`` (clean up by hand), ``--reap``, or
    ``--check N`` (``make slurm``: start N nodes, ``srun -N N hostname``, stop)."""
    if len(argv) == 2 and argv[0] == "--remove":
        remove_cluster(argv[1])
        return 0
    if argv == ["--reap"]:
        print("removed:", [str(p) for p in reap_orphans()])
        return 0
    if len(argv) == 2 and argv[0] == "--check":
        return _check(int(argv[1]))
    print("usage: python -m infra.slurm --check N | --reap | --remove DIR", file=sys.stderr)
    return 2


def _check(nodes: int) -> int:
    problem = slurm_problem()
    if problem:
        print(f"slurm: {problem}", file=sys.stderr)
        return 3
    with SlurmCluster(nodes) as cluster:
        t = time.perf_counter()
        result = cluster.run(["srun", "-N", str(nodes), "hostname"], timeout=60)
        srun_seconds = time.perf_counter() - t
        print(f"slurm: {len(cluster.nodes)} nodes started in {cluster.start_seconds:.1f} s ({cluster.label})")
        print(f"slurm: srun -N {nodes} hostname ({srun_seconds:.2f} s): {result.stdout.split()}")
        t = time.perf_counter()
    print(f"slurm: stopped and removed in {time.perf_counter() - t:.1f} s")
    if not result.ok or len(result.stdout.split()) != nodes:
        print(f"slurm: srun failed (exit {result.returncode}): {result.tail()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
