"""Performance measurements: the input-bound check and the profiler trace read in code.

Introduced in notebook 08 (*Making distributed training fast*); notebook 06 uses
:func:`check_input_bound` for its capstone pipeline (the tf.data service of notebook 08 §6 is
started by ``infra.data_service``).

* :func:`check_input_bound` — the pipeline's rate **alone** and the distributed training
  step's rate **alone**, each measured, and which one limits training.
* :func:`read_trace` — reads the ``.xplane.pb`` that ``tf.profiler.experimental`` writes and
  splits each traced step into compute, collective all-reduce, waiting for input and the
  rest (Python dispatch, launch overhead, idle); it also keeps each replica's interval in each
  collective instance, so a notebook can check that every replica took part and split an
  all-reduce into waiting for the last replica and the exchange (:func:`rendezvous`).

TensorFlow is imported inside the functions, never at module level.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utils.timing import benchmark

# ------------------------------------------------------------------------------------
# Is training input-bound? (notebooks 06 and 08)
# ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputBoundReport:
    """Two rates, each measured alone, in batches per second (and examples/s if known)."""

    pipeline_batches_per_s: float
    step_batches_per_s: float
    batch_size: int | None = None

    @property
    def input_bound(self) -> bool:
        """True when the pipeline alone delivers fewer batches per second than the step consumes."""
        return self.pipeline_batches_per_s < self.step_batches_per_s

    @property
    def headroom(self) -> float:
        """Pipeline rate / step rate: below 1 the step waits for data, above 1 the pipeline waits."""
        return self.pipeline_batches_per_s / self.step_batches_per_s

    def __str__(self) -> str:
        unit, scale = ("examples/s", self.batch_size) if self.batch_size else ("batches/s", 1)
        verdict = "INPUT-BOUND: the step waits for data" if self.input_bound else "not input-bound"
        return (
            f"pipeline alone {self.pipeline_batches_per_s * scale:,.1f} {unit}, "
            f"distributed step alone {self.step_batches_per_s * scale:,.1f} {unit} "
            f"(ratio {self.headroom:.2f}) → {verdict}"
        )


def _rate(fn: Callable[[], Any], n: int, warmup: int) -> float:
    """Calls per second over ``n`` timed calls after ``warmup`` untimed ones."""
    return n / sum(benchmark(fn, warmup=warmup, repeats=n).times)


def pipeline_rate(dataset: Iterable[Any], *, batches: int = 8, warmup: int = 2) -> float:
    """Batches per second of ``dataset`` alone, from a fresh iterator: ``batches`` timed after
    ``warmup`` untimed ones. Used by :func:`check_input_bound` and notebook 08 §6 (the pipeline
    measured again after the fed loop)."""
    iterator = iter(dataset)
    return _rate(lambda: next(iterator), batches, warmup)


def check_input_bound(
    dataset: Iterable[Any],
    train_step: Callable[[Any], Any],
    batch: Any,
    *,
    batches: int = 8,
    warmup: int = 2,
    batch_size: int | None = None,
) -> InputBoundReport:
    """Measure the pipeline alone and the training step alone; say which one limits training.

    ``dataset``: the input pipeline (iterated ``warmup + batches`` times, nothing else runs).
    ``train_step(batch)``: one *distributed* training step on a batch already in memory (for
    example a ``tf.function`` calling ``strategy.run``); its result is converted with
    ``numpy()`` where it has one, so that asynchronous execution is waited for.
    Training is input-bound when the pipeline delivers fewer batches per second than the
    step consumes. Used by notebook 06 (the capstone's pipeline) and notebook 08 (§6).
    """
    pipeline = pipeline_rate(dataset, batches=batches, warmup=warmup)

    def step() -> None:
        result = train_step(batch)
        if hasattr(result, "numpy"):
            result.numpy()

    return InputBoundReport(pipeline, _rate(step, batches, warmup), batch_size)


def side_by_side(
    fns: dict[str, Callable[[], Any]],
    *,
    repeats: int = 5,
    warmup: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Time several variants in turns (A, B, A, B, ...): seconds of each call, per variant.

    Taking turns spreads the load of a shared machine over all variants alike, so the ratio
    of two medians is meaningful even when the absolute times are not. ``warmup`` rounds are
    not timed (tracing, XLA compilation). Used in notebook 08 and ``benchmarks/bench_performance.py``.
    """
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name] += benchmark(fn, warmup=0, repeats=1, clock=clock).times
    return times


