"""Applying the device plan of ``utils.devices`` to TensorFlow, once per process.

:func:`prepare` configures a notebook's kernel (its setup cell), :func:`apply_plan` a script's
process, :func:`configure_worker` a worker of a local cluster; :func:`detect_gpus` reads the GPUs.
TensorFlow fixes its devices when its runtime starts: the same request again is a no-op (re-running
a setup cell is fine), another raises ``utils.devices.DeviceConfigError`` saying what to do.
Notebook 03 shows the same calls as a student writes them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from typing import Any

from infra import rehearsal
from infra.startup_log import quiet_startup
from utils.devices import (
    WORKER_DEVICES_VAR,
    DeviceConfigError,
    DevicePlan,
    GpuInfo,
    WorkerDevices,
    plan_devices,
    remember_plan,
)


def parse_nvidia_smi(text: str) -> list[GpuInfo]:
    """GPUs from ``nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits``."""
    gpus = []
    for line in text.strip().splitlines():
        name, _, memory = line.rpartition(",")
        if not name:
            raise ValueError(f"unexpected nvidia-smi line {line!r}")
        gpus.append(GpuInfo(name.strip(), int(float(memory))))
    return gpus


def _nvidia_smi() -> list[GpuInfo]:
    """The GPUs ``nvidia-smi`` lists that ``CUDA_VISIBLE_DEVICES`` lets through ([] without it)."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout
        gpus = parse_nvidia_smi(out)
    except (OSError, subprocess.SubprocessError, ValueError):
        return []
    return [gpus[i] for i in rehearsal.cuda_visible(len(gpus))]


def detect_gpus() -> list[GpuInfo]:
    """The physical GPUs this process can use (the rehearsed ones under ``COURSE_REHEARSE_GPUS``):
    ``nvidia-smi``'s, or TensorFlow's once it is imported (a CPU-only build sees none)."""
    if rehearsal.spec():
        return rehearsal.visible_gpus()
    smi = _nvidia_smi()
    if "tensorflow" not in sys.modules:
        return smi
    import tensorflow as tf

    found = tf.config.list_physical_devices("GPU")
    if len(smi) == len(found):
        return smi
    smallest = min((g.memory_mb for g in smi if g.memory_mb), default=None)
    return [GpuInfo(d.name, smallest) for d in found]


@dataclass(frozen=True)
class DeviceRequest:
    """What this process's devices were configured as; compared to detect conflicts."""

    logical_cpus: int = 1
    gpu_split: int = 1
    gpu_memory_limit_mb: int | None = None
    gpu_memory_growth: bool = False


_applied: DeviceRequest | None = None

TOO_LATE = (
    "TensorFlow's devices are fixed once its runtime has initialised (the first op, the first "
    "strategy or the first list_logical_devices call), so they cannot be changed in this "
    "process. Restart the kernel (Kernel → Restart Kernel) and run the setup cell first; to "
    "compare several settings, run each in a fresh process (infra.process.run_program, as in "
    "notebook 03)."
)


def _configure(request: DeviceRequest, initialise: bool = True) -> None:
    """Give TensorFlow the devices of ``request``, once per process. With a memory cap,
    ``initialise`` starts the runtime (:func:`_initialise_with_growth`); a worker passes False, as
    MultiWorkerMirroredStrategy must start it ("Collective ops must be configured at program startup")."""
    global _applied
    if _applied == request:
        return
    if _applied is not None:
        raise DeviceConfigError(f"devices were already configured in this process as {_applied}; "
                                f"now {request} was asked for. {TOO_LATE}")
    import tensorflow as tf

    try:
        _apply(tf, request, initialise)
    except RuntimeError as error:  # TensorFlow initialised before: accept it only if it already matches
        now = (len(tf.config.list_logical_devices("CPU")), len(tf.config.list_logical_devices("GPU")))
        if now != (request.logical_cpus, len(tf.config.list_physical_devices("GPU")) * request.gpu_split):
            raise DeviceConfigError(
                f"cannot configure {request}: TensorFlow said {str(error)!r}. {TOO_LATE}") from error
    _applied = request


