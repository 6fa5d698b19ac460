"""TensorFlow's native start-up notices, kept out of a notebook's first output.

While TensorFlow loads and first looks for GPUs, its C++ code writes a few notices straight to
file descriptor 2, before its logging reads ``TF_CPP_MIN_LOG_LEVEL``: "All log messages before
absl::InitializeLog() …", "oneDNN custom operations are on …", "Could not find cuda drivers …".
Jupyter shows them in red under every notebook's setup cell. :func:`quiet_startup` (used by
``infra.devices.prepare``) catches descriptor 2 while TensorFlow starts and passes on every line
that is not one of these notices, so a real error still shows.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

STARTUP_NOTICES = re.compile(
    r"absl::InitializeLog\(\) is called"
    r"|oneDNN custom operations are on"
    r"|cudart_stub\.cc.*Could not find cuda drivers"
    r"|failed call to cuInit"
    r"|Unable to register cu(DNN|FFT|BLAS) factory"
    r"|computation placer already registered"
    r"|This TensorFlow binary is optimized to use available CPU instructions"
    r"|rebuild TensorFlow with the appropriate compiler flags"
)


def without_notices(text: str) -> str:
    """``text`` without the lines that are TensorFlow start-up notices."""
    lines = text.splitlines(keepends=True)
    return "".join(line for line in lines if not STARTUP_NOTICES.search(line))


@contextmanager
def quiet_startup() -> Iterator[None]:
    """Hold what is written to descriptor 2 inside the block; afterwards (also after an error)
    write it to ``sys.stderr`` without TensorFlow's start-up notices."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            sys.stderr.write(without_notices(caught.read().decode(errors="replace")))
            sys.stderr.flush()
