"""Timers, throughput meters, a small benchmark helper and a Keras epoch timer.

Notebooks 01 and 04–06 measure with them (notebook 01 §5 explains the warm-up and
``.numpy()``). Speed claims in this course are printed side by side from one run (see
``benchmarks/bench_*.py``), never asserted against wall-clock limits in tests.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class Timer:
    """Wall-clock timer: a context manager with laps.

    >>> with Timer() as t:
    ...     t.lap("first")
    >>> t.elapsed >= 0
    True
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._start: float | None = None
        self._stop: float | None = None
        self._last_lap: float | None = None
        self.laps: list[tuple[str, float]] = []

    def start(self) -> Timer:
        """Start (or restart) the timer and forget earlier laps."""
        self._start = self._last_lap = self._clock()
        self._stop = None
        self.laps = []
        return self

    def lap(self, name: str = "") -> float:
        """Record the time since the previous lap (or the start) and return it in seconds."""
        if self._start is None or self._last_lap is None:
            raise RuntimeError("Timer.lap() before Timer.start() (or outside `with Timer()`)")
        now = self._clock()
        seconds = now - self._last_lap
        self._last_lap = now
        self.laps.append((name or f"lap {len(self.laps) + 1}", seconds))
        return seconds

    def stop(self) -> float:
        """Stop the timer and return the total elapsed seconds."""
        if self._start is None:
            raise RuntimeError("Timer.stop() before Timer.start()")
        self._stop = self._clock()
        return self.elapsed

    @property
    def elapsed(self) -> float:
        """Seconds since start, up to stop if stopped."""
        if self._start is None:
            return 0.0
        end = self._stop if self._stop is not None else self._clock()
        return end - self._start

    def __enter__(self) -> Timer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Throughput:
    """Counts examples over wall time and reports examples per second.

    ``meter.add(batch_size)`` after each step; ``meter.rate`` is examples/s since ``start``.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self.examples = 0
        self._start = clock()

    def start(self) -> Throughput:
        """Reset the count and the clock."""
        self.examples = 0
        self._start = self._clock()
        return self

    def add(self, examples: int) -> None:
        """Count ``examples`` more processed examples."""
        if examples < 0:
            raise ValueError(f"examples must be ≥ 0, got {examples}")
        self.examples += examples

    @property
    def seconds(self) -> float:
        """Seconds since the last start."""
        return self._clock() - self._start

    @property
    def rate(self) -> float:
        """Examples per second since the last start (0 before any time has passed)."""
        seconds = self.seconds
        return self.examples / seconds if seconds > 0 else 0.0


@dataclass
class BenchmarkResult:
    """Times of the measured repeats of one benchmark, in seconds."""

    name: str
    times: list[float] = field(default_factory=list)
    items_per_call: int = 1

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def spread(self) -> float:
        """Half the range between the fastest and the slowest repeat, in seconds."""
        return (max(self.times) - min(self.times)) / 2

    @property
    def rate(self) -> float:
        """Items per second at the median time."""
        return self.items_per_call / self.median if self.median > 0 else float("inf")

    def __str__(self) -> str:
        return (
            f"{self.name}: median {self.median * 1e3:.2f} ms ± {self.spread * 1e3:.2f} ms "
            f"over {len(self.times)} repeats ({self.rate:,.1f} items/s)"
        )


def benchmark(
    fn: Callable[[], Any],
    *,
    name: str = "",
    warmup: int = 1,
    repeats: int = 5,
    items_per_call: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> BenchmarkResult:
    """Call ``fn`` ``warmup`` times unmeasured, then ``repeats`` times measured.

    The warm-up absorbs one-time costs such as ``tf.function`` tracing. Returns the median
    and spread; compare two results measured in the same run, not across runs. Used in
    notebooks 01, 04 and 06 and the ``benchmarks/bench_*.py`` benchmarks.
    """
    if warmup < 0 or repeats < 1:
        raise ValueError(f"need warmup ≥ 0 and repeats ≥ 1, got {warmup} and {repeats}")
    for _ in range(warmup):
        fn()
    result = BenchmarkResult(name or getattr(fn, "__name__", "fn"), items_per_call=items_per_call)
    for _ in range(repeats):
        start = clock()
        fn()
        result.times.append(clock() - start)
    return result


def _make_epoch_timer_class() -> type:
    from tensorflow import keras

    class EpochTimer(keras.callbacks.Callback):
        """Keras callback recording each epoch's wall time and examples per second.

        ``EpochTimer(examples_per_epoch=n)``; after ``fit``, ``timer.epoch_seconds`` and
        ``timer.examples_per_second`` hold one value per epoch. Used in notebooks 04 and 06.
        """

        def __init__(self, examples_per_epoch: int | None = None) -> None:
            super().__init__()
            self.examples_per_epoch = examples_per_epoch
            self.epoch_seconds: list[float] = []
            self.examples_per_second: list[float] = []
            self._start = 0.0

        def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
            self._start = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            seconds = time.perf_counter() - self._start
            self.epoch_seconds.append(seconds)
            if self.examples_per_epoch:
                self.examples_per_second.append(self.examples_per_epoch / seconds)

    return EpochTimer


_lazy: dict[str, type] = {}


def __getattr__(name: str) -> type:
    # EpochTimer subclasses a Keras class; build it on first use so importing this module
    # does not import TensorFlow.
    if name == "EpochTimer":
        if name not in _lazy:
            _lazy[name] = _make_epoch_timer_class()
        return _lazy[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
