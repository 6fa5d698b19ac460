"""Applying the device plan: the TensorFlow calls, once per process (``utils.devices`` decides).

:func:`detect_gpus` reads the GPUs (``nvidia-smi`` and TensorFlow, or the GPU rehearsal);
:func:`prepare` configures a notebook's kernel (its setup cell) and
:func:`configure_worker` a worker process of a local cluster. TensorFlow fixes its device
list the first time it initialises its runtime, so the configuration is applied **once per
process**: asking again for the same thing is a no-op (re-running a setup cell is fine);
asking for something different raises ``utils.devices.DeviceConfigError`` that says why and
what to do. Notebook 03 shows the same calls as a student writes them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from typing import Any

from utils.devices import (
    WORKER_DEVICES_VAR,
    DeviceConfigError,
    DevicePlan,
    GpuInfo,
    WorkerDevices,
    plan_devices,
    remember_plan,
)


# --------------------------------------------------------------------------------------------
# What is there
# --------------------------------------------------------------------------------------------
def parse_nvidia_smi(text: str) -> list[GpuInfo]:
    """GPUs from ``nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits``."""
    gpus = []
    for line in text.strip().splitlines():
        name, _, memory = line.rpartition(",")
        if not name:
            raise ValueError(f"unexpected nvidia-smi line {line!r}")
        gpus.append(GpuInfo(name.strip(), int(float(memory))))
    return gpus


def _visible_indices(total: int) -> list[int] | None:
    """Which of ``total`` GPUs ``CUDA_VISIBLE_DEVICES`` lets through (None: not set)."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    kept = []
    for part in (p.strip() for p in value.split(",")):
        if not part.isdigit() or int(part) >= total:  # CUDA stops at the first invalid entry
            break
        kept.append(int(part))
    return kept


def detect_gpus() -> list[GpuInfo]:
    """The physical GPUs this process can use, with their memory when ``nvidia-smi`` tells.

    TensorFlow's own list is authoritative once TensorFlow is imported (a CPU-only build
    sees none even when a GPU is there); ``nvidia-smi`` gives names and memory.
    Under the GPU rehearsal (``COURSE_REHEARSE_GPUS``, :mod:`infra.rehearsal`) these are the
    rehearsed GPUs. Used by :func:`prepare` and ``infra.cluster``.
    """
    from infra import rehearsal

    if rehearsal.spec():
        return [GpuInfo(g.name, g.memory_mb, g.compute_capability) for g in rehearsal.visible_gpus()]
    smi: list[GpuInfo] = []
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
                capture_output=True, text=True, timeout=20, check=True,
            ).stdout
            smi = parse_nvidia_smi(out)
        except (OSError, subprocess.SubprocessError, ValueError):
            smi = []
        keep = _visible_indices(len(smi))
        if keep is not None:
            smi = [smi[i] for i in keep]
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
    """What :func:`configure_devices` was asked for; compared to detect conflicts."""

    logical_cpus: int = 1
    gpu_split: int = 1
    gpu_memory_limit_mb: int | None = None
    gpu_memory_growth: bool = False


_applied: DeviceRequest | None = None

TOO_LATE = (
    "TensorFlow's devices are fixed once its runtime has initialised (the first op, the first "
    "strategy or the first list_logical_devices call), so they cannot be changed in this "
    "process. Restart the kernel (Kernel → Restart Kernel) and run the setup cell first; to "
    "compare several settings, run each in a fresh process (infra.process.run_python, as in "
    "notebook 03)."
)


