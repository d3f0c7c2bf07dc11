"""Benchmark the trace readers against what a user would write with pandas and pyarrow.

Not a test. Run from the repository root::

    python benchmarks/bench_traces.py               # 92 days at one-minute steps
    python benchmarks/bench_traces.py --days 30 --repeat 5

Synthetic data: a 92-day trace at one-minute steps (132,480 rows) of a daily
cycle plus noise, written once as CSV with ISO-8601 timestamps, once as CSV with
epoch seconds, and once as Parquet (a timestamp column and a float column).
Writing is not timed.

Timed, best of ``--repeat`` rounds in which policylint and the reference
alternate, in the same process and run:

* **policylint CSV**: ``policylint.traces.read_series`` on the CSV, which parses
  the timestamps, validates every row and puts the samples on the regular grid;
* **pandas CSV**: ``pandas.read_csv`` with the timestamp column parsed
  (``parse_dates`` for ISO text, ``to_datetime(unit="s")`` for epoch seconds);
* **policylint Parquet**: ``read_series`` on the Parquet file (same work);
* **pyarrow Parquet**: ``pyarrow.parquet.read_table`` of the same file;
* **pyarrow.csv** (issue 26): ``read_series`` on each CSV against
  ``pyarrow.csv.read_csv`` of the same file with its defaults (type inference,
  threads), the reference of the cold-path target; and a CSV whose times mix
  naive and ``Z`` forms (no single Arrow type: the row-by-row path);
* **exclusions**: ``parse_exclusion`` of a ``START/END`` pair against two
  ``datetime.fromisoformat`` calls (per exclusion, microseconds).

Targets: CSV at most 1.5x pandas and 1.3x pyarrow.csv, Parquet at most 1.2x
pyarrow. policylint does more than the references (validation and the grid), so
the ratios are an upper bound of the reading overhead. Needs pandas (``pip
install 'policylint[bench]'``). ``PYTHONPATH=DIR`` measures the policylint
package in DIR (another checkout) instead of this tree's.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

T0 = 1_788_134_400  # 2026-09-01T00:00:00Z


def best_pair(ours: Callable[[], object], reference: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Smallest wall time of each of two calls over ``repeat`` rounds.

    The two alternate within every round, so a change in the machine's load
    during the run affects both alike (the ratio is what counts).
    """
    mine: list[float] = []
    theirs: list[float] = []
    for _ in range(repeat):
        for fn, out in ((ours, mine), (reference, theirs)):
            gc.collect()
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return min(mine), min(theirs)


def make_trace(days: int) -> tuple[np.ndarray, np.ndarray]:
    """Times (unix seconds, one minute apart) and a daily cycle of concurrency with noise."""
    n = days * 24 * 60
    times = T0 + 60 * np.arange(n, dtype=np.int64)
    phase = 2 * np.pi * (times % 86_400) / 86_400
    rng = np.random.default_rng(11)
    values = np.maximum(0, np.round(120 + 80 * np.sin(phase) + rng.normal(0, 10, n))).astype(np.int64)
    return times, values


