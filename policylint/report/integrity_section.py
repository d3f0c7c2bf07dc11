"""The "Evidence integrity" section of the review page: each traced workload's integrity facts.

Kept apart from :mod:`policylint.report.html_report` so the page only calls it; the
escaping function is the page's own, passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from policylint.measure.integrity_facts import IntegrityWorkloadFacts
from policylint.report.html_parts import duration

if TYPE_CHECKING:
    from policylint.engine.view import View

#: (fact, column heading, how to show it)
_COLUMNS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("series_fingerprint", "series fingerprint", lambda v: str(v)[:12]),
    ("double_count_basis", "repeats another workload's series", lambda v: str(v)),
    ("repeated_days", "days that repeat another", lambda v: str(v)),
    ("seconds_after_now", "runs past now", lambda v: duration(float(v))),
    ("resolution_step_seconds", "real step", lambda v: f"{float(v):,.0f} s"),
    ("step_seconds", "declared step", lambda v: f"{float(v):,.0f} s"),
    ("roughness", "roughness", lambda v: f"{float(v):.3f}"),
    ("excluded_share", "excluded", lambda v: f"{float(v):.1%}"),
    ("exclusion_count", "exclusion ranges", lambda v: str(v)),
    ("exclusion_recurring", "most at one time of day", lambda v: str(v)),
    ("excluded_top_share", "busiest 5% excluded", lambda v: f"{float(v):.0%}"),
    ("outlier_days_removed", "outlier days removed", lambda v: str(v)),
)


#: Workload facts of the plausibility group that live outside :class:`policylint.measure.integrity_facts.IntegrityWorkloadFacts`.
_VIEW_FACTS = ("double_count_basis", "vram_exceeds_gpu_memory", "vram_declared_gib", "vram_trace_gib")


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _all_facts(view: View, escape: Callable[[object], str]) -> str:
    """Every integrity fact of one workload, as a definition list in a closed details element."""
    names = [*IntegrityWorkloadFacts.routes(), *_VIEW_FACTS]
    items = "".join(
        f'<dt>{escape(name)}</dt><dd data-fact="{escape(name)}">'
        f'{"—" if view.facts.get(name) is None else escape(_shown(view.facts[name]))}</dd>'
        for name in names
    )
    return (
        f'<details data-workload="{escape(view.facts["name"])}"><summary>{escape(view.facts["name"])}: every'
        f" integrity fact</summary><dl>{items}</dl></details>"
    )


def integrity_section(workloads: Iterable[View], escape: Callable[[object], str]) -> str:
    """A table of the integrity facts of every workload with a readable trace ('' when there is none)."""
    rows = []
    details = []
    for view in sorted(workloads, key=lambda v: str(v.facts.get("name"))):
        f = view.facts
        if not f.get("series_fingerprint"):
            continue
        details.append(_all_facts(view, escape))
        cells = "".join(
            f'<td data-fact="{escape(fact)}">{escape(show(f[fact])) if f.get(fact) is not None else "—"}</td>'
            for fact, _, show in _COLUMNS
        )
        rows.append(f'<tr data-workload="{escape(f["name"])}"><td>{escape(f["name"])}</td>{cells}</tr>')
    if not rows:
        return ""
    head = "".join(f"<th>{escape(title)}</th>" for _, title, _ in _COLUMNS)
    return (
        '<h2 id="integrity">Evidence integrity</h2>'
        '<p class="muted">What the integrity stage found in each trace before the rules judged it: its identity'
        " (two workloads with one fingerprint count one demand twice, a day that repeats another is a copy),"
        " whether it runs past now, its real"
        " resolution and smoothness, and how much of it the declared exclusions remove (rules PL111, PL960-PL966)."
        "</p>"
        f'<table class="integrity"><thead><tr><th>workload</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
        + "".join(details)
    )
