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

from policylint.bands import BandReport, BandSettings, Spike, analyse, find_spikes, summarise
from policylint.traces import Exclusion, Series, read_series

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
