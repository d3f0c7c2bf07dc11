"""Measurement-cache benchmark: cold, warm and one-file runs of ``check`` on traced workloads.

Generates a capacity repository of N workloads (the declarations of
``bench_rules.py``), each with its own copy of a 92-day, 5-minute trace from
``examples/good``, then times whole ``policylint check`` runs in fresh processes,
with a private cache folder: no cache, a cold cache, a warm cache, and a
pre-commit style ``--changed-files`` run on one workload file with and without
the cache. Prints wall times and checks that every variant prints the same
report. Not a test: run it by hand.

    python benchmarks/bench_cache.py [--workloads 200] [--jobs 2]
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rules import generate  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "good"


def build(
    root: Path,
    workloads: int,
    *,
    pools_per_cluster: int = 10,
    clusters: int | None = None,
    cls: str | None = None,
    distinct: bool = False,
    independent: bool = False,
) -> None:
    """One file per workload, each reading its own trace file.

    The layout is ``bench_rules.generate``'s (one cluster of ten pools per 100
    workloads unless told otherwise). Traces are copies of the examples' traces;
    with ``distinct`` each copy has one sample raised at a place of its own, so
    no two workloads cite the same series (the double-count rule would otherwise
    flag most workloads of a large pool as repeats of a few).

    With ``independent`` every series is its own: the example trace's values with
    independent noise of -1, 0 or +1 at every sample (a seeded generator per
    workload, clipped at zero), on the example's time axis. A real fleet's
    workloads are measured apart, so no series repeats another's shape; the
    one-raised-sample copies of ``distinct`` still rise and fall together where
    the raise keeps the shape, and the double-count rule reports thousands of
    them at 10,000 workloads, which is work a real repository does not cause.
    """
    generate(root, workloads, pools_per_cluster, clusters, cls)
    docs = (root / "workloads.yaml").read_text().split("---\n")
    (root / "workloads.yaml").unlink()
    traces = sorted((EXAMPLES / "measurements" / "traces").glob("*.csv"))
    lines = {t: t.read_text().split("\n") for t in traces} if distinct else {}
    (root / "traces").mkdir()
    (root / "workloads").mkdir()
    arrays = {t: _columns(t) for t in traces} if independent else {}
    for i, doc in enumerate(docs):
        source = traces[i % len(traces)]
        if independent:
            header, stamps, values = arrays[source]
            noise = np.random.default_rng(i).integers(-1, 2, size=values.size)
            _write_csv(root / "traces" / f"w-{i}.csv", header, stamps, np.maximum(values + noise, 0))
        elif distinct:
            rows = list(lines[source])
            at = 1 + (i * 7919) % (len(rows) - 2)  # a data row: not the header, not the final empty line
            stamp, value = rows[at].split(",")
            rows[at] = f"{stamp},{int(value) + 1 + i % 5}"
            (root / "traces" / f"w-{i}.csv").write_text("\n".join(rows))
        else:
            shutil.copyfile(source, root / "traces" / f"w-{i}.csv")
        column = source.read_text().split("\n", 1)[0].split(",")[1]
        trace = f"concurrency:\n    trace: {{path: ../traces/w-{i}.csv, format: csv, timestampColumn: timestamp, columns: [{column}]}}"
        doc = re.sub(r"concurrency: \{declared: \d+\}", trace, doc)
        (root / "workloads" / f"w-{i}.yaml").write_text(doc)
    # A git repository, as under pre-commit: its top is the root --changed-files lints.
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def _columns(path: Path) -> tuple[str, np.ndarray, np.ndarray]:
    """A two-column integer CSV trace as its header line and its two columns."""
    header, body = path.read_text().split("\n", 1)
    table = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.int64, ndmin=2)
    return header, table[:, 0], table[:, 1]


def _write_csv(path: Path, header: str, stamps: np.ndarray, values: np.ndarray) -> None:
    """Write two integer columns as CSV, formatted by pyarrow (a Python loop per row takes minutes at 10,000)."""
    import pyarrow as pa
    import pyarrow.csv

    sink = io.BytesIO()
    pyarrow.csv.write_csv(pa.table({"t": stamps, "v": values}), sink,
                          write_options=pyarrow.csv.WriteOptions(include_header=False))
    path.write_bytes(header.encode() + b"\n" + sink.getvalue())


def run(root: Path, cache: Path, *args: str) -> tuple[float, bytes]:
    env = {**os.environ, "POLICYLINT_CACHE_DIR": str(cache), "NO_COLOR": "1"}
    command = [sys.executable, "-m", "policylint", "check", "--format", "json", "--now", "2026-12-01", *args]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, check=False)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    jobs = f"--jobs={args.jobs}"
    with tempfile.TemporaryDirectory() as tmp:
        root, cache = Path(tmp) / "repo", Path(tmp) / "cache"
        root.mkdir()
        build(root, args.workloads)
        one = "workloads/w-7.yaml"
        steps = [
            ("no cache, --jobs 1", [".", "--no-cache", "--jobs=1"]),
            (f"no cache, {jobs}", [".", "--no-cache", jobs]),
            (f"cold cache, {jobs}", [".", jobs]),
            ("warm cache", [".", jobs]),
            (f"--changed-files {one}, no cache", ["--changed-files", one, "--no-cache", jobs]),
            (f"--changed-files {one}, warm cache", ["--changed-files", one, jobs]),
        ]
        outputs: dict[bool, set[bytes]] = {False: set(), True: set()}
        for label, step in steps:
            seconds, out = run(root, cache, *step)
            outputs["--changed-files" in step].add(out)
            print(f"{label:45s} {seconds:6.2f} s")
        size = sum(p.stat().st_size for p in cache.rglob("*.entry"))
        print(f"cache: {len(list(cache.rglob('*.entry')))} entries, {size / 1e6:.0f} MB")
        same = all(len(v) == 1 for v in outputs.values())
        print("same report with and without the cache:", "yes" if same else "NO")


if __name__ == "__main__":
    main()
