"""GPUs from concurrency (the one GPU conversion), and the VRAM residency ratio."""

from __future__ import annotations

import math

import numpy as np

from policylint.calc.settings import CEIL_EPS
from policylint.errors import PolicylintError


def gpu_counts(values: np.ndarray, per_gpu: np.ndarray | float, gpus_per_replica: np.ndarray | int = 1) -> np.ndarray:
    """GPUs = ceil(concurrency / concurrency per GPU) x GPUs per replica: the one GPU conversion.

    ``values`` is concurrency, any shape; a 2-D ``(rows, samples)`` array may carry
    one ``per_gpu`` and ``gpus_per_replica`` per row. NaN stays NaN (an unusable
    sample stays unusable); the result is float64 whole numbers. A GPU-weighted
    trace is converted with ``per_gpu = 1`` and one GPU per replica
    (:func:`policylint.measure.conversion.gpu_conversion`).
    """
    x = np.asarray(values, dtype=np.float64)
    per = np.asarray(per_gpu, dtype=np.float64)
    replicas = np.asarray(gpus_per_replica, dtype=np.float64)
    if x.ndim == 2:
        per = per.reshape(-1, 1)
        replicas = replicas.reshape(-1, 1)
    if (per <= 0).any() or np.isnan(per).any():
        raise PolicylintError(f"concurrency per GPU must be positive, got {_shown(per)}")
    if (replicas < 1).any():
        raise PolicylintError(f"GPUs per replica must be at least 1, got {_shown(replicas)}")
    # ceil(c / per - eps), max(., 0) x replicas, done in one buffer: a pool of a hundred
    # members is tens of megabytes per temporary.
    # A count past float64 is infinity, without a warning: gpus_for refuses it, a float series keeps it.
    with np.errstate(over="ignore"):
        out: np.ndarray = np.divide(x, per)
        out = np.asarray(out, dtype=np.float64)
        out -= CEIL_EPS
        np.ceil(out, out=out)
        # np.maximum keeps NaN (unusable samples stay unusable).
        np.maximum(out, 0.0, out=out)
        out *= replicas
    return out


def _shown(a: np.ndarray) -> str:
    flat = np.ravel(a)
    return f"{flat[0]:g}" if flat.size == 1 else ", ".join(f"{v:g}" for v in flat[:5])


#: GPU counts are int64: a count must be below 2^63 to be one (a float64 past it casts to a wrapped number).
MAX_GPUS = 2.0**63


def gpus_for(concurrency: np.ndarray | float, per_gpu: float, gpus_per_replica: int = 1) -> np.ndarray:
    """Whole GPUs for ``concurrency`` (:func:`gpu_counts`), as integers.

    A concurrency that is no number (NaN, infinity) or whose count would not fit
    an int64 is refused with a :class:`PolicylintError`, never cast to a
    wrapped (negative) count.
    """
    x = np.asarray(concurrency, dtype=np.float64)
    counts = gpu_counts(x, per_gpu, gpus_per_replica)
    fits = counts < MAX_GPUS  # NaN fails too; counts are never negative
    if not fits.all():
        i = int(np.argmax(~fits.ravel()))
        value, count = float(np.broadcast_to(x, counts.shape).ravel()[i]), float(counts.ravel()[i])
        if not math.isfinite(value):
            raise PolicylintError(f"cannot convert concurrency {value:g} to GPUs: it is not a finite number")
        raise PolicylintError(
            f"cannot convert concurrency {value:g} to GPUs: {count:g} GPUs "
            f"(at {_shown(np.asarray(per_gpu, dtype=np.float64))} per GPU) is more than a count can hold (2^63)"
        )
    return counts.astype(np.int64)


def gpus_one(concurrency: float, per_gpu: float, gpus_per_replica: int = 1) -> int:
    """:func:`gpus_for` of one number, as a Python ``int``: the same conversion, without arrays.

    A workload's view converts three bands one at a time, and a 0-d array costs tens of
    microseconds where the arithmetic costs nanoseconds. The steps are those of
    :func:`gpu_counts` on doubles (division, subtracting :data:`CEIL_EPS`, ceiling, the
    floor at zero, the product, truncation), each exact or rounded alike in Python and
    NumPy, so the figure is the array path's (``tests/test_bands.py`` compares the two).
    Anything else - NaN or infinity, a count past 64 bits, a refused ``per_gpu`` or
    ``gpus_per_replica`` - takes the array path itself, with its result or its error.
    """
    x, per, replicas = float(concurrency), float(per_gpu), float(gpus_per_replica)
    if per > 0 and replicas >= 1 and math.isfinite(per) and math.isfinite(replicas):
        ratio = x / per - CEIL_EPS
        if math.isfinite(ratio):
            whole = float(max(math.ceil(ratio), 0)) * replicas
            if abs(whole) < MAX_GPUS:
                return int(whole)
    return int(gpus_for(concurrency, per_gpu, gpus_per_replica))


def mean_rounding(
    concurrency: np.ndarray, per_gpu: float, gpus_per_replica: int = 1, counts: np.ndarray | None = None
) -> float | None:
    """The GPUs rounding up to whole replicas adds to a demand series, on average over its usable samples.

    Per sample, :func:`gpu_counts` (the ceiling, the conversion every band and the pooled
    series use) minus the same conversion without the ceiling, ``c / per_gpu x GPUs per
    replica``; the mean over the samples that are not NaN, or None without one. Taken as
    the difference of the two means (the mean of a difference), and from ``counts`` when the
    caller has the series' :func:`gpu_counts` already. Means add up: the sum over a pool's
    workloads is what rounding adds to the pooled demand on average (PL113).
    """
    c = np.asarray(concurrency, dtype=np.float64)
    usable = ~np.isnan(c)
    n = int(np.count_nonzero(usable))
    if n == 0:
        return None
    whole = gpu_counts(c, per_gpu, gpus_per_replica) if counts is None else np.asarray(counts, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        mean = float(np.sum(whole, where=usable)) / n - float(np.sum(c, where=usable)) / n / float(per_gpu) * float(gpus_per_replica)
    return mean if math.isfinite(mean) else None


def residency_ratio(residency_seconds: np.ndarray | float, active_seconds: np.ndarray | float) -> np.ndarray:
    """VRAM residency ratio = resident seconds / active compute seconds."""
    active = np.asarray(active_seconds, dtype=np.float64)
    resident = np.asarray(residency_seconds, dtype=np.float64)
    if (active <= 0).any() or np.isnan(active).any():
        raise PolicylintError("active compute seconds must be positive to form a residency ratio")
    if (resident < 0).any():
        raise PolicylintError("residency seconds must not be negative")
    return resident / active