def _validate(request: DeviceRequest) -> None:
    for name in ("logical_cpus", "gpu_split"):
        value = getattr(request, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a whole number ≥ 1, got {value!r}")
    limit = request.gpu_memory_limit_mb
    if limit is not None and (not isinstance(limit, int) or limit <= 0):
        raise ValueError(f"gpu_memory_limit_mb must be a positive whole number, got {limit!r}")
    if request.gpu_split > 1 and limit is None:
        raise ValueError(
            "splitting a GPU into several logical GPUs needs a memory limit for each "
            "(gpu_memory_limit_mb), as tf.config.set_logical_device_configuration requires"
        )
    if request.gpu_memory_growth and (request.gpu_split > 1 or limit is not None):
        raise ValueError(
            "memory growth and a memory limit/logical GPUs exclude each other: TensorFlow "
            "rejects set_memory_growth on a GPU that has a logical device configuration"
        )


def _matches_current(tf: Any, request: DeviceRequest) -> bool:
    n_cpu = len(tf.config.list_logical_devices("CPU"))
    n_gpu_physical = len(tf.config.list_physical_devices("GPU"))
    n_gpu_logical = len(tf.config.list_logical_devices("GPU"))
    return n_cpu == request.logical_cpus and n_gpu_logical == n_gpu_physical * request.gpu_split


def configure_devices(
    logical_cpus: int = 1,
    *,
    gpu_split: int = 1,
    gpu_memory_limit_mb: int | None = None,
    gpu_memory_growth: bool = False,
    initialise: bool = True,
) -> DeviceRequest:
    """Split the CPU into ``logical_cpus`` devices and optionally configure the GPUs.

    Logical CPU devices stand in for GPUs on a machine without any, so MirroredStrategy has
    several replicas to mirror onto. Where GPUs exist, ``gpu_split`` > 1 turns each into that
    many logical GPUs of ``gpu_memory_limit_mb`` each, ``gpu_memory_limit_mb`` alone caps
    each GPU, and ``gpu_memory_growth`` makes TensorFlow allocate GPU memory as needed.
    Without GPUs the GPU arguments are recorded but have nothing to act on.

    With a memory cap, ``initialise`` starts TensorFlow's runtime here so that the capped
    devices allocate on demand (:func:`_initialise_with_growth`); a worker process passes
    False, because starting the runtime before ``MultiWorkerMirroredStrategy`` makes it fail
    ("Collective ops must be configured at program startup").

    Once per process: the same request again is a no-op, a different one raises
    :class:`DeviceConfigError`. Used by :func:`prepare` in every notebook.
    """
    global _applied
    request = DeviceRequest(logical_cpus, gpu_split, gpu_memory_limit_mb, gpu_memory_growth)
    _validate(request)
    if _applied == request:
        return request
    if _applied is not None:
        raise DeviceConfigError(
            f"devices were already configured in this process as {_applied}; "
            f"now {request} was asked for. {TOO_LATE}"
        )

    import tensorflow as tf

    try:
        _apply(tf, request, initialise)
    except RuntimeError as error:
        # TensorFlow initialised before we got here: accept it only if it already matches.
        if _matches_current(tf, request):
            _applied = request
            return request
        raise DeviceConfigError(
            f"cannot configure {request}: TensorFlow said {str(error)!r}. {TOO_LATE}"
        ) from error
    _applied = request
    return request


def _apply(tf: Any, request: DeviceRequest, initialise: bool) -> None:
    """Give TensorFlow the logical CPUs and GPU settings of ``request`` (RuntimeError if too late)."""
    cpus = tf.config.list_physical_devices("CPU")
    if request.logical_cpus > 1:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(request.logical_cpus)]
        )
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
    """Initialise TensorFlow's devices with allocation on demand under the memory caps.

    The Python API refuses ``set_memory_growth`` on a GPU split into logical devices, and
    without growth each logical GPU's allocator takes its whole cap at once, which would
    leave nothing for the worker processes that notebooks 02 and 04–06 start on the same
    card. TensorFlow's GPU allocator also reads ``TF_FORCE_GPU_ALLOW_GROWTH`` (TF 2.21
    ``gpu_bfc_allocator.cc``, ``GetAllowGrowthValue``) when it creates each logical device,
    so the variable is set just for the initialisation, then restored: child processes
    started later (notebook 03's variants) still get TensorFlow's default.
    """
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
    """Configure this process as ``plan`` says (once per process, like
    :func:`configure_devices`) and remember it (``utils.devices.current_plan``). Used by :func:`prepare`."""
    configure_devices(
        plan.logical_cpus,
        gpu_split=plan.gpu_split,
        gpu_memory_limit_mb=plan.gpu_memory_limit_mb,
        gpu_memory_growth=plan.gpu_memory_growth,
    )
    remember_plan(plan)
    return plan