# ------------------------------------------------------------------------------------
# The profiler's trace, read in code (notebook 08 §1 and §6)
# ------------------------------------------------------------------------------------

_OP_EVENT = re.compile(r"^[^:]+:([A-Za-z_][A-Za-z0-9_]*)$")  # TF op events: "name:Type"
_ALLREDUCE = re.compile(r"Collective(Reduce|Gather|Bcast|AllToAll)|NcclAllReduce|AllReduce|nccl", re.I)
_INPUT_TYPE = re.compile(r"Iterator|GetNext", re.I)
_INPUT_EVENTS = {"IteratorGetNextOp::DoCompute", "IteratorGetNextAsOptionalOp::DoCompute"}


@dataclass
class StepBreakdown:
    """One traced step, in milliseconds: the parts are disjoint and ``other`` is the rest."""

    step: int
    total: float
    compute: float
    allreduce: float
    input: float
    other: float
    allreduce_events: int = 0
    instances: dict[int, int] = field(default_factory=dict)  # collective instance_key -> events
    # collective instance_key -> (start, end) of each replica's op, ms from the step's start
    spans: dict[int, list[tuple[float, float]]] = field(default_factory=dict)

    @property
    def covered(self) -> float:
        """Share of the step that the executor's events account for (compute + all-reduce + input)."""
        return (self.compute + self.allreduce + self.input) / self.total if self.total else 0.0


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _length(intervals: list[tuple[int, int]]) -> int:
    return sum(end - start for start, end in intervals)


