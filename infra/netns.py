"""A virtual network for local clusters: every host its own address on a link you can slow down.

Notebook 10 (通信实测) runs the course's multi-worker programs on "machines" that are Linux
network namespaces: each host gets its own namespace, its own network card (one end of a
veth pair) and its own address; the other ends plug into a bridge, the virtual switch, which
lives in a namespace of its own. ``tc`` shapes each host's link (:mod:`infra.links`: rate
with ``tbf``, delay with ``netem``) in both directions, and the kernel counts every byte each
card sends and receives. ``TF_CONFIG`` then names real addresses (``10.213.0.1:2222``, ...),
one port for all hosts, exactly as on separate machines. Nothing is created in the machine's
own network namespace.

API::

    from infra import netns

    with netns.make_network(["worker:0", "worker:1"], rate="100mbit") as net:
        net.address("worker:1")                    # '10.213.0.2'
        proc = net.popen("worker:0", [sys.executable, "train.py"], env=...)
        with net.measure() as traffic:            # kernel byte counters before/after
            ...
        traffic.sent["worker:0"], traffic.received["worker:0"]
        net.set_link("worker:1", rate="10mbit", delay="5ms")
        net.cut("worker:1"); net.restore("worker:1")   # pull and re-plug the cable

- Rates are ``tc`` bit rates (``"500kbit"``, ``"100mbit"``, ``"1gbit"``) or bits/s as a
  number; ``None`` leaves the link unshaped; anything else raises ``ValueError``. A link of
  rate R sends at most R and receives at most R; a ``delay`` d adds d to each direction.
- Clean-up is absolute. Every name starts with ``crs-<owner pid>-<owner start time>-``;
  leaving the ``with`` block, an exception, Ctrl-C or the owner's death
  (:class:`infra.watchdog.Lifetime`) deletes the namespaces (their cards, bridge, qdiscs and
  processes), and :func:`reap_orphans` (called by every new network) deletes what a dead
  owner left if its guardian died too. Live networks of other processes are never touched.
- Addresses come from a private /24 (or the ``subnet`` you give) that overlaps none of the
  machine's routes or addresses.
- :func:`network_problem` says in one line why namespaces cannot work here (not Linux, not
  root, no ``ip`` or ``tc``, Colab); :func:`make_network` then returns the same class in
  loopback mode: every host on 127.0.0.1, nothing shaped or counted, and a ``label``
  (``"loopback: communication not shaped"``) that notebook 10 puts on its figures.
- :func:`send_bytes` times one TCP transfer between two hosts (``scripts/send_bytes.py``);
  :class:`Gate` lets a running job and the notebook take turns (notebook 10 reshapes links
  between a job's phases).

No TensorFlow here; the standard library and the ``ip``/``tc`` commands only.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from infra.cluster import free_ports
from infra.links import (
    ENV_VAR,
    HOST_IF,
    MTU,
    Link,
    LinkBytes,
    NetworkUnavailableError,
    Traffic,
    check_burst,
    check_latency,
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
from infra.watchdog import Lifetime, orphans, owner_tag
from utils.config import PROJECT_ROOT

__all__ = [
    "ENV_VAR",
    "HOST_IF",
    "LOOPBACK_LABEL",
    "MAX_HOSTS",
    "MTU",
    "PREFIX",
    "Gate",
    "LinkBytes",
    "NetworkUnavailableError",
    "Traffic",
    "VirtualNetwork",
    "cluster_link_bytes",
    "format_rate",
    "leftovers",
    "machine_prefixes",
    "make_network",
    "namespace_pids",
    "network_problem",
    "parse_delay",
    "parse_rate",
    "reap_orphans",
    "send_bytes",
    "transfer_seconds",
]

PREFIX = "crs"
"""Every namespace this module creates is called ``crs-...``; interfaces inside are ``crs*``."""

BRIDGE = "crsbr0"  # the switch (inside the switch namespace)
MAX_HOSTS = 32
"""At most this many hosts per network: each runs a TensorFlow process (~0.3–0.5 GB)."""
LOOPBACK_LABEL = "loopback: communication not shaped"
DEFAULT_PORT = 2222  # every host has its own address, so every task can use the same port
SENDER = PROJECT_ROOT / "scripts" / "send_bytes.py"

_NAME_RE = re.compile(rf"^{PREFIX}-(\d+)-(\d+)-(\d+)-(sw|h\d+)$")


# --------------------------------------------------------------------------------------------
# Can namespaces work here?
# --------------------------------------------------------------------------------------------
def _has_cap_net_admin() -> bool:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) & (1 << 12))  # CAP_NET_ADMIN = 12
    except OSError:
        pass
    return False


_PROBLEM_CACHE: dict[str, str | None] = {}


def network_problem(*, probe: bool = True) -> str | None:
    """``None`` when virtual networks work here, else one line naming what is missing.

    Checks the platform (Linux, not Colab), root / CAP_NET_ADMIN (and CAP_SYS_ADMIN to
    create namespaces), the ``ip`` and ``tc`` commands, and (``probe=True``, once per
    process) that the kernel really lets us create a namespace. The environment variable
    ``COURSE_NO_NETNS=1`` forces the loopback fallback (the tests use it). Notebook 10.
    """
    if os.environ.get("COURSE_NO_NETNS", "") not in ("", "0"):
        return "COURSE_NO_NETNS is set, so network namespaces are not used"
    if sys.platform != "linux":
        return f"network namespaces need Linux; this is {sys.platform}"
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        return "Colab does not allow network namespaces (no CAP_NET_ADMIN/CAP_SYS_ADMIN in its sandbox)"
    if os.geteuid() != 0 and not _has_cap_net_admin():
        return "network namespaces need root or CAP_NET_ADMIN (run as root, e.g. in CI or a container with --cap-add NET_ADMIN)"
    for tool in ("ip", "tc"):
        if _tool(tool) is None:
            return f"the '{tool}' command (package iproute2) is missing"
    if not probe:
        return None
    if "probe" not in _PROBLEM_CACHE:
        _PROBLEM_CACHE["probe"] = _probe_namespace()
    return _PROBLEM_CACHE["probe"]


def _probe_namespace() -> str | None:
    name = f"{PREFIX}-{owner_tag()}-{next(_COUNTER)}-sw"
    try:
        result = subprocess.run([_ip(), "netns", "add", name], capture_output=True, text=True, timeout=20)
        if result.returncode != 0:
            return f"the kernel refused to create a network namespace: {result.stderr.strip()}"
        result = subprocess.run(
            [_ip(), "-n", name, "link", "add", BRIDGE, "type", "bridge"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        if result.returncode != 0:
            return f"cannot create a bridge inside a network namespace: {result.stderr.strip()}"
        return None
    finally:
        _delete_namespaces([name])


def _ip() -> str:
    return _tool("ip") or "ip"


def _tc() -> str:
    return _tool("tc") or "tc"


# --------------------------------------------------------------------------------------------
# Owners, names, clean-up
# --------------------------------------------------------------------------------------------
_COUNTER = itertools.count()


def _list_namespaces() -> list[str]:
    """Names of all network namespaces ``ip netns`` knows (ours start with ``crs-``)."""
    try:
        return sorted(os.listdir("/run/netns"))
    except OSError:
        return []


def leftovers(owner: int | None = None) -> list[str]:
    """The course's namespaces that exist now (``crs-...``); only those of process ``owner`` if given.

    Notebook 10 checks ``leftovers(owner=os.getpid()) == []`` after its networks; tests too.
    """
    found = [n for n in _list_namespaces() if _NAME_RE.match(n)]
    return found if owner is None else [n for n in found if n.startswith(f"{PREFIX}-{owner}-")]


def reap_orphans() -> list[str]:
    """Delete the namespaces (and so cards, bridges, qdiscs, processes) of dead owners.

    An owner is dead when its pid no longer exists or belongs to a process with another
    start time. Namespaces of live owners are left alone, so concurrent runs are safe.
    Returns the deleted names. Called by every new :class:`VirtualNetwork`; notebook 10.
    """
    dead = orphans(leftovers(), _NAME_RE)
    _delete_namespaces(dead)
    return dead


def namespace_pids(name: str) -> list[int]:
    """The processes running in network namespace ``name`` (``ip netns pids``; none if it is gone).
    Used here to empty a namespace before deleting it, and by ``infra.slurm`` to find a node's."""
    listed = subprocess.run([_ip(), "netns", "pids", name], capture_output=True, text=True)
    return [int(pid) for pid in listed.stdout.split()]


