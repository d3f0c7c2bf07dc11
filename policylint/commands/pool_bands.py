"""``policylint bands --pool CLUSTER/POOL [PATH]``: one pool's pooled bands.

Reads the capacity repository at PATH the way ``check`` does, measures the workloads
of the pool and prints the bands of their pooled GPU demand (docs/pooled.md) beside
the sum of their own bands, the pool's spikes and queue, and a chart of the pooled
series. ``--format json`` prints the same as a stable document.

Not a subcommand of its own: ``policylint bands`` dispatches here when ``--pool`` is
given. Heavy imports stay inside :func:`run`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.errors import PolicylintError

if TYPE_CHECKING:
    from policylint.measure.facts import PoolFacts, WorkloadFacts
    from policylint.model import Model, Pool

BANDS = ("baseline", "daily", "peak", "sustained_max")


def _find_pool(model: Model, name: str) -> Pool:
    cluster, sep, pool = name.partition("/")
    if not sep or not cluster or not pool:
        raise PolicylintError(f"--pool expects CLUSTER/POOL, got {name!r}")
    for candidate in model.pools:
        if candidate.qualified == name:
            return candidate
    known = ", ".join(sorted(p.qualified for p in model.pools)) or "none"
    raise PolicylintError(f"no pool {name!r} in the repository (pools: {known})")


def _own_bands(pool: Pool, facts: dict[str, WorkloadFacts]) -> dict[str, dict[str, Any]]:
    """Each workload's own GPU bands (what the pool used to be sized from).

    Converted as ``check`` converts them (:func:`policylint.measure.conversion.gpu_conversion`):
    a GPU-weighted trace is GPUs already.
    """
    import numpy as np

    from policylint.calc.gpus import gpus_for
    from policylint.measure.conversion import gpu_conversion

    out: dict[str, dict[str, Any]] = {}
    for w in sorted(pool.workloads, key=lambda w: w.name):
        f = facts[w.name]
        r = f.report
        per_gpu, replicas = gpu_conversion(w, f.trace_unit)
        if r is None or per_gpu is None:
            out[w.name] = {"measured": False}
            continue
        values = [r.baseline, r.daily, r.peak, r.sustained_max]
        gpus = [int(g) for g in gpus_for(np.array(values), per_gpu, replicas)]
        out[w.name] = {
            "measured": True,
            "step_seconds": r.step_seconds,
            "cold_start_seconds": r.cold_start_seconds,
            "bands_gpus": dict(zip(BANDS, gpus, strict=True)),
        }
    return out


def _pulled(pool: Pool, name: str, stored: dict[str, Any] | None) -> float | None:
    """How far the workload's trace reaches beyond the range its pull recorded (see policylint.measure.integrity.timing)."""
    from policylint.measure.integrity.timing import pulled_range_outside
    from policylint.measure.sources.provenance import read_record

    ref = next((w for w in pool.workloads if w.name == name)).measurements.get("concurrency")
    if ref is None or ref.path is None:
        return None
    return pulled_range_outside(stored, read_record(ref.path)[0])


def _add_integrity(
    own: dict[str, dict[str, Any]], facts: dict[str, WorkloadFacts], now: Any, pool: Pool | None = None
) -> None:
    """Each measured workload's integrity facts (:mod:`policylint.measure.integrity`), as ``check`` judges them."""
    from policylint.measure.integrity.workload import workload_facts

    for name, entry in own.items():
        f = facts[name]
        if entry.get("measured") and f.integrity is not None:
            outliers = len(f.report.outlier_days) if f.report is not None else None
            found = workload_facts(f.integrity, now.timestamp(), outliers)
            if pool is not None:
                found.pulled_range_outside_seconds = _pulled(pool, name, f.integrity)
            entry["integrity"] = dict(found)


def _document(pool: Pool, pooled: PoolFacts, own: dict[str, dict[str, Any]]) -> dict[str, Any]:
    summed: dict[str, int] | None = None
    if pooled.member_sums is not None and None not in pooled.member_sums:
        # The figures `check` compares with: each workload alone at the pool's cold start.
        summed = {b: int(v) for b, v in zip(BANDS, pooled.member_sums, strict=True) if v is not None}
    return {
        "pool": pool.qualified,
        "capacity": {
            "reserved_gpus": pool.reserved_gpus, "elastic_gpus": pool.elastic_gpus, "total_gpus": pool.capacity_gpus
        },
        "workloads": own,
        "sum_of_workload_bands_gpus": summed,
        "pooled": None if pooled.report is None else pooled.report.to_dict(),
    }


