"""A proposal's room: the shortfall of a pool's baseline and what a request may add to it (PL801).

One function for the check (:func:`policylint.engine.checks.proposal_exceeds_shortfall`), its
fix (:func:`policylint.edit.rewrites.request_fixes`) and the review page
(:mod:`policylint.report.proposal_section`), so that all three show the same figures.
"""

from __future__ import annotations

import math


def request_room(baseline: int, owned: int, headroom: float) -> tuple[int, int]:
    """(shortfall, allowed) of a pool's proposals (PL801): baseline GPUs - owned GPUs, at least 0, and that
    with ``headroom`` rounded up. The one definition: the check, its fix and the HTML report read it here.

    Owned, not reserved: a Kueue flavor's lendable quota is bought all the same (red team, 2026-12-07: a
    ``lendingLimit`` read as a shortfall made a 19-GPU purchase for a pool that owned its whole baseline), and so
    is a Volcano parent's guarantee that no other queue may use (:attr:`policylint.model.Pool.parent_only_gpus`).
    """
    shortfall = max(0, baseline - owned)
    return shortfall, math.ceil(shortfall * (1 + headroom) - 1e-9)


def owned_parts(reserved: int, lent: int, parent_only: int) -> str:
    """What the GPUs a purchase is measured against are made of: 'reserved R + L of nominal quota ... + P of ...'."""
    parts = [f"reserved {reserved}"]
    if lent:
        parts.append(f"{lent} of nominal quota it may lend to its cohort")
    if parent_only:
        parts.append(f"{parent_only} of its parent queues' guarantee that no other queue may use")
    return " + ".join(parts)


def owned_text(reserved: int, lent: int, parent_only: int) -> str:
    """PL801's text for what the shortfall subtracts: 'reserved R', or 'owned O (the parts, :func:`owned_parts`)'."""
    if not lent and not parent_only:
        return f"reserved {reserved}"
    return f"owned {reserved + lent + parent_only} ({owned_parts(reserved, lent, parent_only)})"
