"""The device plan: which devices every notebook and local worker trains on.

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
processes of a local cluster: one GPU per worker when there are enough, otherwise workers
share a GPU under memory caps and use the RING collective (NCCL refuses two processes on one
GPU), and CPU-only workers elsewhere. Both are pure functions of plain descriptions of the
hardware (:class:`GpuInfo`). Applying a plan — the TensorFlow calls, once per process — is
machinery: ``infra.devices``; notebook 03 shows the calls themselves. Introduced in notebook 00.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

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
    """What one process trains on. Made by :func:`plan_devices`, applied by
    ``infra.devices.prepare``; ``rehearsal`` is the GPU rehearsal's one-line note when these GPUs
    are stand-ins on the CPU (None: real hardware)."""

    kind: str
    replicas: int
    logical_cpus: int = 1
    gpu_split: int = 1
    gpu_memory_limit_mb: int | None = None
    gpu_memory_growth: bool = False
    gpus: tuple[GpuInfo, ...] = ()
    rehearsal: str | None = None

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


class DeviceConfigError(RuntimeError):
    """Raised when the device configuration cannot be what the caller asked for."""


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


_applied_plan: DevicePlan | None = None


def remember_plan(plan: DevicePlan) -> None:
    """Record the plan this process was configured with (``infra.devices.apply_plan`` calls it)."""
    global _applied_plan
    _applied_plan = plan


def current_plan() -> DevicePlan | None:
    """The plan applied in this process (``infra.devices.prepare``), or None."""
    return _applied_plan


def describe_devices() -> str:
    """One line: the replicas this process trains on and whether their speed-up is real.

    After the setup cell it is the plan's :meth:`DevicePlan.describe`; otherwise it is read
    from TensorFlow's logical devices. Used in notebooks 00 and 02.
    """
    plan = current_plan()
    if plan is not None:
        return plan.describe()
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    if gpus:
        return f"{len(gpus)} GPU device(s)"
    n_cpu = len(tf.config.list_logical_devices("CPU"))
    if n_cpu > 1:
        return f"no GPU; {n_cpu} logical CPU devices stand in for GPUs (simulated, same cores)"
    return "no GPU; 1 CPU device"
