"""A link of a virtual network: its rate and delay, how ``tc`` shapes it, the bytes it carried.

The pure part (:func:`parse_rate`, :func:`parse_delay`, :func:`format_rate`,
:func:`transfer_seconds`) needs nothing; :func:`shape` and
:func:`read_counters` run ``tc`` and ``ip`` inside a namespace. :mod:`infra.netns` builds the
network out of these links (notebook 10 reaches everything here through it).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field

HOST_IF = "crseth0"  # each host's network card (inside the host's namespace)
ENV_VAR = "COURSE_NETWORK"  # set in each task's environment by launchers (cluster_link_bytes)
MIN_RATE = 8e3  # 8 kbit/s: below this one full-size packet takes more than a second
MAX_RATE = 100e9  # veth pairs carry a few tens of Gbit/s; tbf shapes up to this
MTU = 1500

_RATE_RE = re.compile(r"^(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit|tbit)$")
_RATE_UNITS = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}
_DELAY_RE = re.compile(r"^(\d+(?:\.\d+)?)(us|ms|s)$")
_DELAY_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


class NetworkUnavailableError(RuntimeError):
    """Network namespaces cannot be used here; the message says what is missing."""


def parse_rate(rate: str | float | None) -> float | None:
    """A link rate in bits per second from ``"100mbit"``-style text or a number; None = unshaped.

    Units are ``tc``'s SI bit units: ``bit``, ``kbit``, ``mbit``, ``gbit``, ``tbit``
    (``"1.5gbit"`` = 1.5e9). Raises ``ValueError`` for unknown text (``"fast"``), signs,
    zero, byte units (``tc`` reads ``"mbps"`` as megabytes/s: a factor-8 trap) and rates
    outside 8 kbit/s .. 100 gbit/s. Used by :class:`infra.netns.VirtualNetwork` (notebook 10).
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
    Used by :class:`infra.netns.VirtualNetwork` (notebook 10).
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

    ``0`` bytes or an unshaped link (rate None) take ``delay``. Used in notebook 10.
    """
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    bits_per_second = parse_rate(rate)
    seconds = parse_delay(delay)
    return seconds if bits_per_second is None else seconds + 8 * nbytes / bits_per_second


# --------------------------------------------------------------------------------------------
# One link's shape, applied with tc
# --------------------------------------------------------------------------------------------
@dataclass
class Link:
    """A host's cable: its card (in the host's namespace) and its port on the switch."""

    label: str
    namespace: str
    address: str
    port: str  # the switch port (inside the switch namespace)
    rate: float | None
    delay: float
    burst: int | None
    latency: float
    cut: bool = False

    def describe(self) -> dict[str, object]:
        """``{"rate": "100mbit", "delay_ms": 0.0, "latency_ms": 500.0, "cut": False}``."""
        return {"rate": format_rate(self.rate), "delay_ms": self.delay * 1e3,
                "latency_ms": self.latency * 1e3, "cut": self.cut}


def check_latency(latency: str | float) -> float:
    """``tbf``'s latency in seconds: how long a packet may queue (at least 1 ms)."""
    value = parse_delay(latency)
    if value < 0.001:
        raise ValueError(f"latency {latency!r}: the queue must hold at least 1ms of traffic")
    return value


def check_burst(burst: int | None) -> int | None:
    """``tbf``'s burst in bytes (None: 1 ms of traffic at the rate, at least 4 KB)."""
    if burst is None:
        return None
    if isinstance(burst, bool) or not isinstance(burst, int) or burst < 2 * MTU:
        raise ValueError(f"burst {burst!r}: give bytes, at least {2 * MTU} (two full-size frames)")
    return burst


def shape(tc: str, link: Link, switch: str) -> None:
    """Give ``link`` its rate and delay in both directions: on the card and on the switch port."""
    for ns, dev in ((link.namespace, HOST_IF), (switch, link.port)):
        subprocess.run([tc, "-n", ns, "qdisc", "del", "dev", dev, "root"], capture_output=True)
        parent = ["root"]
        if link.delay > 0:  # netem first (the cable's delay), then tbf inside it (the rate)
            _add_delay(tc, ns, dev, link)
            parent = ["parent", "1:1"]
        if link.rate is not None:
            # 1 ms of traffic at the rate (at least 4 KB): a full bucket lets only that much pass
            # at once, so a transfer of t seconds is at most 1 ms faster than bytes / rate
            burst = link.burst or max(4096, int(link.rate / 8 * 0.001))
            tbf = [tc, "-n", ns, "qdisc", "add", "dev", dev, *parent, "handle", "10:", "tbf"]
            run_checked([*tbf, "rate", f"{int(link.rate)}bit", "burst", str(burst),
                         "latency", f"{link.latency * 1e3:g}ms"])


def _add_delay(tc: str, ns: str, dev: str, link: Link) -> None:
    limit = max(1000, int((link.rate or 10e9) / 8 * (link.delay + link.latency) / MTU))
    netem = [tc, "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem"]
    result = subprocess.run([*netem, "delay", f"{link.delay * 1e6:.0f}us", "limit", str(limit)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        link.delay = 0.0
        if "unknown" in result.stderr.lower():
            raise NetworkUnavailableError(
                "this kernel has no netem qdisc (module sch_netem), so links cannot get a delay "
                "here; rate, burst and latency work"
            )
        raise RuntimeError(f"tc netem failed: {result.stderr.strip()}")


def run_checked(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a system command; raise ``RuntimeError`` with its error output if it fails."""
    result = subprocess.run(list(argv), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {result.stderr.strip()}")
    return result


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

    Returned by :meth:`infra.netns.VirtualNetwork.measure`; notebook 10.
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


def read_counters(ip: str, namespaces: Mapping[str, str], ifname: str = HOST_IF) -> dict[str, LinkBytes]:
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

    A launcher that starts tasks on a :class:`infra.netns.VirtualNetwork` puts the network's description
    in ``COURSE_NETWORK``; a worker calls this before and after the phase it wants to count
    (notebook 10's worker programs), which leaves start-up traffic out.
    """
    text = os.environ.get(ENV_VAR)
    if not text:
        return None
    info = json.loads(text)
    return read_counters(info["ip"], info["namespaces"], info["ifname"])
