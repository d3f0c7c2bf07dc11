"""``policylint report --html``: one self-contained page for a procurement review.

The page is built from one linting run (:class:`policylint.engine.linter.LintResult`):
the findings, the views the rules judged and the pooled demand of every pool.
It shows

- a summary of every pool (reserved, elastic, justified, delta) and of the
  findings by rule;
- per cluster and pool, the pooled demand curve with its bands and the current,
  proposed and justified capacity over it (static SVG, see
  :mod:`policylint.report.svg_chart`), and the findings about the pool;
- per proposal, each request against the pooled baseline shortfall with the
  arithmetic written out, the verdict and the findings that drive it.

Every number on the page is read from the run's facts, the same ones the rules
judged and ``check --format json`` / ``bands --pool --format json`` print; the
only arithmetic done here is the proposal's shortfall and allowance, by the
formula of PL801, so that a reviewer can follow it. The numbers are also
written as ``data-*`` attributes so that tools (and the tests) can read them.

The page has no script, no external font, image or style sheet: nothing is
fetched when it opens. The output depends only on the input (no clock, no
random identifiers, sorted everywhere), and everything a user wrote (names,
messages, justifications) is HTML-escaped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from policylint import __version__
from policylint.measure.conversion import counts_gpus
from policylint.report.html_parts import SourceLinks
from policylint.report.html_parts import attr as _attr
from policylint.report.html_parts import cell as _cell
from policylint.report.html_parts import esc as _e
from policylint.report.html_parts import num as _num

if TYPE_CHECKING:
    from policylint.finding import Finding
    from policylint.engine.linter import LintResult
    from policylint.measure import PoolFacts
    from policylint.report.change import StateChange
    from policylint.report.plan_section import PlanOutcome
    from policylint.engine.views import View

__all__ = ["HtmlSettings", "SourceLinks", "render"]


@dataclass
class HtmlSettings:
    """What the page needs besides the run."""

    title: str = "GPU capacity review"
    fail_on: str = "warning"  # lowest severity that fails the run (the verdicts use it too)
    #: rule code -> its effective options (the ruleset's params), for the headrooms shown
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: rule code -> rule metadata (name, summary) for the findings table
    rules: Mapping[str, Any] = field(default_factory=dict)
    #: where file:line places link to
    links: SourceLinks = field(default_factory=SourceLinks)


_SEVERITY_RANK = {"info": 1, "warning": 2, "error": 3}

_CSS = """
:root{--fg:#1d2430;--muted:#5b6472;--line:#d7dce3;--bg:#ffffff;--soft:#f4f6f9;
--err:#b42318;--warn:#a15c00;--ok:#1f7a3a;--info:#2f5fa7}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;overflow-wrap:break-word}
a{color:#1d4ed8}
main{max-width:1180px;margin:0 auto;padding:24px 28px 60px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:21px;margin:34px 0 10px;border-bottom:2px solid var(--line);padding-bottom:4px}
h3{font-size:18px;margin:26px 0 6px}h4{font-size:15px;margin:16px 0 6px}
p{margin:6px 0}.muted{color:var(--muted)}code{font:13px/1.3 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
table{border-collapse:collapse;margin:8px 0 14px;font-size:14px;display:block;max-width:100%;overflow-x:auto}
th,td{border-bottom:1px solid var(--line);padding:5px 10px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.num>span{white-space:nowrap}
table.pools td:first-child>span,table.change-pools td:first-child>span{white-space:nowrap}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:13px;font-weight:600;color:#fff}
.badge.error{background:var(--err)}.badge.warning{background:var(--warn)}.badge.info{background:var(--info)}.badge.ok{background:var(--ok)}
.delta-over{color:var(--err);font-weight:600}.delta-under{color:var(--warn);font-weight:600}.delta-zero{color:var(--ok)}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}
.card{border:1px solid var(--line);border-radius:8px;padding:8px 14px;min-width:120px;background:var(--soft)}
.card b{display:block;font-size:22px}
.pool,.proposal{border:1px solid var(--line);border-radius:10px;padding:6px 18px 12px;margin:16px 0}
.chart{width:100%;height:auto;display:block;margin:6px 0}
.chart .band-baseline{fill:#dcefe0}.chart .band-daily{fill:#fbefcf}.chart .band-peak{fill:#f8dcdc}
.chart .grid{stroke:#e3e7ec;stroke-width:1}.chart .frame{fill:none;stroke:#9aa3af;stroke-width:1}
.chart .axis{font-size:12px;fill:#4a5260}
.chart .series{fill:#2b6cb0;shape-rendering:crispEdges}
.chart .cap{stroke-width:2;fill:none}.chart .leader{stroke-width:1;fill:none}
.chart .cap-label{font-size:12.5px;font-weight:600}
.chart .reserved{stroke:#111827;fill:#111827}.chart .capacity{stroke:#6b21a8;fill:#6b21a8;stroke-dasharray:7 4}
.chart .proposed{stroke:#c2410c;fill:#c2410c;stroke-dasharray:2 3}
.chart .justified{stroke:#15803d;fill:#15803d;stroke-dasharray:10 3 2 3}
.chart .justified-total{stroke:#0e7490;fill:#0e7490;stroke-dasharray:10 3 2 3}
.chart text.cap-label{stroke:none}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;font-size:13px;color:var(--muted);margin:0 0 4px}
.swatch{display:inline-block;width:14px;height:10px;margin-right:5px;vertical-align:baseline;border:1px solid #b6bec9}
.findings li{margin:4px 0}.findings .hint{color:var(--muted)}
.arith td:first-child{color:var(--muted)}.arith td{border:none;padding:2px 10px 2px 0}
footer{margin-top:40px;color:var(--muted);font-size:13px}
.chart-box{overflow-x:auto}
.line-key{display:none;flex-wrap:wrap;gap:4px 16px;list-style:none;padding:0;margin:2px 0 8px;font-size:14px}
.key{display:inline-block;width:24px;border-top:3px solid;vertical-align:middle;margin-right:6px}
.key.reserved{border-color:#111827}.key.capacity{border-color:#6b21a8;border-top-style:dashed}
.key.proposed{border-color:#c2410c;border-top-style:dotted}.key.justified{border-color:#15803d;border-top-style:dashed}
.key.justified-total{border-color:#0e7490;border-top-style:dashed}
.change .same{color:var(--muted)}.change tr.unchanged td{color:var(--muted)}
.change .was{color:var(--muted);font-size:13px}
.states h5{font-size:14px;margin:12px 0 2px;color:var(--muted)}
details{margin:8px 0}summary{cursor:pointer;font-weight:600}
.plan h5{font-size:14px;margin:12px 0 2px}.plan .reasons li{margin:3px 0}
table.plan-today td:first-child>span,table.plan-planned td:first-child>span{white-space:nowrap}
@media (max-width:700px){
main{padding:14px 12px 40px}h1{font-size:22px}h2{font-size:19px;margin-top:26px}h3{font-size:17px}
.pool,.proposal{padding:4px 10px 10px}
.chart-box{overflow:hidden}.chart-box .chart{width:134%;max-width:none}.chart .axis{font-size:19px}.chart .cap-label,.chart .leader{display:none}.line-key{display:flex}
.cards{gap:8px}.card{min-width:0;flex:1 1 40%;padding:6px 10px}.card b{font-size:19px}
table.stack,table.stack tbody,table.stack tfoot,table.stack tr,table.stack td{display:block}
table.stack{overflow:visible}table.stack thead{display:none}
table.stack tr{border:1px solid var(--line);border-radius:8px;margin:0 0 10px;padding:4px 10px}
table.stack td{border:none;padding:2px 0;display:flex;justify-content:space-between;gap:12px;text-align:right}
table.stack td::before{content:attr(data-label);color:var(--muted);text-align:left}
table.stack td>span{min-width:0}
table.stack tfoot td{display:block;text-align:left}table.stack tfoot td.num{text-align:right}
table.stack tfoot td::before{content:none}
table.stack td:first-child{font-weight:600}table.stack td:first-child>span{white-space:normal}
table.derivation.stack td{display:block;text-align:left}table.derivation.stack td::before{display:block}
table.derivation.stack td.num{display:flex;text-align:right}table.derivation.stack td.num::before{display:inline}
}
"""


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if not math.isfinite(seconds):
        return "without bound"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7_200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _badge(severity: str) -> str:
    return f'<span class="badge {_e(severity)}">{_e(severity)}</span>'


def _where(f: Finding, links: SourceLinks, *, base: bool = False) -> str:
    """``file:line:column`` of a finding, linked to the file when there is somewhere to link."""
    text = f"{_e(f.file)}:{f.line}:{f.column}"
    href = links.href(f.file, f.line, base=base)
    return f'<a href="{_e(href)}">{text}</a>' if href is not None else text


def _finding_item(f: Finding, links: SourceLinks, attrs: str, *, base: bool = False, extra: str = "") -> str:
    return (
        f"<li {attrs}>{_badge(f.severity.label)} <b>{_e(f.code)}</b> "
        f"<code>{_e(f.name)}</code> — {_e(f.message)}"
        f' <span class="muted">({_where(f, links, base=base)})</span>'
        + (f'<br><span class="hint">→ {_e(f.hint)}</span>' if f.hint else "")
        + extra
        + "</li>"
    )


def _findings_list(findings: Sequence[Finding], links: SourceLinks) -> str:
    if not findings:
        return '<p class="muted">No findings.</p>'
    items = [_finding_item(f, links, f'data-code="{_e(f.code)}"') for f in findings]
    return f'<ul class="findings">{"".join(items)}</ul>'


@dataclass(frozen=True)
class _Subjects:
    """The run's views by subject, and its findings by subject label."""

    workloads: dict[str, View]
    pools: dict[str, View]
    proposals: dict[str, View]
    findings: dict[str, list[Finding]]

    @classmethod
    def of(cls, result: LintResult) -> _Subjects:
        workloads, pools, proposals = {}, {}, {}
        for v in result.views:
            if v.subject == "workload":
                workloads[v.facts["name"]] = v
            elif v.subject == "pool":
                pools[v.facts["qualified"]] = v
            elif v.subject == "proposal":
                proposals[v.facts["name"]] = v
        by_subject: dict[str, list[Finding]] = {}
        for f in result.findings:
            by_subject.setdefault(f.subject, []).append(f)
        return cls(workloads, pools, proposals, by_subject)

    def about(self, label: str) -> list[Finding]:
        return self.findings.get(label, [])


def _failing(findings: Iterable[Finding], fail_on: str) -> list[Finding]:
    floor = _SEVERITY_RANK[fail_on]
    return [f for f in findings if _SEVERITY_RANK[f.severity.label] >= floor]


def _summary_cards(result: LintResult, fail_on: str) -> str:
    from policylint.report.json_report import summary

    s = summary(result)
    failing = len(_failing(result.findings, fail_on))
    verdict = (
        f'<span class="badge error">fails</span> {failing} finding{"s" if failing != 1 else ""} at {fail_on} or above'
        if failing
        else f'<span class="badge ok">passes</span> nothing at {fail_on} or above'
    )
    cards = "".join(
        f'<div class="card" data-summary="{key}" data-value="{s[key]}"><b>{s[key]:,}</b>{label}</div>'
        for key, label in (
            ("findings", "findings"),
            ("error", "errors"),
            ("warning", "warnings"),
            ("info", "info"),
            ("documents", "documents"),
            ("files", "files"),
            ("suppressed", "suppressed"),
            ("baselined", "baselined"),
        )
    )
    return f'<p class="verdict">Verdict: {verdict}</p><div class="cards">{cards}</div>'


def _delta(value: int | None) -> str:
    if value is None:
        return "–"
    css = "delta-over" if value > 0 else "delta-under" if value < 0 else "delta-zero"
    return f'<span class="{css}">{value:+d}</span>' if value else f'<span class="{css}">0</span>'


def _pool_table(subjects: _Subjects) -> str:
    rows = []
    for name in sorted(subjects.pools):
        f = subjects.pools[name].facts
        base, daily = f["baseline_gpus"], f["daily_gpus"]
        delta = None if base is None else f["reserved_gpus"] - base
        delta_cap = None if daily is None else f["capacity_gpus"] - daily
        n_findings = len(subjects.about(subjects.pools[name].label))
        rows.append(
            f'<tr data-pool="{_e(name)}" data-reserved-gpus="{f["reserved_gpus"]}" data-elastic-gpus="{f["elastic_gpus"]}"'
            f' data-capacity-gpus="{f["capacity_gpus"]}" data-proposed-gpus="{f["proposed_gpus"]}"'
            f' data-baseline-gpus="{_attr(base)}" data-daily-gpus="{_attr(daily)}" data-peak-gpus="{_attr(f["peak_gpus"])}"'
            f' data-reserved-delta="{_attr(delta)}" data-capacity-delta="{_attr(delta_cap)}" data-findings="{n_findings}">'
            + _cell("pool", f'<a href="#pool-{_e(name)}">{_e(name)}</a>')
            + _cell("workloads", str(f["workload_count"]), "num")
            + _cell("reserved", _num(f["reserved_gpus"]), "num")
            + _cell("elastic", _num(f["elastic_gpus"]), "num")
            + _cell("proposed", _num(f["proposed_gpus"]), "num")
            + _cell("justified reserved (pooled baseline)", _num(base), "num")
            + _cell("justified reserved + elastic (pooled daily)", _num(daily), "num")
            + _cell("pooled peak", _num(f["peak_gpus"]), "num")
            + _cell("delta reserved", _delta(delta), "num")
            + _cell("delta reserved + elastic", _delta(delta_cap), "num")
            + _cell("findings", str(n_findings), "num")
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


def _rule_table(result: LintResult, rules: Mapping[str, Any]) -> str:
    counts = Counter((f.code, f.name, f.severity.label) for f in result.findings)
    if not counts:
        return '<p class="muted">No findings.</p>'
    rows = []
    for (code, name, severity), n in sorted(counts.items()):
        rule = rules.get(code)
        summary = getattr(rule, "summary", "") if rule is not None else ""
        rows.append(
            f'<tr data-rule="{_e(code)}" data-count="{n}">' + _cell("rule", f"<b>{_e(code)}</b>")
            + _cell("name", f"<code>{_e(name)}</code>") + _cell("severity", _badge(severity))
            + _cell("findings", str(n), "num") + _cell("what it checks", _e(summary)) + "</tr>"
        )
    return (
        '<table class="rules stack"><thead><tr><th>rule</th><th>name</th><th>severity</th><th class="num">findings</th>'
        "<th>what it checks</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _pool_lines(f: Mapping[str, Any]) -> list[Any]:
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


_LEGEND = (
    '<div class="legend">'
    '<span><i class="swatch" style="background:#2b6cb0"></i>pooled GPU demand (lowest–highest per pixel column)</span>'
    '<span><i class="swatch" style="background:#dcefe0"></i>baseline band</span>'
    '<span><i class="swatch" style="background:#fbefcf"></i>daily band</span>'
    '<span><i class="swatch" style="background:#f8dcdc"></i>peak band</span>'
    "</div>"
)


def _no_curve(f: Mapping[str, Any]) -> str:
    """Why a pool has no pooled demand curve."""
    missing = ", ".join(_e(w) for w in f["unmeasured_workloads"])
    return (
        f"workloads without measured GPU demand: {missing}"
        if missing
        else "no stretch as long as the cold start in which every workload has a sample"
        if f["workload_count"]
        else "no workloads"
    )


def _has_curve(f: Mapping[str, Any], pooled: PoolFacts | None) -> bool:
    return (
        pooled is not None
        and pooled.report is not None
        and pooled.grid is not None
        and pooled.report.baseline is not None
        and f["baseline_gpus"] is not None
    )


def _bands(f: Mapping[str, Any]) -> dict[str, float]:
    return {"baseline": float(f["baseline_gpus"]), "daily": float(f["daily_gpus"]), "peak": float(f["peak_gpus"])}


def _chart(f: Mapping[str, Any], pooled: PoolFacts, title: str, y_top: float | None = None) -> tuple[str, str]:
    """(the chart in its box, the sentence on how it was sampled) of a pool with a pooled curve."""
    from policylint.report.svg_chart import pool_chart

    report, grid = pooled.report, pooled.grid
    assert report is not None and grid is not None
    svg, down = pool_chart(grid.times, grid.pooled, _bands(f), _pool_lines(f), title=title, y_top=y_top)
    per_column = down.samples_per_column
    if per_column > 1:
        sampling = (
            f"Downsampled: {grid.times.size:,} samples at {_num(report.step_seconds)} s steps drawn in "
            f"{down.low.size:,} columns (about one screen pixel each) of about {per_column:,.0f} samples "
            f"({_duration(per_column * report.step_seconds)}) each; every column spans the lowest to the highest "
            "sample it covers, so no peak is lost"
        )
    else:
        sampling = f"{grid.times.size:,} samples at {_num(report.step_seconds)} s steps, one column each"
    key = "".join(
        f'<li><i class="key {ln.css}"></i>{_e(ln.label)} <b>{_num(ln.value)}</b></li>' for ln in _pool_lines(f)
    )
    # the chart labels its lines on the right; a narrow screen hides them and shows this list instead
    return f'<div class="chart-box">{svg}</div><ul class="line-key">{key}</ul>', sampling


def _pool_section(view: View, pooled: PoolFacts | None, subjects: _Subjects, links: SourceLinks) -> str:
    f = view.facts
    name = f["qualified"]
    head = (
        f'<section class="pool" id="pool-{_e(name)}" data-pool="{_e(name)}" data-reserved-gpus="{f["reserved_gpus"]}"'
        f' data-elastic-gpus="{f["elastic_gpus"]}" data-capacity-gpus="{f["capacity_gpus"]}"'
        f' data-proposed-gpus="{f["proposed_gpus"]}" data-baseline-gpus="{_attr(f["baseline_gpus"])}"'
        f' data-daily-gpus="{_attr(f["daily_gpus"])}" data-peak-gpus="{_attr(f["peak_gpus"])}"'
        f' data-sustained-max-gpus="{_attr(f["sustained_max_gpus"])}">'
        f"<h3>Pool {_e(name)}</h3>"
    )
    workloads = ", ".join(_e(w) for w in f["workload_names"]) or "none"
    parts = [
        head,
        f'<p>Workloads: {workloads}. Capacity: reserved {_num(f["reserved_gpus"])} + elastic '
        f'{_num(f["elastic_gpus"])} = {_num(f["capacity_gpus"])} GPUs'
        + (f'; proposals ask {_num(f["proposed_gpus"])} more' if f["proposed_gpus"] else "")
        + (f'; overflow: {_e(f["overflow"])}' if f["overflow"] else "")
        + ".</p>",
    ]
    if pooled is None or not _has_curve(f, pooled):
        parts.append(f'<p class="muted">No pooled demand curve: {_no_curve(f)}.</p>')
    else:
        report = pooled.report
        assert report is not None
        svg, sampling = _chart(f, pooled, f"pooled GPU demand of pool {name}")
        parts += [
            _LEGEND,
            svg,
            f'<p class="muted">{sampling}. Empty columns are gaps: instants at which some workload of the pool '
            "has no usable sample.</p>",
            '<table class="bands stack"><thead><tr><th>band</th><th class="num">pooled GPUs</th>'
            '<th class="num">sum of workload bands</th><th>how it is computed</th></tr></thead><tbody>'
            + "".join(
                "<tr>" + _cell("band", band) + _cell("pooled GPUs", _num(f[f"{band}_gpus"]), "num")
                + _cell("sum of workload bands", _num(f[f"{band}_gpus_sum"]), "num") + _cell("how it is computed", how)
                + "</tr>"
                for band, how in (
                    ("baseline", "p95 of the sustained pooled demand (lowest level over each cold-start window)"),
                    ("daily", "p99 of the sustained pooled demand"),
                    ("peak", "highest pooled demand"),
                )
            )
            + "</tbody></table>",
            f'<p>Pooled window {_num(report.window_days)} days on a {_num(report.step_seconds)} s grid; cold start '
            f'{_num(report.cold_start_seconds)} s. Spikes above the pooled baseline: {report.real_spike_count} real, '
            f"{report.noise_spike_count} noise (narrower than the cold start). Queue at {_num(f['capacity_gpus'])} GPUs: "
            f"daily-band demand waits up to {_duration(f['daily_max_wait_seconds'])}, all demand up to "
            f"{_duration(f['max_wait_seconds'])}.</p>",
        ]
    parts.append("<h4>Findings about this pool</h4>")
    parts.append(_findings_list(subjects.about(view.label), links))
    about_workloads = [x for w in f["workload_names"] for x in subjects.about(f"workload {w}")]
    if about_workloads:
        parts.append("<h4>Findings about its workloads</h4>")
        parts.append(_findings_list(about_workloads, links))
    parts.append("</section>")
    return "".join(parts)


def _gpu_formula(w: Mapping[str, Any]) -> str:
    """How a workload's own baseline GPUs follow from its band, as the conversion did it.

    A GPU-weighted trace (``trace_unit: gpus``: jobs counted by their GPUs) is GPU
    demand already and is not divided again; any other trace is concurrency, divided
    by the per-GPU concurrency and multiplied by the GPUs per replica.
    """
    if counts_gpus(w.get("trace_unit")):
        return f'⌈{_num(w["baseline"])}⌉ (the trace counts GPUs: no conversion)'
    return f'⌈{_num(w["baseline"])} / {_num(w["per_gpu"])}⌉ × {_num(w["gpus_per_replica"])}'


def _request_block(req: Mapping[str, Any], cluster: str, subjects: _Subjects, headroom: float) -> str:
    """One request of a proposal with the shortfall arithmetic written out (PL801's formula)."""
    pool = f"{cluster}/{req['pool']}"
    pv = subjects.pools.get(pool)
    head = f"<h4>Request {req['index'] + 1}: {_num(req['gpus'])} GPUs for pool {_e(pool)}</h4>"
    if pv is None or req["baseline_gpus"] is None or req["reserved"] is None:
        why = "the pool does not exist" if pv is None else "the pool's pooled baseline is unknown (no measured demand)"
        return (
            f'<div class="request" data-pool="{_e(pool)}" data-requested-gpus="{req["gpus"]}" data-verdict="unjudged">'
            f'{head}<p><span class="badge error">unjustified</span> {why}: nothing measured backs these GPUs.</p></div>'
        )
    base, reserved = int(req["baseline_gpus"]), int(req["reserved"])
    shortfall = max(0, base - reserved)
    allowed = math.ceil(shortfall * (1 + headroom) - 1e-9)
    # proposals for one pool are judged together (PL801): the pool's total decides
    total = max(int(req.get("pool_proposed_gpus") or 0), int(req["gpus"]))
    within = total <= allowed
    rows = []
    for name in pv.facts["workload_names"]:
        wv = subjects.workloads.get(name)
        if wv is None:
            continue
        w = wv.facts
        rows.append(
            f'<tr data-workload="{_e(name)}" data-baseline-gpus="{_attr(w["baseline_gpus"])}">'
            + _cell("workload", _e(name)) + _cell("class", _e(w["workload_class"]))
            + _cell("baseline band (concurrency, p95 sustained)", _num(w["baseline"]), "num")
            + _cell("per-GPU concurrency", _num(w["per_gpu"]), "num")
            + _cell("GPUs per replica", _num(w["gpus_per_replica"]), "num")
            + _cell("GPUs", _gpu_formula(w))
            + _cell("own baseline GPUs", _num(w["baseline_gpus"]), "num") + "</tr>"
            if w["baseline_gpus"] is not None
            else f'<tr data-workload="{_e(name)}"><td>{_e(name)}</td><td>{_e(w["workload_class"])}</td>'
            '<td colspan="5" class="muted">not measured</td></tr>'
        )
    pf = pv.facts
    table = (
        '<table class="workloads stack"><thead><tr><th>workload</th><th>class</th>'
        '<th class="num">baseline band<br>(concurrency, p95 sustained)</th><th class="num">per-GPU concurrency</th>'
        '<th class="num">GPUs per replica</th><th>GPUs = ⌈band / per GPU⌉ × GPUs per replica</th>'
        '<th class="num">own baseline GPUs</th></tr></thead><tbody>' + "".join(rows) + "</tbody>"
        f'<tfoot><tr><td colspan="6">sum of the workloads\' own baselines</td><td class="num">{_num(pf["baseline_gpus_sum"])}</td></tr>'
        f'<tr><td colspan="6"><b>pooled baseline</b>: p95 of the pool\'s sustained GPU demand, all workloads together'
        f' (cold start {_num(pf["pooled_cold_start_seconds"])} s, {_num(pf["pooled_window_days"])} days)</td>'
        f'<td class="num"><b>{_num(base)}</b></td></tr></tfoot></table>'
    )
    verdict = (
        '<span class="badge ok">justified</span> the request is within the shortfall plus headroom'
        if within
        else f'<span class="badge error">exceeds</span> {_num(total - allowed)} GPUs beyond what the baseline justifies'
    )
    others = [g for g in req.get("pool_proposals") or [] if total > req["gpus"]]
    arithmetic = (
        '<table class="arith"><tbody>'
        f'<tr><td>pooled baseline</td><td class="num">{_num(base)}</td><td>GPUs the pool must carry on reserved capacity</td></tr>'
        f'<tr><td>− reserved today</td><td class="num">{_num(reserved)}</td><td></td></tr>'
        f'<tr><td>= shortfall</td><td class="num">{_num(shortfall)}</td><td>max(0, baseline − reserved)</td></tr>'
        f'<tr><td>allowed</td><td class="num">{_num(allowed)}</td><td>⌈{_num(shortfall)} × (1 + {headroom:.0%} headroom)⌉</td></tr>'
        f'<tr><td>requested</td><td class="num"><b>{_num(req["gpus"])}</b></td><td>{"" if others else verdict}</td></tr>'
        + (
            f'<tr><td>all proposals for the pool</td><td class="num"><b>{_num(total)}</b></td><td>{verdict}'
            f' ({", ".join(_e(g["name"]) + " " + _num(g["gpus"]) for g in others)})</td></tr>'
            if others
            else ""
        )
        + "</tbody></table>"
    )
    return (
        f'<div class="request" data-pool="{_e(pool)}" data-requested-gpus="{req["gpus"]}" data-reserved-gpus="{reserved}"'
        f' data-baseline-gpus="{base}" data-shortfall-gpus="{shortfall}" data-allowed-gpus="{allowed}"'
        f' data-headroom="{_attr(headroom)}" data-verdict="{"within" if within else "exceeds"}">'
        f"{head}{table}{arithmetic}"
        f'<p class="muted">The daily band ({_num(pf["daily_gpus"])} GPUs pooled) is carried by elastic capacity and the '
        "peak band by the overflow policy; neither justifies buying GPUs.</p></div>"
    )


def _proposal_section(view: View, subjects: _Subjects, settings: HtmlSettings) -> str:
    f = view.facts
    headroom = float((settings.params.get("PL801") or {}).get("headroom", 0.15))
    findings = subjects.about(view.label)
    failing = _failing(findings, settings.fail_on)
    verdict = (
        f'<span class="badge error">not justified</span> {len(failing)} finding{"s" if len(failing) != 1 else ""} '
        f"at {settings.fail_on} or above"
        if failing
        else '<span class="badge ok">justified</span> no finding at '
        f"{_e(settings.fail_on)} or above"
    )
    cited = [w for w in view.doc.data.get("spec", {}).get("workloads", []) if isinstance(w, str)] if isinstance(
        view.doc.data, dict
    ) else []
    parts = [
        f'<section class="proposal" id="proposal-{_e(f["name"])}" data-proposal="{_e(f["name"])}"'
        f' data-requested-gpus="{f["requested_gpus"]}" data-verdict="{"fail" if failing else "pass"}">',
        f"<h3>Proposal {_e(f['name'])} <span class=\"muted\">for cluster {_e(f['cluster'])}</span></h3>",
        f"<p>Verdict: {verdict}. Requested: {_num(f['requested_gpus'])} GPUs in total. "
        f"Cites {f['cited_workloads']} workload{'s' if f['cited_workloads'] != 1 else ''}"
        + (f" ({', '.join(_e(w) for w in cited)})" if cited else "")
        + f", {f['cited_measured']} of them measured.</p>",
    ]
    if f["justification"]:
        parts.append(f'<p class="muted">Justification given: “{_e(f["justification"])}”</p>')
    for req in f["requests"]:
        parts.append(_request_block(req, str(f["cluster"]), subjects, headroom))
    parts.append("<h4>Findings that drive the verdict</h4>")
    parts.append(_findings_list(findings, settings.links))
    parts.append("</section>")
    return "".join(parts)


def _moved(before: Any, after: Any) -> str:
    """``before → after`` of one figure (just the figure when it did not move)."""
    if before == after:
        return f'<span class="same">{_num(before)}</span>'
    text = f"{_num(before)} → <b>{_num(after)}</b>"
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (before, after))
    if numbers and math.isfinite(float(after) - float(before)):
        text += f" ({'+' if after > before else '−'}{_num(abs(after - before))})"
    return text


#: (fact, column heading) of the capacity figures the change table compares
_CHANGE_FIGURES = (
    ("reserved_gpus", "reserved", "reserved"),
    ("elastic_gpus", "elastic", "elastic"),
    ("baseline_gpus", "justified reserved (pooled baseline)", "baseline"),
    ("daily_gpus", "justified reserved + elastic (pooled daily)", "daily"),
)


def _change_pools(change: StateChange) -> str:
    rows = []
    for pc in change.pools:
        attrs = "".join(
            f' data-{short}-before="{_attr(pc.figure(fact)[0])}" data-{short}-after="{_attr(pc.figure(fact)[1])}"'
            for fact, _, short in _CHANGE_FIGURES
        )
        name = f'<a href="#pool-{_e(pc.name)}">{_e(pc.name)}</a>' if pc.after is not None else _e(pc.name)
        cells = "".join(_cell(title, _moved(*pc.figure(fact)), "num") for fact, title, _ in _CHANGE_FIGURES)
        rows.append(
            f'<tr class="{pc.status}" data-change-pool="{_e(pc.name)}" data-status="{pc.status}"{attrs}'
            f' data-new="{pc.new}" data-fixed="{pc.fixed}">' + _cell("pool", name) + _cell("change", pc.status)
            + cells + _cell("findings new / fixed", f"{pc.new} / {pc.fixed}", "num") + "</tr>"
        )
    if not rows:
        return '<p class="muted">No pools in either state.</p>'
    head = "".join(f'<th class="num">{_e(title)}</th>' for _, title, _ in _CHANGE_FIGURES)
    return (
        '<table class="stack change-pools"><thead><tr><th>pool</th><th>change</th>'
        f'{head}<th class="num">findings new / fixed</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
        '<p class="muted">GPUs, before → after. Justified figures are the pooled bands the rules judge the '
        "capacity by; findings count those about the pool and its workloads.</p>"
    )


def _change_evidence(change: StateChange, links: SourceLinks) -> str:
    if not change.evidence:
        return '<p class="muted">No measurement file was added, removed or changed.</p>'
    rows = []
    for ev in change.evidence:
        href = links.href(ev.path, base=ev.status == "removed" and (ev.after is None or ev.after.digest is None))
        where = f'<a href="{_e(href)}">{_e(ev.path)}</a>' if href is not None else _e(ev.path)
        size_before = ev.before.size if ev.before is not None else None
        size_after = ev.after.size if ev.after is not None else None
        rows.append(
            f'<tr data-evidence="{_e(ev.path)}" data-status="{ev.status}">' + _cell("file", where)
            + _cell("change", f"{ev.status} ({_e(ev.note)})") + _cell("cited by", _e(", ".join(ev.cited_by)))
            + _cell("bytes", _moved(size_before, size_after), "num") + "</tr>"
        )
    return (
        '<table class="stack change-evidence"><thead><tr><th>measurement file</th><th>change</th><th>cited by</th>'
        f'<th class="num">bytes</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _change_findings(change: StateChange, links: SourceLinks) -> str:
    fc = change.findings
    parts = [f'<h4>New <span class="muted">({len(fc.new)})</span></h4>']
    if fc.new:
        items = [_finding_item(f, links, f'data-change="new" data-change-code="{_e(f.code)}"') for f in fc.new]
        parts.append(f'<ul class="findings">{"".join(items)}</ul>')
    else:
        parts.append('<p class="muted">The change brings no finding.</p>')
    parts.append(f'<h4>Fixed <span class="muted">({len(fc.fixed)})</span></h4>')
    if fc.fixed:
        items = [
            _finding_item(f, links, f'data-change="fixed" data-change-code="{_e(f.code)}"', base=True) for f in fc.fixed
        ]
        parts.append(f'<ul class="findings">{"".join(items)}</ul>')
    else:
        parts.append('<p class="muted">The change fixes no finding.</p>')
    if fc.unchanged:
        items = [
            _finding_item(
                now,
                links,
                f'data-change="unchanged" data-change-code="{_e(now.code)}"',
                extra=f'<br><span class="was">before: {_e(was.message)}</span>' if was.message != now.message else "",
            )
            for now, was in fc.unchanged
        ]
        parts.append(
            f'<details class="unchanged"><summary>Unchanged ({len(fc.unchanged)})</summary>'
            f'<ul class="findings">{"".join(items)}</ul></details>'
        )
    else:
        parts.append('<h4>Unchanged <span class="muted">(0)</span></h4>')
    return "".join(parts)


def _change_charts(change: StateChange, result: LintResult) -> str:
    """Before and after charts, on one GPU scale, of every pool the change touches."""
    from policylint.report.svg_chart import highest

    touched_workloads = {c.split(" (")[0] for ev in change.evidence for c in ev.cited_by}
    parts = []
    for pc in change.pools:
        workloads = {str(w) for facts in (pc.before, pc.after) if facts for w in facts.get("workload_names") or ()}
        if pc.status == "unchanged" and not pc.new and not pc.fixed and not workloads & touched_workloads:
            continue
        states = [
            ("before", f"Before ({change.base})", pc.before, change.before.pools.get(pc.name)),
            ("after", "After", pc.after, result.pools.get(pc.name)),
        ]
        top = 0.0
        for _, _, facts, pooled in states:
            if facts is not None and pooled is not None and _has_curve(facts, pooled) and pooled.grid is not None:
                top = max(top, highest(pooled.grid.pooled, _bands(facts), _pool_lines(facts)))
        parts.append(f'<div class="states" data-chart-pool="{_e(pc.name)}"><h4>Pool {_e(pc.name)}</h4>')
        for state, title, facts, pooled in states:
            parts.append(f'<h5 data-state="{state}">{_e(title)}</h5>')
            if facts is None:
                parts.append(f'<p class="muted">The pool does not exist {"before" if state == "before" else "after"} the change.</p>')
            elif pooled is None or not _has_curve(facts, pooled):
                parts.append(f'<p class="muted">No pooled demand curve: {_no_curve(facts)}.</p>')
            else:
                svg, _ = _chart(facts, pooled, f"pooled GPU demand of pool {pc.name}, {state} the change", y_top=top)
                parts.append(svg)
        parts.append("</div>")
    if not parts:
        return '<p class="muted">The change touches no pool.</p>'
    return _LEGEND + "".join(parts)


def _change_section(change: StateChange, result: LintResult, links: SourceLinks) -> str:
    fc = change.findings
    counts = {
        "pools-changed": sum(1 for pc in change.pools if pc.status != "unchanged"),
        "evidence-added": sum(1 for ev in change.evidence if ev.status == "added"),
        "evidence-removed": sum(1 for ev in change.evidence if ev.status == "removed"),
        "evidence-changed": sum(1 for ev in change.evidence if ev.status == "changed"),
        "findings-new": len(fc.new),
        "findings-fixed": len(fc.fixed),
        "findings-unchanged": len(fc.unchanged),
    }
    cards = "".join(
        f'<div class="card" data-change-summary="{key}" data-value="{value}"><b>{value:,}</b>{key.replace("-", " ")}</div>'
        for key, value in counts.items()
    )
    head = f" (commit <code>{_e(change.head_commit[:12])}</code> and any edits not committed)" if change.head_commit else ""
    return (
        f'<section class="change" id="change" data-base="{_e(change.base)}" data-base-commit="{_e(change.base_commit)}">'
        "<h2>What the change does</h2>"
        f"<p>Before: the repository at <code>{_e(change.base)}</code> (commit <code>{_e(change.base_commit[:12])}</code>). "
        f"After: the working tree{head}. Both are linted by the same pipeline with the same configuration, rules and "
        "baseline, so every difference below is one of the documents and measurements. The rest of the page shows "
        f'the state after the change.</p><div class="cards">{cards}</div>'
        "<h3>Capacity per pool</h3>" + _change_pools(change)
        + "<h3>Demand evidence</h3>" + _change_evidence(change, links)
        + "<h3>Findings</h3>" + _change_findings(change, links)
        + "<h3>Pooled demand before and after</h3>" + _change_charts(change, result)
        + "</section>"
    )


def render(
    result: LintResult,
    settings: HtmlSettings | None = None,
    change: StateChange | None = None,
    plan: PlanOutcome | None = None,
) -> str:
    """The whole page for ``result`` (one string; the same input gives the same bytes).

    With ``change`` the page leads with what the change from its base did (see
    :mod:`policylint.report.change`); the rest shows ``result``, the state after it.
    With ``plan`` a section "Planned vs today" follows the summary
    (:mod:`policylint.report.plan_section`).
    """
    settings = settings or HtmlSettings()
    subjects = _Subjects.of(result)
    clusters: dict[str, list[str]] = {}
    for name, view in subjects.pools.items():
        clusters.setdefault(str(view.facts["cluster"]), []).append(name)
    body: list[str] = [
        f"<h1>{_e(settings.title)}</h1>",
        f'<p class="muted">policylint {_e(__version__)} — every number below comes from the same run as '
        "<code>policylint check</code>: the pooled demand of each pool (p95, p99 and maximum of the sustained "
        "GPU demand of all its workloads together) and the findings of the rules.</p>",
        *([_change_section(change, result, settings.links)] if change is not None else []),
        "<h2>Summary</h2>",
        _summary_cards(result, settings.fail_on),
        "<h3>Pools</h3>",
        _pool_table(subjects),
        "<h3>Findings by rule</h3>",
        _rule_table(result, settings.rules),
    ]
    if plan is not None:
        from policylint.report.plan_section import plan_section

        body.append(plan_section(plan, set(subjects.pools), settings.links))
    if subjects.proposals:
        body.append("<h2>Proposals</h2>")
        for name in sorted(subjects.proposals):
            body.append(_proposal_section(subjects.proposals[name], subjects, settings))
    for cluster in sorted(clusters):
        body.append(f'<h2 id="cluster-{_e(cluster)}">Cluster {_e(cluster)}</h2>')
        for name in sorted(clusters[cluster]):
            body.append(_pool_section(subjects.pools[name], result.pools.get(name), subjects, settings.links))
    from policylint.report.integrity_section import integrity_section

    body.append(integrity_section(subjects.workloads.values(), _e))
    # Everything not shown with its pool or proposal: clusters, documents, workloads outside any pool.
    shown = {f"proposal {name}" for name in subjects.proposals} | {v.label for v in subjects.pools.values()}
    shown |= {f"workload {w}" for v in subjects.pools.values() for w in v.facts["workload_names"]}
    others = [f for f in result.findings if f.subject not in shown]
    body.append("<h2>Other findings</h2>")
    body.append('<p class="muted">About clusters, documents (files that do not parse, schema errors, references) '
                "and workloads outside any pool.</p>")
    body.append(_findings_list(others, settings.links))
    body.append(
        "<footer>Generated by policylint. Self-contained: no scripts, fonts or images are loaded. "
        "Bands are explained in docs/bands.md and docs/pooled.md of the policylint repository.</footer>"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # an empty icon, so that the browser does not ask the file system or a server for one
        '<link rel="icon" href="data:,">'
        f"<title>{_e(settings.title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )
