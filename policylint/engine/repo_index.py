"""The repository index: what a narrowed run needs of each unchanged workload, without measuring it again.

A one-file pre-commit run in a repository of one big pool judges the changed
workload, its pool and its cluster; the pool's facts come from every member's
view (tolerances, bands, GPU figures, fingerprints for double counts and near
copies), and the neighbours are judged again by the rules that read what they
take from the pool. Building those views read every member's measurement entry
and computed every member's key and view: most of such a run.

The index is one sealed cache entry per repository (kind ``repoindex``) holding,
per workload, what its view is built from and what the pool steps read of its
measured facts, so that an unchanged workload costs two ``stat`` calls and a
JSON parse instead:

* its **identity**: the real path and stat identity (device, inode, size,
  modification and status-change times in nanoseconds, as git's index keeps
  them) of the file its document is in and of every file it measures from, the
  absence of a provenance record beside each, and a hash of its pool's
  declaration (what its view reads of the pool);
* its **measurement key** (:func:`policylint.measure.measurement_cache.workload_key`), which the
  pool's kept sum (:mod:`policylint.measure.pooled_cache`) is matched against;
* its **view** as :func:`policylint.engine.workload_view.workload_view` builds it, without the
  facts that depend on the clock (the age of the last sample, the time facts of
  the integrity stage, the provenance of pulls), which are recomputed from the
  few stored inputs they come from (:func:`_clock_facts`);
* what the pool steps read of its measured facts (:class:`IndexedFacts`): whether
  it has a band report and its daily band (queue depth), its highest usable
  sample, its run sketch (near copies).

A record is written only when the view rebuilt from it is exactly (values and
types, key order included) the view built from the measurement, at the run's
``now`` and at another instant; and only for files whose times are settled
(older than two seconds when the record is made, as git treats racily clean
files), so that a write in the same timestamp tick cannot go unseen. A file
changed behind the index's back changes its status-change time, which no
ordinary program can set back: its workload is measured and viewed afresh.

Anything in doubt falls back to today's path: no index, a foreign or damaged
one (HMAC, every field checked, size limited), another code version, other
trace limits, a workload whose record does not match, more than a few
workloads without a usable record, a pool whose demand is neither cached
nor updatable from its kept sum. A cache makes a run faster, never different.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.cache import digests as digest_cache
from policylint.measure import measurement_cache as measure_cache
from policylint.measure import pooled_cache
from policylint.engine.index_store import (
    CLOCK_KEYS,
    Index,
    Record,
    fact_values,
    file_ident,
    files_of,
    json_exact_places,
    json_text,
    no_record,
    open_index,
    pool_hash,
    recorded_files,
    lite_form,
    same_value,
    shape_of,
)
from policylint.engine.lite_sheet import lite_values
from policylint.measure.facts import WorkloadFacts

if TYPE_CHECKING:
    import datetime as dt

    from policylint.engine.sheets import WorkloadFactSheet

    from policylint.finding import Finding
    from policylint.measure.facts import PoolFacts
    from policylint.model import Model, Workload
    from policylint.readers.limits import TraceLimits
    from policylint.engine.view import View
    from policylint.model.needed import Needed

#: the layout of the entry; another layout is a miss
RACY_SECONDS = 2.0
#: with more workloads than this without a usable record (and more than a quarter of those needed),
#: the run takes today's path, which records them all
MAX_UNINDEXED = 16
#: the clock-dependent facts of a workload view, recomputed on every use (see :func:`_clock_facts`)
STATS: dict[str, int] = {"indexed": 0, "full": 0, "runs": 0}


class _Report:
    """What the pool steps read of an indexed workload's band report: that it exists, and its daily band."""

    __slots__ = ("daily",)

    def __init__(self, daily: float) -> None:
        self.daily = daily


