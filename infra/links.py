"""A link of a virtual network: its rate and delay, how ``tc`` shapes it, the bytes it carried.

:func:`parse_rate`, :func:`parse_delay`, :func:`format_rate` and :func:`transfer_seconds` are
pure; :func:`shape` and :func:`read_counters` run ``tc`` and ``ip`` inside a namespace.
:mod:`infra.netns` builds its networks out of these links (notebook 10 reaches them through it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field

HOST_IF = "crseth0"  # each host's network card (inside the host's namespace)
ENV_VAR = "COURSE_NETWORK"  # a task's description of its network (cluster_link_bytes)
MTU = 1500
LATENCY_MS = 500  # tbf drops a packet that would wait longer than this in the link's queue
RATE_UNITS = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}  # tc's SI bit units
DELAY_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


class NetworkUnavailableError(RuntimeError):
    """Network namespaces cannot be used here; the message says what is missing."""


def _quantity(value: str | float, what: str, base: str, units: Mapping[str, float], example: str) -> float:
    """``value`` in its base unit: a number as it is, or text of a number and one of ``units``."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{what} {value!r}: give {base} or text like {example!r}")
    if not isinstance(value, str):
        return float(value)
    match = re.fullmatch(rf"(\d+(?:\.\d+)?)({'|'.join(units)})", value.strip().lower().replace(" ", ""))
    if not match:
        raise ValueError(f"{what} {value!r} is not a {what}: use a number with one of the units "
                         f"{', '.join(units)} (e.g. {example!r})")
    return float(match[1]) * units[match[2]]


def parse_rate(rate: str | float | None) -> float | None:
    """A link rate in bits per second from ``tc`` text (``"100mbit"``, ``"1.5gbit"``) or a number.

    None (or ``"unlimited"``) means unshaped. Raises ``ValueError`` for unknown text, byte units
    (``tc`` reads ``"mbps"`` as megabytes/s) and rates outside 8 kbit/s .. 100 gbit/s.
    """
    text = rate.strip().lower() if isinstance(rate, str) else rate
    if text in (None, "none", "unlimited", "unshaped"):
        return None
    if isinstance(text, str) and re.fullmatch(r"\d+(\.\d+)?\s*[kmgt]?(bps|b/s|byte|bytes)", text):
        raise ValueError(f"rate {rate!r}: write bit rates like '100mbit'; tc reads 'mbps' as megaBYTES "
                         "per second, 8× what most people mean")
    value = _quantity(rate, "link rate", "bits per second", RATE_UNITS, "100mbit")
    if not value > 0:  # NaN too
        raise ValueError(f"rate {rate!r}: a link rate must be a positive number of bits per second")
    if value < 8e3:
        raise ValueError(f"rate {rate!r}: below 8kbit one full-size packet takes more than a second")
    if value > 100e9:
        raise ValueError(f"rate {rate!r}: above 100gbit; use None for an unshaped link")
    return value


def parse_delay(delay: str | float | None) -> float:
    """A one-way delay in seconds from ``"5ms"``, ``"200us"``, ``"1s"`` or a number; None is 0.

    Unknown text, negative or longer than 10 s: ``ValueError``.
    """
    value = 0.0 if delay is None else _quantity(delay, "delay", "seconds", DELAY_UNITS, "5ms")
    if not 0 <= value <= 10:
        raise ValueError(f"delay {delay!r}: must be between 0 and 10 seconds")
    return value


def format_rate(bits_per_second: float | None) -> str:
    """``1e8`` -> ``"100mbit"`` (the text ``tc`` takes); None -> ``"unshaped"``."""
    if bits_per_second is None:
        return "unshaped"
    for unit in ("tbit", "gbit", "mbit", "kbit"):
        scaled = bits_per_second / RATE_UNITS[unit]
        if scaled >= 1 and scaled == round(scaled, 3):
            return f"{scaled:g}{unit}"
    return f"{round(bits_per_second)}bit"


