"""Measurement readers, as the rest of policylint imports them.

The readers live in :mod:`policylint.readers` (one module per input form, a
shared grid and the guarded opening of files); this module re-exports their
public API under the names callers have always used.
"""

from __future__ import annotations

from policylint.readers import (
    CHUNK_ROWS,
    DEFAULT_LIMITS,
    FORMATS,
    Exclusion,
    Gap,
    Jobs,
    Series,
    TraceLimits,
    apply_exclusions,
    concurrency,
    format_time,
    parse_exclusion,
    parse_time,
    read_jobs,
    read_parts,
    read_series,
)
from policylint.readers.columns import (
    DURATION_CANDIDATES,
    END_CANDIDATES,
    GPU_CANDIDATES,
    START_CANDIDATES,
    TIMESTAMP_CANDIDATES,
)

__all__ = [
    "CHUNK_ROWS",
    "DEFAULT_LIMITS",
    "DURATION_CANDIDATES",
    "END_CANDIDATES",
    "FORMATS",
    "GPU_CANDIDATES",
    "START_CANDIDATES",
    "TIMESTAMP_CANDIDATES",
    "Exclusion",
    "Gap",
    "Jobs",
    "Series",
    "TraceLimits",
    "apply_exclusions",
    "concurrency",
    "format_time",
    "parse_exclusion",
    "parse_time",
    "read_jobs",
    "read_parts",
    "read_series",
]