class IndexedFacts:
    """Stands for an indexed workload's :class:`~policylint.measure.WorkloadFacts` in the pool steps.

    Exactly what :func:`policylint.engine.views.build_views` (queue depth),
    :func:`policylint.measure.integrity.copies.copy_facts` (run sketch) and
    :func:`policylint.measure.pools._update_pool` (a report exists) read of a member's
    facts. Nothing else reads a neighbour's facts in an indexed run.
    """

    __slots__ = ("report", "usable_max", "integrity", "demand")

    def __init__(self, report: _Report | None, usable_max: float | None, sketch: list[int] | bytes | None) -> None:
        self.report = report
        self.usable_max = usable_max
        self.integrity = {"run_sketch": sketch} if sketch is not None else None
        self.demand = None


# --------------------------------------------------------------------------- exactness


def _clock_facts(rec: Record, w: Workload, now: dt.datetime) -> dict[str, Any]:
    """The facts of a workload view that depend on ``now``, as :func:`policylint.engine.workload_view.workload_view` computes them."""
    import datetime as dt

    from policylint.measure.integrity.timing import time_facts
    from policylint.measure.sources.provenance import pull_facts

    out: dict[str, Any] = {}
    if rec.last_sample is not None:
        age = _AGES.get((rec.last_sample, now))
        if age is None:
            if len(_AGES) > 65_536:
                _AGES.clear()
            last = dt.datetime.fromisoformat(rec.last_sample)
            age = _AGES[(rec.last_sample, now)] = (now - last).total_seconds() / 86_400.0
        out["measurement_age_days"] = age
    else:
        out["measurement_age_days"] = None
    out["pulls"] = pull_facts(w, now)
    if rec.integrity:
        # the same inputs give the same facts (scalars): many workloads share their traces' times
        key = (now, *sorted((k, type(v), v) for k, v in rec.clock.items()))
        found = _TIMES.get(key)
        if found is None:
            if len(_TIMES) > 65_536:
                _TIMES.clear()
            found = _TIMES[key] = time_facts(rec.clock, now.timestamp())
        out.update(found)
    return out


#: :func:`_clock_facts`' ages of the measurement and time facts, by their inputs (each a function of them alone)
_AGES: dict[tuple[str, dt.datetime], float] = {}
_TIMES: dict[tuple[Any, ...], dict[str, Any]] = {}


def usable(rec: Record | None, w: Workload, pools: dict[str, str]) -> bool:
    """True when ``rec`` describes ``w`` as it is now: same files, same identities, same pool."""
    if rec is None:
        return False
    qualified = w.pool.qualified if w.pool is not None else ""
    if qualified not in pools:
        pools[qualified] = pool_hash(w.pool)
    if rec.pool != pools[qualified]:
        return False
    # the same device and inode: the same file, however the run spells its path
    if file_ident(os.fspath(w.doc.source.path)) != rec.ident:
        return False
    files = recorded_files(rec, w)
    if files is None or len(files) != len(rec.measured):
        return False
    for (measured, record), ident in zip(files, rec.measured, strict=True):
        if file_ident(measured) != ident or not no_record(record):
            return False
    return True


def view_of(rec: Record, w: Workload, now: dt.datetime, decoded: tuple[list[Any], Any] | None = None) -> tuple[View, list[int] | None] | None:
    """The view of ``w`` rebuilt from its record and its run sketch (None when the stored facts do not fit their names).

    As :func:`policylint.facts.rebuild` of the stored facts by name with the clock facts put
    in their places, made from the values in order (a clock fact the stored names lack, or
    names that are not a workload sheet's facts in order, give None). ``decoded`` is what
    ``rec.values()`` gave, when the caller has it already (a fresh list of its own).
    """
    from policylint.engine.view import View

    if decoded is None:
        decoded = rec.values()
        if decoded is None:
            return None
    values, sketch = decoded
    make, places = shape_of(rec.shape)
    if make is None:
        return None  # recorded with other facts than a workload's sheet declares now
    for name, value in _clock_facts(rec, w, now).items():
        at = places.get(name)
        if at is None:
            return None
        values[at] = value
    paths = dict(rec.tpaths) if rec.tpaths is not None else {k: tuple(v) for k, v in rec.paths.items()}
    view = View("workload", f"workload {w.name}", w.doc, ("metadata", "name"), make(values), paths)
    return view, sketch


