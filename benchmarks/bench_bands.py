"""Benchmark the band calculator against a vectorised pandas reference and a numpy read pass.

Not a test. Run from the repository root (needs pandas: ``pip install 'policylint[bench]'``)::

    python benchmarks/bench_bands.py                  # 300 series x 92 days at one minute
    python benchmarks/bench_bands.py --rounds 9       # more rounds on a busy machine
    python benchmarks/bench_bands.py --profile        # where summarise / analyse spend time

Three cases, each on 92 days at one-minute steps (132,480 samples per series):

* ``summarise`` on a 2-D array of ``--series`` series at once;
* ``summarise`` on a single series (a 1 x n array);
* ``analyse`` on a single series (a regular :class:`~policylint.readers.series.Series`),
  once on the spike-heavy data and once on a series without sample noise (a few
  hundred spikes, like a quiet real trace), and on the real GPU cluster trace in
  ``tests/data`` (one month of the Helios trace, running + pending GPUs,
  repeated to 92 days).

Each case times three candidates on the same data:

* **calculator** - ``policylint.bands.summarise`` or ``analyse``;
* **pandas** - what a competent pandas user writes for the same work, with no
  Python loop over samples: ``rolling(W).min()`` for the sustained series,
  ``quantile`` for the baseline (p95) and daily (p99) bands, ``max`` for the
  peak, spikes as runs above the baseline labelled by ``shift``/``cumsum`` and
  measured (height, width, volume) by ``groupby`` on the run ids, and the fluid
  queue at ceil(baseline) in closed form: S = cumsum((c - C) dt),
  Q = S - min(0, cummin(S)), wait = Q / C. The ``analyse`` reference also does
  the flat-day test (``resample("D")``), the p99 wait, the spike start times and
  the widest noise spike, as ``analyse`` does;
* **numpy read pass** - ``np.sum`` over the same array: the floor for touching
  every sample once;
* **queue scans** - not a candidate but a floor: ``np.cumsum`` and
  ``np.minimum.accumulate`` over the same array, the two sequential scans the
  fluid queue's definition (S = cumsum(x), Q = S - min(0, min S)) cannot do
  without. Each element depends on the one before, so numpy runs them one
  element at a time, and summing in another order would change the bits.

Before anything is timed the script checks that calculator and reference agree
(bands and counts exactly, spike sizes and waits within 1e-9 relative) and stops
if they do not. Timing is CPU time (``time.process_time``); in every round the
three candidates run in a rotated order, and the figures are medians over the
rounds, with the range of the per-round ratios beside them. Making the data is
not timed. Percentiles use the calculator's definition (inverted CDF: the
smallest sample with at least p% of samples at or below it), which pandas
reaches with ``interpolation="lower"`` at the matching rank.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import math
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policylint.bands import BandSettings, analyse, summarise, window_samples  # noqa: E402
from policylint.readers.series import Series  # noqa: E402

STEP = 60.0
COLD_START = 300.0
DAYS = 92
SAMPLES = DAYS * 1440
SETTINGS = BandSettings(cold_start_seconds=COLD_START)
# 2026-01-01T00:00:00Z: whole UTC days, so the flat-day test judges every day.
T0 = 1_767_225_600.0
EPS = 1e-9  # the calculator's guard against float noise in ceilings and ranks

TARGET_PANDAS = 5.0  # calculator at least this many times faster than the pandas reference
TARGET_PASS = 25.0  # calculator at most this many times one numpy read pass


# --------------------------------------------------------------------------- data


def make_data(rows: int, samples: int, seed: int, noise: float = 0.05) -> np.ndarray:
    """Concurrency-like series (rows x samples): daily cycle + noise + bursts, never negative.

    Levels 20-200, a +-30% daily cycle, ``noise`` (share of the level, default
    5%: the series crosses its baseline every ~18 samples, a spike-heavy worst
    case) and 300 bursts per series of 1 to 60 minutes at +50%. Without noise a
    series has a few hundred spikes in 92 days, like a quiet real trace.
    """
    rng = np.random.default_rng(seed)
    t = np.arange(samples, dtype=np.float64)
    level = rng.uniform(20, 200, size=(rows, 1))
    data = level + 0.3 * level * np.sin(2 * np.pi * t / 1440.0)[None, :]
    data += rng.normal(0, noise, size=(rows, samples)) * level
    np.rint(data, out=data)
    np.maximum(data, 0.0, out=data)
    starts = rng.integers(0, samples - 60, size=(rows, 300))
    widths = rng.integers(1, 60, size=(rows, 300))
    # Burst cover built with a +1/-1 sweep per row: no loop over samples.
    delta = np.zeros((rows, samples + 1))
    r = np.repeat(np.arange(rows), 300)
    np.add.at(delta, (r, starts.ravel()), 1.0)
    np.add.at(delta, (r, (starts + widths).ravel()), -1.0)
    data += (np.cumsum(delta[:, :-1], axis=1) > 0) * np.rint(0.5 * level)
    return data


REAL_TRACE = Path(__file__).resolve().parents[1] / "tests" / "data" / "helios_vc3sl_2020-05.csv"


def real_trace(samples: int) -> np.ndarray | None:
    """GPU demand (running + pending GPUs) of the Helios trace in tests/data, repeated to ``samples``.

    One month at one-minute steps from a real GPU cluster; repeating it gives a
    92-day series with real burst shapes. None when the file is not there.
    """
    if not REAL_TRACE.is_file():
        return None
    import pandas as pd

    frame = pd.read_csv(REAL_TRACE, usecols=["running_gpu_num", "pending_gpu_num"])
    month = (frame["running_gpu_num"] + frame["pending_gpu_num"]).to_numpy(dtype=np.float64)
    return np.tile(month, -(-samples // month.size))[:samples].copy()


def as_series(values: np.ndarray) -> Series:
    """One row as the regular series ``analyse`` takes (no gaps, no exclusions)."""
    times = T0 + np.arange(values.size, dtype=np.float64) * STEP
    return Series(times=times, values=values.copy(), valid=np.ones(values.size, dtype=bool),
                  step_seconds=STEP, source="bench", gaps=(), first=float(times[0]), last=float(times[-1]))


# --------------------------------------------------------------------------- pandas reference


def _inverted_cdf(frame: Any, ps: list[float]) -> Any:
    """Inverted-CDF percentiles per column: ``quantile(interpolation="lower")`` at the rank.

    Rank k = ceil(n p / 100) - 1; asking for q = (k + 0.25) / (n - 1) makes the
    lower interpolation land on k whatever the float rounding of q (n - 1).
    """
    n = len(frame)
    qs = []
    for p in ps:
        k = min(max(math.ceil(n * p / 100.0 - EPS) - 1, 0), n - 1)
        qs.append(min((k + 0.25) / (n - 1), 1.0) if n > 1 else 0.0)
    return frame.quantile(qs, interpolation="lower")


def pandas_summarise(df: Any) -> dict[str, np.ndarray]:
    """``summarise`` in pandas: one column per series, a DatetimeIndex of minutes."""
    import pandas as pd

    w = window_samples(COLD_START, STEP)
    s = df.rolling(w).min().iloc[w - 1 :]
    bands = _inverted_cdf(s, [SETTINGS.baseline_percentile, SETTINGS.daily_percentile])
    peak = df.max()
    daily = np.minimum(bands.iloc[1], peak)
    base = np.minimum(bands.iloc[0], daily)

    # Spikes: runs above the baseline, one id per run across all columns.
    above = df.gt(base, axis=1)
    start = above & ~above.shift(1, fill_value=False)
    offset = start.sum().cumsum().shift(1, fill_value=0)
    run = start.cumsum().add(offset, axis=1)
    mask = above.to_numpy()
    column = np.broadcast_to(np.arange(df.shape[1]), df.shape)[mask]
    long = pd.DataFrame({"run": run.to_numpy()[mask], "column": column,
                         "excess": df.sub(base, axis=1).to_numpy()[mask]})
    runs = long.groupby("run", sort=False).agg(column=("column", "first"), length=("excess", "size"),
                                               height=("excess", "max"), volume=("excess", "sum"))
    runs["volume"] *= STEP
    runs["noise"] = runs["length"] * STEP < COLD_START - EPS
    per_column = runs.groupby("column").agg(spikes=("length", "size"), noise=("noise", "sum"))
    per_column = per_column.reindex(range(df.shape[1]), fill_value=0)

    # Fluid queue at C = ceil(baseline).
    cap = np.ceil(base - EPS)
    backlog = df.sub(cap, axis=1).mul(STEP).cumsum()
    backlog -= backlog.cummin().clip(upper=0.0)
    top = backlog.max()
    with np.errstate(divide="ignore", invalid="ignore"):
        wait = np.where((cap == 0) & (top == 0), 0.0, top / cap)
    return {"baseline": base.to_numpy(), "daily": daily.to_numpy(), "peak": peak.to_numpy(),
            "spike_count": per_column["spikes"].to_numpy(), "noise_count": per_column["noise"].to_numpy(),
            "capacity": cap.to_numpy(), "max_wait": np.asarray(wait)}


def pandas_analyse(c: Any) -> dict[str, Any]:
    """``analyse`` (default settings, no exclusions) in pandas for one Series with a UTC index."""
    import pandas as pd

    # Flat days: whole UTC days with at least two samples, all equal.
    day = c.resample("D").agg(["min", "max", "count"])
    flat = (day["count"] >= 2) & (day["min"] == day["max"])
    flat.iloc[0] &= bool(c.index[0] - day.index[0] < pd.Timedelta(seconds=STEP))
    flat.iloc[-1] &= bool(day.index[-1] + pd.Timedelta(days=1) - c.index[-1] <= pd.Timedelta(seconds=STEP))
    if flat.any():
        c = c.where(~c.index.floor("D").isin(day.index[flat]))

    w = window_samples(COLD_START, STEP)
    s = c.rolling(w).min().dropna()
    bands = _inverted_cdf(s, [SETTINGS.baseline_percentile, SETTINGS.daily_percentile])
    peak = c.max()
    daily = min(bands.iloc[1], peak)
    base = min(bands.iloc[0], daily)

    above = c > base
    start = above & ~above.shift(1, fill_value=False)
    run = start.cumsum()[above]
    grouped = (c[above] - base).groupby(run, sort=False)
    spikes = pd.DataFrame({"start": c.index[start.to_numpy()], "length": grouped.size().to_numpy(),
                           "height": grouped.max().to_numpy(), "volume": grouped.sum().to_numpy() * STEP})
    spikes["width"] = spikes["length"] * STEP
    spikes["noise"] = spikes["width"] < COLD_START - EPS
    noise = spikes[spikes["noise"]]

    cap = math.ceil(base - EPS)
    queue = None
    if cap > 0:
        backlog = c.sub(cap).fillna(0.0).mul(STEP).cumsum()
        backlog -= backlog.cummin().clip(upper=0.0)
        wait = (backlog / cap)[c.notna()]
        queue = (float(wait.max()), float(_inverted_cdf(wait.to_frame(), [SETTINGS.queue_percentile]).iloc[0, 0]))
    valid = int(c.count())
    return {"baseline": float(base), "daily": float(daily), "peak": float(peak), "spikes": spikes,
            "noise_count": len(noise), "widest_noise": float(noise["width"].max()) if len(noise) else 0.0,
            "queue": queue, "sustained_max": float(s.max()), "window_days": valid * STEP / 86_400.0,
            "flat_days": int(flat.sum())}


# --------------------------------------------------------------------------- agreement


def _same(name: str, mine: Any, ref: Any, exact: bool = False) -> None:
    a = np.asarray(mine, dtype=np.float64)
    b = np.asarray(ref, dtype=np.float64)
    ok = a.shape == b.shape and (np.array_equal(a, b) if exact else np.allclose(a, b, rtol=1e-9, atol=1e-9))
    if not ok:
        raise SystemExit(f"calculator and pandas reference disagree on {name}: {a!r} vs {b!r}")


def check_summarise(values: np.ndarray, df: Any) -> int:
    """Stop unless ``summarise`` and the reference agree; return the spike count."""
    table = summarise(values, STEP, SETTINGS)
    ref = pandas_summarise(df)
    for key in ("baseline", "daily", "peak", "spike_count", "noise_count", "capacity"):
        _same(key, getattr(table, key), ref[key], exact=True)
    _same("max_wait", table.max_wait, ref["max_wait"])
    return int(table.spike_count.sum())


def check_analyse(series: Series, c: Any) -> int:
    """Stop unless ``analyse`` and the reference agree; return the spike count."""
    report = analyse(series, SETTINGS)
    ref = pandas_analyse(c)
    for key in ("baseline", "daily", "peak", "sustained_max", "window_days"):
        _same(key, getattr(report, key), ref[key], exact=True)
    _same("flat days", len(report.flat_days), ref["flat_days"], exact=True)
    _same("noise spikes", report.noise_spike_count, ref["noise_count"], exact=True)
    _same("widest noise spike", report.widest_noise_width, ref["widest_noise"], exact=True)
    spikes = ref["spikes"]
    epoch = np.asarray((spikes["start"] - c.index[0]) / np.timedelta64(1, "s"), dtype=np.float64) + T0
    _same("spike starts", [s.start for s in report.spikes], epoch, exact=True)
    _same("spike widths", [s.width_seconds for s in report.spikes], spikes["width"], exact=True)
    _same("spike heights", [s.height for s in report.spikes], spikes["height"])
    _same("spike volumes", [s.volume for s in report.spikes], spikes["volume"])
    assert report.baseline_queue is not None and ref["queue"] is not None
    _same("baseline queue waits", [report.baseline_queue.max_wait, report.baseline_queue.p99_wait], ref["queue"])
    return len(report.spikes)


# --------------------------------------------------------------------------- timing


def _cpu(fn: Callable[[], object], number: int) -> float:
    """CPU seconds per call, over ``number`` calls."""
    gc.collect()
    t0 = time.process_time()
    for _ in range(number):
        fn()
    return (time.process_time() - t0) / number


def measure(candidates: dict[str, Callable[[], object]], rounds: int, min_seconds: float) -> dict[str, list[float]]:
    """Per-call CPU seconds of every candidate in every round, in rotated order.

    Quick candidates are repeated within a measurement (calibrated once) so each
    measurement lasts about ``min_seconds``.
    """
    names = list(candidates)
    number = {}
    for name in names:
        once = max(_cpu(candidates[name], 1), 1e-7)
        number[name] = max(1, math.ceil(min_seconds / once))
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            times[name].append(_cpu(candidates[name], number[name]))
    return times


def report(title: str, times: dict[str, list[float]]) -> dict[str, float]:
    """Print medians and ratios of one case; return the two headline ratios."""
    med = {name: statistics.median(t) for name, t in times.items()}
    calc, ref, floor = times["calculator"], times["pandas"], times["numpy pass"]
    vs_ref = [r / c for c, r in zip(calc, ref, strict=True)]
    vs_pass = [c / f for c, f in zip(calc, floor, strict=True)]
    ratio_ref = med["pandas"] / med["calculator"]
    ratio_pass = med["calculator"] / med["numpy pass"]
    print(f"\n{title}")
    for name in times:
        print(f"  {name:<12} {med[name] * 1e3:10.2f} ms CPU (median of {len(times[name])})")
    verdict = "met" if ratio_ref >= TARGET_PANDAS else "MISSED"
    print(f"  pandas / calculator     : {ratio_ref:6.2f}x  (rounds {min(vs_ref):.2f}-{max(vs_ref):.2f}; "
          f"target >= {TARGET_PANDAS:g}x: {verdict})")
    verdict = "met" if ratio_pass <= TARGET_PASS else "MISSED"
    print(f"  calculator / numpy pass : {ratio_pass:6.1f}x  (rounds {min(vs_pass):.1f}-{max(vs_pass):.1f}; "
          f"target <= {TARGET_PASS:g}x: {verdict})")
    scans = med["queue scans"] / med["numpy pass"]
    print(f"  queue scans / numpy pass: {scans:6.1f}x  (the fluid queue's cumsum and running minimum alone:"
          f" {100 * med['queue scans'] / med['calculator']:.0f}% of the calculator)")
    return {"vs_pandas": ratio_ref, "vs_pass": ratio_pass, "scans": scans}


def queue_scans(values: np.ndarray) -> Callable[[], object]:
    """The two sequential scans the fluid queue's definition asks for, over ``values`` as they are.

    S = cumsum(x) and the running minimum of S: numpy has no faster way to form
    either (each element depends on the one before), and reordering the sum would
    change its bits. Output buffers are made once, so only the scans are timed.
    """
    a = np.atleast_2d(values)
    total = np.empty_like(a)
    low = np.empty_like(a)

    def scans() -> None:
        np.cumsum(a, axis=1, out=total)
        np.minimum.accumulate(total, axis=1, out=low)

    return scans


def profile(label: str, fn: Callable[[], object], stages: list[tuple[str, str | None]], top: int) -> None:
    """cProfile one call; print the time per calculator stage, then the busiest functions.

    A stage is a function of the calculator (``policylint/calc/``,
    ``policylint/analysis.py``) by name, optionally only as called from another
    one (``percentile`` serves both the bands and the p99 wait). Times are cumulative and include cProfile's own overhead, which
    inflates stages made of many small Python calls.
    """
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    stats = pstats.Stats(prof)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    # The outermost call (the benchmark's lambda) holds everything.
    total = max(max(v[3] for v in raw.values()), 1e-12)
    print(f"\nprofile: {label} ({total * 1e3:.1f} ms under cProfile)")
    accounted = 0.0
    for name, caller in stages:
        spent = 0.0
        for (path, _line, func), (_cc, _nc, _tt, cum, callers) in raw.items():
            if func != name or not ("/calc/" in path.replace("\\", "/") or path.endswith("analysis.py")):
                continue
            if caller is None:
                spent += cum
            else:
                spent += sum(v[3] for k, v in callers.items() if k[2] == caller)
        accounted += spent
        where = name if caller is None else f"{name} (from {caller})"
        print(f"  {where:<34} {spent * 1e3:8.1f} ms  {spent / total:6.1%}")
    print(f"  {'everything else':<34} {(total - accounted) * 1e3:8.1f} ms  {(total - accounted) / total:6.1%}")
    stats.sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=300, help="series in the 2-D case (default 300)")
    parser.add_argument("--days", type=int, default=DAYS, help=f"days at one-minute steps (default {DAYS})")
    parser.add_argument("--rounds", type=int, default=7, help="timing rounds; medians are reported (default 7)")
    parser.add_argument("--min-seconds", type=float, default=0.2,
                        help="repeat quick candidates so one measurement lasts this long (default 0.2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true",
                        help="also cProfile summarise (2-D) and analyse (one series)")
    args = parser.parse_args(argv)

    import pandas as pd

    samples = args.days * 1440
    values = make_data(args.series, samples, args.seed)
    index = pd.date_range(pd.Timestamp(T0, unit="s", tz="UTC"), periods=samples, freq="min")
    # The user's data already sits in a DataFrame (series as columns): building it is not timed.
    df = pd.DataFrame(values.T, index=index, copy=True)
    one = values[:1].copy()
    one_df = df.iloc[:, :1].copy()
    one_series = as_series(values[0])
    one_pd = pd.Series(values[0].copy(), index=index)
    quiet = make_data(1, samples, args.seed, noise=0.0)[0]
    quiet_series = as_series(quiet)
    quiet_pd = pd.Series(quiet.copy(), index=index)
    real = real_trace(samples)

    print(f"python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, "
          f"{os.cpu_count()} CPUs, {platform.machine()}; CPU time, {args.rounds} rounds")
    print(f"data: {args.days} days at 60 s = {samples:,} samples per series; cold start {COLD_START:g} s "
          f"(W = {window_samples(COLD_START, STEP)} samples)")
    spikes_2d = check_summarise(values, df)
    spikes_one = check_summarise(one, one_df)
    spikes_an = check_analyse(one_series, one_pd)
    spikes_quiet = check_analyse(quiet_series, quiet_pd)
    spikes_real = 0
    if real is not None:
        spikes_real = check_analyse(as_series(real), pd.Series(real.copy(), index=index))
    print(f"agreement: calculator = pandas reference on all {args.series} series "
          f"({spikes_2d:,} spikes; single series {spikes_one:,} spikes, analyse {spikes_an:,}; "
          f"series without noise {spikes_quiet:,}; real trace {spikes_real:,})")

    cases = [
        (f"summarise, {args.series} series in one 2-D array ({args.series * samples:,} samples)", {
            "calculator": lambda: summarise(values, STEP, SETTINGS),
            "pandas": lambda: pandas_summarise(df),
            "numpy pass": lambda: np.sum(values),
            "queue scans": queue_scans(values),
        }),
        ("summarise, one series (1 x n array)", {
            "calculator": lambda: summarise(one, STEP, SETTINGS),
            "pandas": lambda: pandas_summarise(one_df),
            "numpy pass": lambda: np.sum(one),
            "queue scans": queue_scans(one),
        }),
        ("analyse, one series", {
            "calculator": lambda: analyse(one_series, SETTINGS),
            "pandas": lambda: pandas_analyse(one_pd),
            "numpy pass": lambda: np.sum(one_series.values),
            "queue scans": queue_scans(one_series.values),
        }),
        (f"analyse, one series without noise ({spikes_quiet:,} spikes)", {
            "calculator": lambda: analyse(quiet_series, SETTINGS),
            "pandas": lambda: pandas_analyse(quiet_pd),
            "numpy pass": lambda: np.sum(quiet_series.values),
            "queue scans": queue_scans(quiet_series.values),
        }),
    ]
    if real is not None:
        real_series = as_series(real)
        real_pd = pd.Series(real.copy(), index=index)
        cases.append((f"analyse, real GPU trace ({spikes_real:,} spikes)", {
            "calculator": lambda: analyse(real_series, SETTINGS),
            "pandas": lambda: pandas_analyse(real_pd),
            "numpy pass": lambda: np.sum(real_series.values),
            "queue scans": queue_scans(real_series.values),
        }))
    results = []
    for title, candidates in cases:
        results.append((title, report(title, measure(candidates, args.rounds, args.min_seconds))))

    print("\nsummary (pandas / calculator, target >= 5x; calculator / numpy pass, target <= 25x;"
          " the queue's two scans alone / numpy pass)")
    for title, r in results:
        print(f"  {title.split(' (')[0]:<40} {r['vs_pandas']:6.2f}x  {r['vs_pass']:6.1f}x  {r['scans']:6.1f}x")

    if args.profile:
        profile(f"summarise, {args.series} series", lambda: summarise(values, STEP, SETTINGS),
                [("rolling_min_rows", None), ("percentile", None), ("find_spikes", None),
                 ("queue_backlog", None)], 8)
        analyse_stages: list[tuple[str, str | None]] = [
            ("flat_days", None), ("rolling_min_rows", None), ("percentile", "core_rows"), ("find_spikes", None),
            ("queue_backlog", None), ("stats_from_backlog", None)]
        profile("analyse, one series", lambda: analyse(one_series, SETTINGS), analyse_stages, 8)
        profile("analyse, one series without noise", lambda: analyse(quiet_series, SETTINGS),
                analyse_stages, 8)
        if real is not None:
            real_one = as_series(real)
            profile("analyse, real GPU trace", lambda: analyse(real_one, SETTINGS), analyse_stages, 8)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
