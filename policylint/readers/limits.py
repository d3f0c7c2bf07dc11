"""Safety limits for reading traces, checked before the data is held.

A trace is data a user commits, so a wrong or hostile file must end in one clear
error, never in gigabytes of memory or a grid that cannot be allocated. Every
limit has a default chosen to be far above any real capacity trace (see
docs/measurements.md for the figures) and can be raised by passing another
:class:`TraceLimits` to the readers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from policylint.errors import MeasurementError

__all__ = ["DEFAULT_LIMITS", "TraceLimits", "check_grid", "check_rows"]

_SECONDS_PER_DAY = 86_400.0
_DECODED_FLOOR = 1024 * 1024 * 1024


@dataclass(frozen=True)
class TraceLimits:
    """Bounds on what one trace may make the reader hold.

    ``max_file_bytes``: largest table file (CSV, Parquet, Arrow) read; checked
    with ``stat`` before the file is opened. 256 MiB holds a 90-day trace at
    one-second steps several times over.

    ``max_json_bytes``: largest Prometheus JSON answer. Lower than the table
    limit because parsed JSON takes about ten times its size in memory.

    ``max_rows``: most data rows (or Prometheus samples) in one file; ten
    million rows are 160 MB of float64 pairs once converted.

    ``max_grid_samples``: most points of the regular grid a trace is put on,
    checked from the span and the step before the grid is allocated. Ten million
    is 115 days at one-second steps.

    ``max_columns``: most columns in a Parquet or Arrow file, from its schema
    before any column is read. A trace needs a handful; ten thousand leaves room
    for wide exports of one series per column.

    ``max_decoded_bytes``: most bytes the columns read from a Parquet or Arrow
    file may take once decoded, computed from the file's metadata before
    decoding (a small, highly compressed or dictionary-encoded file can stand
    for gigabytes). None (the default) means the largest of 1 GiB, four times
    ``max_file_bytes`` and 64 bytes per allowed row, so raising the other two
    limits raises this one with them (see :attr:`decoded_bytes`).

    ``min_year``/``max_year``: timestamps outside these calendar years are an
    error (a wrong epoch unit shows up as year 50,000 or 1970).
    """

    max_file_bytes: int = 256 * 1024 * 1024
    max_json_bytes: int = 64 * 1024 * 1024
    max_rows: int = 10_000_000
    max_grid_samples: int = 10_000_000
    min_year: int = 1970
    max_year: int = 2200
    max_columns: int = 10_000
    max_decoded_bytes: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_file_bytes", "max_json_bytes", "max_rows", "max_grid_samples", "max_columns"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.max_decoded_bytes is not None and self.max_decoded_bytes < 1:
            raise ValueError("max_decoded_bytes must be at least 1")
        if not 1970 <= self.min_year <= self.max_year <= 9999:
            raise ValueError("years must satisfy 1970 <= min_year <= max_year <= 9999")

    @property
    def decoded_bytes(self) -> int:
        """The limit on decoded bytes in effect: ``max_decoded_bytes``, or the default derived from the others."""
        if self.max_decoded_bytes is not None:
            return self.max_decoded_bytes
        return max(_DECODED_FLOOR, 4 * self.max_file_bytes, 64 * self.max_rows)

    @property
    def min_time(self) -> float:
        """First accepted unix second (1 January of ``min_year``, UTC)."""
        return _year_start(self.min_year)

    @property
    def max_time(self) -> float:
        """Last accepted unix second (the start of ``max_year + 1``, exclusive)."""
        return _year_start(self.max_year + 1)


def _year_start(year: int) -> float:
    # Days from 1970-01-01 to 1 January of ``year`` (proleptic Gregorian), without
    # datetime so years up to 10000 work.
    y = year - 1
    days = 365 * (year - 1970) + (y // 4 - y // 100 + y // 400) - (1969 // 4 - 1969 // 100 + 1969 // 400)
    return float(days) * _SECONDS_PER_DAY


DEFAULT_LIMITS = TraceLimits()


def check_rows(count: int, limits: TraceLimits, name: str) -> None:
    """Refuse a file with more rows than ``limits.max_rows``."""
    if count > limits.max_rows:
        raise MeasurementError(
            f"more than {limits.max_rows:,} rows, the limit for one trace (configuration key limits.max-trace-rows)",
            source=name,
        )


def _step_text(step: float) -> str:
    return f"{step:g} s"


def check_grid(start: float, stop: float, step: float, limits: TraceLimits, name: str) -> int:
    """Number of points of the grid ``start + k*step`` up to ``stop``, refused above the limit.

    Computed from the span and the step alone, so nothing is allocated for a grid
    that is too long (timestamps 0 and 1e9 at a one-second step would be 8 GB).
    """
    span = stop - start
    if not (math.isfinite(span) and math.isfinite(step) and step > 0):
        raise MeasurementError(f"cannot build a time grid from a span of {span:g} s at step {step:g} s", source=name)
    exact = math.floor(span / step + 1e-9) + 1
    if exact > limits.max_grid_samples:
        raise MeasurementError(
            f"trace spans {span / _SECONDS_PER_DAY:,.1f} days at step {_step_text(step)}: "
            f"{exact:,} samples, limit {limits.max_grid_samples:,}",
            source=name,
        )
    return int(exact)
