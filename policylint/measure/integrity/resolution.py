"""Resolution: evidence coarser or smoother than it looks.

A coarse series forward-filled onto a fine grid changes value only every k samples
(:func:`block_length`), or, with jitter added, moves mostly every k samples
(:func:`jump_block`); a fabricated or smoothed curve has almost no sample-to-sample
noise (:func:`roughness`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: Largest hidden block (in samples) looked for: a 1-minute grid holding hourly data is 60.
MAX_BLOCK = 64
#: Fewest value changes a series needs before its block structure is judged.
MIN_CHANGES = 20
#: Share of the value changes that must fall on one phase of a block for the block to count.
BLOCK_PHASE_SHARE = 0.99
#: Share of the block boundaries at which the value must change for the block to count. Hourly
#: data of a GPU training cluster (Helios) repeated on its 1-minute grid changes at 25% of the
#: hours; a step function that moves twice a day (on the hour) changes at 8% and says too little
#: about its resolution to be judged.
BLOCK_CHANGE_SHARE = 0.15
#: Fewest value changes per day (on average over the valid samples) before the block structure
#: is judged. A shift pattern that changes twice a day on the hour (08:00 and 20:00) lines up with
#: a 12-hour block by construction; real demand put on a coarse grid changes at most boundaries
#: (hourly Helios data: 6 changes a day).
MIN_CHANGES_PER_DAY = 4.0


def change_positions(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Indices i (>= 1) where sample i differs from sample i - 1, both valid."""
    import numpy as np

    both = valid[1:] & valid[:-1]
    changed = both & (values[1:] != values[:-1])
    return np.flatnonzero(changed) + 1


