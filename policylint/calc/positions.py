"""Where to partition an array so that the order statistics asked for are in place (no numpy import)."""

from __future__ import annotations

from collections.abc import Sequence


def kths(ranks: Sequence[int], size: int) -> list[int]:
    """The positions to partition ``size`` values at so that each of ``ranks`` holds its order statistic.

    The ranks themselves, sorted and once each, and a neighbouring position too when there
    is only one. ``np.partition`` with one position takes numpy's SIMD selection, which on the
    many equal values of a sustained series or a trace's sample is four to eight times slower
    than its introselect (measured on the fleet's series: 105 against 28 us for 4,415
    values, 543 against 71 us for 26,000); with two positions it takes introselect. The
    values at the positions asked for are the order statistics either way; only where
    both zeros may be among them could the sign of the zero found differ, so it is used
    where every value compared is positive (above a positive threshold) or only compared.
    """
    at = sorted(set(ranks))
    if len(at) == 1 and size > 1:
        at = [at[0], at[0] + 1] if at[0] + 1 < size else [at[0] - 1, at[0]]
    return at
