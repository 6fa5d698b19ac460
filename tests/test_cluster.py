"""Tests for infra.cluster: local launcher, device assignment, clean-up, PS cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from infra import cluster as uc
from infra import watchdog
from infra.cluster import (
    ClusterTimeoutError,
    LocalCluster,
    WorkerFailedError,
    free_ports,
    port_is_free,
    run_workers,
)
from utils.devices import GpuInfo
from utils.tfconfig import parse_task, parse_tf_config

ROOT = Path(__file__).resolve().parent.parent


# ---- the tasks: tests/workers/cluster_task.py BEHAVIOUR ------------------------------------
TASK = ROOT / "tests" / "workers" / "cluster_task.py"


def _alive(pid: int) -> bool:
    """True if pid runs (zombies waiting for a reaper count as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _grandchildren(logs: dict[str, str]) -> list[int]:
    return [
        int(line.split()[1])
        for text in logs.values()
        for line in text.splitlines()
        if line.startswith("grandchild ")
    ]


def _assert_all_gone(cluster: LocalCluster, extra_pids: list[int] = ()) -> None:
    deadline = time.monotonic() + 5
    pids = [*cluster.pids, *extra_pids]
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)], "a task or one of its children survived"
    assert all(port_is_free(p) for p in cluster.ports)
    assert cluster.stop not in watchdog._LIVE.values()  # nothing left for atexit to stop


# ---- ports --------------------------------------------------------------------------------
def test_free_ports_are_distinct_and_free():
    ports = free_ports(5)
    assert len(set(ports)) == 5
    assert all(port_is_free(p) for p in ports)
    assert free_ports(0) == []
    with pytest.raises(ValueError):
        free_ports(-1)


def test_port_is_free_sees_a_listening_socket():
    import socket

    with socket.socket() as s:
        s.bind(("localhost", 0))
        s.listen(1)
        assert not port_is_free(s.getsockname()[1])


# ---- TF_CONFIG ----------------------------------------------------------------------------
# ---- local launcher -----------------------------------------------------------------------
def test_run_workers_reports_and_cleans_up(capsys):
    cluster = LocalCluster(TASK, 3, args=["ok", 7], stream=True, timeout=60)
    with cluster:
        result = cluster.wait()
    assert [t.returncode for t in result.tasks] == [0, 0, 0]
    assert result.reports == [{"index": i, "value": 7, "task": f"worker:{i}"} for i in range(3)]
    assert result.chief.name == "worker:0" and "hello from worker 0" in result.chief.log
    assert "noise" in result.chief.log and "noise" not in result.chief.output
    assert result.chief.output == "hello from worker 0"
    assert len(result.cluster["worker"]) == 3
    out = capsys.readouterr().out
    assert "[worker 2] hello from worker 2" in out and "RESULT " not in out and "noise" not in out
    for task, tf_config in cluster.tf_configs.items():
        assert parse_tf_config(tf_config) == (result.cluster, *parse_task(task))
    _assert_all_gone(cluster)


def test_run_workers_with_chief():
    result = run_workers(TASK, tasks={"chief": 1, "worker": 1}, args=["ok", 1], timeout=60)
    assert [t.name for t in result.tasks] == ["chief:0", "worker:0"]
    assert result.chief.name == "chief:0" and result.chief.output == "hello from chief 0"


def test_env_and_task_env():
    result = run_workers(
        TASK, 2, args=["env"], env={"SHARED": "s", "COLOR": "grey"}, task_env={"worker:1": {"COLOR": "red"}}
    )
    assert result.reports == [{"color": "grey", "shared": "s"}, {"color": "red", "shared": "s"}]
    with pytest.raises(ValueError, match="not in the cluster"):
        LocalCluster(TASK, 2, args=["env"], task_env={"worker:2": {}})


@pytest.mark.parametrize(
    ("n_gpus", "visible", "expected"),
    [(0, None, ["-1", "-1"]), (1, None, ["0", "0"]), (2, None, ["0", "1"]), (4, "3,5,6,7", ["3", "5"])],
)
def test_workers_get_the_devices_of_the_plan(monkeypatch, n_gpus, visible, expected):
    """Faked GPUs in the launcher: each worker process sees its own CUDA_VISIBLE_DEVICES."""
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    fake = [GpuInfo("Tesla T4", 15360)] * n_gpus
    result = run_workers(TASK, 2, args=["assigned-devices"], gpus=fake, timeout=60)
    assert [r["cuda"] for r in result.reports] == expected
    assert [r["task"] for r in result.reports] == ["worker:0", "worker:1"]
    assert {r["growth"] for r in result.reports} == {"true"}
    collective = {0: "RING", 1: "RING", 2: "NCCL", 4: "NCCL"}[n_gpus]  # shared GPU: never NCCL
    assert {r["collective"] for r in result.reports} == {collective}


