"""What a change did, on the review page (``report --html --diff BASE``).

The capacity of every pool before and after, the measurement files added,
removed or changed, the findings new, fixed and unchanged, and before and after
charts on one GPU scale of every pool the change touches. The change itself is
computed by :mod:`policylint.report.change`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from policylint.report.html_findings import finding_item
from policylint.report.html_parts import SourceLinks, attr, cell, esc, num
from policylint.report.pool_section import LEGEND, bands, chart, has_curve, no_curve, pool_lines

if TYPE_CHECKING:
    from policylint.engine.result import LintResult
    from policylint.report.change import StateChange


def _moved(before: Any, after: Any) -> str:
    """``before → after`` of one figure (just the figure when it did not move)."""
    if before == after:
        return f'<span class="same">{num(before)}</span>'
    text = f"{num(before)} → <b>{num(after)}</b>"
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (before, after))
    if numbers and math.isfinite(float(after) - float(before)):
        text += f" ({'+' if after > before else '−'}{num(abs(after - before))})"
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
            f' data-{short}-before="{attr(pc.figure(fact)[0])}" data-{short}-after="{attr(pc.figure(fact)[1])}"'
            for fact, _, short in _CHANGE_FIGURES
        )
        name = f'<a href="#pool-{esc(pc.name)}">{esc(pc.name)}</a>' if pc.after is not None else esc(pc.name)
        cells = "".join(cell(title, _moved(*pc.figure(fact)), "num") for fact, title, _ in _CHANGE_FIGURES)
        rows.append(
            f'<tr class="{pc.status}" data-change-pool="{esc(pc.name)}" data-status="{pc.status}"{attrs}'
            f' data-new="{pc.new}" data-fixed="{pc.fixed}">' + cell("pool", name) + cell("change", pc.status)
            + cells + cell("findings new / fixed", f"{pc.new} / {pc.fixed}", "num") + "</tr>"
        )
    if not rows:
        return '<p class="muted">No pools in either state.</p>'
    head = "".join(f'<th class="num">{esc(title)}</th>' for _, title, _ in _CHANGE_FIGURES)
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
        where = f'<a href="{esc(href)}">{esc(ev.path)}</a>' if href is not None else esc(ev.path)
        size_before = ev.before.size if ev.before is not None else None
        size_after = ev.after.size if ev.after is not None else None
        rows.append(
            f'<tr data-evidence="{esc(ev.path)}" data-status="{ev.status}">' + cell("file", where)
            + cell("change", f"{ev.status} ({esc(ev.note)})") + cell("cited by", esc(", ".join(ev.cited_by)))
            + cell("bytes", _moved(size_before, size_after), "num") + "</tr>"
        )
    return (
        '<table class="stack change-evidence"><thead><tr><th>measurement file</th><th>change</th><th>cited by</th>'
        f'<th class="num">bytes</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _change_findings(change: StateChange, links: SourceLinks) -> str:
    fc = change.findings
    parts = [f'<h4>New <span class="muted">({len(fc.new)})</span></h4>']
    if fc.new:
        items = [finding_item(f, links, f'data-change="new" data-change-code="{esc(f.code)}"') for f in fc.new]
        parts.append(f'<ul class="findings">{"".join(items)}</ul>')
    else:
        parts.append('<p class="muted">The change brings no finding.</p>')
    parts.append(f'<h4>Fixed <span class="muted">({len(fc.fixed)})</span></h4>')
    if fc.fixed:
        items = [
            finding_item(f, links, f'data-change="fixed" data-change-code="{esc(f.code)}"', base=True) for f in fc.fixed
        ]
        parts.append(f'<ul class="findings">{"".join(items)}</ul>')
    else:
        parts.append('<p class="muted">The change fixes no finding.</p>')
    if fc.unchanged:
        items = [
            finding_item(
                now,
                links,
                f'data-change="unchanged" data-change-code="{esc(now.code)}"',
                extra=f'<br><span class="was">before: {esc(was.message)}</span>' if was.message != now.message else "",
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
            if facts is not None and pooled is not None and has_curve(facts, pooled) and pooled.grid is not None:
                top = max(top, highest(pooled.grid.pooled, bands(facts), pool_lines(facts)))
        parts.append(f'<div class="states" data-chart-pool="{esc(pc.name)}"><h4>Pool {esc(pc.name)}</h4>')
        for state, title, facts, pooled in states:
            parts.append(f'<h5 data-state="{state}">{esc(title)}</h5>')
            if facts is None:
                parts.append(f'<p class="muted">The pool does not exist {"before" if state == "before" else "after"} the change.</p>')
            elif pooled is None or not has_curve(facts, pooled):
                parts.append(f'<p class="muted">No pooled demand curve: {no_curve(facts)}.</p>')
            else:
                svg, _ = chart(facts, pooled, f"pooled GPU demand of pool {pc.name}, {state} the change", y_top=top)
                parts.append(svg)
        parts.append("</div>")
    if not parts:
        return '<p class="muted">The change touches no pool.</p>'
    return LEGEND + "".join(parts)


def change_section(change: StateChange, result: LintResult, links: SourceLinks) -> str:
    """The section that leads the page: what the change from its base did."""
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
    head = f" (commit <code>{esc(change.head_commit[:12])}</code> and any edits not committed)" if change.head_commit else ""
    return (
        f'<section class="change" id="change" data-base="{esc(change.base)}" data-base-commit="{esc(change.base_commit)}">'
        "<h2>What the change does</h2>"
        f"<p>Before: the repository at <code>{esc(change.base)}</code> (commit <code>{esc(change.base_commit[:12])}</code>). "
        f"After: the working tree{head}. Both are linted by the same pipeline with the same configuration, rules and "
        "baseline, so every difference below is one of the documents and measurements. The rest of the page shows "
        f'the state after the change.</p><div class="cards">{cards}</div>'
        "<h3>Capacity per pool</h3>" + _change_pools(change)
        + "<h3>Demand evidence</h3>" + _change_evidence(change, links)
        + "<h3>Findings</h3>" + _change_findings(change, links)
        + "<h3>Pooled demand before and after</h3>" + _change_charts(change, result)
        + "</section>"
    )
