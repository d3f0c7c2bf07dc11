"""Narrow a whole-repository run to what a change touches.

Used by the pre-commit hook (``--changed-files``: the staged files) and by
``--diff BASE`` (files changed since a git revision). The whole repository is
always loaded and resolved, and a pool is always judged with all its
workloads; what is reported is narrowed to findings on changed files and on
every subject that depends on them (and :func:`needed` then limits measuring
and judging to what those subjects read):

* a changed measurement file -> the workloads that reference it;
* a changed workload -> itself, its pool and the pool's other workloads (pooled
  demand), its cluster, proposals citing it;
* a changed cluster -> its pools, their workloads, proposals for it;
* a changed scheduler queue (Kueue ClusterQueue, Volcano Queue) -> the pools it
  backs, their cluster and workloads, proposals for that cluster;
* a changed proposal -> itself and the pools it asks GPUs for (their committed capacity);
* a changed configuration file, rule file (in a ``rule-dirs`` folder or given
  with ``--rule-dir``) or baseline file, or any deleted file -> everything:
  each of them can change the verdict on any document (what a deleted document
  held is no longer there to say who depended on it), so nothing is narrowed away;
* a changed file the model reads that no subject has as its document (a Kueue
  LocalQueue, ResourceFlavor or Cohort, a measurement's provenance record, a
  kustomization naming the files it deploys) ->
  everything too (:func:`policylint.engine.widen.read_but_unmapped`): its effect on the verdicts is not
  traced to subjects, so it is never narrowed to nothing.

A changed workload's neighbours (the other workloads of its pool, when neither
their own files nor their pool's changed) are reported on only by the rules
that read what a workload takes from its neighbours (:data:`NEIGHBOUR_FACTS`:
the pooled queue, capacity shares, double counts): the verdicts of the other
rules on them cannot change with the change, so they are neither judged nor
reported (:class:`Reach`, :func:`neighbour_skips`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from policylint.engine.reads import facts_read
from policylint.engine.widen import _abs, _absolute, _stat, changes_everything, lost_name, read_but_unmapped
from policylint.engine.result import LintResult
from policylint.finding import pool_subject
from policylint.safeio import stat_once
from policylint.model.needed import Needed

if TYPE_CHECKING:
    from policylint.model.config import Config
    from policylint.finding import Finding
    from policylint.model import Model, Pool, Workload
    from policylint.engine.rule import RuleSet

#: Workload facts that come from the other workloads of the workload's pool (set when the
#: pool's views are built, never by :func:`policylint.engine.workload_view.workload_view` from the workload
#: alone): the pooled queue's waits and rejections, the capacity share and the queue depth
#: it sets, and the double-count facts. Every other workload fact depends on the workload's
#: own documents and measurements, its pool's spec and the clock only; a test holds this list
#: to that (tests/test_neighbours.py).
NEIGHBOUR_FACTS: frozenset[str] = frozenset(
    {
        "max_wait_seconds",
        "p99_wait_seconds",
        "daily_max_wait_seconds",
        "daily_rejected_share",
        "queue_rejection_note",
        "capacity_share",
        "queue_depth_needed",
        "measurement_double_counted",
        "double_counted_with",
        "double_count_basis",
        # job durations read by two workloads (PL984), across pools as a near copy is
        "durations_shared",
        "durations_shared_with",
        "durations_shared_pool",
        # a near copy (PL97x) is judged against the other workloads' run sketches
        "near_copy_of",
        "near_copy_similarity",
        "near_copy_trace",
        "near_copy_pool",
        "near_copy_part",
    }
)


def neighbour_skips(ruleset: RuleSet, facts: frozenset[str] = NEIGHBOUR_FACTS) -> frozenset[str]:
    """Codes of the evaluated workload rules that read none of ``facts`` (a neighbour's): not run on a neighbour.

    Derived from each rule's metadata (:func:`policylint.engine.reads.facts_read`); a
    rule whose reads cannot be told (a check function that computes fact names)
    is run on neighbours too. With the near-copy facts, the rules not run on a near-copy
    partner (:mod:`policylint.engine.copy_reach`).
    """
    skips = set()
    for rule in ruleset.rules.values():
        if rule.builtin or rule.subject != "workload":
            continue
        reads = facts_read(rule)
        if reads is not None and not reads & facts:
            skips.add(rule.code)
    return frozenset(skips)


def _pool(pool: Pool) -> str:
    """A pool's subject as :meth:`Finding.key` writes it (scheduler queues by queue name)."""
    return str(pool_subject(pool.cluster.name, pool.name, pool.scheduler.get("scheduler") if pool.scheduler else None))


def _workload_subjects(w: Workload) -> tuple[set[str], set[str]]:
    """(subjects judged whole, neighbours) of a changed workload."""
    subjects = {f"workload {w.name}"}
    neighbours: set[str] = set()
    if w.pool is not None:
        subjects |= {_pool(w.pool), str(w.pool.cluster.subject)}
        # Pooled demand: a workload's change moves the pool's queue (PL203) and may
        # double-count another's measurement (PL111), verdicts reported on its neighbours.
        neighbours |= {f"workload {other.name}" for other in w.pool.workloads}
    return subjects, neighbours


def affected(model: Model, changed: Iterable[Path]) -> tuple[set[Path], set[str]]:
    """(changed files as real paths, subject labels that depend on them, neighbours included)."""
    files, subjects, neighbours = _reach(model, changed)
    return files, subjects | neighbours


@dataclass(frozen=True)
class Reach:
    """What a change reaches: findings kept by a narrowed run, and the views and rules it judges.

    A finding is kept when its file changed, when its subject depends on the
    change, or when its subject is a neighbour (:data:`NEIGHBOUR_FACTS`) and its
    rule is not among ``skipped`` (built-in findings included).
    """

    files: frozenset[Path]  # changed files, as real paths
    subjects: frozenset[str]  # subjects judged by every rule
    neighbours: frozenset[str]  # subjects judged by every rule but the skipped ones
    skipped: frozenset[str] = frozenset()  # rule codes not judged on neighbours
    #: near-copy partners outside the measured part, set by the linter (:mod:`policylint.engine.copy_reach`)
    partners: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)
    #: the answer of :meth:`changed` per file asked about: one real-path lookup per file
    seen: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)
    #: the (device, inode) of the changed files that exist, once asked for (a one-item list)
    idents: list[set[tuple[int, int]]] = field(default_factory=list, compare=False, repr=False)
    #: files :func:`reach` found to be no changed file, as absolute paths from ``folder`` (the working
    #: directory): :meth:`changed` answers False for them without a stat of its own
    unchanged: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    folder: str = field(default="", compare=False, repr=False)

    def changed(self, file: str) -> bool:
        known = self.seen.get(file)
        if known is None:
            if self.unchanged and _absolute(file, self.folder) in self.unchanged:
                known = False
            else:
                known = self._changed(file)
            self.seen[file] = known
        return known

    def _changed(self, file: str) -> bool:
        # An existing file whose device and inode are no changed file's is not one of them: equal
        # real paths name the same file, and a changed file that is gone has no existing real path.
        # One stat instead of a real-path walk (an lstat per component) per neighbour's file.
        if not self.files:
            return False
        try:
            st: os.stat_result | None = os.stat(file)
        except (OSError, ValueError):
            st = None
        if st is not None:
            if not self.idents:
                self.idents.append({(s.st_dev, s.st_ino) for s in map(_stat, self.files) if s is not None})
            if (st.st_dev, st.st_ino) not in self.idents[0]:
                return False
        return _abs(file) in self.files

    def __call__(self, file: str, subject: str) -> bool:
        """True when the view of ``subject`` in ``file`` is judged (by some rules at least)."""
        return self.changed(file) or (bool(subject) and (subject in self.subjects or subject in self.neighbours
                                                          or subject in self.partners))

    def skips(self, file: str, subject: str) -> frozenset[str]:
        """Rule codes not judged on the view of ``subject`` in ``file``."""
        if self.changed(file) or subject in self.subjects:
            return frozenset()
        return self.skipped if subject in self.neighbours else self.partners.get(subject, frozenset())

    def keeps(self, finding: Finding) -> bool:
        subject = finding.key().subject
        return self(finding.file, subject) and finding.code not in self.skips(finding.file, subject)


