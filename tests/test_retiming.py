"""A series moved in time is recognised as the same samples (PL950's evidence under --diff)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policylint.measure.integrity.retiming import reordered, retimed

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


# --- values reordered within each day, times kept (red team, 2026-12-07, round 8) ---------------------------

DAY = 86_400


def _daily(days: int, seed: int, top: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """A 5-minute trace with a busy night and a quiet day, integer counts."""
    rng = np.random.default_rng(seed)
    times = 1_788_134_400 + STEP * np.arange(days * DAY // int(STEP))
    hour = (times % DAY) / 3600
    busy = (hour >= 21) | (hour < 3)
    return times, rng.poisson(np.where(busy, top, 0.3)).astype(float)


def _rotate_windows(times: np.ndarray, values: np.ndarray, start_hour: float, hours: float, shift: int) -> np.ndarray:
    """Each day's window [start_hour, start_hour + hours) rotated by ``shift`` samples within itself."""
    out = values.copy()
    per = int(hours * 3600 / STEP)
    for lo in np.flatnonzero((times - times[0]) % DAY == start_hour * 3600):
        if lo + per <= len(values):
            out[lo : lo + per] = np.roll(values[lo : lo + per], shift)
    return out


def test_nights_rotated_inside_their_window_are_reordered() -> None:
    """The round-8 game on the example's own trace: 21:00-05:00 rotated by three hours each night."""
    from conftest import EXAMPLES

    rows = np.loadtxt(EXAMPLES / "good" / "measurements" / "traces" / "offline-scoring.csv", delimiter=",", skiprows=1)
    times, values = rows[:, 0], rows[:, 1]
    turned = _rotate_windows(times, values, 21, 8, 36)
    assert np.count_nonzero(turned != values) == 8484  # a third of 26 496 samples
    assert not retimed(times, values, times, turned)  # no one shift over half of the samples
    assert reordered(times, values, times, turned)


