"""A virtual network for local clusters: every host its own address on a link you can slow down.

Each host is a Linux network namespace with its own card (one end of a veth pair) and address;
the other ends plug into a bridge, the switch, in a namespace of its own. ``tc`` shapes each
link in both directions (:mod:`infra.links`) and the kernel counts the bytes of every card.
``TF_CONFIG`` then names real addresses (``10.213.0.1:2222``, ...), as on separate machines.
Nothing is created in the machine's own network namespace. Notebooks 10 and 11 (``infra.slurm``)::

    from infra import netns

    with netns.make_network(["worker:0", "worker:1"], rate="100mbit") as net:
        proc = net.popen("worker:0", [sys.executable, "train.py"], env=...)
        with net.measure() as traffic:                 # kernel byte counters before/after
            ...
        traffic.sent["worker:0"], traffic.received["worker:0"]
        net.set_link("worker:1", rate="10mbit", delay="5ms")
        net.cut("worker:1"); net.restore("worker:1")   # pull and re-plug the cable

Every name starts with ``crs-<owner pid>-<owner start time>-``: leaving the ``with`` block, an
error, Ctrl-C or the owner's death (:class:`infra.watchdog.Lifetime`) deletes the namespaces with
everything in them, and every new network first reaps what dead owners left (:func:`reap_orphans`).
Where namespaces cannot work, :func:`network_problem` says why in one line and :func:`make_network`
returns the same class in loopback mode: every host on 127.0.0.1, nothing shaped or counted.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import itertools
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

from infra.cluster import free_ports
from infra.links import (
    ENV_VAR,
    HOST_IF,
    Link,
    LinkBytes,
    NetworkUnavailableError,
    Traffic,
    cluster_link_bytes,
    format_rate,
    parse_delay,
    parse_rate,
    read_counters,
    run_checked,
    shape,
    transfer_seconds,
)
from infra.process import find_command as _tool
from infra.process import kill_until_gone
from infra.watchdog import Lifetime, orphans, owner_tag
from utils.config import PROJECT_ROOT

__all__ = [
    "LOOPBACK_LABEL", "MAX_HOSTS", "Gate", "NetworkUnavailableError", "VirtualNetwork",
    "cluster_link_bytes", "leftovers", "machine_prefixes", "make_network", "namespace_pids",
    "network_problem", "parse_rate", "reap_orphans", "send_bytes", "transfer_seconds",
]

PREFIX = "crs"  # every namespace this module creates is called crs-...
BRIDGE = "crsbr0"  # the switch (inside the switch namespace)
MAX_HOSTS = 32  # each host runs a TensorFlow process (~0.3–0.5 GB)
LOOPBACK_LABEL = "loopback: communication not shaped"
DEFAULT_PORT = 2222  # every host has its own address, so every task can use the same port
SENDER = PROJECT_ROOT / "scripts" / "send_bytes.py"

_NAME_RE = re.compile(rf"^{PREFIX}-(\d+)-(\d+)-(\d+)-(sw|h\d+)$")
_COUNTER = itertools.count()


def _ip() -> str:
    return _tool("ip") or "ip"


def _tc() -> str:
    return _tool("tc") or "tc"


def network_problem() -> str | None:
    """``None`` where virtual networks work, else one line naming what is missing.

    Checks the platform (Linux, not Colab), the ``ip`` and ``tc`` commands, then (once per
    process) that the kernel lets us create a namespace with a bridge: that needs root.
    ``COURSE_NO_NETNS=1`` forces the loopback fallback (the tests use it). Notebook 10, ``infra.slurm``.
    """
    if os.environ.get("COURSE_NO_NETNS", "") not in ("", "0"):
        return "COURSE_NO_NETNS is set, so network namespaces are not used"
    if sys.platform != "linux":
        return f"network namespaces need Linux; this is {sys.platform}"
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        return "Colab does not allow network namespaces (no CAP_NET_ADMIN/CAP_SYS_ADMIN in its sandbox)"
    missing = [tool for tool in ("ip", "tc") if _tool(tool) is None]
    if missing:
        return f"the '{missing[0]}' command (package iproute2) is missing"
    return _probe()


@functools.cache
def _probe() -> str | None:
    name = f"{PREFIX}-{owner_tag()}-{next(_COUNTER)}-sw"
    try:
        for what, argv in (("a network namespace", ["netns", "add", name]),
                           ("a bridge in one", ["-n", name, "link", "add", BRIDGE, "type", "bridge"])):
            result = subprocess.run([_ip(), *argv], capture_output=True, text=True, timeout=20)
            if result.returncode == 0:
                continue
            if os.geteuid() != 0:
                return ("network namespaces need root or CAP_NET_ADMIN (run as root, e.g. in CI or a "
                        f"container with --cap-add NET_ADMIN): {result.stderr.strip()}")
            return f"the kernel refused to create {what}: {result.stderr.strip()}"
        return None
    finally:
        _delete_namespaces(name)


def leftovers(owner: int | None = None) -> list[str]:
    """The course's namespaces that exist now (``crs-...``); only those of process ``owner`` if given."""
    try:
        found = sorted(n for n in os.listdir("/run/netns") if _NAME_RE.match(n))
    except OSError:
        return []
    return found if owner is None else [n for n in found if n.startswith(f"{PREFIX}-{owner}-")]


