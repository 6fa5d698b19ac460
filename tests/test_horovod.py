"""Notebook 07's helpers (infra.horovod, infra.horovod_job), its set-up script and its files.

These run in the main environment: no TensorFlow, no Horovod. The one test that needs the
Horovod environment (``make horovod``) is marked ``horovod_env`` and skipped when it is not
built (``make test`` runs it after building that environment); the
notebook itself runs under nbval with the ``horovod`` kernel.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tarfile
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from infra import horovod, horovod_job
from infra.watchdog import exit_if_stuck
from utils import config, training

ROOT = config.PROJECT_ROOT
HOROVOD_PYTHON = ROOT / ".venv-horovod" / "bin" / "python"
HOROVOD_STAMP = ROOT / ".venv-horovod" / ".course-horovod-stamp"  # written when the build is complete
NOTEBOOK = ROOT / "notebooks" / "07_horovod.ipynb"


# --- infra.horovod: command lines and output ---------------------------------------------


def test_hosts_arg() -> None:
    assert horovod.hosts_arg({"server1": 4, "server2": 4}) == "server1:4,server2:4"
    for bad in ({}, {"a:b": 1}, {"a": 0}, {"a": 1.5}, {"": 2}):
        with pytest.raises(ValueError):
            horovod.hosts_arg(bad)


def test_horovodrun_command() -> None:
    cmd = horovod.horovodrun_command(["python", "t.py"], np=2, horovodrun="hr")
    assert cmd == ["hr", "-np", "2", "-H", "localhost:2", "python", "t.py"]
    cmd = horovod.horovodrun_command(["x"], np=16, hosts={f"server{i}": 4 for i in range(1, 5)})
    assert cmd[3:5] == ["-H", "server1:4,server2:4,server3:4,server4:4"]
    with pytest.raises(ValueError, match="slot"):
        horovod.horovodrun_command(["x"], np=3, hosts={"localhost": 2})
    for bad in (0, -1, True):
        with pytest.raises(ValueError):
            horovod.horovodrun_command(["x"], np=bad)
    with pytest.raises(ValueError):
        horovod.horovodrun_command([], np=1)


def test_parse_rank_lines() -> None:
    text = textwrap.dedent(
        """\
        [0]<stdout>:rank 0 starts
        [1]<stderr>:a warning
        Mon Nov 22 04:21:19 2026[1]<stdout>:rank 1 starts
        [1,0]<stdout>:mpi style
        launcher says hello

        """
    )
    lines, other = horovod.parse_rank_lines(text)
    assert [(x.rank, x.stream, x.text) for x in lines] == [
        (0, "stdout", "rank 0 starts"),
        (1, "stderr", "a warning"),
        (1, "stdout", "rank 1 starts"),
        (1, "stdout", "mpi style"),
    ]
    assert other == ["launcher says hello"]


def test_enqueued_tensors() -> None:
    log = "[2026-11-23 23:36:50.1: T /b/horovod/common/operations.cc:1539]"  # Horovod ends each line with "; "
    text = "\n".join([
        f"[0]<stdout>:{log} [0]: Enqueued gradient; ",
        f"[1]<stdout>:{log} [1]: Enqueued gradient; ",
        f"[1]<stdout>:{log} [1]: Enqueued a; b; ",
        f"[0]<stdout>:{log} [0]: Enqueued tensors for Allgather: g; ",
        f"[0]<stdout>:{log} [0]: Sent 1 messages to coordinator.",
        "[1]<stdout>:Enqueued by the script itself, not Horovod",
    ])
    lines, _ = horovod.parse_rank_lines(text)
    assert horovod.enqueued_tensors(lines) == {0: ["gradient", "g"], 1: ["gradient", "a", "b"]}
    assert horovod.enqueued_tensors([]) == {}


def test_stall_reports() -> None:
    log = "[2026-11-24 00:27:52.5: W /b/horovod/common/stall_inspector.cc:107]"
    text = "\n".join([
        f"[0]<stderr>:{log} One or more tensors were submitted ... which will cause deadlock. ",
        "[0]<stderr>:Missing ranks:",
        "[0]<stderr>:[2026-11-24 00:27:52.6: T /b/horovod/common/operations.cc:1539] [0]: Enqueued x; ",
        "[0]<stdout>:334693: T /b/horovod/common/operations.cc:833] [0]: Finished performing x",
        "[0]<stderr>:0: [epoch_loss]",
        "[0]<stderr>:3: [a, b]",
        "[1]<stdout>:2: [printed by the script, after the report]",
        "[0]<stderr>:Missing ranks:",
        "[0]<stderr>:0!: [epoch_loss, c, d, e, f, g ...]",
        '[0]<stderr>:One or more rank (marked by "!") is stalled for longer than 4 seconds. Will shutdown.',
        "[0]<stderr>:1: [not a report line any more]",
    ])
    lines, _ = horovod.parse_rank_lines(text)
    assert horovod.stall_reports(lines) == [
        {0: (["epoch_loss"], False), 3: (["a", "b"], False)},
        {0: (["epoch_loss", "c", "d", "e", "f", "g"], True)},
    ]
    assert horovod.stall_reports([]) == []


def test_parse_check_build() -> None:
    text = textwrap.dedent(
        """\
        Horovod v0.28.1:

        Available Frameworks:
            [X] TensorFlow
            [ ] PyTorch
            [ ] MXNet

        Available Controllers:
            [ ] MPI
            [X] Gloo

        Available Tensor Operations:
            [ ] NCCL
            [ ] DDL
            [ ] CCL
            [ ] MPI
            [X] Gloo
        """
    )
    found = horovod.parse_check_build(text)
    assert found["TensorFlow"] and found["Gloo"]
    assert not found["PyTorch"] and not found["MPI"] and not found["NCCL"]
    with pytest.raises(ValueError):
        horovod.parse_check_build("nothing here")


def test_horovodrun_path_reports_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="make horovod"):
        horovod.horovodrun_path(tmp_path / "python")


# --- infra.horovod: running, timeouts and cleanup (with a fake horovodrun) -----------------

FAKE_LAUNCHER = """\
#!{python}
import subprocess, sys, time
args = sys.argv[1:]
np_ = int(args[args.index("-np") + 1])
mode = args[-1]
for rank in range(np_):
    print(f"[{{rank}}]<stdout>:hello from {{rank}}", flush=True)
