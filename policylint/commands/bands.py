"""``policylint bands TRACE``: compute the concurrency bands of one measurement.

Prints the baseline, daily and peak bands (and their GPU equivalents), how the
trace was cleaned, the spikes above the baseline split into noise and real
bursts, queue figures and a chart. ``--format json`` prints a stable document
instead (described in docs/bands.md).

Importing this module must stay cheap: numpy, rich and the calculator are
imported inside :func:`run`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import TYPE_CHECKING, Any

from policylint.calc.settings import DEFAULT_COLD_START_SECONDS
from policylint.errors import PolicylintError
from policylint.measure.conversion import counts_gpus

if TYPE_CHECKING:
    from policylint.analysis import BandReport
    from policylint.traces import Series

NAME = "bands"
HELP = "compute baseline/daily/peak concurrency bands, spikes and queue figures from a trace"

TOP_SPIKES = 10


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {text!r}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``bands`` arguments to ``parser``."""
    parser.add_argument("trace", metavar="TRACE", nargs="?",
                        help="measurement file (CSV, Parquet, Arrow, Prometheus JSON, request log, job list);"
                        " with --pool: the repository (default .)")
    parser.add_argument("--pool", metavar="CLUSTER/POOL",
                        help="show the pooled bands of this pool of the capacity repository at TRACE (docs/pooled.md)")
    group = parser.add_argument_group("reading the trace")
    group.add_argument("--input-format", choices=("auto", "csv", "parquet", "arrow", "prometheus", "requests", "jobs"),
                       default="auto",
                       help="how to read TRACE (auto: .json is Prometheus, .parquet Parquet, .arrow/.feather Arrow,"
                            " anything else CSV; requests and jobs: concurrency of running intervals)")
    group.add_argument("--column", action="append", default=None, metavar="NAME",
                       help="value column; repeat to sum several (default: the only numeric column)")
    group.add_argument("--timestamp-column", metavar="NAME",
                       help="timestamp column (default: timestamp, time, ts, datetime, date, ... or the first column;"
                            " docs/measurements.md lists every name detected)")
    group.add_argument("--start-column", metavar="NAME",
                       help="request log or job list: start column (default: start, start_time, gmt_create, ...)")
    group.add_argument("--end-column", metavar="NAME",
                       help="request log or job list: end column (default: end, end_time, finish_time, ...)")
    group.add_argument("--duration-column", metavar="NAME",
                       help="request log: duration column (seconds; _ms, _us, _ns name suffixes are read as such)")
    group.add_argument("--timestamp-unit", choices=("s", "ms", "us", "ns"),
                       help="unit of epoch-number timestamps (default: detected from their magnitude)")
    group.add_argument("--duration-unit", choices=("s", "ms", "us", "ns"),
                       help="unit of the duration column (default: from its name, else seconds)")
    group.add_argument("--time-origin", metavar="TIME",
                       help="epoch-number timestamps are relative to TIME (ISO-8601 or unix seconds)")
    group.add_argument("--match", action="append", default=None, metavar="LABEL=VALUE",
                       help="Prometheus: use only series with this label value (repeatable)")
    group.add_argument("--where", action="append", default=None, metavar="CONDITION",
                       help="keep only rows that pass: COLUMN=V1,V2 (one of), COLUMN!=V, COLUMN>N, >=, <, <= "
                            "(repeat: all must hold; dropped rows are counted)")
    group.add_argument("--skip-incomplete", action="store_true",
                       help="skip (and count) rows with an empty required cell instead of refusing the file")
    group.add_argument("--key-column", metavar="NAME",
                       help="long table: the column naming each series (pod, instance, container_ip, ...); "
                            "Prometheus: the label")
    group.add_argument("--select", metavar="VALUE", help="long table: read the one series whose key is VALUE")
    group.add_argument("--aggregate", choices=("sum", "mean", "max"),
                       help="combine the series of a long table (or Prometheus answer) per time: sum for "
                            "concurrency and memory, mean for utilisation")
    group.add_argument("--gpus-column", metavar="NAME",
                       help="request log / job list: weigh each job by its GPUs in this column (implies --unit gpus)")
    group.add_argument("--unit", choices=("concurrency", "gpus"),
                       help="request log / job list: count jobs (concurrency) or the GPUs they hold (gpus; the "
                            "GPU column is detected: gpus, num_gpu, gpu_count, ...)")
    group.add_argument("--step", type=_positive, metavar="SECONDS",
                       help="grid step (default: median sample spacing; 1 s for request logs)")
    group.add_argument("--max-gap-steps", type=_count, default=5, metavar="N",
                       help="holes longer than N steps are excluded and reported (default 5)")
    group.add_argument("--exclude", action="append", default=None, metavar="START/END",
                       help="leave out a range, ISO dates or datetimes; a date-only END includes that day")
    calc = parser.add_argument_group("calculation")
    calc.add_argument("--cold-start", type=_positive, default=None, metavar="SECONDS",
                      help=f"time to bring up capacity; shorter spikes are noise (default {DEFAULT_COLD_START_SECONDS:g})")
    calc.add_argument("--min-window-days", type=_non_negative, default=None, metavar="N",
                      help="cleaned window needed for trustworthy bands (default: PL106's min_window_days in the"
                           " configuration governing TRACE, else 90)")
    calc.add_argument("--baseline-percentile", type=_positive, default=95.0, metavar="P",
                      help="percentile of the sustained series for the baseline band (default 95)")
    calc.add_argument("--daily-percentile", type=_positive, default=99.0, metavar="P",
                      help="percentile of the sustained series for the daily band (default 99)")
    calc.add_argument("--outlier-mad", type=_positive, metavar="K",
                      help="drop days whose mean is more than K MADs from the median day")
    calc.add_argument("--tolerance", type=_non_negative, metavar="SECONDS",
                      help="queue tolerance: report the least capacity whose wait stays within it")
    calc.add_argument("--queue-statistic", choices=("max", "p99"), default="max",
                      help="wait statistic held to the tolerance (default max)")
    calc.add_argument("--capacity", type=_non_negative, metavar="N",
                      help="report queue waits at this capacity")
    calc.add_argument("--per-gpu", type=_positive, metavar="N",
                      help="concurrency one GPU sustains in production; converts bands to GPUs")
    calc.add_argument("--gpus-per-replica", type=_count, default=1, metavar="N",
                      help="GPUs per serving replica (default 1)")
    out = parser.add_argument_group("output")
    out.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")
    out.add_argument("--plot", metavar="FILE", help="also write a chart to FILE.png or FILE.svg (needs matplotlib)")


