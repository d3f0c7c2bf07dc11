"""Proposals on the review page: each request against the pooled baseline shortfall, the arithmetic written out.

A request's shortfall and allowance come from PL801's own function
(:func:`policylint.engine.shortfall.request_room`) and are written out, so that a
reviewer can follow the verdict; every other figure is read from the run's facts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from policylint.engine.shortfall import request_room
from policylint.measure.conversion import counts_gpus
from policylint.report.html_findings import Subjects, failing_findings, findings_list
from policylint.report.html_parts import SourceLinks, attr, cell, esc, num

if TYPE_CHECKING:
    from policylint.engine.view import View


def _gpu_formula(w: Mapping[str, Any]) -> str:
    """How a workload's own baseline GPUs follow from its band, as the conversion did it.

    A GPU-weighted trace (``trace_unit: gpus``: jobs counted by their GPUs) is GPU
    demand already and is not divided again; any other trace is concurrency, divided
    by the per-GPU concurrency and multiplied by the GPUs per replica.
    """
    if counts_gpus(w.get("trace_unit")):
        return f'⌈{num(w["baseline"])}⌉ (the trace counts GPUs: no conversion)'
    return f'⌈{num(w["baseline"])} / {num(w["per_gpu"])}⌉ × {num(w["gpus_per_replica"])}'


def _request_block(req: Mapping[str, Any], cluster: str, subjects: Subjects, headroom: float) -> str:
    """One request of a proposal with the shortfall arithmetic written out (PL801's formula)."""
    pool = f"{cluster}/{req['pool']}"
    pv = subjects.pools.get(pool)
    head = f"<h4>Request {req['index'] + 1}: {num(req['gpus'])} GPUs for pool {esc(pool)}</h4>"
    if pv is None or req["baseline_gpus"] is None or req["reserved"] is None:
        why = "the pool does not exist" if pv is None else "the pool's pooled baseline is unknown (no measured demand)"
        return (
            f'<div class="request" data-pool="{esc(pool)}" data-requested-gpus="{req["gpus"]}" data-verdict="unjudged">'
            f'{head}<p><span class="badge error">unjustified</span> {why}: nothing measured backs these GPUs.</p></div>'
        )
    base, reserved = int(req["baseline_gpus"]), int(req["reserved"])
    owned = int(req["owned"]) if req.get("owned") is not None else reserved
    shortfall, allowed = request_room(base, owned, headroom)
    if owned == reserved:
        owned_word = "reserved"
        owned_row = f'<tr><td>− reserved today</td><td class="num">{num(reserved)}</td><td></td></tr>'
    else:
        owned_word = "owned"
        owned_row = (f'<tr><td>− owned today</td><td class="num">{num(owned)}</td>'
                     f'<td>{esc(str(req.get("owned_parts") or ""))}</td></tr>')
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
            f'<tr data-workload="{esc(name)}" data-baseline-gpus="{attr(w["baseline_gpus"])}">'
            + cell("workload", esc(name)) + cell("class", esc(w["workload_class"]))
            + cell("baseline band (concurrency, p95 sustained)", num(w["baseline"]), "num")
            + cell("per-GPU concurrency", num(w["per_gpu"]), "num")
            + cell("GPUs per replica", num(w["gpus_per_replica"]), "num")
            + cell("GPUs", _gpu_formula(w))
            + cell("own baseline GPUs", num(w["baseline_gpus"]), "num") + "</tr>"
            if w["baseline_gpus"] is not None
            else f'<tr data-workload="{esc(name)}"><td>{esc(name)}</td><td>{esc(w["workload_class"])}</td>'
            '<td colspan="5" class="muted">not measured</td></tr>'
        )
    pf = pv.facts
    table = (
        '<table class="workloads stack"><thead><tr><th>workload</th><th>class</th>'
        '<th class="num">baseline band<br>(concurrency, p95 sustained)</th><th class="num">per-GPU concurrency</th>'
        '<th class="num">GPUs per replica</th><th>GPUs = ⌈band / per GPU⌉ × GPUs per replica</th>'
        '<th class="num">own baseline GPUs</th></tr></thead><tbody>' + "".join(rows) + "</tbody>"
        f'<tfoot><tr><td colspan="6">sum of the workloads\' own baselines</td><td class="num">{num(pf["baseline_gpus_sum"])}</td></tr>'
        f'<tr><td colspan="6"><b>pooled baseline</b>: p95 of the pool\'s sustained GPU demand, all workloads together'
        f' (cold start {num(pf["pooled_cold_start_seconds"])} s, {num(pf["pooled_window_days"])} days)</td>'
        f'<td class="num"><b>{num(base)}</b></td></tr></tfoot></table>'
    )
    verdict = (
        '<span class="badge ok">justified</span> the request is within the shortfall plus headroom'
        if within
        else f'<span class="badge error">exceeds</span> {num(total - allowed)} GPUs beyond what the baseline justifies'
    )
    others = [g for g in req.get("pool_proposals") or [] if total > req["gpus"]]
    arithmetic = (
        '<table class="arith"><tbody>'
        f'<tr><td>pooled baseline</td><td class="num">{num(base)}</td><td>GPUs the pool must carry on reserved capacity</td></tr>'
        + owned_row +
        f'<tr><td>= shortfall</td><td class="num">{num(shortfall)}</td><td>max(0, baseline − {owned_word})</td></tr>'
        f'<tr><td>allowed</td><td class="num">{num(allowed)}</td><td>⌈{num(shortfall)} × (1 + {headroom:.0%} headroom)⌉</td></tr>'
        f'<tr><td>requested</td><td class="num"><b>{num(req["gpus"])}</b></td><td>{"" if others else verdict}</td></tr>'
        + (
            f'<tr><td>all proposals for the pool</td><td class="num"><b>{num(total)}</b></td><td>{verdict}'
            f' ({", ".join(esc(g["name"]) + " " + num(g["gpus"]) for g in others)})</td></tr>'
            if others
            else ""
        )
        + "</tbody></table>"
    )
    return (
        f'<div class="request" data-pool="{esc(pool)}" data-requested-gpus="{req["gpus"]}" data-reserved-gpus="{reserved}"'
        f' data-baseline-gpus="{base}" data-shortfall-gpus="{shortfall}" data-allowed-gpus="{allowed}"'
        f' data-headroom="{attr(headroom)}" data-verdict="{"within" if within else "exceeds"}">'
        f"{head}{table}{arithmetic}"
        f'<p class="muted">The daily band ({num(pf["daily_gpus"])} GPUs pooled) is carried by elastic capacity and the '
        "peak band by the overflow policy; neither justifies buying GPUs.</p></div>"
    )