def lite_view_of(rec: Record, w: Workload, now: dt.datetime) -> tuple[View, list[int] | bytes | None] | None:
    """The view of ``w`` as :func:`view_of` gives it, its sheet a stand-in (:mod:`policylint.engine.lite_sheet`).

    The stand-in holds the facts the pool steps read, from the row's lite text; the first
    read of any other fact rebuilds the whole sheet with :func:`view_of`. The run sketch
    comes packed (:meth:`Record.lite_values`). None when the
    lite text does not read back or the row's names are not a workload sheet's facts in
    order (the whole view could not be rebuilt either).
    """
    from policylint.engine.lite_sheet import stand_in
    from policylint.engine.view import View

    decoded = rec.lite_values(packed=True)
    if decoded is None or shape_of(rec.shape)[0] is None:
        return None
    values, sketch = decoded

    def fill() -> WorkloadFactSheet:
        whole = view_of(rec, w, now)
        if whole is None:  # the row was read back by view_of when it was recorded: the same text, the same code
            raise RuntimeError(f"the index row of workload {w.name} no longer reads back")
        return whole[0].facts  # type: ignore[return-value]

    # the index's place table itself, shared with the other rows that hold it: a step adds a place with
    # view.add_place, which copies first (the verdicts' digest of it is then made once per table)
    paths = rec.tpaths if rec.tpaths is not None else {k: tuple(v) for k, v in rec.paths.items()}
    view = View("workload", f"workload {w.name}", w.doc, ("metadata", "name"), stand_in(values, fill), paths)
    return view, sketch


def facts_of(rec: Record, sketch: list[int] | bytes | None) -> IndexedFacts:
    return IndexedFacts(_Report(rec.daily if rec.daily is not None else math.nan) if rec.report else None,
                        rec.usable_max, sketch)


@dataclass
class Prepared:
    """What an indexed run measured: facts (indexed workloads stood for), findings, pooled demand, prebuilt views."""

    facts: dict[str, Any]
    findings: list[Finding]
    pools: dict[str, PoolFacts]
    views: dict[str, View]