def run(args: argparse.Namespace) -> int:
    """Measure the pool named by ``args.pool`` in the repository ``args.trace`` (default .)."""
    import datetime as dt

    from policylint.model.config import load_config
    from policylint.engine.linter import LintOptions, lint
    from policylint.measure.pools import measure_pool
    from policylint.measure.run import measure

    path = Path(args.trace or ".")
    if not path.exists():
        raise PolicylintError(f"path not found: {path}")
    config = load_config([path])
    now = config.now or dt.datetime.now(dt.timezone.utc)
    result = lint(
        [path], LintOptions(root=config.root, exclude=config.exclude, now=now, gpu_resources=tuple(config.gpu_resources))
    )
    model = result.model
    if model is None:  # pragma: no cover - lint always builds a model
        raise PolicylintError(f"no capacity repository at {path}")
    pool = _find_pool(model, args.pool)
    facts, _ = measure(model, now, limits=config.trace_limits())
    pooled = measure_pool(pool, facts)
    own = _own_bands(pool, facts)
    _add_integrity(own, facts, now, pool)
    if not pool.workloads:
        raise PolicylintError(f"pool {pool.qualified} has no workloads: its GPUs have no measured demand (PL110)")
    if pooled.report is None:
        missing = ", ".join(pooled.unknown)
        raise PolicylintError(
            f"pool {pool.qualified}: no pooled demand while these workloads have no measured GPU demand"
            f" (readable trace and perGpuConcurrency): {missing}"
        )
    doc = _document(pool, pooled, own)
    if args.plot and pooled.grid is not None and pooled.report.baseline is not None:
        from policylint.report.chart import save_plot

        save_plot(args.plot, pooled.grid.times, pooled.grid.pooled, _bands(pooled),
                  title=f"pooled GPU demand: {pool.qualified}", ylabel="GPUs")
    if args.format == "json":
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        _print_text(pool, pooled, doc, plot=args.plot)
    return 0


def _bands(pooled: PoolFacts) -> dict[str, float]:
    r = pooled.report
    assert r is not None and r.baseline is not None and r.daily is not None and r.peak is not None
    return {"baseline": r.baseline, "daily": r.daily, "peak": r.peak}


def _print_text(pool: Pool, pooled: PoolFacts, doc: dict[str, Any], *, plot: str | None) -> None:
    from rich.console import Console
    from rich.table import Table

    from policylint.report.chart import draw, to_rich
    from policylint.report.quantities import duration as _duration
    from policylint.report.quantities import number as _n
    from policylint.traces import format_time

    r = pooled.report
    assert r is not None
    console = Console(no_color="NO_COLOR" in os.environ or None, highlight=False, soft_wrap=True, file=sys.stdout)
    from rich.markup import escape

    from policylint.report.safe_text import escape_controls

    # names and paths are the user's: control characters escaped, and never read as rich markup
    console.print(f"[bold]Pooled demand[/bold] of pool {escape(escape_controls(pool.qualified))} ({len(r.members)} workloads)")
    from policylint.measure.cold_start import pool_cold_start_source

    source = pool_cold_start_source(pool)
    console.print(
        f"  common grid: {_n(r.step_seconds)} s steps (the finest workload step);"
        f" cold start {_n(r.cold_start_seconds)} s ({source})"
    )
    if r.first is not None and r.last is not None:
        console.print(
            f"  {r.window_days:.1f} days in which every workload has a usable sample"
            f" ({format_time(r.first)} .. {format_time(r.last)}; {r.valid_samples:,} of {r.samples:,} grid points)"
        )
    else:
        console.print("  [bold red]the workloads' traces never overlap: no pooled window[/bold red]")
    if r.baseline is None:
        console.print("  no stretch as long as the cold start in which every workload has a sample: no pooled bands")
        return
    summed = doc["sum_of_workload_bands_gpus"] or {}
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
    for title, justify in (("band", "left"), ("pooled GPUs", "right"), ("sum of workload bands", "right"),
                           ("pooling saves", "right")):
        table.add_column(title, justify=justify)  # type: ignore[arg-type]
    pooled_values = {"baseline": r.baseline, "daily": r.daily, "peak": r.peak, "sustained_max": r.sustained_max}
    for band in BANDS:
        value = pooled_values[band]
        total = summed.get(band)
        saved = "" if total is None or value is None else _n(total - value)
        table.add_row(band.replace("_", " "), _n(value or 0), "" if total is None else _n(total), saved)
    console.print(table)
    console.print()
    members = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
    for title, justify in (("workload", "left"), ("step", "right"), ("baseline", "right"), ("daily", "right"),
                           ("peak", "right"), ("sustained max", "right")):
        members.add_column(title, justify=justify)  # type: ignore[arg-type]
    for name, own in doc["workloads"].items():
        g = own["bands_gpus"]
        members.add_row(name, f"{_n(own['step_seconds'])} s", *(str(g[b]) for b in BANDS))
    console.print("[bold]Each workload alone[/bold] (GPUs, its own step and cold start)")
    console.print(members)
    console.print()
    cap = doc["capacity"]
    console.print(
        f"[bold]Capacity[/bold]: reserved {cap['reserved_gpus']} + elastic {cap['elastic_gpus']} = {cap['total_gpus']} GPUs"
    )
    console.print(
        f"[bold]Spikes above the pooled baseline[/bold]: {r.real_spike_count} real bursts, {r.noise_spike_count} noise"
        f" (narrower than {_n(r.cold_start_seconds)} s); highest +{_n(r.highest_spike)} GPUs"
    )
    if r.queue is not None and r.daily_queue is not None:
        console.print(
            f"[bold]Queue[/bold] at {_n(cap['total_gpus'])} GPUs: daily-band demand waits up to"
            f" {_duration(r.daily_queue.max_wait)}; all demand, peak band included, up to {_duration(r.queue.max_wait)}"
        )
    console.print()
    grid = pooled.grid
    assert grid is not None
    width = max(20, min(72, console.width - 10))
    chart = draw(
        grid.pooled,
        _bands(pooled),
        first_label=format_time(grid.times[0])[:10] if grid.times.size else "",
        last_label=format_time(grid.times[-1])[:10] if grid.times.size else "",
        width=width,
        height=16,
        series_label="pooled GPUs (column range)",
    )
    console.print(to_rich(chart))
    if plot:
        console.print(f"chart written to {escape(escape_controls(str(plot)))}")
