"""Smoke/full settings and project paths: the one place that reads ``COURSE_SMOKE``.

``make test`` and CI set ``COURSE_SMOKE=1``; notebooks then train for seconds instead of
minutes. Notebooks never read the variable themselves: they call :func:`choose` or look at
``course.smoke``. Introduced in notebook 00, used by every notebook.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

SMOKE_ENV_VAR = "COURSE_SMOKE"

PROJECT_ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
DATA_DIR = PROJECT_ROOT / "data"
IMAGES_DIR = PROJECT_ROOT / "images"
BUILD_DIR = PROJECT_ROOT / "build"

# Where the course is published: the Colab badges and the Colab setup cell use this.
COURSE_REPO = "tf-distributed-course/gpu-distributed-training"
COURSE_BRANCH = "main"


def _read_smoke() -> bool:
    value = os.environ.get(SMOKE_ENV_VAR, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{SMOKE_ENV_VAR}={value!r}: use 1 (smoke settings) or 0 (full settings)")


SMOKE: bool = _read_smoke()


def is_smoke() -> bool:
    """Return True when the course runs with smoke settings (tiny data, one epoch).

    Used in every notebook through :func:`choose` and ``course.smoke``.
    """
    return SMOKE


def choose(smoke: T, full: T) -> T:
    """Pick the smoke-mode or the full-mode value of a setting.

    ``epochs = utils.choose(smoke=1, full=10)``; used in every notebook.
    """
    return smoke if SMOKE else full