def _minus(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Intervals of ``a`` not covered by ``b`` (both merged and sorted)."""
    out: list[tuple[int, int]] = []
    for start, end in a:
        cursor = start
        for b_start, b_end in b:
            if b_end <= cursor or b_start >= end:
                continue
            if b_start > cursor:
                out.append((cursor, b_start))
            cursor = max(cursor, b_end)
        if cursor < end:
            out.append((cursor, end))
    return out


def _clip(intervals: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    return [(max(s, lo), min(e, hi)) for s, e in intervals if e > lo and s < hi]


def xplane_files(logdir: str | Path) -> list[Path]:
    """The ``.xplane.pb`` files of the newest profiling run under ``logdir`` (TensorBoard's layout)."""
    runs = sorted({p.parent for p in Path(logdir).glob("plugins/profile/*/*.xplane.pb")})
    if not runs:
        raise FileNotFoundError(f"no plugins/profile/*/*.xplane.pb under {logdir}: was the profiler started there?")
    return sorted(runs[-1].glob("*.xplane.pb"))


def trace_spaces(logdir: str | Path) -> Iterator[Any]:
    """The parsed ``XSpace`` of each ``.xplane.pb`` file of the newest profiling run under ``logdir``."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    for path in xplane_files(logdir):
        yield xplane_pb2.XSpace.FromString(path.read_bytes())


def trace_events(space: Any) -> Iterator[tuple[str, str, int, int, dict[str, Any]]]:
    """(plane, event name, start ps, end ps, stats) of every event of an XSpace."""
    for plane in space.planes:
        names = plane.event_metadata
        stat_names = plane.stat_metadata
        for line in plane.lines:
            base = line.timestamp_ns * 1000
            for ev in line.events:
                stats = {}
                for s in ev.stats:
                    key = stat_names[s.metadata_id].name
                    kind = s.WhichOneof("value")
                    stats[key] = stat_names[s.ref_value].name if kind == "ref_value" else getattr(s, kind) if kind else None
                start = base + ev.offset_ps
                yield plane.name, names[ev.metadata_id].name, start, start + ev.duration_ps, stats


def read_trace(logdir: str | Path, step_name: str = "train") -> list[StepBreakdown]:
    """Split each traced step of the newest profile under ``logdir`` into its parts.

    Steps are the events named ``step_name`` that carry a ``step_num`` (write them with
    ``tf.profiler.experimental.Trace(step_name, step_num=i, _r=1)``). Within each step, the
    time covered by collective all-reduce ops counts as *all-reduce*; what input ops cover
    (iterator ``GetNext``), outside all-reduce, as *input*; what any other TensorFlow op
    covers, outside both, as *compute*; the rest of the step is *other* (Python, dispatch,
    idle). Replicas that run at the same time are counted once (a union of intervals).
    Reads the XSpace protocol buffer with the definitions TensorFlow ships; used in notebook 08.
    """
    steps: list[tuple[int, int, int]] = []
    kinds: dict[str, list[tuple[int, int]]] = {"allreduce": [], "input": [], "compute": []}
    collectives: list[tuple[int, int, int | None]] = []  # (start, end, instance_key) of each collective op
    for space in trace_spaces(logdir):
        for plane, name, start, end, stats in trace_events(space):
            if name == step_name and "step_num" in stats:
                steps.append((int(stats["step_num"] or 0), start, end))
                continue
            op = _OP_EVENT.match(name)
            op_type = op.group(1) if op else (name if plane.startswith("/device:") else "")
            if name in _INPUT_EVENTS or (op_type and _INPUT_TYPE.search(op_type)):
                kinds["input"].append((start, end))
            elif op_type and _ALLREDUCE.search(op_type):
                kinds["allreduce"].append((start, end))
                key = stats.get("instance_key")
                collectives.append((start, end, int(key) if key is not None else None))
            elif op_type:
                kinds["compute"].append((start, end))
    if not steps:
        raise ValueError(f"no '{step_name}' step events in the trace under {logdir}")
    merged = {kind: _union(v) for kind, v in kinds.items()}
    result = []
    for step, lo, hi in sorted(steps):
        allreduce = _clip(merged["allreduce"], lo, hi)
        inp = _minus(_clip(merged["input"], lo, hi), allreduce)
        compute = _minus(_minus(_clip(merged["compute"], lo, hi), allreduce), inp)
        parts = [_length(x) / 1e9 for x in (allreduce, inp, compute)]
        total = (hi - lo) / 1e9
        in_step = [(start, end, key) for start, end, key in collectives if lo <= start < hi]
        instances = Counter(key for _, _, key in in_step if key is not None)
        spans: dict[int, list[tuple[float, float]]] = {}
        for start, end, key in in_step:
            if key is not None:
                spans.setdefault(key, []).append(((start - lo) / 1e9, (end - lo) / 1e9))
        result.append(
            StepBreakdown(
                step=step,
                total=total,
                compute=parts[2],
                allreduce=parts[0],
                input=parts[1],
                other=total - sum(parts),
                allreduce_events=len(in_step),
                instances=dict(instances),
                spans=spans,
            )
        )
    return result


@dataclass(frozen=True)
class Rendezvous:
    """One collective instance seen from its replicas' op events, in milliseconds.

    ``wait``: from the first replica entering the collective to the last one entering it —
    the time the early replicas spent waiting for the late one. ``exchange``: from the last
    replica entering to the last one leaving — moving and adding the data once all are there.
    ``synchronised``: no replica left before the last one entered, as a collective requires
    (False if the events covered only launching the op, not its completion).
    """

    wait: float
    exchange: float
    synchronised: bool


def rendezvous(spans: list[tuple[float, float]], slack: float = 0.0) -> Rendezvous:
    """Split one collective instance's (start, end) spans, one per replica, into wait and exchange.

    ``slack`` (ms): how far a replica's end may precede the last start and still count as
    synchronised (the replicas' events are stamped by different threads). Notebook 08 §1.
    """
    if not spans:
        raise ValueError("a collective instance without events")
    starts, ends = [s for s, _ in spans], [e for _, e in spans]
    return Rendezvous(
        wait=max(starts) - min(starts),
        exchange=max(ends) - max(starts),
        synchronised=min(ends) + slack >= max(starts),
    )
