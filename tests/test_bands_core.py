"""``analyse`` and ``summarise`` share one core: every figure both report must agree exactly.

The figures compared are the bands, the spike and noise counts, the capacity the
queue is judged at (ceil of the baseline) and the worst wait there. They are
checked on the real Helios GPU trace (as shipped, with an exclusion that leaves
NaN in the middle) and on generated arrays, with and without NaN samples.
Also checked: the column form of the spikes gives the same objects, order and
JSON as building one object per run.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from policylint import analysis
from policylint import bands as bands_mod
from policylint.calc import rolling, select
from policylint.bands import (
    BandReport,
    BandSettings,
    Spike,
    analyse,
    find_spikes,
    percentile,
    queue_backlog,
    rolling_min,
    summarise,
)
from policylint.traces import Exclusion, Series, apply_exclusions, read_series

HELIOS = Path(__file__).parent / "data" / "helios_vc3sl_2020-05.csv"


def _series(values: np.ndarray, step: float = 60.0) -> Series:
    times = 1.6e9 + step * np.arange(values.size, dtype=np.float64)
    return Series(times=times, values=values, valid=~np.isnan(values), step_seconds=step, source="t",
                  gaps=(), first=float(times[0]), last=float(times[-1]))


def _assert_agree(report: BandReport, values: np.ndarray, step: float, cfg: BandSettings) -> None:
    """summarise on the analysed (cleaned) values gives exactly analyse's shared figures."""
    table = summarise(values.reshape(1, -1), step, cfg)
    assert table.baseline[0] == report.baseline
    assert table.daily[0] == report.daily
    assert table.peak[0] == report.peak
    assert table.spike_count[0] == len(report.spikes)
    assert table.noise_count[0] == report.noise_spike_count
    assert table.spike_count[0] - table.noise_count[0] == report.real_spike_count
    cap = math.ceil(report.baseline - 1e-9)
    assert table.capacity[0] == cap
    if report.baseline_queue is not None:
        assert report.baseline_queue.capacity == cap
        assert table.max_wait[0] == report.baseline_queue.max_wait


def test_real_trace_analyse_and_summarise_agree() -> None:
    series = read_series(HELIOS, value_columns=["running_gpu_num", "pending_gpu_num"])
    for cfg in (BandSettings(flat_days="off"), BandSettings(flat_days="off", cold_start_seconds=900.0),
                BandSettings(flat_days="off", baseline_percentile=50.0, daily_percentile=90.0)):
        report = analyse(series, cfg)
        assert len(report.spikes) > 10  # a real trace with real spikes, not a trivial case
        _assert_agree(report, series.values, series.step_seconds, cfg)


def test_real_trace_with_flat_days_and_an_exclusion_agree_on_the_cleaned_values() -> None:
    series = read_series(HELIOS, value_columns=["running_gpu_num", "pending_gpu_num"])
    middle = float(series.times[series.times.size // 2])
    cfg = BandSettings()  # flat days dropped: the cleaned series carries NaN days
    report = analyse(series, cfg, exclusions=[Exclusion(middle, middle + 7_200.0, "maintenance")])
    assert report.cleaned is not None
    assert np.isnan(report.cleaned.values).any()
    _assert_agree(report, report.cleaned.values, series.step_seconds, cfg)


@settings(max_examples=150, deadline=None)
@given(
    hnp.arrays(np.float64, st.integers(6, 400), elements=st.sampled_from([0.0, 1.0, 2.0, 3.5, 8.0, 20.0, math.nan])),
    st.sampled_from([60.0, 120.0, 300.0, 600.0]),
    st.sampled_from([(95.0, 99.0), (50.0, 50.0), (90.0, 100.0)]),
)
def test_generated_arrays_agree(values: np.ndarray, cold: float, ps: tuple[float, float]) -> None:
    cfg = BandSettings(cold_start_seconds=cold, baseline_percentile=ps[0], daily_percentile=ps[1],
                       flat_days="off")
    try:
        report = analyse(_series(values), cfg)
    except Exception:  # noqa: BLE001 - nothing measurable: summarise must say so too (NaN bands)
        if values.size >= int(cold // 60):
            table = summarise(values.reshape(1, -1), 60.0, cfg)
            assert math.isnan(table.baseline[0])
        return
    _assert_agree(report, values, 60.0, cfg)


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 200), elements=st.sampled_from([0.0, 1.0, 2.0, 5.0, math.nan])))
def test_spike_columns_equal_one_object_per_run(values: np.ndarray) -> None:
    cfg = BandSettings(cold_start_seconds=120.0, flat_days="off")
    try:
        report = analyse(_series(values), cfg)
    except Exception:  # noqa: BLE001 - no sustained series: nothing to compare
        return
    found = find_spikes(values, report.baseline, 60.0, 120.0)
    times = 1.6e9 + 60.0 * np.arange(values.size, dtype=np.float64)
    expected = [
        Spike(float(times[i]), float(n * 60.0), float(h), float(v), bool(z))
        for i, n, h, v, z in zip(found.start_index, found.length, found.height, found.volume, found.noise,
                                 strict=True)
    ]
    assert list(report.spikes) == expected
    assert [report.spikes[i] for i in range(len(expected))] == expected
    widest = sorted(expected, key=lambda s: (-s.width_seconds, -s.volume, s.start))
    assert report.spikes.widest(3) == widest[:3]
    assert report.to_dict()["spikes"] == [
        {"start": d["start"], "width_seconds": s.width_seconds, "height": s.height, "volume": s.volume,
         "noise": s.noise}
        for s, d in zip(expected, report.to_dict()["spikes"], strict=True)
    ]