def transfer_seconds(nbytes: float, rate: str | float | None, delay: str | float | None = None) -> float:
    """The shortest time ``nbytes`` can take over one link: ``delay + 8·nbytes / rate`` (notebook 10)."""
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    bits_per_second = parse_rate(rate)
    return parse_delay(delay) + (0.0 if bits_per_second is None else 8 * nbytes / bits_per_second)


@dataclass
class Link:
    """A host's cable: its card (in the host's namespace) and its port on the switch."""

    label: str
    namespace: str
    address: str
    port: str  # the switch port (inside the switch namespace)
    rate: float | None
    delay: float
    cut: bool = False

    def describe(self) -> dict[str, object]:
        """``{"rate": "100mbit", "delay_ms": 0.0, "cut": False}``."""
        return {"rate": format_rate(self.rate), "delay_ms": self.delay * 1e3, "cut": self.cut}


def shape(tc: str, link: Link, switch: str) -> None:
    """Give ``link`` its rate and delay in both directions: on the card and on the switch port."""
    for ns, dev in ((link.namespace, HOST_IF), (switch, link.port)):
        subprocess.run([tc, "-n", ns, "qdisc", "del", "dev", dev, "root"], capture_output=True)
        parent = ["root"]
        if link.delay > 0:  # netem first (the cable's delay), then tbf inside it (the rate)
            _add_delay(tc, ns, dev, link)
            parent = ["parent", "1:1"]
        if link.rate is not None:
            # a bucket of 1 ms at the rate (at least 4 KB): a transfer is at most 1 ms faster than bytes/rate
            burst = max(4096, int(link.rate / 8 * 0.001))
            run_checked([tc, "-n", ns, "qdisc", "add", "dev", dev, *parent, "handle", "10:", "tbf", "rate",
                         f"{int(link.rate)}bit", "burst", str(burst), "latency", f"{LATENCY_MS}ms"])


def _add_delay(tc: str, ns: str, dev: str, link: Link) -> None:
    limit = max(1000, int((link.rate or 10e9) / 8 * (link.delay + LATENCY_MS / 1e3) / MTU))
    result = subprocess.run([tc, "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem",
                             "delay", f"{link.delay * 1e6:.0f}us", "limit", str(limit)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        link.delay = 0.0
        if "unknown" in result.stderr.lower():
            raise NetworkUnavailableError("this kernel has no netem qdisc (module sch_netem), so links "
                                          "cannot get a delay here; rates work")
        raise RuntimeError(f"tc netem failed: {result.stderr.strip()}")


def run_checked(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a system command; raise ``RuntimeError`` with its error output if it fails."""
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {result.stderr.strip()}")
    return result


@dataclass(frozen=True)
class LinkBytes:
    """Bytes a host's card has sent and received (kernel counters, Ethernet frames)."""

    sent: int
    received: int


@dataclass
class Traffic:
    """Bytes each host sent and received during a phase, and its seconds (``VirtualNetwork.measure``)."""

    sent: dict[str, int] = field(default_factory=dict)
    received: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def read_counters(ip: str, namespaces: Mapping[str, str]) -> dict[str, LinkBytes]:
    """``{label: LinkBytes}`` of the card in each namespace of ``{label: namespace}``."""
    out = {}
    for label, ns in namespaces.items():
        result = subprocess.run([ip, "-n", ns, "-s", "-j", "link", "show", "dev", HOST_IF],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"cannot read the counters of {label} ({ns}): {result.stderr.strip()}")
        stats = json.loads(result.stdout)[0]["stats64"]
        out[label] = LinkBytes(int(stats["tx"]["bytes"]), int(stats["rx"]["bytes"]))
    return out


def cluster_link_bytes() -> dict[str, LinkBytes] | None:
    """In a task started on a virtual network: every host's counters now; elsewhere None.

    A worker calls it before and after the phase it counts, which leaves start-up traffic out
    (notebook 10's worker programs); the launcher describes the network in ``COURSE_NETWORK``.
    """
    text = os.environ.get(ENV_VAR)
    if not text:
        return None
    info = json.loads(text)
    return read_counters(info["ip"], info["namespaces"])