def reap_orphans() -> list[str]:
    """Delete the namespaces of dead owners (never a live one's) and return their names."""
    dead = orphans(leftovers(), _NAME_RE)
    _delete_namespaces(*dead)
    return dead


def namespace_pids(name: str) -> list[int]:
    """The processes running in network namespace ``name`` (none if it is gone); ``infra.slurm`` too."""
    listed = subprocess.run([_ip(), "netns", "pids", name], capture_output=True, text=True)
    return [int(pid) for pid in listed.stdout.split()]


def _delete_namespaces(*names: str) -> None:
    """Kill the processes in each namespace, then delete it (hosts before the switch; gone ones skipped).

    Also what a network's :class:`~infra.watchdog.Lifetime` guardian calls if its owner dies.
    """
    for name in sorted(names, key=lambda n: n.endswith("-sw")):
        if not os.path.exists(f"/run/netns/{name}"):
            continue
        kill_until_gone(functools.partial(namespace_pids, name), tries=50)
        subprocess.run([_ip(), "netns", "delete", name], capture_output=True, text=True)


def machine_prefixes() -> list[IPv4Network]:
    """This machine's IPv4 routes (all tables) and addresses: a network's subnet overlaps none."""
    routes = json.loads(run_checked([_ip(), "-4", "-j", "route", "show", "table", "all"]).stdout or "[]")
    cards = json.loads(run_checked([_ip(), "-4", "-j", "addr", "show"]).stdout or "[]")
    found = [r["dst"] for r in routes if r.get("dst", "default") != "default"]
    found += [f"{a['local']}/{a['prefixlen']}" for card in cards for a in card.get("addr_info", [])]
    return [IPv4Network(text, strict=False) for text in found]


def _check_subnet(subnet: str, n_hosts: int, taken: Sequence[IPv4Network] = ()) -> IPv4Network:
    """``subnet`` if it is a private IPv4 range with room for ``n_hosts`` that overlaps nothing ``taken``."""
    try:
        net = ipaddress.ip_network(subnet)
    except ValueError as err:
        raise ValueError(f"subnet {subnet!r}: {err}") from None
    if not isinstance(net, IPv4Network) or not net.is_private:
        raise ValueError(f"subnet {subnet}: use a private IPv4 range (10.0.0.0/8, 172.16.0.0/12, "
                         "192.168.0.0/16)")
    if net.num_addresses - 2 < n_hosts:
        raise ValueError(f"subnet {subnet} holds {max(0, net.num_addresses - 2)} host addresses, "
                         f"fewer than the {n_hosts} hosts asked for")
    clash = next((t for t in taken if t.overlaps(net)), None)
    if clash is not None:
        raise ValueError(f"subnet {subnet} overlaps this machine's route or address {clash}; choose another")
    return net


