"""make gpu-check: refuses clearly without a GPU; its report is written from measured results."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from utils.config import PROJECT_ROOT
from utils.devices import GpuInfo

sys.path.insert(0, str(PROJECT_ROOT / "scripts"))
import gpu_check  # noqa: E402


def test_refuses_with_one_line_without_a_gpu(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(gpu_check, "detect_gpus", lambda: [])
    assert gpu_check.main(["--out", str(tmp_path)]) == 2
    assert not list(tmp_path.iterdir())  # no report without a GPU


@pytest.mark.slow
def test_the_real_command_refuses_here() -> None:
    result = subprocess.run([sys.executable, "scripts/gpu_check.py"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                            timeout=120, env={"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "-1"})
    assert result.returncode == 2 and result.stderr.strip() == gpu_check.NO_GPU


def test_refuses_when_tensorflow_sees_fewer_gpus(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setattr(gpu_check, "detect_gpus", lambda: [GpuInfo("Tesla T4", 15360)])
    monkeypatch.setattr(gpu_check, "tensorflow_build", lambda: {"version": "2.21.0", "gpus_seen": 0})
    assert gpu_check.main(["--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == gpu_check.CPU_BUILD.format(seen=0, listed=1)
    assert not list(tmp_path.iterdir())


def test_failing_cells_are_found_in_an_nbval_log() -> None:
    log = "\n".join([
        "\x1b[91m___ notebooks/00_x.ipynb::Cell 3 ___\x1b[0m",
        "Cell 3: Cell execution caused an exception",
        "\x1b[31mValueError\x1b[39m                Traceback (most recent call last)",
        "\x1b[31mAssertionError\x1b[39m: fails on purpose",
        "FAILED notebooks/00_x.ipynb::Cell 3 - Notebook cell execution failed",
        "FAILED notebooks/00_x.ipynb::Cell 5 - Notebook cell execution failed",
    ])
    assert gpu_check.failures(log) == ["cell 3: AssertionError: fails on purpose", "cell 5: failed"]


def test_report_and_table(monkeypatch, tmp_path) -> None:
    gpus = [GpuInfo("Tesla T4", 15360)]
    results = [{"notebook": "00_course_overview.ipynb", "passed": True, "seconds": 41.2, "failures": []},
               {"notebook": "02_strategy_apis.ipynb", "passed": False, "seconds": 99.0,
                "failures": ["cell 7: AssertionError: x | y"]}]
    report = gpu_check.make_report(gpus, "550.54", {"version": "2.21.0", "cuda": "12.5", "cudnn": "9"}, results)
    assert report["plan"] == {"kind": "logical-gpu", "replicas": 2, "describe": report["plan"]["describe"]}
    assert report["passed"] is False  # one notebook failed
    table = gpu_check.markdown(report)
    assert "| Tesla T4 (15360 MiB) | 550.54 | 2.21.0 (12.5, 9) | 2 (logical-gpu) |" in table
    assert "| 02_strategy_apis.ipynb | FAIL: cell 7: AssertionError: x \\| y | 99 |" in table
    # the whole run, with notebooks faked: files written, exit code from the results
    monkeypatch.setattr(gpu_check, "detect_gpus", lambda: gpus)
    monkeypatch.setattr(gpu_check, "tensorflow_build", lambda: {"version": "2.21.0", "gpus_seen": 1})
    monkeypatch.setattr(gpu_check, "driver_version", lambda: "550.54")
    monkeypatch.setattr(gpu_check, "gpu_facts", lambda: {"tf32": "enabled"})
    monkeypatch.setattr(gpu_check, "run_notebook", lambda path, log_dir, timeout: {**results[0], "notebook": path.name})
    assert gpu_check.main(["--notebooks", "00", "03", "--out", str(tmp_path)]) == 0
    saved = json.loads((tmp_path / "gpu-check.json").read_text())
    assert [r["notebook"] for r in saved["notebooks"]] == ["00_course_overview.ipynb", "03_gpu_memory_configuration.ipynb"]
    assert (tmp_path / "gpu-check.md").read_text() == gpu_check.markdown(saved)


def test_what_changes_on_a_real_gpu_shows_only_measured_facts() -> None:
    """Every mechanism of notebook 08's box has a row; a value appears only if the probe measured it."""
    gpus = [GpuInfo("NVIDIA A100", 40960)]
    facts = {"allreduce": "CollectiveAllReduce, NCCL", "tf32": "enabled", "peak_memory_mb": 48.0}
    report = gpu_check.make_report(gpus, "550.54", {"version": "2.21.0"}, [], facts)
    rows = {d["mechanism"]: d for d in report["gpu_differences"]}
    assert list(rows) == ["all-reduce", "16-bit compute", "TF32", "XLA", "peak memory"]
    assert rows["all-reduce"]["measured"] == "CollectiveAllReduce, NCCL" and rows["TF32"]["measured"] == "enabled"
    assert rows["XLA"]["measured"] == "not measured (no probe)"
    table = gpu_check.markdown(report)
    assert "What changes on a real GPU:" in table
    assert "| TF32 | none (CPU) |" in table and "| enabled |" in table
    failed = gpu_check.make_report(gpus, "550.54", {}, [], {"error": "TensorFlow sees no GPU"})
    assert {d["measured"] for d in failed["gpu_differences"]} == {"not measured (TensorFlow sees no GPU)"}


def test_the_gpu_probe_is_valid_python() -> None:
    import ast

    ast.parse(gpu_check._FACTS_CODE)
    assert {key for *_, key in gpu_check.GPU_DIFFERENCES} <= set(re.findall(r'fact\("(\w+)"', gpu_check._FACTS_CODE))


def _notebook(path, *cells: str) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.mark.slow
def test_a_rehearsed_run_reports_the_failing_cell_and_a_hang(tmp_path) -> None:
    """The real command under the one-GPU rehearsal: a notebook that fails on purpose (its assert
    holds only on several real GPUs) and one that hangs; both end up in the report with their logs."""
    books = tmp_path / "notebooks"
    books.mkdir()
    _notebook(books / "00_fails.ipynb", "import infra.devices\nimport utils\ncourse = utils.setup(chapter=0, plan=infra.devices.prepare())",
              'assert course.device_kind == "gpu", f"fails on purpose: {course.device_kind}"')
    _notebook(books / "01_hangs.ipynb", "import time\ntime.sleep(600)")
    out = tmp_path / "out"
    env = {**os.environ, "COURSE_REHEARSE_GPUS": "1x15360@7.5:Tesla T4"}
    result = subprocess.run([sys.executable, "scripts/gpu_check.py", "--notebooks", "00", "01", "--notebooks-dir", str(books),
                             "--out", str(out), "--notebook-timeout", "30"],
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=400, env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads((out / "gpu-check.json").read_text())
    fails, hangs = report["notebooks"]
    assert fails["failures"] == ["cell 1: AssertionError: fails on purpose: logical-gpu"], fails
    assert hangs["failures"] == ["timed out after 30 s (hung?)"] and 30 <= hangs["seconds"] < 90
    assert "fails on purpose" in (out / "gpu-check" / "00.log").read_text()
    table = (out / "gpu-check.md").read_text()
    assert "| 00_fails.ipynb | FAIL: cell 1: AssertionError: fails on purpose: logical-gpu |" in table
    assert "A rehearsal on the CPU" in table and report["gpus"] == [{"name": "Tesla T4", "memory_mb": 15360}]
