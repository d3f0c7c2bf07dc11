"""Every number the calculator uses (:class:`BandSettings`) and the window arithmetic.

The framework's defaults, the 90-day window, the cold-start window in samples
(W = ceil(cold start / step)) and the float guard every ceiling uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from policylint.errors import PolicylintError


# Float noise guard for ceilings: 3.0000000000000004 GPUs is 3 GPUs.
CEIL_EPS = 1e-9


#: The least days of valid samples trustworthy bands need (FRAMEWORK: window). The
#: rules' ``min_window_days`` options default to it; commands take it from here.
MIN_WINDOW_DAYS = 90.0

#: Cold start, in seconds, when nothing declares one (FRAMEWORK: effective cold start): the
#: calculator's default, ``bands --cold-start``'s, and a workload's or pool's without a declaration.
DEFAULT_COLD_START_SECONDS = 300.0

#: Values of :attr:`BandSettings.flat_days`.
FLAT_DAY_TESTS = ("auto", "constant", "empty", "off")


def window_days(valid_samples: int, step_seconds: float) -> float:
    """Days of valid samples: the measurement window of a series (or a pool's grid), unrounded."""
    return valid_samples * step_seconds / 86_400.0


@dataclass(frozen=True)
class BandSettings:
    """Every number the calculator uses, with the framework's defaults."""

    cold_start_seconds: float = DEFAULT_COLD_START_SECONDS
    min_window_days: float = MIN_WINDOW_DAYS
    baseline_percentile: float = 95.0
    daily_percentile: float = 99.0
    max_gap_steps: int = 5
    queue_statistic: str = "max"  # "max" or "percentile"
    queue_percentile: float = 99.0
    outlier_mad_k: float | None = None  # flag and drop outlier days when set
    #: which days are flat (not measurements): "auto" (the series decides, see
    #: :func:`flat_day_test`: every command leaves this alone), "constant" (any value
    #: all day), "empty" (zero all day), or "off"
    flat_days: str = "auto"

    def __post_init__(self) -> None:
        if not (self.cold_start_seconds > 0 and math.isfinite(self.cold_start_seconds)):
            raise PolicylintError(f"cold start must be positive seconds, got {self.cold_start_seconds}")
        if self.min_window_days < 0:
            raise PolicylintError(f"minimum window must be >= 0 days, got {self.min_window_days}")
        for label, p in (
            ("baseline percentile", self.baseline_percentile),
            ("daily percentile", self.daily_percentile),
            ("queue percentile", self.queue_percentile),
        ):
            if not 0 < p <= 100:
                raise PolicylintError(f"{label} must be in (0, 100], got {p}")
        if self.baseline_percentile > self.daily_percentile:
            raise PolicylintError("baseline percentile must not exceed the daily percentile")
        if self.max_gap_steps < 1:
            raise PolicylintError(f"gap limit must be at least 1 step, got {self.max_gap_steps}")
        if self.queue_statistic not in ("max", "percentile"):
            raise PolicylintError(
                f"queue statistic must be 'max' or 'percentile', got {self.queue_statistic!r}"
            )
        if self.flat_days not in FLAT_DAY_TESTS:
            raise PolicylintError(
                f"flat-day test must be 'auto', 'constant', 'empty' or 'off', got {self.flat_days!r}"
            )
        if self.outlier_mad_k is not None and self.outlier_mad_k <= 0:
            raise PolicylintError(f"outlier MAD factor must be positive, got {self.outlier_mad_k}")


def window_samples(cold_start_seconds: float, step_seconds: float) -> int:
    """W = ceil(cold start / step), at least one sample."""
    return max(1, math.ceil(cold_start_seconds / step_seconds - CEIL_EPS))
