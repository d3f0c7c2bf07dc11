"""PL950's bound: what a pool may own under ``--diff``, by the evidence that changed since the base revision.

:func:`backed_by` fills the pool sheet's ``owned_gpus_allowed`` and the note that says what backs it;
:func:`policylint.engine.pool_view.history_facts` gathers what it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policylint.engine.sheets import PoolFactSheet


def _listed(names: Sequence[str]) -> str:
    from policylint.engine.checks import listed

    return listed(list(names))


def backed_by(
    sheet: PoolFactSheet, planned_before: int, baselines: tuple[int | None, int | None], rearranged: Sequence[str] = ()
) -> None:
    """PL950's bound: what the pool may own once its proposals are delivered, by the evidence since the base, in
    whole GPUs, exactly.

    What the pool's members ran on then is what the pool owned plus what the base's proposals asked
    for it (``planned_before``: a raise that takes delivery of them is no raise - red team,
    2026-12-06, round 16), plus the baselines of the members placed elsewhere then
    (``newcomer_baseline_gpus``: a pool merged from two is not a raise). Without changed
    measurements, that. With them, that grown in the ratio of today's pooled baseline to the
    base's measurements read with today's declarations - the demand the evidence added, not what a
    changed per-GPU figure did - from the larger of it and the pooled baseline the base declared (a
    pool below its demand then may catch up). When the base's pooled baseline, as the base declared it,
    is not known whole (``baselines``: as the base declared it, and with today's declarations), or
    today's is not, no growth is backed: a base that could not be read is no evidence (third red team,
    2026-12-07: traces kept behind a symbolic link, or in Git LFS, read at the base as the link's text
    or the pointer file, left the bound unknown and PL950 passed 53 -> 74).

    ``rearranged`` names the pool's changed traces that hold the base's samples moved in time
    (:data:`policylint.engine.history.MOVED`): no evidence, and, beside other changed evidence, what
    today's pooled baseline reads from them backs nothing either, so only the pooled baseline the base
    declared does (red team round 13, 2026-12-07: the nights rotated, with one job's end moved by a
    second in a job list, backed batch 20 -> 30 through the ratio of pooled baselines).
    """
    now = sheet.pooled.baseline_gpus
    newcomers = sheet.newcomer_baseline_gpus or 0
    carried = planned_before + newcomers
    moved_in = f", with {newcomers} for the workloads it took in" if newcomers else ""
    moved = (f"{_listed(rearranged)} {'holds' if len(rearranged) == 1 else 'hold'} the base revision's samples moved in"
             " time (re-timed, or reordered within the day), which is no evidence") if rearranged else ""
    if sheet.evidence_changed is False:
        sheet.owned_gpus_allowed = carried
        what = moved if moved else "no measurement of its workloads changed"
        sheet.backing_note = f"{what}{moved_in}: capacity grew without new evidence"
        return
    declared, read_now = baselines
    sheet.baseline_gpus_before = declared
    if declared is None or now is None:
        sheet.owned_gpus_allowed = carried
        which = "the base revision's measurements" if declared is None else "today's measurements"
        sheet.backing_note = (
            f"{which} cannot be read whole, so nothing measures what it carries{moved_in}: capacity grew without"
            " evidence that can be read"
        )
        return
    if moved and read_now is not None:
        sheet.owned_gpus_allowed = max(carried, declared + newcomers)
        sheet.backing_note = (
            f"{moved}, so only the pooled baseline the base declared ({declared}{moved_in}) backs it, at most"
            f" {sheet.owned_gpus_allowed}: capacity grew beyond its evidence"
        )
        return
    if read_now is None:
        # today's declarations do not read the base's files (a column added, a file renamed): nothing
        # tells the evidence from the declarations, so no growth is backed (red team round 12)
        sheet.owned_gpus_allowed = max(carried, declared + newcomers)
        sheet.backing_note = (
            f"the base revision's measurements cannot be read with today's declarations, so only the pooled baseline"
            f" the base declared ({declared}{moved_in}) backs it, at most {sheet.owned_gpus_allowed}: capacity grew"
            " beyond its evidence"
        )
        return
    start = max(carried, declared + newcomers)
    scaled = -(-start * now // read_now) if read_now > 0 else start
    sheet.owned_gpus_allowed = max(carried, scaled)
    how = f" (the base's files read with today's declarations; {declared} as the base declared them)" \
        if read_now != declared + newcomers else ""
    sheet.backing_note = (
        f"its new measurements move its pooled baseline from {read_now} to {now} GPU{'s' if now != 1 else ''}{how},"
        f" which backs at most {sheet.owned_gpus_allowed}: capacity grew beyond its new evidence"
    )
