"""Tests for infra.netns: input checks, the network itself, byte counters, clean-up, fallback.

The tests that build networks need root (or CAP_NET_ADMIN) and iproute2; elsewhere they are
skipped with the reason :func:`infra.netns.network_problem` gives. No TensorFlow here.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from infra import netns
from infra.netns import (
    LOOPBACK_LABEL,
    LinkBytes,
    NetworkUnavailableError,
    VirtualNetwork,
    cluster_link_bytes,
    leftovers,
    make_network,
    network_problem,
    parse_delay,
    parse_rate,
    reap_orphans,
    transfer_seconds,
)

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = network_problem()
needs_netns = pytest.mark.skipif(PROBLEM is not None, reason=f"no network namespaces here: {PROBLEM}")


def _ours(pid: int) -> list[str]:
    """The namespaces of the process ``pid`` (what it must not leave behind)."""
    return leftovers(owner=pid)


def _system_state() -> tuple[str, str]:
    """``ip link`` and ``tc qdisc`` of the machine's own namespace, for before/after checks."""
    link = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    qdisc = subprocess.run(["tc", "qdisc"], capture_output=True, text=True).stdout
    strip = lambda text: "\n".join(sorted(line.split(" state ")[0] for line in text.splitlines()))  # noqa: E731
    return strip(link), strip(qdisc)


# --------------------------------------------------------------------------------------------
# Parsing and checks
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, bits",
    [("100mbit", 1e8), ("1gbit", 1e9), ("1.5GBIT", 1.5e9), ("500kbit", 5e5), (" 20 mbit ", 2e7), (2e6, 2e6)],
)
def test_parse_rate_accepts_tc_bit_rates(text, bits):
    assert parse_rate(text) == pytest.approx(bits)


@pytest.mark.parametrize("text", [None, "unlimited", "None"])
def test_parse_rate_none_means_unshaped(text):
    assert parse_rate(text) is None


@pytest.mark.parametrize(
    "bad, words",
    [
        ("fast", "not a link rate"),
        ("-1mbit", "not a link rate"),
        ("0mbit", "positive"),
        ("100mbps", "megaBYTES"),
        ("10MB/s", "megaBYTES"),
        ("", "not a link rate"),
        ("1e3mbit", "not a link rate"),
        (0, "positive"),
        (-5e6, "positive"),
        (float("nan"), "positive"),
        (True, "bits per second"),
        (100, "below 8kbit"),
        ("200gbit", "above 100gbit"),
        ([1], "bits per second"),
    ],
)
def test_parse_rate_rejects_bad_input_with_clear_errors(bad, words):
    with pytest.raises(ValueError, match=words):
        parse_rate(bad)


def test_parse_delay():
    assert parse_delay("5ms") == pytest.approx(0.005)
    assert parse_delay("200us") == pytest.approx(2e-4)
    assert parse_delay(0.1) == pytest.approx(0.1)
    assert parse_delay(None) == 0.0
    for bad in ("soon", "-1ms", -0.1, "11s", True):
        with pytest.raises(ValueError, match="delay"):
            parse_delay(bad)


def test_transfer_time():
    assert transfer_seconds(1_000_000, "8mbit") == pytest.approx(1.0)
    assert transfer_seconds(1_000_000, "8mbit", delay="10ms") == pytest.approx(1.01)
    assert transfer_seconds(10**9, None) == 0.0


def test_format_rate_round_trips():
    for text in ("100mbit", "1.5gbit", "500kbit", "8kbit"):
        assert netns.format_rate(parse_rate(text)) == text
    assert netns.format_rate(None) == "unshaped"


def test_bad_networks_fail_before_anything_is_created():
    before = leftovers()
    with pytest.raises(ValueError, match="at least one host"):
        VirtualNetwork(0)
    with pytest.raises(ValueError, match="unique"):
        VirtualNetwork(["a", "a"])
    with pytest.raises(ValueError, match="at most 32"):
        VirtualNetwork(netns.MAX_HOSTS + 1)
    with pytest.raises(ValueError, match="holds 2 host addresses, fewer than the 3 hosts"):
        VirtualNetwork(3, subnet="10.250.0.0/30")
    with pytest.raises(ValueError, match="private"):
        VirtualNetwork(2, subnet="8.8.8.0/24")
    with pytest.raises(ValueError, match="not a link rate"):
        VirtualNetwork(2, rate="fast")
    assert leftovers() == before


