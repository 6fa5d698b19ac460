"""scripts/check_sim_to_real.py (issue 19, run by `make bench`): a tiny run of its ensemble
path in a child process, its scores recomputed from the members it saved."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from infra.process import child_env
from utils.config import PROJECT_ROOT
from utils.metrics import map_at_k, top_k_accuracy

SCRIPT = PROJECT_ROOT / "scripts" / "check_sim_to_real.py"


def test_two_members_are_trained_and_their_probabilities_averaged(tmp_path: Path) -> None:
    import keras

    import quickdraw as qd

    out, members = tmp_path / "result.json", tmp_path / "members"
    tiny = ["--variant", "smoke", "--per-class", "30", "--epochs", "1", "--image-size", "16"]
    args = [*tiny, "--members", "2", "--seed", "5", "--save-dir", str(members), "--json", str(out)]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True, text=True, timeout=600, env=child_env(), cwd=PROJECT_ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert [m["seed"] for m in result["members"]] == [5, 6]
    assert "members alone: seed 5 top-1" in proc.stdout and "goal: real top-1 >= 0.90" in proc.stdout

    images, labels, names = qd.load_real_test(16)
    probs = []
    for seed in (5, 6):
        model = keras.models.load_model(members / f"member_seed{seed}.keras", compile=False)
        probs.append(keras.ops.convert_to_numpy(keras.ops.softmax(model.predict(images, verbose=0))))
    # each member's own score, and the ensemble's from the mean of their probabilities
    for member, p in zip(result["members"], probs, strict=True):
        assert abs(member["real_top1"] - top_k_accuracy(labels, p, 1)) < 1e-9
    assert not np.allclose(probs[0], probs[1], atol=1e-3)  # two seeds: two different models
    mean = np.mean(probs, axis=0)
    assert abs(result["real_top1"] - top_k_accuracy(labels, mean, 1)) < 1e-9
    assert abs(result["real_map3"] - map_at_k(labels, mean)) < 1e-9
    assert len(result["per_class_real_top1"]) == len(names) == 28