def _matches(items: list[str] | None) -> dict[str, str] | None:
    if not items:
        return None
    out: dict[str, str] = {}
    for item in items:
        label, sep, value = item.partition("=")
        if not sep or not label.strip():
            raise PolicylintError(f"--match expects LABEL=VALUE, got {item!r}")
        out[label.strip()] = value.strip().strip('"')
    return out


def run(args: argparse.Namespace) -> int:
    """Read the trace, analyse it and print the report. Returns the exit code."""
    if args.pool is not None:
        from policylint.commands import pool_bands

        return pool_bands.run(args)
    if args.trace is None:
        raise PolicylintError("bands needs a TRACE (or --pool CLUSTER/POOL [PATH])")
    from pathlib import Path

    from policylint.analysis import analyse
    from policylint.calc.settings import BandSettings
    from policylint.model.config import load_config
    from policylint.traces import apply_exclusions, parse_exclusion

    exclusions = []
    for text in args.exclude or []:
        try:
            exclusions.append(parse_exclusion(text))
        except ValueError as exc:
            raise PolicylintError(f"--exclude: {exc}") from None
    # The trace limits come from the configuration that governs the trace's folder.
    config = load_config([Path(args.trace)])
    limits = config.trace_limits()
    settings = BandSettings(
        cold_start_seconds=DEFAULT_COLD_START_SECONDS if args.cold_start is None else args.cold_start,
        min_window_days=_min_window_days(config) if args.min_window_days is None else args.min_window_days,
        baseline_percentile=args.baseline_percentile,
        daily_percentile=args.daily_percentile,
        max_gap_steps=args.max_gap_steps,
        queue_statistic="max" if args.queue_statistic == "max" else "percentile",
        outlier_mad_k=args.outlier_mad,
    )
    from policylint.readers.progress import listen
    from policylint.report.progress import terminal_progress

    with listen(terminal_progress()):
        series = _read(args, limits)
    if counts_gpus(series.unit) and (args.per_gpu is not None or args.gpus_per_replica != 1):
        # The series counts GPUs already: converting again would double count.
        raise PolicylintError("--per-gpu and --gpus-per-replica do not apply to a GPU-weighted series "
                              "(--unit gpus / --gpus-column): its bands are GPUs already")
    report = analyse(
        series,
        settings,
        exclusions=exclusions,
        tolerance_seconds=args.tolerance,
        capacity=args.capacity,
        per_gpu=args.per_gpu,
        gpus_per_replica=args.gpus_per_replica,
    )
    # Draw what was analysed: declared exclusions and outlier days masked out.
    shown = apply_exclusions(series, report.exclusions).values
    if args.plot:
        from policylint.report.chart import save_plot

        spans = [(g.start, g.end) for g in report.gaps] + [(e.start, e.end) for e in report.exclusions]
        save_plot(args.plot, series.times, shown, _band_values(report),
                  title=f"concurrency bands: {report.source}", spans=spans)
    notes = _window_notes(report, given=args.cold_start is not None)
    if args.format == "json":
        data = report.to_dict()
        if series.notes or series.unit != "concurrency" or series.unused_gpu_column:
            data["reading"] = {"notes": [*series.notes, *_unused(series)], "unit": series.unit}
        if notes:
            data["notes"] = notes
        data["integrity"] = _integrity(series, exclusions, report, config.now)
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        _print_text(report, series, shown, plot=args.plot, notes=notes)
    return 0


