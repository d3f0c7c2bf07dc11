"""The band calculator against naive, obviously-correct reference code.

The references here loop over samples on purpose: they are written to be read,
not to be fast, and the calculator must agree with them exactly.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from policylint.bands import (
    BandSettings,
    analyse,
    capacity_for_tolerance,
    duration_stats,
    erlang_b,
    erlang_c,
    erlang_c_wait,
    find_spikes,
    gpus_for,
    gpus_one,
    outlier_days,
    percentile,
    queue_backlog,
    queue_stats,
    residency_ratio,
    rolling_min,
    window_samples,
)
from policylint.errors import MeasurementError, PolicylintError
from policylint.traces import Exclusion, Series, read_series

HELIOS = Path(__file__).parent / "data" / "helios_vc3sl_2020-05.csv"

small_values = st.integers(0, 30).map(float)


def make_series(values: list[float] | np.ndarray, step: float = 60.0, t0: float = 0.0) -> Series:
    v = np.asarray(values, dtype=np.float64)
    times = t0 + step * np.arange(v.size, dtype=np.float64)
    return Series(times=times, values=v, valid=~np.isnan(v), step_seconds=step, source="test",
                  gaps=(), first=float(times[0]), last=float(times[-1]))


# --------------------------------------------------------------------------- naive references


def naive_rolling_min(values: list[float], width: int) -> list[float]:
    out = []
    for end in range(width - 1, len(values)):
        window = values[end - width + 1 : end + 1]
        out.append(math.nan if any(math.isnan(x) for x in window) else min(window))
    return out


def naive_inverted_cdf(values: list[float], p: float) -> float:
    ordered = sorted(values)
    # smallest value whose share of samples at or below it reaches p percent
    for i, v in enumerate(ordered):
        if (i + 1) * 100 >= p * len(ordered):
            return v
    return ordered[-1]


def naive_backlog(values: list[float], capacity: float, dt: float) -> list[float]:
    q = 0.0
    out = []
    for c in values:
        if not math.isnan(c):
            q = max(0.0, q + (c - capacity) * dt)
        out.append(q)
    return out


def naive_max_wait(values: list[float], capacity: int, dt: float) -> float:
    waits = [
        (q / capacity if capacity else (math.inf if q > 0 else 0.0))
        for q, c in zip(naive_backlog(values, capacity, dt), values)
        if not math.isnan(c)
    ]
    return max(waits)


def naive_spikes(values: list[float], threshold: float) -> list[tuple[int, int, float, float]]:
    runs = []
    i = 0
    while i < len(values):
        if values[i] > threshold:
            j = i
            while j < len(values) and values[j] > threshold:
                j += 1
            seg = values[i:j]
            runs.append((i, j - i, max(seg) - threshold, sum(x - threshold for x in seg)))
            i = j
        else:
            i += 1
    return runs


# --------------------------------------------------------------------------- rolling minimum


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.one_of(small_values, small_values, small_values, st.just(math.nan)), min_size=1, max_size=60),
    st.integers(1, 12),
)
def test_rolling_min_equals_naive_loop(values: list[float], width: int) -> None:
    got = rolling_min(np.array(values), width)
    expected = naive_rolling_min(values, width)
    np.testing.assert_array_equal(got, np.array(expected, dtype=np.float64))


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.float64, (3, 25), elements=st.floats(0, 100)), st.integers(1, 9))
def test_rolling_min_2d_matches_rows(values: np.ndarray, width: int) -> None:
    got = rolling_min(values, width)
    for row in range(values.shape[0]):
        np.testing.assert_array_equal(got[row], naive_rolling_min(values[row].tolist(), width))


def test_rolling_min_edges() -> None:
    assert rolling_min(np.arange(3.0), 5).size == 0
    np.testing.assert_array_equal(rolling_min(np.arange(3.0), 1), [0, 1, 2])
    with pytest.raises(ValueError):
        rolling_min(np.arange(3.0), 0)
    assert window_samples(300, 60) == 5
    assert window_samples(301, 60) == 6
    assert window_samples(30, 60) == 1


# --------------------------------------------------------------------------- percentiles


@settings(max_examples=100, deadline=None)
@given(st.lists(small_values, min_size=1, max_size=80), st.sampled_from([1, 50, 90, 95, 99, 100]))
def test_percentile_is_inverted_cdf(values: list[float], p: float) -> None:
    got = float(percentile(np.array(values), [p])[0])
    assert got == naive_inverted_cdf(values, p)
    assert got == float(np.percentile(values, p, method="inverted_cdf"))


def test_percentile_rows_with_different_nan_counts() -> None:
    data = np.array([[1, 2, 3, 4, np.nan], [5, 1, np.nan, np.nan, np.nan], [np.nan] * 5])
    got = percentile(data, [50, 100])
    np.testing.assert_array_equal(got[:, :2], [[2, 1], [4, 5]])
    assert np.isnan(got[:, 2]).all()


# --------------------------------------------------------------------------- bands


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.one_of(small_values, small_values, small_values, st.just(math.nan)), min_size=12, max_size=120),
    st.sampled_from([60.0, 120.0, 300.0, 600.0]),
)
def test_baseline_daily_peak_are_ordered(values: list[float], cold_start: float) -> None:
    series = make_series(values)
    try:
        report = analyse(series, BandSettings(cold_start_seconds=cold_start, flat_days="off"))
    except MeasurementError:
        # Legitimate only when no full cold-start window of valid samples exists.
        w = window_samples(cold_start, 60.0)
        assert all(math.isnan(x) for x in naive_rolling_min(values, w))
        return
    assert report.baseline <= report.daily <= report.peak
    assert report.peak == max(v for v in values if not math.isnan(v))
    sustained = [x for x in naive_rolling_min(values, report.window_samples) if not math.isnan(x)]
    assert report.baseline == naive_inverted_cdf(sustained, 95)
    assert report.daily == naive_inverted_cdf(sustained, 99)


def test_sustained_ignores_short_bursts() -> None:
    values = [10.0] * 30
    values[10:13] = [50.0, 50.0, 50.0]  # three minutes: shorter than the 5-minute window
    report = analyse(make_series(values), BandSettings(cold_start_seconds=300))
    assert report.baseline == report.daily == 10
    assert report.peak == 50
    assert len(report.spikes) == 1
    spike = report.spikes[0]
    assert (spike.start, spike.width_seconds, spike.height, spike.volume, spike.noise) == (
        600.0, 180.0, 40.0, 3 * 40 * 60.0, True
    )
    assert report.noise_spike_count == 1 and report.real_spike_count == 0
    assert report.widest_noise_width == 180


def test_window_and_exclusions_in_report() -> None:
    values = [5.0] * (2 * 1440)
    series = make_series(values)
    report = analyse(series, BandSettings(min_window_days=1.5, flat_days="off"), exclusions=[Exclusion(0, 720 * 60.0)])
    assert report.excluded_samples == 720
    assert report.valid_samples == 2 * 1440 - 720
    assert report.window_days == pytest.approx(1.5)
    assert report.meets_window
    assert not analyse(series, BandSettings(min_window_days=2.5, flat_days="off")).meets_window


def test_nothing_valid_is_a_measurement_error() -> None:
    values = [1.0, math.nan] * 20
    with pytest.raises(MeasurementError, match="consecutive valid samples"):
        analyse(make_series(values), BandSettings(cold_start_seconds=120, flat_days="off"))
    with pytest.raises(MeasurementError, match="no valid sample left"):
        analyse(make_series([1.0, 2.0]), exclusions=[Exclusion(-1, 1e9)])


def test_settings_are_validated() -> None:
    with pytest.raises(PolicylintError, match="cold start"):
        BandSettings(cold_start_seconds=0)
    with pytest.raises(PolicylintError, match="must not exceed"):
        BandSettings(baseline_percentile=99, daily_percentile=95)
    with pytest.raises(PolicylintError, match="queue statistic"):
        BandSettings(queue_statistic="mean")


# --------------------------------------------------------------------------- spikes


@settings(max_examples=100, deadline=None)
@given(st.lists(small_values, min_size=1, max_size=60), st.integers(0, 30), st.sampled_from([60.0, 180.0, 300.0]))
def test_spikes_equal_naive_runs(values: list[float], threshold: int, cold: float) -> None:
    found = find_spikes(np.array(values), float(threshold), 60.0, cold)
    expected = naive_spikes(values, float(threshold))
    got = list(zip(found.start_index.tolist(), found.length.tolist(), found.height.tolist(),
                   (found.volume / 60.0).tolist(), strict=True))
    assert got == expected
    assert found.noise.tolist() == [n * 60.0 < cold for _, n, _, _ in expected]


def test_spikes_do_not_cross_rows() -> None:
    data = np.array([[0.0, 5.0, 5.0], [5.0, 0.0, 0.0]])
    found = find_spikes(data, np.array([1.0, 1.0]), 1.0, 10.0)
    assert found.row.tolist() == [0, 1]
    assert found.start_index.tolist() == [1, 0]
    assert found.length.tolist() == [2, 1]


# --------------------------------------------------------------------------- queue


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.one_of(small_values, small_values, st.just(math.nan)), min_size=1, max_size=80),
    st.integers(0, 30),
    st.sampled_from([1.0, 15.0, 60.0]),
)
def test_lindley_closed_form_equals_recursion(values: list[float], capacity: int, dt: float) -> None:
    got = queue_backlog(np.array(values), float(capacity), dt)
    np.testing.assert_allclose(got, naive_backlog(values, float(capacity), dt), rtol=1e-12, atol=1e-9)


def test_queue_2d_with_capacity_per_row() -> None:
    data = np.array([[3.0, 3.0, 0.0], [1.0, 4.0, 4.0]])
    got = queue_backlog(data, np.array([2.0, 3.0]), 1.0)
    np.testing.assert_array_equal(got, [[1, 2, 0], [0, 1, 2]])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(small_values, min_size=1, max_size=60),
    st.sampled_from([0.0, 30.0, 60.0, 600.0]),
)
def test_capacity_for_tolerance_is_least(values: list[float], tolerance: float) -> None:
    cap = capacity_for_tolerance(np.array(values), tolerance, 60.0)
    assert naive_max_wait(values, cap, 60.0) <= tolerance
    if cap > 0:
        assert naive_max_wait(values, cap - 1, 60.0) > tolerance


def test_capacity_for_tolerance_p99_statistic() -> None:
    values = np.array([1.0] * 200 + [30.0] + [1.0] * 99)
    by_max = capacity_for_tolerance(values, 0.0, 60.0)
    by_p99 = capacity_for_tolerance(values, 0.0, 60.0, statistic="percentile", wait_percentile=99)
    assert by_max == 30

    def naive_p99_wait(capacity: int) -> float:
        waits = [q / capacity for q in naive_backlog(values.tolist(), capacity, 60.0)]
        return naive_inverted_cdf(waits, 99)

    # The burst drains within three samples at 9 (1% of 300 may wait), four at 8.
    assert by_p99 == 9
    assert naive_p99_wait(9) == 0.0 < naive_p99_wait(8)


def test_queue_stats() -> None:
    stats = queue_stats(np.array([2.0, 2.0, 0.0, 0.0]), 1.0, 10.0)
    assert stats.max_wait == 20.0  # backlog 20 concurrency-seconds over capacity 1
    assert stats.capacity == 1.0


# --------------------------------------------------------------------------- GPUs, durations, residency


def test_gpus_ignore_float_noise() -> None:
    assert 2.1 / 0.3 > 7  # the noise we guard against
    assert gpus_for(2.1, 0.3).tolist() == 7
    assert gpus_for(np.array([0.0, 1.0, 1.5, 8.0]), 4.0, 2).tolist() == [0, 2, 2, 4]
    with pytest.raises(PolicylintError):
        gpus_for(1.0, 0.0)


def _array_path(c: float, per: float, replicas: int) -> int | str:
    """``int(gpus_for(...))``, or the error's text."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NaN or a count past 64 bits cast to int64
            return int(gpus_for(c, per, replicas))
    except PolicylintError as exc:
        return str(exc)


