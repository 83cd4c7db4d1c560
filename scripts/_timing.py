"""Timing helpers shared by the benchmark scripts (imported as a sibling module: the scripts run
as `python scripts/NAME.py`, which puts this folder first on sys.path)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_seconds(run: Callable[[], object], repeat: int) -> float:
    """The shortest wall time of `repeat` (at least one) calls of run()."""
    best = float("inf")
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def loader_samples(loader, batches: int, warmup: int = 1) -> tuple[int, float]:
    """(samples, seconds) of `batches` batches of a chute.Loader after `warmup` batches, epochs
    chained when one ends."""
    it = iter(loader)
    for _ in range(warmup):
        next(it)
    samples, start = 0, time.perf_counter()
    for _ in range(batches):
        try:
            batch = next(it)
        except StopIteration:
            it = iter(loader)
            batch = next(it)
        samples += len(batch.indices)
    return samples, time.perf_counter() - start
