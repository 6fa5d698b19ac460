"""The GPU rehearsal: run the course's GPU branches on a CPU, substituting only the hardware.

``COURSE_REHEARSE_GPUS="1x15360@7.5:Tesla T4"`` (count × MiB, optional compute capability and name)
makes every Python process believe it has those GPUs: TensorFlow lists them, and each logical GPU
runs as one more logical CPU device (memory limits recorded, not applied; RING for NCCL).
TensorFlow's own checks and the moment its runtime starts are untouched, so a call in the wrong
order fails as on a GPU. :func:`activate` patches TensorFlow 2.21's eager ``Context``; child
processes get it from ``rehearsal_site/sitecustomize.py``. Used by ``make test``'s rehearsals.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utils.devices import GpuInfo

ENV_VAR = "COURSE_REHEARSE_GPUS"
SITE_DIR = Path(__file__).resolve().parent / "rehearsal_site"
_SPEC = re.compile(r"^\s*(\d+)\s*x\s*(\d+)\s*(?:@\s*(\d+)\.(\d+))?\s*(?::\s*(.+?))?\s*$")
DEFAULT_NAME = "rehearsed GPU"
DEFAULT_CAPABILITY = (7, 5)  # a T4's: no bfloat16 tensor cores, no TF32


def parse_spec(text: str) -> list[GpuInfo]:
    """``"2x16384@7.0:Tesla V100"`` → two GPUs. Raises ValueError with the expected form."""
    match = _SPEC.match(text or "")
    if not match or int(match[1]) < 1 or int(match[2]) < 256:
        raise ValueError(
            f"{ENV_VAR}={text!r}: expected COUNTxMIB[@MAJOR.MINOR][:NAME] with COUNT ≥ 1 and MIB ≥ 256, "
            'e.g. "1x15360@7.5:Tesla T4" (a T4) or "3x24576@8.6"'
        )
    capability = (int(match[3]), int(match[4])) if match[3] else DEFAULT_CAPABILITY
    gpu = GpuInfo(match[5] or DEFAULT_NAME, int(match[2]), capability)
    return [gpu] * int(match[1])


def spec() -> str | None:
    """The rehearsal asked for in this process's environment, or None."""
    return os.environ.get(ENV_VAR) or None


def cuda_visible(total: int) -> list[int]:
    """Which of ``total`` GPUs ``CUDA_VISIBLE_DEVICES`` lets through, as CUDA reads it (all when
    unset; it stops at the first invalid entry, so ``-1`` hides all)."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return list(range(total))
    kept = []
    for part in (p.strip() for p in value.split(",")):
        if not part.isdigit() or int(part) >= total:
            break
        kept.append(int(part))
    return kept


def visible_gpus() -> list[GpuInfo]:
    """The rehearsed GPUs this process sees (renumbered from 0 by ``CUDA_VISIBLE_DEVICES``)."""
    text = spec()
    gpus = parse_spec(text) if text else []
    return [gpus[i] for i in cuda_visible(len(gpus))]


def describe() -> str:
    """One line for the setup banner: what is rehearsed and what is substituted."""
    gpus = parse_spec(spec() or "")
    gpu = gpus[0]  # parse_spec sets every field, alike for all
    return (
        f"Rehearsal of {len(gpus)} GPU{'s' if len(gpus) > 1 else ''} ({gpu.name}, "
        f"{gpu.memory_mb // 1024} GB, compute capability {'.'.join(map(str, gpu.compute_capability))}) on "
        "the CPU: logical GPUs run as logical CPU devices, memory limits are recorded but not applied, RING "
        "stands in for NCCL; every time printed is a CPU time"
    )


def child_pythonpath(pythonpath: str | None) -> str:
    """``PYTHONPATH`` for a child process, with the rehearsal's ``sitecustomize`` first."""
    parts = [str(SITE_DIR), *filter(None, (pythonpath or "").split(os.pathsep))]
    return os.pathsep.join(dict.fromkeys(parts))


@dataclass
class _State:
    """What the patched context knows: the rehearsed devices and the stand-ins made for them."""

    fakes: list[Any] = field(default_factory=list)  # PhysicalDevice objects of type GPU
    details: dict[Any, GpuInfo] = field(default_factory=dict)
    cpu_logical: int = 1  # logical CPU devices that are the CPU itself (the rest stand in)
    stand_ins: list[int | None] = field(default_factory=list)  # the memory limit of each stand-in GPU
    announced: bool = False
    memory_announced: bool = False


_state = _State()
_patched = False


def _add_fake_gpus(ctx: Any) -> None:
    from tensorflow.python.eager.context import PhysicalDevice

    if _state.fakes and _state.fakes[0] in ctx._physical_devices:
        return
    gpus = visible_gpus()
    _state.fakes = [PhysicalDevice(name=f"/physical_device:GPU:{i}", device_type="GPU")
                    for i in range(len(gpus))]
    _state.details = dict(zip(_state.fakes, gpus, strict=True))
    for fake in _state.fakes:
        ctx._physical_device_to_index[fake] = len(ctx._physical_devices)
        ctx._physical_devices.append(fake)
        ctx._visible_device_list.append(fake)
        ctx._memory_growth_map[fake] = None


def _stand_ins(ctx: Any) -> list[int | None]:
    """The memory limit of each logical GPU TensorFlow would create (None: no limit)."""
    return [config.memory_limit if config else None
            for gpu in _state.fakes if gpu in ctx._visible_device_list
            for config in ctx._virtual_device_map.get(gpu) or [None]]