def _delete_namespaces(names: Sequence[str]) -> None:
    """Kill the processes inside each namespace, then delete it (missing ones are skipped).

    Host namespaces go first: deleting one takes its card and the peer port on the switch.
    """
    ip = _ip()
    for name in sorted(names, key=lambda n: n.endswith("-sw")):
        if not os.path.exists(f"/run/netns/{name}"):
            continue
        for _ in range(50):
            pids = namespace_pids(name)
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)
        subprocess.run([ip, "netns", "delete", name], capture_output=True, text=True)


def _delete_after_owner(*names: str) -> None:
    """What a network's :class:`~infra.watchdog.Lifetime` guardian does if its creator dies."""
    _delete_namespaces(names)


# --------------------------------------------------------------------------------------------
# Addresses
# --------------------------------------------------------------------------------------------
def machine_prefixes() -> list[ipaddress.IPv4Network]:
    """The IPv4 prefixes of this machine's routes (all tables) and its own addresses.

    A virtual network's subnet must overlap none of them (notebook 10 checks it).
    """
    nets: list[ipaddress.IPv4Network] = []
    for argv in (["-4", "-j", "route", "show", "table", "all"], ["-4", "-j", "addr", "show"]):
        result = subprocess.run([_ip(), *argv], capture_output=True, text=True)
        if result.returncode != 0 or not result.stdout.strip():
            continue
        for entry in json.loads(result.stdout):
            candidates = [entry.get("dst")] if "dst" in entry else []
            candidates += [f"{a['local']}/{a.get('prefixlen', 32)}" for a in entry.get("addr_info", [])]
            for text in candidates:
                if not text or text == "default":
                    continue
                with contextlib.suppress(ValueError):
                    nets.append(ipaddress.ip_network(text if "/" in text else f"{text}/32", strict=False))
    return nets


