"""A virtual network for local clusters: every host its own address on a link you can slow down.

Notebook 10 (通信实测) runs the course's multi-worker programs on "machines" that are Linux
network namespaces: each host gets its own namespace, its own network card (one end of a
veth pair) and its own address; the other ends plug into a bridge, the virtual switch, which
lives in a namespace of its own. ``tc`` shapes each host's link (rate with ``tbf``, delay
with ``netem``) in both directions, and the kernel counts every byte each card sends and
receives. ``TF_CONFIG`` then names real addresses (``10.213.0.1:2222``, ...), one port for
all hosts, exactly as on separate machines. Nothing is created in the machine's own network
namespace: ``ip link`` and ``tc qdisc`` outside look the same before, during and after.

API::

    from infra.netns import VirtualNetwork

    with VirtualNetwork(["worker:0", "worker:1"], rate="100mbit") as net:
        net.address("worker:1")                    # '10.213.0.2'
        proc = net.popen("worker:0", [sys.executable, "train.py"], env=...)
        with net.measure() as traffic:            # kernel byte counters before/after
            ...
        traffic.sent["worker:0"], traffic.received["worker:0"]
        net.set_link("worker:1", rate="10mbit", delay="5ms")
        net.cut("worker:1"); net.restore("worker:1")   # pull and re-plug the cable

- Rates are ``tc`` bit rates (``"500kbit"``, ``"100mbit"``, ``"1gbit"``) or bits/s as a
  number; ``None`` leaves the link unshaped. Anything else (``"fast"``, ``"-1mbit"``,
  ``"100mbps"``, which ``tc`` would read as mega*bytes*/s) raises ``ValueError``.
- A link of rate R: the host sends at most R and receives at most R (full duplex): ``tbf``
  on its card and on its switch port, with ``burst`` and ``latency`` (how long a packet may
  queue). A ``delay`` d (``netem``, where the kernel has it) adds d to each direction of the
  cable; host to host crosses two cables.
- Clean-up is absolute. Every name starts with ``crs-<owner pid>-<owner start time>-``;
  leaving the ``with`` block, an exception or Ctrl-C deletes the namespaces (which removes
  their cards, bridge and qdiscs, and kills processes still inside). A guardian process
  (:class:`infra.watchdog.OwnerGuard`) started with the network deletes it when its creator
  dies in any way, SIGKILL included; and :func:`reap_orphans` (called by every new network)
  deletes what a dead owner left if the guardian died too. Live networks of other processes are never touched.
- Addresses come from a private /24 (or the ``subnet`` you give) that overlaps none of the
  machine's routes or addresses (checked with ``ip route``/``ip addr``).
- :func:`network_problem` says in one line why namespaces cannot work here (not Linux,
  not root / no CAP_NET_ADMIN, no ``ip`` or ``tc``, Colab); :func:`make_network` then
  returns a :class:`LoopbackNetwork` with the same API on 127.0.0.1, whose ``label``
  (``"loopback: communication not shaped"``) notebook 10 puts on its figures.
- In a task started by a launcher with a network, :func:`cluster_link_bytes` reads every
  host's counters (so a worker can measure exactly one phase of its own program).

No TensorFlow here; the standard library and the ``ip``/``tc`` commands only.
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infra.process import find_command as _tool
from infra.watchdog import OwnerGuard, owner_alive, owner_tag

__all__ = [
    "LOOPBACK_LABEL",
    "Gate",
    "MAX_HOSTS",
    "PREFIX",
    "LinkBytes",
    "LoopbackNetwork",
    "NetworkUnavailableError",
    "Traffic",
    "VirtualNetwork",
    "check_transfer_fits",
    "cluster_link_bytes",
    "leftovers",
    "machine_prefixes",
    "make_network",
    "namespace_pids",
    "send_bytes",
    "network_problem",
    "parse_delay",
    "parse_rate",
    "reap_orphans",
    "transfer_seconds",
]

PREFIX = "crs"
"""Every namespace this module creates is called ``crs-...``; interfaces inside are ``crs*``."""

HOST_IF = "crseth0"  # each host's network card (inside the host's namespace)
BRIDGE = "crsbr0"  # the switch (inside the switch namespace)
MAX_HOSTS = 32
"""At most this many hosts per network: each runs a TensorFlow process (~0.3–0.5 GB)."""
LOOPBACK_LABEL = "loopback: communication not shaped"
ENV_VAR = "COURSE_NETWORK"  # set in each task's environment by launchers (cluster_link_bytes)
DEFAULT_PORT = 2222  # every host has its own address, so every task can use the same port

_NAME_RE = re.compile(rf"^{PREFIX}-(\d+)-(\d+)-(\d+)-(sw|h\d+)$")
_RATE_RE = re.compile(r"^(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit|tbit)$")
_RATE_UNITS = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}
_DELAY_RE = re.compile(r"^(\d+(?:\.\d+)?)(us|ms|s)$")
_DELAY_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
MIN_RATE = 8e3  # 8 kbit/s: below this one full-size packet takes more than a second
MAX_RATE = 100e9  # veth pairs carry a few tens of Gbit/s; tbf shapes up to this
MTU = 1500


class NetworkUnavailableError(RuntimeError):
    """Network namespaces cannot be used here; the message says what is missing."""


# --------------------------------------------------------------------------------------------
# Parsing and checks (pure functions, no system calls)
# --------------------------------------------------------------------------------------------
def parse_rate(rate: str | float | None) -> float | None:
    """A link rate in bits per second from ``"100mbit"``-style text or a number; None = unshaped.

    Units are ``tc``'s SI bit units: ``bit``, ``kbit``, ``mbit``, ``gbit``, ``tbit``
    (``"1.5gbit"`` = 1.5e9). Raises ``ValueError`` for unknown text (``"fast"``), signs,
    zero, byte units (``tc`` reads ``"mbps"`` as megabytes/s: a factor-8 trap) and rates
    outside 8 kbit/s .. 100 gbit/s. Used by :class:`VirtualNetwork` (notebook 10).
    """
    if rate is None:
        return None
    if isinstance(rate, bool):
        raise ValueError(f"rate {rate!r}: give bits per second or text like '100mbit'")
    if isinstance(rate, int | float):
        value = float(rate)
        text = repr(rate)
    elif isinstance(rate, str):
        text = rate.strip().lower()
        if text in ("none", "unlimited", "unshaped"):
            return None
        if re.match(r"^\d+(\.\d+)?\s*[kmgt]?(bps|b/s|byte|bytes)$", text):
            raise ValueError(
                f"rate {rate!r}: write bit rates like '100mbit'; tc reads 'mbps' as megaBYTES per "
                "second, 8× what most people mean"
            )
        match = _RATE_RE.match(text.replace(" ", ""))
        if not match:
            raise ValueError(
                f"rate {rate!r} is not a link rate: use a number with one of the units "
                f"{', '.join(_RATE_UNITS)} (e.g. '100mbit', '1gbit'), or None for an unshaped link"
            )
        value = float(match.group(1)) * _RATE_UNITS[match.group(2)]
    else:
        raise ValueError(f"rate {rate!r}: give bits per second or text like '100mbit'")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"rate {text}: a link rate must be a positive number of bits per second")
    if value < MIN_RATE:
        raise ValueError(f"rate {text}: below 8kbit one full-size packet takes more than a second")
    if value > MAX_RATE:
        raise ValueError(f"rate {text}: above 100gbit; use None for an unshaped link")
    return value


def parse_delay(delay: str | float | None) -> float:
    """A one-way link delay in seconds from ``"5ms"``/``"200us"``/``"1s"`` or a number (s).

    ``None`` means no added delay. Negative, unknown or longer than 10 s: ``ValueError``.
    Used by :class:`VirtualNetwork` (notebook 10).
    """
    if delay is None:
        return 0.0
    if isinstance(delay, bool):
        raise ValueError(f"delay {delay!r}: give seconds or text like '5ms'")
    if isinstance(delay, int | float):
        value = float(delay)
    elif isinstance(delay, str):
        match = _DELAY_RE.match(delay.strip().lower().replace(" ", ""))
        if not match:
            raise ValueError(f"delay {delay!r} is not a delay: use e.g. '5ms', '200us' or '0.1s'")
        value = float(match.group(1)) * _DELAY_UNITS[match.group(2)]
    else:
        raise ValueError(f"delay {delay!r}: give seconds or text like '5ms'")
    if not math.isfinite(value) or value < 0 or value > 10:
        raise ValueError(f"delay {delay!r}: must be between 0 and 10 seconds")
    return value


def format_rate(bits_per_second: float | None) -> str:
    """``1e8`` -> ``"100mbit"`` (the text ``tc`` takes); None -> ``"unshaped"``."""
    if bits_per_second is None:
        return "unshaped"
    for unit in ("tbit", "gbit", "mbit", "kbit"):
        scale = _RATE_UNITS[unit]
        if bits_per_second >= scale and (bits_per_second / scale) == round(bits_per_second / scale, 3):
            return f"{bits_per_second / scale:g}{unit}"
    return f"{int(round(bits_per_second))}bit"


def transfer_seconds(nbytes: float, rate: str | float | None, delay: str | float | None = None) -> float:
    """The shortest time ``nbytes`` can take over one link: ``delay + 8·nbytes / rate``.

    ``0`` bytes or an unshaped link (rate None) take ``delay``. Used in notebook 10 and by
    :func:`check_transfer_fits`.
    """
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    bits_per_second = parse_rate(rate)
    seconds = parse_delay(delay)
    return seconds if bits_per_second is None else seconds + 8 * nbytes / bits_per_second


def check_transfer_fits(
    nbytes: float, rate: str | float | None, timeout: float, delay: str | float | None = None
) -> float:
    """Raise ``ValueError`` when moving ``nbytes`` over the link cannot finish within ``timeout``.

    Returns the shortest transfer time. Used before a run so that a too-slow link is a clear
    error up front instead of a collective timeout minutes later (notebook 10).
    """
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    seconds = transfer_seconds(nbytes, rate, delay)
    if seconds > timeout:
        raise ValueError(
            f"at {format_rate(parse_rate(rate))} moving {nbytes / 1e6:.3g} MB takes at least {seconds:.0f} s, "
            f"longer than the timeout of {timeout:g} s: raise the rate or the timeout, or send less"
        )
    return seconds


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
    dead = []
    for name in leftovers():
        match = _NAME_RE.match(name)
        assert match is not None
        if not owner_alive(int(match.group(1)), int(match.group(2))):
            dead.append(name)
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
    """What the :class:`~infra.watchdog.OwnerGuard` of a network does if its creator dies."""
    _delete_namespaces(names)


# --------------------------------------------------------------------------------------------
# Byte counters
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LinkBytes:
    """Bytes a host's card has sent and received (kernel counters, Ethernet frames)."""

    sent: int
    received: int


