"""The bands of one measured series: :func:`analyse` and the :class:`BandReport` it returns.

The join of the two layers below it: a reader's :class:`~policylint.readers.Series`
(with its gaps, declared exclusions and times) goes through the calculator
(:mod:`policylint.calc`: cleaning, the core path, queue, GPUs), and the figures
come back as a frozen report with a stable JSON form. The calculator itself
knows nothing about series objects or time formatting; this module does.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from policylint.calc.cleaning import flat_days, outlier_days
from policylint.calc.core import core_rows
from policylint.calc.gpus import gpus_for
from policylint.calc.queue import QueueStats, capacity_for_tolerance, queue_stats
from policylint.calc.scratch import shared_scratch
from policylint.calc.settings import CEIL_EPS, BandSettings, window_days, window_samples
from policylint.calc.spikes import Spike
from policylint.errors import MeasurementError, PolicylintError
from policylint.traces import Exclusion, Gap, Series, apply_exclusions, format_time


def flat_day_test(series: Series, requested: str = "auto") -> str:
    """Which days of ``series`` count as flat: the one definition every command uses.

    A sampled series (a metric export) that holds one value all day is padding or
    an exporter repeating its last reading: ``constant``. Concurrency rebuilt from
    a request log or job list (:attr:`Series.from_intervals`) is constant all day
    whenever the same long jobs run, which is demand: only a day with nothing
    running at all is not a measurement, ``empty``. ``requested`` other than
    ``auto`` overrides the choice.
    """
    if requested != "auto":
        return requested
    return "empty" if series.from_intervals else "constant"


def _iso(t: float | None) -> str | None:
    return None if t is None else format_time(t)


def _num(x: float | None) -> float | None:
    """JSON has no infinity: infinite waits become null (documented)."""
    if x is None or not math.isfinite(x):
        return None
    return float(x)


@dataclass(frozen=True, eq=False)
class SpikeTable:
    """The spikes of one analysed series as parallel arrays, one element per spike.

    A spike-heavy series has thousands of spikes and a reporter shows a handful,
    so the spikes stay columns (start in unix seconds, width in seconds, height,
    volume, noise flag) and a :class:`Spike` object is only built for the ones
    read by index or iteration. Two tables are equal when every column is.
    """

    start: np.ndarray
    width_seconds: np.ndarray
    height: np.ndarray
    volume: np.ndarray
    noise: np.ndarray

    def __len__(self) -> int:
        return int(self.start.size)

    def __getitem__(self, i: int) -> Spike:
        return Spike(
            float(self.start[i]),
            float(self.width_seconds[i]),
            float(self.height[i]),
            float(self.volume[i]),
            bool(self.noise[i]),
        )

    def __iter__(self) -> Iterator[Spike]:
        # tolist() converts a whole column at once: cheaper than per-element float()
        columns = (self.start, self.width_seconds, self.height, self.volume, self.noise)
        return map(Spike, *(c.tolist() for c in columns))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SpikeTable):
            return NotImplemented
        return all(
            np.array_equal(getattr(self, name), getattr(other, name))
            for name in ("start", "width_seconds", "height", "volume", "noise")
        )

    __hash__ = None  # type: ignore[assignment]  # mutable arrays: equal tables need not hash alike

    def widest(self, count: int) -> list[Spike]:
        """The ``count`` widest spikes: widest first, then most volume, then earliest."""
        if count <= 0 or not len(self):
            return []
        # lexsort's last key is the primary one; ties fall through to start time.
        order = np.lexsort((self.start, -self.volume, -self.width_seconds))
        return [self[int(i)] for i in order[:count]]

    def to_list(self) -> list[dict[str, Any]]:
        """The JSON form of every spike, in time order (see :meth:`BandReport.to_dict`)."""
        return [
            {"start": _iso(t), "width_seconds": w, "height": h, "volume": v, "noise": z}
            for t, w, h, v, z in zip(
                self.start.tolist(),
                self.width_seconds.tolist(),
                self.height.tolist(),
                self.volume.tolist(),
                self.noise.tolist(),
                strict=True,
            )
        ]


@dataclass(frozen=True)
class BandReport:
    """Everything ``analyse`` found for one series."""

    source: str
    baseline: float
    daily: float
    peak: float
    window_days: float
    min_window_days: float
    meets_window: bool
    step_seconds: float
    cold_start_seconds: float
    window_samples: int
    samples: int
    valid_samples: int
    excluded_samples: int
    gap_samples: int
    gaps: tuple[Gap, ...]
    exclusions: tuple[Exclusion, ...]
    outlier_days: tuple[float, ...]
    first: float
    last: float
    spikes: SpikeTable = field(hash=False)
    noise_spike_count: int
    real_spike_count: int
    widest_noise_width: float
    baseline_queue: QueueStats | None
    tolerance_seconds: float | None = None
    queue_statistic: str = "max"
    capacity_for_tolerance: int | None = None
    queue: QueueStats | None = None
    per_gpu: float | None = None
    gpus_per_replica: int = 1
    baseline_percentile: float = 95.0
    daily_percentile: float = 99.0
    bands_gpus: dict[str, int] | None = field(default=None, hash=False)
    #: highest level held for a whole cold-start window (max of the sustained series)
    sustained_max: float = math.nan
    #: UTC day starts on which the trace never changed (left out of the bands and the window)
    flat_days: tuple[float, ...] = ()
    #: the cleaned series the figures were computed from (not part of to_dict)
    cleaned: Series | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; keys are stable (see docs/bands.md)."""
        out: dict[str, Any] = {
            "source": self.source,
            "bands": {"baseline": self.baseline, "daily": self.daily, "peak": self.peak},
            "percentiles": {"baseline": self.baseline_percentile, "daily": self.daily_percentile},
            "window_days": self.window_days,
            "min_window_days": self.min_window_days,
            "meets_window": self.meets_window,
            "step_seconds": self.step_seconds,
            "cold_start_seconds": self.cold_start_seconds,
            "window_samples": self.window_samples,
            "samples": self.samples,
            "valid_samples": self.valid_samples,
            "excluded_samples": self.excluded_samples,
            "gap_samples": self.gap_samples,
            "first": _iso(self.first),
            "last": _iso(self.last),
            "gaps": [
                {"start": _iso(g.start), "end": _iso(g.end), "seconds": g.seconds} for g in self.gaps
            ],
            "exclusions": [
                {"start": _iso(e.start), "end": _iso(e.end), "label": e.label} for e in self.exclusions
            ],
            "outlier_days": [_iso(d) for d in self.outlier_days],
            "flat_days": [_iso(d) for d in self.flat_days],
            "spikes": self.spikes.to_list(),
            "spike_counts": {"noise": self.noise_spike_count, "real": self.real_spike_count},
            "widest_noise_width_seconds": self.widest_noise_width,
            "baseline_queue": None
            if self.baseline_queue is None
            else {
                "capacity": self.baseline_queue.capacity,
                "max_wait_seconds": _num(self.baseline_queue.max_wait),
                "p99_wait_seconds": _num(self.baseline_queue.p99_wait),
            },
        }
        if self.tolerance_seconds is not None:
            out["tolerance_seconds"] = self.tolerance_seconds
            out["queue_statistic"] = self.queue_statistic
            out["capacity_for_tolerance"] = self.capacity_for_tolerance
        if self.queue is not None:
            out["queue"] = {
                "capacity": self.queue.capacity,
                "max_wait_seconds": _num(self.queue.max_wait),
                "p99_wait_seconds": _num(self.queue.p99_wait),
            }
        if self.bands_gpus is not None:
            out["bands_gpus"] = dict(self.bands_gpus)
            out["per_gpu"] = self.per_gpu
            out["gpus_per_replica"] = self.gpus_per_replica
        return out


