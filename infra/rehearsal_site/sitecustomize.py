"""Installs the course's GPU rehearsal in every child Python process (see infra/rehearsal.py).

On ``PYTHONPATH`` only while ``COURSE_REHEARSE_GPUS`` is set; without it, it does nothing.
"""

import os

if os.environ.get("COURSE_REHEARSE_GPUS"):
    import sys
    from pathlib import Path

    _root = str(Path(__file__).resolve().parents[2])
    if _root not in sys.path:
        sys.path.append(_root)  # the course's root, after everything else: infra must import
    from infra import rehearsal

    rehearsal.activate()
