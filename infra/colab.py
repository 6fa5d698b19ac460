"""What the setup cell does on Colab after cloning the course: install what Colab lacks.

Colab's TensorFlow is kept when it is 2.21, else 2.21 is installed (``tensorflow[and-cuda]`` on a
GPU runtime), then ``requirements-colab.txt``. A package replaced while imported needs *Runtime →
Restart session*: :func:`install` then says so. Setup cells of notebooks 00–06 and 08+.
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
    """A package was replaced on disk while an older one is loaded: restart the session."""


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


def install(course_root: str | Path, *, run: Callable[..., Any] = subprocess.run,
            gpu: bool | None = None) -> str:
    """Install what the course needs on Colab and return one line saying what was done; raise
    :class:`RestartRequired` when a package imported in this session was replaced. ``run`` is
    ``subprocess.run`` (the tests pass a recorder)."""
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
    stale = [f"{name} {old} → {installed_version(name)}" for name, old in versions_before.items()
             if installed_version(name) != old and WATCHED[name] in sys.modules]  # old code still loaded
    if stale:
        raise RestartRequired(f"{message}; replaced while loaded: {', '.join(stale)}. "
                              "Now Runtime → Restart session, then run this cell again")
    return message
