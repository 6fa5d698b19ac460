"""The tasks the tests start on local clusters (infra.cluster, infra.netns), one behaviour each::

    python tests/workers/cluster_task.py BEHAVIOUR [ARGUMENT]

``ok VALUE`` prints a line, a TensorFlow-style log line and reports; ``crashing READY_FILE``:
worker 1 starts a grandchild and raises once worker 0 has started its own (``READY_FILE``
exists), worker 0 hangs as in a collective; ``hanging``, ``temp-file``, ``survivor``,
``crashing-survivor``, ``quiet``, ``sigterm-ignoring``, ``sleeper``, ``env``, ``assigned-devices`` and
``where-am-i`` (its TF_CONFIG address and its card's addresses), ``mwms-on-shared-gpu ORDER``
(tests/test_rehearsal.py): see each function.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from infra.process import report


def grandchild() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    print(f"grandchild {child.pid}", flush=True)


def ok(value: str) -> None:
    cfg = json.loads(os.environ["TF_CONFIG"])
    print(f"hello from {cfg['task']['type']} {cfg['task']['index']}")
    print("I0000 00:00:1795321238.889626    9384 cudart_stub.cc:31] noise")
    report(index=cfg["task"]["index"], value=int(value), task=os.environ["COURSE_TASK"])


def crashing(ready_file: str) -> None:
    grandchild()
    if os.environ["COURSE_TASK"] == "worker:0":
        open(ready_file, "w").close()
        time.sleep(300)
    deadline = time.monotonic() + 60
    while not os.path.exists(ready_file) and time.monotonic() < deadline:
        time.sleep(0.05)
    for i in range(30):
        print(f"line {i}")
    raise ValueError("boom in worker 1")


def hanging() -> None:
    grandchild()
    print(f"worker {os.environ['COURSE_TASK']} waiting", flush=True)
    time.sleep(300)


def temp_file() -> None:
    with tempfile.NamedTemporaryFile(prefix="__autograph_generated_file", delete=False) as f:
        print(f"temp file {f.name}", flush=True)  # as TensorFlow's autograph leaves them
    time.sleep(300)


def survivor() -> None:
    """Worker 1 fails at once; worker 0 writes its line 3 s later (a survivor noticing a fault)."""
    if os.environ["COURSE_TASK"] == "worker:1":
        raise ValueError("boom in worker 1")
    time.sleep(3)
    print("worker 0 noticed", flush=True)
    time.sleep(300)


def crashing_survivor() -> None:
    """Worker 1 fails at once; worker 0 ends 2 s later without its line (a crash, not an exception)."""
    if os.environ["COURSE_TASK"] == "worker:1":
        raise ValueError("boom in worker 1")
    time.sleep(2)
    os._exit(134)


def quiet() -> None:
    print("done, without the awaited line", flush=True)


def sigterm_ignoring() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("ignoring SIGTERM", flush=True)
    time.sleep(300)


def sleeper() -> None:
    time.sleep(300)


def env() -> None:
    report(color=os.environ.get("COLOR"), shared=os.environ.get("SHARED"))


def assigned_devices() -> None:
    from infra import devices

    # what the launcher assigned is checked here, not TensorFlow's TF32 switch: left out, it spares
    # each worker TensorFlow's import (5 s of CPU) where no GPU has to be capped
    devices.exact_float32 = lambda: None
    worker = devices.configure_worker()
    plan = json.loads(os.environ["COURSE_WORKER_DEVICES"])
    report(cuda=os.environ["CUDA_VISIBLE_DEVICES"], growth=os.environ["TF_FORCE_GPU_ALLOW_GROWTH"],
           collective=worker.collective, task=plan["task"])


def where_am_i() -> None:
    cfg = json.loads(os.environ["TF_CONFIG"])
    me = cfg["cluster"][cfg["task"]["type"]][cfg["task"]["index"]]
    cards = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    report(me=me, cards=cards, network=bool(os.environ.get("COURSE_NETWORK")))


def mwms_on_shared_gpu(order: str) -> None:
    """Its devices as the launcher assigned them, then MWMS and one all-reduce; ``order``
    ``initialise-first`` starts TensorFlow's runtime before MWMS (the course's old order)."""
    import tensorflow as tf

    from infra import devices

    worker = devices.configure_worker()
    if order == "initialise-first":
        tf.config.list_logical_devices("GPU")
    try:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(implementation=worker.collective))
    except RuntimeError as error:
        report(error=str(error))
        return
    total = strategy.reduce("SUM", strategy.run(lambda: tf.constant(1.0)), axis=None)
    report(error=None, total=float(total), gpus=len(tf.config.list_physical_devices("GPU")))


if __name__ == "__main__":
    behaviour, *arguments = sys.argv[1:]
    globals()[behaviour.replace("-", "_")](*arguments)
