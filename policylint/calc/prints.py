"""Content prints of a measured series: what identifies its values, wherever they are read.

The one recipe for the values print, used by the integrity stage (a workload's
``values_fingerprint``) and by the readers (each summed column's, so that a column that
is another workload's whole series is found, red team 2026-12-06, round 11).
"""

from __future__ import annotations

import hashlib

import numpy as np


def float64_bytes(a: np.ndarray, valid: np.ndarray, everything: bool) -> memoryview:
    """The valid samples of ``a`` as contiguous little-endian float64, hashed in place (no copy when all are valid)."""
    picked = a if everything and valid.dtype == bool and a.shape == valid.shape else a[valid]
    return np.ascontiguousarray(picked, dtype="<f8").data.cast("B")


def values_fingerprint(values: np.ndarray, valid: np.ndarray) -> str:
    """Identity: the SHA-256 of the valid samples' values alone (a copy moved in time keeps it)."""
    digest = hashlib.sha256(b"policylint-values/1\0")
    digest.update(float64_bytes(values, valid, bool(np.all(valid))))
    return digest.hexdigest()
