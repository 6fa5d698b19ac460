"""The GPU rehearsal (infra/rehearsal.py): the same TensorFlow calls in the same order as on GPUs.

The course's GPU branches cannot run on these machines; the rehearsal runs them on the CPU. The
tests check (1) the specification and what a process sees, (2) that applying each device plan
makes the same TensorFlow calls, in the same order, as it would on real GPUs — recorded once
against a stand-in ``tensorflow`` (the GPU path, as the code is written) and once against the
real TensorFlow under the rehearsal — and (3) that a worker sharing a rehearsed GPU creates
``MultiWorkerMirroredStrategy``, while the earlier order of calls fails as it did on a GPU.
"""

from __future__ import annotations

import json
import sys
import textwrap
from types import SimpleNamespace
from typing import Any

import pytest

from infra import devices, rehearsal
from infra.cluster import LocalCluster
from infra.process import run_python
from utils.config import PROJECT_ROOT
from utils.devices import GpuInfo, WorkerDevices, plan_devices

T4 = "1x15360@7.5:Tesla T4"


# -- the specification -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "count", "memory", "capability", "name"),
    [
        (T4, 1, 15360, (7, 5), "Tesla T4"),
        ("3x24576@8.6", 3, 24576, (8, 6), rehearsal.DEFAULT_NAME),
        (" 2 x 81920 : A100 80GB ", 2, 81920, rehearsal.DEFAULT_CAPABILITY, "A100 80GB"),
    ],
)
def test_spec_is_parsed(text: str, count: int, memory: int, capability: tuple[int, int], name: str) -> None:
    gpus = rehearsal.parse_spec(text)
    assert len(gpus) == count and {(g.memory_mb, g.compute_capability, g.name) for g in gpus} == {(memory, capability, name)}


@pytest.mark.parametrize("text", ["", "T4", "0x15360", "2x100", "2x16384@8", "x16384"])
def test_bad_spec_says_what_is_expected(text: str) -> None:
    with pytest.raises(ValueError, match="COUNTxMIB"):
        rehearsal.parse_spec(text)


@pytest.mark.parametrize(("visible", "expected"), [(None, 3), ("1", 1), ("0,2", 2), ("-1", 0), ("", 0), ("0,7,1", 1)])
def test_cuda_visible_devices_is_honoured(monkeypatch: pytest.MonkeyPatch, visible: str | None, expected: int) -> None:
    monkeypatch.setenv(rehearsal.ENV_VAR, "3x24576")
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert len(rehearsal.visible_gpus()) == expected
    assert len(devices.detect_gpus()) == expected  # the device plan sees the same


def test_children_get_the_start_up_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    from infra.process import child_env

    monkeypatch.delenv(rehearsal.ENV_VAR, raising=False)
    assert str(rehearsal.SITE_DIR) not in child_env()["PYTHONPATH"]
    monkeypatch.setenv(rehearsal.ENV_VAR, T4)
    assert child_env()["PYTHONPATH"].split(":")[0] == str(rehearsal.SITE_DIR)


# -- the calls, in order ---------------------------------------------------------------------
class _Recorder:
    """A stand-in ``tensorflow`` with GPUs: records each device call the course makes."""

    def __init__(self, gpus: int) -> None:
        self.calls: list[tuple[str, ...]] = []
        cpu = SimpleNamespace(name="/physical_device:CPU:0", device_type="CPU")
        gpu_list = [SimpleNamespace(name=f"/physical_device:GPU:{i}", device_type="GPU") for i in range(gpus)]
        physical = {"CPU": [cpu], "GPU": gpu_list}

        def record(name: str, result: Any = None) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                self.calls.append((name, *map(_describe, args)))
                return result(*args) if callable(result) else result

            return call

        experimental = SimpleNamespace(set_memory_growth=record("set_memory_growth"),
                                       enable_tensor_float_32_execution=record("enable_tensor_float_32_execution"))
        self.config = SimpleNamespace(
            list_physical_devices=record("list_physical_devices", lambda kind: physical[kind]),
            set_logical_device_configuration=record("set_logical_device_configuration"),
            list_logical_devices=record("list_logical_devices", []),
            LogicalDeviceConfiguration=lambda memory_limit=None: SimpleNamespace(memory_limit=memory_limit),
            experimental=experimental,
        )


def _describe(value: Any) -> str:
    if isinstance(value, list):  # logical device configurations
        return f"{len(value)} x limit {value[0].memory_limit if value else None}"
    return getattr(value, "name", None) or str(value)


