"""Shared helpers for the course *GPU distributed training with TensorFlow*.

Every notebook starts with ``course = utils.setup(chapter=N, ...)``. Importing this
package is cheap: TensorFlow is imported only when a helper needs it, so that test
collection and the Horovod environment (TensorFlow 2.12) stay fast and compatible.

Modules (the notebook that introduces each is named in its docstring):

- :mod:`utils.config`        – smoke/full mode, project paths (all notebooks)
- :mod:`utils.notebook`      – ``setup`` and ``save_fig`` (all notebooks, from 00)
- :mod:`utils.devices`       – logical devices, device report, strategy devices (00, 02, 03)
- :mod:`utils.timing`        – Timer, Throughput, benchmark, EpochTimer (00, 01, 04–06)
- :mod:`utils.process`       – run a snippet in a fresh interpreter (03 and tests)
- :mod:`utils.allreduce`     – ring all-reduce and parameter-server simulations (01)
- :mod:`utils.syncsim`       – synchronous vs asynchronous SGD simulation (01)
- :mod:`utils.plots`         – the ring step by step, worker timelines (01)
- :mod:`utils.cluster`       – TF_CONFIG, local worker processes, in-process PS cluster (02, 04–06)
- :mod:`utils.training`      – doodle CNN, cached arrays, weight comparisons (04, 05)
- :mod:`utils.quickdraw`     – Quick, Draw! formats, built-in doodles, renderer, tf.data (04, 06, 07)
- :mod:`utils.doodle_models` – the capstone's MobileNet and compact CNN (06)
- :mod:`utils.metrics`       – MAP@3 as NumPy and as a Keras metric (06)
- :mod:`utils.submission`    – write and validate a Kaggle submission (06)
- :mod:`utils.horovod`       – launch ``horovodrun`` jobs, read per-rank output (07)
- :mod:`utils.horovod_job`   – what notebook 07's Horovod scripts share (07)
- :mod:`utils.nbclean`       – strip notebook outputs (``make format`` and the hygiene test)
"""

from utils.config import SMOKE, choose, is_smoke
from utils.notebook import save_fig, setup

__all__ = ["SMOKE", "choose", "is_smoke", "save_fig", "setup"]
