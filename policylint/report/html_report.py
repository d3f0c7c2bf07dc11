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
judged and ``check --format json`` / ``bands --pool --format json`` print; a
proposal's shortfall and allowance are PL801's own function's, written out so
that a reviewer can follow them. The numbers are also
written as ``data-*`` attributes so that tools (and the tests) can read them.

The page is assembled here from its sections: :mod:`~policylint.report.change_section`,
:mod:`~policylint.report.pool_section`, :mod:`~policylint.report.proposal_section`,
:mod:`~policylint.report.plan_section` and :mod:`~policylint.report.integrity_section`;
findings are shown by :mod:`~policylint.report.html_findings` and every value is
escaped by :mod:`~policylint.report.html_parts`.

The page has no script, no external font, image or style sheet: nothing is
fetched when it opens. The output depends only on the input (no clock, no
random identifiers, sorted everywhere), and everything a user wrote (names,
messages, justifications) is HTML-escaped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from policylint import __version__
from policylint.report.change_section import change_section
from policylint.report.html_findings import Subjects, badge, failing_findings, findings_list
from policylint.report.html_parts import SourceLinks
from policylint.report.html_parts import cell as _cell
from policylint.report.html_parts import esc as _e
from policylint.report.pool_section import pool_section, pool_table
from policylint.report.proposal_section import proposal_section

if TYPE_CHECKING:
    from policylint.engine.result import LintResult
    from policylint.report.change import StateChange
    from policylint.report.plan_section import PlanOutcome

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
    #: where file:line places link to
    links: SourceLinks = field(default_factory=SourceLinks)


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


def _summary_cards(result: LintResult, fail_on: str) -> str:
    from policylint.report.json_report import summary

    s = summary(result)
    failing = len(failing_findings(result.findings, fail_on))
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
            + _cell("name", f"<code>{_e(name)}</code>") + _cell("severity", badge(severity))
            + _cell("findings", str(n), "num") + _cell("what it checks", _e(summary)) + "</tr>"
        )
    return (
        '<table class="rules stack"><thead><tr><th>rule</th><th>name</th><th>severity</th><th class="num">findings</th>'
        "<th>what it checks</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
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
    subjects = Subjects.of(result)
    clusters: dict[str, list[str]] = {}
    for name, view in subjects.pools.items():
        clusters.setdefault(str(view.facts["cluster"]), []).append(name)
    body: list[str] = [
        f"<h1>{_e(settings.title)}</h1>",
        f'<p class="muted">policylint {_e(__version__)} — every number below comes from the same run as '
        "<code>policylint check</code>: the pooled demand of each pool (p95, p99 and maximum of the sustained "
        "GPU demand of all its workloads together) and the findings of the rules.</p>",
        *([change_section(change, result, settings.links)] if change is not None else []),
        "<h2>Summary</h2>",
        _summary_cards(result, settings.fail_on),
        "<h3>Pools</h3>",
        pool_table(subjects),
        "<h3>Findings by rule</h3>",
        _rule_table(result, settings.rules),
    ]
    if plan is not None:
        from policylint.report.plan_section import plan_section

        body.append(plan_section(plan, set(subjects.pools), settings.links))
    if subjects.proposals:
        body.append("<h2>Proposals</h2>")
        for name in sorted(subjects.proposals):
            body.append(proposal_section(subjects.proposals[name], subjects, settings.params, settings.fail_on, settings.links))
    for cluster in sorted(clusters):
        body.append(f'<h2 id="cluster-{_e(cluster)}">Cluster {_e(cluster)}</h2>')
        for name in sorted(clusters[cluster]):
            body.append(pool_section(subjects.pools[name], result.pools.get(name), subjects, settings.links))
    from policylint.report.integrity_section import integrity_section

    body.append(integrity_section(subjects.workloads.values(), _e))
    # Everything not shown with its pool or proposal: clusters, documents, workloads outside any pool.
    shown = {f"proposal {name}" for name in subjects.proposals} | {v.label for v in subjects.pools.values()}
    shown |= {f"workload {w}" for v in subjects.pools.values() for w in v.facts["workload_names"]}
    others = [f for f in result.findings if f.subject not in shown]
    body.append("<h2>Other findings</h2>")
    body.append('<p class="muted">About clusters, documents (files that do not parse, schema errors, references) '
                "and workloads outside any pool.</p>")
    body.append(findings_list(others, settings.links))
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