def _window_notes(report: BandReport, *, given: bool) -> list[str]:
    """What the reader of these bands must know about the cold-start window they were computed with.

    A step that is not finer than the window is PL121's condition in ``check``: the
    sustained series is then the trace itself, and no spike can be shorter than the window.
    """
    from policylint.report.quantities import number as _n

    step, window = report.step_seconds, report.cold_start_seconds
    if step is None or window is None or not step >= window:
        return []
    source = "" if given else ", the default: give --cold-start with the measured one"
    note = (
        f"the cold-start window ({_n(window)} s{source}) is not longer than the trace's {_n(step)} s step:"
        " every sample counts as sustained, so no spike can be noise and the bands are percentiles of the raw samples"
        " (check reports this as PL121)"
    )
    return [note]


def _min_window_days(config: Any) -> float:
    """The minimum window ``check`` holds this trace's workload to: PL106's configured option, else 90 days.

    The configuration that governs the trace's folder is the one ``check`` reads
    for the repository there, so both say the same about the same window.
    """
    from policylint.calc.settings import MIN_WINDOW_DAYS

    keys = ["PL106"]
    if any(not str(key).upper().startswith("PL") for key in config.rules):
        # overrides may name the rule instead of giving its code: the name is the rule file's
        from policylint.resources import rules_dir
        from policylint.engine.ruleset import load_rules

        keys += [rule.name for rule in load_rules([rules_dir()]).rules.values() if rule.code == "PL106"]
    for key in keys:
        value = (config.rules.get(key) or {}).get("min_window_days")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return MIN_WINDOW_DAYS