print("launcher line", flush=True)
if mode == "fail":
    print("[0]<stderr>:ValueError: boom", flush=True)
if mode == "orphan":
    # a helper that outlives the launcher briefly, then exits by itself
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"], start_new_session=True)
if mode == "hang":
    # a worker that leaves our process group, as a remote-shell launcher would
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    time.sleep(120)
sys.exit(3 if mode == "fail" else 0)
"""


@pytest.fixture()
def fake_horovodrun(tmp_path: Path) -> str:
    path = tmp_path / "horovodrun"
    path.write_text(FAKE_LAUNCHER.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_run_horovod_splits_output(fake_horovodrun: str) -> None:
    echoed: list[str] = []
    run = horovod.run_horovod(["ok"], np=2, horovodrun=fake_horovodrun, timeout=30, echo=echoed.append)
    assert run.ok and run.returncode == 0 and not run.timed_out
    assert run.ranks == [0, 1]
    assert run.rank_output(1) == ["hello from 1"]
    assert run.launcher_lines == ["launcher line"]
    assert len(echoed) == 3
    assert run.check() is run
    assert run.survivors == [] and horovod._marked(run.run_id) == []


def test_run_horovod_lets_short_lived_helpers_exit(fake_horovodrun: str) -> None:
    run = horovod.run_horovod(["orphan"], np=1, horovodrun=fake_horovodrun, timeout=30, settle_seconds=10)
    assert run.ok and run.survivors == []
    assert horovod._marked(run.run_id) == []
    run = horovod.run_horovod(["orphan"], np=1, horovodrun=fake_horovodrun, timeout=30, settle_seconds=0)
    assert len(run.survivors) == 1 and "time.sleep(1)" in run.survivors[0]
    assert horovod._marked(run.run_id) == []


def test_run_horovod_failure_raises_with_tail(fake_horovodrun: str) -> None:
    run = horovod.run_horovod(["fail"], np=1, horovodrun=fake_horovodrun, timeout=30)
    assert run.returncode == 3 and not run.ok
    with pytest.raises(RuntimeError, match="exited with 3(.|\n)*ValueError: boom"):
        run.check()


def test_run_horovod_timeout_leaves_no_process(fake_horovodrun: str) -> None:
    start = time.monotonic()
    run = horovod.run_horovod(["hang"], np=1, horovodrun=fake_horovodrun, timeout=3)
    assert run.timed_out and not run.ok
    assert time.monotonic() - start < 30
    assert len(run.survivors) >= 1  # the worker that escaped the process group
    assert any("time.sleep(120)" in cmd for cmd in run.survivors)
    assert horovod._marked(run.run_id) == []
    assert _sleepers() == []  # the sleeper our fake launcher started is gone
    with pytest.raises(RuntimeError, match="timed out"):
        run.check()


def _sleepers() -> list[str]:
    found = []
    for pid in Path("/proc").iterdir():
        if pid.name.isdigit():
            try:
                cmdline = (pid / "cmdline").read_bytes()
            except OSError:
                continue
            if b"time.sleep(120)" in cmdline:
                found.append(pid.name)
    return found


def test_run_horovod_interrupt_leaves_no_process(fake_horovodrun: str) -> None:
    """Kernel → Interrupt raises KeyboardInterrupt in the cell: everything started is killed."""
    timer = threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            horovod.run_horovod(["hang"], np=1, horovodrun=fake_horovodrun, timeout=60)
    finally:
        timer.cancel()
    deadline = time.monotonic() + 10
    while _sleepers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleepers() == []


def test_run_horovod_rejects_bad_timeout(fake_horovodrun: str) -> None:
    with pytest.raises(ValueError):
        horovod.run_horovod(["ok"], np=1, horovodrun=fake_horovodrun, timeout=0)


# --- infra.horovod_job --------------------------------------------------------------------


def test_load_images_are_the_builtin_doodles() -> None:
    x, y, names = horovod_job.load_images(50, seed=1)
    assert x.shape == (50, 28, 28, 1) and x.dtype == np.float32 and y.shape == (50,)
    assert 0.0 <= x.min() and x.max() <= 1.0 and x.max() > 0.5  # strokes, not an empty canvas
    assert y.min() >= 0 and y.max() < len(names)
    x2, y2, _ = horovod_job.load_images(50, seed=1)
    assert np.array_equal(x, x2) and np.array_equal(y, y2)  # every rank gets the same arrays


def test_shard_indices_partition() -> None:
    shards = [horovod_job.shard_indices(10, 3, r) for r in range(3)]
    assert [s.tolist() for s in shards] == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert sorted(np.concatenate(shards).tolist()) == list(range(10))
    assert horovod_job.shard_indices(5, 1, 0).tolist() == [0, 1, 2, 3, 4]
    for size, rank in ((0, 0), (2, 2), (2, -1)):
        with pytest.raises(ValueError):
            horovod_job.shard_indices(10, size, rank)


def test_warmup_lr() -> None:
    kw = {"target_lr": 0.2, "size": 4, "warmup_epochs": 2}
    assert horovod_job.warmup_lr(0, **kw) == pytest.approx(0.05)
    assert horovod_job.warmup_lr(1, **kw) == pytest.approx(0.125)
    assert horovod_job.warmup_lr(2, **kw) == pytest.approx(0.2)
    assert horovod_job.warmup_lr(5, **kw) == pytest.approx(0.2)
    assert horovod_job.warmup_lr(0, target_lr=0.1, size=1, warmup_epochs=3) == pytest.approx(0.1)
    assert horovod_job.warmup_lr(0, target_lr=0.1, size=4, warmup_epochs=0) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        horovod_job.warmup_lr(0, target_lr=0.1, size=0, warmup_epochs=1)


def test_write_log(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("x")
    (tmp_path / "same.txt").write_text("y")
    log = horovod_job.WriteLog(tmp_path)
    with log:
        (tmp_path / "new.txt").write_text("new")
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "deep.bin").write_bytes(b"1")
        time.sleep(0.01)
        (tmp_path / "old.txt").write_text("changed")
    assert log.written == ["new.txt", "old.txt", "sub/deep.bin"]
    with log:
        pass
    assert log.written == ["new.txt", "old.txt", "sub/deep.bin"]
    missing = horovod_job.WriteLog(tmp_path / "nowhere")
    with missing:
        pass
    assert missing.written == []


def test_rank_report_round_trip(tmp_path: Path) -> None:
    weights = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(3, np.float32)]
    for rank in (1, 0):
        report = horovod_job.RankReport(
            script="keras", rank=rank, size=2, local_rank=rank, local_size=2,
            shard_examples=10, steps_per_epoch=2, initial_digest="abc",
            final_digest=training.weights_digest(weights), epochs=[{"loss": 1.0}],
            checkpoint_writes=["a.h5"] if rank == 0 else [],
        )
        path = report.save(tmp_path, weights)
        assert json.loads(path.read_text())["rank"] == rank
    reports = horovod_job.load_reports(tmp_path)
    assert [r["rank"] for r in reports] == [0, 1]
    back = horovod_job.load_weights(tmp_path, 1)
    assert training.max_weight_difference(weights, back) == 0.0
    assert training.weights_digest(back) == training.weights_digest(weights)
    with pytest.raises(FileNotFoundError):
        horovod_job.load_reports(tmp_path / "empty")


_WATCHED = """
import sys, time
from infra.watchdog import exit_if_stuck
with exit_if_stuck(float(sys.argv[1]), "the test block", grace=0.2, exit_code=7):
    time.sleep(float(sys.argv[2]))
