"""Pooled demand against an independent, deliberately plain computation.

The reference below uses only Python lists and loops - no numpy, no shared code with
``policylint.measure.pooled`` - and follows the definitions in docs/pooled.md word by word: the
grid is the finest step laid on the finest series, a coarser sample holds for its own
step, an instant counts only when every workload has a sample, GPUs are rounded per
workload before the sum, the sustained series is the minimum over the cold-start
window, bands are inverted-CDF percentiles of it, and the queue is the Lindley
recursion one step at a time.
"""

from __future__ import annotations

import csv
import functools
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policylint.bands import BandSettings, analyse, gpus_for
from policylint.errors import PolicylintError
from policylint.measure.pooled import PoolMember, align, analyse_pool, pool_bands, pool_series
from policylint.traces import Series

HELIOS = Path(__file__).parent / "data" / "helios_vc3sl_2020-05.csv"


# --------------------------------------------------------------------------- the plain reference


def plain_pool(
    members: list[tuple[list[float], list[float | None], float, float, int]],
    cold_start: float,
    capacity: float,
) -> dict[str, float | int | None]:
    """members: (times, values with None = missing, step, per_gpu, gpus_per_replica)."""
    finest = min(range(len(members)), key=lambda i: members[i][2])
    step = members[finest][2]
    origin = members[finest][0][0]
    start = max(m[0][0] for m in members)
    end = min(m[0][-1] + m[2] for m in members)
    grid = []
    k = 0
    while origin + k * step < end:
        t = origin + k * step
        if t >= start:
            grid.append(t)
        k += 1
    pooled: list[float | None] = []
    cursor = [0] * len(members)  # per member: index of the last sample at or before t
    for t in grid:
        total: float | None = 0.0
        for i, (times, values, own_step, per_gpu, replicas) in enumerate(members):
            while cursor[i] + 1 < len(times) and times[cursor[i] + 1] <= t:
                cursor[i] += 1
            j = cursor[i]
            held = values[j] if times[j] <= t < times[j] + own_step else None
            if held is None or total is None:
                total = None
            else:
                total += math.ceil(held / per_gpu) * replicas
        pooled.append(total)
    w = max(1, math.ceil(cold_start / step))
    sustained = []
    for i in range(len(pooled) - w + 1):
        window = pooled[i : i + w]
        if all(x is not None for x in window):
            sustained.append(min(x for x in window if x is not None))
    sustained.sort()

    def pct(p: float) -> float:
        return sustained[max(0, math.ceil(p / 100 * len(sustained)) - 1)]

    valid = [x for x in pooled if x is not None]
    baseline, daily, peak = pct(95), pct(99), max(valid)
    runs, noise, run = 0, 0, 0
    for x in [*pooled, None]:
        if x is not None and x > baseline:
            run += 1
            continue
        if run:
            runs += 1
            noise += run * step < cold_start
        run = 0
    backlog, worst = 0.0, 0.0
    for x in pooled:
        if x is None:
            continue
        backlog = max(0.0, backlog + (min(x, daily) - capacity) * step)
        worst = max(worst, backlog / capacity)
    return {
        "baseline": baseline,
        "daily": daily,
        "peak": peak,
        "sustained_max": sustained[-1],
        "valid": len(valid),
        "spikes": runs,
        "noise": noise,
        "daily_wait": worst,
    }


def _check(members: list[PoolMember], cold_start: float, capacity: float) -> dict[str, float | int | None]:
    plain = plain_pool(
        [
            (
                [float(t) for t in m.times],
                [None if math.isnan(v) else float(v) for v in m.values],
                m.step_seconds,
                m.per_gpu,
                m.gpus_per_replica,
            )
            for m in members
        ],
        cold_start,
        capacity,
    )
    _, report = pool_series(members, cold_start, capacity=capacity)
    assert report.daily_queue is not None
    got = {
        "baseline": report.baseline,
        "daily": report.daily,
        "peak": report.peak,
        "sustained_max": report.sustained_max,
        "valid": report.valid_samples,
        "spikes": report.noise_spike_count + report.real_spike_count,
        "noise": report.noise_spike_count,
        "daily_wait": report.daily_queue.max_wait,
    }
    assert got == pytest.approx(plain, rel=1e-12, abs=1e-9)
    return plain


# --------------------------------------------------------------------------- generated series