def _choose_subnet(subnet: str | None, n_hosts: int) -> ipaddress.IPv4Network:
    taken = machine_prefixes()
    if subnet is not None:
        net = _check_subnet_syntax(subnet, n_hosts)
        clash = next((t for t in taken if t.overlaps(net)), None)
        if clash is not None:
            raise ValueError(
                f"subnet {subnet} overlaps this machine's route or address {clash}; choose another"
            )
        return net
    for third in range(213, 256):  # 10.213.0.0/24, 10.214.0.0/24, ...
        net = ipaddress.IPv4Network(f"10.{third}.0.0/24")
        if not any(t.overlaps(net) for t in taken):
            return net
    raise RuntimeError("no free private /24 in 10.213-255.0.0: pass subnet='...' explicitly")


def _check_subnet_syntax(subnet: str, n_hosts: int) -> ipaddress.IPv4Network:
    try:
        net = ipaddress.ip_network(subnet, strict=True)
    except ValueError as err:
        raise ValueError(f"subnet {subnet!r}: {err}") from None
    if not isinstance(net, ipaddress.IPv4Network) or not net.is_private:
        raise ValueError(
            f"subnet {subnet}: use a private IPv4 range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)"
        )
    if net.num_addresses - 2 < n_hosts:
        raise ValueError(
            f"subnet {subnet} holds {max(0, net.num_addresses - 2)} host addresses, fewer than the {n_hosts} hosts asked for"
        )
    return net


