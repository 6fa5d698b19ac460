"""infra.devices applies a configuration once per process; each case runs in a fresh process."""

from __future__ import annotations

import pytest

from infra.process import run_python

pytestmark = pytest.mark.slow


def test_configure_same_again_is_noop_and_conflict_is_clear() -> None:
    result = run_python(
        """
        from infra import devices
        from utils.devices import describe_devices, device_report, strategy_devices
        devices._configure(devices.DeviceRequest(3))
        devices._configure(devices.DeviceRequest(3))
        print("devices", len(strategy_devices()), strategy_devices(2))
        print(describe_devices())
        report = device_report()
        print("rows", len(report[report.level == "logical"]))
        try:
            devices._configure(devices.DeviceRequest(2))
        except devices.DeviceConfigError as error:
            print("conflict:", error)
        """,
        timeout=180,
    )
    assert result.ok, result.tail()
    out = result.stdout
    assert "devices 3 ['/device:CPU:0', '/device:CPU:1']" in out
    assert "3 logical CPU devices stand in for GPUs" in out  # no plan applied: read from TensorFlow
    assert "rows 3" in out
    assert "conflict:" in out and "Restart the kernel" in out


def test_too_late_gives_a_clear_error_unless_it_already_matches() -> None:
    result = run_python(
        """
        import tensorflow as tf
        from infra import devices
        tf.constant(1.0)  # initialises the runtime with one CPU device
        devices._configure(devices.DeviceRequest(1))  # already true: accepted
        try:
            devices._configure(devices.DeviceRequest(4))
        except devices.DeviceConfigError as error:
            print("late:", error)
        """,
        timeout=180,
    )
    assert result.ok, result.tail()
    assert "late:" in result.stdout
    assert "cannot be changed in this process" in result.stdout


def test_setup_twice_same_is_fine_and_different_is_clear() -> None:
    result = run_python(
        """
        import infra.devices
        import utils
        course = utils.setup(chapter=0, plan=infra.devices.prepare(logical_devices=2))
        again = utils.setup(chapter=0, plan=infra.devices.prepare(logical_devices=2))
        assert again.devices == course.devices == ['/device:CPU:0', '/device:CPU:1']
        assert course.simulated
        try:
            utils.setup(chapter=0, plan=infra.devices.prepare(logical_devices=3))
        except Exception as error:
            print(type(error).__name__)
        """,
        timeout=180,
    )
    assert result.ok, result.tail()
    assert "Chapter 00 · Python 3." in result.stdout and "TensorFlow 2.21" in result.stdout
    assert "Replicas: 2 replicas on logical CPU devices" in result.stdout  # the plan, in one line
    assert "DeviceConfigError" in result.stdout


def test_setup_rejects_a_wrong_tensorflow_version() -> None:
    result = run_python(
        """
        import utils
        from utils.devices import plan_devices
        from utils.notebook import VersionError
        try:
            utils.setup(chapter=7, plan=plan_devices([], 1), expected_tf="2.12")
        except VersionError as error:
            print("version:", error)
        """,
        timeout=180,
    )
    assert result.ok, result.tail()
    assert "written for TensorFlow 2.12.x but the kernel has 2.21" in result.stdout


def test_worker_with_a_memory_cap_on_a_cpu_only_machine_starts() -> None:
    """configure_worker applies a shared-GPU cap; without GPUs there is nothing to cap, and no error;
    with a (rehearsed) GPU the cap is TensorFlow's logical device configuration."""
    code = """
        import json, os
        os.environ["COURSE_WORKER_DEVICES"] = json.dumps(
            {"task": "worker:1", "gpus": [0], "memory_limit_mb": 2048, "shared": True, "collective": "RING"})
        from infra import devices
        worker = devices.configure_worker()
        import tensorflow as tf
        caps = [c.memory_limit for g in tf.config.list_physical_devices("GPU")
                for c in tf.config.get_logical_device_configuration(g)]
        print(worker.collective, worker.memory_limit_mb, len(tf.config.list_logical_devices("CPU")), caps)
        """
    result = run_python(code, timeout=180)
    assert result.ok, result.tail()
    assert result.stdout.split() == ["RING", "2048", "1", "[]"]
    rehearsed = run_python(code, env={"COURSE_REHEARSE_GPUS": "1x15360"}, timeout=180)
    assert rehearsed.ok, rehearsed.tail()
    assert rehearsed.stdout.split()[-1] == "[2048]"


def test_prepare_notes_the_rehearsal_in_the_plan_and_the_banner() -> None:
    """Under the GPU rehearsal the plan carries its one-line note; utils.setup prints it."""
    result = run_python(
        """
        import os
        os.environ["COURSE_REHEARSE_GPUS"] = "1x15360@7.5:Tesla T4"
        import infra.devices
        import utils
        course = utils.setup(chapter=0, plan=infra.devices.prepare(logical_devices=3))
        print("kind", course.device_kind, course.replicas, course.rehearsal)
        """,
        timeout=180,
    )
    assert result.ok, result.tail()
    assert "kind logical-gpu 2 True" in result.stdout  # one rehearsed GPU: two logical GPUs, not 3 CPUs
    assert "Rehearsal of 1 GPU (Tesla T4" in result.stdout