def reach(
    model: Model, changed: Iterable[Path], ruleset: RuleSet | None = None, previous: Iterable[tuple[str, str]] = ()
) -> Reach:
    """What ``changed`` reaches in ``model``; with ``ruleset``, neighbours skip the rules that cannot change on them.

    ``previous`` holds the (cluster, pool) placements the changed files' workloads had
    before the change (:func:`policylint.engine.history.previous_pools`): a pool a
    workload left is reached as the pool it joined is.
    """
    folder = os.getcwd()
    unchanged: set[str] = set()
    files, subjects, neighbours = _reach(model, changed, folder, unchanged, previous)
    skipped = neighbour_skips(ruleset) if ruleset is not None else frozenset()
    return Reach(
        frozenset(files), frozenset(subjects), frozenset(neighbours - subjects), skipped,
        unchanged=frozenset(unchanged), folder=folder,
    )


def _reach(
    model: Model,
    changed: Iterable[Path],
    folder: str | None = None,
    unchanged: set[str] | None = None,
    previous: Iterable[tuple[str, str]] = (),
) -> tuple[set[Path], set[str], set[str]]:
    """(changed files as real paths, subject labels that depend on them, neighbours of changed workloads).

    ``unchanged`` collects the files of the model found to be none of the changed
    ones, as absolute paths from ``folder`` (the working directory).
    """
    files = {_abs(p) for p in changed}
    # Same file = same device and inode: one stat per path instead of a real-path walk
    # (an lstat per component), which dominated a one-file run on a large repository.
    # A changed file that no longer exists is matched by its real path.
    idents = {(st.st_dev, st.st_ino) for st in map(_stat, files) if st is not None}
    cwd = os.getcwd() if folder is None else folder
    # by path text, made absolute: a Path is neither hashed nor compared per file
    seen: dict[str, bool] = {}
    fspath, isabs, join, stat = os.fspath, os.path.isabs, os.path.join, stat_once

    def _in_files(path: Path) -> bool:
        text = fspath(path)
        if not isabs(text):  # _absolute, inline: asked once per file of the model
            text = join(cwd, text)
        answer = seen.get(text)
        if answer is None:
            try:
                st = stat(text)
            except (OSError, ValueError):
                answer = seen[text] = _abs(text) in files
            else:
                answer = seen[text] = (st.st_dev, st.st_ino) in idents
        return answer

    subjects: set[str] = set()
    neighbours: set[str] = set()
    partners: dict[str, list[Workload]] | None = None
    for w in model.workloads.values():
        hit = _in_files(w.doc.source.path)
        if not hit:
            for m in w.measurements.values():
                if m.path is not None and _in_files(m.path):
                    hit = True
                    break
        if hit:
            whole, around = _workload_subjects(w)
            subjects |= whole
            neighbours |= around
            if partners is None:
                from policylint.engine.copy_reach import shared_citations

                partners = shared_citations(model)
            # another pool's workload citing the same trace file: which of the two a copy is reported on moves with it
            neighbours |= {f"workload {o.name}" for o in partners.get(w.name, ())}
    for c in model.clusters.values():
        if _in_files(c.doc.source.path):
            subjects.add(str(c.subject))
            for pool in c.pools.values():
                subjects.add(_pool(pool))
                for w in pool.workloads:
                    subjects.add(f"workload {w.name}")
        # A pool is backed by its own document, whatever its kind: a Kueue ClusterQueue or a
        # Volcano Queue is not the document of the synthetic cluster (cohort, parent queue).
        for pool in c.pools.values():
            if _in_files(pool.doc.source.path):
                subjects |= {str(c.subject), _pool(pool)}
                subjects |= {f"workload {w.name}" for w in pool.workloads}
    for cluster_name, pool_name in sorted(previous):
        # a pool a changed workload left: it lost that demand (its other workloads' pooled queue with it)
        if cluster_name.startswith("queue:"):
            left = _queue_pool(model, cluster_name.removeprefix("queue:"), pool_name)
        else:
            cluster = model.clusters.get(cluster_name)
            left = cluster.pools.get(pool_name) if cluster is not None else None
        if left is not None:
            subjects |= {_pool(left), str(left.cluster.subject)}
            neighbours |= {f"workload {w.name}" for w in left.workloads}
    # What a changed proposal asks is part of each requested pool's facts (PL109: reserved + proposed +
    # elastic; a proposal raised alone passed the hook and --diff while the whole run failed PL109), and
    # the pool's other proposals are judged with it (PL801 sums split proposals: a second proposal for a
    # pool changed the first one's verdict, which the hook left out).
    asked = {_pool(q) for p in model.proposals.values() if _in_files(p.doc.source.path) for q in p.pools.values()}
    subjects |= asked
    for p in model.proposals.values():
        touched = _in_files(p.doc.source.path)
        touched |= p.cluster is not None and str(p.cluster.subject) in subjects
        touched |= any(f"workload {w.name}" in subjects or f"workload {w.name}" in neighbours for w in p.workloads)
        touched |= any(_pool(q) in asked for q in p.pools.values())
        if touched:
            subjects.add(f"proposal {p.name}")
    if unchanged is not None:
        # a False here is what Reach.changed answers too: an existing file of another device and
        # inode, or a missing one whose real path is no changed file's (True answers differ: a hard
        # link of a changed file is one here, not there)
        unchanged.update(text for text, answer in seen.items() if not answer)
    return files, subjects, neighbours - subjects


