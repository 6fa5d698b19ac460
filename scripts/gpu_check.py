"""``make gpu-check``: run the GPU path of every notebook that has one on your GPUs and write a report.

None of the course's maintainers' machines has a GPU: ``make test`` runs the GPU branches under
the GPU rehearsal (:mod:`infra.rehearsal`, on the CPU), and this script runs them on real GPUs,
for people who have them. It executes each notebook with smoke settings under
``pytest --nbval-lax``, times it, keeps its whole log, and writes

* ``build/gpu-check/NN.log`` — each notebook's pytest output;
* ``build/gpu-check.json`` — GPUs (name, memory), driver, TensorFlow build (CUDA, cuDNN), the
  device plan, and per notebook: pass/fail, seconds, the failing cells and their errors;
* ``build/gpu-check.md`` — the same as a short Markdown table to paste into an issue.

Both also hold **what changes on a real GPU** (:data:`GPU_DIFFERENCES`): the mechanisms the CPU
run of the notebooks cannot show (NCCL vs RING, float16 vs bfloat16, TF32, XLA on the GPU, peak
memory), each next to what :func:`gpu_facts` measured on this machine — or "not measured".

It refuses with one line (exit code 2) when ``nvidia-smi`` lists no GPU, and when TensorFlow sees
fewer GPUs than ``nvidia-smi`` (the CPU-only wheel: install ``tensorflow[and-cuda]``). A notebook
that hangs is stopped after ``--notebook-timeout`` seconds and reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from infra.devices import detect_gpus
from infra.process import run_command, run_python
from utils import config
from utils.devices import GpuInfo, plan_devices

# Every notebook with a GPU path (07 runs in Horovod's own environment, 10 on network namespaces).
NOTEBOOKS = ["00", "01", "02", "03", "04", "05", "06", "08", "09"]
NO_GPU = "gpu-check: no GPU found (nvidia-smi lists none): this check is for machines with GPUs; `make test` checks the CPU path"
CPU_BUILD = ("gpu-check: TensorFlow sees {seen} of the {listed} GPU(s) nvidia-smi lists — the CPU-only wheel? "
             "Install the GPU build: pip install 'tensorflow[and-cuda]==2.21.0'")
# What changes on a real GPU (notebook 08's box): (mechanism, the CPU run, what to look at, fact key).
GPU_DIFFERENCES = [
    ("all-reduce", "RING collectives on logical CPU devices",
     "MirroredStrategy asks for NCCL with one replica per physical GPU, RING with logical GPUs", "allreduce"),
    ("16-bit compute", "mixed_bfloat16, no loss scaling needed",
     "mixed_float16 + loss scaling (overflowing steps are skipped); bfloat16 needs compute capability 8.0+",
     "compute_capability"),
    ("TF32", "none (CPU)", "on by default on Ampere+ (8.0+): float32 matmuls lose precision, 1e-5 tolerances "
     "may fail, mixed_float16 gains less", "tf32"),
    ("XLA", "compiled for the CPU", "compiled for the GPU: other kernels, other speed-up", "xla"),
    ("peak memory", "not available on a CPU", "tf.config.experimental.get_memory_info('GPU:0')['peak']",
     "peak_memory_mb"),
]
_FACTS_CODE = """
import json, tensorflow as tf
facts = {}
gpus = tf.config.list_physical_devices("GPU")
if not gpus:
    print(json.dumps({"error": "TensorFlow sees no GPU"}))
    raise SystemExit
def fact(key, fn):
    try:
        facts[key] = fn()
    except Exception as error:  # a fact that cannot be measured says why
        facts[key] = f"error: {type(error).__name__}: {str(error)[:100]}"
cc = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability")
fact("compute_capability", lambda: ".".join(map(str, cc)) if cc else "unknown")
fact("tf32", lambda: "enabled" if tf.config.experimental.tensor_float_32_execution_enabled() else "disabled")
def allreduce():
    ops = tf.distribute.MirroredStrategy().extended._collective_ops
    return f"{type(ops).__name__}, {ops._options.implementation.value}"