# --------------------------------------------------------------------------- restated stages
# The fast forms of the flat-day test, the percentiles and the queue must give the very
# bits of the plain forms below (the definitions, written the obvious way).


def _flat_days_plain(times: np.ndarray, values: np.ndarray, zero_only: bool) -> np.ndarray:
    """A day number per sample, then max == min over the valid samples of each whole day."""
    step = float(np.min(np.diff(times))) if times.size > 1 else 86_400.0
    day = np.floor(times / 86_400.0).astype(np.int64)
    first = int(day[0])
    rows = int(day[-1]) - first + 1
    flat = np.zeros(rows, dtype=bool)
    for k in range(rows):
        x = values[(day == first + k) & ~np.isnan(values)]
        flat[k] = x.size >= 2 and bool(np.all(x == x[0])) and (not zero_only or x[0] == 0)
    flat[0] &= bool(times[0] - first * 86_400.0 < step)
    flat[-1] &= bool((first + rows) * 86_400.0 - times[-1] <= step * (1 + 1e-9))
    return (np.flatnonzero(flat) + first).astype(np.float64) * 86_400.0


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([7.0, 60.0, 300.0, 3_600.0, 21_600.0]),
    st.sampled_from([0.0, 1.0, -1e-7, -2.5e-7, 43_200.0, 86_399.0]),
    st.integers(1, 2_000),
    st.lists(st.tuples(st.integers(0, 1_999), st.integers(1, 900),
                       st.sampled_from([0.0, -0.0, 3.0, math.nan])), max_size=6),
    st.integers(0, 2**31),
    st.booleans(),
)
def test_flat_days_equal_the_plain_definition(step: float, offset: float, n: int,
                                              runs: list[tuple[int, int, float]], seed: int,
                                              zero_only: bool) -> None:
    rng = np.random.default_rng(seed)
    times = 1_767_225_600.0 + offset + step * np.arange(n, dtype=np.float64)
    values = rng.integers(0, 3, n).astype(np.float64)
    values[rng.random(n) < 0.05] = math.nan
    for start, width, level in runs:
        values[start : start + width] = level
    assert np.array_equal(bands_mod.flat_days(times, values, zero_only=zero_only),
                          _flat_days_plain(times, values, zero_only))


def _percentile_plain(x: np.ndarray, p: float) -> float:
    valid = np.sort(x[~np.isnan(x)])
    if not valid.size:
        return math.nan
    k = min(max(math.ceil(valid.size * p / 100.0 - 1e-9) - 1, 0), valid.size - 1)
    return float(valid[k])


