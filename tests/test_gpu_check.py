"""make gpu-check: refuses clearly without a GPU; its report is written from measured results."""

from __future__ import annotations

import json
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


def test_report_and_table(monkeypatch, tmp_path) -> None:
    gpus = [GpuInfo("Tesla T4", 15360)]
    results = [{"notebook": "00_course_overview.ipynb", "passed": True, "seconds": 41.2, "summary": "25 passed"},
               {"notebook": "02_strategy_apis.ipynb", "passed": False, "seconds": 99.0, "summary": "1 failed"}]
    report = gpu_check.make_report(gpus, "550.54", {"version": "2.21.0", "cuda": "12.5", "cudnn": "9"}, results)
    assert report["plan"] == {"kind": "logical-gpu", "replicas": 2, "describe": report["plan"]["describe"]}
    assert report["passed"] is False  # one notebook failed
    table = gpu_check.markdown(report)
    assert "| Tesla T4 (15360 MiB) | 550.54 | 2.21.0 (12.5, 9) | 2 (logical-gpu) |" in table
    assert "| 02_strategy_apis.ipynb | FAIL: 1 failed | 99 |" in table
    # the whole run, with notebooks faked: files written, exit code from the results
    monkeypatch.setattr(gpu_check, "detect_gpus", lambda: gpus)
    monkeypatch.setattr(gpu_check, "tensorflow_build", lambda: {"version": "2.21.0"})
    monkeypatch.setattr(gpu_check, "driver_version", lambda: "550.54")
    monkeypatch.setattr(gpu_check, "run_notebook", lambda path, timeout: {**results[0], "notebook": path.name})
    assert gpu_check.main(["--notebooks", "00", "03", "--out", str(tmp_path)]) == 0
    saved = json.loads((tmp_path / "gpu-check.json").read_text())
    assert [r["notebook"] for r in saved["notebooks"]] == ["00_course_overview.ipynb", "03_gpu_memory_configuration.ipynb"]
    assert (tmp_path / "gpu-check.md").read_text() == gpu_check.markdown(saved)