fact("allreduce", allreduce)
def xla():
    with tf.device("GPU:0"):
        return float(tf.function(lambda x: tf.reduce_sum(x * 2.0), jit_compile=True)(tf.ones(8)).numpy())
fact("xla", lambda: "compiles and runs on GPU:0" if xla() == 16.0 else "wrong result")
def peak():
    with tf.device("GPU:0"):
        tf.linalg.matmul(tf.ones((2048, 2048)), tf.ones((2048, 2048))).numpy()
    return round(tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20, 1)
fact("peak_memory_mb", peak)
print(json.dumps(facts))
"""
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FAILED_CELL = re.compile(r"^FAILED \S+::Cell (\d+)")
_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|StopIteration|Interrupt))\b:?\s*(.*)$")


def driver_version() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        return out.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def tensorflow_build(timeout: float = 300) -> dict[str, Any]:
    """TensorFlow's version, build info and the GPUs it sees, from a fresh process (a slow or
    broken import gives ``{"error": ...}``, never an exception)."""
    code = ("import json, tensorflow as tf; b = tf.sysconfig.get_build_info(); "
            "print(json.dumps({'version': tf.__version__, 'cuda': b.get('cuda_version'), 'cudnn': b.get('cudnn_version'), "
            "'gpus_seen': len(tf.config.list_physical_devices('GPU'))}))")
    return _probe(code, "importing TensorFlow", timeout)


def gpu_facts(timeout: float = 300) -> dict[str, Any]:
    """What this machine's GPU 0 does where the CPU run differs (keys of :data:`GPU_DIFFERENCES`),
    measured in a fresh process; ``{"error": ...}`` when it cannot run, never an exception."""
    return _probe(_FACTS_CODE, "the GPU probe", timeout)


def _probe(code: str, what: str, timeout: float) -> dict[str, Any]:
    """Run ``code`` in a fresh Python: the JSON of its last printed line, or ``{"error": ...}``."""
    result = run_python(code, timeout=timeout)
    if result.timed_out:
        return {"error": f"{what} took longer than {timeout:.0f} s"}
    if not result.ok:
        return {"error": result.tail(1)}
    return json.loads(result.stdout.strip().splitlines()[-1])


def failures(log: str) -> list[str]:
    """``["cell 12: AssertionError: ..."]`` for each failing cell of an nbval log."""
    lines = [_ANSI.sub("", line) for line in log.splitlines()]
    cells = [int(m[1]) for line in lines if (m := _FAILED_CELL.match(line))]
    errors: dict[int, str] = {}
    current = None
    for line in lines:
        if (m := re.search(r"::Cell (\d+) _+$", line)) or (m := re.match(r"Cell (\d+): Cell execution", line)):
            current = int(m[1])
        elif current is not None and (m := _ERROR_LINE.match(line.strip())):
            errors[current] = f"{m[1]}: {m[2]}".rstrip(": ")[:160]  # the last error line of the cell wins
    return [f"cell {c}: {errors.get(c, 'failed')}" for c in cells]


def run_notebook(path: Path, log_dir: Path, timeout: float) -> dict[str, Any]:
    """Run one notebook under nbval; its log goes to ``log_dir/NN.log``."""
    log_path = log_dir / f"{path.name[:2]}.log"
    start = time.perf_counter()
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env",
            f"--nbval-cell-timeout={int(timeout)}", str(path)]
    out = run_command(argv, env={"COURSE_SMOKE": "1"}, timeout=timeout, cwd=config.PROJECT_ROOT)
    log = out.stdout + out.stderr
    if out.timed_out:  # the notebook and its kernel were killed
        problems = [f"timed out after {timeout:.0f} s (hung?)"]
    else:
        problems = [] if out.ok else failures(log) or [f"pytest exit code {out.returncode}"]
    log_path.write_text(log)
    return {"notebook": path.name, "passed": not problems, "seconds": round(time.perf_counter() - start, 1),
            "failures": problems, "log": str(log_path)}


def make_report(gpus: list[GpuInfo], driver: str, tf_build: dict[str, Any], results: list[dict[str, Any]],
                facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report (pure: the tests build one from made-up results). ``facts`` are
    :func:`gpu_facts`' measurements; a mechanism without one is reported "not measured"."""
    plan = plan_devices(gpus, 2)
    facts = facts or {}
    differences = [{"mechanism": m, "cpu_run": cpu, "look_at": look,
                    "measured": str(facts[key]) if key in facts else f"not measured ({facts.get('error', 'no probe')})"}
                   for m, cpu, look, key in GPU_DIFFERENCES]
    return {
        "gpus": [{"name": g.name, "memory_mb": g.memory_mb} for g in gpus],
        "driver": driver,
        "tensorflow": tf_build,
        "python": platform.python_version(),
        "rehearsal": os.environ.get("COURSE_REHEARSE_GPUS"),
        "plan": {"kind": plan.kind, "replicas": plan.replicas, "describe": plan.describe()},
        "notebooks": results,
        "gpu_differences": differences,
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
    for r in report["notebooks"]:
        result = "pass" if r["passed"] else "FAIL: " + "; ".join(r["failures"]).replace("|", "\\|")
        lines.append(f"| {r['notebook']} | {result} | {r['seconds']:.0f} |")
    lines += ["", "What changes on a real GPU:", "",
              "| mechanism | CPU run of the notebooks | what to look at | measured on this machine |",
              "|---|---|---|---|"]
    for d in report.get("gpu_differences", []):
        lines.append("| " + " | ".join(str(d[k]).replace("|", "\\|")
                                        for k in ("mechanism", "cpu_run", "look_at", "measured")) + " |")
    if report.get("rehearsal"):
        lines.append(f"\nA rehearsal on the CPU (COURSE_REHEARSE_GPUS={report['rehearsal']}), not a GPU run.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", nargs="*", default=NOTEBOOKS, help="numbers, e.g. 00 04")
    parser.add_argument("--notebooks-dir", type=Path, default=config.NOTEBOOKS_DIR)
    parser.add_argument("--out", type=Path, default=config.BUILD_DIR)
    parser.add_argument("--notebook-timeout", type=float, default=1800, help="seconds before a notebook counts as hung")
    args = parser.parse_args(argv)
    gpus = detect_gpus()  # nvidia-smi's list (TensorFlow is not imported in this process)
    if not gpus:
        print(NO_GPU, file=sys.stderr)
        return 2
    tf_build = tensorflow_build()
    if "error" not in tf_build and tf_build["gpus_seen"] < len(gpus):
        print(CPU_BUILD.format(seen=tf_build["gpus_seen"], listed=len(gpus)), file=sys.stderr)
        return 2
    log_dir = args.out / "gpu-check"
    log_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for number in args.notebooks:
        (path,) = sorted(args.notebooks_dir.glob(f"{number}_*.ipynb"))
        print(f"gpu-check: {path.name} ...", flush=True)
        results.append(run_notebook(path, log_dir, args.notebook_timeout))
        print(f"gpu-check: {path.name} {'passed' if results[-1]['passed'] else 'FAILED'} in {results[-1]['seconds']:.0f} s")
    report = make_report(gpus, driver_version(), tf_build, results, gpu_facts())
    (args.out / "gpu-check.json").write_text(json.dumps(report, indent=1))
    (args.out / "gpu-check.md").write_text(markdown(report))
    print(markdown(report))
    print(f"gpu-check: wrote {args.out / 'gpu-check.json'}, gpu-check.md and the logs in {log_dir} — "
          "please share the table (README, GPUs)")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