@dataclass
class Traffic:
    """Bytes each host sent/received during a phase (after minus before) and how long it took.

    Returned by :meth:`VirtualNetwork.measure`; notebook 10.
    """

    sent: dict[str, int] = field(default_factory=dict)
    received: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @classmethod
    def between(
        cls, before: Mapping[str, LinkBytes], after: Mapping[str, LinkBytes], seconds: float
    ) -> Traffic:
        """The difference of two counter snapshots."""
        return cls(
            {h: after[h].sent - before[h].sent for h in before},
            {h: after[h].received - before[h].received for h in before},
            seconds,
        )

    @property
    def total(self) -> int:
        """Bytes sent by all hosts together (each byte on the wire counted once)."""
        return sum(self.sent.values())


def _read_counters(ip: str, namespaces: Mapping[str, str], ifname: str = HOST_IF) -> dict[str, LinkBytes]:
    out = {}
    for label, ns in namespaces.items():
        result = subprocess.run(
            [ip, "-n", ns, "-s", "-j", "link", "show", "dev", ifname], capture_output=True, text=True
        )
        if result.returncode != 0:
            raise RuntimeError(f"cannot read the counters of {label} ({ns}): {result.stderr.strip()}")
        stats = json.loads(result.stdout)[0]["stats64"]
        out[label] = LinkBytes(int(stats["tx"]["bytes"]), int(stats["rx"]["bytes"]))
    return out