def test_task_env_wins_over_the_plan():
    result = run_workers(TASK, 2, args=["assigned-devices"], gpus=[GpuInfo("T4", 15360)] * 2, task_env={"worker:1": {"CUDA_VISIBLE_DEVICES": "-1"}})
    assert [r["cuda"] for r in result.reports] == ["0", "-1"]


def test_script_target(tmp_path):
    script = tmp_path / "w.py"
    script.write_text("import os, sys\nprint('args', sys.argv[1:], os.environ['COURSE_TASK'])\n")
    result = run_workers(script, 2, args=["--steps", 3], timeout=60)
    assert "args ['--steps', '3'] worker:1" in result["worker:1"].log
    with pytest.raises(FileNotFoundError):
        run_workers(tmp_path / "missing.py", 1)


def test_crashing_worker_is_reported_and_everything_stops(tmp_path):
    cluster = LocalCluster(TASK, 2, args=["crashing", tmp_path / "worker-0-ready"], timeout=60, tail_lines=5)
    with pytest.raises(WorkerFailedError) as info:
        cluster.wait()
    err = info.value
    assert err.task == "worker:1" and err.returncode == 1
    assert "ValueError: boom in worker 1" in err.tail and len(err.tail.splitlines()) == 5
    assert "exited with code 1" in str(err) and "boom" in str(err)
    grandchildren = _grandchildren(err.logs)
    assert len(grandchildren) == 2
    _assert_all_gone(cluster, grandchildren)


def test_timeout_stops_hanging_workers():
    cluster = LocalCluster(TASK, 2, args=["hanging"], timeout=6)  # time enough to start and print, even under load
    t0 = time.monotonic()
    with pytest.raises(ClusterTimeoutError) as info:
        cluster.wait()
    assert time.monotonic() - t0 < 25
    assert info.value.running == ["worker:0", "worker:1"]
    assert "worker worker:1 waiting" in str(info.value)
    _assert_all_gone(cluster, _grandchildren(info.value.logs))


def test_a_killed_task_leaves_no_temporary_file():
    with LocalCluster(TASK, 2, args=["temp-file"], timeout=60) as cluster:
        for task in ("worker:0", "worker:1"):
            cluster.wait_for_output(task, "temp file", timeout=60)
        files = [Path(line.split()[-1]) for line in cluster.logs()["worker:0"].splitlines() if "temp file" in line]
        assert files and files[0].is_file() and files[0].parent != Path(tempfile.gettempdir())
    assert not files[0].exists() and not files[0].parent.exists()


def test_wait_for_output_then_time_the_hang():
    with LocalCluster(TASK, 2, args=["hanging"], timeout=60) as cluster:
        cluster.wait_for_output("worker:1", "waiting", timeout=60)
        assert "worker worker:1 waiting" in cluster.logs()["worker:1"]
        t0 = time.monotonic()
        with pytest.raises(ClusterTimeoutError) as info:
            cluster.wait(timeout=1)
        assert 1 <= time.monotonic() - t0 < 15
    _assert_all_gone(cluster, _grandchildren(info.value.logs))


def test_wait_for_output_that_never_comes_stops_the_cluster():
    cluster = LocalCluster(TASK, 2, args=["hanging"], timeout=60)
    with pytest.raises(ClusterTimeoutError) as info:
        cluster.wait_for_output("worker:0", "a line it never writes", timeout=2)
    assert info.value.running == ["worker:0", "worker:1"]
    _assert_all_gone(cluster, _grandchildren(info.value.logs))
    unstarted = LocalCluster(TASK, 1, args=["hanging"])
    with pytest.raises(ValueError, match="no task 'ps:0'"):
        unstarted.wait_for_output("ps:0", "x")
    assert unstarted.pids == []  # a bad name starts nothing