def _initialise(original: Any, ctx: Any) -> None:
    """TensorFlow's own initialisation, with the rehearsed GPUs turned into logical CPUs."""
    from tensorflow.python.eager.context import LogicalDeviceConfiguration

    ctx._initialize_physical_devices()
    ctx._compute_gpu_options()  # TensorFlow's own checks of the GPU settings, as on a GPU
    stand_ins = _stand_ins(ctx)
    cpu = next(d for d in ctx._physical_devices if d.device_type == "CPU")
    own = ctx._virtual_device_map.get(cpu)
    saved = (list(ctx._physical_devices), dict(ctx._physical_device_to_index), list(ctx._visible_device_list),
             dict(ctx._memory_growth_map), dict(ctx._virtual_device_map))
    for fake in _state.fakes:  # the runtime itself must not look for them
        ctx._physical_devices.remove(fake)
        ctx._physical_device_to_index.pop(fake, None)
        if fake in ctx._visible_device_list:
            ctx._visible_device_list.remove(fake)
        ctx._memory_growth_map.pop(fake, None)
        ctx._virtual_device_map.pop(fake, None)
    if stand_ins:
        ctx._virtual_device_map[cpu] = list(own or [LogicalDeviceConfiguration()]) + [
            LogicalDeviceConfiguration() for _ in stand_ins
        ]
    try:
        original(ctx)
    finally:
        (ctx._physical_devices, ctx._physical_device_to_index, ctx._visible_device_list,
         ctx._memory_growth_map, ctx._virtual_device_map) = saved
    _state.cpu_logical = len(own) if own else 1
    _state.stand_ins = stand_ins
    if stand_ins and not _state.announced:
        _state.announced = True
        limits = sorted({limit for limit in stand_ins if limit})
        print(f"[rehearsal] {len(stand_ins)} logical GPU(s) run as logical CPU devices"
              + (f"; memory limit(s) {limits} MiB recorded, not applied" if limits else ""), file=sys.stderr)


def _logical(original: Any, ctx: Any, device_type: str | None) -> list[Any]:
    devices = original(ctx, None)
    cpus = [d for d in devices if d.device_type == "CPU"]
    own, stand_ins = cpus[: _state.cpu_logical], cpus[_state.cpu_logical:][: len(_state.stand_ins)]
    if device_type == "GPU":
        return stand_ins
    if device_type == "CPU":
        return own
    return [d for d in devices if device_type in (None, d.device_type)]


def _patch(context_module: Any) -> None:
    global _patched
    if _patched:
        return
    _patched = True
    cls = context_module.Context
    init_physical, ensure, logical = (cls._initialize_physical_devices, cls.ensure_initialized,
                                      cls.list_logical_devices)
    details, memory_info = cls.get_device_details, cls.get_memory_info

    def _initialize_physical_devices(self: Any, reinitialize: bool = False) -> None:
        init_physical(self, reinitialize)
        with self._device_lock:
            _add_fake_gpus(self)

    def ensure_initialized(self: Any) -> None:
        if self._initialized:
            return
        _initialise(ensure, self)

    def list_logical_devices(self: Any, device_type: str | None = None) -> list[Any]:
        return _logical(logical, self, device_type)

    def get_device_details(self: Any, device: Any) -> dict[str, Any]:
        if device in _state.details:
            gpu = _state.details[device]
            return {"device_name": gpu.name, "compute_capability": gpu.compute_capability}
        return details(self, device)

    def get_memory_info(self: Any, dev: str) -> dict[str, int]:
        if "GPU" in str(dev).upper():  # a stand-in GPU allocates from the CPU's allocator
            if not _state.memory_announced:
                _state.memory_announced = True
                print(f"[rehearsal] get_memory_info({dev!r}) reports the CPU allocator, which the stand-in "
                      "GPUs allocate from", file=sys.stderr)
            return memory_info(self, "CPU:0")
        return memory_info(self, dev)

    cls._initialize_physical_devices = _initialize_physical_devices
    cls.ensure_initialized = ensure_initialized
    cls.list_logical_devices = list_logical_devices
    cls.get_device_details = get_device_details
    cls.get_memory_info = get_memory_info


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches TensorFlow's context module right after it is imported (child processes)."""

    target = "tensorflow.python.eager.context"

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != self.target:
            return None
        sys.meta_path.remove(self)
        found = importlib.util.find_spec(name)
        if found is None or found.loader is None:
            return found
        loader = found.loader
        exec_module = loader.exec_module

        def exec_and_patch(module: Any) -> None:
            exec_module(module)
            _patch(module)

        loader.exec_module = exec_and_patch  # type: ignore[method-assign]
        return found


def activate() -> bool:
    """Install the rehearsal in this process if ``COURSE_REHEARSE_GPUS`` asks for it; True if
    active. Call before TensorFlow initialises its runtime; importing TensorFlow first is fine."""
    text = spec()
    if text is None:
        return False
    parse_spec(text)  # a clear error for a malformed value
    os.environ["PYTHONPATH"] = child_pythonpath(os.environ.get("PYTHONPATH"))
    module = sys.modules.get(_PatchOnImport.target)
    if _patched:  # a second setup in the same kernel: already in place
        return True
    if module is not None:
        ctx = module.context()
        if ctx._initialized:
            raise RuntimeError(
                f"{ENV_VAR} is set but TensorFlow's runtime was initialised before the rehearsal "
                "was installed: restart the kernel and run the setup cell first"
            )
        _patch(module)
        if ctx._physical_devices is not None:
            _add_fake_gpus(ctx)
    elif not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
    return True
