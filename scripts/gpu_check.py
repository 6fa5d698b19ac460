"""``make gpu-check``: run the GPU path of notebooks 00–06 on your GPUs and write a report to share.

None of the course's maintainers' machines has a GPU, so the GPU branches of the notebooks are
made right by construction (one device plan, tested with faked GPUs) and checked here, by
people who have GPUs. The script executes each notebook with smoke settings under
``pytest --nbval-lax``, times it, and writes

* ``build/gpu-check.json`` — GPUs (name, memory), driver, TensorFlow build (CUDA, cuDNN),
  the device plan (replicas and kind), and pass/fail and seconds per notebook;
* ``build/gpu-check.md`` — the same as a short Markdown table to paste into an issue.

Without a GPU it refuses with one line (exit code 2): the CPU path is what ``make test`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from infra.devices import detect_gpus  # noqa: E402
from utils import config  # noqa: E402
from utils.devices import GpuInfo, plan_devices  # noqa: E402

NOTEBOOKS = [f"{n:02d}" for n in range(7)]
NO_GPU = "gpu-check: no GPU found (nvidia-smi lists none): this check is for machines with GPUs; `make test` checks the CPU path"


def driver_version() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        return out.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def tensorflow_build() -> dict[str, Any]:
    """TensorFlow's version, build info and the GPUs it sees, from a fresh process."""
    code = ("import json, tensorflow as tf; b = tf.sysconfig.get_build_info(); "
            "print(json.dumps({'version': tf.__version__, 'cuda': b.get('cuda_version'), 'cudnn': b.get('cudnn_version'), "
            "'gpus_seen': len(tf.config.list_physical_devices('GPU'))}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_notebook(path: Path, timeout: float) -> dict[str, Any]:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--nbval-lax", "--nbval-current-env",
         f"--nbval-cell-timeout={int(timeout)}", str(path)],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "COURSE_SMOKE": "1"},
    )
    tail = [line for line in result.stdout.splitlines() if line.strip()][-1:] or [""]
    return {"notebook": path.name, "passed": result.returncode == 0, "seconds": round(time.perf_counter() - start, 1),
            "summary": tail[0][:200]}


def make_report(gpus: list[GpuInfo], driver: str, tf_build: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON report (pure: the tests build one from made-up results)."""
    plan = plan_devices(gpus, 2)
    return {
        "gpus": [{"name": g.name, "memory_mb": g.memory_mb} for g in gpus],
        "driver": driver,
        "tensorflow": tf_build,
        "python": platform.python_version(),
        "plan": {"kind": plan.kind, "replicas": plan.replicas, "describe": plan.describe()},
        "notebooks": results,
        "passed": all(r["passed"] for r in results) and bool(results),
    }


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: one header table of the machine, one row per notebook."""
    gpus = ", ".join(f"{g['name']} ({g['memory_mb']} MiB)" for g in report["gpus"])
    tf = report["tensorflow"]
    lines = [
        "| GPUs | driver | TensorFlow (CUDA, cuDNN) | replicas |",
        "|---|---|---|---|",
        f"| {gpus} | {report['driver']} | {tf.get('version')} ({tf.get('cuda')}, {tf.get('cudnn')}) | "
        f"{report['plan']['replicas']} ({report['plan']['kind']}) |",
        "",
        "| notebook | result | seconds |",
        "|---|---|---|",
    ]
    lines += [f"| {r['notebook']} | {'pass' if r['passed'] else 'FAIL: ' + r['summary']} | {r['seconds']:.0f} |"
              for r in report["notebooks"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", nargs="*", default=NOTEBOOKS, help="numbers, e.g. 00 04")
    parser.add_argument("--out", type=Path, default=config.BUILD_DIR)
    parser.add_argument("--cell-timeout", type=float, default=900)
    args = parser.parse_args(argv)
    gpus = detect_gpus()
    if not gpus:
        print(NO_GPU, file=sys.stderr)
        return 2
    tf_build = tensorflow_build()
    results = []
    for number in args.notebooks:
        (path,) = sorted(config.NOTEBOOKS_DIR.glob(f"{number}_*.ipynb"))
        print(f"gpu-check: {path.name} ...", flush=True)
        results.append(run_notebook(path, args.cell_timeout))
        print(f"gpu-check: {path.name} {'passed' if results[-1]['passed'] else 'FAILED'} in {results[-1]['seconds']:.0f} s")
    report = make_report(gpus, driver_version(), tf_build, results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu-check.json").write_text(json.dumps(report, indent=1))
    (args.out / "gpu-check.md").write_text(markdown(report))
    print(markdown(report))
    print(f"gpu-check: wrote {args.out / 'gpu-check.json'} and gpu-check.md — please share the table (README, GPUs)")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
