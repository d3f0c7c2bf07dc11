"""Benchmark the band calculator against a straightforward pandas reference.

Not a test. Run from the repository root::

    python benchmarks/bench_bands.py            # 1,000 series x 129,600 samples
    python benchmarks/bench_bands.py --series 100

Synthetic data: every series is 90 days at one-minute steps (129,600 samples) of
a daily cycle plus noise plus short and long bursts. Series are made and
processed in chunks (``--chunk`` series per 2-D array) so memory stays bounded;
making the data is not timed.

Timed per chunk:

* **policylint**: rolling minimum over the cold-start window, baseline and daily
  percentiles, peak, spikes above the baseline, and the fluid queue at one
  capacity (ceil of the baseline) with its max wait, all on the 2-D chunk;
* **one numpy pass**: ``chunk.sum()``, the floor for touching every sample once;
* **pandas reference**: per series, ``Series.rolling(W).min()``, ``quantile``,
  spikes by run-labelling with ``shift``/``cumsum``/``groupby`` and the queue by
  the Lindley recursion in a Python loop. It is slow, so it runs on the first
  ``--reference-series`` series only and its rate is extrapolated per sample.

Needs pandas (``pip install 'policylint[bench]'``).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policylint.bands import BandSettings, summarise, window_samples  # noqa: E402

STEP = 60.0
COLD_START = 300.0
SETTINGS = BandSettings(cold_start_seconds=COLD_START)


def make_chunk(rows: int, samples: int, seed: int) -> np.ndarray:
    """Concurrency-like series: daily cycle + noise + bursts, never negative."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples, dtype=np.float64)
    level = rng.uniform(20, 200, size=(rows, 1))
    cycle = 0.3 * level * np.sin(2 * np.pi * t / 1440.0)[None, :]
    noise = rng.normal(0, 0.05, size=(rows, samples)) * level
    data = np.maximum(np.rint(level + cycle + noise), 0.0)
    # Bursts: a few hundred per series, 1 to 60 samples wide.
    for row in range(rows):
        starts = rng.integers(0, samples - 60, size=300)
        widths = rng.integers(1, 60, size=300)
        for s, w in zip(starts, widths, strict=True):
            data[row, s : s + w] += level[row, 0] * 0.5
    return data


def ours(chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:
    """The calculator on one 2-D chunk: bands, spikes, queue at ceil(baseline)."""
    table = summarise(chunk, STEP, SETTINGS)
    return table.baseline, table.daily, table.peak, int(table.spike_count.sum()), table.max_wait


def reference(values: np.ndarray) -> tuple[float, float, float, int, float]:
    """Straightforward per-series pandas/Python version of the same work."""
    import pandas as pd

    c = pd.Series(values)
    w = window_samples(COLD_START, STEP)
    sustained = c.rolling(w).min().dropna()
    baseline = float(sustained.quantile(0.95, interpolation="higher"))
    daily = float(sustained.quantile(0.99, interpolation="higher"))
    peak = float(c.max())
    above = c > baseline
    run_id = (above != above.shift()).cumsum()
    runs = (c[above] - baseline).groupby(run_id[above]).agg(["size", "max", "sum"])
    capacity = math.ceil(baseline)
    q = 0.0
    worst = 0.0
    for x in values.tolist():
        q = max(0.0, q + (x - capacity) * STEP)
        worst = max(worst, q)
    return baseline, daily, peak, len(runs), worst / capacity


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=1000, help="number of series (default 1000)")
    parser.add_argument("--samples", type=int, default=129_600, help="samples per series (default 90 days of minutes)")
    parser.add_argument("--chunk", type=int, default=50, help="series per 2-D chunk (default 50)")
    parser.add_argument("--reference-series", type=int, default=10,
                        help="series the pandas reference runs on (default 10)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    total_ours = 0.0
    total_pass = 0.0
    total_ref = 0.0
    ref_samples = 0
    agree = 0
    checked = 0
    spikes = 0
    sink = 0.0
    done = 0
    chunk_index = 0
    while done < args.series:
        rows = min(args.chunk, args.series - done)
        chunk = make_chunk(rows, args.samples, args.seed + chunk_index)

        t0 = time.perf_counter()
        sink += float(chunk.sum())
        total_pass += time.perf_counter() - t0

        t0 = time.perf_counter()
        baseline, daily, peak, count, max_wait = ours(chunk)
        total_ours += time.perf_counter() - t0
        spikes += count

        for row in range(rows):
            if checked >= args.reference_series:
                break
            t0 = time.perf_counter()
            ref = reference(chunk[row])
            total_ref += time.perf_counter() - t0
            ref_samples += args.samples
            checked += 1
            single = ours(chunk[row : row + 1])
            mine = (float(single[0][0]), float(single[1][0]), float(single[2][0]), single[3], float(single[4][0]))
            if (mine[2:4] == ref[2:4] and math.isclose(mine[4], ref[4], rel_tol=1e-9)
                    and abs(mine[0] - ref[0]) <= 1 and abs(mine[1] - ref[1]) <= 1):
                agree += 1
        done += rows
        chunk_index += 1

    samples = args.series * args.samples
    rate_ours = samples / total_ours
    rate_pass = samples / total_pass
    rate_ref = ref_samples / total_ref if total_ref else math.nan
    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, {platform.machine()}")
    print(f"data: {args.series} series x {args.samples:,} samples = {samples:,} samples, "
          f"chunks of {args.chunk} series; {spikes:,} spikes found")
    print(f"policylint calculator : {total_ours:8.2f} s  {rate_ours / 1e6:9.1f} M samples/s")
    print(f"one numpy pass (sum)  : {total_pass:8.2f} s  {rate_pass / 1e6:9.1f} M samples/s")
    print(f"pandas reference      : {total_ref:8.2f} s  {rate_ref / 1e6:9.2f} M samples/s "
          f"(measured on {checked} series, {ref_samples:,} samples; extrapolated per sample)")
    print(f"speed-up over pandas  : {rate_ours / rate_ref:6.1f}x   (target >= 10x)")
    print(f"cost vs one numpy pass: {rate_pass / rate_ours:6.1f}x   (target <= 30x)")
    print(f"reference agreement   : {agree}/{checked} series (peak, spike count, max wait equal; "
          "bands within one rank step)")
    return 0 if sink >= 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