def _scalar_path(c: float, per: float, replicas: int) -> int | str:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return gpus_one(c, per, replicas)
    except PolicylintError as exc:
        return str(exc)


@given(
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(-5, 5000), st.integers(-10, 10**6)),
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(1e-6, 64), st.sampled_from([0.3, 0.5, 1.0, 4.0, 0.0, -1.0])),
    st.integers(0, 64),
)
@settings(max_examples=400, deadline=None)
def test_gpus_one_is_the_array_conversion(c: float, per: float, replicas: int) -> None:
    """The scalar path gives the array path's figure (or its error) for every input, odd ones included."""
    assert _scalar_path(c, per, replicas) == _array_path(c, per, replicas)


def test_gpus_one_at_the_edges() -> None:
    # exact multiples, values just past them, the float noise the epsilon absorbs, zero and below
    for c, per, replicas in [(2.1, 0.3, 1), (8.0, 4.0, 2), (8.000001, 4.0, 2), (0.0, 1.0, 1), (-3.0, 1.0, 4),
                             (1e300, 1e-300, 1), (2.0**62, 1.0, 2), (float("nan"), 1.0, 1), (1.0, 0.0, 1), (1.0, 1.0, 0)]:
        assert _scalar_path(c, per, replicas) == _array_path(c, per, replicas), (c, per, replicas)
    assert gpus_one(2.1, 0.3) == 7 and type(gpus_one(2.1, 0.3)) is int
    assert gpus_one(np.float64(9.0), 4.0, 2) == 6