def _apply(tf: Any, request: DeviceRequest, initialise: bool) -> None:
    """Give TensorFlow the logical CPUs and GPU settings of ``request`` (RuntimeError if too late)."""
    if request.logical_cpus > 1:
        cpus = [tf.config.LogicalDeviceConfiguration()] * request.logical_cpus
        tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0], cpus)
    capped = False
    for gpu in tf.config.list_physical_devices("GPU"):
        if request.gpu_memory_growth:
            tf.config.experimental.set_memory_growth(gpu, True)
        elif request.gpu_split > 1 or request.gpu_memory_limit_mb is not None:
            limit = request.gpu_memory_limit_mb
            tf.config.set_logical_device_configuration(
                gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=limit)] * request.gpu_split
            )
            capped = True
    if capped and initialise:
        _initialise_with_growth(tf)


def _initialise_with_growth(tf: Any) -> None:
    """Start TensorFlow's capped GPUs allocating on demand (``set_memory_growth`` is refused on a
    split GPU; without growth each takes its whole cap, leaving nothing for the workers notebooks 02
    and 04–06 start). Children started later get TensorFlow's default again."""
    before = os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH")
    os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
    try:
        tf.config.list_logical_devices("GPU")  # creates the devices and their allocators
    finally:
        if before is None:
            del os.environ["TF_FORCE_GPU_ALLOW_GROWTH"]
        else:
            os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = before


def apply_plan(plan: DevicePlan) -> DevicePlan:
    """Configure this process as ``plan`` says (once per process) and remember it
    (``utils.devices.current_plan``). Used by :func:`prepare` and the training scripts."""
    _configure(DeviceRequest(plan.logical_cpus, plan.gpu_split, plan.gpu_memory_limit_mb,
                             plan.gpu_memory_growth))
    remember_plan(plan)
    return plan


def prepare(logical_devices: int = 2) -> DevicePlan:
    """A notebook kernel's devices, before its lesson starts; returns the plan for ``utils.setup``.

    The setup cell runs ``utils.setup(chapter=N, plan=infra.devices.prepare(logical_devices=M))``.
    First quiet C++ logs (and the start-up notices the log level misses: infra.startup_log),
    oneDNN's CPU kernels on every x86 CPU (TensorFlow turns them on by itself only on the newest;
    notebooks 03, 06 and 09 show them; children inherit it) and the GPU rehearsal if asked for;
    then the plan for the GPUs found, applied once per process; TF32 off.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
    with quiet_startup():  # TensorFlow's native start-up notices, which the log level misses
        rehearsed = rehearsal.activate()
        plan = plan_devices(detect_gpus(), logical_devices)
        if rehearsed:
            plan = replace(plan, rehearsal=rehearsal.describe())
        apply_plan(plan)
        exact_float32()  # the notebooks compare float32 results across setups to 1e-5
    return plan


def configure_worker() -> WorkerDevices:
    """In a worker of a local cluster, before TensorFlow initialises: apply the devices
    ``infra.cluster`` assigned (``COURSE_WORKER_DEVICES``; a shared GPU gets a memory cap) and return
    them. ``.collective`` is NCCL, or RING on CPUs, on a shared GPU and under the GPU rehearsal;
    outside a local cluster ``"AUTO"``. Used by the workers of notebooks 02 and 04–06."""
    rehearsal.activate()
    exact_float32()
    text = os.environ.get(WORKER_DEVICES_VAR)
    if not text:
        return WorkerDevices(os.environ.get("COURSE_TASK", "worker:0"), collective="AUTO")
    data = json.loads(text)
    worker = WorkerDevices(data["task"], tuple(data["gpus"]), data["memory_limit_mb"], data["shared"],
                           data["collective"])
    if worker.memory_limit_mb is not None:
        _configure(DeviceRequest(gpu_memory_limit_mb=worker.memory_limit_mb), initialise=False)
    if worker.collective == "NCCL" and rehearsal.spec():
        print(f"[rehearsal] {worker.task}: RING instead of NCCL (NCCL needs real GPUs)", file=sys.stderr)
        worker = replace(worker, collective="RING")
    return worker


def exact_float32() -> None:
    """Switch TF32 off: Ampere and newer GPUs otherwise multiply float32 matrices with a 10-bit
    mantissa, and the course compares results across setups to 1e-5."""
    import tensorflow as tf

    tf.config.experimental.enable_tensor_float_32_execution(False)