def _integrity(series: Series, exclusions: list[Any], report: BandReport, now: Any) -> dict[str, Any]:
    """The integrity facts of the trace (:mod:`policylint.measure.integrity`), the same a workload view gets.

    Judged at the configured ``now``, else the real present.
    """
    import datetime as dt

    from policylint.measure.integrity.timing import pulled_range_outside
    from policylint.measure.integrity.workload import series_facts, workload_facts

    spans = [(float(e.start), float(e.end)) for e in exclusions]
    stored = series_facts(series, spans)
    when = now if isinstance(now, dt.datetime) else dt.datetime.now(dt.timezone.utc)
    out = workload_facts(stored, when.timestamp(), len(report.outlier_days))
    from pathlib import Path

    from policylint.measure.sources.provenance import read_record

    out.pulled_range_outside_seconds = pulled_range_outside(stored, read_record(Path(series.source))[0])
    return dict(out)


def _unused(series: Series) -> list[str]:
    """The note for a job list counted by jobs although it has a GPU column."""
    if series.unused_gpu_column is None:
        return []
    return [f"jobs counted, not GPUs: column '{series.unused_gpu_column}' not used (--unit gpus weighs jobs by it)"]


def _read(args: argparse.Namespace, limits: Any) -> Series:
    """The trace, read with every input option of the command line."""
    from policylint.readers import parse_where_text
    from policylint.traces import read_series

    return read_series(
        args.trace,
        format=args.input_format,
        timestamp_column=args.timestamp_column,
        value_columns=args.column,
        start_column=args.start_column,
        end_column=args.end_column,
        duration_column=args.duration_column,
        match=_matches(args.match),
        step_seconds=args.step,
        max_gap_steps=args.max_gap_steps,
        timestamp_unit=args.timestamp_unit,
        duration_unit=args.duration_unit,
        time_origin=args.time_origin,
        limits=limits,
        where=parse_where_text(args.where) if args.where else None,
        skip_incomplete=args.skip_incomplete,
        key_column=args.key_column,
        key_select=args.select,
        aggregate=args.aggregate,
        gpus_column=args.gpus_column,
        unit=args.unit,
    )


def _band_values(report: BandReport) -> dict[str, float]:
    return {"baseline": report.baseline, "daily": report.daily, "peak": report.peak}