def test_wait_for_output_after_a_fault_made_on_purpose():
    with LocalCluster(TASK, 2, args=["survivor"], timeout=60) as cluster, pytest.raises(WorkerFailedError):
        cluster.wait_for_output("worker:0", "noticed", timeout=60)  # worker 1's failure comes first
    with LocalCluster(TASK, 2, args=["survivor"], timeout=60) as cluster:
        waited = cluster.wait_for_output("worker:0", "noticed", timeout=60, failures_expected=True)
        assert "boom in worker 1" in cluster.logs()["worker:1"]
    assert 3 <= waited < 30
    _assert_all_gone(cluster)


def test_wait_for_output_ends_when_the_task_ended_without_the_line():
    with LocalCluster(TASK, 2, args=["crashing-survivor"], timeout=60) as cluster:
        waited = cluster.wait_for_output("worker:0", "noticed", timeout=60, failures_expected=True)
        assert cluster.exit_code("worker:0") == 134 and cluster.exit_code("worker:1") == 1
    assert 2 <= waited < 30  # not the whole timeout
    _assert_all_gone(cluster)
    cluster = LocalCluster(TASK, 1, args=["quiet"], timeout=60)
    t0 = time.monotonic()
    with pytest.raises(WorkerFailedError, match="exited with code 0") as info:
        cluster.wait_for_output("worker:0", "a line it never writes", timeout=60)
    assert time.monotonic() - t0 < 30 and "done, without" in info.value.tail


def test_sigterm_ignoring_worker_is_killed():
    cluster = LocalCluster(TASK, 1, args=["sigterm-ignoring"], timeout=60, grace=0.5)
    cluster.wait_for_output("worker:0", "ignoring SIGTERM", timeout=60)  # its handler is in place
    with pytest.raises(ClusterTimeoutError):
        cluster.wait(timeout=1)
    _assert_all_gone(cluster)
    assert "ignoring SIGTERM" in cluster.logs()["worker:0"]


