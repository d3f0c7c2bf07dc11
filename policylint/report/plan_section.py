"""The "Planned vs today" section of the review page (``report --html FILE --plan``).

:func:`make_plan` makes the plan the way ``policylint plan PATH --format json`` makes it
(:mod:`policylint.commands.plan`, default inputs: no what-if), from the same
configuration and date as the page, and returns that command's JSON document; a
repository the plan command would refuse gets the reason instead. The only
difference from the command's document is the file of each finding a difference
resolves: relative to the repository root, as every path on the page
(:func:`policylint.report.paths.rebase`).

:func:`plan_section` writes the document as HTML: the totals, clusters and pools of
today next to the plan, the findings each difference resolves, and per planned pool
every number with its derivation (measurement, band, rule). Every figure is read from
the document, none is computed here; each is also in a ``data-*`` attribute so that the
tests compare it with ``plan --format json`` figure by figure.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policylint.report.html_parts import SourceLinks, attr, cell, esc, num

__all__ = ["PlanOutcome", "make_plan", "plan_section"]


@dataclass(frozen=True)
class PlanOutcome:
    """The plan's JSON document (as ``plan --format json`` prints it), or why there is none."""

    document: dict[str, Any] | None
    reason: str | None = None
    #: the folder the plan was made for, as given
    path: str = "."


def make_plan(
    path: Path,
    *,
    config: Path | None,
    isolated: bool,
    root: Path | None,
    now: str | None,
    when: dt.datetime | None = None,
) -> PlanOutcome:
    """The plan of the repository at ``path``, step by step as :func:`policylint.commands.plan.run` makes it.

    ``config``, ``isolated``, ``root`` and ``now`` are the page's options of those names;
    ``when`` the instant the page judges staleness at, when it fixed one. Errors that stop
    the plan command (a model with errors, nothing to plan) become the outcome's reason:
    the page is still written, and its exit code stays that of its own findings.
    """
    from policylint.plan.pipeline import Refused, planned
    from policylint.errors import PolicylintError
    from policylint.plan import Unplaced, WhatIf
    from policylint.report.paths import rebase, repository_root

    shown = path.as_posix()
    args = argparse.Namespace(path=path, config=config, isolated=isolated, root=root, now=now)

    def today(result: Any, top: Path) -> Any:
        # the page's paths: relative to the repository root
        return rebase(result, repository_root(top), top).findings

    said = io.StringIO()
    try:
        # the plan command's own defaults: no what-if, no GPU type for unplaced workloads
        with contextlib.redirect_stderr(said), planned(
            path, args, whatif=WhatIf(), unplaced=Unplaced(), when=when,
            hint=" (`policylint plan --gpu MODEL=GIB` gives one)", current=today,
        ) as made:
            document = made.document
    except Refused:
        lines = said.getvalue().splitlines()
        return PlanOutcome(None, lines[-1].removeprefix("policylint: ") if lines else "the model has errors", shown)
    except PolicylintError as exc:
        return PlanOutcome(None, str(exc), shown)
    return PlanOutcome(document, None, shown)


# --------------------------------------------------------------------------- rendering

#: The planned pool's fields in the order of a Cluster pool (``PlannedPool.spec``), with their names on the page.
_FIELDS = (
    ("reservedGpus", "reserved GPUs"),
    ("elastic.maxGpus", "elastic GPUs"),
    ("elastic.coldStartSeconds", "elastic cold start (s)"),
    ("overflow", "overflow"),
    ("queue.maxDepth", "queue depth"),
    ("queue.maxWaitSeconds", "queue wait (s)"),
    ("scheduling.gang", "gang scheduling"),
    ("scheduling.preemption", "preemption"),
)

#: Facts of a derivation besides value, band, measurement and rule, with their names on the page.
_EXTRA = {
    "capacity_gpus": "capacity (reserved + elastic)",
    "tolerance_capacity_gpus": "capacity the tightest tolerance needs",
    "tightest_tolerance_seconds": "tightest tolerance (s)",
    "per_workload": "per workload",
    "sized_by": "capacity sized by",
    "queueing_saves_gpus": "what queueing to the tolerance saves",
}


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return str(num(value))
    if value is None:
        return "–"
    return str(esc(value))


def _extras(entry: Mapping[str, Any]) -> str:
    parts = []
    for key in sorted(k for k in entry if k not in ("value", "band", "band_gpus", "measurement", "rule")):
        value = entry[key]
        name = _EXTRA.get(key, key.replace("_", " "))
        if isinstance(value, Mapping):
            shown = ", ".join(f"{esc(k)} {_value(v)}" for k, v in value.items())
        else:
            shown = _value(value)
        parts.append(f'<span data-extra="{esc(key)}">{esc(name)}: {shown}</span>')
    return f'<br><span class="muted">{"; ".join(parts)}</span>' if parts else ""