def _print_text(report: BandReport, series: Series, shown: Any, *, plot: str | None, notes: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    from policylint.report.chart import draw, to_rich
    from policylint.report.quantities import duration as _duration
    from policylint.report.quantities import number as _n
    from policylint.traces import format_time

    console = Console(no_color="NO_COLOR" in os.environ or None, highlight=False, soft_wrap=True, file=sys.stdout)
    unit = " (GPUs: jobs weighted by their GPU count)" if counts_gpus(series.unit) else ""
    console.print(f"[bold]Concurrency bands[/bold] for {report.source}{unit}")
    for note in [*series.notes, *_unused(series)]:
        console.print(f"  read: {note}", markup=False)

    bands = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
    bands.add_column("band")
    bands.add_column("concurrency", justify="right")
    if report.bands_gpus is not None:
        bands.add_column("GPUs", justify="right")
    bands.add_column("meaning")
    meaning = {
        "baseline": f"p{_n(report.baseline_percentile)} of sustained load; reserved",
        "daily": f"p{_n(report.daily_percentile)} of sustained load; elastic",
        "peak": "max observed; queue or reject",
    }
    for name, value in _band_values(report).items():
        row = [name, _n(value)]
        if report.bands_gpus is not None:
            row.append(str(report.bands_gpus[name]))
        row.append(meaning[name])
        bands.add_row(*row)
    console.print(bands)
    if report.bands_gpus is not None:
        console.print(
            f"GPUs = ceil(concurrency / {_n(report.per_gpu or 0)}) x {report.gpus_per_replica} per replica"
        )

    console.print()
    console.print("[bold]Window and cleaning[/bold]")
    verdict = "meets" if report.meets_window else "[bold red]SHORTER THAN[/bold red]"
    console.print(
        f"  {report.window_days:.1f} days of valid samples, {verdict} the {_n(report.min_window_days)}-day minimum"
        f" ({format_time(report.first)} .. {format_time(report.last)})"
    )
    console.print(
        f"  step {_n(report.step_seconds)} s, {report.samples:,} samples: {report.valid_samples:,} used,"
        f" {report.gap_samples:,} in gaps, {report.excluded_samples:,} excluded"
    )
    if report.gaps:
        console.print(f"  {len(report.gaps)} gap(s) longer than the limit, excluded not filled:")
        for gap in report.gaps[:5]:
            console.print(f"    {format_time(gap.start)} .. {format_time(gap.end)} ({_duration(gap.seconds)})")
        if len(report.gaps) > 5:
            console.print(f"    ... and {len(report.gaps) - 5} more")
    for excl in report.exclusions:
        if excl.label not in ("outlier day", "flat day"):
            console.print(f"  excluded {format_time(excl.start)} .. {format_time(excl.end)}")
    if report.flat_days:
        flat = ", ".join(format_time(d)[:10] for d in report.flat_days[:5])
        more = f" and {len(report.flat_days) - 5} more" if len(report.flat_days) > 5 else ""
        console.print(f"  flat days dropped (constant all day: padding or a dead exporter): {flat}{more}")
    if report.outlier_days:
        days = ", ".join(format_time(d)[:10] for d in report.outlier_days)
        console.print(f"  outlier days dropped: {days}")

    console.print()
    total = len(report.spikes)
    console.print(
        f"[bold]Spikes above baseline[/bold]: {total} ({report.real_spike_count} real bursts,"
        f" {report.noise_spike_count} noise narrower than the {_n(report.cold_start_seconds)} s cold start;"
        f" widest noise {_duration(report.widest_noise_width)})"
    )
    for note in notes:
        console.print(f"  note: {note}", markup=False)
    if total:
        table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
        for title, justify in (("start (UTC)", "left"), ("width", "right"), ("height", "right"),
                               ("volume", "right"), ("kind", "left")):
            table.add_column(title, justify=justify)  # type: ignore[arg-type]
        # only the few shown are built as objects: a trace may have thousands of spikes
        for spike in report.spikes.widest(TOP_SPIKES):
            table.add_row(
                format_time(spike.start),
                _duration(spike.width_seconds),
                _n(spike.height),
                f"{_n(spike.volume)} conc-s",
                "noise" if spike.noise else "[bold]burst[/bold]",
            )
        console.print(table)
        if total > TOP_SPIKES:
            console.print(f"  ... and {total - TOP_SPIKES} more (see --format json)")

    console.print()
    console.print("[bold]Queue[/bold] (fluid model, wait ~ backlog / capacity)")
    if report.baseline_queue is not None:
        q = report.baseline_queue
        console.print(
            f"  at the baseline capacity {_n(q.capacity)}: max wait {_duration(q.max_wait)},"
            f" p99 wait {_duration(q.p99_wait)}"
        )
    if report.queue is not None:
        q = report.queue
        console.print(
            f"  at capacity {_n(q.capacity)}: max wait {_duration(q.max_wait)}, p99 wait {_duration(q.p99_wait)}"
        )
    if report.tolerance_seconds is not None:
        stat = "max" if report.queue_statistic == "max" else "p99"
        console.print(
            f"  least capacity with {stat} wait <= {_duration(report.tolerance_seconds)}:"
            f" [bold]{report.capacity_for_tolerance}[/bold]"
        )

    console.print()
    width = max(20, min(72, console.width - 10))
    chart = draw(
        shown,
        _band_values(report),
        first_label=format_time(series.times[0])[:10],
        last_label=format_time(series.times[-1])[:10],
        width=width,
        height=16,
    )
    console.print(to_rich(chart))
    if plot:
        console.print(f"chart written to {plot}")