def test_keyboard_interrupt_stops_workers():
    cluster = LocalCluster(TASK, 2, args=["hanging"], timeout=60)
    cluster.start()
    timer = threading.Timer(1.5, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            cluster.wait()
    finally:
        timer.cancel()
    _assert_all_gone(cluster, _grandchildren(cluster.logs()))


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux-only")
def test_workers_and_folder_go_when_the_launcher_is_killed(tmp_path):
    launcher = tmp_path / "launcher.py"
    launcher.write_text(
        textwrap.dedent(
            """
            import sys, time
            sys.path.insert(0, sys.argv[1])
            from infra.cluster import LocalCluster
            cluster = LocalCluster("tests/workers/cluster_task.py", 2, args=["sleeper"]).start()
            print(" ".join(map(str, cluster.pids)), flush=True)
            time.sleep(300)
            """
        )
    )
    # the launcher's log directory goes inside tmp_path, where the test can see it go
    env = dict(os.environ, TMPDIR=str(tmp_path))
    parent = subprocess.Popen(
        [sys.executable, str(launcher), str(ROOT)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        assert len(list(tmp_path.glob("course-cluster-*"))) == 1
    finally:
        parent.kill()  # SIGKILL: no finally/atexit runs in the launcher
        parent.wait()
        parent.stdout.close()
    deadline = time.monotonic() + 10
    while (any(_alive(p) for p in pids) or list(tmp_path.glob("course-cluster-*"))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)
    assert list(tmp_path.glob("course-cluster-*")) == [], "the guardian (infra.watchdog.Lifetime) removes the folder"


def test_context_manager_stops_on_exception_in_block():
    with pytest.raises(RuntimeError, match="in the block"):
        with LocalCluster(TASK, 1, args=["hanging"]) as cluster:
            raise RuntimeError("in the block")
    _assert_all_gone(cluster)


def test_bad_arguments():
    with pytest.raises(ValueError, match="at least one worker"):
        LocalCluster(TASK, tasks={"ps": 1})
    with pytest.raises(ValueError, match="not one of"):
        LocalCluster(TASK, tasks={"boss": 1})


# ---- in-process parameter-server cluster (needs TensorFlow: run in a fresh interpreter) ---
@pytest.mark.slow
def test_in_process_ps_cluster_runs_coordinator_steps():
    code = textwrap.dedent(
        """
        import tensorflow as tf
        from infra.cluster import start_in_process_ps_cluster
        resolver = start_in_process_ps_cluster(num_workers=2, num_ps=1)
        spec = resolver.cluster_spec().as_dict()
        assert len(spec["worker"]) == 2 and len(spec["ps"]) == 1, spec
        strategy = tf.distribute.ParameterServerStrategy(resolver)
        with strategy.scope():
            v = tf.Variable(0.0)
        assert "/job:ps/" in v.device, v.device
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

        @tf.function
        def step():
            return strategy.run(lambda: v.assign_add(1.0))

        for _ in range(6):
            coordinator.schedule(step)
        coordinator.join()
        assert float(v.numpy()) == 6.0
        print("OK")
        """
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=240
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("OK"), out.stderr[-3000:]


def test_in_process_ps_cluster_argument_checks():
    with pytest.raises(ValueError, match="at least one worker and one ps"):
        uc.start_in_process_ps_cluster(num_workers=0)


# ---- the worker scripts of docs/cluster.md ------------------------------------------------
@pytest.mark.slow
def test_mwms_minimal_script_two_local_workers(tmp_path):
    out = tmp_path / "chief.json"
    result = run_workers(
        "scripts/mwms_minimal.py",
        2,
        args=["--steps", 4, "--implementation", "RING", "--out", out],
        timeout=240,
    )
    shas = {r["sha256"] for r in result.reports}
    assert len(shas) == 1, "both workers end with identical weights"
    assert [r["task"] for r in result.reports] == ["worker:0", "worker:1"]
    losses = result.reports[0]["losses"]
    assert len(losses) == 4 and losses[-1] < losses[0]
    assert json.loads(out.read_text())["sha256"] in shas, "the chief wrote its summary"
    assert "2 replicas in sync" in result["worker:1"].output


@pytest.mark.slow
def test_slurm_cluster_resolver_reads_slurm_variables():
    """What docs/cluster.md says SlurmClusterResolver does with srun's variables."""
    code = (
        "import json, os, tensorflow as tf\n"
        "r = tf.distribute.cluster_resolver.SlurmClusterResolver(port_base=8888, gpus_per_node=2)\n"
        "print(json.dumps([r.cluster_spec().as_dict(), r.task_type, r.task_id, "
        "os.environ['CUDA_VISIBLE_DEVICES']]))\n"
    )
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="3",
        SLURM_PROCID="1",
        SLURM_STEP_NUM_TASKS="4",
        SLURM_STEP_NODELIST="node[1-2]",
        SLURM_STEP_TASKS_PER_NODE="2(x2)",
    )
    env.pop("CUDA_VISIBLE_DEVICES", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    spec, task_type, task_id, cuda = json.loads(out.stdout.strip().splitlines()[-1])
    assert spec == {"worker": ["node1:8888", "node1:8889", "node2:8888", "node2:8889"]}
    assert (task_type, task_id, cuda) == ("worker", 1, "1")


@pytest.mark.slow
def test_ps_server_script_serves_a_coordinator():
    coordinator = textwrap.dedent(
        """
        import json, os, sys
        os.environ["GRPC_FAIL_FAST"] = "use_caller"
        import tensorflow as tf
        spec = tf.train.ClusterSpec(json.loads(sys.argv[1]))
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(spec, rpc_layer="grpc")
        strategy = tf.distribute.ParameterServerStrategy(resolver)
        with strategy.scope():
            v = tf.Variable(0.0)
        assert "/job:ps/" in v.device
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

        @tf.function
        def step():
            return strategy.run(lambda: v.assign_add(1.0))

        for _ in range(5):
            coordinator.schedule(step)
        coordinator.join()
        print("OK", float(v.numpy()), flush=True)
        os._exit(0)  # don't wait for the coordinator's threads at interpreter exit
        """
    )
    with LocalCluster("scripts/ps_server.py", tasks={"worker": 2, "ps": 1}, timeout=None) as cluster:
        env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
        out = subprocess.run(
            [sys.executable, "-c", coordinator, json.dumps(cluster.cluster)],
            capture_output=True,
            text=True,
            env=env,
            timeout=240,
        )
        logs = cluster.logs()
    assert out.returncode == 0 and out.stdout.strip().endswith("OK 5.0"), out.stderr[-3000:]
    assert "ps 0 serving at grpc://localhost:" in logs["ps:0"]
    _assert_all_gone(cluster)