def write_files(folder: Path, times: np.ndarray, values: np.ndarray) -> dict[str, Path]:
    """The same trace as ISO CSV, epoch CSV and Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    iso_text = np.datetime_as_string(times.astype("datetime64[s]"), unit="s", timezone="UTC")
    files = {"iso": folder / "trace_iso.csv", "epoch": folder / "trace_epoch.csv", "parquet": folder / "trace.parquet"}
    with files["iso"].open("w", encoding="utf-8") as out:
        out.write("timestamp,in_flight\n")
        out.writelines(f"{t},{v}\n" for t, v in zip(iso_text.tolist(), values.tolist()))
    with files["epoch"].open("w", encoding="utf-8") as out:
        out.write("timestamp,in_flight\n")
        out.writelines(f"{t},{v}\n" for t, v in zip(times.tolist(), values.tolist()))
    files["mixed"] = folder / "trace_mixed.csv"
    naive = np.datetime_as_string(times.astype("datetime64[s]"), unit="s")
    with files["mixed"].open("w", encoding="utf-8") as out:
        out.write("timestamp,in_flight\n")
        # one row in 97 written in UTC with a Z, the others without a zone: no one Arrow type reads all
        out.writelines(f"{t if i % 97 else z},{v}\n"
                       for i, (t, z, v) in enumerate(zip(naive.tolist(), iso_text.tolist(), values.tolist())))
    stamps = pa.array(times * 1_000_000, type=pa.timestamp("us", tz="UTC"))
    pq.write_table(pa.table({"timestamp": stamps, "in_flight": pa.array(values.astype(np.float64))}), files["parquet"])
    return files


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=92, help="trace length in days (default 92)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=40,
        help="rounds; the best time of each counts (default 40: on a shared machine the noise between runs"
        " is larger than the gaps measured)",
    )
    args = parser.parse_args(argv)
    try:
        import pandas as pd
    except ImportError:
        print("needs pandas: pip install 'policylint[bench]'", file=sys.stderr)
        return 2
    import pyarrow
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    from policylint.traces import read_series

    times, values = make_trace(args.days)
    with tempfile.TemporaryDirectory() as tmp:
        files = write_files(Path(tmp), times, values)
        # Check that every reader sees the same data before timing anything.
        for key in ("iso", "epoch", "parquet", "mixed"):
            series = read_series(files[key])
            assert series.samples == times.size and series.values.tolist() == values.astype(float).tolist(), key

        rows = []
        ours, ref = best_pair(
            lambda: read_series(files["iso"]),
            lambda: pd.read_csv(files["iso"], parse_dates=["timestamp"]),
            args.repeat,
        )
        rows.append(("CSV, ISO-8601 timestamps", ours, "pandas.read_csv(parse_dates)", ref, 1.5))
        ours, ref = best_pair(
            lambda: read_series(files["epoch"]),
            lambda: pd.to_datetime(pd.read_csv(files["epoch"])["timestamp"], unit="s"),
            args.repeat,
        )
        rows.append(("CSV, epoch seconds", ours, "pandas.read_csv + to_datetime", ref, 1.5))
        ours, ref = best_pair(
            lambda: read_series(files["parquet"]), lambda: pq.read_table(files["parquet"]), args.repeat
        )
        rows.append(("Parquet", ours, "pyarrow.parquet.read_table", ref, 1.2))
        for key, label in (("iso", "CSV, ISO-8601"), ("epoch", "CSV, epoch seconds"), ("mixed", "CSV, naive and Z mixed")):
            ours, ref = best_pair(lambda k=key: read_series(files[k]), lambda k=key: pcsv.read_csv(files[k]), args.repeat)
            rows.append((label, ours, "pyarrow.csv.read_csv", ref, 1.3))
        size = os.path.getsize(files["iso"])
    from datetime import datetime

    from policylint.traces import parse_exclusion

    pairs = [f"2026-{m:02d}-{d:02d}/2026-{m:02d}-{d + 2:02d}T12:30:00Z" for m in range(1, 13) for d in range(1, 26)]

    def fromiso() -> None:
        for pair in pairs:
            start, _, end = pair.partition("/")
            datetime.fromisoformat(start), datetime.fromisoformat(end)

    ex_ours, ex_ref = best_pair(lambda: [parse_exclusion(p) for p in pairs], fromiso, max(3, args.repeat // 4))
    per = len(pairs)

    print(f"trace: {args.days} days at one-minute steps, {times.size:,} rows ({size / 1e6:.1f} MB as ISO CSV)")
    print(f"python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, "
          f"pyarrow {pyarrow.__version__}, {os.cpu_count()} cores; best of {args.repeat}")
    print()
    print(f"{'input':<26} {'policylint':>11} {'reference':>11}  {'ratio':>6}  {'target':>6}  reference")
    failed = False
    for label, ours, reference_name, ref, target in rows:
        ratio = ours / ref
        mark = "ok" if ratio <= target else "MISSED"
        failed |= ratio > target
        print(f"{label:<26} {ours * 1e3:>8.1f} ms {ref * 1e3:>8.1f} ms  {ratio:>5.2f}x  {target:>5.1f}x  "
              f"{reference_name} [{mark}]")
    print(f"{'exclusion START/END':<26} {ex_ours / per * 1e6:>8.1f} us {ex_ref / per * 1e6:>8.1f} us  {ex_ours / ex_ref:>5.2f}x"
          f"      -  two datetime.fromisoformat calls")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
