"""Communication measured vs modelled: ring all-reduce vs parameter server, N = 2..4, one run.

On a virtual network (``infra.netns``: a namespace per host, links shaped with ``tc``), for
each N this runs notebook 10's worker programs and prints, side by side, measured ÷ model:

- **bytes**: ring — every host's sent and received bytes per all-reduce ÷ ``2(N−1)/N·M``
  (the simulation of ``utils.allreduce.ring_allreduce``); PS — the parameter server's link
  per round (one step per worker) ÷ ``2·N·M`` (``parameter_server_allreduce``);
- **time** on links of ``--rate``: ring — one all-reduce ÷ ``ring_allreduce_time(M, N, rate,
  latency)`` with the latency from a 4-byte all-reduce; PS — one round ÷
  ``parameter_server_time(M, N, rate)``, which assumes push then pull (PS workers overlap
  them on full-duplex links, so well below 1 is expected);

and (unless ``--no-crossover``) notebook 10's two-host training step at rates around the modelled
compute/communication crossover: t2 measured ÷ model at each rate, and the measured
crossover rate ÷ the modelled one. ``--repeats R`` repeats everything and prints the range
over the repeats: that range is where notebook 10's tolerances come from.

    python benchmarks/bench_network.py                     # M = 2 MB, 50 Mbit/s links, once
    python benchmarks/bench_network.py --repeats 3 --rate 20mbit

Needs Linux and root (or CAP_NET_ADMIN); elsewhere it says what is missing and exits.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from infra import netns
from infra.cluster import LocalCluster, run_workers
from utils.allreduce import (
    parameter_server_allreduce,
    parameter_server_time,
    ring_allreduce,
    ring_allreduce_time,
)

WORKERS = Path(__file__).resolve().parent.parent / "scripts" / "workers"


def ring_run(n: int, nbytes: int, rate: str, repeats: int = 3) -> dict[str, float]:
    """One ring cluster of ``n`` hosts: bytes ratios (min, max over hosts) and the time ratio."""
    import numpy as np

    with netns.VirtualNetwork([f"worker:{i}" for i in range(n)], rate=rate) as net:
        result = run_workers(
            WORKERS / "net_allreduce_worker.py",
            num_workers=n,
            network=net,
            timeout=600,
            args=["--bytes", nbytes, "--repeats", repeats],
        )
    report = result.chief.reports[-1]
    model = max(ring_allreduce([np.zeros(nbytes // 4, np.float32)] * n).bytes_sent().values())
    ratios = [v / repeats / model for key in ("sent", "received") for v in report[key].values()]
    latency = statistics.median(report["tiny_seconds"]) / (2 * (n - 1))
    t_model = ring_allreduce_time(nbytes, n, netns.parse_rate(rate) / 8, latency)
    return {
        "bytes_min": min(ratios),
        "bytes_max": max(ratios),
        "time": statistics.median(report["seconds"]) / t_model,
        "seconds": statistics.median(report["seconds"]),
    }


def ps_run(n: int, nbytes: int, rate: str, rounds: int = 3) -> dict[str, float]:
    """One parameter-server cluster: the PS link's bytes per round and the round time, ÷ model."""
    import numpy as np

    hosts = ["chief:0", *[f"worker:{i}" for i in range(n)], "ps:0"]
    with tempfile.TemporaryDirectory() as tmp, netns.VirtualNetwork(hosts, rate=rate) as net:
        result = run_workers(
            WORKERS / "net_ps_training.py",
            tasks={"chief": 1, "worker": n, "ps": 1},
            network=net,
            timeout=600,
            args=["--bytes", nbytes, "--steps", rounds, "--done-file", Path(tmp) / "done"],
        )
    report = result.chief.reports[-1]
    trace = parameter_server_allreduce([np.zeros(nbytes // 4, np.float32)] * n)
    model = trace.bytes_sent()["ps0"] + trace.bytes_received()["ps0"]
    measured = (report["sent"]["ps:0"] + report["received"]["ps:0"]) / rounds
    t_model = parameter_server_time(nbytes, n, netns.parse_rate(rate) / 8)
    return {"bytes": measured / model, "time": report["seconds"] / rounds / t_model}


def crossover_run(factors: list[float], t2_bytes: int, batch: int, steps: int) -> dict[str, object]:
    """Notebook 10 §4 in one function: t2 ratios at each rate and measured/model crossover."""
    import numpy as np

    def model_crossover(grad_bytes: int, t1: float, latency: float) -> float:
        rates = np.logspace(4, 11, 4000)
        gap = np.array([t1 - ring_allreduce_time(grad_bytes, 2, r / 8, latency) for r in rates])
        return float(10 ** np.interp(0.0, gap, np.log10(rates)))

    with tempfile.TemporaryDirectory() as tmp:
        gate = netns.Gate(Path(tmp) / "gate")
        args = ["--gate-dir", gate.directory, "--phases", 1 + len(factors), "--steps", steps]
        args += ["--allreduce-bytes", t2_bytes, "--batch-per-replica", batch]
        with (
            netns.VirtualNetwork(["worker:0", "worker:1"]) as net,
            LocalCluster(
                WORKERS / "net_step_worker.py", num_workers=2, network=net, args=args, timeout=900
            ) as job,
        ):

            def failed() -> str | None:
                return "a worker failed" if "Traceback" in str(job.logs()) else None

            gate.wait_ready(0, failed=failed)
            gate.go(0)
            handed = gate.wait_ready(1, failed=failed)
            first, grad_bytes = handed["phases"][0], handed["grad_bytes"]
            latency = first["tiny"] / 2
            planned = model_crossover(grad_bytes, first["t1"], latency)  # places the rates
            rates = [planned * f for f in factors]
            for phase, rate in enumerate(rates, start=1):
                if phase > 1:
                    gate.wait_ready(phase, failed=failed)
                net.set_all(rate=round(rate))
                gate.go(phase)
            phases = gate.wait_ready(len(rates) + 1, failed=failed)["phases"]
            job.wait()
    shaped = phases[1:]
    t1 = float(np.median([p["t1"] for p in phases]))  # compute does not depend on the link: pool
    star_model = model_crossover(grad_bytes, t1, latency)
    t2_models = [ring_allreduce_time(t2_bytes, 2, r / 8, latency) for r in rates]
    t2_ratios = [p["t2"] / m for p, m in zip(shaped, t2_models, strict=True)]
    star_measured = None
    pairs = sorted(zip(rates, [p["comm"] for p in shaped], strict=True))
    for (r_lo, c_lo), (r_hi, c_hi) in zip(pairs, pairs[1:], strict=False):
        if c_lo >= t1 >= c_hi:
            f = (np.log(c_lo) - np.log(t1)) / (np.log(c_lo) - np.log(c_hi))
            star_measured = float(np.exp(np.log(r_lo) + f * (np.log(r_hi) - np.log(r_lo))))
    return {
        "t1_ms": t1 * 1e3,
        "rates_mbit": [r / 1e6 for r in rates],
        "t2_ratios": t2_ratios,
        "bandwidth_bound": [m >= 0.05 for m in t2_models],  # the model's t2 is at least 50 ms
        "crossover_model_mbit": star_model / 1e6,
        "crossover_ratio": None if star_measured is None else star_measured / star_model,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=2_000_000, help="tensor / model size M")
    parser.add_argument("--rate", default="50mbit", help="link rate for the time measurements")
    parser.add_argument("--ns", default="2,3,4", help="numbers of workers")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--no-crossover", dest="crossover", action="store_false", help="skip notebook 10's §4"
    )
    args = parser.parse_args(argv)
    problem = netns.network_problem()
    if problem:
        print(f"skipped: {problem}")
        return 0
    netns.parse_rate(args.rate)
    ns = [int(n) for n in args.ns.split(",")]
    print(
        f"M = {args.bytes / 1e6:g} MB, links {args.rate}, N = {ns}, {args.repeats} repeat(s); measured ÷ model"
    )
    rows: dict[int, list[tuple[dict[str, float], dict[str, float]]]] = {n: [] for n in ns}
    start = time.perf_counter()
    for _ in range(args.repeats):
        for n in ns:
            rows[n].append((ring_run(n, args.bytes, args.rate), ps_run(n, args.bytes, args.rate)))

    def span(values: list[float]) -> str:
        return f"{min(values):.3f}" if len(values) == 1 else f"{min(values):.3f}–{max(values):.3f}"

    print(f"{'N':>2} | {'ring bytes/host':>15} | {'PS link bytes':>13} | {'ring time':>11} | {'PS time':>11}")
    for n, runs in rows.items():
        ring_bytes = [r["bytes_min"] for r, _ in runs] + [r["bytes_max"] for r, _ in runs]
        print(
            f"{n:>2} | {span(ring_bytes):>15} | {span([p['bytes'] for _, p in runs]):>13} | "
            f"{span([r['time'] for r, _ in runs]):>11} | {span([p['time'] for _, p in runs]):>11}"
        )
    if args.crossover:
        for k in range(args.repeats):
            c = crossover_run([4, 2, 1, 0.5, 0.25], t2_bytes=1_000_000, batch=512, steps=8)
            ratio = "not found" if c["crossover_ratio"] is None else f"{c['crossover_ratio']:.2f}"
            print(
                f"crossover run {k + 1}: t1 {c['t1_ms']:.1f} ms, model crossover {c['crossover_model_mbit']:.0f} Mbit/s; "
                f"t2 measured/model at {', '.join(f'{r:.0f}' for r in c['rates_mbit'])} Mbit/s: "
                f"{', '.join(f'{t:.2f}' + ('*' if b else '') for t, b in zip(c['t2_ratios'], c['bandwidth_bound'], strict=True))}"
                f" (* model t2 ≥ 50 ms); crossover measured/model {ratio}"
            )
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