@settings(max_examples=60, deadline=None)
@given(
    st.integers(8_192, 40_000),
    st.sampled_from(["levels", "normal", "zeros", "negative", "constant", "nan"]),
    st.sampled_from([(95.0, 99.0), (50.0, 90.0), (99.9, 100.0), (1.0, 5.0)]),
    st.integers(0, 2**31),
)
def test_long_row_percentiles_equal_a_full_sort(n: int, kind: str, ps: tuple[float, float], seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = {"levels": lambda: rng.integers(0, 40, n).astype(np.float64),
         "normal": lambda: rng.normal(100.0, 15.0, n),
         "zeros": lambda: np.where(rng.random(n) < 0.97, 0.0, rng.integers(1, 5, n).astype(np.float64)),
         "negative": lambda: rng.normal(-5.0, 3.0, n),
         "constant": lambda: np.full(n, 7.0),
         "nan": lambda: np.where(rng.random(n) < 0.3, math.nan, rng.integers(0, 9, n).astype(np.float64))}[kind]()
    rows = np.vstack([x, x[::-1], np.full(n, math.nan)])
    got = percentile(rows, list(ps))
    for i, p in enumerate(ps):
        for r in range(2):
            want = _percentile_plain(rows[r], p)
            assert got[i, r] == want and math.copysign(1, got[i, r]) == math.copysign(1, want)
        assert math.isnan(got[i, 2])


def _backlog_plain(values: np.ndarray, capacity: float, step: float) -> np.ndarray:
    x = (values - capacity)
    x[np.isnan(x)] = 0.0
    s = np.cumsum(x * step)
    return s - np.minimum(np.minimum.accumulate(s), 0.0)


@settings(max_examples=150, deadline=None)
@given(
    hnp.arrays(np.float64, st.integers(1, 300), elements=st.sampled_from([0.0, -0.0, 1.0, 2.5, 7.0, math.nan])),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 3.0, 0.5, math.nan]),
    st.sampled_from([1.0, 60.0, 0.25]),
)
def test_backlog_bits_equal_the_plain_closed_form(values: np.ndarray, capacity: float, step: float) -> None:
    got = queue_backlog(values, capacity, step)
    want = _backlog_plain(values, capacity, step)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_reports_do_not_share_work_buffers() -> None:
    """Work buffers are reused between calls: nothing a report holds may be one of them."""
    rng = np.random.default_rng(3)
    first = rng.integers(0, 30, 20_000).astype(np.float64)
    report = analyse(_series(first), BandSettings(flat_days="off"))
    kept = report.to_dict()
    columns = [np.array(getattr(report.spikes, k), copy=True) for k in ("start", "height", "volume")]
    analyse(_series(rng.integers(0, 90, 20_000).astype(np.float64)), BandSettings(flat_days="off"))
    summarise(rng.integers(0, 90, (3, 20_000)).astype(np.float64), 60.0)
    assert report.to_dict() == kept
    for k, before in zip(("start", "height", "volume"), columns, strict=True):
        assert np.array_equal(getattr(report.spikes, k), before)


def _rolling_min_blocks(x: np.ndarray, width: int) -> np.ndarray:
    """The block scheme alone (the doubling path switched off): the bits the calculator always gave."""
    saved = rolling._DOUBLING_MAX
    rolling._DOUBLING_MAX = 0
    try:
        return rolling_min(x, width)
    finally:
        rolling._DOUBLING_MAX = saved


@settings(max_examples=300, deadline=None)
@given(
    hnp.arrays(np.float64, st.integers(1, 200),
               elements=st.sampled_from([0.0, -0.0, 1.0, 2.5, 9.0, -3.0, math.inf, math.nan])),
    st.integers(1, 90),
)
def test_rolling_min_bits_equal_the_block_scheme(values: np.ndarray, width: int) -> None:
    # with a sign bit anywhere the batch keeps the block scheme; without, it is doubled
    for rows in (np.vstack([values, values[::-1]]), np.abs(values).reshape(1, -1)):
        got = rolling_min(rows, width)
        want = _rolling_min_blocks(rows, width)
        assert got.shape == want.shape
        assert np.array_equal(got.view(np.int64), want.view(np.int64))  # every bit, NaN and zeros included


