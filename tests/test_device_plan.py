"""The device plan, fed faked GPU lists: replicas, memory caps and per-worker assignments.

No GPU exists on the machines that run these tests, so every GPU branch of the course is
decided here, by the pure functions ``plan_devices`` / ``plan_workers`` and checked with 0, 1,
2, 3, 4 and 8 GPUs of different sizes; ``tests/test_cluster.py`` checks that LocalCluster
passes the assignment on to real processes.
"""

from __future__ import annotations

import json

import pytest

from infra.devices import parse_nvidia_smi
from utils.devices import (
    WORKER_DEVICES_VAR,
    GpuInfo,
    WorkerDevices,
    plan_devices,
    plan_workers,
    usable_memory_mb,
)

SIZES = {"T4": 15360, "V100": 16384, "A100": 40960, "laptop": 4096, "tiny": 2048}


def gpus(n: int, kind: str = "T4") -> list[GpuInfo]:
    return [GpuInfo(f"Tesla {kind}", SIZES[kind]) for _ in range(n)]


@pytest.mark.parametrize("asked", [1, 2, 3, 4, 8])
def test_no_gpu_gives_the_logical_cpus_asked_for(asked: int) -> None:
    plan = plan_devices([], asked)
    assert (plan.kind, plan.replicas, plan.logical_cpus, plan.gpu_split) == ("logical-cpu", asked, asked, 1)
    assert plan.simulated and plan.collective == "ring" and plan.gpu_memory_limit_mb is None


@pytest.mark.parametrize("kind", list(SIZES))
@pytest.mark.parametrize("asked", [1, 2, 4])
def test_one_gpu_is_split_in_two_under_its_memory(kind: str, asked: int) -> None:
    plan = plan_devices(gpus(1, kind), asked)
    assert plan.kind == "logical-gpu" and plan.replicas == plan.gpu_split == 2, "≥ 2 replicas on one GPU"
    assert plan.logical_cpus == 1 and not plan.gpu_memory_growth  # growth is set for the caps at init
    total = SIZES[kind]
    assert 2 * plan.gpu_memory_limit_mb <= total - max(1024, total // 10), "room kept for CUDA itself"
    assert 2 * plan.gpu_memory_limit_mb > total - max(1024, total // 10) - 2 * 256, "and no more"
    assert plan.gpu_memory_limit_mb % 256 == 0
    assert plan.simulated and plan.collective == "ring"  # TF uses RING on virtual GPUs


def test_one_gpu_of_unknown_size_gets_a_safe_default() -> None:
    plan = plan_devices([GpuInfo("GPU", None)], 4)
    assert plan.replicas == 2 and plan.gpu_memory_limit_mb == 2048


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_several_gpus_are_used_as_they_are(n: int) -> None:
    plan = plan_devices(gpus(n, "A100"), 4)
    assert plan.kind == "gpu" and plan.replicas == n and plan.gpu_split == 1
    assert plan.gpu_memory_growth and plan.gpu_memory_limit_mb is None
    assert not plan.simulated and plan.collective == "nccl"
    assert f"{n} physical GPUs" in plan.describe() and "real speed-up" in plan.describe()


def test_describe_says_what_is_simulated() -> None:
    assert "no speed-up" in plan_devices([], 2).describe()
    assert "share one GPU" in plan_devices(gpus(1), 2).describe()


def test_bad_requests() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            plan_devices([], bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot be shared"):
        usable_memory_mb(1200, 2)
    with pytest.raises(ValueError):
        usable_memory_mb(0, 1)
    with pytest.raises(ValueError):
        usable_memory_mb(4096, 0)


def tasks(workers: int, chief: bool = False, ps: int = 0) -> list[str]:
    return (["chief:0"] if chief else []) + [f"worker:{i}" for i in range(workers)] + [f"ps:{i}" for i in range(ps)]


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
def test_workers_without_gpus_run_on_the_cpu_with_ring(workers: int) -> None:
    plan = plan_workers([], tasks(workers, ps=1))
    assert all(w.gpus == () and w.collective == "RING" and w.memory_limit_mb is None for w in plan.values())
    assert plan["worker:0"].env()["CUDA_VISIBLE_DEVICES"] == "-1"


@pytest.mark.parametrize("n_gpus", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("workers", [1, 2, 3, 4])
def test_workers_get_their_own_gpu_or_share_without_nccl(n_gpus: int, workers: int) -> None:
    plan = plan_workers(gpus(n_gpus, "V100"), tasks(workers, ps=1))
    trainers = [plan[f"worker:{i}"] for i in range(workers)]
    assert plan["ps:0"].gpus == ()  # parameter servers stay on the CPU
    assert all(len(w.gpus) == 1 for w in trainers), "one device each: one replica per worker"
    used = [w.gpus[0] for w in trainers]
    if n_gpus >= workers:
        assert used == list(range(workers)), "one GPU per worker"
        assert all(w.collective == "NCCL" and not w.shared and w.memory_limit_mb is None for w in trainers)
    else:
        assert all(w.collective == "RING" for w in trainers), "never NCCL across processes on one GPU"
        for g in range(n_gpus):
            sharing = [w for w in trainers if w.gpus == (g,)]
            assert sharing, f"GPU {g} unused although workers share"
            caps = sum(w.memory_limit_mb for w in sharing)
            assert caps <= SIZES["V100"] - 1024, "the workers' caps fit on the card"
            assert all(w.shared == (len(sharing) > 1) for w in sharing)


def test_chief_trains_like_a_worker() -> None:
    plan = plan_workers(gpus(2), tasks(1, chief=True))
    assert plan["chief:0"].gpus == (0,) and plan["worker:0"].gpus == (1,)


def test_worker_env_uses_the_launchers_gpu_numbers() -> None:
    worker = plan_workers(gpus(2), tasks(2))["worker:1"]
    assert worker.env()["CUDA_VISIBLE_DEVICES"] == "1"
    assert worker.env(["4", "6"])["CUDA_VISIBLE_DEVICES"] == "6"  # launcher saw GPUs 4 and 6 only
    back = json.loads(worker.env()[WORKER_DEVICES_VAR])
    assert WorkerDevices(**{**back, "gpus": tuple(back["gpus"])}) == worker


def test_parse_nvidia_smi() -> None:
    found = parse_nvidia_smi("Tesla T4, 15360\nNVIDIA A100-SXM4-40GB, 40960\n")
    assert found == [GpuInfo("Tesla T4", 15360), GpuInfo("NVIDIA A100-SXM4-40GB", 40960)]
    assert parse_nvidia_smi("") == []
    with pytest.raises(ValueError):
        parse_nvidia_smi("no comma here")