@needs_netns
def test_a_subnet_that_overlaps_a_route_of_this_machine_is_refused():
    routes = [n for n in netns.machine_prefixes() if n.prefixlen < 32 and n.is_private]
    if not routes:
        pytest.skip("this machine has no private route to collide with")
    with pytest.raises(ValueError, match="overlaps this machine's route"):
        VirtualNetwork(2, subnet=str(routes[0])).create()
    chosen = netns._choose_subnet(None, 4)
    assert not any(chosen.overlaps(r) for r in netns.machine_prefixes())


# --------------------------------------------------------------------------------------------
# The fallback
# --------------------------------------------------------------------------------------------
def test_fallback_when_namespaces_are_switched_off(monkeypatch, capsys):
    monkeypatch.setenv("COURSE_NO_NETNS", "1")
    monkeypatch.setattr(netns, "_SAID", set())
    assert "COURSE_NO_NETNS" in network_problem()
    net = make_network(["worker:0", "worker:1"], rate="10mbit")
    line = capsys.readouterr().out.strip()
    assert isinstance(net, VirtualNetwork) and not net.shaped
    assert line.startswith(LOOPBACK_LABEL) and "COURSE_NO_NETNS" in line and "\n" not in line
    with net:
        assert net.addresses == {"worker:0": "127.0.0.1", "worker:1": "127.0.0.1"}
        ports = {net.task_address(h).split(":")[1] for h in net.labels}
        assert net.task_address("worker:0").startswith("localhost:") and len(ports) == 2  # one port each
        assert net.label == "loopback: communication not shaped"
        assert net.counters() is None and net.task_env() == {}
        assert net.command("worker:0", ["python", "x.py"]) == ["python", "x.py"]
        net.set_link("worker:1", rate="1mbit")
        net.cut("worker:1")
        assert net.link("worker:1") == {"rate": "1mbit", "delay_ms": 0.0, "cut": True}
        with net.measure() as traffic:
            pass
        assert traffic.sent == {} and traffic.seconds >= 0
        seconds, got = _send(net, "worker:0", "worker:1", 100_000)  # really sent, over loopback
        assert got == 100_000
    with pytest.raises(ValueError, match="not a link rate"):
        make_network(2, rate="fast")  # bad input is an error on the fallback path too
    make_network(2)
    assert capsys.readouterr().out == ""  # the fallback line comes once per process
    with pytest.raises(NetworkUnavailableError, match="COURSE_NO_NETNS"):
        VirtualNetwork(2).create()


@pytest.mark.parametrize(
    "patch, words",
    [
        ({"platform": "darwin"}, "need Linux; this is darwin"),
        ({"no_tool": "ip"}, "'ip' command (package iproute2) is missing"),
        ({"no_tool": "tc"}, "'tc' command (package iproute2) is missing"),
        ({"colab": True}, "Colab"),
    ],
)
def test_network_problem_names_what_is_missing(monkeypatch, patch, words):
    monkeypatch.delenv("COURSE_NO_NETNS", raising=False)
    if "platform" in patch:
        monkeypatch.setattr(netns.sys, "platform", patch["platform"])
    if "no_tool" in patch:
        real = netns._tool
        monkeypatch.setattr(netns, "_tool", lambda name: None if name == patch["no_tool"] else real(name))
    if "colab" in patch:
        monkeypatch.setitem(sys.modules, "google.colab", object())
    problem = network_problem()
    assert problem is not None and words in problem and "\n" not in problem


