"""What the setup cell does on Colab after it has cloned the course: install what Colab lacks.

Colab (googlecolab/backend-info, 2026-08: Python 3.13, TensorFlow 2.20.0, Keras 3.13.2,
tf_keras 2.20.1, protobuf 5.29.6; working directory ``/content``; the TPU runtime has no
TensorFlow) ships its own TensorFlow. The course keeps it when it is 2.21; otherwise it
installs the 2.21 build that fits the runtime — ``tensorflow[and-cuda]`` on a GPU runtime
(NVIDIA's CUDA and cuDNN as pip packages), the plain wheel elsewhere — and then the rest of
``requirements-colab.txt`` (Keras pinned too). Replacing TensorFlow also replaces packages it
pins (protobuf, h5py, Keras, …); any of them already imported in the session loads its new
version only after *Runtime → Restart session*, so :func:`install` then stops with that
instruction, naming them. Used by the setup cell of notebooks 00–06
and 08+ on Colab only (notebook 07 needs Horovod's own environment, which Colab cannot host).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

TF_SERIES = "2.21"
TF_PIN = "2.21.0"
# Distributions the install may replace, with the module each is imported as.
WATCHED = {"tensorflow": "tensorflow", "keras": "keras", "tf-keras": "tf_keras", "protobuf": "google.protobuf",
           "h5py": "h5py", "numpy": "numpy", "ml-dtypes": "ml_dtypes", "tensorboard": "tensorboard"}


class RestartRequired(RuntimeError):
    """TensorFlow was replaced on disk while an older one is loaded: restart the session."""


def installed_version(package: str) -> str | None:
    """The installed version of ``package``, or None (no import, so it is cheap and safe)."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def gpu_runtime() -> bool:
    """True on a Colab GPU runtime (the NVIDIA driver's ``nvidia-smi`` is there)."""
    return shutil.which("nvidia-smi") is not None or Path("/dev/nvidia0").exists()


def tensorflow_requirement(tf_version: str | None, gpu: bool) -> str | None:
    """The TensorFlow to install, or None to keep the installed one (already 2.21.x)."""
    if tf_version is not None and (tf_version == TF_SERIES or tf_version.startswith(TF_SERIES + ".")):
        return None
    return f"tensorflow[and-cuda]=={TF_PIN}" if gpu else f"tensorflow=={TF_PIN}"


def install(
    course_root: str | Path,
    *,
    run: Callable[..., Any] = subprocess.run,
    gpu: bool | None = None,
) -> str:
    """Install what the course needs on Colab and return one line saying what was done.

    ``run`` is ``subprocess.run`` (the tests pass a recorder). Raises :class:`RestartRequired`
    when TensorFlow had to be replaced after it was imported in this session.
    """
    root = Path(course_root)
    gpu = gpu_runtime() if gpu is None else gpu
    versions_before = {name: installed_version(name) for name in WATCHED}
    before = versions_before["tensorflow"]
    wanted = tensorflow_requirement(before, gpu)
    pip: Sequence[str] = [sys.executable, "-m", "pip", "install", "-q"]
    if wanted:
        run([*pip, wanted], check=True)
    run([*pip, "-r", str(root / "requirements-colab.txt")], check=True)
    message = (f"kept Colab's TensorFlow {before}; installed requirements-colab.txt" if wanted is None else
               f"installed {wanted} (Colab had {before or 'no TensorFlow'}) and requirements-colab.txt")
    stale = stale_modules(versions_before)
    if stale:
        raise RestartRequired(f"{message}; replaced while loaded: {', '.join(stale)}. "
                              "Now Runtime → Restart session, then run this cell again")
    return message


def stale_modules(versions_before: dict[str, str | None]) -> list[str]:
    """``["protobuf 5.29.6 → 6.31.1", …]``: watched packages whose version changed on disk while
    this session has them imported (their old code stays loaded until a restart)."""
    stale = []
    for name, old in versions_before.items():
        new = installed_version(name)
        if new != old and WATCHED[name] in sys.modules:
            stale.append(f"{name} {old} → {new}")
    return stale
