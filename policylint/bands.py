"""The band calculator's public face: every name callers have always imported from here.

The code lives one module per responsibility in :mod:`policylint.calc` (rolling
minimum, selection, spikes, queues, Erlang, cleaning, GPUs, the core path) and,
for one reader's series, :mod:`policylint.analysis` (``analyse`` and
``BandReport``). This module only re-exports them so existing imports keep
working; new code may import from those modules directly. The definitions are
written out in ``docs/bands.md``.
"""

from __future__ import annotations

from policylint.analysis import BandReport, SpikeTable, analyse, flat_day_test
from policylint.calc.cleaning import flat_days, outlier_days
from policylint.calc.core import BandTable, summarise
from policylint.calc.erlang import ErlangResult, erlang_b, erlang_c, erlang_c_wait
from policylint.calc.gpus import gpu_counts, gpus_for, gpus_one, residency_ratio
from policylint.calc.jobs import DurationStats, duration_stats
from policylint.calc.queue import (
    BoundedQueue,
    QueueStats,
    bounded_queue,
    capacity_for_tolerance,
    queue_backlog,
    queue_stats,
)
from policylint.calc.rolling import rolling_min, sustained
from policylint.calc.select import percentile, wait_percentile_of
from policylint.calc.settings import FLAT_DAY_TESTS, MIN_WINDOW_DAYS, BandSettings, window_days, window_samples
from policylint.calc.spikes import Spike, Spikes, find_spikes

# Names this module has always held besides its own API (tests reach them as ``bands.X``).
from policylint.errors import MeasurementError as MeasurementError
from policylint.errors import PolicylintError as PolicylintError
from policylint.traces import Series as Series

__all__ = [
    "BandReport",
    "BandSettings",
    "BandTable",
    "BoundedQueue",
    "DurationStats",
    "ErlangResult",
    "QueueStats",
    "Spike",
    "SpikeTable",
    "Spikes",
    "analyse",
    "capacity_for_tolerance",
    "duration_stats",
    "erlang_b",
    "erlang_c",
    "erlang_c_wait",
    "bounded_queue",
    "find_spikes",
    "FLAT_DAY_TESTS",
    "MIN_WINDOW_DAYS",
    "flat_day_test",
    "flat_days",
    "gpu_counts",
    "gpus_for",
    "gpus_one",
    "outlier_days",
    "percentile",
    "queue_backlog",
    "queue_stats",
    "residency_ratio",
    "rolling_min",
    "summarise",
    "sustained",
    "window_days",
    "window_samples",
]