@settings(max_examples=40, deadline=None)
@given(start=st.integers(0, 23), hours=st.integers(2, 23), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_any_window_of_a_day_rotated_within_itself_is_reordered(start: int, hours: int, seed: int,
                                                              data: st.DataObject) -> None:
    times, values = _daily(20, seed)
    shift = data.draw(st.integers(1, hours * 12 - 1))
    turned = _rotate_windows(times, values, start, hours, shift)
    if np.count_nonzero(turned != values) >= max(32, 0.01 * len(values)):
        assert reordered(times, values, times, turned)


def test_each_day_shuffled_and_nan_moved_with_it_is_reordered() -> None:
    times, values = _daily(30, 3)
    values[::97] = np.nan  # unusable samples move with the others, NaN equal to NaN
    rng = np.random.default_rng(5)
    day = (times - times[0]) // DAY
    order = np.lexsort((rng.random(len(times)), day))  # a random order within each day
    assert reordered(times, values, times, values[order])
    # the same, a day of it measured again: the base's values are no longer all there
    other = values[order].copy()
    other[day == 4] = _daily(30, 4)[1][day == 4]
    assert not reordered(times, values, times, other)


def test_a_reordering_longer_than_a_day_is_not_this_screen_s() -> None:
    """Values rotated by a day and a half over two-day windows: no stretch of the base shorter than a day."""
    times, values = _daily(20, 8)
    turned = np.roll(values.reshape(10, -1), 36 * 12, axis=1).ravel()
    assert not reordered(times, values, times, turned)


# honest re-exports: never reordered


def test_a_rolling_refresh_is_not_reordered() -> None:
    times, values = _daily(30, 11)
    cut = 3 * DAY // int(STEP)
    fresh = np.concatenate([values[cut:], _daily(3, 12)[1]])
    assert not reordered(times, values, times + cut * STEP, fresh)
    assert not reordered(times, values, times[cut:], values[cut:])


def test_a_measurement_of_the_same_period_taken_again_is_not_reordered() -> None:
    times, values = _daily(30, 13)
    rng = np.random.default_rng(14)
    again = np.maximum(0, values + rng.integers(-1, 2, len(values)))
    assert not reordered(times, values, times, again)
    # the base's values exactly, but moved over weeks rather than within a day
    assert not reordered(times, values, times, rng.permutation(values))


def test_a_few_samples_corrected_are_not_reordered() -> None:
    """A 3 -> 4 and a 4 -> 3 on one day: the base's values, reordered, and too few to move a band."""
    times, values = _daily(30, 15, top=4)
    fixed = values.copy()
    three, four = np.flatnonzero(values == 3)[0], np.flatnonzero(values == 4)[0]
    assert abs(three - four) < DAY / STEP
    fixed[three], fixed[four] = 4, 3
    assert not reordered(times, values, times, fixed)
    # sixteen such pairs, 32 samples but under 1% of 8 640
    pairs = np.flatnonzero(np.diff(values) != 0)[::20][:16]
    many = values.copy()
    many[pairs], many[pairs + 1] = values[pairs + 1], values[pairs]
    assert 32 <= np.count_nonzero(many != values) < 0.01 * len(values)
    assert not reordered(times, values, times, many)


@pytest.mark.parametrize("share", [0.02, 0.05, 0.2])
@pytest.mark.parametrize("seed", range(5))
def test_a_few_valued_trace_edited_with_its_counts_kept_is_not_reordered(share: float, seed: int) -> None:
    """A trace of 0s, 1s and 2s; as many 1 -> 2 as 2 -> 1 edits and as many 0 -> 1 as 1 -> 0, spread over the
    month: the base's values exactly, but paired over stretches longer than a day."""
    rng = np.random.default_rng(seed)
    times = 1_788_134_400 + STEP * np.arange(30 * DAY // int(STEP))
    values = rng.integers(0, 3, len(times)).astype(float)
    edited = values.copy()
    k = int(share * len(values) / 4)
    for a, b in ((1, 2), (0, 1)):
        up = rng.choice(np.flatnonzero((values == a) & (edited == values)), k, replace=False)
        edited[up] = b
        down = rng.choice(np.flatnonzero((values == b) & (edited == values)), k, replace=False)
        edited[down] = a
    assert np.array_equal(np.sort(edited), np.sort(values))
    assert not reordered(times, values, times, edited)


def test_a_re_export_at_another_resolution_is_not_reordered() -> None:
    times, values = _daily(30, 17)
    assert not reordered(times, values, times[::2], values[::2])  # every other sample: the kept ones unchanged
    pairs = values.reshape(-1, 2).mean(axis=1)
    assert not reordered(times, values, times[::2], pairs)  # means over 10 minutes
    fine = np.repeat(values, 5)  # one sample a minute, each 5-minute value held
    assert not reordered(times, values, times[0] + 60.0 * np.arange(len(fine)), fine)


@pytest.mark.parametrize("columns", [["running_gpu_num", "pending_gpu_num"], ["running_job_num"], ["pending_job_num"]])
def test_the_real_helios_trace_perturbed_honestly_or_rotated_within_its_nights(columns: list[str]) -> None:
    """Helios vc3sl (May 2020, a sample a minute; pending_job_num takes 3 values): measured again, refreshed,
    corrected or re-exported every 5 minutes it is new; its 21:00-05:00 nights rotated by 3 hours are not."""
    from pathlib import Path

    from policylint.traces import read_series

    helios = Path(__file__).parent / "data" / "helios_vc3sl_2020-05.csv"
    series = read_series(helios, value_columns=columns, timestamp_column="time")
    t, v = series.times, series.values
    rng = np.random.default_rng(0)
    assert not reordered(t, v, t, np.maximum(0, np.round(v + rng.normal(0, 1, v.size))))
    assert not reordered(t, v, t, np.where(rng.random(v.size) < 0.02, np.maximum(0, v + rng.choice([-1, 1], v.size)), v))
    cut = 3 * 1440
    assert not reordered(t, v, np.concatenate([t[cut:], t[-1] + 60.0 * np.arange(1, cut + 1)]),
                         np.concatenate([v[cut:], v[:cut] + 1]))
    assert not reordered(t, v, t[:-1:5], v[1::5])  # sampled a minute later, stamped as before
    assert not reordered(t, v, t[::5], v[: v.size // 5 * 5].reshape(-1, 5).mean(axis=1))
    nights = v.copy()
    for lo in np.flatnonzero(t % DAY == 21 * 3600):
        if lo + 480 <= v.size:
            nights[lo : lo + 480] = np.roll(v[lo : lo + 480], 180)
    assert reordered(t, v, t, nights)