def cluster_link_bytes() -> dict[str, LinkBytes] | None:
    """In a task started on a virtual network: every host's counters now; else None.

    A launcher that starts tasks on a :class:`VirtualNetwork` puts the network's description
    in ``COURSE_NETWORK``; a worker calls this before and after the phase it wants to count
    (notebook 10's worker programs), which leaves start-up traffic out.
    """
    text = os.environ.get(ENV_VAR)
    if not text:
        return None
    info = json.loads(text)
    return _read_counters(info["ip"], info["namespaces"], info["ifname"])


# --------------------------------------------------------------------------------------------
# The network
# --------------------------------------------------------------------------------------------
_LIVE: set[VirtualNetwork] = set()  # strong references: atexit destroys what is still alive
_LIVE_LOCK = threading.Lock()


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


@dataclass
class _Host:
    label: str
    namespace: str
    address: str
    port: str  # the switch port (inside the switch namespace)
    rate: float | None
    delay: float
    burst: int | None
    latency: float
    cut: bool = False


class _RunsOnHosts:
    """``popen``/``run`` on a host, for both networks: each defines ``command(host, argv)``."""

    def command(self, host: str, argv: Sequence[str] = ()) -> list[str]:
        raise NotImplementedError

    def popen(self, host: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` on ``host`` (a ``subprocess.Popen``; keyword arguments pass through)."""
        return subprocess.Popen(self.command(host, argv), **kwargs)

    def run(
        self, host: str, argv: Sequence[str], *, timeout: float = 60, **kwargs: Any
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` on ``host`` to completion; returns its ``CompletedProcess`` (text output)."""
        kwargs.setdefault("capture_output", True)
        return subprocess.run(self.command(host, argv), text=True, timeout=timeout, **kwargs)


class VirtualNetwork(_RunsOnHosts):
    """Hosts with their own namespaces and addresses on one virtual switch (see module doc).

    ``hosts`` is a number (hosts ``"host0"``, ``"host1"``, ...) or a list of labels (e.g.
    ``["worker:0", "worker:1", "ps:0"]``). ``rate``, ``burst`` (bytes that may pass at once)
    and ``latency`` (the longest a packet may wait in the link's queue: ``tbf``'s three
    parameters) and ``delay`` (``netem``; needs the ``sch_netem`` kernel module) are every
    link's initial shape (change one with :meth:`set_link`). ``subnet`` defaults to a free private
    /24. Create it with ``with VirtualNetwork(...) as net:`` (or :meth:`create` and
    :meth:`destroy`). Used in notebook 10 and by ``infra.cluster`` (``network=...``).
    """

    shaped = True
    label = "virtual network (namespaces, shaped with tc)"

    def __init__(
        self,
        hosts: int | Sequence[str],
        *,
        rate: str | float | None = None,
        delay: str | float | None = None,
        burst: int | None = None,
        latency: str | float = "500ms",
        subnet: str | None = None,
    ):
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
        self._rate, self._delay = parse_rate(rate), parse_delay(delay)
        self._burst = self._check_burst(burst)
        self._latency = self._check_latency(latency)
        self.labels = labels
        self._subnet_arg = subnet
        if subnet is not None:  # bad input fails before anything is created
            _check_subnet_syntax(subnet, len(labels))
        self.subnet: ipaddress.IPv4Network | None = None
        self._hosts: dict[str, _Host] = {}
        self._switch = ""
        self._guard: OwnerGuard | None = None
        self._created = False

    # -- life cycle -----------------------------------------------------------------------------
    def __enter__(self) -> VirtualNetwork:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def create(self) -> VirtualNetwork:
        """Build namespaces, cards, switch and qdiscs; on any error remove what was built."""
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
            self._hosts[label] = _Host(label, f"{base}-h{i}", str(addresses[i]), f"crsp{i}", self._rate,
                                       self._delay, self._burst, self._latency)
        names = [self._switch, *(h.namespace for h in self._hosts.values())]
        self._guard = OwnerGuard("infra.netns:_delete_after_owner", names)  # first: covers a SIGKILL during the build too
        self._created = True
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            self._add_switch()
            for host in self._hosts.values():
                self._add_host(host)
                self._apply_shape(host)
        except BaseException:
            self.destroy()
            raise
        return self

    def _add_switch(self) -> None:
        """The switch: a namespace holding one bridge."""
        ip, sw = _ip(), self._switch
        _run([ip, "netns", "add", sw])
        _run([ip, "-n", sw, "link", "add", BRIDGE, "type", "bridge"])
        _run([ip, "-n", sw, "link", "set", BRIDGE, "addrgenmode", "none"])
        _run([ip, "-n", sw, "link", "set", BRIDGE, "up"])

    def _add_host(self, h: _Host) -> None:
        """A host: a namespace whose card is one end of a cable (veth) plugged into the switch."""
        ip, sw = _ip(), self._switch
        _run([ip, "netns", "add", h.namespace])
        _run([ip, "-n", h.namespace, "link", "add", HOST_IF, "type", "veth", "peer", "name", h.port, "netns", sw])
        # no IPv6 link-local addresses: no neighbour-discovery chatter in the counters
        _run([ip, "-n", h.namespace, "link", "set", HOST_IF, "addrgenmode", "none"])
        _run([ip, "-n", sw, "link", "set", h.port, "addrgenmode", "none"])
        _run([ip, "-n", sw, "link", "set", h.port, "master", BRIDGE, "up"])
        _run([ip, "-n", h.namespace, "addr", "add", f"{h.address}/{self.subnet.prefixlen}", "dev", HOST_IF])
        _run([ip, "-n", h.namespace, "link", "set", "lo", "up"])
        _run([ip, "-n", h.namespace, "link", "set", HOST_IF, "up"])

    def destroy(self) -> None:
        """Delete everything this network created (idempotent; also kills processes inside)."""
        if not self._created:
            return
        _delete_namespaces([h.namespace for h in self._hosts.values()] + [self._switch])
        if self._guard is not None:
            self._guard.dismiss()
            self._guard = None
        self._created = False
        with _LIVE_LOCK:
            _LIVE.discard(self)

    @property
    def alive(self) -> bool:
        """True between :meth:`create` and :meth:`destroy`."""
        return self._created

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
        machines. Used by ``infra.cluster.LocalCluster(network=...)`` to write ``TF_CONFIG``.
        """
        return f"{self.address(host)}:{port}"

    def namespace(self, host: str) -> str:
        """The name of the host's network namespace (``ip netns exec <name> ...``)."""
        return self._host(host).namespace

    def command(self, host: str, argv: Sequence[str] = ()) -> list[str]:
        """``argv`` prefixed so that it runs inside the host's namespace (``ip netns exec``)."""
        self._require_alive()
        return [_ip(), "netns", "exec", self._host(host).namespace, *map(str, argv)]

    def task_env(self, hosts: Sequence[str] | None = None) -> dict[str, str]:
        """Environment for tasks on this network: ``COURSE_NETWORK`` (see :func:`cluster_link_bytes`)."""
        self._require_alive()
        chosen = self.labels if hosts is None else list(hosts)
        info = {"ip": _ip(), "ifname": HOST_IF, "namespaces": {h: self._host(h).namespace for h in chosen}}
        return {ENV_VAR: json.dumps(info)}

    # -- shaping --------------------------------------------------------------------------------
    def set_link(
        self,
        host: str,
        *,
        rate: str | float | None = "keep",
        delay: str | float | None = "keep",
        burst: int | None | str = "keep",
        latency: str | float = "keep",
    ) -> None:
        """Change one host's link (both directions); arguments left out keep their value.

        ``rate=None`` removes the rate limit, ``delay=None`` the delay. Raises
        :class:`NetworkUnavailableError` for a delay on a kernel without ``sch_netem``.
        """
        self._require_alive()
        h = self._host(host)
        new_rate = h.rate if rate == "keep" else parse_rate(rate)
        new_delay = h.delay if delay == "keep" else parse_delay(delay)
        new_burst = h.burst if burst == "keep" else self._check_burst(burst)  # type: ignore[arg-type]
        new_latency = h.latency if latency == "keep" else self._check_latency(latency)
        h.rate, h.delay, h.burst, h.latency = new_rate, new_delay, new_burst, new_latency
        self._apply_shape(h)

    def set_all(self, *, rate: str | float | None = "keep", delay: str | float | None = "keep") -> None:
        """:meth:`set_link` for every host."""
        for label in self.labels:
            self.set_link(label, rate=rate, delay=delay)

    def link(self, host: str) -> dict[str, Any]:
        """The host's link as set: ``{"rate": "100mbit", "delay_ms": 0.0, "latency_ms": 500.0, "cut": False}``."""
        h = self._host(host)
        return {
            "rate": format_rate(h.rate),
            "delay_ms": h.delay * 1e3,
            "latency_ms": h.latency * 1e3,
            "cut": h.cut,
        }

    def qdiscs(self, host: str) -> str:
        """What ``tc qdisc show`` reports for the host's card and its switch port (for display)."""
        h = self._host(host)
        own = _run([_tc(), "-n", h.namespace, "qdisc", "show", "dev", HOST_IF]).stdout.strip()
        port = _run([_tc(), "-n", self._switch, "qdisc", "show", "dev", h.port]).stdout.strip()
        return f"{h.label} card: {own}\nswitch port: {port}"

    def _apply_shape(self, h: _Host) -> None:
        for ns, dev in ((h.namespace, HOST_IF), (self._switch, h.port)):
            subprocess.run([_tc(), "-n", ns, "qdisc", "del", "dev", dev, "root"], capture_output=True)
            parent = ["root"]
            if h.delay > 0:
                # netem first (the cable's delay), then tbf inside it (the rate)
                limit = max(1000, int((h.rate or 10e9) / 8 * (h.delay + h.latency) / MTU))
                netem = [_tc(), "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem"]
                result = subprocess.run(
                    [*netem, "delay", f"{h.delay * 1e6:.0f}us", "limit", str(limit)],
                    capture_output=True,
                    text=True,
                )
                if result.returncode != 0:
                    h.delay = 0.0
                    if "unknown" in result.stderr.lower():
                        raise NetworkUnavailableError(
                            "this kernel has no netem qdisc (module sch_netem), so links cannot get a delay "
                            "here; rate, burst and latency work"
                        )
                    raise RuntimeError(f"tc netem failed: {result.stderr.strip()}")
                parent = ["parent", "1:1"]
            if h.rate is not None:
                # 1 ms of traffic at the rate (at least 4 KB): a full bucket lets only that much pass
                # at once, so a transfer of t seconds is at most 1 ms faster than bytes / rate
                burst = h.burst or max(4096, int(h.rate / 8 * 0.001))
                tbf = [_tc(), "-n", ns, "qdisc", "add", "dev", dev, *parent, "handle", "10:", "tbf"]
                _run(
                    [
                        *tbf,
                        "rate",
                        f"{int(h.rate)}bit",
                        "burst",
                        str(burst),
                        "latency",
                        f"{h.latency * 1e3:g}ms",
                    ]
                )

    @staticmethod
    def _check_latency(latency: str | float) -> float:
        value = parse_delay(latency)
        if value < 0.001:
            raise ValueError(f"latency {latency!r}: the queue must hold at least 1ms of traffic")
        return value

    @staticmethod
    def _check_burst(burst: int | None) -> int | None:
        if burst is None:
            return None
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 2 * MTU:
            raise ValueError(f"burst {burst!r}: give bytes, at least {2 * MTU} (two full-size frames)")
        return burst

    # -- faults ---------------------------------------------------------------------------------
    def cut(self, host: str) -> None:
        """Pull the host's cable: its switch port goes down, nothing passes either way."""
        self._require_alive()
        h = self._host(host)
        _run([_ip(), "-n", self._switch, "link", "set", h.port, "down"])
        h.cut = True

    def restore(self, host: str) -> None:
        """Plug the cable back in (the link keeps its shape)."""
        self._require_alive()
        h = self._host(host)
        _run([_ip(), "-n", self._switch, "link", "set", h.port, "up"])
        h.cut = False

    # -- counters -------------------------------------------------------------------------------
    def counters(self) -> dict[str, LinkBytes]:
        """Every host's card counters now (bytes sent and received since creation)."""
        self._require_alive()
        return _read_counters(_ip(), {label: h.namespace for label, h in self._hosts.items()})

    @contextlib.contextmanager
    def measure(self) -> Iterator[Traffic]:
        """``with net.measure() as t: ...``: ``t`` holds the bytes of the block when it ends."""
        traffic = Traffic()
        before = self.counters()
        start = time.perf_counter()
        yield traffic
        after = self.counters()
        measured = Traffic.between(before, after, time.perf_counter() - start)
        traffic.sent, traffic.received, traffic.seconds = measured.sent, measured.received, measured.seconds

    # -- helpers --------------------------------------------------------------------------------
    def _host(self, host: str) -> _Host:
        if not self._hosts:
            raise RuntimeError("the network is not created yet: use `with VirtualNetwork(...) as net:`")
        try:
            return self._hosts[host]
        except KeyError:
            raise KeyError(f"no host {host!r}; the hosts are {self.labels}") from None

    def _require_alive(self) -> None:
        if not self._created:
            raise RuntimeError("the network does not exist (not created yet, or destroyed)")

    def __repr__(self) -> str:
        state = "alive" if self._created else "not alive"
        links = {label: format_rate(h.rate) for label, h in self._hosts.items()} or format_rate(self._rate)
        return f"VirtualNetwork({self.labels}, {links}, {self.subnet or 'no subnet yet'}, {state})"


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


def _run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {result.stderr.strip()}")
    return result


def _destroy_all_live() -> None:  # atexit: a normal interpreter exit
    with _LIVE_LOCK:
        nets = list(_LIVE)
    for net in nets:
        net.destroy()


atexit.register(_destroy_all_live)


# --------------------------------------------------------------------------------------------
# One measured transfer (a "hello" over the network, and the tests)
# --------------------------------------------------------------------------------------------
_SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(); print("listening", flush=True)
c, _ = s.accept(); n = 0
while True:
    d = c.recv(1 << 20)
    if not d:
        break
    n += len(d)
c.sendall(b"k"); print(n, flush=True)
"""
_CLIENT = """
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[4]))
t = time.perf_counter(); s.sendall(b"x" * int(sys.argv[3])); s.shutdown(socket.SHUT_WR); s.recv(1)
print(time.perf_counter() - t)
"""


def send_bytes(
    net: VirtualNetwork | LoopbackNetwork,
    src: str,
    dst: str,
    nbytes: int,
    *,
    port: int = 5000,
    timeout: float = 60,
) -> tuple[float, int]:
    """Send ``nbytes`` over TCP from host ``src`` to host ``dst``: ``(seconds, bytes received)``.

    The seconds run from the first byte sent to the receiver's acknowledgement of the last.
    A server runs in ``dst``'s namespace, a client in ``src``'s (plain Python sockets).
    Raises ``RuntimeError`` when the transfer fails (e.g. the link is cut). Notebook 10, tests.
    """
    if nbytes < 1:
        raise ValueError(f"nbytes must be >= 1, got {nbytes}")
    bind = "0.0.0.0" if net.shaped else "127.0.0.1"
    server = net.popen(
        dst,
        [sys.executable, "-c", _SERVER, bind, str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if server.stdout is None or server.stdout.readline().strip() != "listening":
            raise RuntimeError(
                f"the receiver on {dst} did not start: {server.stderr.read() if server.stderr else ''}"
            )
        argv = [sys.executable, "-c", _CLIENT, net.address(dst), str(port), str(nbytes), str(timeout)]
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


# --------------------------------------------------------------------------------------------
# Fallback: the same API on loopback
# --------------------------------------------------------------------------------------------
class LoopbackNetwork(_RunsOnHosts):
    """Every host on 127.0.0.1, nothing shaped, nothing counted per host: the fallback.

    Same methods as :class:`VirtualNetwork`; :meth:`set_link`/:meth:`cut` only record what
    was asked, :meth:`counters` returns None. ``label`` goes on figures. Notebook 10.
    """

    shaped = False
    label = LOOPBACK_LABEL

    def __init__(self, hosts: int | Sequence[str], *, reason: str = "", **link: Any):
        labels = [f"host{i}" for i in range(hosts)] if isinstance(hosts, int) else list(hosts)
        if not labels or len(set(labels)) != len(labels):
            raise ValueError(f"hosts {hosts!r}: give a count or a list of unique names")
        parse_rate(link.get("rate"))
        parse_delay(link.get("delay"))
        self.labels, self.reason = labels, reason
        self.subnet = None
        from infra.cluster import free_ports  # here: infra.cluster imports nothing of this module

        self._ports = dict(zip(labels, free_ports(len(labels)), strict=True))
        self._links = {
            h: {
                "rate": format_rate(parse_rate(link.get("rate"))),
                "delay_ms": 0.0,
                "latency_ms": 0.0,
                "cut": False,
            }
            for h in labels
        }

    def __enter__(self) -> LoopbackNetwork:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def create(self) -> LoopbackNetwork:
        return self

    def destroy(self) -> None:
        pass

    alive = True

    def address(self, host: str) -> str:
        if host not in self._links:
            raise KeyError(f"no host {host!r}; the hosts are {self.labels}")
        return "127.0.0.1"

    @property
    def addresses(self) -> dict[str, str]:
        return dict.fromkeys(self.labels, "127.0.0.1")

    def task_address(self, host: str, port: int = DEFAULT_PORT) -> str:
        """``"localhost:<a free port>"``: on loopback every task needs a port of its own."""
        self.address(host)
        return f"localhost:{self._ports[host]}"

    def command(self, host: str, argv: Sequence[str] = ()) -> list[str]:
        self.address(host)
        return [*map(str, argv)]

    def task_env(self, hosts: Sequence[str] | None = None) -> dict[str, str]:
        return {}

    def set_link(
        self,
        host: str,
        *,
        rate: Any = "keep",
        delay: Any = "keep",
        burst: Any = "keep",
        latency: Any = "keep",
    ) -> None:
        self.address(host)
        if rate != "keep":
            self._links[host]["rate"] = format_rate(parse_rate(rate))
        if delay != "keep":
            self._links[host]["delay_ms"] = parse_delay(delay) * 1e3

    def set_all(self, *, rate: Any = "keep", delay: Any = "keep") -> None:
        for h in self.labels:
            self.set_link(h, rate=rate, delay=delay)

    def link(self, host: str) -> dict[str, Any]:
        self.address(host)
        return dict(self._links[host])

    def cut(self, host: str) -> None:
        self.address(host)
        self._links[host]["cut"] = True

    def restore(self, host: str) -> None:
        self.address(host)
        self._links[host]["cut"] = False

    def counters(self) -> None:
        return None

    @contextlib.contextmanager
    def measure(self) -> Iterator[Traffic]:
        traffic = Traffic()
        start = time.perf_counter()
        yield traffic
        traffic.seconds = time.perf_counter() - start

    def __repr__(self) -> str:
        return f"LoopbackNetwork({self.labels}, {self.label})"


def make_network(hosts: int | Sequence[str], **link: Any) -> VirtualNetwork | LoopbackNetwork:
    """A :class:`VirtualNetwork` where namespaces work, else a :class:`LoopbackNetwork`.

    In the fallback case prints one line (once per process) saying what is missing. Keyword arguments are
    :class:`VirtualNetwork`'s (bad ones raise ``ValueError`` either way). Notebook 10.
    """
    problem = network_problem()
    if problem is None:
        return VirtualNetwork(hosts, **link)
    if problem not in _SAID:
        print(f"{LOOPBACK_LABEL}: {problem}")
        _SAID.add(problem)
    return LoopbackNetwork(hosts, reason=problem, **link)


_SAID: set[str] = set()  # the fallback line is printed once per process
