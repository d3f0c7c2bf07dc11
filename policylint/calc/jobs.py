"""Job duration variance: p50/p90/p99 and the p99 / p50 tail ratio."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from policylint.calc.select import percentile
from policylint.errors import MeasurementError


@dataclass(frozen=True)
class DurationStats:
    """Job duration percentiles (seconds) and the p99/p50 tail ratio."""

    count: int
    p50: float
    p90: float
    p99: float
    tail_ratio: float


def duration_stats(durations: np.ndarray) -> DurationStats:
    """p50/p90/p99 (inverted CDF) of job durations and tail ratio p99 / p50."""
    d = np.asarray(durations, dtype=np.float64)
    d = d[~np.isnan(d)]
    if d.size == 0:
        raise MeasurementError("no job durations")
    p50, p90, p99 = (float(x) for x in percentile(d, [50, 90, 99]))
    ratio = p99 / p50 if p50 > 0 else math.inf
    return DurationStats(int(d.size), p50, p90, p99, ratio)
