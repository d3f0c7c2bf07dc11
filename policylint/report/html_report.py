"""``policylint report --html``: one self-contained page for a procurement review.

The page is built from one linting run (:class:`policylint.linter.LintResult`):
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
from html import escape
from typing import TYPE_CHECKING, Any

from policylint import __version__
from policylint.report.safe_text import escape_controls

if TYPE_CHECKING:
    from policylint.finding import Finding
    from policylint.linter import LintResult
    from policylint.measure import PoolFacts
    from policylint.views import View

__all__ = ["HtmlSettings", "render"]


@dataclass
class HtmlSettings:
    """What the page needs besides the run."""

    title: str = "GPU capacity review"
    fail_on: str = "warning"  # lowest severity that fails the run (the verdicts use it too)
    #: rule code -> its effective options (the ruleset's params), for the headrooms shown
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: rule code -> rule metadata (name, summary) for the findings table
    rules: Mapping[str, Any] = field(default_factory=dict)


_SEVERITY_RANK = {"info": 1, "warning": 2, "error": 3}

_CSS = """
:root{--fg:#1d2430;--muted:#5b6472;--line:#d7dce3;--bg:#ffffff;--soft:#f4f6f9;
--err:#b42318;--warn:#a15c00;--ok:#1f7a3a;--info:#2f5fa7}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1180px;margin:0 auto;padding:24px 28px 60px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:21px;margin:34px 0 10px;border-bottom:2px solid var(--line);padding-bottom:4px}
h3{font-size:18px;margin:26px 0 6px}h4{font-size:15px;margin:16px 0 6px}
p{margin:6px 0}.muted{color:var(--muted)}code{font:13px/1.3 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
table{border-collapse:collapse;margin:8px 0 14px;font-size:14px}
th,td{border-bottom:1px solid var(--line);padding:5px 10px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
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
"""


def _e(value: object) -> str:
    """HTML-escaped text of ``value`` (quotes too: the text may land in an attribute).

    Control characters are written as visible escapes first: HTML cannot carry
    most of them, and a name or message holding one is user input (see
    :mod:`policylint.report.safe_text`).
    """
    return escape(escape_controls(str(value)), quote=True)


def _num(value: float | int | None, unit: str = "") -> str:
    """A number for people: whole numbers without decimals, others with at most two."""
    if value is None:
        return "–"
    if isinstance(value, float) and not math.isfinite(value):
        return "∞"
    if float(value) == int(value):
        text = f"{int(value):,}"
    else:
        text = f"{float(value):,.2f}".rstrip("0").rstrip(".")
    return f"{text}{unit}"


def _attr(value: object) -> str:
    """A data attribute value: exact (repr of floats), empty for unknown."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    return _e(value)


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


def _findings_list(findings: Sequence[Finding]) -> str:
    if not findings:
        return '<p class="muted">No findings.</p>'
    items = []
    for f in findings:
        items.append(
            f'<li data-code="{_e(f.code)}">{_badge(f.severity.label)} <b>{_e(f.code)}</b> '
            f"<code>{_e(f.name)}</code> — {_e(f.message)}"
            f' <span class="muted">({_e(f.file)}:{f.line}:{f.column})</span>'
            + (f'<br><span class="hint">→ {_e(f.hint)}</span>' if f.hint else "")
            + "</li>"
        )
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
            f'<td><a href="#pool-{_e(name)}">{_e(name)}</a></td>'
            f'<td class="num">{f["workload_count"]}</td>'
            f'<td class="num">{_num(f["reserved_gpus"])}</td><td class="num">{_num(f["elastic_gpus"])}</td>'
            f'<td class="num">{_num(f["proposed_gpus"])}</td>'
            f'<td class="num">{_num(base)}</td><td class="num">{_num(daily)}</td><td class="num">{_num(f["peak_gpus"])}</td>'
            f'<td class="num">{_delta(delta)}</td><td class="num">{_delta(delta_cap)}</td>'
            f'<td class="num">{n_findings}</td></tr>'
        )
    if not rows:
        return '<p class="muted">No pools.</p>'
    return (
        '<table class="pools"><thead><tr><th>pool</th><th class="num">workloads</th>'
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
            f'<tr data-rule="{_e(code)}" data-count="{n}"><td><b>{_e(code)}</b></td><td><code>{_e(name)}</code></td>'
            f"<td>{_badge(severity)}</td><td class=\"num\">{n}</td><td>{_e(summary)}</td></tr>"
        )
    return (
        '<table class="rules"><thead><tr><th>rule</th><th>name</th><th>severity</th><th class="num">findings</th>'
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


def _pool_section(view: View, pooled: PoolFacts | None, subjects: _Subjects) -> str:
    from policylint.report.svg_chart import pool_chart

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
    report = pooled.report if pooled is not None else None
    grid = pooled.grid if pooled is not None else None
    if report is None or grid is None or report.baseline is None or f["baseline_gpus"] is None:
        missing = ", ".join(_e(w) for w in f["unmeasured_workloads"])
        why = (
            f"workloads without measured GPU demand: {missing}"
            if missing
            else "no stretch as long as the cold start in which every workload has a sample"
            if f["workload_count"]
            else "no workloads"
        )
        parts.append(f'<p class="muted">No pooled demand curve: {why}.</p>')
    else:
        bands = {"baseline": float(f["baseline_gpus"]), "daily": float(f["daily_gpus"]), "peak": float(f["peak_gpus"])}
        svg, down = pool_chart(
            grid.times, grid.pooled, bands, _pool_lines(f), title=f"pooled GPU demand of pool {name}"
        )
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
        parts += [
            _LEGEND,
            svg,
            f'<p class="muted">{sampling}. Empty columns are gaps: instants at which some workload of the pool '
            "has no usable sample.</p>",
            '<table class="bands"><thead><tr><th>band</th><th class="num">pooled GPUs</th>'
            '<th class="num">sum of workload bands</th><th>how it is computed</th></tr></thead><tbody>'
            f'<tr><td>baseline</td><td class="num">{_num(f["baseline_gpus"])}</td><td class="num">{_num(f["baseline_gpus_sum"])}</td>'
            "<td>p95 of the sustained pooled demand (lowest level over each cold-start window)</td></tr>"
            f'<tr><td>daily</td><td class="num">{_num(f["daily_gpus"])}</td><td class="num">{_num(f["daily_gpus_sum"])}</td>'
            "<td>p99 of the sustained pooled demand</td></tr>"
            f'<tr><td>peak</td><td class="num">{_num(f["peak_gpus"])}</td><td class="num">{_num(f["peak_gpus_sum"])}</td>'
            "<td>highest pooled demand</td></tr></tbody></table>",
            f'<p>Pooled window {_num(report.window_days)} days on a {_num(report.step_seconds)} s grid; cold start '
            f'{_num(report.cold_start_seconds)} s. Spikes above the pooled baseline: {report.real_spike_count} real, '
            f"{report.noise_spike_count} noise (narrower than the cold start). Queue at {_num(f['capacity_gpus'])} GPUs: "
            f"daily-band demand waits up to {_duration(f['daily_max_wait_seconds'])}, all demand up to "
            f"{_duration(f['max_wait_seconds'])}.</p>",
        ]
    parts.append("<h4>Findings about this pool</h4>")
    parts.append(_findings_list(subjects.about(view.label)))
    about_workloads = [x for w in f["workload_names"] for x in subjects.about(f"workload {w}")]
    if about_workloads:
        parts.append("<h4>Findings about its workloads</h4>")
        parts.append(_findings_list(about_workloads))
    parts.append("</section>")
    return "".join(parts)


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
            f"<td>{_e(name)}</td><td>{_e(w['workload_class'])}</td>"
            f'<td class="num">{_num(w["baseline"])}</td><td class="num">{_num(w["per_gpu"])}</td>'
            f'<td class="num">{_num(w["gpus_per_replica"])}</td>'
            f'<td>⌈{_num(w["baseline"])} / {_num(w["per_gpu"])}⌉ × {_num(w["gpus_per_replica"])}</td>'
            f'<td class="num">{_num(w["baseline_gpus"])}</td></tr>'
            if w["baseline_gpus"] is not None
            else f'<tr data-workload="{_e(name)}"><td>{_e(name)}</td><td>{_e(w["workload_class"])}</td>'
            '<td colspan="5" class="muted">not measured</td></tr>'
        )
    pf = pv.facts
    table = (
        '<table class="workloads"><thead><tr><th>workload</th><th>class</th>'
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
    parts.append(_findings_list(findings))
    parts.append("</section>")
    return "".join(parts)


def render(result: LintResult, settings: HtmlSettings | None = None) -> str:
    """The whole page for ``result`` (one string; the same input gives the same bytes)."""
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
        "<h2>Summary</h2>",
        _summary_cards(result, settings.fail_on),
        "<h3>Pools</h3>",
        _pool_table(subjects),
        "<h3>Findings by rule</h3>",
        _rule_table(result, settings.rules),
    ]
    if subjects.proposals:
        body.append("<h2>Proposals</h2>")
        for name in sorted(subjects.proposals):
            body.append(_proposal_section(subjects.proposals[name], subjects, settings))
    for cluster in sorted(clusters):
        body.append(f'<h2 id="cluster-{_e(cluster)}">Cluster {_e(cluster)}</h2>')
        for name in sorted(clusters[cluster]):
            body.append(_pool_section(subjects.pools[name], result.pools.get(name), subjects))
    from policylint.report.integrity_section import integrity_section

    body.append(integrity_section(subjects.workloads.values(), _e))
    # Everything not shown with its pool or proposal: clusters, documents, workloads outside any pool.
    shown = {f"proposal {name}" for name in subjects.proposals} | {v.label for v in subjects.pools.values()}
    shown |= {f"workload {w}" for v in subjects.pools.values() for w in v.facts["workload_names"]}
    others = [f for f in result.findings if f.subject not in shown]
    body.append("<h2>Other findings</h2>")
    body.append('<p class="muted">About clusters, documents (files that do not parse, schema errors, references) '
                "and workloads outside any pool.</p>")
    body.append(_findings_list(others))
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