@settings(max_examples=60, deadline=None)
@given(
    st.integers(8_192, 40_000),
    st.sampled_from([0.0, 0.5, 0.9, 0.995, 1.0]),  # share of zero waits (the queue is mostly empty)
    st.sampled_from([50.0, 95.0, 99.0, 99.99, 100.0]),
    st.booleans(),
    st.integers(0, 2**31),
)
def test_long_wait_percentile_equals_a_full_sort(n: int, zeros: float, p: float, infinite: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    waits = np.where(rng.random(n) < zeros, 0.0, rng.exponential(300.0, n))
    if infinite:
        waits[rng.random(n) < 0.02] = math.inf
    assert bands_mod.wait_percentile_of(waits, p) == _percentile_plain(waits, p)


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 6_000), st.sampled_from([60.0, 300.0, 3_600.0]), st.integers(0, 2**31))
def test_whole_day_exclusion_equals_apply_exclusions(n: int, step: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 5, n).astype(np.float64)
    values[rng.random(n) < 0.1] = math.nan
    times = 1_767_225_600.0 + 1_234.0 + step * np.arange(n, dtype=np.float64)
    series = Series(times=times, values=values, valid=~np.isnan(values), step_seconds=step, source="t",
                    gaps=(), first=float(times[0]), last=float(times[-1]), excluded=3,
                    exclusions=(Exclusion(0.0, 1.0, "earlier"),))
    day0 = math.floor(times[0] / 86_400.0)
    span = int(times[-1] // 86_400.0) - day0 + 2
    days = np.sort(rng.choice(np.arange(day0 - 1, day0 + span), size=min(span, 4), replace=False)) * 86_400.0
    mine = analysis._exclude_days(series, days.astype(np.float64), "flat day")
    theirs = apply_exclusions(series, [Exclusion(float(d), float(d) + 86_400.0, "flat day") for d in days])
    assert np.array_equal(mine.values.view(np.int64), theirs.values.view(np.int64))
    assert np.array_equal(mine.valid, theirs.valid)
    assert mine.times is theirs.times
    for name in ("step_seconds", "source", "gaps", "first", "last", "excluded", "exclusions"):
        assert getattr(mine, name) == getattr(theirs, name)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(8_192, 30_000),
    st.sampled_from([0.0, 0.05, 0.4]),  # share of excluded (NaN) samples
    st.sampled_from([3.0, 5.0, 8.0]),
    st.sampled_from([50.0, 99.0, 100.0]),
    st.integers(0, 2**31),
)
def test_queue_waits_equal_the_plain_definition(n: int, excluded: float, capacity: float, p: float,
                                                seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.poisson(4.0, n).astype(np.float64)
    values[rng.random(n) < excluded] = math.nan
    stats = bands_mod.queue_stats(values, capacity, 60.0, p)
    waits = _backlog_plain(values, capacity, 60.0)[~np.isnan(values)] / capacity
    assert waits.size  # a few thousand samples always leave valid ones
    assert stats.max_wait == waits.max()
    assert stats.p99_wait == _percentile_plain(waits, p)


def test_rank_of_one_count_equals_the_array_form() -> None:
    for p in (0.1, 1.0, 5.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0, 33.3, 66.7):
        for n in [*range(0, 2_000), 132_476, 123_812, 10**7 + 3]:
            assert select._rank1(p, n) == int(select._rank(p, np.int64(n)))


def _runs_plain(values: np.ndarray, threshold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Heights and volumes (step 1) by one reduceat over each row's [start, end) pairs, row by row."""
    heights, sums = [], []
    for x, th in zip(values, threshold, strict=True):
        above = np.concatenate(([False], x > th, [False]))
        edges = np.flatnonzero(above[1:] != above[:-1])
        for s, e in zip(edges[0::2], edges[1::2], strict=True):
            heights.append(np.maximum.reduceat(x, [s, e] if e < x.size else [s])[0] - th)
            sums.append(np.add.reduceat(x, [s, e] if e < x.size else [s])[0] - (e - s) * th)
    return np.array(heights), np.array(sums)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 5), st.integers(1, 400),
    st.sampled_from([0.0, 0.1, 0.5]), st.integers(0, 2**31),
)
def test_spike_sizes_equal_a_reduceat_over_each_run(rows: int, n: int, nan: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.normal(5.0, 2.0, (rows, n)) + rng.random((rows, n)) * 1e-3  # sums that round
    values[rng.random((rows, n)) < nan] = math.nan
    threshold = rng.normal(5.0, 1.0, rows)
    found = find_spikes(values, threshold, 1.0, 3.0)
    heights, sums = _runs_plain(values, threshold)
    assert np.array_equal(found.height, heights)
    assert np.array_equal(found.volume, sums)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 30_000),
    st.sampled_from(["levels", "few", "normal", "sorted", "uint"]),
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=3),
    st.integers(0, 2**31),
)
def test_partitioning_at_the_kths_puts_each_order_statistic_in_place(n: int, kind: str, shares: list[float], seed: int) -> None:
    """``kths`` (two positions for one, so numpy takes its introselect): every rank asked for holds the value a full
    sort puts there, on the equal-heavy values of sustained series, on distinct values and on hashes."""
    rng = np.random.default_rng(seed)
    a = {"levels": lambda: rng.integers(0, 300, n).astype(np.float64),
         "few": lambda: rng.integers(1, 4, n).astype(np.float64),
         "normal": lambda: rng.normal(100.0, 15.0, n),
         "sorted": lambda: np.sort(rng.integers(1, 40, n).astype(np.float64)),
         "uint": lambda: rng.integers(0, 2**53, n, dtype=np.uint64)}[kind]()
    ranks = [min(n - 1, int(s * n)) for s in shares]
    at = select.kths(ranks, n)
    assert set(ranks) <= set(at) and at == sorted(set(at)) and all(0 <= k < n for k in at)
    assert len(at) >= min(2, n)  # one position alone would take the SIMD selection
    part, ordered = np.partition(a, at), np.sort(a)
    for r in ranks:
        assert part[r] == ordered[r]
    assert select.select_at(a, ranks[0])[ranks[0]] == ordered[ranks[0]]