def _queue_pool(model: Model, scheduler: str, name: str) -> Pool | None:
    """The pool a workload admitted through the ``scheduler`` queue ``name`` lands in, when that is known.

    From another workload admitted through the same queue, or for Kueue from the
    LocalQueue's ClusterQueue (its first GPU flavor, where Kueue places the demand).
    """
    for w in model.workloads.values():
        queue = w.spec.get("queue")
        if isinstance(queue, dict) and queue.get("scheduler") == scheduler and queue.get("name") == name and w.pool:
            return w.pool
    if scheduler != "kueue":
        return None
    from policylint.model.schedulers import kueue

    return kueue.admission(model.schedulers.get("kueue"), name).pool


def needed(model: Model, judged: Callable[[str, str], bool]) -> Needed:
    """What must be measured and viewed so that every view ``judged(file, subject)`` keeps has its facts.

    ``judged`` is asked once per subject of the model, with the file of its
    document and its subject as :func:`policylint.engine.evaluate.subject_of` gives it.
    The facts of a view come from more than its own subject, and everything they
    come from is taken whole:

    * a workload's view -> its whole pool (capacity shares and pooled demand are
      per pool), or the workload alone when it has no pool;
    * a pool's view -> its workloads;
    * a cluster's view -> all its pools (tolerances of every member);
    * a proposal's view -> all pools of its cluster (the measured count), the
      pools it requests and the pools of the workloads it cites.
    """
    pools: dict[str, Pool] = {}
    loose: set[str] = set()  # workloads without a pool
    clusters: set[str] = set()
    proposals: set[str] = set()

    def take_workload(w: Workload) -> None:
        if w.pool is not None:
            pools[w.pool.qualified] = w.pool
        else:
            loose.add(w.name)

    for w in model.workloads.values():
        if judged(w.doc.file, f"workload {w.name}"):
            take_workload(w)
    for pool in model.pools:
        if judged(pool.doc.file, _pool(pool)):
            pools[pool.qualified] = pool
    for name, c in model.clusters.items():
        if judged(c.doc.file, str(c.subject)):
            clusters.add(name)
            pools.update((p.qualified, p) for p in c.pools.values())
    for name, p in model.proposals.items():
        if not judged(p.doc.file, f"proposal {name}"):
            continue
        proposals.add(name)
        if p.cluster is not None:
            pools.update((q.qualified, q) for q in p.cluster.pools.values())
        pools.update((q.qualified, q) for q in p.pools.values())
        for w in p.workloads:
            take_workload(w)
    workloads = loose | {w.name for pool in pools.values() for w in pool.workloads}
    from policylint.engine.copy_reach import shared_citations

    partners = shared_citations(model)
    if partners:
        # a workload citing another pool's trace file is judged against that workload (PL972): its pool too
        for name in sorted(workloads & partners.keys()):
            for other in partners[name]:
                take_workload(other)
        workloads = loose | {w.name for pool in pools.values() for w in pool.workloads}
    return Needed(frozenset(workloads), frozenset(pools), frozenset(clusters), frozenset(proposals))


