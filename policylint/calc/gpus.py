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


def gpus_for(concurrency: np.ndarray | float, per_gpu: float, gpus_per_replica: int = 1) -> np.ndarray:
    """Whole GPUs for ``concurrency`` (:func:`gpu_counts`), as integers."""
    return gpu_counts(np.asarray(concurrency, dtype=np.float64), per_gpu, gpus_per_replica).astype(np.int64)


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
            if abs(whole) < 2.0**63:
                return int(whole)
    return int(gpus_for(concurrency, per_gpu, gpus_per_replica))


def residency_ratio(residency_seconds: np.ndarray | float, active_seconds: np.ndarray | float) -> np.ndarray:
    """VRAM residency ratio = resident seconds / active compute seconds."""
    active = np.asarray(active_seconds, dtype=np.float64)
    resident = np.asarray(residency_seconds, dtype=np.float64)
    if (active <= 0).any() or np.isnan(active).any():
        raise PolicylintError("active compute seconds must be positive to form a residency ratio")
    if (resident < 0).any():
        raise PolicylintError("residency seconds must not be negative")
    return resident / active