_prepared: int | None = None  # the logical_devices of this process's first prepare


def prepare(logical_devices: int = 2) -> DevicePlan:
    """A notebook kernel's devices, before its lesson starts; returns the plan for ``utils.setup``.

    The setup cell runs ``utils.setup(chapter=N, plan=infra.devices.prepare(logical_devices=M))``.
    Before TensorFlow's first import: quiet C++ logs and oneDNN's CPU kernels on every x86 CPU
    (TensorFlow 2.21 turns them on by itself only on CPUs with AVX512_VNNI, AVX512_BF16,
    AVX_VNNI or AMX; notebooks 03, 06 and 09 show their behaviour, and child processes inherit
    the setting), then the GPU rehearsal when ``COURSE_REHEARSE_GPUS`` asks for it. Then the plan
    of :func:`utils.devices.plan_devices` for the GPUs found, applied once per process, and TF32
    off. The same ``logical_devices`` again is a no-op; another raises ``DeviceConfigError``.
    """
    global _prepared
    if _prepared is not None and _prepared != logical_devices:
        raise DeviceConfigError(
            f"this kernel's devices were prepared with logical_devices={_prepared}; now "
            f"logical_devices={logical_devices} was asked for. {TOO_LATE}"
        )
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
    from infra import rehearsal

    rehearsed = rehearsal.activate()
    plan = plan_devices(detect_gpus(), logical_devices)
    if rehearsed:
        plan = replace(plan, rehearsal=rehearsal.describe())
    apply_plan(plan)
    _prepared = logical_devices
    exact_float32()  # the notebooks compare float32 results across setups to 1e-5
    return plan


def configure_worker() -> WorkerDevices:
    """In a worker process, before TensorFlow initialises: apply the devices the launcher
    assigned (``COURSE_WORKER_DEVICES``, set by ``infra.cluster``) and return them.

    ``CUDA_VISIBLE_DEVICES`` already limits the worker to its GPU(s); a worker that shares a
    GPU also gets a memory cap (one logical GPU of ``memory_limit_mb``), set without starting
    TensorFlow's runtime: ``MultiWorkerMirroredStrategy`` must start it itself, and the
    launcher's ``TF_FORCE_GPU_ALLOW_GROWTH`` makes the capped GPU allocate on demand.
    ``.collective`` is the MWMS implementation to use (``"NCCL"``, or ``"RING"`` on CPUs and
    on a shared GPU; RING under the GPU rehearsal, which says so). Outside a local cluster (a
    real machine) nothing is configured and the collective is ``"AUTO"``. TF32 is switched off
    (:func:`exact_float32`). Used by the worker programs of notebooks 02 and 04–06.
    """
    from infra import rehearsal

    rehearsal.activate()
    exact_float32()
    text = os.environ.get(WORKER_DEVICES_VAR)
    if not text:
        return WorkerDevices(os.environ.get("COURSE_TASK", "worker:0"), collective="AUTO")
    data = json.loads(text)
    worker = WorkerDevices(data["task"], tuple(data["gpus"]), data["memory_limit_mb"], data["shared"], data["collective"])
    if worker.memory_limit_mb is not None:
        configure_devices(1, gpu_memory_limit_mb=worker.memory_limit_mb, initialise=False)
    if worker.collective == "NCCL" and rehearsal.spec():
        print(f"[rehearsal] {worker.task}: RING instead of NCCL (NCCL needs real GPUs)", file=sys.stderr)
        worker = replace(worker, collective="RING")
    return worker


def exact_float32() -> None:
    """Switch TF32 off: Ampere and newer GPUs otherwise run float32 matrix products with a
    10-bit mantissa, and the course compares results across setups to 1e-5. No effect on
    CPUs and older GPUs. Used by :func:`prepare` and :func:`configure_worker`."""
    import tensorflow as tf

    tf.config.experimental.enable_tensor_float_32_execution(False)


def applied_request() -> DeviceRequest | None:
    """The configuration applied in this process so far, or None (tests, notebook 00)."""
    return _applied
