"""Pools on the review page: the summary table, and each pool's section with its pooled demand chart.

A pool's section shows its capacity, the pooled demand curve with its bands
and the capacity lines over it (:mod:`policylint.report.svg_chart`), the bands
and how each is computed, the queue's waits, and the findings about the pool
and its workloads. The chart pieces are shared with the change section.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from policylint.report.html_findings import Subjects, findings_list
from policylint.report.html_parts import SourceLinks, attr, cell, duration, esc, num

if TYPE_CHECKING:
    from policylint.engine.view import View
    from policylint.measure.facts import PoolFacts


def _delta(value: int | None) -> str:
    if value is None:
        return "–"
    css = "delta-over" if value > 0 else "delta-under" if value < 0 else "delta-zero"
    return f'<span class="{css}">{value:+d}</span>' if value else f'<span class="{css}">0</span>'


def pool_table(subjects: Subjects) -> str:
    """Every pool in one table: its capacity, its pooled bands and the difference."""
    rows = []
    for name in sorted(subjects.pools):
        f = subjects.pools[name].facts
        base, daily = f["baseline_gpus"], f["daily_gpus"]
        delta = None if base is None else f["reserved_gpus"] - base
        delta_cap = None if daily is None else f["capacity_gpus"] - daily
        n_findings = len(subjects.about(subjects.pools[name].label))
        rows.append(
            f'<tr data-pool="{esc(name)}" data-reserved-gpus="{f["reserved_gpus"]}" data-elastic-gpus="{f["elastic_gpus"]}"'
            f' data-capacity-gpus="{f["capacity_gpus"]}" data-proposed-gpus="{f["proposed_gpus"]}"'
            f' data-baseline-gpus="{attr(base)}" data-daily-gpus="{attr(daily)}" data-peak-gpus="{attr(f["peak_gpus"])}"'
            f' data-reserved-delta="{attr(delta)}" data-capacity-delta="{attr(delta_cap)}" data-findings="{n_findings}">'
            + cell("pool", f'<a href="#pool-{esc(name)}">{esc(name)}</a>')
            + cell("workloads", str(f["workload_count"]), "num")
            + cell("reserved", num(f["reserved_gpus"]), "num")
            + cell("elastic", num(f["elastic_gpus"]), "num")
            + cell("proposed", num(f["proposed_gpus"]), "num")
            + cell("justified reserved (pooled baseline)", num(base), "num")
            + cell("justified reserved + elastic (pooled daily)", num(daily), "num")
            + cell("pooled peak", num(f["peak_gpus"]), "num")
            + cell("delta reserved", _delta(delta), "num")
            + cell("delta reserved + elastic", _delta(delta_cap), "num")
            + cell("findings", str(n_findings), "num")
            + "</tr>"
        )
    if not rows:
        return '<p class="muted">No pools.</p>'
    return (
        '<table class="pools stack"><thead><tr><th>pool</th><th class="num">workloads</th>'
        '<th class="num">reserved</th><th class="num">elastic</th><th class="num">proposed</th>'
        '<th class="num">justified reserved<br>(pooled baseline)</th>'
        '<th class="num">justified reserved + elastic<br>(pooled daily)</th><th class="num">pooled peak</th>'
        '<th class="num">delta reserved</th><th class="num">delta reserved + elastic</th>'
        '<th class="num">findings</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>"
        '<p class="muted">GPUs. Delta = what the pool has minus what its pooled bands justify: '
        "positive is capacity beyond the band (money spent on the peak), negative is a shortfall. "
        "The rules allow a headroom above the band (PL101, PL102) before they report it.</p>"
    )


def pool_lines(f: Mapping[str, Any]) -> list[Any]:
    """The capacity lines drawn over a pool's chart: today's, proposed and justified."""
    from policylint.report.svg_chart import Line

    lines = [
        Line("reserved", float(f["reserved_gpus"]), "reserved"),
        Line("reserved + elastic", float(f["capacity_gpus"]), "capacity"),
    ]
    if f["proposed_gpus"]:
        lines.append(Line("reserved + proposed", float(f["reserved_gpus"] + f["proposed_gpus"]), "proposed"))
    if f["baseline_gpus"] is not None:
        lines.append(Line("justified reserved", float(f["baseline_gpus"]), "justified"))
    if f["daily_gpus"] is not None:
        lines.append(Line("justified reserved + elastic", float(f["daily_gpus"]), "justified-total"))
    return lines


LEGEND = (
    '<div class="legend">'
    '<span><i class="swatch" style="background:#2b6cb0"></i>pooled GPU demand (lowest–highest per pixel column)</span>'
    '<span><i class="swatch" style="background:#dcefe0"></i>baseline band</span>'
    '<span><i class="swatch" style="background:#fbefcf"></i>daily band</span>'
    '<span><i class="swatch" style="background:#f8dcdc"></i>peak band</span>'
    "</div>"
)


def no_curve(f: Mapping[str, Any]) -> str:
    """Why a pool has no pooled demand curve."""
    missing = ", ".join(esc(w) for w in f["unmeasured_workloads"])
    return (
        f"workloads without measured GPU demand: {missing}"
        if missing
        else "no stretch as long as the cold start in which every workload has a sample"
        if f["workload_count"]
        else "no workloads"
    )


def has_curve(f: Mapping[str, Any], pooled: PoolFacts | None) -> bool:
    """Whether the pool has a pooled demand curve with bands to draw."""
    return (
        pooled is not None
        and pooled.report is not None
        and pooled.grid is not None
        and pooled.report.baseline is not None
        and f["baseline_gpus"] is not None
    )


def bands(f: Mapping[str, Any]) -> dict[str, float]:
    """The pool's pooled bands, as the chart shades them."""
    return {"baseline": float(f["baseline_gpus"]), "daily": float(f["daily_gpus"]), "peak": float(f["peak_gpus"])}


