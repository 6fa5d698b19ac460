"""What the setup cell does on Colab after it has cloned the course: install what Colab lacks.

Colab (Python 3.12 in 2026, working directory ``/content``) ships its own TensorFlow. The
course keeps it when it is 2.21; otherwise it installs the 2.21 build that fits the runtime
— ``tensorflow[and-cuda]`` on a GPU runtime (NVIDIA's CUDA and cuDNN as pip packages), the
plain wheel elsewhere — and then the rest of ``requirements-colab.txt``. If TensorFlow was
already imported in the session, the new one only loads after *Runtime → Restart session*;
:func:`install` then stops with that instruction. Used by the setup cell of notebooks 00–06
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
    before = installed_version("tensorflow")
    wanted = tensorflow_requirement(before, gpu)
    pip: Sequence[str] = [sys.executable, "-m", "pip", "install", "-q"]
    if wanted:
        run([*pip, wanted], check=True)
    run([*pip, "-r", str(root / "requirements-colab.txt")], check=True)
    if wanted is None:
        return f"kept Colab's TensorFlow {before}; installed requirements-colab.txt"
    message = f"installed {wanted} (Colab had {before or 'no TensorFlow'}) and requirements-colab.txt"
    if "tensorflow" in sys.modules:
        raise RestartRequired(f"{message}: now Runtime → Restart session, then run this cell again")
    return message