def narrow(
    result: LintResult,
    changed: Iterable[Path],
    config: Config | None = None,
    ruleset: RuleSet | None = None,
    reached: Reach | None = None,
    previous: Iterable[tuple[str, str]] = (),
    defined_before: Iterable[tuple[str, str]] = (),
) -> LintResult:
    """Keep only findings on changed files or on subjects that depend on them.

    With ``config``, a change to the configuration, a rule folder or the
    baseline keeps every finding (see :func:`policylint.engine.widen.changes_everything`). With
    ``ruleset``, findings on neighbours are kept only for the rules that read
    neighbour facts (:class:`Reach`). ``reached`` is :func:`reach`'s answer for
    this result's model, the same changes and ruleset when the caller has it
    already (the linter asked for it to judge only what is kept). A name the
    changed files defined at the base (``defined_before``) and nothing defines
    now keeps every finding too (see :func:`policylint.engine.widen.lost_name`).
    """
    changed = list(changed)
    if result.model is None:
        return result
    if config is not None and changes_everything(changed, config) is not None:
        return result
    if read_but_unmapped(result.model, changed) is not None or lost_name(result.model, defined_before) is not None:
        return result
    keeps = (reached if reached is not None else reach(result.model, changed, ruleset, previous)).keeps
    # Subjects are matched by Finding.key() (kind and qualified name), never by display labels.
    result.findings = [f for f in result.findings if keeps(f)]
    result.suppressed = [(f, r) for f, r in result.suppressed if keeps(f)]
    result.baselined = [f for f in result.baselined if keeps(f)]
    return result