def _day_and_night() -> list[PoolMember]:
    """Two days: a 60-s service busy 08-20 h and a 300-s batch busy at night, starting 120 s later."""
    t0 = 1_780_000_000 - 1_780_000_000 % 86_400
    day_t = np.arange(t0, t0 + 2 * 86_400, 60, dtype=np.float64)
    hour = (day_t % 86_400) / 3600
    day_v = np.where((hour >= 8) & (hour < 20), 180 + 40 * np.sin(day_t / 5000), 15.0).round()
    day_v[700:703] = 900  # a 3-minute burst: noise for a 10-minute cold start
    night_t = np.arange(t0 + 120, t0 + 2 * 86_400, 300, dtype=np.float64)
    nhour = (night_t % 86_400) / 3600
    night_v = np.where((nhour < 8) | (nhour >= 20), 20 + (night_t // 300) % 4, 1.0)
    night_v[200:204] = np.nan  # a gap in the batch's trace
    return [
        PoolMember("day", day_t, day_v, 60.0, per_gpu=10.0, gpus_per_replica=1),
        PoolMember("night", night_t, night_v, 300.0, per_gpu=1.0, gpus_per_replica=2),
    ]


def test_generated_series_with_different_steps_and_offset_peaks_match_the_plain_reference() -> None:
    members = _day_and_night()
    plain = _check(members, cold_start=600.0, capacity=40.0)
    # The two shifts barely overlap, so the pooled floor is far below the summed floors.
    own = [
        int(gpus_for(analyse(Series(m.times, m.values, ~np.isnan(m.values), m.step_seconds, m.name, (),
                                    float(m.times[0]), float(m.times[-1])),
                             BandSettings(cold_start_seconds=600.0, min_window_days=0)).baseline,
                     m.per_gpu, m.gpus_per_replica))
        for m in members
    ]
    assert plain["baseline"] is not None and plain["baseline"] < sum(own)


def test_queue_at_a_tight_capacity_matches_the_plain_reference() -> None:
    plain = _check(_day_and_night(), cold_start=900.0, capacity=20.0)
    assert plain["daily_wait"] is not None and plain["daily_wait"] > 0


def _helios() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Helios trace read independently of the package; fresh arrays for every caller."""
    times, running, pending = _helios_columns()
    return times.copy(), running.copy(), pending.copy()


@functools.cache
def _helios_columns() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parsed once per session: row by row with ``strptime``, the slow but obvious way."""
    times, running, pending = [], [], []
    with HELIOS.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            stamp = datetime.strptime(row["Time"] if "Time" in row else row["time"], "%Y-%m-%d %H:%M:%S")
            times.append(stamp.replace(tzinfo=timezone.utc).timestamp())
            running.append(float(row["running_gpu_num"]))
            pending.append(float(row["pending_gpu_num"]))
    return np.array(times), np.array(running), np.array(pending)


def test_helios_trace_pooled_with_a_coarser_copy_matches_the_plain_reference() -> None:
    times, running, pending = _helios()
    # Running GPUs at one minute; pending GPUs re-sampled at five minutes, shifted by 2 minutes.
    members = [
        PoolMember("running", times, running, 60.0, per_gpu=1.0),
        PoolMember("pending", times[2::5], pending[2::5], 300.0, per_gpu=8.0, gpus_per_replica=8),
    ]
    _check(members, cold_start=600.0, capacity=64.0)


def test_a_workload_alone_gets_its_own_gpu_bands() -> None:
    times, running, _ = _helios()
    series = Series(times, running, np.ones(times.size, bool), 60.0, "helios", (), float(times[0]), float(times[-1]))
    own = analyse(series, BandSettings(cold_start_seconds=900.0, min_window_days=0), per_gpu=3.0, gpus_per_replica=2)
    _, report = pool_series([PoolMember("helios", times, running, 60.0, per_gpu=3.0, gpus_per_replica=2)], 900.0)
    assert own.bands_gpus == {"baseline": report.baseline, "daily": report.daily, "peak": report.peak}


@pytest.mark.parametrize(
    ("declared", "elastic", "window"),
    [
        pytest.param(1200, 600, 1200, id="workload-slower-than-the-pool"),
        pytest.param(300, 900, 900, id="pool-slower-than-the-workload"),
        pytest.param(None, 900, 900, id="workload-declares-none"),
        pytest.param(1800, None, 1800, id="pool-without-elastic-capacity"),
    ],
)
def test_a_pool_of_one_is_its_workload_in_every_command(
    tmp_path: Path, declared: int | None, elastic: int | None, window: int
) -> None:
    """The workload's cold start and the pool's are one definition: a pool of one has its workload's figures."""
    import json

    from conftest import replace_once, run_cli

    repo = tmp_path / "repo"
    assert run_cli(["init", str(repo)])[0] == 0
    workload, cluster = repo / "workloads" / "example-service.yaml", repo / "clusters" / "example.yaml"
    line = "  coldStartSeconds: 600         # node + image + model load: shorter spikes are noise\n"
    replace_once(workload, line, "" if declared is None else f"  coldStartSeconds: {declared}\n")
    if elastic is None:
        text = cluster.read_text(encoding="utf-8")
        start = text.index("      elastic:")
        end = text.index("      serves:")
        cluster.write_text(text[:start] + text[end:], encoding="utf-8")
    else:
        replace_once(cluster, "        coldStartSeconds: 600", f"        coldStartSeconds: {elastic}")

    code, out, err = run_cli(["bands", "--pool", "example/serving", str(repo), "--format", "json"])
    assert code == 0, err
    pool = json.loads(out)
    own = pool["workloads"]["example-service"]
    assert own["cold_start_seconds"] == pool["pooled"]["cold_start_seconds"] == window
    pooled = dict(pool["pooled"]["bands_gpus"], sustained_max=pool["pooled"]["sustained_max_gpus"])
    assert own["bands_gpus"] == pool["sum_of_workload_bands_gpus"] == pooled

    code, out, _ = run_cli(["check", str(repo), "--format", "json", "--select", "PL1"])
    facts = json.loads(out)
    assert not [f for f in facts["findings"] if "pooled demand is" in f["message"]], facts["findings"]


def test_an_instant_counts_only_when_every_workload_has_a_sample() -> None:
    t = np.arange(0.0, 6000.0, 60.0)
    a = np.full(t.size, 5.0)
    a[10:20] = np.nan  # excluded in one workload only
    grid = align([PoolMember("a", t, a, 60.0, 1.0), PoolMember("b", t + 3000.0, np.full(t.size, 1.0), 60.0, 1.0)])
    # b starts 3000 s later: only the overlap is on the grid; a's exclusion is outside it.
    assert grid.times[0] == 3000.0 and grid.times[-1] == 5940.0
    assert not np.isnan(grid.pooled).any()
    grid = align([PoolMember("a", t, a, 60.0, 1.0), PoolMember("b", t, np.full(t.size, 1.0), 60.0, 1.0)])
    assert np.isnan(grid.pooled[10:20]).all() and np.nansum(grid.pooled) == 6.0 * (t.size - 10)


def test_traces_that_never_overlap_leave_no_pooled_bands() -> None:
    t = np.arange(0.0, 6000.0, 60.0)
    grid = align([PoolMember("a", t, np.ones(t.size), 60.0, 1.0), PoolMember("b", t + 10_000, np.ones(t.size), 60.0, 1.0)])
    report = analyse_pool(grid, 300.0)
    assert (report.window_days, report.baseline, report.valid_samples) == (0.0, None, 0)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.lists(st.tuples(st.sampled_from([60.0, 300.0, 900.0]), st.integers(1, 3_000), st.integers(-3, 3)), min_size=1, max_size=3),
    st.sampled_from([0.0, 60.0, 300.0, 900.0, 3_600.0, 86_400.0 * 30]),
    st.sampled_from([0.0, 0.05, 0.5, 1.0]),
)
def test_pool_bands_are_the_pooled_reports_bands(seed: int, shapes: list[tuple[float, int, int]], cold: float, gaps: float) -> None:
    """Each member alone (and any pool) has the bands of :func:`pool_series`, without its spikes: the same numbers,
    None where the window holds no sustained sample (short series, every sample missing)."""
    rng = np.random.default_rng(seed)
    members = []
    for i, (step, n, shift) in enumerate(shapes):
        times = 1_790_208_000.0 + shift * step + step * np.arange(n, dtype=np.float64)
        values = rng.integers(0, int(rng.integers(1, 300)), n).astype(np.float64)
        values[rng.random(n) < gaps] = np.nan
        members.append(PoolMember(f"w{i}", times, values, step, per_gpu=float(rng.choice([1.0, 3.0, 0.5])),
                                  gpus_per_replica=int(rng.integers(1, 4))))
    try:
        _, report = pool_series(members, cold)
    except PolicylintError:
        with pytest.raises(PolicylintError):
            pool_bands(members, cold)
        return
    want = (report.baseline, report.daily, report.peak, report.sustained_max)
    got = pool_bands(members, cold)
    assert [None if v is None else float(v).hex() for v in got] == [None if v is None else float(v).hex() for v in want]
