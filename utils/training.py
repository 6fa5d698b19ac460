"""The worker kit: what the training notebooks and their worker programs share.

The two checks every distributed run ends with: a weights digest (equal digests =
bit-identical weights on every worker/rank) and the largest weight difference between two
runs; and the worker scripts' ``--pause`` option. The doodle arrays they train on come from
the data layer (``quickdraw.doodle_arrays``). The tf.distribute lessons themselves
(strategies, scopes, ``strategy.run``, checkpoints) stay in the notebooks; the model is
:func:`utils.models.build_cnn`. Used by notebooks 04, 05 and 07 and by ``scripts/workers/``.
NumPy only at import time and no NumPy-2-only API: notebook 07's Horovod environment
(TensorFlow 2.12, NumPy 1.23) uses :func:`weights_digest` and :func:`max_weight_difference` too.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


def add_pause_option(parser: argparse.ArgumentParser) -> None:
    """Give a worker script ``--pause LINE SECONDS`` (see :func:`pause_after`)."""
    parser.add_argument(
        "--pause", nargs=2, metavar=("LINE", "SECONDS"), default=None,
        help="after printing a line that starts with LINE, sleep SECONDS (the notebook acts there)",
    )  # fmt: skip


def pause_after(line: str, pause: Sequence[str] | None) -> None:
    """Sleep ``pause[1]`` seconds if ``line`` (just printed) starts with ``pause[0]``.

    Notebooks 04 and 10 kill a worker, or cut its cable, when it prints a given line; the pause
    keeps the worker at that line however late a busy notebook reads it. Used by the worker
    scripts of notebooks 04 and 10.
    """
    if pause and line.startswith(pause[0]):
        time.sleep(float(pause[1]))


def max_weight_difference(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Largest absolute difference between two lists of weight arrays of the same shapes.

    ``max_weight_difference(model_a.get_weights(), model_b.get_weights()) < 1e-5`` is how
    notebooks 04, 05 and 07 check that two ways of training computed the same thing.
    """
    if len(a) != len(b):
        raise ValueError(f"different numbers of arrays: {len(a)} and {len(b)}")
    worst = 0.0
    for i, (u, v) in enumerate(zip(a, b, strict=True)):
        u, v = np.asarray(u), np.asarray(v)
        if u.shape != v.shape:
            raise ValueError(f"array {i}: shapes {u.shape} and {v.shape} differ")
        if u.size:
            worst = max(worst, float(np.max(np.abs(u.astype(np.float64) - v.astype(np.float64)))))
    return worst


def weights_digest(weights: Iterable[Any]) -> str:
    """A short SHA-256 of a list of arrays (dtypes, shapes and bytes): equal digests mean
    bit-identical weights.

    Worker processes and Horovod ranks report it so that notebooks 04, 05 and 07 can check
    that every replica ended with the same weights.
    """
    h = hashlib.sha256()
    count = 0
    for w in weights:
        arr = np.ascontiguousarray(np.asarray(w))
        h.update(str((arr.dtype.str, arr.shape)).encode())
        h.update(arr.tobytes())
        count += 1
    if count == 0:
        raise ValueError("no arrays to fingerprint")
    return h.hexdigest()[:16]
