"""A series moved in time is recognised as the same samples (PL950's evidence under --diff)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from policylint.measure.integrity.retiming import retimed

STEP = 300.0


def _series(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = rng.poisson(40, n).astype(float)
    values[rng.random(n) < 0.01] = np.nan  # unusable samples move with the others
    return 1_788_134_400 + STEP * np.arange(n), values


@settings(max_examples=60, deadline=None)
@given(n=st.integers(64, 3000), seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 48), cut=st.integers(0, 40))
def test_samples_moved_by_a_whole_number_of_steps_are_retimed(n: int, seed: int, steps: int, cut: int) -> None:
    times, values = _series(n, seed)
    cut = min(cut, n - 32)  # at least the window it is recognised by
    assert retimed(times, values, times[: n - cut] + steps * STEP, values[: n - cut])
    assert retimed(times, values, times[cut:] - steps * STEP, values[cut:])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(64, 3000), seed=st.integers(0, 2**32 - 1), cut=st.integers(1, 40))
def test_a_rolling_refresh_and_other_samples_are_not(n: int, seed: int, cut: int) -> None:
    times, values = _series(n, seed)
    # days dropped at the start, new samples at the end: every kept sample stays at its time
    fresh = np.concatenate([values[cut:], _series(cut, seed + 1)[1]])
    assert not retimed(times, values, times + cut * STEP, fresh)
    assert not retimed(times, values, times[cut:], values[cut:])
    other = _series(n, seed + 7)[1]
    assert not retimed(times, values, times + STEP, other)


def test_too_short_to_tell() -> None:
    times, values = _series(20, 1)
    assert not retimed(times, values, times + STEP, values)