print("finished", flush=True)
"""


@pytest.mark.parametrize(("patience", "sleep", "code", "said"), [(0.3, 30, 7, True), (30, 0.05, 0, False)])
def test_watchdog_ends_a_block_that_waits_too_long(patience: float, sleep: float, code: int, said: bool) -> None:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", _WATCHED, str(patience), str(sleep)], cwd=ROOT,
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == code, result.stderr[-1000:]
    assert ("still waiting in the test block after 0.3 s" in result.stdout) is said
    assert ("finished" in result.stdout) is not said
    assert time.perf_counter() - start < 20  # ended by the watchdog, not by the 30 s sleep
    with pytest.raises(ValueError):
        with exit_if_stuck(0, "nothing"):
            pass


# --- the set-up script, the requirements, the notebook ---------------------------------------


def _setup(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "tools/setup_horovod.sh"], cwd=ROOT, env={**os.environ, **env},
        capture_output=True, text=True, timeout=60,
    )


def test_setup_script_without_python311_says_why_in_one_line(tmp_path: Path) -> None:
    result = _setup({"HOROVOD_PYTHON": str(tmp_path / "no-such-python"), "HOROVOD_VENV": str(tmp_path / "v")})
    assert result.returncode == 3
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Python 3.11" in result.stderr
    fake = tmp_path / "python3.10"
    fake.write_text("#!/bin/sh\necho 3.10\n")
    fake.chmod(0o755)
    result = _setup({"HOROVOD_PYTHON": str(fake), "HOROVOD_VENV": str(tmp_path / "v")})
    assert result.returncode == 3 and "is Python 3.10" in result.stderr
    assert not (tmp_path / "v").exists()


def test_stall_patch_applies_to_the_pinned_sdist(tmp_path: Path) -> None:
    """The patch applies to Horovod 0.28.1's source (the sdist setup_horovod.sh pins by hash)
    and leaves gloo_controller.cc resizing, not reserving, its rank list (line 92). Needs the
    sdist in the course cache (``make horovod``)."""
    patch = (ROOT / "tools" / "horovod-0.28.1-gloo-stall.patch").read_text()
    script = (ROOT / "tools" / "setup_horovod.sh").read_text()
    pinned = re.search(r"^SDIST_SHA256=([0-9a-f]+)$", script, re.MULTILINE)
    assert pinned and len(pinned[1]) == 64
    cache = Path(os.environ.get("HOROVOD_CACHE_DIR")
                 or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpu-distributed-course")
    sdist = cache / "sdist" / "horovod-0.28.1.tar.gz"
    if not sdist.exists():
        pytest.skip(f"{sdist} not there (make horovod downloads it): patch not applied")
    assert hashlib.sha256(sdist.read_bytes()).hexdigest() == pinned[1]
    with tarfile.open(sdist) as tar:
        tar.extract("horovod-0.28.1/horovod/common/gloo/gloo_controller.cc", tmp_path, filter="data")
    source = tmp_path / "horovod-0.28.1"
    applied = subprocess.run(["patch", "-p1", "--batch", "-d", str(source)], input=patch, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    lines = (source / "horovod" / "common" / "gloo" / "gloo_controller.cc").read_text().splitlines()
    assert lines[91] == "  global_ranks_.resize(size_);"


def test_requirements_are_pinned() -> None:
    lines = [
        line.split("#")[0].strip()
        for line in (ROOT / "requirements-horovod.txt").read_text().splitlines()
        if line.split("#")[0].strip()
    ]
    pins = dict(line.split("==", 1) for line in lines)
    assert len(pins) == len(lines), "every requirement is pinned with =="
    assert lines[-1].startswith("horovod=="), "Horovod is built last, against the TensorFlow above"


def test_conda_environment_matches_requirements() -> None:
    """environment-horovod.yml's pip section is requirements-horovod.txt without Horovod."""
    yml = (ROOT / "environment-horovod.yml").read_text()
    assert "python=3.11" in yml and "--no-build-isolation" in yml
    pip_section = yml.split("- pip:", 1)[1]
    in_yml = [line.strip()[2:] for line in pip_section.splitlines() if line.strip().startswith("- ")]
    in_txt = [
        line.split("#")[0].strip()
        for line in (ROOT / "requirements-horovod.txt").read_text().splitlines()
        if line.split("#")[0].strip()
    ]
    assert in_yml == in_txt[:-1]


