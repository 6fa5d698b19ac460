"""The device plan: which devices every notebook and local worker trains on, and applying it.

Students run the course on a laptop CPU, on Colab's single T4, on a workstation with one GPU
and on servers with several. Every lesson needs **at least two replicas** to be distributed
at all, so one pure function, :func:`plan_devices`, decides from what was found:

=============  ==========================================================  =============
GPUs found     replicas                                                    ``kind``
=============  ==========================================================  =============
0              ``logical_devices`` logical CPU devices (one CPU split)     logical-cpu
1              2 logical GPUs on the one card, each capped at half of its  logical-gpu
               memory less a margin (the slides' 虚拟多个GPU)
2 or more      the physical GPUs, memory growth on                         gpu
=============  ==========================================================  =============

Only the last kind gives real data-parallel speed-up: logical devices share one CPU's cores
or one GPU's compute (``plan.simulated``). :func:`plan_workers` does the same for the
processes of a local cluster (``utils.cluster`` applies it to every worker it starts): one
GPU per worker when there are enough, otherwise workers share a GPU under memory caps and
use the RING collective (NCCL refuses two processes on one GPU), and CPU-only workers
elsewhere. Both functions take plain descriptions of the hardware (:class:`GpuInfo`), so the
tests feed them 0–8 faked GPUs; :func:`detect_gpus` reads the real ones.

TensorFlow fixes its device list the first time it initialises its runtime, so the
configuration is applied **once per process**. Asking again for the same thing is a no-op
(re-running a notebook's setup cell is fine); asking for something different raises a
:class:`DeviceConfigError` that says why and what to do. Introduced in notebook 00; notebook 03
shows the TensorFlow calls themselves.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

# What each process keeps free on a GPU for the CUDA context, cuDNN/cuBLAS workspaces and
# fragmentation: 1 GiB or 10 % of the card, whichever is larger.
GPU_RESERVE_MIN_MB = 1024
GPU_RESERVE_FRACTION = 0.10
# The memory cap of a logical GPU when the card's size is unknown (no nvidia-smi).
UNKNOWN_GPU_SHARE_MB = 2048
SPLIT_ONE_GPU = 2
WORKER_DEVICES_VAR = "COURSE_WORKER_DEVICES"
KINDS = ("logical-cpu", "logical-gpu", "gpu")


@dataclass(frozen=True)
class GpuInfo:
    """One physical GPU as the plan sees it: a name, its memory in MiB and its compute
    capability (None: unknown)."""

    name: str = "GPU"
    memory_mb: int | None = None
    compute_capability: tuple[int, int] | None = None


def usable_memory_mb(memory_mb: int | None, parts: int) -> int:
    """The memory cap of each of ``parts`` processes or logical devices sharing one GPU.

    The card's memory less a reserve (max of 1 GiB and 10 %), divided evenly and rounded
    down to 256 MiB; at least 256 MiB. Unknown memory gives 2 GiB each.
    """
    if parts < 1:
        raise ValueError(f"parts must be ≥ 1, got {parts}")
    if memory_mb is None:
        return UNKNOWN_GPU_SHARE_MB
    if memory_mb <= 0:
        raise ValueError(f"GPU memory must be positive, got {memory_mb} MiB")
    reserve = max(GPU_RESERVE_MIN_MB, math.ceil(memory_mb * GPU_RESERVE_FRACTION))
    share = (memory_mb - reserve) // parts // 256 * 256
    if share < 256:
        raise ValueError(
            f"a GPU of {memory_mb} MiB cannot be shared by {parts} (needs ≥ 256 MiB each after "
            f"a {reserve} MiB reserve)"
        )
    return share


@dataclass(frozen=True)
class DevicePlan:
    """What one process trains on. Made by :func:`plan_devices`, applied by ``utils.setup``."""

    kind: str
    replicas: int
    logical_cpus: int = 1
    gpu_split: int = 1
    gpu_memory_limit_mb: int | None = None
    gpu_memory_growth: bool = False
    gpus: tuple[GpuInfo, ...] = ()

    @property
    def simulated(self) -> bool:
        """True when the replicas share hardware (logical devices): no real speed-up."""
        return self.kind != "gpu"

    @property
    def collective(self) -> str:
        """The all-reduce MirroredStrategy's default picks on these devices, ``"nccl"`` or
        ``"ring"`` (TF 2.21 ``mirrored_strategy.py``, ``_make_collective_ops_with_fallbacks``:
        RING when all devices are CPUs or there are more logical than physical GPUs)."""
        return "nccl" if self.kind == "gpu" else "ring"

    @property
    def request(self) -> DeviceRequest:
        """The low-level :func:`configure_devices` arguments that realise this plan."""
        return DeviceRequest(self.logical_cpus, self.gpu_split, self.gpu_memory_limit_mb, self.gpu_memory_growth)

    def describe(self) -> str:
        """One line: how many replicas, on what, and whether speed-up is real."""
        if self.kind == "logical-cpu":
            return (
                f"{self.replicas} replicas on logical CPU devices (one CPU split in {self.logical_cpus}): "
                "simulated, correct numerics but no speed-up"
            )
        name = self.gpus[0].name if self.gpus else "GPU"
        if self.kind == "logical-gpu":
            return (
                f"{self.replicas} replicas on logical GPUs of one {name} ({self.gpu_memory_limit_mb} MiB cap "
                "each): simulated, they share one GPU's compute"
            )
        names = sorted({g.name for g in self.gpus})
        return f"{self.replicas} replicas on {self.replicas} physical GPUs ({', '.join(names)}): real speed-up"


def plan_devices(gpus: Sequence[GpuInfo], logical_devices: int = 2) -> DevicePlan:
    """Decide the replicas of a notebook's kernel from the GPUs found (see the module table).

    ``logical_devices`` is how many logical CPU devices stand in for GPUs when there is no
    GPU (≥ 2 for a distributed lesson). Pure: the tests call it with faked GPU lists.
    """
    if not isinstance(logical_devices, int) or isinstance(logical_devices, bool) or logical_devices < 1:
        raise ValueError(f"logical_devices must be a whole number ≥ 1, got {logical_devices!r}")
    gpus = tuple(gpus)
    if not gpus:
        return DevicePlan("logical-cpu", logical_devices, logical_cpus=logical_devices)
    if len(gpus) == 1:
        limit = usable_memory_mb(gpus[0].memory_mb, SPLIT_ONE_GPU)
        return DevicePlan(
            "logical-gpu", SPLIT_ONE_GPU, gpu_split=SPLIT_ONE_GPU, gpu_memory_limit_mb=limit, gpus=gpus
        )
    return DevicePlan("gpu", len(gpus), gpu_memory_growth=True, gpus=gpus)


@dataclass(frozen=True)
class WorkerDevices:
    """The devices of one task of a local cluster, as :func:`plan_workers` assigns them.

    ``gpus`` are indices into the GPUs the launcher sees (empty: CPU only); ``shared`` says
    other workers use the same GPU; ``collective`` is the MWMS implementation to use.
    """

    task: str
    gpus: tuple[int, ...] = ()
    memory_limit_mb: int | None = None
    shared: bool = False
    collective: str = "RING"

    def env(self, visible: Sequence[str] | None = None) -> dict[str, str]:
        """Environment variables for the task: ``CUDA_VISIBLE_DEVICES`` (in terms of the
        launcher's own visible list ``visible``), growth, and the plan for
        :func:`configure_worker`."""
        ids = [visible[i] if visible else str(i) for i in self.gpus]
        return {
            "CUDA_VISIBLE_DEVICES": ",".join(ids) if ids else "-1",
            "TF_FORCE_GPU_ALLOW_GROWTH": "true",
            WORKER_DEVICES_VAR: json.dumps(asdict(self)),
        }


def plan_workers(gpus: Sequence[GpuInfo], tasks: Sequence[str]) -> dict[str, WorkerDevices]:
    """Assign devices to the tasks of a local cluster (``["worker:0", "worker:1", "ps:0"]``).

    Workers and the chief train; ps and evaluator tasks run on the CPU. With at least as many
    GPUs as training tasks, each gets its own GPU and NCCL; with fewer, training task *i*
    shares GPU *i mod G* under a memory cap and uses RING (NCCL refuses two ranks on one
    GPU); without GPUs every task is CPU-only and uses RING. Pure, tested with faked GPUs.
    """
    trainers = [t for t in tasks if t.split(":")[0] in ("chief", "worker")]
    plan: dict[str, WorkerDevices] = {t: WorkerDevices(t) for t in tasks}
    n = len(gpus)
    if n == 0 or not trainers:
        return plan
    if n >= len(trainers):
        for i, task in enumerate(trainers):
            plan[task] = WorkerDevices(task, (i,), collective="NCCL")
        return plan
    per_gpu = [sum(1 for j in range(len(trainers)) if j % n == g) for g in range(n)]
    for i, task in enumerate(trainers):
        g = i % n
        limit = usable_memory_mb(gpus[g].memory_mb, per_gpu[g])
        plan[task] = WorkerDevices(task, (g,), limit, shared=per_gpu[g] > 1, collective="RING")
    return plan


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
    rehearsed GPUs. Used by ``utils.setup`` and ``utils.cluster``.
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


class DeviceConfigError(RuntimeError):
    """Raised when the device configuration cannot be what the caller asked for."""


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
    "compare several settings, run each in a fresh process (utils.process.run_python, as in "
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
    :class:`DeviceConfigError`. Used by ``utils.setup`` in every notebook.
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

    cpus = tf.config.list_physical_devices("CPU")
    gpus = tf.config.list_physical_devices("GPU")
    try:
        if logical_cpus > 1:
            tf.config.set_logical_device_configuration(
                cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(logical_cpus)]
            )
        capped = False
        for gpu in gpus:
            if gpu_memory_growth:
                tf.config.experimental.set_memory_growth(gpu, True)
            elif gpu_split > 1 or gpu_memory_limit_mb is not None:
                tf.config.set_logical_device_configuration(
                    gpu,
                    [
                        tf.config.LogicalDeviceConfiguration(memory_limit=gpu_memory_limit_mb)
                        for _ in range(gpu_split)
                    ],
                )
                capped = True
        if capped and initialise:
            _initialise_with_growth(tf)
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


_plan: DevicePlan | None = None


def apply_plan(plan: DevicePlan) -> DevicePlan:
    """Configure this process as ``plan`` says (once per process, like
    :func:`configure_devices`) and remember it for :func:`current_plan`. Used by ``utils.setup``."""
    global _plan
    configure_devices(
        plan.logical_cpus,
        gpu_split=plan.gpu_split,
        gpu_memory_limit_mb=plan.gpu_memory_limit_mb,
        gpu_memory_growth=plan.gpu_memory_growth,
    )
    _plan = plan
    return plan


def current_plan() -> DevicePlan | None:
    """The plan ``utils.setup`` applied in this process, or None."""
    return _plan


def configure_worker() -> WorkerDevices:
    """In a worker process, before TensorFlow initialises: apply the devices the launcher
    assigned (``COURSE_WORKER_DEVICES``, set by ``utils.cluster``) and return them.

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
    CPUs and older GPUs. Used by ``utils.setup`` and :func:`configure_worker`."""
    import tensorflow as tf

    tf.config.experimental.enable_tensor_float_32_execution(False)


def applied_request() -> DeviceRequest | None:
    """The configuration applied in this process so far, or None (tests, notebook 00)."""
    return _applied


def strategy_devices(max_devices: int | None = None) -> list[str]:
    """The devices a MirroredStrategy should use here: real GPUs if any, else logical CPUs.

    ``tf.distribute.MirroredStrategy(utils.devices.strategy_devices())`` gives the same
    notebook cell GPUs on a GPU machine and logical CPU devices elsewhere. Used in
    notebooks 01, 02, 04, 05 and 06.
    """
    import tensorflow as tf

    if max_devices is not None and max_devices < 1:
        raise ValueError(f"max_devices must be ≥ 1, got {max_devices}")
    devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
    names = [d.name for d in devices]
    return names[:max_devices] if max_devices is not None else names


def device_report() -> pd.DataFrame:
    """Physical and logical devices as a table (notebooks 00 and 03)."""
    import pandas as pd
    import tensorflow as tf

    rows: list[dict[str, str]] = []
    for device in tf.config.list_physical_devices():
        details = ""
        if device.device_type == "GPU":
            info = tf.config.experimental.get_device_details(device)
            details = ", ".join(f"{k}={v}" for k, v in info.items())
        rows.append(
            {"level": "physical", "type": device.device_type, "name": device.name, "details": details}
        )
    for device in tf.config.list_logical_devices():
        rows.append({"level": "logical", "type": device.device_type, "name": device.name, "details": ""})
    return pd.DataFrame(rows, columns=["level", "type", "name", "details"])


def describe_devices() -> str:
    """One line: the replicas this process trains on and whether their speed-up is real.

    After ``utils.setup`` it is the plan's :meth:`DevicePlan.describe`; otherwise it is read
    from TensorFlow's logical devices. Used in notebooks 00 and 02.
    """
    if _plan is not None:
        return _plan.describe()
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    if gpus:
        return f"{len(gpus)} GPU device(s)"
    n_cpu = len(tf.config.list_logical_devices("CPU"))
    if n_cpu > 1:
        return f"no GPU; {n_cpu} logical CPU devices stand in for GPUs (simulated, same cores)"
    return "no GPU; 1 CPU device"
