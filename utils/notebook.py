"""The one-call setup every notebook's setup cell runs.

``course = utils.setup(chapter=4, plan=infra.devices.prepare(logical_devices=4))`` checks the
versions the course was written for, fixes the seeds, sets the plot style and prints in one line
what the replicas are. The **device plan** (:func:`utils.devices.plan_devices`: logical CPUs
without a GPU, two logical GPUs on one GPU, the physical GPUs on several) is applied before, once
per process, by the machinery (``infra.devices.prepare``, which also quiets TensorFlow's logging).
Introduced in notebook 00, used by every notebook.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utils import config, figures
from utils.devices import DevicePlan

# Pythons TensorFlow 2.21 ships wheels for (checked on PyPI); tools/bootstrap.sh accepts the same.
SUPPORTED_PYTHONS = ((3, 10), (3, 11), (3, 12), (3, 13))


class VersionError(RuntimeError):
    """The notebook runs in an environment other than the one it was written for."""


@dataclass
class CourseEnv:
    """What ``setup`` found and configured; notebooks read settings from it."""

    chapter: int
    smoke: bool
    seed: int
    is_colab: bool
    tf_version: str
    keras_version: str
    python_version: str
    plan: DevicePlan
    devices: list[str] = field(default_factory=list)
    programs: Path = Path("programs")

    @property
    def replicas(self) -> int:
        """How many replicas a ``MirroredStrategy(course.devices)`` has: at least 2."""
        return len(self.devices)

    @property
    def device_kind(self) -> str:
        """``"logical-cpu"``, ``"logical-gpu"`` (one GPU split in two) or ``"gpu"``."""
        return self.plan.kind

    @property
    def simulated(self) -> bool:
        """True when the replicas share hardware (logical devices): numbers are not speed-up."""
        return self.plan.simulated

    @property
    def rehearsal(self) -> bool:
        """True under the GPU rehearsal: the plan's GPUs are stand-ins on the CPU
        (``COURSE_REHEARSE_GPUS``, :mod:`infra.rehearsal`), every time is a CPU time."""
        return self.plan.rehearsal is not None

    @property
    def timings(self) -> str:
        """What a time measured on ``course.devices`` means, in one line (notebooks 01, 04, 08)."""
        note = {
            "logical-cpu": "logical CPU devices sharing this machine's cores: CPU timings, no speed-up",
            "logical-gpu": "two logical GPUs sharing one GPU: correct results, no speed-up",
            "gpu": f"{self.replicas} GPUs: real speed-up",
        }[self.device_kind]
        return note + ("; rehearsed on the CPU: every time is a CPU time" if self.rehearsal else "")

    def summary(self) -> str:
        mode = "smoke settings (COURSE_SMOKE=1)" if self.smoke else "full settings"
        where = "Colab" if self.is_colab else "local"
        return (
            f"Chapter {self.chapter:02d} · Python {self.python_version}, TensorFlow {self.tf_version}, "
            f"Keras {self.keras_version} · {mode} · {where} · seed {self.seed}\n"
            f"Replicas: {self.plan.describe()}"
            + (f"\n{self.plan.rehearsal}" if self.plan.rehearsal else "")
        )


def _check_versions(tf: Any, keras_version: str, expected_tf: str) -> None:
    if sys.version_info[:2] not in SUPPORTED_PYTHONS:
        supported = ", ".join(f"{a}.{b}" for a, b in SUPPORTED_PYTHONS)
        raise VersionError(f"Python {platform.python_version()} is not one TensorFlow 2.21 supports ({supported})")
    if not (tf.__version__ == expected_tf or tf.__version__.startswith(expected_tf + ".")):
        raise VersionError(
            f"this notebook was written for TensorFlow {expected_tf}.x but the kernel has "
            f"{tf.__version__} ({sys.executable}). Start it from the course environment: "
            "`make lab` (or pick the kernel the notebook names)."
        )
    if expected_tf.startswith("2.") and int(expected_tf.split(".")[1]) >= 16:
        if not keras_version.startswith("3."):
            raise VersionError(
                f"this notebook teaches Keras 3 but tf.keras is Keras {keras_version}; unset "
                "TF_USE_LEGACY_KERAS in the kernel's environment and restart the kernel."
            )


def _programs_folder() -> Path:
    """``programs/`` in the working directory: where the notebook's ``%%writefile programs/…``
    cells write the programs it starts in fresh processes (``infra.programs``)."""
    folder = Path("programs")
    folder.mkdir(exist_ok=True)
    return folder.resolve()


def setup(chapter: int, *, plan: DevicePlan, seed: int = 42, expected_tf: str = "2.21") -> CourseEnv:
    """Prepare this kernel for a chapter and return what was found.

    ``plan`` is the device plan already applied to this process: the setup cell passes
    ``infra.devices.prepare(logical_devices=N)``, the machinery that splits the CPU into ``N``
    logical devices standing in for GPUs when there is no GPU (with GPUs the plan decides: two
    logical GPUs on one GPU, else the physical GPUs). ``course.devices`` is the list to give
    ``MirroredStrategy``; ``course.replicas``, ``course.device_kind`` and ``course.simulated``
    say what they are; ``course.programs`` is the folder the notebook's
    ``%%writefile programs/…`` cells write to. Safe to run again.
    """
    if not isinstance(chapter, int) or not 0 <= chapter <= 99:
        raise ValueError(f"chapter must be a whole number 0–99, got {chapter!r}")
    import tensorflow as tf

    from utils import devices

    keras_version = getattr(tf.keras, "__version__", None) or tf.keras.__name__
    try:
        import keras

        keras_version = keras.__version__
    except ImportError:  # pragma: no cover - Keras ships with TensorFlow
        pass
    _check_versions(tf, keras_version, expected_tf)
    tf.get_logger().setLevel("ERROR")
    tf.keras.utils.set_random_seed(seed)  # Python, NumPy and TensorFlow in one call
    figures.use_course_style(chapter)
    env = CourseEnv(
        chapter=chapter,
        smoke=config.is_smoke(),
        seed=seed,
        is_colab="google.colab" in sys.modules,
        tf_version=tf.__version__,
        keras_version=keras_version,
        python_version=platform.python_version(),
        plan=plan,
        devices=devices.strategy_devices(),
        programs=_programs_folder(),
    )
    if env.replicas != plan.replicas:  # e.g. TensorFlow initialised before setup with other devices
        raise devices.DeviceConfigError(
            f"the plan asked for {plan.replicas} replicas but TensorFlow has {env.replicas} devices: "
            "restart the kernel and run the setup cell first"
        )
    print(env.summary())
    return env