def _exclude_days(series: Series, days: np.ndarray, label: str) -> Series:
    """``apply_exclusions`` for whole UTC days (distinct day starts): the same series, fewer passes.

    Each day is one stretch of samples, masked by slicing; the general form
    builds a per-sample coverage count for ranges that may overlap, several
    full-size temporaries that cost more than the masking itself here.
    """
    starts = np.asarray(days, dtype=np.float64)
    lo = np.searchsorted(series.times, starts, side="left")
    hi = np.searchsorted(series.times, starts + 86_400.0, side="left")
    values = series.values.copy()
    valid = series.valid.copy()
    newly = 0
    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):  # one step per day, not per sample
        newly += int(np.count_nonzero(valid[a:b]))
        values[a:b] = np.nan
        valid[a:b] = False
    return dataclasses.replace(
        series,
        values=values,
        valid=valid,
        excluded=series.excluded + newly,
        exclusions=series.exclusions + tuple(Exclusion(float(d), float(d) + 86_400.0, label) for d in starts),
    )


def analyse(
    series: Series,
    settings: BandSettings | None = None,
    *,
    exclusions: Sequence[Exclusion] = (),
    tolerance_seconds: float | None = None,
    capacity: float | None = None,
    per_gpu: float | None = None,
    gpus_per_replica: int = 1,
) -> BandReport:
    """Compute the three bands and everything around them for one series.

    Declared ``exclusions`` are masked first, then flat days (see
    :func:`flat_days`; they count neither towards the window nor the bands), and,
    when ``outlier_mad_k`` is set, outlier days. ``tolerance_seconds`` asks for the least capacity meeting it;
    ``capacity`` asks for waits at that capacity; ``per_gpu`` converts the bands
    to GPUs. Raises :class:`MeasurementError` when nothing usable remains.
    """
    settings = settings or BandSettings()
    cleaned = apply_exclusions(series, exclusions)
    flat: tuple[float, ...] = ()
    test = flat_day_test(series, settings.flat_days)
    if test != "off":
        # Before the outlier test: a run of padded zero days would drag the median day down.
        found_flat = flat_days(cleaned.times, cleaned.values, zero_only=test == "empty")
        if found_flat.size:
            flat = tuple(float(d) for d in found_flat)
            cleaned = _exclude_days(cleaned, found_flat, "flat day")
            if not cleaned.valid.any():
                raise MeasurementError(
                    f"the trace is constant on every one of its {len(flat)} days (flat days: padding or a"
                    " dead exporter): nothing was measured",
                    source=series.source,
                )
    flagged: tuple[float, ...] = ()
    if settings.outlier_mad_k is not None:
        days = outlier_days(cleaned.times, cleaned.values, settings.outlier_mad_k)
        if days.size:
            flagged = tuple(float(d) for d in days)
            cleaned = _exclude_days(cleaned, days, "outlier day")
    c = cleaned.values
    step = cleaned.step_seconds
    valid_count = int(np.count_nonzero(cleaned.valid))
    if valid_count == 0:
        raise MeasurementError("no valid sample left after exclusions", source=series.source)
    w = window_samples(settings.cold_start_seconds, step)
    core = None
    if w <= c.size:
        core = core_rows(c.reshape(1, -1), w, step, settings, None, shared_scratch(), detail=True)
    if core is None or not core.sustained_count[0]:
        raise MeasurementError(
            f"no stretch of {w} consecutive valid samples (cold start {settings.cold_start_seconds:g} s"
            f" at {step:g} s steps): cannot form a sustained series" + (f"; {series.hint}" if series.hint else ""),
            source=series.source,
        )
    # Order statistics of s already give B <= D and s <= c gives D <= P; the core's clamps
    # only make the guarantee survive any future change of method.
    peak = float(core.peak[0])
    daily = float(core.daily[0])
    baseline = float(core.baseline[0])

    found = core.spikes
    spikes = SpikeTable(
        start=cleaned.times[found.start_index],
        width_seconds=found.length * step,
        height=found.height,
        volume=found.volume,
        noise=found.noise,
    )
    noise_count = int(np.count_nonzero(found.noise))
    widest_noise = float(found.length[found.noise].max() * step) if noise_count else 0.0

    measured_days = window_days(valid_count, step)
    base_cap = math.ceil(baseline - CEIL_EPS)
    # the core's queue is the one at ceil(baseline), with its waits (None at zero capacity)
    baseline_queue = core.queue
    assert (baseline_queue is None) == (base_cap <= 0)

    cap_needed = None
    if tolerance_seconds is not None:
        cap_needed = capacity_for_tolerance(
            c,
            tolerance_seconds,
            step,
            statistic=settings.queue_statistic,
            wait_percentile=settings.queue_percentile,
        )
    queue = None
    if capacity is not None:
        if capacity < 0:
            raise PolicylintError(f"capacity must be >= 0, got {capacity}")
        queue = queue_stats(c, capacity, step, settings.queue_percentile)
    bands_gpus = None
    if per_gpu is not None:
        g = gpus_for(np.array([baseline, daily, peak]), per_gpu, gpus_per_replica)
        bands_gpus = {"baseline": int(g[0]), "daily": int(g[1]), "peak": int(g[2])}

    return BandReport(
        source=series.source,
        baseline=baseline,
        daily=daily,
        peak=peak,
        window_days=measured_days,
        min_window_days=settings.min_window_days,
        meets_window=measured_days >= settings.min_window_days,
        step_seconds=step,
        cold_start_seconds=settings.cold_start_seconds,
        window_samples=w,
        samples=cleaned.samples,
        valid_samples=valid_count,
        excluded_samples=cleaned.excluded,
        gap_samples=cleaned.gap_samples,
        gaps=cleaned.gaps,
        exclusions=cleaned.exclusions,
        outlier_days=flagged,
        flat_days=flat,
        first=series.first,
        last=series.last,
        spikes=spikes,
        noise_spike_count=noise_count,
        real_spike_count=len(spikes) - noise_count,
        widest_noise_width=widest_noise,
        baseline_queue=baseline_queue,
        tolerance_seconds=tolerance_seconds,
        queue_statistic=settings.queue_statistic,
        capacity_for_tolerance=cap_needed,
        queue=queue,
        per_gpu=per_gpu,
        gpus_per_replica=gpus_per_replica,
        baseline_percentile=settings.baseline_percentile,
        daily_percentile=settings.daily_percentile,
        bands_gpus=bands_gpus,
        sustained_max=float(core.sustained_max[0]) if core.sustained_max is not None else math.nan,
        cleaned=cleaned,
    )