def test_notebook_declares_the_horovod_kernel() -> None:
    nb = json.loads(NOTEBOOK.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "horovod"
    assert nb["metadata"]["kernelspec"]["display_name"] == "Python (horovod)"
    setup = [c for c in nb["cells"] if "utils.setup(" in "".join(c["source"])]
    assert len(setup) == 1
    assert re.search(r'utils\.setup\(chapter=7, plan=infra\.devices\.prepare\(logical_devices=1\), expected_tf="2\.12"\)', "".join(setup[0]["source"]))


@pytest.mark.slow
@pytest.mark.horovod_env
@pytest.mark.skipif(not HOROVOD_STAMP.exists(), reason="Horovod environment not built (make horovod)")
@pytest.mark.parametrize("script", ["horovod_keras.py", "horovod_custom_loop.py"])
def test_script_runs_as_a_single_rank(script: str, tmp_path: Path) -> None:
    """Horovod runs without a launcher as one process of size 1: the scripts' quickest check."""
    result = subprocess.run(
        [str(HOROVOD_PYTHON), f"scripts/workers/{script}", "--epochs", "1", "--examples", "128", "--batch-size", "32",
         "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (report,) = horovod_job.load_reports(tmp_path / "ranks")
    assert report["size"] == 1 and report["steps_per_epoch"] == 4
    assert report["checkpoint_writes"] and len(report["epochs"]) == 1


@pytest.mark.slow
@pytest.mark.horovod_env
@pytest.mark.skipif(not HOROVOD_STAMP.exists(), reason="Horovod environment not built (make horovod)")
def test_stall_script_runs_as_a_single_rank() -> None:
    """One rank has the whole shard: nothing to wait for, so it finishes (notebook 07 runs two)."""
    result = subprocess.run(
        [str(HOROVOD_PYTHON), "scripts/workers/horovod_stall.py", "--examples", "5", "--patience", "60"],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "rank 0/1: 5 steps, epoch loss" in result.stdout and "still waiting" not in result.stdout


def test_script_options_are_shared() -> None:
    args = horovod_job.parse_args("test", ["--out", "/tmp/somewhere", "--epochs", "2"])
    assert (args.epochs, args.examples, args.batch_size, str(args.out)) == (2, 2000, 32, "/tmp/somewhere")
    with pytest.raises(SystemExit):  # --out is required
        horovod_job.parse_args("test", [])
    for script in ("horovod_keras.py", "horovod_custom_loop.py"):  # the course's one small CNN
        assert "build_cnn(len(class_names), args.image_size, keras_module=tf.keras)" in (
            ROOT / "scripts" / "workers" / script
        ).read_text()
