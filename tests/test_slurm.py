"""Tests for infra.slurm: the configuration writer, the checks, the clean-up, a real cluster.

The tests that start daemons need root and Debian's ``slurm-wlm`` and ``munge`` (``make slurm``
installs them); elsewhere they are skipped with the one line :func:`infra.slurm.slurm_problem`
gives. No TensorFlow here.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from infra import netns, slurm
from infra.slurm import (
    INSTALL_HINT,
    SlurmCluster,
    SlurmStartError,
    cluster_processes,
    leftovers,
    node_names,
    reap_orphans,
    remove_cluster,
    slurm_conf,
    slurm_problem,
)
from infra.watchdog import owner_tag

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = slurm_problem()
needs_slurm = pytest.mark.skipif(PROBLEM is not None, reason=f"no local Slurm cluster here: {PROBLEM}")


def _conf(tmp_path: Path, nodes: int = 2, cpus: int = 2) -> dict[str, list[str]]:
    """The written slurm.conf as ``{key: [values]}`` (NodeName lines: one value per node)."""
    addresses = {name: ("127.0.0.1", 7001 + i) for i, name in enumerate(node_names(nodes))}
    text = slurm_conf(tmp_path, "vm", ("127.0.0.1", 7000), addresses, cpus)
    parsed: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            parsed.setdefault(key, []).append(value)
    return parsed


# --------------------------------------------------------------------------------------------
# The configuration writer
# --------------------------------------------------------------------------------------------
def test_node_names_and_their_limits():
    assert node_names(2) == ["node1", "node2"]
    assert node_names(slurm.MAX_NODES)[-1] == f"node{slurm.MAX_NODES}"
    for bad in (0, slurm.MAX_NODES + 1, 2.0, True, "2"):
        with pytest.raises(ValueError, match="whole number"):
            node_names(bad)
    assert node_names(["node8", "node9", "node10"]) == ["node8", "node9", "node10"]  # their order kept
    for bad in ([], ["node1", "node1"], ["Node1"], ["n"] * (slurm.MAX_NODES + 1)):
        with pytest.raises(ValueError, match="distinct lower-case"):
            node_names(bad)
    with pytest.raises(ValueError, match="cpus must be >= 1"):
        SlurmCluster(2, cpus=0)


def test_every_file_of_the_cluster_is_under_its_folder(tmp_path):
    conf = _conf(tmp_path)
    paths = {key: v[0] for key, v in conf.items() if key.endswith(("Location", "Dir", "File", "Config", "Loc"))}
    assert set(paths) >= {"StateSaveLocation", "SlurmdSpoolDir", "SlurmctldPidFile", "SlurmdPidFile",
                          "SlurmctldLogFile", "SlurmdLogFile", "PlugStackConfig", "JobCompLoc"}
    for key, path in paths.items():
        assert path.startswith(f"{tmp_path}/"), (key, path)
    assert conf["AuthInfo"] == [f"socket={tmp_path}/munge/munge.socket"]  # never the host's /run/munge
    # several slurmd on one host: per-node spool, pid and log files
    assert all("%n" in paths[k] for k in ("SlurmdSpoolDir", "SlurmdPidFile", "SlurmdLogFile"))


def test_nodes_share_an_address_and_have_their_own_ports(tmp_path):
    conf = _conf(tmp_path, nodes=3, cpus=1)
    nodes = [dict(item.split("=", 1) for item in ("NodeName=" + line).split()) for line in conf["NodeName"]]
    assert [n["NodeName"] for n in nodes] == ["node1", "node2", "node3"]
    assert {n["NodeAddr"] for n in nodes} == {"127.0.0.1"}
    assert [n["Port"] for n in nodes] == ["7001", "7002", "7003"]
    assert {n["NodeHostname"] for n in nodes} == {"vm"} and {n["CPUs"] for n in nodes} == {"1"}
    assert conf["SlurmctldHost"] == ["vm(127.0.0.1)"] and conf["SlurmctldPort"] == ["7000"]


def test_the_plugins_need_nothing_from_the_machine(tmp_path):
    conf = {k: v[0] for k, v in _conf(tmp_path).items()}
    assert conf["ProctrackType"] == "proctrack/linuxproc" and conf["TaskPlugin"] == "task/none"
    assert conf["SelectType"] == "select/cons_tres"
    assert conf["AccountingStorageType"] == "accounting_storage/none"  # no slurmdbd
    assert conf["JobCompType"] == "jobcomp/filetxt"  # what sacct -c reads


# --------------------------------------------------------------------------------------------
# Can it run here?
# --------------------------------------------------------------------------------------------
def test_slurm_problem_names_what_is_missing_and_how_to_install_it(monkeypatch):
    monkeypatch.delenv("COURSE_NO_SLURM", raising=False)
    monkeypatch.setattr(slurm.sys, "platform", "linux")
    monkeypatch.delenv("COLAB_RELEASE_TAG", raising=False)
    monkeypatch.setattr(slurm.os, "geteuid", lambda: 0)
    monkeypatch.setattr(slurm, "_tool", lambda name: None if name in ("slurmd", "munged") else f"/usr/bin/{name}")
    problem = slurm_problem()
    assert problem is not None and "munged, slurmd" in problem and INSTALL_HINT in problem
    assert "\n" not in problem
    monkeypatch.setattr(slurm.os, "geteuid", lambda: 1000)
    assert "root" in slurm_problem()
    monkeypatch.setenv("COURSE_NO_SLURM", "1")
    assert "COURSE_NO_SLURM" in slurm_problem()


def test_a_cluster_that_cannot_start_here_says_why_and_leaves_nothing(monkeypatch):
    monkeypatch.setenv("COURSE_NO_SLURM", "1")
    before = leftovers(owner=os.getpid())
    with pytest.raises(SlurmStartError, match="COURSE_NO_SLURM"):
        SlurmCluster(2).start()
    assert leftovers(owner=os.getpid()) == before


# --------------------------------------------------------------------------------------------
# Clean-up without Slurm: processes that name the folder, their children, the folder
# --------------------------------------------------------------------------------------------
def _fake_cluster(tmp_path: Path, owner: str) -> tuple[Path, subprocess.Popen[bytes]]:
    """A folder named like a cluster's, and a "daemon" that names it in its environment and
    has a child that does not (as slurmstepd's job steps)."""
    root = tmp_path / f"{slurm.PREFIX}{owner}-abc"
    root.mkdir()
    daemon = subprocess.Popen(["bash", "-c", "sleep 300 & wait"], env={**os.environ, "SLURM_CONF": f"{root}/slurm.conf"},
                              start_new_session=True)
    deadline = time.monotonic() + 10
    while len(cluster_processes(root)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(cluster_processes(root)) == 2  # bash and its sleep
    return root, daemon


def test_remove_cluster_kills_what_names_the_folder_and_its_children(tmp_path):
    root, daemon = _fake_cluster(tmp_path, "1-1")
    remove_cluster(root)
    assert daemon.wait(timeout=10) == -signal.SIGKILL
    assert cluster_processes(root) == [] and not root.exists()
    remove_cluster(root)  # idempotent


def test_reap_orphans_removes_dead_owners_clusters_only(tmp_path, monkeypatch):
    monkeypatch.setattr(slurm.tempfile, "gettempdir", lambda: str(tmp_path))
    dead_root, dead_daemon = _fake_cluster(tmp_path, "999999999-1")  # no such pid
    live_root, live_daemon = _fake_cluster(tmp_path, owner_tag())
    try:
        assert reap_orphans() == [dead_root]
        assert dead_daemon.wait(timeout=10) == -signal.SIGKILL and not dead_root.exists()
        assert live_root.exists() and live_daemon.poll() is None
        assert leftovers(owner=os.getpid()) == [live_root]
    finally:
        remove_cluster(live_root)


# --------------------------------------------------------------------------------------------
# A real cluster
# --------------------------------------------------------------------------------------------
def _assert_nothing_left(root: Path, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while (root.exists() or cluster_processes(root)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cluster_processes(root) == []
    assert not (root / "munge" / "munge.socket").exists()
    assert not root.exists()


NETWORK = [False, pytest.param(True, marks=pytest.mark.skipif(
    netns.network_problem() is not None, reason=f"no network namespaces here: {netns.network_problem()}"))]


@needs_slurm
@pytest.mark.slow
def test_named_nodes_keep_slurms_order_and_nothing_is_left():
    """Notebook 11 §5: nodes node9, node10 (string order is not Slurm's); its clean-up, checked here."""
    with SlurmCluster(["node9", "node10"], network=False) as cluster:
        root = cluster.root
        assert cluster.node_states() == {"node9": "idle", "node10": "idle"}
        result = cluster.run(["srun", "-N", "2", "-n", "2", "bash", "-c",
                              "echo $SLURM_PROCID $SLURMD_NODENAME $SLURM_STEP_NODELIST"], timeout=60)
        assert sorted(result.stdout.splitlines()) == ["0 node9 node[9-10]", "1 node10 node[9-10]"], result.tail()
    assert not root.exists() and slurm.cluster_processes(root) == []
    _assert_nothing_left(root)
    assert leftovers(owner=os.getpid()) == []


@needs_slurm
@pytest.mark.slow
@pytest.mark.parametrize("network", NETWORK, ids=["loopback", "namespaces"])
def test_srun_runs_on_both_nodes_and_nothing_is_left(network):
    with SlurmCluster(2, network=network) as cluster:
        root = cluster.root
        assert (cluster.label == slurm.NETNS_LABEL) == network
        assert (root / "munge" / "munge.socket").is_socket()
        assert cluster.node_states() == {"node1": "idle", "node2": "idle"}
        where = cluster.run(["srun", "-N", "2", "bash", "-c", "echo $SLURMD_NODENAME $(hostname -I)"])
        this_machine = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.strip()
        expected = [f"{n} {cluster.address(n) if network else this_machine}" for n in cluster.nodes]
        assert sorted(line.strip() for line in where.stdout.splitlines()) == expected, where
        result = cluster.run(["srun", "-N", "2", "-n", "4", "bash", "-c",
                              "echo $SLURM_PROCID $SLURMD_NODENAME $SLURM_STEP_NODELIST $SLURM_STEP_TASKS_PER_NODE"],
                             timeout=60)
        assert result.ok, result.tail()
        lines = sorted(result.stdout.splitlines())
        assert lines == [f"{rank} node{1 + rank // 2} node[1-2] 2(x2)" for rank in range(4)], lines
        assert sorted(cluster.run(["srun", "-N", "2", "hostname"]).stdout.split()) == [cluster.hostname] * 2
        tmp = cluster.run(["srun", "-N", "1", "python3", "-c", "import tempfile; print(tempfile.gettempdir())"])
        assert tmp.stdout.strip() == str(root / "tmp"), tmp  # a job's temporary files: removed with the cluster
        sacct = cluster.run(["sacct", "-c", "-n", "-P", "-o", "jobid,state,nnodes"])
        assert sacct.stdout.split() == ["1|COMPLETED|2", "2|COMPLETED|2", "3|COMPLETED|2", "4|COMPLETED|1"], sacct.stdout + sacct.stderr
    assert cluster.root is None
    _assert_nothing_left(root)
    assert leftovers(owner=os.getpid()) == [] and netns.leftovers(owner=os.getpid()) == []


@needs_slurm
@pytest.mark.slow
def test_a_daemon_that_fails_to_start_is_reported_and_everything_removed(monkeypatch):
    real = slurm.slurm_conf
    monkeypatch.setattr(slurm, "slurm_conf", lambda *a, **kw: real(*a, **kw).replace("cons_tres", "no_such_plugin"))
    with pytest.raises(SlurmStartError, match="slurmctld") as failed:
        SlurmCluster(2, start_timeout=30).start()
    assert "no_such_plugin" in str(failed.value)
    assert leftovers(owner=os.getpid()) == []


CREATOR = """
import sys, time
from infra.slurm import SlurmCluster
cluster = SlurmCluster(2).start()
job = cluster.run(["sbatch", "-N", "2", "-o", "/dev/null", "--wrap", "srun sleep 300"], cwd=cluster.root)
assert job.ok, job.stderr
deadline = time.monotonic() + 30
while cluster.run(["squeue", "-h", "-s", "-o", "%i"]).stdout.split().count("1.0") == 0:  # the step runs
    assert time.monotonic() < deadline, "the job step did not start"
    time.sleep(0.1)
print(cluster.root, flush=True)
if sys.argv[1] == "fail":
    with cluster:
        raise SystemExit("failed on purpose")
time.sleep(300)
"""


@needs_slurm
@pytest.mark.slow
@pytest.mark.parametrize("how", ["fail", "ctrl-c", "sigterm", "sigkill"])
def test_the_creator_leaves_nothing_behind_even_with_a_job_running(how):
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CREATOR), "fail" if how == "fail" else "wait"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        root = Path(proc.stdout.readline().strip())
        assert re.search(rf"/{slurm.PREFIX}{proc.pid}-", str(root)), proc.stderr.read() if proc.poll() is not None else root
        deadline = time.monotonic() + 30  # the step is registered before its tasks run
        while len([pid for pid in cluster_processes(root) if _name(pid) == "sleep"]) < 2 and how != "fail":
            assert time.monotonic() < deadline, "the job's step is not running on both nodes"
            time.sleep(0.1)
    except BaseException:
        proc.kill()  # its guardian removes the cluster; it would otherwise wait 300 s
        raise
    # "fail" stops the cluster right after printing its folder: its steps may be gone already
    if how == "ctrl-c":
        proc.send_signal(signal.SIGINT)  # KeyboardInterrupt: atexit stops the cluster
    elif how == "sigterm":
        proc.send_signal(signal.SIGTERM)  # no Python clean-up at all: the watchdog's job
    elif how == "sigkill":
        proc.kill()
    proc.wait(timeout=30)
    _assert_nothing_left(root)
    deadline = time.monotonic() + 15
    while netns.leftovers(owner=proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert netns.leftovers(owner=proc.pid) == []


def _stepds() -> dict[int, str]:
    """Every slurmstepd on this machine: ``{pid: its network namespace}``."""
    found = {}
    for proc in psutil.process_iter(["name"]):
        if (proc.info["name"] or "").startswith("slurmstepd"):
            with contextlib.suppress(OSError):
                found[proc.pid] = os.readlink(f"/proc/{proc.pid}/ns/net")
    return found


def _runs_sleep(cluster: SlurmCluster, node: str) -> bool:
    """Whether the job step ``sleep`` runs on ``node`` (processes may end while we look)."""
    for pid in cluster.node_processes(node):
        with contextlib.suppress(psutil.Error):
            if psutil.Process(pid).name() == "sleep":
                return True
    return False


def _name(pid: int) -> str:
    """The process's name, "" if it ended while we looked."""
    try:
        return psutil.Process(pid).name()
    except psutil.Error:
        return ""


def _dead(pid: int) -> bool:
    """Gone, or a zombie not yet reaped by its parent (init, for a slurmstepd)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@needs_slurm
@pytest.mark.slow
@pytest.mark.parametrize("network", NETWORK, ids=["loopback", "namespaces"])
def test_kill_node_kills_everything_on_it_and_start_node_brings_it_back(network):
    with SlurmCluster(2, network=network) as cluster:
        before = set(_stepds())
        job = cluster.run(["sbatch", "-N", "2", "-o", "/dev/null", "--wrap", "srun sleep 300"], cwd=cluster.root)
        assert job.ok, job.stderr
        deadline = time.monotonic() + 30
        while not all(_runs_sleep(cluster, n) for n in cluster.nodes):
            assert time.monotonic() < deadline, "the job step did not start on both nodes"
            time.sleep(0.1)
        on_node2 = cluster.node_processes("node2")
        stepds = {pid for pid in _stepds() if pid not in before and pid in on_node2}
        assert stepds, "slurmstepd of node2 not found (it overwrites its environment; found through its task)"
        assert set(on_node2).isdisjoint(cluster.node_processes("node1"))  # each process on one node
        cluster.kill_node("node2")
        assert cluster.node_processes("node2") == [] and all(_dead(pid) for pid in on_node2)
        assert _runs_sleep(cluster, "node1")
        down = cluster.run(["scontrol", "update", "nodename=node2", "state=down", "reason=test"])
        assert down.ok, down.stderr
        assert cluster.node_states()["node2"].startswith("down")
        cluster.start_node("node2")  # ReturnToService=2: usable again once its slurmd registers
        with pytest.raises(RuntimeError, match="running already"):
            cluster.start_node("node2")
        cluster.run(["scancel", "1"])
        cluster.wait_idle(60)
        root = cluster.root
    _assert_nothing_left(root)


@needs_slurm
def test_kill_node_and_start_node_refuse_unknown_nodes():
    with SlurmCluster(1, network=False) as cluster:
        for method in (cluster.kill_node, cluster.start_node, cluster.node_processes):
            with pytest.raises(KeyError, match="no node 'node9'"):
                method("node9")


@pytest.mark.slow
def test_notebook_11_without_slurm_says_why_in_one_line_and_runs_to_the_end(monkeypatch, tmp_path):
    """Where no cluster can start (no root, no Slurm, macOS: ``COURSE_NO_SLURM=1`` stands in),
    the setup prints one line and every other cell runs without failing. It runs in a folder of
    its own: its ``%%writefile`` cells must not rewrite the programs of a notebook 11 running
    beside it."""
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    monkeypatch.setenv("COURSE_NO_SLURM", "1")
    monkeypatch.setenv("COURSE_SMOKE", "1")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    notebook = nbformat.read(ROOT / "notebooks" / "11_slurm_cluster.ipynb", as_version=4)
    (tmp_path / "programs").mkdir()
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()  # raises on a failing cell
    printed = [line for cell in notebook.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
               if out.get("name") == "stdout" for line in out["text"].splitlines()]
    said = [line for line in printed if line.startswith("Slurm:")]
    assert said == ["Slurm: COURSE_NO_SLURM is set, so no Slurm cluster is started"], said
    assert any(line.startswith("(not run: COURSE_NO_SLURM") for line in printed)  # the commands shown, not run


@needs_slurm
@pytest.mark.slow
def test_stopping_a_cluster_leaves_no_slurmstepd_and_two_clusters_keep_their_nodes_apart():
    """slurmstepd hides its environment behind its title: it is found by its open files. Killing
    node2 of one cluster leaves node2 of another alone."""
    with SlurmCluster(2, network=False) as one, SlurmCluster(2, network=False) as two:
        for cluster in (one, two):
            job = cluster.run(["sbatch", "-N", "2", "-o", "/dev/null", "--wrap", "srun sleep 300"], cwd=cluster.root)
            assert job.ok, job.stderr
        deadline = time.monotonic() + 30
        while not all(_runs_sleep(c, n) for c in (one, two) for n in c.nodes):
            assert time.monotonic() < deadline, "the job steps did not start"
            time.sleep(0.1)
        stepds = {c: [p for p in cluster_processes(c.root) if _name(p).startswith("slurmstepd")] for c in (one, two)}
        assert all(len(found) >= 3 for found in stepds.values()), stepds  # batch, and one step per node
        one.kill_node("node2")
        assert _runs_sleep(two, "node2") and two.node_processes("node2")
        root = one.root
        one.stop()
        _assert_nothing_left(root)
        assert all(_dead(pid) for pid in stepds[one]) and not any(_dead(pid) for pid in stepds[two])
