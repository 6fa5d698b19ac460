"""Notebook 02 §6's own launcher, ``start_workers`` and ``wait_for``, as the student reads it.

The notebook once asserted, after its runs, that the workers were gone and their ports free
(issue 45 moved these checks of the course's clean-up out of the lesson). Here the two helpers
are taken from the notebook's cells and run on tiny worker programs: each worker gets its own
``TF_CONFIG`` and its output comes back; a worker that hangs (as one waiting in a collective for a
peer that crashed) or a Ctrl-C while waiting leaves no worker running and the ports free.
(``infra.cluster.LocalCluster``, used from notebook 04 on: tests/test_cluster.py.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from infra.cluster import free_ports, port_is_free
from utils import config

NOTEBOOK = config.PROJECT_ROOT / "notebooks" / "02_strategy_apis.ipynb"

# A worker as in §6, without TensorFlow: it listens on its TF_CONFIG address (as a gRPC server
# does), prints who it is and a RESULT line; with "crash-or-hang", worker 1 fails at once and
# worker 0 waits forever for it, as in a collective.
WORKER = """\
import json, os, socket, sys, time
task = json.loads(os.environ["TF_CONFIG"])["task"]
cluster = json.loads(os.environ["TF_CONFIG"])["cluster"]
server = socket.socket()
server.bind(("localhost", int(cluster["worker"][task["index"]].rsplit(":", 1)[1])))
server.listen()
print(f"worker {task['index']} listening", flush=True)
if sys.argv[1] == "crash-or-hang":
    if task["index"] == 1:
        raise RuntimeError("worker 1 ran out of memory (simulated)")
    time.sleep(600)
print("RESULT", json.dumps({"index": task["index"], "cuda": os.environ["CUDA_VISIBLE_DEVICES"]}))
"""


def _cell(start: str) -> str:
    cells = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    hits = [c for c in cells if c.startswith(start)]
    assert len(hits) == 1, f"expected one cell starting with {start!r} in {NOTEBOOK.name}, found {len(hits)}"
    return hits[0]


@pytest.fixture
def nb02(tmp_path: Path) -> Iterator[dict]:
    """The namespace of notebook 02 after its cells defining tf_configs, start_workers, wait_for."""
    import sys

    import utils

    namespace = {
        "json": json,
        "os": os,
        "subprocess": subprocess,
        "sys": sys,
        "utils": utils,
        "free_ports": free_ports,
    }
    # the cell that defines tf_configs prints the TF_CONFIGs: run only its definitions
    definitions = _cell("NUM_WORKERS = 2").split("\n\n\nfor tf_config in")[0]
    exec(definitions, namespace)  # noqa: S102 - the notebook's own code
    exec(_cell("def start_workers("), namespace)  # noqa: S102
    notebook_tf_configs, given = namespace["tf_configs"], []

    def tf_configs(num_workers: int) -> list[str]:  # the notebook's, remembered
        given.append(notebook_tf_configs(num_workers))
        return given[-1]

    namespace["tf_configs"], namespace["given"] = tf_configs, given  # one list per start_workers
    notebook_start_workers, started = namespace["start_workers"], []

    def start_workers(*argv: object, env: dict | None = None) -> list[subprocess.Popen]:
        started.extend(notebook_start_workers(*argv, env=env))
        return started[len(started) - len(given[-1]) :]

    namespace["start_workers"] = start_workers
    program = tmp_path / "worker.py"
    program.write_text(WORKER)
    namespace["program"] = program
    yield namespace
    for worker in started:  # a failed test leaves nothing either
        worker.kill()
        worker.wait()


def _ports(tf_config: str) -> list[int]:
    return [int(a.rsplit(":", 1)[1]) for a in json.loads(tf_config)["cluster"]["worker"]]


def _assert_stopped(workers: list[subprocess.Popen], ports: list[int]) -> None:
    deadline = time.monotonic() + 5
    while any(w.poll() is None for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [w.poll() is None for w in workers] == [False] * len(workers), "a worker outlived wait_for"
    assert all(port_is_free(p) for p in ports), "a worker's port is still taken"


def _wait_until_listening(workers: list[subprocess.Popen], ports: list[int]) -> None:
    deadline = time.monotonic() + 15  # Python's start-up, under load
    while any(port_is_free(p) for p in ports) and time.monotonic() < deadline:
        assert all(w.poll() is None for w in workers), "a worker ended before listening"
        time.sleep(0.05)
    assert not any(port_is_free(p) for p in ports), "a worker did not start listening"


def test_wait_for_reads_each_worker_and_leaves_none(nb02: dict) -> None:
    workers = nb02["start_workers"](nb02["program"], "ok")
    tf_configs = [json.loads(c) for c in nb02["given"][-1]]
    outputs = nb02["wait_for"](workers, timeout=60)
    results = [nb02["result"](output) for output in outputs]
    assert results == [{"index": 0, "cuda": ""}, {"index": 1, "cuda": ""}]  # CPU only, own task each
    assert [c["task"] for c in tf_configs] == [{"type": "worker", "index": i} for i in (0, 1)]
    assert tf_configs[0]["cluster"] == tf_configs[1]["cluster"]  # one cluster for both
    ports = _ports(nb02["given"][-1][0])
    assert [w.returncode for w in workers] == [0, 0]
    _assert_stopped(workers, ports)


def test_wait_for_stops_every_worker_when_one_hangs(nb02: dict) -> None:
    """Worker 1 crashes, worker 0 waits for it: the timeout ends both, ports free, error readable."""
    workers = nb02["start_workers"](nb02["program"], "crash-or-hang")
    ports = _ports(nb02["given"][-1][0])
    _wait_until_listening(workers[:1], ports[:1])
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        nb02["wait_for"](workers, timeout=3)
    assert time.monotonic() - t0 < 15
    _assert_stopped(workers, ports)
    assert workers[1].returncode == 1 and workers[0].returncode == -signal.SIGKILL
    crashed = workers[1].stdout.read()
    assert "out of memory" in crashed
    with pytest.raises(RuntimeError, match="the worker failed"):
        nb02["result"](crashed)


def test_wait_for_stops_every_worker_on_ctrl_c(nb02: dict) -> None:
    """Jupyter's stop button (SIGINT) while waiting: KeyboardInterrupt, and no worker left."""
    workers = nb02["start_workers"](nb02["program"], "crash-or-hang")
    ports = _ports(nb02["given"][-1][0])
    _wait_until_listening(workers[:1], ports[:1])
    timer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            nb02["wait_for"](workers, timeout=60)
    finally:
        timer.cancel()
    _assert_stopped(workers, ports)