def _choose_subnet(subnet: str | None, n_hosts: int) -> IPv4Network:
    taken = machine_prefixes()
    if subnet is not None:
        return _check_subnet(subnet, n_hosts, taken)
    for third in range(213, 256):  # 10.213.0.0/24, 10.214.0.0/24, ...
        net = IPv4Network(f"10.{third}.0.0/24")
        if not any(t.overlaps(net) for t in taken):
            return net
    raise RuntimeError("no free private /24 in 10.213-255.0.0: pass subnet='...' explicitly")


class VirtualNetwork:
    """Hosts with their own namespaces and addresses on one virtual switch (see the module doc).

    ``hosts`` is a count (hosts ``"host0"``, ``"host1"``, ...) or a list of labels (``["worker:0",
    "ps:0"]``). ``rate`` and ``delay`` shape every link at first (:meth:`set_link` changes one);
    ``subnet`` defaults to a free private /24. ``loopback=True`` (:func:`make_network`'s fallback):
    every host on 127.0.0.1 with a port of its own, link changes only recorded, no counters.
    Use ``with VirtualNetwork(...) as net:`` (or :meth:`create` and :meth:`destroy`, as ``infra.slurm``
    does); ``infra.cluster.LocalCluster(network=net)`` runs each task on its host.
    """

    shaped = True
    label = "virtual network (namespaces, shaped with tc)"

    def __init__(self, hosts: int | Sequence[str], *, rate: str | float | None = None,
                 delay: str | float | None = None, subnet: str | None = None, loopback: bool = False):
        self.labels = _check_labels(hosts)
        self._rate, self._delay = parse_rate(rate), parse_delay(delay)
        self._subnet = subnet
        if subnet is not None:  # bad input fails before anything is created
            _check_subnet(subnet, len(self.labels))
        self.subnet: IPv4Network | None = None
        self._hosts: dict[str, Link] = {}
        self._switch = ""
        self._lifetime: Lifetime | None = None  # set while the network exists
        if loopback:
            self.shaped, self.label = False, LOOPBACK_LABEL
            self._ports = dict(zip(self.labels, free_ports(len(self.labels)), strict=True))
            self._hosts = {h: Link(h, "", "127.0.0.1", "", self._rate, self._delay) for h in self.labels}

    def __enter__(self) -> VirtualNetwork:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def create(self) -> VirtualNetwork:
        """Build namespaces, cards, switch and qdiscs; on any error remove what was built."""
        if not self.shaped:
            return self
        if self._lifetime is not None:
            raise RuntimeError("this network was already created")
        problem = network_problem()
        if problem:
            raise NetworkUnavailableError(problem)
        reap_orphans()
        self.subnet = _choose_subnet(self._subnet, len(self.labels))
        base = f"{PREFIX}-{owner_tag()}-{next(_COUNTER)}"
        self._switch = f"{base}-sw"
        self._hosts = {label: Link(label, f"{base}-h{i}", str(self.subnet.network_address + i + 1),
                                   f"crsp{i}", self._rate, self._delay)
                       for i, label in enumerate(self.labels)}
        names = [self._switch, *(h.namespace for h in self._hosts.values())]
        # before the build, so that a SIGKILL during it is covered too
        self._lifetime = Lifetime(self.destroy, "infra.netns:_delete_namespaces", names)
        try:
            self._build()
        except BaseException:
            self.destroy()
            raise
        return self

    def _build(self) -> None:
        """The switch (a namespace holding one bridge), then each host: a namespace whose card is
        one end of a cable (veth), the other end plugged into the switch."""
        ip, sw = _ip(), self._switch
        run_checked([ip, "netns", "add", sw])
        run_checked([ip, "-n", sw, "link", "add", BRIDGE, "type", "bridge"])
        run_checked([ip, "-n", sw, "link", "set", BRIDGE, "addrgenmode", "none"])
        run_checked([ip, "-n", sw, "link", "set", BRIDGE, "up"])
        for h in self._hosts.values():
            ns = h.namespace
            run_checked([ip, "netns", "add", ns])
            run_checked([ip, "-n", ns, "link", "add", HOST_IF, "type", "veth", "peer", "name", h.port,
                         "netns", sw])
            # no IPv6 link-local addresses: no neighbour-discovery chatter in the counters
            run_checked([ip, "-n", ns, "link", "set", HOST_IF, "addrgenmode", "none"])
            run_checked([ip, "-n", sw, "link", "set", h.port, "addrgenmode", "none"])
            run_checked([ip, "-n", sw, "link", "set", h.port, "master", BRIDGE, "up"])
            run_checked([ip, "-n", ns, "addr", "add", f"{h.address}/{self.subnet.prefixlen}", "dev", HOST_IF])
            run_checked([ip, "-n", ns, "link", "set", "lo", "up"])
            run_checked([ip, "-n", ns, "link", "set", HOST_IF, "up"])
            shape(_tc(), h, sw)

    def destroy(self) -> None:
        """Delete everything this network created, processes inside included (idempotent)."""
        if self._lifetime is None:
            return
        _delete_namespaces(*(h.namespace for h in self._hosts.values()), self._switch)
        self._lifetime.end()
        self._lifetime = None

    def address(self, host: str) -> str:
        """The host's IPv4 address (what ``TF_CONFIG`` names)."""
        return self._host(host).address

    @property
    def addresses(self) -> dict[str, str]:
        """``{label: address}`` for every host."""
        return {label: h.address for label, h in self._hosts.items()}

    def task_address(self, host: str) -> str:
        """``"10.213.0.2:2222"``: where the host's task listens (on loopback: a free port of its own)."""
        if not self.shaped:
            return f"localhost:{self._ports[self._host(host).label]}"
        return f"{self.address(host)}:{DEFAULT_PORT}"

    def namespace(self, host: str) -> str:
        """The name of the host's network namespace (``ip netns exec <name> ...``)."""
        return self._host(host).namespace

    def command(self, host: str, argv: Sequence[str] = ()) -> list[str]:
        """``argv`` prefixed so that it runs inside the host's namespace (``ip netns exec``)."""
        self._require_alive()
        prefix = [_ip(), "netns", "exec", self._host(host).namespace] if self.shaped else []
        return [*prefix, *map(str, argv)]

    def popen(self, host: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` on ``host`` (a ``subprocess.Popen``; keyword arguments pass through)."""
        return subprocess.Popen(self.command(host, argv), **kwargs)

    def run(self, host: str, argv: Sequence[str], *, timeout: float = 60,
            **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` on ``host`` to completion; returns its ``CompletedProcess`` (text output)."""
        kwargs.setdefault("capture_output", True)
        return subprocess.run(self.command(host, argv), text=True, timeout=timeout, **kwargs)

    def task_env(self) -> dict[str, str]:
        """Environment for tasks on this network: ``COURSE_NETWORK`` (see :func:`cluster_link_bytes`)."""
        self._require_alive()
        if not self.shaped:
            return {}
        namespaces = {label: h.namespace for label, h in self._hosts.items()}
        return {ENV_VAR: json.dumps({"ip": _ip(), "namespaces": namespaces})}

    def set_link(self, host: str, *, rate: str | float | None = "keep",
                 delay: str | float | None = "keep") -> None:
        """Change one host's link (both directions); ``None`` removes the rate limit or the delay.

        Raises :class:`NetworkUnavailableError` for a delay on a kernel without ``sch_netem``.
        """
        self._require_alive()
        h = self._host(host)
        h.rate = h.rate if rate == "keep" else parse_rate(rate)
        h.delay = h.delay if delay == "keep" else parse_delay(delay)
        if self.shaped:
            shape(_tc(), h, self._switch)

    def set_all(self, **link: Any) -> None:
        """:meth:`set_link` for every host."""
        for label in self.labels:
            self.set_link(label, **link)

    def link(self, host: str) -> dict[str, Any]:
        """The host's link as set: ``{"rate": "100mbit", "delay_ms": 0.0, "cut": False}``."""
        return self._host(host).describe()

    def qdiscs(self, host: str) -> str:
        """What ``tc qdisc show`` reports for the host's card and its switch port (for display)."""
        h = self._host(host)
        if not self.shaped:
            return f"{h.label}: {self.label}"
        own = run_checked([_tc(), "-n", h.namespace, "qdisc", "show", "dev", HOST_IF]).stdout.strip()
        port = run_checked([_tc(), "-n", self._switch, "qdisc", "show", "dev", h.port]).stdout.strip()
        return f"{h.label} card: {own}\nswitch port: {port}"

    def cut(self, host: str) -> None:
        """Pull the host's cable: its switch port goes down, nothing passes either way."""
        self._plug(host, up=False)

    def restore(self, host: str) -> None:
        """Plug the cable back in (the link keeps its shape)."""
        self._plug(host, up=True)

    def _plug(self, host: str, *, up: bool) -> None:
        self._require_alive()
        h = self._host(host)
        if self.shaped:
            run_checked([_ip(), "-n", self._switch, "link", "set", h.port, "up" if up else "down"])
        h.cut = not up

    def counters(self) -> dict[str, LinkBytes] | None:
        """Every host's card counters now (bytes since creation); None on loopback."""
        self._require_alive()
        if not self.shaped:
            return None
        return read_counters(_ip(), {label: h.namespace for label, h in self._hosts.items()})

    @contextlib.contextmanager
    def measure(self) -> Iterator[Traffic]:
        """``with net.measure() as t: ...``: ``t`` holds the bytes of the block when it ends
        (on loopback only its seconds)."""
        traffic = Traffic()
        before = self.counters()
        start = time.perf_counter()
        yield traffic
        traffic.seconds = time.perf_counter() - start
        after = self.counters()
        if before is not None and after is not None:
            traffic.sent = {h: after[h].sent - before[h].sent for h in before}
            traffic.received = {h: after[h].received - before[h].received for h in before}

    def _host(self, host: str) -> Link:
        if not self._hosts:
            raise RuntimeError("the network is not created yet: use `with VirtualNetwork(...) as net:`")
        try:
            return self._hosts[host]
        except KeyError:
            raise KeyError(f"no host {host!r}; the hosts are {self.labels}") from None

    def _require_alive(self) -> None:
        if self.shaped and self._lifetime is None:
            raise RuntimeError("the network does not exist (not created yet, or destroyed)")

    def __repr__(self) -> str:
        if not self.shaped:
            return f"VirtualNetwork({self.labels}, {self.label})"
        state = "alive" if self._lifetime is not None else "not alive"
        links = {label: format_rate(h.rate) for label, h in self._hosts.items()} or format_rate(self._rate)
        return f"VirtualNetwork({self.labels}, {links}, {self.subnet or 'no subnet yet'}, {state})"


def _check_labels(hosts: int | Sequence[str]) -> list[str]:
    if isinstance(hosts, int) and hosts < 1:
        raise ValueError(f"a network needs at least one host, got {hosts}")
    labels = [f"host{i}" for i in range(hosts)] if isinstance(hosts, int) else list(hosts)
    if not labels or any(not isinstance(h, str) or not h.strip() for h in labels):
        raise ValueError(f"hosts {hosts!r}: give a count or a list of non-empty names")
    if len(set(labels)) != len(labels):
        raise ValueError(f"hosts {labels}: names must be unique")
    if len(labels) > MAX_HOSTS:
        raise ValueError(f"{len(labels)} hosts: a local network holds at most {MAX_HOSTS} (each host "
                         "runs a TensorFlow process; this machine is a rehearsal, not a data centre)")
    return labels


def make_network(hosts: int | Sequence[str], **link: Any) -> VirtualNetwork:
    """A :class:`VirtualNetwork` where namespaces work, else one in loopback mode (notebook 10).

    The fallback prints one line (once per process) saying what is missing. Keyword arguments
    are :class:`VirtualNetwork`'s; bad ones raise ``ValueError`` either way.
    """
    problem = network_problem()
    if problem is None:
        return VirtualNetwork(hosts, **link)
    if problem not in _SAID:
        print(f"{LOOPBACK_LABEL}: {problem}")
        _SAID.add(problem)
    return VirtualNetwork(hosts, loopback=True, **link)


_SAID: set[str] = set()  # the fallback line is printed once per process


def send_bytes(net: VirtualNetwork, src: str, dst: str, nbytes: int, *, port: int = 5000,
               timeout: float = 60) -> tuple[float, int]:
    """Send ``nbytes`` over TCP from host ``src`` to host ``dst``: ``(seconds, bytes received)``.

    ``scripts/send_bytes.py`` receives in ``dst``'s namespace and sends from ``src``'s; the seconds
    run from the first byte sent to the receiver's acknowledgement of the last. Raises
    ``RuntimeError`` when the transfer fails (e.g. the link is cut). Notebook 10.
    """
    if nbytes < 1:
        raise ValueError(f"nbytes must be >= 1, got {nbytes}")
    bind = "0.0.0.0" if net.shaped else "127.0.0.1"
    server = net.popen(dst, [sys.executable, SENDER, "receive", bind, port],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if server.stdout is None or server.stdout.readline().strip() != "listening":
            error = server.stderr.read() if server.stderr else ""
            raise RuntimeError(f"the receiver on {dst} did not start: {error}")
        client = net.run(src, [sys.executable, SENDER, "send", net.address(dst), port, nbytes, timeout],
                         timeout=timeout + 30)
        if client.returncode != 0:
            last = client.stderr.strip().splitlines()[-1:]
            raise RuntimeError(f"sending from {src} to {dst} failed: {last}")
        received = int(server.communicate(timeout=timeout)[0].strip())
        return float(client.stdout), received
    finally:
        if server.poll() is None:
            server.kill()
        server.wait()


class Gate:
    """Files in a directory both sides see: a running job and the notebook take turns by phase.

    Notebook 10 changes link rates between the phases of one two-host job: the job (worker 0,
    ``scripts/workers/net_step_worker.py``) calls :meth:`ready` with its results so far and
    :meth:`wait_go`; the notebook calls :meth:`wait_ready`, reshapes the network, then :meth:`go`.
    """

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = os.fspath(directory)
        os.makedirs(self.directory, exist_ok=True)

    def _path(self, kind: str, phase: int) -> Path:
        return Path(self.directory, f"{kind}-{phase}.json")

    def ready(self, phase: int, payload: Any = None) -> None:
        """The job: ready for ``phase``, handing ``payload`` (JSON) over."""
        tmp = self._path("ready", phase).with_suffix(".tmp")
        tmp.write_text(json.dumps(payload))
        tmp.replace(self._path("ready", phase))  # appears whole or not at all

    def wait_go(self, phase: int, timeout: float = 600.0) -> None:
        """The job: block until the notebook said "go" for ``phase``."""
        self._wait("go", phase, timeout)

    def wait_ready(self, phase: int, timeout: float = 600.0,
                   failed: Callable[[], Any] | None = None) -> Any:
        """The notebook: wait for the job's "ready for ``phase``" and return its payload.

        ``failed()``, asked while waiting, stops the wait with ``RuntimeError`` when it returns
        a reason (e.g. that a task exited).
        """
        self._wait("ready", phase, timeout, failed)
        return json.loads(self._path("ready", phase).read_text())

    def go(self, phase: int) -> None:
        """The notebook: let the job start ``phase``."""
        self._path("go", phase).write_text("go")

    def _wait(self, kind: str, phase: int, timeout: float, failed: Callable[[], Any] | None = None) -> None:
        deadline = time.monotonic() + timeout
        while not self._path(kind, phase).exists():
            problem = failed() if failed is not None else None
            if problem:
                raise RuntimeError(f"the job stopped before phase {phase}: {problem}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no '{kind}' for phase {phase} within {timeout:g} s")
            time.sleep(0.02)
