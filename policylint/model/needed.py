"""The part of a model a narrowed run measures and judges.

:func:`policylint.engine.scope.needed` decides it from what a change reaches;
measuring (:func:`policylint.measure.measure`, :func:`policylint.measure.measure_pools`)
and building the views (:func:`policylint.engine.views.build_views`) then leave the
rest of the model alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Needed:
    """The part of a model whose facts a narrowed run reads: its views are built, the rest are not.

    Names as the model keys them: workloads by name, pools by ``cluster/pool``,
    clusters and proposals by name.
    """

    workloads: frozenset[str]
    pools: frozenset[str]
    clusters: frozenset[str]
    proposals: frozenset[str]
    #: pools whose members are measured and viewed without the pool's demand: what a near-copy
    #: partner's verdict reads of its pool (:func:`policylint.engine.copy_reach.with_partners`)
    copied: frozenset[str] = frozenset()
