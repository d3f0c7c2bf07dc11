"""A message names a dozen workloads of a fleet's pool, then how many more: never all of them.

At 10,000 workloads in one pool the queue rules' messages listed every workload they
were about (152 KB for one PL207 finding); a terminal, a pull request annotation or a
SARIF viewer shows none of that usefully. The verdict and its figures are unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest

from policylint.engine import checks
from policylint.engine.messages import render


def test_listed_names_the_first_dozen_then_counts_the_rest() -> None:
    names = [f"w-{i}" for i in range(30)]
    assert checks.listed(names[:12]) == ", ".join(names[:12])
    assert checks.listed(names[:13]) == ", ".join(names[:12]) + " and 1 more"
    assert checks.listed(names) == ", ".join(names[:12]) + " and 18 more"
    assert checks.listed([]) == ""
    assert checks.listed(names, 3) == "w-0, w-1, w-2 and 27 more"


def _tolerances(n: int) -> list[dict[str, Any]]:
    return [{"name": f"w-{i}", "tolerance_seconds": float(1 + i % 900)} for i in range(n)]


@pytest.mark.parametrize("n", [5, 5000])
def test_queue_rules_list_at_most_a_dozen_workloads(n: int) -> None:
    facts = {"workload_tolerances": _tolerances(n), "daily_max_wait_seconds": 2000.0, "queue_max_wait_seconds": 0.5,
             "daily_rejected_share": 0.9, "queue_max_depth": 1,
             "queue_needs": [{"name": f"w-{i}", "queue_depth_needed": 5 + i} for i in range(n)]}
    params = {"max_rejected_share": 0.01, "realtime_seconds": 10, "queue_tolerant_seconds": 1}
    found = {
        "PL203": checks.queue_cannot_absorb({**facts, "queue_max_wait_seconds": None}, params)[0]["over_workloads"],
        "PL206": checks.queue_depth_short(facts, params)[0]["short_workloads"],
        "PL207": checks.queue_wait_below_tolerance(facts, params)[0]["cut_workloads"],
        "PL306": checks.realtime_mixed(facts, params)[0]["queue_tolerant_workloads"],
    }
    for code, text in found.items():
        shown = text.split(" and ")[0].split(", ")
        assert len(shown) == min(n, 12), code
        assert (f" and {n - 12} more" in text) == (n > 12), code
    # the figures the verdict compares still come from the whole list: the deepest need is the last workload's
    assert checks.queue_depth_short(facts, params)[0]["depth_needed"] == 5 + n - 1
    assert checks.queue_depth_short(facts, params)[0]["short_workloads"].startswith(f"w-{n - 1} {5 + n - 1}")


def test_a_list_fact_in_a_template_is_capped_too() -> None:
    assert render("{xs}", {"xs": list(range(20))}) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 8 more"
    assert render("{xs}", {"xs": []}) == "none"