def prepare(
    model: Model,
    only: Needed,
    now: dt.datetime,
    index: Index,
    *,
    limits: TraceLimits | None,
    cache_dir: Path,
    jobs: int,
) -> Prepared | None:
    """Measure and view the needed workloads, taking every one with a usable record from the index.

    None (take today's path) when too many have no usable record, or when a needed
    pool's demand is neither cached whole nor updatable from its kept sum with the
    keys of the index (that would need every member's series).
    """
    from policylint.measure.pools import CachedPool, _update_pool, cached_pools
    from policylint.measure.run import measure
    from policylint.model.needed import Needed

    names = sorted(n for n in model.workloads if n in only.workloads)
    pools_seen: dict[str, str] = {}
    indexed: dict[str, Record] = {}
    for name in names:
        rec = index.get(name)
        if rec is not None and usable(rec, model.workloads[name], pools_seen):
            indexed[name] = rec
    full = [n for n in names if n not in indexed]
    if not indexed or len(full) > max(MAX_UNINDEXED, len(names) // 4):
        return None
    keys: dict[str, str | None] = {n: r.key for n, r in indexed.items()}
    for name in full:
        keys[name] = measure_cache.workload_key(model.workloads[name], limits, cache_dir)
    cached: dict[str, CachedPool] = cached_pools(model, keys, cache_dir, only)
    for q in only.pools:
        entry = cached.get(q)
        if entry is None or entry.key is None or (entry.facts is None and entry.base is None):
            return None  # summed afresh from every member's series: today's path
    # as measure() does: a member's series is read only when it joins a kept sum
    joining = {n for entry in cached.values() if entry.facts is None for n in entry.joining}
    facts: dict[str, Any] = {}
    for name in full:
        key = keys[name]
        hit = measure_cache.load(cache_dir, key, demand=name in joining) if key is not None else None
        if hit is not None:
            facts[name] = hit  # only finding-free measurements are stored
    misses = frozenset(n for n in full if n not in facts)
    findings: list[Finding] = []
    if misses:
        measured_keys: dict[str, str | None] = {}
        measured, findings = measure(
            model, now, limits=limits, cache_dir=cache_dir, jobs=jobs,
            only=Needed(misses, frozenset(), frozenset(), frozenset()), keys_out=measured_keys,
        )
        if any(measured_keys.get(n) != keys[n] for n in misses):
            return None  # a trace changed since its key was taken here: the pools are summed afresh
        facts.update(measured)
    digest_cache.flush_digests(cache_dir, forget=False)  # the run goes on: linter.judge forgets them
    views: dict[str, View] = {}
    for name, rec in indexed.items():
        rebuilt = lite_view_of(rec, model.workloads[name], now)
        if rebuilt is None:
            return None
        views[name] = rebuilt[0]
        facts[name] = facts_of(rec, rebuilt[1])
    pools: dict[str, PoolFacts] = {}
    stores = []
    for pool in model.pools:
        if pool.qualified not in only.pools:
            continue
        entry = cached[pool.qualified]
        if entry.facts is not None:
            pools[pool.qualified] = entry.facts
            continue
        updated = _update_pool(pool, facts, entry, cache_dir)
        if updated is None:
            return None
        pools[pool.qualified] = updated[0]
        stores.append((entry.key, updated))
    for key, (pool_facts, kept) in stores:
        assert key is not None
        measure_cache.store_pool(cache_dir, key, pool_facts)
        pooled_cache.store(cache_dir, kept)
    STATS["indexed"] += len(indexed)
    STATS["full"] += len(full)
    STATS["runs"] += 1
    return Prepared(facts, findings, pools, views)


# --------------------------------------------------------------------------- recording


class Recorder:
    """Adds to the index a record for each workload viewed from its measurement (see :func:`record`)."""

    def __init__(self, index: Index, now: dt.datetime, skip_files: set[str]) -> None:
        self.index = index
        self.now = now
        #: files with a measurement finding: their workloads are never recorded
        self.skip_files = skip_files
        self.pools: dict[str, str] = {}
        self.settled_before = time.time_ns() - int(RACY_SECONDS * 1e9)
        #: the measurement keys this run's measuring computed, by workload (computed here for the others)
        self.keys: dict[str, str | None] = {}
        #: recording went to a child, which writes the index (:func:`policylint.engine.index_run.record_beside`)
        self.handed_off = False

    def __call__(self, w: Workload, wf: WorkloadFacts, view: View, *, wanted: bool = False) -> None:
        """Record ``w`` (``wanted``: :meth:`wants` already said yes)."""
        try:
            rec = self._record(w, wf, view) if wanted or self.wants(w, wf) else None
        except Exception:  # noqa: BLE001 - a workload that cannot be recorded is measured every time
            rec = None
        if rec is not None:
            self.index.put(w.name, rec)

    def wants(self, w: Workload, wf: WorkloadFacts) -> bool:
        """Whether ``w`` may need a record: clean facts, no measurement finding, not recorded as it is."""
        try:
            if type(wf) is not WorkloadFacts or wf.errors or w.doc.file in self.skip_files:
                return False
            existing = self.index.get(w.name)
            return existing is None or not usable(existing, w, self.pools)  # else already recorded as it is
        except Exception:  # noqa: BLE001 - as in __call__: not recorded
            return False

    def _record(self, w: Workload, wf: WorkloadFacts, view: View) -> Record | None:
        import datetime as dt

        from policylint.engine.workload_view import workload_view

        files = files_of(w)
        if not files:
            return None
        # the key the measuring used, when it measured this workload: a file changed since then is
        # not settled (the run started after its settling time), so it is refused below either way
        key = self.keys.get(w.name) if w.name in self.keys else measure_cache.workload_key(w, self.index.limits, self.index.folder)
        if key is None or key == measure_cache.UNHASHED:
            return None
        # asked afresh, not as the run first saw them: a file rewritten during the run is not settled
        ident = file_ident(os.fspath(w.doc.source.path), fresh=True)
        if ident is None or not self._settled(ident):
            return None
        measured = []
        for file, record in files:
            i = file_ident(file, fresh=True)
            if i is None or not self._settled(i) or not no_record(record, fresh=True):
                return None
            measured.append(i)
        if view.subject != "workload" or view.base != ("metadata", "name") or view.target is not None or view.doc is not w.doc:
            return None
        if wf.report is not None and wf.report.daily is None:
            return None
        integrity = wf.integrity or {}
        sketch = integrity.get("run_sketch")
        if sketch is not None and not (isinstance(sketch, list) and set(map(type, sketch)) <= {int}):
            return None
        clock = {k: integrity[k] for k in CLOCK_KEYS if k in integrity}
        if any(not (v is None or type(v) in (int, float)) for v in clock.values()):
            return None
        places = view.paths
        if type(places) is not dict or not all(type(p) is tuple for p in places.values()):
            return None  # a view's places are tuples, as a view rebuilt from its row has them
        qualified = w.pool.qualified if w.pool is not None else ""
        if qualified not in self.pools:
            self.pools[qualified] = pool_hash(w.pool)  # as usable() keeps them: a pool's hash per run
        rec = Record(
            ident=ident,
            pool=self.pools[qualified],
            key=key,
            measured=measured,
            shape=tuple(view.facts),
            text="",
            paths={k: list(v) for k, v in places.items()},
            report=wf.report is not None,
            daily=_float(wf.report.daily) if wf.report is not None else None,
            usable_max=_float(wf.usable_max),
            last_sample=wf.last_sample.isoformat() if wf.last_sample is not None else None,
            integrity=bool(wf.integrity),
            clock=clock,
            files=[[m, r] for m, r in files],
        )
        # the stored facts: the view without its clock facts (recomputed on use)
        stored = dict(zip(view.facts, fact_values(view.facts)))
        clock_keys = list(_clock_facts(rec, w, self.now))
        for k in clock_keys:
            if k not in stored:
                return None
            stored[k] = None
        text = json_text([list(stored.values()), None])
        lite = lite_form(lite_values(view.facts), sketch)
        if text is None or lite is None or not json_exact_places(rec.paths):
            return None
        rec.text, rec.lite, rec.tpaths = text, lite, dict(places)  # tuples, as a read index shares them
        # The view rebuilt from the record is the view: at this instant its other facts are the
        # view's by construction (stored exactly above), so the clock facts are compared; at
        # another instant, everything, against a view built afresh (a fact that moves with the
        # clock and is not recomputed shows there). The row is decoded once, as a later run does.
        decoded = rec.values()
        got = None if decoded is None else view_of(rec, w, self.now, (list(decoded[0]), decoded[1]))
        if got is None or not same_value(got[1], sketch) or not same_value(got[0].paths, view.paths):
            return None
        if list(got[0].facts) != list(view.facts) or not all(same_value(got[0].facts[k], view.facts[k]) for k in clock_keys):
            return None
        later = self.now + dt.timedelta(days=3, seconds=7, microseconds=1234)
        again = view_of(rec, w, later, (list(decoded[0]), decoded[1])) if decoded is not None else None
        want = workload_view(w, wf, later)[0]
        # compared name by name, then as plain lists: same_value is exact about types and NaN only there
        if again is None or list(again[0].facts) != list(want.facts) or not same_value(fact_values(again[0].facts), fact_values(want.facts)):
            return None
        # and a stand-in's facts are the row's at any instant (none of them moves with the clock)
        if not same_value(again[0].paths, want.paths) or not same_value(lite_values(again[0].facts), lite_values(view.facts)):
            return None
        return rec

    def _settled(self, ident: list[int]) -> bool:
        return max(ident[3], ident[4]) < self.settled_before


def _float(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(type(value))
    return float(value)
