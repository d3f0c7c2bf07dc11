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
    per_day = np.bincount(((times - times[0]) // DAY).astype(int), weights=turned != values)
    # at least 16 samples changed each day: fewer between untouched hours move no busy block by hours
    if np.count_nonzero(turned != values) >= max(32, 0.01 * len(values)) and per_day.min() >= 16:
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


def test_a_reordering_over_several_days_is_not_this_screen_s() -> None:
    """Values rotated by whole days over windows of three days or more, back to back: no stretch of changes
    shorter than two days holds the base's values (two-day windows, red team round 12, are caught)."""
    times, values = _daily(24, 8)
    assert reordered(times, values, times, np.roll(values.reshape(12, -1), 36 * 12, axis=1).ravel())
    for days, turn in ((3, 36), (4, 72), (4, 24), (6, 60)):
        turned = np.roll(values.reshape(24 // days, -1), turn * 12, axis=1).ravel()
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
    hour = (t % DAY) / 3600
    night = (hour >= 21) | (hour < 5)  # only the nights measured again, with fresh noise
    assert not reordered(t, v, t, np.where(night, np.maximum(0, np.round(v + rng.normal(0, 0.5, v.size))), v))
    nights = v.copy()
    for lo in np.flatnonzero(t % DAY == 21 * 3600):
        if lo + 480 <= v.size:
            nights[lo : lo + 480] = np.roll(v[lo : lo + 480], 180)
    assert reordered(t, v, t, nights)
    # round 12: with two samples a month apart swapped and one edited, or the first day dropped
    tampered = nights.copy()
    tampered[[300, v.size - 300]] = tampered[[v.size - 300, 300]]
    tampered[5000] += 1
    assert reordered(t, v, t, tampered)
    assert reordered(t, v, t[1440:], nights[1440:])
    # the whole trace a minute later, stamped as before, reads as a reordering too: the base's samples moved
    # one sample each, which backs no raise (a one-sample shift on examples/good leaves its bands 20/26, peak 42 -> 43)
    if columns != ["pending_job_num"]:
        assert reordered(t, v, t[:-1], v[1:])


# --- the round-8 game with a little more (red team, 2026-12-08, round 12) -------------------------------------


def _example() -> tuple[np.ndarray, np.ndarray]:
    from conftest import EXAMPLES

    rows = np.loadtxt(EXAMPLES / "good" / "measurements" / "traces" / "offline-scoring.csv", delimiter=",", skiprows=1)
    return rows[:, 0], rows[:, 1]


def _far_swaps(values: np.ndarray, pairs: int) -> np.ndarray:
    """``pairs`` swaps of two unequal samples about 90 days apart (rows 300 + 7k and the latest unequal one)."""
    out = values.copy()
    for k in range(pairs):
        i = 300 + 7 * k
        j = next(j for j in range(len(out) - 300 - 7 * k, 0, -1) if out[j] != out[i])
        out[i], out[j] = out[j], out[i]
    return out


def _evasion(mode: str) -> tuple[np.ndarray, np.ndarray]:
    """examples/good's offline-scoring trace as each round-12 evasion (and its neighbours) rewrote it."""
    times, values = _example()
    nights = _rotate_windows(times, values, 21, 8, 36)
    if mode == "swap":  # the rotation and one swap 90 days apart: the k-th-occurrence pairing chains
        return times, _far_swaps(nights, 1)
    if mode == "three far swaps":
        return times, _far_swaps(nights, 3)
    if mode == "rot2":  # 21:00 day k to 05:00 day k + 2, every other day: 32-hour windows
        out = values.copy()
        for lo in np.flatnonzero(times % DAY == 21 * 3600)[::2]:
            if lo + 384 <= len(out):
                out[lo : lo + 384] = np.roll(values[lo : lo + 384], 36)
        return times, out
    if mode == "two-day windows":  # 21:00 day k to 21:00 day k + 2, every third day
        out = values.copy()
        for lo in np.flatnonzero(times % DAY == 21 * 3600)[::3]:
            if lo + 576 <= len(out):
                out[lo : lo + 576] = np.roll(values[lo : lo + 576], 36)
        return times, out
    if mode == "rottrim":  # the rotation and the oldest day dropped, mid-night
        return times[288:], nights[288:]
    if mode == "trimmed both ends":
        return times[288 + 100 : -200], nights[288 + 100 : -200]
    if mode == "edit":
        nights[5000] += 1
        return times, nights
    if mode == "five edits":
        nights[[900, 5000, 12_000, 19_000, 25_000]] += np.array([1, -1, 1, 2, -1])
        return times, np.maximum(nights, 0)
    raise AssertionError(mode)


@pytest.mark.parametrize("mode", ["swap", "rot2", "rottrim", "edit",
                                  "three far swaps", "two-day windows", "trimmed both ends", "five edits"])
def test_nights_rotated_with_a_swap_an_edit_a_trim_or_longer_windows_are_reordered(mode: str) -> None:
    """Round 12: each raised batch 20 + 6 -> 27 + 7 past the exact screen (a multiset not quite the base's,
    or stretches of 32 hours); at least 99% of the changed samples find their value again within a night."""
    from policylint.measure.integrity.retiming import reordered_share

    times, values = _example()
    new_times, new_values = _evasion(mode)
    assert np.count_nonzero(np.isin(new_times, times)) == len(new_times)
    assert reordered_share(times, values, new_times, new_values) >= 0.99
    assert reordered(times, values, new_times, new_values)


def test_nights_rotated_under_enough_noise_pass_the_multiset_screen_alone() -> None:
    """The rotation with +-1 on 3 000 of the 26 496 samples (bands 27/34/47, the rotation's 27/34/46 but for the
    peak) matches 85.4% as multisets; 4 000 (82.8%, bands 27/34/45) did not, read as new evidence and backed the
    raise the rotation gains (red team item 7). The shift screen below finds both."""
    from policylint.measure.integrity.retiming import reordered_share

    times, values = _example()
    nights = _rotate_windows(times, values, 21, 8, 36)
    shares = []
    for edits in (3000, 4000):
        noisy = _noised(nights, edits, 1)
        shares.append(reordered_share(times, values, times, noisy))
        assert reordered(times, values, times, noisy)
    assert shares[0] >= 0.85 > shares[1]


# --- the round-8 game with noise on top (red team item 7) ----------------------------------------------------


def _noised(values: np.ndarray, edits: int, amplitude: int, seed: int = 3) -> np.ndarray:
    """``values`` with ``edits`` samples, drawn at random, moved up or down by 1 to ``amplitude`` (not below 0)."""
    rng = np.random.default_rng(seed)
    out = values.copy()
    at = rng.choice(len(out), edits, replace=False)
    out[at] = np.maximum(0, out[at] + rng.choice([-1, 1], edits) * rng.integers(1, amplitude + 1, edits))
    return out


@pytest.mark.parametrize(("hours", "share", "amplitude"), [(3, 0.151, 1), (3, 0.25, 1), (3, 0.151, 2), (3, 0.25, 2),
                                                           (1, 0.151, 1), (1, 0.25, 2)])
def test_nights_rotated_then_noised_hold_the_base_s_values_at_a_shift(hours: int, share: float, amplitude: int) -> None:
    """Red team item 7: offline-scoring's nights rotated by ``hours`` within 21:00-05:00, then +-``amplitude`` on
    ``share`` of all samples (0.151: the 4 000 of 26 496 that backed batch 20 + 6 -> 27 + 7). Of the samples that
    changed by more than the noise, 0.80 or more hold the base's value exactly at the night's shift (the noise
    hides the rest), where honest changes reach 0.30 at most."""
    from policylint.measure.integrity.retiming import realigned_share

    times, values = _example()
    noisy = _noised(_rotate_windows(times, values, 21, 8, hours * 12), int(share * len(values)), amplitude)
    found = realigned_share(times, values, times, noisy)
    assert found is not None and found >= 0.8
    assert reordered(times, values, times, noisy)


def test_nights_rotated_by_shifts_that_differ_each_night_then_noised_are_reordered() -> None:
    """Each night its own shift (1 to 7.5 hours), then the noise: the shift is chosen stretch by stretch."""
    times, values = _example()
    rng = np.random.default_rng(9)
    turned = values.copy()
    for lo in np.flatnonzero(times % DAY == 21 * 3600):
        if lo + 96 <= len(values):
            turned[lo : lo + 96] = np.roll(values[lo : lo + 96], rng.integers(12, 90))
    assert reordered(times, values, times, _noised(turned, 4000, 1))


def test_real_helios_nights_rotated_then_noised_are_reordered() -> None:
    """On a month of real minute samples (Helios vc3sl), the multiset screen finds none of it (0%)."""
    from pathlib import Path

    from policylint.measure.integrity.retiming import realigned_share, reordered_share
    from policylint.traces import read_series

    helios = Path(__file__).parent / "data" / "helios_vc3sl_2020-05.csv"
    series = read_series(helios, value_columns=["running_gpu_num", "pending_gpu_num"], timestamp_column="time")
    t, v = series.times, series.values
    nights = v.copy()
    for lo in np.flatnonzero(t % DAY == 21 * 3600):
        if lo + 480 <= v.size:
            nights[lo : lo + 480] = np.roll(v[lo : lo + 480], 180)
    for share, amplitude in ((0.151, 1), (0.25, 2)):
        noisy = _noised(nights, int(share * v.size), amplitude)
        assert reordered_share(t, v, t, noisy) == 0.0
        found = realigned_share(t, v, t, noisy)
        assert found is not None and found >= 0.7
        assert reordered(t, v, t, noisy)


def _honest(change: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """examples/good's offline-scoring trace and an honest change of it: (base times, base, new times, new)."""
    times, values = _example()
    rng = np.random.default_rng(21)
    night = ((times % DAY) / 3600 >= 21) | ((times % DAY) / 3600 < 5)
    counts = rng.poisson(np.maximum(values, 0.3)).astype(float)  # each sample measured again as a count
    new = {"nights measured again": np.where(night, counts, values),
           "all measured again": counts,
           "nights measured again, noise of 2": np.where(night, np.maximum(0, np.round(values + rng.normal(0, 2, len(values)))), values),
           "growth by 20%": np.round(values * 1.2),
           "nights grown by 30%": np.where(night, np.round(values * 1.3), values),
           "shrunk by 20%, measured again": np.maximum(0, np.round(values * 0.8 + rng.normal(0, 1, len(values)))),
           "+-2 on a quarter of the samples": _noised(values, len(values) // 4, 2)}.get(change)
    if new is not None:
        return times, values, times, new
    assert change == "rolling refresh, nights measured again"
    cut = 3 * DAY // int(STEP)  # three days dropped, three measured, the nights before measured again
    kept = np.where(night, counts, values)[cut:]
    return times, values, times + cut * STEP, np.concatenate([kept, counts[:cut]])


@pytest.mark.parametrize("change", ["nights measured again", "all measured again", "nights measured again, noise of 2",
                                    "growth by 20%", "nights grown by 30%", "shrunk by 20%, measured again",
                                    "+-2 on a quarter of the samples", "rolling refresh, nights measured again"])
def test_honest_changes_hold_the_base_s_values_at_no_shift(change: str) -> None:
    """A measurement taken again (fresh counts), growth and a rolling refresh: the samples that changed by more
    than the noise find the base's value at one shift per stretch for 0.30 of them at most (None: too few)."""
    from policylint.measure.integrity.retiming import realigned_share

    then_times, then, now_times, now = _honest(change)
    found = realigned_share(then_times, then, now_times, now)
    assert found is None or found < 0.35
    assert not reordered(then_times, then, now_times, now)


@pytest.mark.parametrize("columns", [["running_gpu_num", "pending_gpu_num"], ["running_job_num"]])
def test_the_real_helios_trace_measured_again_or_grown_holds_its_values_at_no_shift(columns: list[str]) -> None:
    """A month of real minute samples measured again (noise of 1, or of 2 in the nights only), or grown by 20%
    (all of it, or the nights): 0.17 at most."""
    from pathlib import Path

    from policylint.measure.integrity.retiming import realigned_share, reordered_share
    from policylint.traces import read_series

    helios = Path(__file__).parent / "data" / "helios_vc3sl_2020-05.csv"
    series = read_series(helios, value_columns=columns, timestamp_column="time")
    t, v = series.times, series.values
    rng = np.random.default_rng(0)
    night = ((t % DAY) / 3600 >= 21) | ((t % DAY) / 3600 < 5)
    for again in (np.maximum(0, np.round(v + rng.normal(0, 1, v.size))),
                  np.where(night, np.maximum(0, np.round(v + rng.normal(0, 2, v.size))), v),
                  np.round(v * 1.2), np.where(night, np.round(v * 1.2), v)):
        found = realigned_share(t, v, t, again)
        assert found is None or found < 0.35
        assert (reordered_share(t, v, t, again) or 0) < 0.85  # so not reordered, without both screens run twice


# honest changes the tolerance could newly take for a reordering: still new evidence


@pytest.mark.parametrize("seed", range(5))
def test_random_edits_by_one_on_5_percent_of_a_few_valued_trace_are_new(seed: int) -> None:
    from policylint.measure.integrity.retiming import reordered_share

    rng = np.random.default_rng(seed)
    times = 1_788_134_400 + STEP * np.arange(30 * DAY // int(STEP))
    values = rng.integers(0, 3, len(times)).astype(float)
    at = rng.random(len(values)) < 0.05
    edited = np.where(at, np.clip(values + rng.choice([-1, 1], len(values)), 0, 2), values)
    assert reordered_share(times, values, times, edited) < 0.4
    assert not reordered(times, values, times, edited)


@pytest.mark.parametrize("remeasure", ["noise", "poisson"])
def test_nights_measured_again_with_fresh_noise_are_new(remeasure: str) -> None:
    """Only 21:00-05:00 changed, each sample measured again: 62% of the changes match within their night
    (a night's values are alike), far from the 85% a reordering needs."""
    from policylint.measure.integrity.retiming import reordered_share

    times, values = _example()
    rng = np.random.default_rng(21)
    hour = (times % DAY) / 3600
    night = (hour >= 21) | (hour < 5)
    again = (np.maximum(0, np.round(values + rng.normal(0, 1, len(values)))) if remeasure == "noise"
             else rng.poisson(np.maximum(values, 0.3)).astype(float))
    share = reordered_share(times, values, times, np.where(night, again, values))
    assert share is not None and share < 0.65
    assert not reordered(times, values, times, np.where(night, again, values))


def test_one_night_s_job_really_moved() -> None:
    """One night's job started 3 hours later, 3 samples changed besides: on the example's 92 days that is
    under 1% of the samples, too few to tell (new evidence, and it moves no band: 20/26/42 as before); on
    30 days it is over 1% and reads as a reordering - no new evidence, which is what it is for pooling: one
    night of thirty moves no percentile band."""
    times, values = _example()
    moved = values.copy()
    lo = np.flatnonzero(times % DAY == 21 * 3600)[40]
    moved[lo : lo + 96] = np.roll(values[lo : lo + 96], 36)
    moved[lo + 10 : lo + 13] += 1
    assert not reordered(times, values, times, moved)
    times, values = _daily(30, 23)
    moved = values.copy()
    lo = int(np.flatnonzero(times % DAY == 21 * 3600)[10])
    moved[lo : lo + 96] = np.roll(values[lo : lo + 96], 36)
    moved[lo + 10 : lo + 13] += 1
    assert reordered(times, values, times, moved)


def test_an_hour_of_real_llm_arrivals_measured_again_is_new() -> None:
    """Azure's LLM code trace (an hour of arrivals) as concurrency a second: re-measured with durations 10%
    off or arrivals jittered by 0.5 s, 77-86% of the changes match over the whole hour - which is one
    stretch, not a reordering within it: stretches must be shorter than an eighth of the trace."""
    from pathlib import Path

    from policylint.measure.integrity.retiming import reordered_share

    azure = Path(__file__).parents[2] / "shared" / "data" / "traces" / "azure_llm_code_2023.csv"
    if not azure.is_file():
        pytest.skip("the shared Azure trace is not here")
    import csv
    import datetime as dt

    with azure.open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))  # read without pandas, which is no dependency of the project

    def seconds(stamp: str) -> float:
        whole, _, fraction = stamp.partition(".")
        moment = dt.datetime.fromisoformat(whole).replace(tzinfo=dt.timezone.utc)
        return moment.timestamp() + (float(f"0.{fraction}") if fraction else 0.0)

    arrivals = np.array([seconds(row["TIMESTAMP"]) for row in rows])
    tokens = np.array([float(row["GeneratedTokens"]) for row in rows])

    def concurrency(start: np.ndarray, seconds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        grid = np.floor(arrivals.min()) + np.arange(3600.0)
        running = np.searchsorted(np.sort(start), grid, side="right") - np.searchsorted(
            np.sort(start + seconds), grid, side="right")
        return grid, running.astype(float)

    rng = np.random.default_rng(0)
    times, values = concurrency(arrivals, 0.2 + 0.03 * tokens)
    for again in (concurrency(arrivals, (0.2 + 0.03 * tokens) * rng.uniform(0.9, 1.1, len(tokens))),
                  concurrency(arrivals + rng.normal(0, 0.5, len(arrivals)), 0.2 + 0.03 * tokens),
                  concurrency(arrivals + rng.normal(0, 0.05, len(arrivals)), 0.2 + 0.03 * tokens)):
        assert reordered_share(times, values, *again) == 0.0
        assert not reordered(times, values, *again)