def test_duration_stats() -> None:
    stats = duration_stats(np.arange(1.0, 101.0))
    assert (stats.p50, stats.p90, stats.p99) == (50.0, 90.0, 99.0)
    assert stats.tail_ratio == pytest.approx(99 / 50)
    assert duration_stats(np.array([0.0, 0.0, 5.0])).tail_ratio == math.inf


def test_residency_ratio() -> None:
    assert float(residency_ratio(3600.0, 900.0)) == 4.0
    with pytest.raises(PolicylintError, match="active compute seconds must be positive"):
        residency_ratio(10.0, 0.0)


# --------------------------------------------------------------------------- Erlang


def test_erlang_c_textbook_values() -> None:
    assert float(erlang_c(3, 2.0)) == pytest.approx(4 / 9, abs=1e-12)
    assert round(float(erlang_c(5, 2.5)), 4) == 0.1304
    assert float(erlang_b(0, 3.0)) == 1.0
    assert float(erlang_c(2, 2.0)) == 1.0


def test_erlang_c_wait() -> None:
    # 2 arrivals/s, 1 s service, 3 servers: W = C / (c mu - lambda) = (4/9) / 1
    result = erlang_c_wait(3, 2.0, 1.0)
    assert result.probability_wait == pytest.approx(4 / 9)
    assert result.mean_wait == pytest.approx(4 / 9)
    unstable = erlang_c_wait(2, 3.0, 1.0)
    assert unstable.probability_wait == 1.0 and unstable.mean_wait == math.inf


