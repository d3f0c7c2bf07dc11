"""Integrity stage benchmark: :func:`policylint.measure.integrity.workload.trace_facts` per trace, against reading it.

For every trace given (default: the good example's 92-day, 5-minute traces) it reads
the series once with policylint's reader, then times ``trace_facts`` on it (best of
``--rounds`` runs of ``--number`` calls) and ``pyarrow.csv.read_csv`` of the file (the
reference reader), and prints both with their ratio. ``--against`` names another
version's integrity stage as one file - a version from before the stage became a
package (e.g. ``git show BASE:policylint/measure/integrity.py > /tmp/old_integrity.py``)
- timed in the same run on the same series so that before and after are side by side
under one load; its facts are compared with this tree's too.
Figures are ratios for reading, never asserted anywhere.

    python benchmarks/bench_integrity.py [--against /tmp/old_integrity.py] [TRACE ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import timeit
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load() -> float:
    """The 1-minute load average (0 where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def other_module(path: Path) -> ModuleType:
    """Another version's integrity module, loaded from its file under a name of its own."""
    spec = importlib.util.spec_from_file_location("integrity_against", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["integrity_against"] = module
    spec.loader.exec_module(module)
    return module


def best(call: object, number: int, rounds: int) -> float:
    """Seconds per call, the best of ``rounds`` runs of ``number`` calls."""
    return min(timeit.repeat(call, number=number, repeat=rounds)) / number  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path, help="CSV traces (default: examples/good's traces)")
    parser.add_argument("--against", type=Path, help="another version's single-file integrity module, timed beside this one")
    parser.add_argument("--number", type=int, default=5, help="calls per run (default 5)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per figure, the best kept (default 3)")
    args = parser.parse_args()

    import pyarrow.csv

    from policylint.measure.integrity.workload import trace_facts
    from policylint.readers import read_series

    traces = args.traces or sorted((ROOT / "examples" / "good" / "measurements" / "traces").glob("*.csv"))
    other = other_module(args.against) if args.against else None
    print(f"load {load():.2f} (1-minute average); best of {args.rounds} x {args.number} calls")
    head = f"{'trace':<28} {'samples':>8} {'read_csv':>9} {'integrity':>10} {'ratio':>6}"
    if other is not None:
        head += f" {'against':>9} {'ratio':>6} {'speed-up':>8}  same"
    print(head)
    totals = [0.0, 0.0, 0.0]
    for path in traces:
        s = read_series(path)
        step = float(s.step_seconds)
        arrow = best(lambda: pyarrow.csv.read_csv(path), args.number, args.rounds)
        ours = best(lambda: trace_facts(s.times, s.values, s.valid, step), args.number, args.rounds)
        totals[0] += arrow
        totals[1] += ours
        line = f"{path.name:<28} {s.values.size:>8,} {arrow * 1e3:>7.2f}ms {ours * 1e3:>8.2f}ms {ours / arrow:>5.2f}x"
        if other is not None:
            theirs = best(lambda: other.trace_facts(s.times, s.values, s.valid, step), args.number, args.rounds)
            totals[2] += theirs
            same = repr(trace_facts(s.times, s.values, s.valid, step)) == repr(
                other.trace_facts(s.times, s.values, s.valid, step)
            )
            line += f" {theirs * 1e3:>7.2f}ms {theirs / arrow:>5.2f}x {theirs / ours:>7.1f}x  {'yes' if same else 'NO'}"
        print(line, flush=True)
    n = max(1, len(traces))
    line = f"{'mean per trace':<28} {'':>8} {totals[0] / n * 1e3:>7.2f}ms {totals[1] / n * 1e3:>8.2f}ms {totals[1] / totals[0]:>5.2f}x"
    if other is not None:
        line += f" {totals[2] / n * 1e3:>7.2f}ms {totals[2] / totals[0]:>5.2f}x {totals[2] / totals[1]:>7.1f}x"
    print(line)
    print(f"load {load():.2f} at the end")


if __name__ == "__main__":
    main()
