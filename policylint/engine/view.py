"""What the rules judge: one subject's facts, and where in its document each fact is written.

The types here are the bottom of the engine: the views are built from them
(:mod:`policylint.engine.views`), judged (:mod:`policylint.engine.evaluate`),
narrowed and reported above, and nothing here imports another engine module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from policylint.finding import Subject
from policylint.model.load import DocPath, Document


@dataclass
class View:
    """One subject's facts plus where each is written.

    ``facts`` is the subject's fact sheet (:mod:`policylint.engine.sheets`), read
    by name like a mapping.
    """

    subject: str
    label: str  # e.g. "workload chat-api", "pool prod/serving"
    doc: Document
    base: DocPath
    facts: Mapping[str, Any]
    paths: dict[str, DocPath] = field(default_factory=dict)
    #: the typed identity findings are keyed by, when the facts' ``name`` does not give it
    #: (a scheduler-made cluster is identified by what backs it, not by its shown name)
    target: Subject | None = None

    def add_place(self, fact: str, where: DocPath, copies: dict[tuple[int, str], tuple[Any, Any]]) -> None:
        """Note where ``fact`` is written unless a place is known for it.

        ``paths`` may be a table the view shares with others (an index's rows share a few): it is
        replaced by a copy, never changed in place. Views that shared a table share its copy: one
        per table and fact in ``copies`` (which holds the table, so no other dict takes its id).
        """
        paths = self.paths
        if fact in paths:
            return
        made = copies.get((id(paths), fact))
        if made is None or made[0] is not paths:
            made = copies[(id(paths), fact)] = (paths, {**paths, fact: where})
        self.paths = made[1]

    def path_of(self, fact: str | None) -> DocPath:
        if fact and fact in self.paths:
            return self.paths[fact]
        return self.base


@dataclass(frozen=True)
class History:
    """What a pool looked like at the ``--diff`` base revision."""

    reserved_before: dict[str, int]  # "cluster/pool" -> reserved GPUs at the base
    changed_files: frozenset[str]  # real paths of files changed since the base
    #: "cluster/pool" -> the pool as the base declares it (:class:`policylint.engine.history.PoolThen`)
    pools_then: Mapping[str, Any] = field(default_factory=dict)
    #: workload name -> the pool its measurements were taken on: where the base placed it (a ``PoolThen``)
    measured_on: Mapping[str, Any] = field(default_factory=dict)
    #: "cluster/pool" -> pooled baseline GPUs at the base, for the pools that grew with changed evidence: as the
    #: base declared it, and the base's measurements read with today's declarations (None: not known whole)
    baseline_before: Mapping[str, tuple[int | None, int | None]] = field(default_factory=dict)
    #: "cluster/pool" -> (GPUs owned with the other pools found at the same base pool, their names), for the one
    #: pool of each such group that answers for it: a pool split in two (even into two clusters) is judged whole
    split_owned: Mapping[str, tuple[int, list[str]]] = field(default_factory=dict)
    #: "cluster/pool" -> (GPUs it owns, GPUs today's proposals ask for it) for every pool found at the base, the
    #: pieces of a split summed on the pool that answers for them: PL950 judges both together
    planned: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    #: workload name -> its baseline GPUs at the base, as the base declared it, for each workload a pool took in from
    #: another pool of the base (absent: not found or not measured whole there): the demand it brings
    arrived_baseline: Mapping[str, int] = field(default_factory=dict)
    #: "cluster/pool" -> the summed baselines, as the base declared them, of the members the pool held at the base
    #: that no workload of it is today (None: one of them not measured whole there), for the pools whose base was
    #: measured: a newcomer's baseline backs growth only beyond them (a workload renamed, its trace moved)
    departed_baseline: Mapping[str, int | None] = field(default_factory=dict)
    #: "cluster/pool" -> (GPUs of nominal quota it moved into its Kueue Cohort tree in the change, the Cohort): PL950
    #: counts them as still the pool's (:func:`policylint.engine.change_history.moved_into_cohorts`)
    moved_to_cohort: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    #: real paths of the changed traces that hold the base's samples moved in time (re-timed, or reordered within the
    #: day): no evidence, and what today's pooled baseline reads from them backs nothing
    rearranged: frozenset[str] = frozenset()
    #: "cluster/pool" -> what a newcomer in it, or carved out of its member, holds of a member that stayed (text for
    #: PL950's message): that member's demand, measured on the pool it ran in
    #: (:func:`policylint.engine.split_members.carved_out`)
    carved: Mapping[str, str] = field(default_factory=dict)
    #: "cluster/pool" -> why the base revision of its file cannot be read, for each pool found nowhere at the base
    #: because of it (:func:`policylint.engine.submodules.unreadable_pools`): PL950 reports it, failing closed
    unreadable: Mapping[str, str] = field(default_factory=dict)