def block_length(
    changes: np.ndarray,
    boundaries: int,
    *,
    max_block: int = MAX_BLOCK,
    min_changes: int = MIN_CHANGES,
    phase_share: float = BLOCK_PHASE_SHARE,
    change_share: float = BLOCK_CHANGE_SHARE,
) -> int:
    """Resolution: the longest block k such that the series is k-sample blocks of one value.

    ``changes`` are the change positions (see :func:`change_positions`) and
    ``boundaries`` the number of sample-to-sample pairs. k counts when at least
    ``phase_share`` of the changes fall on one residue modulo k and the value
    changes at ``change_share`` or more of those block boundaries. With 20
    changes, all on one phase of k by chance has odds of k^-19: what remains
    is a series that carries no information finer than k samples.
    The loop runs over block lengths (at most ``max_block``), never over samples.
    """
    import numpy as np

    n = int(changes.size)
    if n < min_changes or boundaries <= 0:
        return 1
    # Screen every k on an evenly spread sample of at most 512 changes (a series with blocks
    # has them everywhere), then count only the survivors over all changes: the screen costs
    # microseconds where counting all changes 63 times cost most of the stage.
    sample = changes[:: max(1, n // 512)]
    best = 1
    # a phase of k holds one phase of each multiple of k: when no phase of k passes the screen,
    # none of a multiple's does, and the multiple is skipped without a count
    screened_out = np.zeros(max_block + 1, dtype=bool)
    for k in range(2, max_block + 1):
        if screened_out[k]:
            continue
        if int(np.bincount(sample % k, minlength=k).max()) < (phase_share - 0.05) * sample.size:
            screened_out[2 * k :: k] = True
            continue
        counts = np.bincount(changes % k, minlength=k)
        on_phase = int(counts.max())
        if on_phase < phase_share * n:
            continue
        if on_phase >= change_share * (boundaries / k):
            best = k
    return best


def roughness(values: np.ndarray, valid: np.ndarray) -> float | None:
    """Resolution: std of the second differences over std of the first, on runs of valid samples.

    White measurement noise gives about 1.7, a random walk about 1.4, a smooth
    curve sampled finely close to 0. None when the series never changes.
    """
    import numpy as np

    d1 = np.diff(values)
    ok1 = valid[1:] & valid[:-1]
    d2 = np.diff(d1)
    ok2 = ok1[1:] & ok1[:-1]
    n1, n2 = int(np.count_nonzero(ok1)), int(np.count_nonzero(ok2))
    if n1 < 3 or n2 < 2:
        return None
    # every pair valid: the differences themselves, not a gathered copy of the same values in the same order
    s1 = float(np.std(d1 if n1 == d1.size else d1[ok1]))
    if not s1 > 0 or not math.isfinite(s1):
        return None
    return float(np.std(d2 if n2 == d2.size else d2[ok2])) / s1


#: Share of the first-difference energy (sum of squared steps) one phase of k samples must carry
#: for the series to be k-sample blocks with jitter added: by chance a phase carries 1/k of it; an
#: hourly series on a 5-minute grid with +-1 of jitter added carries about 90% on the hour.
JUMP_SHARE = 0.6
#: How many times the typical step inside a block the typical step at a block boundary must be.
JUMP_RATIO = 3.0


_ONES: list[np.ndarray] = []


def _ones(size: int) -> np.ndarray:
    """A read-only array of at least ``size`` ones, kept between calls (a fresh one is page faults every trace)."""
    import numpy as np

    if not _ONES or _ONES[0].size < size:
        ones = np.ones(max(size, 1 << 16), dtype=np.float64)
        ones.flags.writeable = False
        _ONES[:] = [ones]
    return _ONES[0]


def jump_block(values: np.ndarray, valid: np.ndarray, *, max_block: int = MAX_BLOCK) -> tuple[int, float | None]:
    """Resolution: (k, share) - the longest block k whose boundaries carry most of the series' movement.

    A coarse series forward-filled onto a fine grid and then jittered changes at
    every sample, so the exact test (:func:`block_length`) finds nothing; but its real
    moves still happen on one phase of k, and the jitter is small beside them. k counts
    when one residue modulo k (k >= 3) holds at least :data:`JUMP_SHARE` of the sum of
    squared first differences, with a change at :data:`BLOCK_CHANGE_SHARE` of those
    boundaries. (1, None) when no k does.
    """
    import numpy as np

    d = np.diff(values)
    ok = valid[1:] & valid[:-1]
    pos = np.flatnonzero(ok & (d != 0))
    if pos.size < MIN_CHANGES:
        return 1, None
    energy = d[pos] ** 2
    total = float(energy.sum())
    if not total > 0 or not math.isfinite(total):
        return 1, None
    pairs = int(np.count_nonzero(ok))
    best, best_share = 1, None
    # Screen every k on the energy laid out k to a row: its column sums are the energy per phase
    # up to rounding. Only a k whose best phase comes within a hair of JUMP_SHARE there is
    # counted exactly as before (bincount in sample order), so the figures are unchanged.
    # A phase of k holds every sample of one phase of k's multiples, so when no phase of k comes
    # near the share, none of its multiples' does either: they are skipped without a sum.
    spread = np.zeros(d.size, dtype=np.float64)
    spread[pos] = energy
    screen = (JUMP_SHARE - 1e-9) * total
    hopeless = (JUMP_SHARE - 2e-9) * total
    ruled_out = np.zeros(max_block + 1, dtype=bool)

    ones = _ones(spread.size // 2)  # a row count is at most half the steps (k >= 2)

    def phase_energy(k: int) -> float:
        whole = (spread.size // k) * k
        approx = ones[: whole // k] @ spread[:whole].reshape(-1, k)  # column sums, in one product
        rest = spread[whole:]
        approx[: rest.size] += rest
        return float(approx.max())

    if max_block >= 6 and phase_energy(2) < hopeless:
        ruled_out[4::2] = True
    for k in range(3, max_block + 1):
        if ruled_out[k]:
            continue
        most = phase_energy(k)
        if most < hopeless:
            ruled_out[2 * k :: k] = True
        if most < screen:
            continue
        per_phase = np.bincount(pos % k, weights=energy, minlength=k)
        top = int(np.argmax(per_phase))
        share = float(per_phase[top]) / total
        if share < JUMP_SHARE:
            continue
        on = pos % k == top
        moved = int(np.count_nonzero(on))
        if moved < MIN_CHANGES or moved < BLOCK_CHANGE_SHARE * (pairs / k):
            continue
        # the typical boundary step stands out of the typical step inside the blocks: a daily burst
        # whose two edges happen to lie k samples apart concentrates energy too, but leaves most
        # boundaries as ordinary as the rest
        steps = np.abs(d[pos])
        inside = steps[~on]
        if inside.size and float(np.median(steps[on])) >= JUMP_RATIO * float(np.median(inside)):
            best, best_share = k, share
    return best, best_share