def proposal_section(
    view: View, subjects: Subjects, params: Mapping[str, Mapping[str, Any]], fail_on: str, links: SourceLinks
) -> str:
    """One proposal's section: the verdict, every request with its arithmetic, the findings behind it.

    ``params`` are the rules' effective options (PL801's headroom), ``fail_on`` the
    lowest severity that fails the run.
    """
    f = view.facts
    headroom = float((params.get("PL801") or {}).get("headroom", 0.15))
    findings = subjects.about(view.label)
    failing = failing_findings(findings, fail_on)
    verdict = (
        f'<span class="badge error">not justified</span> {len(failing)} finding{"s" if len(failing) != 1 else ""} '
        f"at {fail_on} or above"
        if failing
        else '<span class="badge ok">justified</span> no finding at '
        f"{esc(fail_on)} or above"
    )
    cited = [w for w in view.doc.data.get("spec", {}).get("workloads", []) if isinstance(w, str)] if isinstance(
        view.doc.data, dict
    ) else []
    parts = [
        f'<section class="proposal" id="proposal-{esc(f["name"])}" data-proposal="{esc(f["name"])}"'
        f' data-requested-gpus="{f["requested_gpus"]}" data-verdict="{"fail" if failing else "pass"}">',
        f"<h3>Proposal {esc(f['name'])} <span class=\"muted\">for cluster {esc(f['cluster'])}</span></h3>",
        f"<p>Verdict: {verdict}. Requested: {num(f['requested_gpus'])} GPUs in total. "
        f"Cites {f['cited_workloads']} workload{'s' if f['cited_workloads'] != 1 else ''}"
        + (f" ({', '.join(esc(w) for w in cited)})" if cited else "")
        + f", {f['cited_measured']} of them measured.</p>",
    ]
    if f["justification"]:
        parts.append(f'<p class="muted">Justification given: “{esc(f["justification"])}”</p>')
    for req in f["requests"]:
        parts.append(_request_block(req, str(f["cluster"]), subjects, headroom))
    parts.append("<h4>Findings that drive the verdict</h4>")
    parts.append(findings_list(findings, links))
    parts.append("</section>")
    return "".join(parts)
