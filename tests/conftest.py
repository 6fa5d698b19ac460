"""Shared test fixtures. Tests import no TensorFlow at collection time."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_configure(config) -> None:
    """Give the test processes a working Ctrl-C even when started in the background.

    A shell without job control starts background jobs (`make test &`, nohup) with SIGINT
    ignored, and an ignored signal is inherited by every child: then the tests that press
    Ctrl-C on a launcher (clusters, Horovod, netns, the background build) see nothing happen.
    A handler (unlike "ignore") is reset to the default at exec, so the children get it back.
    """
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