_RECORD_REAL = """
import json, sys
import tensorflow as tf
from tensorflow.python.eager import context
from infra import devices
from utils.devices import plan_devices, strategy_devices

calls = []
def wrap(owner, name):
    original = getattr(owner, name)
    def call(*args, **kwargs):
        described = []
        for a in args:
            if isinstance(a, list):
                described.append(f"{len(a)} x limit {a[0].memory_limit if a else None}")
            else:
                described.append(getattr(a, "name", None) or str(a))
        calls.append([name, *described])
        return original(*args, **kwargs)
    setattr(owner, name, call)

for name in ("list_physical_devices", "set_logical_device_configuration", "list_logical_devices"):
    wrap(tf.config, name)
wrap(tf.config.experimental, "set_memory_growth")
ensure = context.Context.ensure_initialized
def ensure_initialized(self):
    if not self._initialized:
        calls.append(["runtime initialised"])
    ensure(self)
context.Context.ensure_initialized = ensure_initialized
{action}
print("CALLS " + json.dumps(calls))
"""


def _real_calls(action: str, env: dict[str, str]) -> list[tuple[str, ...]]:
    child = run_python(_RECORD_REAL.replace("{action}", textwrap.dedent(action)), env=env, timeout=240)
    assert child.ok, child.tail()
    line = next(x for x in child.stdout.splitlines() if x.startswith("CALLS "))
    return [tuple(c) for c in json.loads(line[len("CALLS "):])]


def _gpu_calls(monkeypatch: pytest.MonkeyPatch, gpus: int, action: Any) -> list[tuple[str, ...]]:
    recorder = _Recorder(gpus)
    monkeypatch.setitem(sys.modules, "tensorflow", recorder)
    monkeypatch.setattr(devices, "_applied", None)
    monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", "false")
    action()
    # the stand-in has no runtime: its first list_logical_devices is where TensorFlow starts
    calls, started = [], False
    for call in recorder.calls:
        calls.append(call)
        if call[0] == "list_logical_devices" and not started:
            calls.append(("runtime initialised",))
            started = True
    return calls


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "gpus"), [(T4, 1), ("3x24576@8.6", 3)])
def test_applying_a_plan_makes_the_gpu_calls_in_order(monkeypatch: pytest.MonkeyPatch, spec: str, gpus: int) -> None:
    found = [GpuInfo("GPU", 15360)] * gpus
    plan = plan_devices(found, 2)
    expected = _gpu_calls(monkeypatch, gpus, lambda: devices.apply_plan(plan))
    monkeypatch.undo()
    real = _real_calls(
        "devices.apply_plan(plan_devices(devices.detect_gpus(), 2)); strategy_devices()",
        {rehearsal.ENV_VAR: spec},
    )
    assert real[: len(expected)] == expected, (real, expected)
    assert ("runtime initialised",) in real


@pytest.mark.slow
def test_a_worker_on_a_shared_gpu_does_not_start_the_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    worker_env = WorkerDevices("worker:0", (0,), 6912, shared=True).env(None)
    expected = _gpu_calls(monkeypatch, 1, lambda: _with_env(monkeypatch, worker_env, devices.configure_worker))
    monkeypatch.undo()
    real = _real_calls("devices.configure_worker()", {rehearsal.ENV_VAR: T4, **worker_env})
    assert [c for c in real if c[0] != "enable_tensor_float_32_execution"] == [
        c for c in expected if c[0] != "enable_tensor_float_32_execution"
    ]
    assert ("runtime initialised",) not in real and ("runtime initialised",) not in expected


def _with_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], action: Any) -> None:
    import infra.rehearsal

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(infra.rehearsal, "activate", lambda: False)
    action()


# -- the defect the rehearsal exists for ---------------------------------------------------------


MWMS_TASK = PROJECT_ROOT / "tests" / "workers" / "cluster_task.py"  # mwms-on-shared-gpu ORDER


@pytest.mark.slow
def test_workers_sharing_a_rehearsed_gpu_create_mwms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(rehearsal.ENV_VAR, T4)
    with LocalCluster(MWMS_TASK, 2, args=["mwms-on-shared-gpu", "as-planned"], timeout=240) as cluster:
        assert all(d.shared and d.gpus == (0,) for d in cluster.devices.values())  # one GPU, two workers
        result = cluster.wait()
    assert [r["error"] for r in result.reports] == [None, None]
    assert [r["total"] for r in result.reports] == [2.0, 2.0] and [r["gpus"] for r in result.reports] == [1, 1]


@pytest.mark.slow
def test_the_rehearsal_catches_the_runtime_started_too_early(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(rehearsal.ENV_VAR, T4)
    with LocalCluster(MWMS_TASK, 2, args=["mwms-on-shared-gpu", "initialise-first"], timeout=240) as cluster:
        result = cluster.wait()
    assert all("Collective ops must be configured at program startup" in r["error"] for r in result.reports)