def _derivation_table(pool: Mapping[str, Any]) -> str:
    d = pool["derivation"]
    known = [k for k, _ in _FIELDS]
    order = [(k, name) for k, name in _FIELDS if k in d] + [(k, k) for k in sorted(d) if k not in known]
    rows = []
    for key, name in order:
        entry = d[key]
        band = entry.get("band")
        band_text = f'{esc(band)} {num(entry["band_gpus"])} GPUs' if band is not None and "band_gpus" in entry else _value(band)
        rows.append(
            f'<tr data-derivation="{esc(key)}" data-value="{attr(entry.get("value"))}"'
            f' data-band="{attr(band)}" data-band-gpus="{attr(entry.get("band_gpus"))}">'
            + cell("field", f"<b>{esc(name)}</b><br><code>{esc(key)}</code>")
            + cell("planned", _value(entry.get("value")), "num")
            + cell("measurement", esc(entry["measurement"]) if entry.get("measurement") else "–")
            + cell("band", band_text)
            + cell("rule", esc(entry.get("rule", "")) + _extras(entry))
            + "</tr>"
        )
    return (
        '<table class="stack derivation"><thead><tr><th>field</th><th class="num">planned</th><th>measurement</th>'
        f'<th>band</th><th>rule</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _planned_pool(pool: Mapping[str, Any], origin: Sequence[str], today: set[str]) -> str:
    name = f'{pool["cluster"]}/{pool["pool"]}'
    gpu = pool["gpu"]
    attrs = {
        "planned-pool": name,
        "measured": pool["measured"],
        "reserved-gpus": pool["reserved_gpus"],
        "elastic-gpus": pool["elastic_gpus"],
        "capacity-gpus": pool["capacity_gpus"],
        "cold-start-seconds": pool["cold_start_seconds"],
        "overflow": pool["overflow"],
        "max-depth": pool["queue"]["max_depth"],
        "max-wait-seconds": pool["queue"]["max_wait_seconds"],
        "gang": pool["scheduling"]["gang"],
        "preemption": pool["scheduling"]["preemption"],
        "pooling-saves-gpus": pool["pooling_saves_gpus"],
        "workloads": ",".join(pool["workloads"]),
        "from": ",".join(origin),
    }
    head = "".join(f' data-{k}="{attr(v)}"' for k, v in attrs.items())
    came = ", ".join(
        f'<a href="#pool-{esc(p)}">{esc(p)}</a>' if p in today else esc(p) for p in origin
    ) or "no pool today"
    parts = [
        f'<div class="pool plan-pool" id="plan-pool-{esc(name)}"{head}>',
        f"<h4>Planned pool {esc(name)}</h4>",
        f'<p>{esc(pool["class"])} on {esc(gpu.get("model"))} ({num(gpu.get("memoryGiB"))} GiB), {esc(pool["tier"])}'
        f'; workloads: {", ".join(esc(w) for w in pool["workloads"])}; today in: {came}. '
        f'Reserved {num(pool["reserved_gpus"])} + elastic {num(pool["elastic_gpus"])} = '
        f'<b>{num(pool["capacity_gpus"])}</b> GPUs.</p>',
    ]
    bands = pool["pooled"]
    if bands is not None:
        sums = bands.get("sum_of_member_bands_gpus")
        parts.append(
            f'<p class="muted" data-pooled-baseline-gpus="{attr(bands["baseline_gpus"])}"'
            f' data-pooled-daily-gpus="{attr(bands["daily_gpus"])}" data-pooled-peak-gpus="{attr(bands["peak_gpus"])}">'
            f'Pooled bands: baseline {num(bands["baseline_gpus"])}, daily {num(bands["daily_gpus"])}, peak '
            f'{num(bands["peak_gpus"])} GPUs over {num(bands["window_days"])} days at {num(bands["step_seconds"])} s steps'
            + (
                f'; the workloads\' own bands summed: {num(sums["baseline"])}, {num(sums["daily"])}, {num(sums["peak"])}'
                if sums
                else ""
            )
            + ".</p>"
        )
    apart = pool["apart"]
    if apart is not None and len(pool["workloads"]) > 1:
        parts.append(
            f'<p>Pooling saves <b>{num(pool["pooling_saves_gpus"])}</b> GPUs: planned apart these workloads would need '
            f'{num(apart["capacity"])} (reserved {num(apart["reserved"])}), together {num(pool["capacity_gpus"])} '
            f'(reserved {num(pool["reserved_gpus"])}).</p>'
        )
    parts.append(_derivation_table(pool))
    reasons = "".join(
        f'<li data-reason="{esc(w)}"><b>{esc(w)}</b>: {esc(why)}</li>' for w, why in pool["reasons"].items()
    )
    parts.append(f'<p class="muted">Why each workload sits here:</p><ul class="reasons">{reasons}</ul></div>')
    return "".join(parts)


def _planned_table(planned: Sequence[Mapping[str, Any]], today: set[str]) -> str:
    rows = "".join(
        f'<tr data-planned-row="{esc(p["pool"])}" data-reserved-gpus="{attr(p["reserved_gpus"])}"'
        f' data-elastic-gpus="{attr(p["elastic_gpus"])}">'
        + cell("planned pool", f'<a href="#plan-pool-{esc(p["pool"])}">{esc(p["pool"])}</a>')
        + cell("workloads", esc(", ".join(p["workloads"])))
        + cell("reserved", num(p["reserved_gpus"]), "num") + cell("elastic", num(p["elastic_gpus"]), "num")
        + cell(
            "today in",
            ", ".join(f'<a href="#pool-{esc(x)}">{esc(x)}</a>' if x in today else esc(x) for x in p["from"]) or "–",
        )
        + "</tr>"
        for p in planned
    )
    return (
        '<table class="stack plan-planned"><thead><tr><th>planned pool</th><th>workloads</th><th class="num">reserved</th>'
        f'<th class="num">elastic</th><th>today in</th></tr></thead><tbody>{rows}</tbody></table>'
    )


def _totals(total: Mapping[str, Any]) -> str:
    today, planned = total["today"], total["planned"]
    rows = "".join(
        f'<tr data-plan-total="{key}" data-today="{attr(today[key])}" data-planned="{attr(planned[key])}">'
        + cell("GPUs", label) + cell("today", num(today[key]), "num")
        + cell("planned", num(planned[key]), "num") + "</tr>"
        for key, label in (
            ("reserved_gpus", "reserved"),
            ("elastic_gpus", "elastic"),
            ("proposed_gpus", "proposed"),
            ("total_gpus", "<b>in all</b>"),
        )
    )
    return (
        '<table class="plan-total"><thead><tr><th>GPUs</th><th class="num">today</th><th class="num">planned</th>'
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def _savings(saves: Mapping[str, int]) -> str:
    from policylint.plan.pipeline import savings_words as words

    sentence = words(dict(saves))
    return (
        f'<p class="plan-saves" data-saves-reserved-gpus="{saves["reserved_gpus"]}"'
        f' data-saves-total-gpus="{saves["total_gpus"]}"><b>{esc(sentence[:1].upper() + sentence[1:])}.</b></p>'
    )


def _clusters(clusters: Mapping[str, Mapping[str, int]]) -> str:
    keys = (
        ("today_reserved", "reserved today"),
        ("today_elastic", "elastic today"),
        ("today_proposed", "proposed today"),
        ("planned_reserved", "planned reserved"),
        ("planned_elastic", "planned elastic"),
    )
    rows = "".join(
        f'<tr data-plan-cluster="{esc(name)}"' + "".join(f' data-{k.replace("_", "-")}="{attr(c[k])}"' for k, _ in keys) + ">"
        + cell("cluster", esc(name)) + "".join(cell(label, num(c[k]), "num") for k, label in keys) + "</tr>"
        for name, c in clusters.items()
    )
    head = "".join(f'<th class="num">{label}</th>' for _, label in keys)
    return f'<table class="stack plan-clusters"><thead><tr><th>cluster</th>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _resolved_item(finding: Mapping[str, Any], links: SourceLinks) -> str:
    where = f'{esc(finding["file"])}:{finding["line"]}'
    href = links.href(str(finding["file"]), int(finding["line"]))
    if href is not None:
        where = f'<a href="{esc(href)}">{where}</a>'
    return (
        f'<li data-resolves-code="{esc(finding["code"])}" data-resolves-subject="{esc(finding["subject"])}">'
        f'<b>{esc(finding["code"])}</b> <code>{esc(finding["name"])}</code> — {esc(finding["message"])} <span class="muted">({where})</span></li>'
    )


def _today(current: Sequence[Mapping[str, Any]], planned: set[str], today: set[str], links: SourceLinks) -> str:
    rows, lists = [], []
    for c in current:
        name = str(c["pool"])
        codes = sorted({str(finding["code"]) for finding in c["resolves"]})
        moved = ", ".join(
            f'<a href="#plan-pool-{esc(p)}">{esc(p)}</a>' if p in planned else esc(p) for p in c["planned_in"]
        ) or "–"
        pool = f'<a href="#pool-{esc(name)}">{esc(name)}</a>' if name in today else esc(name)
        rows.append(
            f'<tr data-today-pool="{esc(name)}" data-reserved-gpus="{attr(c["reserved_gpus"])}"'
            f' data-elastic-gpus="{attr(c["elastic_gpus"])}" data-proposed-gpus="{attr(c["proposed_gpus"])}"'
            f' data-planned-in="{esc(",".join(c["planned_in"]))}" data-resolves="{len(c["resolves"])}">'
            + cell("today's pool", pool) + cell("workloads", esc(", ".join(c["workloads"])) or "–")
            + cell("reserved", num(c["reserved_gpus"]), "num") + cell("elastic", num(c["elastic_gpus"]), "num")
            + cell("proposed", num(c["proposed_gpus"]), "num") + cell("planned in", moved)
            + cell("resolves", ", ".join(esc(x) for x in codes) or "–") + "</tr>"
        )
        if c["resolves"]:
            items = "".join(_resolved_item(f, links) for f in c["resolves"])
            n = len(c["resolves"])
            lists.append(
                f'<details data-resolved-by="{esc(name)}"><summary>{esc(name)}: {n} finding{"s" if n != 1 else ""}'
                f' ({", ".join(esc(x) for x in codes)})</summary><ul class="findings">{items}</ul></details>'
            )
    table = (
        '<table class="stack plan-today"><thead><tr><th>today\'s pool</th><th>workloads</th><th class="num">reserved</th>'
        '<th class="num">elastic</th><th class="num">proposed</th><th>planned in</th><th>resolves</th></tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table>'
    )
    resolved = (
        "<h4>What each difference resolves</h4>"
        '<p class="muted">The sizing findings about each of today\'s pools, its workloads and the proposals for it '
        "that <code>check</code> no longer reports on the planned repository (each is also listed with its pool "
        "below).</p>" + "".join(lists)
        if lists
        else '<p class="muted">No sizing finding to resolve.</p>'
    )
    return table + resolved


def plan_section(outcome: PlanOutcome, today: set[str], links: SourceLinks) -> str:
    """The section for the page; ``today`` holds the pools the page shows (for links to them)."""
    intro = (
        '<h2>Planned vs today</h2>'
        f"<p>The capacity plan the measurements justify, as <code>policylint plan {esc(outcome.path)} --format json</code> "
        "prints it with this page's configuration and date: pools derived from the workloads' class, GPU and "
        "tolerance, each sized from its pooled bands, next to today's pools and open proposals. See "
        "docs/plan.md of the policylint repository.</p>"
    )
    if outcome.document is None:
        return (
            f'<section class="plan" id="plan" data-plan="none">{intro}'
            f'<p><span class="badge warning">no plan</span> {esc(outcome.reason or "")}</p></section>'
        )
    doc = outcome.document
    plan, comparison, check = doc["plan"], doc["comparison"], doc["check"]
    total = comparison["total"]
    attrs = "".join(
        f' data-{state}-{key.replace("_", "-")}="{attr(value)}"'
        for state in ("today", "planned")
        for key, value in total[state].items()
    )
    verdict = (
        '<span class="badge ok">passes</span> <code>check</code> on the planned repository reports no finding the plan'
        " answers for"
        if check["passes"]
        else f'<span class="badge error">fails</span> <code>check</code> on the planned repository reports '
        f'{len(check["sizing_findings"])} finding{"s" if len(check["sizing_findings"]) != 1 else ""} the plan answers for: '
        + "; ".join(
            f'{esc(finding["code"])} {esc(finding["message"])}'
            + (f' ({esc(finding["because"])})' if finding.get("because") else "")
            for finding in check["sizing_findings"]
        )
    )
    notes = []
    if comparison["unmeasured_workloads"]:
        notes.append(
            "Not counted: the GPUs of " + ", ".join(esc(n) for n in comparison["unmeasured_workloads"])
            + " (no measured GPU demand; measure them before buying for them)."
        )
    for name, why in plan["unplaced"].items():
        notes.append(f"Not planned: {esc(name)}: {esc(why)}.")
    origins = {p["pool"]: list(p["from"]) for p in comparison["planned_pools"]}
    planned_names = set(origins)
    pools = "".join(
        _planned_pool(p, origins.get(f'{p["cluster"]}/{p["pool"]}', []), today) for p in plan["pools"]
    )
    return (
        f'<section class="plan" id="plan" data-plan="made" data-passes="{attr(check["passes"])}"'
        f' data-sizing-findings="{len(check["sizing_findings"])}"{attrs}>{intro}'
        f'<p class="verdict">Plan: {verdict}.</p>'
        "<h3>In total</h3>" + _totals(total) + _savings(total["saves"])
        + "".join(f'<p class="muted">{n}</p>' for n in notes)
        + "<h3>Per cluster</h3>" + _clusters(comparison["clusters"])
        + "<h3>Today's pools</h3>" + _today(comparison["current_pools"], planned_names, today, links)
        + "<h3>Planned pools</h3>" + _planned_table(comparison["planned_pools"], today)
        + '<p class="muted">Every planned number with the measurement, the band and the rule it comes from '
        "(the <code>derivation</code> of <code>plan --format json</code>, keyed by its Cluster YAML field).</p>"
        + pools + "</section>"
    )
