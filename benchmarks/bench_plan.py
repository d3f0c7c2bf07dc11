"""Benchmark ``policylint plan``'s pooling search on one group of many workloads.

Not a test. Run from the repository root::

    python benchmarks/bench_plan.py                      # 48 and 200 workloads, interactive tier
    python benchmarks/bench_plan.py --workloads 48 --rounds 3
    python benchmarks/bench_plan.py --tolerance 0.5      # a real-time group (overflow rejected)
    python benchmarks/bench_plan.py --profile            # where build_plan spends its time

Each case generates a repository of N inference workloads placed in one pool of one cluster,
so that every one of them falls into the same planning group (class, GPU, gang needs and
tolerance tier): 92 days of 5-minute concurrency samples each, a flat level plus a daily
burst whose hour, width and height vary from workload to workload (seeded, so every run
plans the same repository). Reading, linting and measuring the repository are not timed.

Two figures are timed, as the median wall and CPU time over ``--rounds`` (on a shared
machine the CPU time is the steadier of the two):

* **plan** - :func:`policylint.plan.build_plan` on the measured facts: grouping, the
  pairwise pooling search and the sizing of the final pools (what this benchmark is for);
* **one analysis** - one band analysis of the pooled series of the whole group
  (:func:`policylint.measure.pooled.pool_series`: the common grid, the pooled series and its
  bands, spikes and queue, for one pool holding every workload): the unit the plan is
  compared with. The ratio plan / one analysis says how many pooled
  analyses the search costs.

``--size-queues-by-tolerance`` times the plan with that option (queued pools sized to the
tightest tolerance), whose search also bisects a queue per candidate pool.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

STEP = 300
END = 1_796_083_200  # 2026-12-01T00:00:00Z
DAYS = 92


def make_repo(dest: Path, n: int, tolerance: float, seed: int = 7) -> Path:
    """N inference workloads in one pool of cluster ``east``, each with its own daily burst."""
    rng = np.random.default_rng(seed)
    (dest / "clusters").mkdir(parents=True)
    (dest / "workloads").mkdir()
    (dest / "measurements").mkdir()
    (dest / ".policylint.yaml").write_text('now: "2026-12-01"\n', encoding="utf-8")
    cluster = {
        "apiVersion": "policylint/v1",
        "kind": "Cluster",
        "metadata": {"name": "east"},
        "spec": {
            "pools": [
                {"name": "all", "gpu": {"model": "H100-SXM-80GB", "memoryGiB": 80}, "reservedGpus": 10 * n, "serves": ["inference"]}
            ]
        },
    }
    (dest / "clusters" / "east.yaml").write_text(yaml.safe_dump(cluster, sort_keys=False), encoding="utf-8")
    t = np.arange(END - DAYS * 86_400, END, STEP, dtype=np.int64)
    minute = (t % 86_400) // 60
    for i in range(n):
        name = f"w{i:03d}"
        level = int(rng.integers(1, 20))
        burst = int(rng.integers(1, 30))
        hour = int(rng.integers(0, 24))
        width = int(rng.choice([30, 60, 120, 240]))
        busy = (minute >= hour * 60) & (minute < hour * 60 + width)
        values = level + burst * busy.astype(np.int64)
        lines = ["timestamp,in_flight"] + [f"{a},{b}" for a, b in zip(t.tolist(), values.tolist())]
        (dest / "measurements" / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        spec: dict[str, Any] = {
            "class": "inference",
            "cluster": "east",
            "pool": "all",
            "gpusPerReplica": 1,
            "concurrency": {"trace": {"path": f"../measurements/{name}.csv", "columns": ["in_flight"]}},
            "perGpuConcurrency": {"value": int(rng.choice([1, 2, 4])), "measuredIn": "production", "source": "load test"},
            "coldStartSeconds": 600,
            "tolerance": {"maxQueueSeconds": tolerance, "evidence": {"objectiveSeconds": tolerance + 1, "serviceSeconds": 1}},
            "vram": {"residentGiB": 10, "residencySeconds": 86400, "activeComputeSeconds": 60000},
        }
        doc = {"apiVersion": "policylint/v1", "kind": "Workload", "metadata": {"name": name}, "spec": spec}
        (dest / "workloads" / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return dest


def measured(repo: Path) -> tuple[Any, Any, Any]:
    """The repository's model, measured facts and rule thresholds, as ``plan`` gets them."""
    from policylint.measure.run import measure
    from policylint.plan import Thresholds
    from policylint.session import Session

    session = Session.from_args(argparse.Namespace(paths=[repo], config=None, isolated=False, root=None, now=None))
    now = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
    session.options.now = now
    result = session.lint()
    model = result.model
    facts, _ = measure(model, now, limits=session.config.trace_limits())
    ruleset = session.options.ruleset
    return model, facts, Thresholds.from_params(ruleset.params if ruleset is not None else {})


def median_time(fn: Any, rounds: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``fn()`` over ``rounds`` calls."""
    walls, cpus = [], []
    for _ in range(rounds):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def case(n: int, args: argparse.Namespace) -> None:
    from policylint import plan as planning
    from policylint.measure.cold_start import pool_cold_start
    from policylint.measure.pooled import GpuMember, pool_series

    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        repo = make_repo(Path(tmp) / "r", n, args.tolerance)
        model, facts, th = measured(repo)
        if model is None or len(facts) != n:
            raise SystemExit("the generated repository did not load: run `policylint check` on it")
        extra: dict[str, Any] = {}
        if args.size_queues_by_tolerance:
            extra["size_queues_by_tolerance"] = True
        whatif = planning.WhatIf(**extra)

        def run() -> Any:
            return planning.build_plan(model, facts, whatif, th)

        (pool,) = model.pools
        members = [
            GpuMember(name=name, times=f.demand.axis(), values=f.demand.gpus, step_seconds=f.demand.step_seconds,
                      per_gpu=float(model.workloads[name].spec["perGpuConcurrency"]["value"]), gpus=f.demand.gpus)
            for name, f in sorted(facts.items())
        ]
        cold = pool_cold_start(pool)
        one, one_cpu = median_time(lambda: pool_series(members, cold), args.rounds)
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            result = run()
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        wall, cpu = median_time(run, args.rounds)
        result = run()
        pools = [p for p in result.pools if p.measured]
        sizes = sorted((len(p.members) for p in pools), reverse=True)
        print(
            f"{n:4d} workloads: plan {wall:7.2f} s wall, {cpu:7.2f} s CPU   one pooled analysis {one * 1000:6.1f} ms wall,"
            f" {one_cpu * 1000:6.1f} ms CPU   ratio (CPU) {cpu / max(one_cpu, 1e-9):7.1f}   -> {len(pools)} pools (sizes {sizes[:8]}{' ...' if len(sizes) > 8 else ''}),"
            f" {sum(p.capacity for p in pools)} GPUs"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, action="append", help="workloads in the group (repeatable; default 48 and 200)")
    parser.add_argument("--tolerance", type=float, default=30.0, help="every workload's maxQueueSeconds (default 30: interactive, queued)")
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds per case; the median is shown (default 1)")
    parser.add_argument("--size-queues-by-tolerance", action="store_true", help="plan with that option")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one plan per case")
    args = parser.parse_args()
    print(
        f"policylint plan benchmark - python {platform.python_version()}, numpy {np.__version__},"
        f" {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; tolerance {args.tolerance:g} s,"
        f" {DAYS} days at {STEP} s steps"
    )
    for n in args.workloads or [48, 200]:
        case(n, args)


if __name__ == "__main__":
    sys.exit(main())
