"""Shared helpers for the course *GPU distributed training with TensorFlow*.

Every notebook starts with ``course = utils.setup(chapter=N, plan=infra.devices.prepare(...))``. Importing this
package is cheap: TensorFlow is imported only when a helper needs it, so that test
collection and the Horovod environment (TensorFlow 2.12) stay fast and compatible.

The lesson helpers a notebook reads (the notebook that introduces each is named in its
docstring):

- :mod:`utils.config`      – smoke/full mode, project paths (all notebooks)
- :mod:`utils.notebook`    – ``setup``: versions, seeds, what the replicas are (all notebooks, from 00)
- :mod:`utils.devices`     – the device plan for kernels and local workers, reports (00, 02, 03)
- :mod:`utils.figures`     – plot style, ``save_fig``, notebook 01's ring and timeline figures
- :mod:`utils.timing`      – Timer, Throughput, benchmark, EpochTimer (00, 01, 04–06)
- :mod:`utils.tfconfig`    – TF_CONFIG and cluster specs, ``python -m utils.tfconfig`` (02)
- :mod:`utils.allreduce`   – ring all-reduce and parameter-server simulations (01)
- :mod:`utils.syncsim`     – synchronous vs asynchronous SGD simulation (01)
- :mod:`utils.models`      – the small CNN and the capstone's MobileNet (04–07)
- :mod:`utils.training`    – worker kit: weights digest and difference (04, 05, 07)
- :mod:`utils.metrics`     – MAP@3 as NumPy and as a Keras metric (06)
- :mod:`utils.perf`        – input-bound check, the profiler trace read in code, tf.data service (06, 08)
- :mod:`utils.submission`  – write and validate a Kaggle submission (06)
- :mod:`utils.listing`     – ``show_program``: a worker program whole, distributed lines highlighted (04, 05, 10)
- :mod:`utils.upstream`    – ``bug_still_there``: a lesson about an upstream bug, once it is fixed (02, 04)

Beside it: the Quick, Draw! data layer is its own package, :mod:`quickdraw` (04, 06–08), and the
machinery that runs the lessons — child processes, local clusters, network namespaces, Horovod
jobs, the Colab install, applying the device plan, the GPU rehearsal — is :mod:`infra`, which a
student need not read (infra/README.md). Project tooling lives in ``tools/``.
"""

from utils.config import SMOKE, choose, is_smoke
from utils.figures import save_fig
from utils.notebook import setup

__all__ = ["SMOKE", "choose", "is_smoke", "save_fig", "setup"]