# --------------------------------------------------------------------------------------------
# The network
# --------------------------------------------------------------------------------------------
class VirtualNetwork:
    """Hosts with their own namespaces and addresses on one virtual switch (see module doc).

    ``hosts`` is a number (hosts ``"host0"``, ``"host1"``, ...) or a list of labels (e.g.
    ``["worker:0", "worker:1", "ps:0"]``). ``rate``, ``burst`` (bytes that may pass at once)
    and ``latency`` (the longest a packet may wait in the link's queue: ``tbf``'s three
    parameters) and ``delay`` (``netem``; needs the ``sch_netem`` kernel module) are every
    link's initial shape (change one with :meth:`set_link`). ``subnet`` defaults to a free
    private /24. ``loopback=True`` (what :func:`make_network` gives where namespaces cannot
    work, ``reason`` saying why): every host on 127.0.0.1 with a port of its own; link changes
    are only recorded, :meth:`counters` is None. Create it with ``with ...(...) as net:`` (or
    :meth:`create` and :meth:`destroy`). Used in notebook 10, ``infra.cluster``
    (``network=...``) and ``infra.slurm``.
    """

    shaped = True
    label = "virtual network (namespaces, shaped with tc)"

    def __init__(self, hosts: int | Sequence[str], *, rate: str | float | None = None,
                 delay: str | float | None = None, burst: int | None = None,
                 latency: str | float = "500ms", subnet: str | None = None,
                 loopback: bool = False, reason: str = ""):
        labels = _check_labels(hosts)
        self._rate, self._delay = parse_rate(rate), parse_delay(delay)
        self._burst, self._latency = check_burst(burst), check_latency(latency)
        self.labels, self.reason = labels, reason
        self._subnet_arg = subnet
        if subnet is not None:  # bad input fails before anything is created
            _check_subnet_syntax(subnet, len(labels))
        self.subnet: ipaddress.IPv4Network | None = None
        self._hosts: dict[str, Link] = {}
        self._switch = ""
        self._lifetime: Lifetime | None = None
        self._created = False
        if loopback:
            self.shaped, self.label = False, LOOPBACK_LABEL
            ports = free_ports(len(labels))
            self._ports = dict(zip(labels, ports, strict=True))
            self._hosts = {h: Link(h, "", "127.0.0.1", "", self._rate, self._delay, None, 0.0)
                           for h in labels}

    # -- life cycle -----------------------------------------------------------------------------
    def __enter__(self) -> VirtualNetwork:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def create(self) -> VirtualNetwork:
        """Build namespaces, cards, switch and qdiscs; on any error remove what was built."""
        if not self.shaped:
            return self
        if self._created:
            raise RuntimeError("this network was already created")
        problem = network_problem()
        if problem:
            raise NetworkUnavailableError(problem)
        reap_orphans()
        self.subnet = _choose_subnet(self._subnet_arg, len(self.labels))
        base = f"{PREFIX}-{owner_tag()}-{next(_COUNTER)}"
        self._switch = f"{base}-sw"
        addresses = list(self.subnet.hosts())
        for i, label in enumerate(self.labels):
            self._hosts[label] = Link(label, f"{base}-h{i}", str(addresses[i]), f"crsp{i}",
                                      self._rate, self._delay, self._burst, self._latency)
        names = [self._switch, *(h.namespace for h in self._hosts.values())]
        # first: covers a SIGKILL during the build too
        self._lifetime = Lifetime(self.destroy, "infra.netns:_delete_after_owner", names)
        self._created = True
        try:
            self._add_switch()
            for host in self._hosts.values():
                self._add_host(host)
                shape(_tc(), host, self._switch)
        except BaseException:
            self.destroy()
            raise
        return self

    def _add_switch(self) -> None:
        """The switch: a namespace holding one bridge."""
        ip, sw = _ip(), self._switch
        run_checked([ip, "netns", "add", sw])
        run_checked([ip, "-n", sw, "link", "add", BRIDGE, "type", "bridge"])
        run_checked([ip, "-n", sw, "link", "set", BRIDGE, "addrgenmode", "none"])
        run_checked([ip, "-n", sw, "link", "set", BRIDGE, "up"])

    def _add_host(self, h: Link) -> None:
        """A host: a namespace whose card is one end of a cable (veth) plugged into the switch."""
        ip, sw, ns = _ip(), self._switch, h.namespace
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

    def destroy(self) -> None:
        """Delete everything this network created (idempotent; also kills processes inside)."""
        if not self._created:
            return
        _delete_namespaces([h.namespace for h in self._hosts.values()] + [self._switch])
        if self._lifetime is not None:
            self._lifetime.end()
            self._lifetime = None
        self._created = False

    @property
    def alive(self) -> bool:
        """True between :meth:`create` and :meth:`destroy` (always on loopback)."""
        return self._created or not self.shaped

    # -- addresses and processes ----------------------------------------------------------------
    def address(self, host: str) -> str:
        """The host's IPv4 address (what ``TF_CONFIG`` names)."""
        return self._host(host).address

    @property
    def addresses(self) -> dict[str, str]:
        """``{label: address}`` for every host."""
        return {label: h.address for label, h in self._hosts.items()}

    def task_address(self, host: str, port: int = DEFAULT_PORT) -> str:
        """``"10.213.0.2:2222"``: the host's address and the port its task listens on.

        Every host has its own address, so every task can use the same port, as on real
        machines (on loopback every task gets a free port of its own). Used by
        ``infra.cluster.LocalCluster(network=...)`` to write ``TF_CONFIG``.
        """
        if not self.shaped:
            return f"localhost:{self._ports[self._host(host).label]}"
        return f"{self.address(host)}:{port}"

    def namespace(self, host: str) -> str:
        """The name of the host's network namespace (``ip netns exec <name> ...``)."""
        return self._host(host).namespace

    def command(self, host: str, argv: Sequence[str] = ()) -> list[str]:
        """``argv`` prefixed so that it runs inside the host's namespace (``ip netns exec``)."""
        self._require_alive()
        h = self._host(host)
        prefix = [_ip(), "netns", "exec", h.namespace] if self.shaped else []
        return [*prefix, *map(str, argv)]

    def popen(self, host: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` on ``host`` (a ``subprocess.Popen``; keyword arguments pass through)."""
        return subprocess.Popen(self.command(host, argv), **kwargs)

    def run(self, host: str, argv: Sequence[str], *, timeout: float = 60,
            **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` on ``host`` to completion; returns its ``CompletedProcess`` (text output)."""
        kwargs.setdefault("capture_output", True)
        return subprocess.run(self.command(host, argv), text=True, timeout=timeout, **kwargs)

    def task_env(self, hosts: Sequence[str] | None = None) -> dict[str, str]:
        """Environment for tasks on this network: ``COURSE_NETWORK`` (see :func:`cluster_link_bytes`)."""
        self._require_alive()
        if not self.shaped:
            return {}
        chosen = self.labels if hosts is None else list(hosts)
        info = {"ip": _ip(), "ifname": HOST_IF, "namespaces": {h: self._host(h).namespace for h in chosen}}
        return {ENV_VAR: json.dumps(info)}

    # -- shaping and faults ---------------------------------------------------------------------
    def set_link(self, host: str, *, rate: str | float | None = "keep",
                 delay: str | float | None = "keep", burst: int | None | str = "keep",
                 latency: str | float = "keep") -> None:
        """Change one host's link (both directions); arguments left out keep their value.

        ``rate=None`` removes the rate limit, ``delay=None`` the delay. Raises
        :class:`NetworkUnavailableError` for a delay on a kernel without ``sch_netem``.
        """
        self._require_alive()
        h = self._host(host)
        h.rate = h.rate if rate == "keep" else parse_rate(rate)
        h.delay = h.delay if delay == "keep" else parse_delay(delay)
        h.burst = h.burst if burst == "keep" else check_burst(burst)  # type: ignore[arg-type]
        h.latency = h.latency if latency == "keep" or not self.shaped else check_latency(latency)
        if self.shaped:
            shape(_tc(), h, self._switch)

    def set_all(self, *, rate: str | float | None = "keep", delay: str | float | None = "keep") -> None:
        """:meth:`set_link` for every host."""
        for label in self.labels:
            self.set_link(label, rate=rate, delay=delay)

    def link(self, host: str) -> dict[str, Any]:
        """The host's link as set: ``{"rate": "100mbit", "delay_ms": 0.0, "latency_ms": 500.0, "cut": False}``."""
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

    # -- counters -------------------------------------------------------------------------------
    def counters(self) -> dict[str, LinkBytes] | None:
        """Every host's card counters now (bytes sent and received since creation); None on loopback."""
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
        if before is not None:
            measured = Traffic.between(before, self.counters(), traffic.seconds)
            traffic.sent, traffic.received = measured.sent, measured.received

    # -- helpers --------------------------------------------------------------------------------
    def _host(self, host: str) -> Link:
        if not self._hosts:
            raise RuntimeError("the network is not created yet: use `with VirtualNetwork(...) as net:`")
        try:
            return self._hosts[host]
        except KeyError:
            raise KeyError(f"no host {host!r}; the hosts are {self.labels}") from None

    def _require_alive(self) -> None:
        if not self.alive:
            raise RuntimeError("the network does not exist (not created yet, or destroyed)")

    def __repr__(self) -> str:
        if not self.shaped:
            return f"VirtualNetwork({self.labels}, {self.label})"
        state = "alive" if self._created else "not alive"
        links = {label: format_rate(h.rate) for label, h in self._hosts.items()} or format_rate(self._rate)
        return f"VirtualNetwork({self.labels}, {links}, {self.subnet or 'no subnet yet'}, {state})"


def _check_labels(hosts: int | Sequence[str]) -> list[str]:
    labels = [f"host{i}" for i in range(hosts)] if isinstance(hosts, int) else list(hosts)
    if isinstance(hosts, int) and hosts < 1:
        raise ValueError(f"a network needs at least one host, got {hosts}")
    if not labels or any(not isinstance(h, str) or not h.strip() for h in labels):
        raise ValueError(f"hosts {hosts!r}: give a count or a list of non-empty names")
    if len(set(labels)) != len(labels):
        raise ValueError(f"hosts {labels}: names must be unique")
    if len(labels) > MAX_HOSTS:
        raise ValueError(
            f"{len(labels)} hosts: a local network holds at most {MAX_HOSTS} "
            "(each host runs a TensorFlow process; this machine is a rehearsal, not a data centre)"
        )
    return labels


def make_network(hosts: int | Sequence[str], **link: Any) -> VirtualNetwork:
    """A :class:`VirtualNetwork` where namespaces work, else one in loopback mode.

    In the fallback case prints one line (once per process) saying what is missing. Keyword
    arguments are :class:`VirtualNetwork`'s (bad ones raise ``ValueError`` either way). Notebook 10.
    """
    problem = network_problem()
    if problem is None:
        return VirtualNetwork(hosts, **link)
    if problem not in _SAID:
        print(f"{LOOPBACK_LABEL}: {problem}")
        _SAID.add(problem)
    return VirtualNetwork(hosts, loopback=True, reason=problem, **link)


_SAID: set[str] = set()  # the fallback line is printed once per process


# --------------------------------------------------------------------------------------------
# One measured transfer (a "hello" over the network, and the tests)
# --------------------------------------------------------------------------------------------
def send_bytes(net: VirtualNetwork, src: str, dst: str, nbytes: int, *, port: int = 5000,
               timeout: float = 60) -> tuple[float, int]:
    """Send ``nbytes`` over TCP from host ``src`` to host ``dst``: ``(seconds, bytes received)``.

    The seconds run from the first byte sent to the receiver's acknowledgement of the last.
    ``scripts/send_bytes.py`` receives in ``dst``'s namespace and sends from ``src``'s.
    Raises ``RuntimeError`` when the transfer fails (e.g. the link is cut). Notebook 10, tests.
    """
    if nbytes < 1:
        raise ValueError(f"nbytes must be >= 1, got {nbytes}")
    bind = "0.0.0.0" if net.shaped else "127.0.0.1"
    server = net.popen(dst, [sys.executable, SENDER, "receive", bind, port],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if server.stdout is None or server.stdout.readline().strip() != "listening":
            raise RuntimeError(
                f"the receiver on {dst} did not start: {server.stderr.read() if server.stderr else ''}"
            )
        argv = [sys.executable, SENDER, "send", net.address(dst), port, nbytes, timeout]
        client = net.run(src, argv, timeout=timeout + 30)
        if client.returncode != 0:
            raise RuntimeError(
                f"sending from {src} to {dst} failed: {client.stderr.strip().splitlines()[-1:]}"
            )
        received = int(server.communicate(timeout=timeout)[0].strip())
        return float(client.stdout), received
    finally:
        if server.poll() is None:
            server.kill()
        server.wait()


# --------------------------------------------------------------------------------------------
# A gate between a running job and the person who changes its network
# --------------------------------------------------------------------------------------------
class Gate:
    """Files in a directory both sides see: the job says "ready for phase k" and waits for "go".

    Notebook 10 changes link rates *while* a two-host job runs, so one job (one TensorFlow
    start-up) measures several rates. The job (worker 0) calls :meth:`ready` with the
    results so far and :meth:`wait_go`; the notebook calls :meth:`wait_ready`, reshapes the
    network, then :meth:`go`.
    """

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = os.fspath(directory)
        os.makedirs(self.directory, exist_ok=True)

    def _path(self, kind: str, phase: int) -> str:
        return os.path.join(self.directory, f"{kind}-{phase}.json")

    # -- the job's side -------------------------------------------------------------------------
    def ready(self, phase: int, payload: Any = None) -> None:
        """Say "ready for ``phase``", handing over ``payload`` (JSON) to the other side."""
        tmp = self._path("ready", phase) + ".tmp"
        with open(tmp, "w") as f:
            json.dump(payload, f)
        os.replace(tmp, self._path("ready", phase))  # appears whole or not at all

    def wait_go(self, phase: int, timeout: float = 600.0) -> None:
        """Block until the other side said "go" for ``phase``."""
        deadline = time.monotonic() + timeout
        while not os.path.exists(self._path("go", phase)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no 'go' for phase {phase} within {timeout:g} s")
            time.sleep(0.02)

    # -- the operator's side --------------------------------------------------------------------
    def wait_ready(self, phase: int, timeout: float = 600.0, failed: Any = None) -> Any:
        """Wait for the job's "ready for ``phase``" and return its payload.

        ``failed`` (a callable) is asked while waiting; a true answer (e.g. a message that a
        task exited) raises ``RuntimeError`` at once instead of waiting out the timeout.
        """
        deadline = time.monotonic() + timeout
        while not os.path.exists(self._path("ready", phase)):
            problem = failed() if failed is not None else None
            if problem:
                raise RuntimeError(f"the job stopped before phase {phase}: {problem}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the job was not ready for phase {phase} within {timeout:g} s")
            time.sleep(0.05)
        with open(self._path("ready", phase)) as f:
            return json.load(f)

    def go(self, phase: int) -> None:
        """Let the job start ``phase``."""
        with open(self._path("go", phase), "w") as f:
            f.write("go")
