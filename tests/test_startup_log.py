"""TensorFlow's native start-up notices stay out of a notebook's setup cell; other lines don't."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infra.startup_log import without_notices

ROOT = Path(__file__).resolve().parents[1]

# What TensorFlow 2.21 writes to descriptor 2 on this machine's first import and device listing
STARTUP = """\
WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
I0000 00:00:1795871548.165030    6137 port.cc:153] oneDNN custom operations are on. You may see \
slightly different numerical results due to floating-point round-off errors.
I0000 00:00:1795871548.165467    6137 cudart_stub.cc:31] Could not find cuda drivers on your \
machine, GPU will not be used.
E0000 00:00:1795871551.464363    6137 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA \
error: Failed call to cuInit: UNKNOWN ERROR (303)
"""


def test_notices_go_and_other_lines_stay() -> None:
    real = "E0000 00:00:1.0 1 op_kernel.cc:1] OOM when allocating tensor\n"
    assert without_notices(STARTUP) == ""
    assert without_notices(STARTUP + real) == real


@pytest.mark.slow
def test_prepare_shows_no_notice_but_passes_a_real_error_on() -> None:
    program = (
        "import os\n"
        "from infra import devices, startup_log\n"
        "devices.prepare(logical_devices=2)\n"
        "with startup_log.quiet_startup():\n"
        "    os.write(2, b'a real error\\n')\n"
    )
    run = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, check=True)
    assert run.stderr.strip() == "a real error", run.stderr
    unquiet = subprocess.run([sys.executable, "-c", "import tensorflow"], cwd=ROOT,
                             capture_output=True, text=True, timeout=300, check=True)
    assert "absl::InitializeLog" in unquiet.stderr  # the control: TensorFlow does write them