def test_erlang_b_is_stable_for_many_servers() -> None:
    value = float(erlang_b(2000, 1900.0))
    assert 0 < value < 1 and math.isfinite(value)


# --------------------------------------------------------------------------- cleaning


def test_outlier_days() -> None:
    days = np.repeat([10.0, 11.0, 9.0, 10.0, 80.0, 10.0, 11.0], 24)
    times = np.arange(days.size) * 3600.0
    flagged = outlier_days(times, days, 3.0)
    assert flagged.tolist() == [4 * 86_400.0]
    report = analyse(
        make_series(days, step=3600.0), BandSettings(cold_start_seconds=3600, outlier_mad_k=3, flat_days="off")
    )
    assert report.outlier_days == (4 * 86_400.0,)
    assert report.peak == 11


# --------------------------------------------------------------------------- the real trace


def test_helios_bands_match_straightforward_computation() -> None:
    series = read_series(HELIOS, value_columns=["running_gpu_num", "pending_gpu_num"])
    # Flat days off: this test checks the calculator against plain Python on every sample.
    report = analyse(series, BandSettings(flat_days="off"), tolerance_seconds=900.0, per_gpu=1.0)

    # Independent reading with the csv module and plain Python.
    import csv

    with HELIOS.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    demand = [float(r["running_gpu_num"]) + float(r["pending_gpu_num"]) for r in rows]
    assert series.values.tolist() == demand

    width = 5  # 300 s cold start at one-minute steps
    sustained = []
    for end in range(width - 1, len(demand)):
        sustained.append(min(demand[end - width + 1 : end + 1]))
    ordered = sorted(sustained)
    n = len(ordered)
    baseline = ordered[(95 * n + 99) // 100 - 1]  # ceil(0.95 n) - 1 in integers
    daily = ordered[(99 * n + 99) // 100 - 1]
    assert (report.baseline, report.daily, report.peak) == (baseline, daily, max(demand))
    assert report.baseline <= report.daily <= report.peak

    assert report.step_seconds == 60.0
    assert report.samples == len(demand) == 31 * 1440
    assert report.window_days == pytest.approx(31.0)
    assert report.meets_window is False  # May alone is shorter than 90 days
    assert report.gaps == () and report.excluded_samples == 0

    runs = naive_spikes(demand, baseline)
    assert len(report.spikes) == len(runs)
    assert [(s.width_seconds, s.height, s.volume) for s in report.spikes] == [
        (n_ * 60.0, h, v * 60.0) for _, n_, h, v in runs
    ]
    assert report.noise_spike_count == sum(1 for _, n_, _, _ in runs if n_ * 60 < 300)

    cap = report.capacity_for_tolerance
    assert cap is not None
    assert naive_max_wait(demand, cap, 60.0) <= 900.0 < naive_max_wait(demand, cap - 1, 60.0)
    assert report.bands_gpus == {"baseline": int(baseline), "daily": int(daily), "peak": int(max(demand))}


def test_report_to_dict_is_json_ready() -> None:
    import json

    report = analyse(make_series([1.0, 5.0, 5.0, 1.0] * 10), BandSettings(cold_start_seconds=60),
                     tolerance_seconds=60.0, capacity=0.0, per_gpu=2.0, gpus_per_replica=2)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["bands"] == {"baseline": 5.0, "daily": 5.0, "peak": 5.0}
    assert data["queue"]["max_wait_seconds"] is None  # infinite wait at capacity 0
    assert data["bands_gpus"] == {"baseline": 6, "daily": 6, "peak": 6}
    assert data["capacity_for_tolerance"] == 4


def test_rolling_min_wide_windows_use_the_accumulate_path() -> None:
    rng = np.random.default_rng(3)
    values = rng.integers(0, 1000, size=(2, 700)).astype(np.float64)
    values[1, 350] = np.nan
    for width in (65, 200, 699, 700):
        got = rolling_min(values, width)
        for row in range(2):
            np.testing.assert_array_equal(got[row], naive_rolling_min(values[row].tolist(), width))


def test_summarise_matches_analyse_per_row() -> None:
    from policylint.bands import summarise

    rng = np.random.default_rng(5)
    data = rng.integers(0, 40, size=(4, 500)).astype(np.float64)
    table = summarise(data, 60.0, BandSettings(cold_start_seconds=180))
    for row in range(4):
        report = analyse(make_series(data[row]), BandSettings(cold_start_seconds=180))
        assert (table.baseline[row], table.daily[row], table.peak[row]) == (
            report.baseline, report.daily, report.peak)
        assert table.spike_count[row] == len(report.spikes)
        assert table.noise_count[row] == report.noise_spike_count
        assert report.baseline_queue is not None
        assert table.max_wait[row] == pytest.approx(report.baseline_queue.max_wait)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.0, 0.0, 0.5, 1.0, 2.5, 7.0, math.inf]), min_size=1, max_size=300),
    st.sampled_from([50.0, 90.0, 95.0, 99.0, 99.9, 100.0]),
)
def test_wait_percentile_equals_the_general_percentile(waits: list[float], p: float) -> None:
    """The zero-skipping wait percentile is the inverted-CDF percentile, exactly."""
    from policylint.bands import percentile, wait_percentile_of

    a = np.array(waits)
    assert wait_percentile_of(a, p) == float(percentile(a, [p])[0])