def chart(f: Mapping[str, Any], pooled: PoolFacts, title: str, y_top: float | None = None) -> tuple[str, str]:
    """(the chart in its box, the sentence on how it was sampled) of a pool with a pooled curve."""
    from policylint.report.svg_chart import pool_chart

    report, grid = pooled.report, pooled.grid
    assert report is not None and grid is not None
    svg, down = pool_chart(grid.times, grid.pooled, bands(f), pool_lines(f), title=title, y_top=y_top)
    per_column = down.samples_per_column
    if per_column > 1:
        sampling = (
            f"Downsampled: {grid.times.size:,} samples at {num(report.step_seconds)} s steps drawn in "
            f"{down.low.size:,} columns (about one screen pixel each) of about {per_column:,.0f} samples "
            f"({duration(per_column * report.step_seconds)}) each; every column spans the lowest to the highest "
            "sample it covers, so no peak is lost"
        )
    else:
        sampling = f"{grid.times.size:,} samples at {num(report.step_seconds)} s steps, one column each"
    key = "".join(
        f'<li><i class="key {ln.css}"></i>{esc(ln.label)} <b>{num(ln.value)}</b></li>' for ln in pool_lines(f)
    )
    # the chart labels its lines on the right; a narrow screen hides them and shows this list instead
    return f'<div class="chart-box">{svg}</div><ul class="line-key">{key}</ul>', sampling


def pool_section(view: View, pooled: PoolFacts | None, subjects: Subjects, links: SourceLinks) -> str:
    """One pool's section: capacity, chart, bands, waits and findings."""
    f = view.facts
    name = f["qualified"]
    head = (
        f'<section class="pool" id="pool-{esc(name)}" data-pool="{esc(name)}" data-reserved-gpus="{f["reserved_gpus"]}"'
        f' data-elastic-gpus="{f["elastic_gpus"]}" data-capacity-gpus="{f["capacity_gpus"]}"'
        f' data-proposed-gpus="{f["proposed_gpus"]}" data-baseline-gpus="{attr(f["baseline_gpus"])}"'
        f' data-daily-gpus="{attr(f["daily_gpus"])}" data-peak-gpus="{attr(f["peak_gpus"])}"'
        f' data-sustained-max-gpus="{attr(f["sustained_max_gpus"])}">'
        f"<h3>Pool {esc(name)}</h3>"
    )
    workloads = ", ".join(esc(w) for w in f["workload_names"]) or "none"
    parts = [
        head,
        f'<p>Workloads: {workloads}. Capacity: reserved {num(f["reserved_gpus"])} + elastic '
        f'{num(f["elastic_gpus"])} = {num(f["capacity_gpus"])} GPUs'
        + (f'; proposals ask {num(f["proposed_gpus"])} more' if f["proposed_gpus"] else "")
        + (f'; overflow: {esc(f["overflow"])}' if f["overflow"] else "")
        + ".</p>",
    ]
    if pooled is None or not has_curve(f, pooled):
        parts.append(f'<p class="muted">No pooled demand curve: {no_curve(f)}.</p>')
    else:
        report = pooled.report
        assert report is not None
        svg, sampling = chart(f, pooled, f"pooled GPU demand of pool {name}")
        parts += [
            LEGEND,
            svg,
            f'<p class="muted">{sampling}. Empty columns are gaps: instants at which some workload of the pool '
            "has no usable sample.</p>",
            '<table class="bands stack"><thead><tr><th>band</th><th class="num">pooled GPUs</th>'
            '<th class="num">sum of workload bands</th><th>how it is computed</th></tr></thead><tbody>'
            + "".join(
                "<tr>" + cell("band", band) + cell("pooled GPUs", num(f[f"{band}_gpus"]), "num")
                + cell("sum of workload bands", num(f[f"{band}_gpus_sum"]), "num") + cell("how it is computed", how)
                + "</tr>"
                for band, how in (
                    ("baseline", "p95 of the sustained pooled demand (lowest level over each cold-start window)"),
                    ("daily", "p99 of the sustained pooled demand"),
                    ("peak", "highest pooled demand"),
                )
            )
            + "</tbody></table>",
            f'<p>Pooled window {num(report.window_days)} days on a {num(report.step_seconds)} s grid; cold start '
            f'{num(report.cold_start_seconds)} s. Spikes above the pooled baseline: {report.real_spike_count} real, '
            f"{report.noise_spike_count} noise (narrower than the cold start). Queue at {num(f['capacity_gpus'])} GPUs: "
            f"daily-band demand waits up to {duration(f['daily_max_wait_seconds'])}, all demand up to "
            f"{duration(f['max_wait_seconds'])}.</p>",
        ]
    parts.append("<h4>Findings about this pool</h4>")
    parts.append(findings_list(subjects.about(view.label), links))
    about_workloads = [x for w in f["workload_names"] for x in subjects.about(f"workload {w}")]
    if about_workloads:
        parts.append("<h4>Findings about its workloads</h4>")
        parts.append(findings_list(about_workloads, links))
    parts.append("</section>")
    return "".join(parts)