@needs_netns
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="no setpriv to drop root")
def test_network_problem_says_root_is_needed():
    code = "from infra.netns import network_problem; print(network_problem())"
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code]
    out = subprocess.run(nobody, capture_output=True, text=True, cwd=ROOT, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "need root or CAP_NET_ADMIN" in out.stdout and out.stdout.count("\n") == 1, out


def test_fallback_figures_are_labelled_by_the_notebook_helper(monkeypatch):
    monkeypatch.setenv("COURSE_NO_NETNS", "1")
    net = make_network(2)
    assert net.label == LOOPBACK_LABEL and VirtualNetwork.label != LOOPBACK_LABEL


def test_cluster_link_bytes_without_a_network_is_none(monkeypatch):
    monkeypatch.delenv(netns.ENV_VAR, raising=False)
    assert cluster_link_bytes() is None


# --------------------------------------------------------------------------------------------
# The network (root only)
# --------------------------------------------------------------------------------------------
def _send(net, src: str, dst: str, nbytes: int, timeout: float = 10) -> tuple[float, int]:
    return netns.send_bytes(net, src, dst, nbytes, timeout=timeout)


@needs_netns
def test_hosts_have_their_own_addresses_and_the_kernel_counts_their_bytes():
    state = _system_state()
    with VirtualNetwork(["a", "b", "c"]) as net:
        assert len(set(net.addresses.values())) == 3
        assert all(a.startswith(str(net.subnet.network_address)[:-1]) for a in net.addresses.values())
        hostname = net.run("a", ["ip", "-4", "-o", "addr", "show", "dev", netns.HOST_IF]).stdout
        assert net.address("a") in hostname and net.address("b") not in hostname
        assert _system_state() == state  # nothing created in the machine's own namespace
        nbytes = 3_000_000
        with net.measure() as traffic:
            _, got = _send(net, "a", "b", nbytes)
        assert got == nbytes
        # frames carry Ethernet/IP/TCP headers: a little more than the payload, never less
        assert nbytes <= traffic.sent["a"] <= 1.08 * nbytes
        # one cable, two counters: the same bytes but for a few small packets between the two reads
        # (last ACKs, ARP or IPv6 neighbour discovery: 66–90 bytes each; 144 seen once under load)
        assert abs(traffic.received["b"] - traffic.sent["a"]) <= 1e-3 * nbytes
        assert traffic.sent["c"] < 1000 and traffic.received["c"] < 1000  # c only hears broadcasts
        assert traffic.sent["b"] < 0.05 * nbytes  # acknowledgements
    assert _ours(os.getpid()) == [] and _system_state() == state


@needs_netns
def test_a_shaped_link_is_never_faster_than_its_rate():
    with VirtualNetwork(["a", "b"], rate="20mbit") as net:
        shown = net.qdiscs("a")
        assert shown.count("tbf") == 2 and shown.count("rate 20Mbit") == 2  # both directions
        nbytes = 1_000_000
        seconds, got = _send(net, "a", "b", nbytes)
        model = transfer_seconds(nbytes, "20mbit")
        assert got == nbytes and seconds >= 0.9 * model  # a rate limiter can only slow things
        net.set_link("a", rate="5mbit")
        assert net.qdiscs("a").count("rate 5Mbit") == 2 and "lat 500ms" in net.qdiscs("a")
        try:
            net.set_link("a", rate=None, delay="5ms")
        except NetworkUnavailableError as err:  # a kernel without sch_netem (the CI's has none)
            assert "no netem qdisc" in str(err) and net.link("a")["delay_ms"] == 0.0
        else:
            assert "tbf" not in net.qdiscs("a").split("switch port")[0] and "delay 5ms" in net.qdiscs("a")
            assert net.link("a") == {"rate": "unshaped", "delay_ms": 5.0, "cut": False}


@needs_netns
def test_cut_and_restore():
    with VirtualNetwork(["a", "b"]) as net:
        net.cut("b")
        assert net.link("b")["cut"]
        with pytest.raises(RuntimeError, match="sending from a to b failed"):
            _send(net, "a", "b", 10, timeout=1)  # nobody answers
        net.restore("b")
        seconds, got = _send(net, "a", "b", 1000)
        assert got == 1000


@needs_netns
def test_errors_inside_the_block_still_clean_up_and_kill_processes_inside():
    state = _system_state()
    with pytest.raises(RuntimeError, match="boom"):
        with VirtualNetwork(2) as net:
            sleeper = net.popen("host1", ["sleep", "300"])
            raise RuntimeError("boom")
    assert sleeper.wait(timeout=10) == -signal.SIGKILL
    assert _ours(os.getpid()) == [] and _system_state() == state
    with pytest.raises(RuntimeError, match="does not exist"):
        net.counters()
    with pytest.raises(KeyError, match="no host 'x'"):
        net.address("x")


@needs_netns
def test_cluster_link_bytes_in_a_task():
    with VirtualNetwork(["worker:0", "worker:1"]) as net:
        code = "from infra.netns import cluster_link_bytes; import json; print(json.dumps({h: [b.sent, b.received] for h, b in cluster_link_bytes().items()}))"
        env = dict(os.environ, PYTHONPATH=str(ROOT), **net.task_env())
        out = net.run("worker:1", [sys.executable, "-c", code], env=env)
        assert out.returncode == 0, out.stderr
        seen = json.loads(out.stdout)
        assert set(seen) == {"worker:0", "worker:1"}
        assert all(isinstance(v, int) for pair in seen.values() for v in pair)
        assert isinstance(net.counters()["worker:0"], LinkBytes)


CREATOR = """
import signal, sys, time
from infra.netns import VirtualNetwork
net = VirtualNetwork(3, rate="50mbit").create()
net.popen("host0", ["sleep", "300"])
print("ready", flush=True)
if sys.argv[1] == "fail":
    with net:
        raise SystemExit("failed on purpose")
time.sleep(300)
"""


def _start_creator(mode: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CREATOR), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    assert len(_ours(proc.pid)) == 4  # three hosts and the switch
    return proc


def _wait_gone(pid: int, seconds: float = 15) -> list[str]:
    deadline = time.monotonic() + seconds
    while _ours(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _ours(pid)


@needs_netns
@pytest.mark.slow
@pytest.mark.parametrize("how", ["fail", "ctrl-c", "sigterm", "sigkill"])
def test_the_creator_leaves_nothing_behind(how):
    state = _system_state()
    proc = _start_creator("fail" if how == "fail" else "wait")
    if how == "ctrl-c":
        proc.send_signal(signal.SIGINT)  # KeyboardInterrupt: atexit destroys the network
    elif how == "sigterm":
        proc.send_signal(signal.SIGTERM)  # no Python clean-up at all: the watchdog's job
    elif how == "sigkill":
        proc.kill()
    proc.wait(timeout=30)
    assert _wait_gone(proc.pid) == []
    assert _system_state() == state


@needs_netns
@pytest.mark.slow
def test_reap_orphans_removes_a_dead_owners_leftovers_and_spares_live_ones():
    proc = _start_creator("wait")
    guards = [c for c in psutil.Process(proc.pid).children() if "infra.watchdog" in c.cmdline()]
    assert guards, "the creator started no guardian"
    for guard in guards:  # the guardian dies first: as if both were killed together
        guard.kill()
    proc.kill()
    proc.wait(timeout=30)
    time.sleep(0.5)
    assert len(_ours(proc.pid)) == 4  # left behind
    with VirtualNetwork(2) as live:  # creating a network reaps dead owners first...
        assert _ours(proc.pid) == []
        assert reap_orphans() == []  # ...and never a live owner's network
        assert len(_ours(os.getpid())) == 3 and live.counters() is not None


# --------------------------------------------------------------------------------------------
# infra.cluster with network=...
# --------------------------------------------------------------------------------------------
WHERE_AM_I = ROOT / "tests" / "workers" / "cluster_task.py"  # with args=["where-am-i"]: its address, its cards


@needs_netns
@pytest.mark.slow
def test_local_cluster_runs_each_task_on_its_own_host():
    from infra.cluster import run_workers

    with VirtualNetwork(["chief:0", "worker:0", "worker:1"]) as net:
        result = run_workers(WHERE_AM_I, args=["where-am-i"], tasks={"chief": 1, "worker": 2}, network=net, timeout=60)
    assert result.cluster == {
        "chief": [f"{net.address('chief:0')}:2222"],
        "worker": [f"{net.address('worker:0')}:2222", f"{net.address('worker:1')}:2222"],
    }
    for task in result.tasks:
        report = task.reports[-1]
        host = report["me"].split(":")[0]
        assert host == net.address(task.name) and f"inet {host}/" in report["cards"]  # it really is there
        assert report["network"] and "127.0.0.1" not in report["me"]
    with pytest.raises(KeyError, match="no host 'worker:2'"):
        from infra.cluster import LocalCluster

        LocalCluster(WHERE_AM_I, num_workers=3, network=net)


@needs_netns
@pytest.mark.slow
def test_networks_in_use_at_once_leave_nothing_behind():
    """Notebook 10's pattern: several networks at once (shaped, re-shaped, one cable cut), a
    cluster on each, all inside one ``ExitStack``: nothing of them outlives the block."""
    from contextlib import ExitStack

    from infra.cluster import LocalCluster

    state = _system_state()
    with ExitStack() as stack:
        nets = [stack.enter_context(make_network([f"worker:{i}" for i in range(n)], rate="50mbit"))
                for n in (2, 3)]
        jobs = [stack.enter_context(LocalCluster(WHERE_AM_I, args=["where-am-i"], num_workers=len(net.labels),
                                                 network=net, timeout=60)) for net in nets]
        results = [job.wait() for job in jobs]
        nets[0].set_all(rate="20mbit")
        nets[1].cut("worker:1")  # left cut: the clean-up must not depend on the cable
        assert len(_ours(os.getpid())) == (2 + 1) + (3 + 1)  # hosts and a switch per network
    assert [len(result.tasks) for result in results] == [2, 3]
    assert _ours(os.getpid()) == [] and _system_state() == state


def test_local_cluster_on_a_loopback_network_is_the_usual_localhost_cluster(monkeypatch):
    from infra.cluster import LocalCluster

    monkeypatch.setenv("COURSE_NO_NETNS", "1")
    monkeypatch.setattr(netns, "_SAID", {"COURSE_NO_NETNS is set, so network namespaces are not used"})
    with make_network(["worker:0", "worker:1"]) as net:
        cluster = LocalCluster(WHERE_AM_I, num_workers=2, network=net)
    assert all(a.startswith("localhost:") for a in cluster.cluster["worker"]) and len(cluster.ports) == 2
