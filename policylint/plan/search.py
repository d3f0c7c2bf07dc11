"""The pooling search: which workloads of a group share a pool.

Within a group (:mod:`policylint.plan.grouping`) the workloads are pooled pairwise,
best saving first, while pooling saves GPUs: a merge is kept only when the pooled pool
needs fewer GPUs than the two apart (total first, then reserved), only when their
traces overlap for the measurement window (PL112: otherwise the pooled bands would
describe too short a stretch), and never when two of them cite one measurement
(PL111: its demand would count twice). Among equal savings the pair that comes
first in name order wins.

Every candidate is judged by the figures ``check`` would compute for it: the bands of
its pooled series (:func:`policylint.measure.pooled.pool_series`: the members' GPU demand
summed on their common grid, trailing minimum over the pool's cold start, p95 and p99
of what is sustained, the maximum) and the capacity :func:`policylint.plan.sizing.capacity`
gives them. Doing that from scratch for every pair of every round costs a pooled
analysis each (quadratic in the group, each pass over the whole series); instead the
search keeps each part's pooled sum as one array on the group's grid, forms a
candidate as the sum of two such arrays, and computes the bands of a whole round's
candidates at once, as rows of one 2-D array, with the calculator's own functions
(:func:`policylint.bands.rolling_min`, :func:`policylint.bands.percentile`).

Most candidates are never computed at all. Every pair enters a heap with a bound on
what it can save: pooled, two parts need at least no GPUs, so never more than both
parts' GPUs; and when both parts' pooled sums are complete on one grid run at one cold
start, pooling cannot need fewer GPUs than either part alone (the sum is at least each
part at every sample, and every figure the capacity comes from only grows with it), so
never more than the smaller part's GPUs. Bounds on top of the heap are computed, a
batch at a time, and go back with their exact savings; when an exact saving is on top
no other pair can beat it, and it merges. A computed saving is kept until one of its
parts merges.

That shortcut gives the very series :func:`policylint.measure.pooled.align` would build when
every member is sampled on one grid of whole seconds (one step, samples on the same
lattice): the common grid of any subset is then a run of the group's grid, and sums
of whole GPU counts do not depend on their order. A group whose members are not all
on such a grid (mixed steps, irregular or fractional times) is searched with the full
pooled analysis of every candidate (:func:`policylint.plan.sizing.size`) instead,
which is slower and gives the same answer.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from policylint.bands import BandSettings, capacity_for_tolerance, percentile, rolling_min, window_days, window_samples
from policylint.measure.cold_start import pool_cold_start
from policylint.measure.conversion import gpu_conversion
from policylint.plan.grouping import Group, is_reject, tightest
from policylint.plan.models import Thresholds, WhatIf
from policylint.plan.sizing import capacity, size, trial, trial_spec
from policylint.engine.double_counts import double_counted, identity_fingerprint

if TYPE_CHECKING:
    from policylint.measure.facts import WorkloadFacts
    from policylint.model import Workload
    from policylint.model.specs import PoolSpec

__all__ = ["Candidate", "merge"]

#: Rows of one 2-D batch of candidates: about 16 MB of float64 at 92 days of 5-minute samples.
_BATCH_ROWS = 64


@dataclass(frozen=True)
class Candidate:
    """What the search needs of a candidate pool: whether it has bands, its window and its GPUs."""

    ok: bool
    reserved: int = 0
    capacity: int = 0
    window_days: float = 0.0


_NO_BANDS = Candidate(False)


class _Part:
    """A set of workloads the search holds together, with its rank (position) among the parts."""

    __slots__ = ("classes", "ident", "names", "rank", "tolerance")

    def __init__(self, ident: int, names: tuple[str, ...], rank: int, classes: frozenset[str], tolerance: float | None):
        self.ident = ident
        self.names = names
        self.rank = rank
        self.classes = classes
        self.tolerance = tolerance


class _Evaluator:
    """Judges candidate pools; :class:`_Lattice` and :class:`_Full` are the two ways."""

    def single(self, part: _Part) -> Candidate:  # pragma: no cover - interface
        raise NotImplementedError

    def pairs(self, pairs: Sequence[tuple[_Part, _Part]], tolerance: Sequence[float | None]) -> list[Candidate]:
        raise NotImplementedError  # pragma: no cover - interface

    def merged(self, a: _Part, b: _Part, into: _Part) -> None:
        """``into`` holds ``a`` and ``b`` from now on."""

    def monotone(self, a: _Part, b: _Part) -> bool:
        """True when pooling ``a`` and ``b`` cannot need fewer GPUs, reserved or in all, than either alone.

        Then what pooling saves is at most the smaller part's GPUs (:func:`merge`'s bound).
        """
        return False


class _Full(_Evaluator):
    """Every candidate by the full pooled analysis (:func:`policylint.plan.sizing.size`), cached by members."""

    def __init__(self, planned: Mapping[str, Workload], facts: Mapping[str, WorkloadFacts], whatif: WhatIf, group: Group):
        self.planned, self.facts, self.whatif, self.group = planned, facts, whatif, group
        self.cache: dict[tuple[str, ...], Candidate] = {}

    def _judge(self, names: tuple[str, ...], tolerance: float | None) -> Candidate:
        if names not in self.cache:
            members = [self.planned[n] for n in names]
            got = size(members, self.facts, self.whatif, tolerance, self.group.gpu, explain=False)
            r = got.facts.report
            if not got.ok or got.sized is None or r is None:
                self.cache[names] = _NO_BANDS
            else:
                self.cache[names] = Candidate(True, got.sized.reserved, got.sized.capacity, r.window_days)
        return self.cache[names]

    def single(self, part: _Part) -> Candidate:
        return self._judge(part.names, part.tolerance)

    def pairs(self, pairs: Sequence[tuple[_Part, _Part]], tolerance: Sequence[float | None]) -> list[Candidate]:
        return [self._judge(tuple(sorted(a.names + b.names)), t) for (a, b), t in zip(pairs, tolerance)]


class _Lattice(_Evaluator):
    """Candidates from running pooled sums on the group's grid (see the module docs)."""

    def __init__(self, step: float, rows: dict[str, tuple[int, np.ndarray]], cold: Mapping[str, float], whatif: WhatIf):
        self.step = step
        self.whatif = whatif
        self.cold = cold
        self.settings = BandSettings()
        #: part ident -> (first grid index, its pooled sum from there)
        self.sums: dict[int, tuple[int, np.ndarray]] = {}
        self.rows = rows
        #: members without a missing sample, none below 0: see :meth:`monotone`
        self.complete = {n for n, (_, row) in rows.items() if row.size and not np.isnan(row).any() and float(row.min()) >= 0}
        #: part ident -> its grid run, for the parts whose pooled sum has no missing sample
        self.runs: dict[int, tuple[int, int]] = {}
        #: part ident -> its cold start (the longest of its members')
        self.colds: dict[int, float] = {}

    @staticmethod
    def build(
        names: Sequence[str], planned: Mapping[str, Workload], facts: Mapping[str, WorkloadFacts], cold: Mapping[str, float], whatif: WhatIf
    ) -> _Lattice | None:
        """The evaluator for ``names`` when every one is sampled on one grid of whole seconds, else None."""
        demands = {}
        for n in names:
            f = facts[n]
            per_gpu, _ = gpu_conversion(planned[n], f.trace_unit)
            d = f.demand
            if f.report is None or d is None or per_gpu is None or per_gpu <= 0:
                continue  # no pooled demand: its own analysis says so, and it pools with nobody
            if d.times is not None or d.gpus.size == 0:
                return None
            demands[n] = d
        if not demands:
            return None
        steps = {float(d.step_seconds) for d in demands.values()} | {float(d.axis_step) for d in demands.values()}
        if len(steps) != 1:
            return None
        (step,) = steps
        starts = [float(d.axis_start) for d in demands.values()]
        if not (step > 0 and step.is_integer() and all(s.is_integer() and abs(s) < 2**52 for s in starts)):
            return None
        origin = min(starts)
        rows: dict[str, tuple[int, np.ndarray]] = {}
        for n, d in demands.items():
            offset = (float(d.axis_start) - origin) / step
            if not offset.is_integer():
                return None
            rows[n] = (int(offset), np.asarray(d.gpus, dtype=np.float64))
        return _Lattice(step, rows, cold, whatif)

    def _sum(self, part: _Part) -> tuple[int, np.ndarray]:
        got = self.sums.get(part.ident)
        if got is None:
            (name,) = part.names
            got = self.rows[name]
            self.sums[part.ident] = got
        return got

    def single(self, part: _Part) -> Candidate:
        (name,) = part.names
        if name not in self.rows:
            return _NO_BANDS
        start, row = self._sum(part)
        return self._judge([row.reshape(1, -1)], [self.cold[name]], [part.tolerance])[0]

    def merged(self, a: _Part, b: _Part, into: _Part) -> None:
        self.sums[into.ident] = self._pair(a, b)
        if self.monotone(a, b):
            self.runs[into.ident] = self._run(a) or (0, 0)
        for gone in (a.ident, b.ident):
            self.sums.pop(gone, None)
            self.runs.pop(gone, None)

    def _run(self, part: _Part) -> tuple[int, int] | None:
        if part.ident not in self.runs and len(part.names) == 1 and part.names[0] in self.complete:
            start, row = self._sum(part)
            self.runs[part.ident] = (start, start + row.size)
        return self.runs.get(part.ident)

    def monotone(self, a: _Part, b: _Part) -> bool:
        """Both parts' pooled sums complete (no missing sample, none below 0) on one grid run, at one cold start.

        Then the pooled sum is at least each part's at every sample, its trailing
        minimum over the same window likewise, so its percentiles, its peak and every
        capacity the rules derive from them (each one non-decreasing in them and in a
        tighter tolerance) are at least each part's.
        """
        ra, rb = self._run(a), self._run(b)
        return ra is not None and ra == rb and self._cold(a) == self._cold(b)

    def _pair(self, a: _Part, b: _Part) -> tuple[int, np.ndarray]:
        (sa, ra), (sb, rb) = self._sum(a), self._sum(b)
        lo, hi = max(sa, sb), min(sa + ra.size, sb + rb.size)
        if hi <= lo:
            return lo, np.empty(0)
        return lo, ra[lo - sa : hi - sa] + rb[lo - sb : hi - sb]

    def _cold(self, part: _Part) -> float:
        got = self.colds.get(part.ident)
        if got is None:
            got = self.colds[part.ident] = max(self.cold[n] for n in part.names)
        return got

    def pairs(self, pairs: Sequence[tuple[_Part, _Part]], tolerance: Sequence[float | None]) -> list[Candidate]:
        out: list[Candidate | None] = [None] * len(pairs)
        # rows of one batch share their grid run and their cold start
        batches: dict[tuple[int, int, float], list[int]] = {}
        for k, (a, b) in enumerate(pairs):
            (sa, ra), (sb, rb) = self._sum(a), self._sum(b)
            lo, hi = max(sa, sb), min(sa + ra.size, sb + rb.size)
            batches.setdefault((lo, hi, max(self._cold(a), self._cold(b))), []).append(k)
        for (lo, hi, cold), ks in batches.items():
            for first in range(0, len(ks), _BATCH_ROWS):
                chunk = ks[first : first + _BATCH_ROWS]
                g = np.empty((len(chunk), max(0, hi - lo)))
                for row, k in enumerate(chunk):
                    a, b = pairs[k]
                    (sa, ra), (sb, rb) = self._sum(a), self._sum(b)
                    np.add(ra[lo - sa : hi - sa], rb[lo - sb : hi - sb], out=g[row])
                got = self._judge([g], [cold] * len(chunk), [tolerance[k] for k in chunk])
                for k, c in zip(chunk, got):
                    out[k] = c
        return [c if c is not None else _NO_BANDS for c in out]

    def _judge(self, blocks: list[np.ndarray], colds: Sequence[float], tolerance: Sequence[float | None]) -> list[Candidate]:
        """Bands and capacity of each row of ``blocks[0]`` (one cold start for all rows), as :func:`analyse_pool` gives them."""
        (g,) = blocks
        rows, n = g.shape
        w = window_samples(colds[0], self.step)
        if n < w:
            return [_NO_BANDS] * rows
        valid = n - np.count_nonzero(np.isnan(g), axis=1)
        s = rolling_min(g, w)
        ps = [self.settings.baseline_percentile, self.settings.daily_percentile]
        peaks = np.fmax.reduce(g, axis=1)
        bands = percentile(s, ps)
        out = []
        for row in range(rows):
            b_raw, d_raw = float(bands[0, row]), float(bands[1, row])
            if math.isnan(b_raw):
                out.append(_NO_BANDS)  # no stretch of the pooled series as long as the cold start
                continue
            daily = min(d_raw, float(peaks[row]))
            baseline = min(b_raw, daily)
            line = g[row]
            got = capacity(baseline, daily, self.whatif, tolerance[row], _tolerance_capacity(line, daily, tolerance[row], self.step), explain=False)
            out.append(Candidate(True, got.reserved, got.capacity, window_days(int(valid[row]), self.step)))
        return out


def _tolerance_capacity(g: np.ndarray, daily: float, tolerance: float | None, step: float) -> Callable[[], int]:
    def compute() -> int:
        assert tolerance is not None
        return capacity_for_tolerance(np.minimum(g, daily), tolerance, step)

    return compute


def merge(
    names: list[str],
    planned: Mapping[str, Workload],
    facts: Mapping[str, WorkloadFacts],
    whatif: WhatIf,
    group: Group,
    tol: Mapping[str, float | None],
    th: Thresholds,
    why: dict[str, str] | None = None,
) -> tuple[list[list[str]], dict[str, Candidate]]:
    """The parts ``names`` pool into (see the module docs), and each workload judged alone.

    ``why``, when given, receives for each workload left in a part of its own what kept
    it there (:func:`_why_alone`).
    """
    reject = is_reject(group)
    ordered = sorted(names)
    base = trial_spec(group.cls, group.gpu)
    cold = {n: pool_cold_start(trial([planned[n]], base)) for n in ordered}
    evaluator: _Evaluator = _Lattice.build(ordered, planned, facts, cold, whatif) or _Full(planned, facts, whatif, group)
    # PL111: workloads citing one measurement (without a declared share) never share a pool
    # (by content, as PL111 judges it: a copy under another file name is the same demand)
    printed = {n: identity_fingerprint(facts[n].integrity) if n in facts else None for n in ordered}
    together: PoolSpec = {"name": "trial", "reservedGpus": 0, "serves": []}  # holds them only: its spec is never read
    repeats = double_counted(trial([planned[n] for n in ordered], together), printed) if ordered else {}
    parts: dict[int, _Part] = {}
    for rank, n in enumerate(ordered):
        parts[rank] = _Part(rank, (n,), rank, frozenset({repeats.get(n, n)}), None if reject else tol[n])
    alone = {p.names[0]: evaluator.single(p) for p in parts.values()}
    judged: dict[int, Candidate] = {i: alone[p.names[0]] for i, p in parts.items()}
    # Best saving first; among equal savings the parts that come first (by rank). An entry
    # holds either a candidate's exact saving (with the candidate) or a bound on it (None):
    # a bound is never below the saving, so when an exact entry is on top no other pair
    # can beat it, and only the pairs whose bound reaches that far are ever computed.
    heap: list[tuple[int, int, int, int, int, int, Candidate | None]] = []
    # a part's tolerance is the tightest of its members' (None: one declares none, or the pool rejects)
    tolerance_of: Callable[[_Part, _Part], float | None] = (
        (lambda a, b: None) if reject else (lambda a, b: tightest((a.tolerance, b.tolerance)))
    )

    def push(first: _Part, second: _Part, saving: tuple[int, int], both: Candidate | None) -> None:
        if first.rank > second.rank:
            first, second = second, first
        heapq.heappush(heap, (-saving[0], -saving[1], first.rank, second.rank, first.ident, second.ident, both))

    def bound(new: list[tuple[_Part, _Part]]) -> None:
        for a, b in new:
            ca, cb = judged[a.ident], judged[b.ident]
            if not (ca.ok and cb.ok) or a.classes & b.classes:
                continue
            if evaluator.monotone(a, b):
                most = (min(ca.capacity, cb.capacity), min(ca.reserved, cb.reserved))
            else:  # pooled, they need at least no GPUs
                most = (ca.capacity + cb.capacity, ca.reserved + cb.reserved)
            if most > (0, 0):
                push(a, b, most, None)

    short: dict[str, set[str]] = {}  # workload -> those whose traces overlap its own too briefly (PL112)

    def judge(entries: list[tuple[_Part, _Part]]) -> None:
        for (a, b), both in zip(entries, evaluator.pairs(entries, [tolerance_of(a, b) for a, b in entries])):
            if not both.ok:
                continue  # no bands
            if both.window_days < th.min_window_days:  # (PL112) too short a stretch for them
                for x, y in ((a, b), (b, a)):
                    for n in x.names:
                        short.setdefault(n, set()).update(y.names)
                continue
            ca, cb = judged[a.ident], judged[b.ident]
            saving = (ca.capacity + cb.capacity - both.capacity, ca.reserved + cb.reserved - both.reserved)
            if saving > (0, 0):
                push(a, b, saving, both)

    listed = sorted(parts.values(), key=lambda p: p.rank)
    bound([(a, b) for i, a in enumerate(listed) for b in listed[i + 1 :]])
    next_ident = len(ordered)
    while heap:
        ia, ib, both = heap[0][4], heap[0][5], heap[0][6]
        if ia not in parts or ib not in parts:
            heapq.heappop(heap)  # one of them merged already
            continue
        if both is None:  # bounds on top: compute a batch of them
            batch: list[tuple[_Part, _Part]] = []
            while heap and len(batch) < _BATCH_ROWS and heap[0][6] is None:
                _, _, _, _, ia, ib, _ = heapq.heappop(heap)
                if ia in parts and ib in parts:
                    batch.append((parts[ia], parts[ib]))
            judge(batch)
            continue
        heapq.heappop(heap)
        a, b = parts.pop(ia), parts.pop(ib)
        into = _Part(next_ident, tuple(sorted(a.names + b.names)), min(a.rank, b.rank), a.classes | b.classes, tolerance_of(a, b))
        next_ident += 1
        evaluator.merged(a, b, into)
        judged[into.ident] = both
        parts[into.ident] = into
        bound([(into, p) for p in sorted(parts.values(), key=lambda p: p.rank) if p is not into])
    if why is not None:
        for p in parts.values():
            if len(p.names) == 1:
                n = p.names[0]
                copies = [m for m in ordered if m != n and repeats.get(m, m) == repeats.get(n, n)]
                why[n] = _why_alone(n, ordered, copies, sorted(short.get(n, ())), th)
    return sorted(list(p.names) for p in parts.values()), alone


def _names(names: Sequence[str], most: int = 3) -> str:
    """'a', 'a and b', 'a, b and c', 'a, b, c and 2 more'."""
    shown = list(names[:most])
    if len(names) > most:
        return f"{', '.join(shown)} and {len(names) - most} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def _why_alone(name: str, group: Sequence[str], copies: Sequence[str], short: Sequence[str], th: Thresholds) -> str:
    """Why ``name`` ends in a pool of its own: each reason named, with the workloads it concerns.

    ``copies`` cite the measurement ``name`` cites (PL111: pooled, it would count twice;
    apart, each pool buys it - which PL972 reports on the planned repository); ``short``
    overlap its trace for less than PL112's window; with every other workload of the
    group pooling saved no GPUs.
    """
    others = [m for m in group if m != name]
    if not others:
        return "alone: the only measured workload of its group"
    parts = []
    if copies:
        parts.append(
            f"it cites the same measurement as {_names(copies)} (PL111): pooled, that demand would count twice, and"
            " apart each pool buys it - give it a trace of its own or declare its share"
        )
    if short:
        whose = f"the trace of {short[0]}" if len(short) == 1 else f"the traces of {_names(short)}"
        parts.append(f"its trace overlaps {whose} for less than {th.min_window_days:g} days (PL112)")
    rest = len(others) - len(set(copies) | set(short))
    if rest > 0:
        parts.append(
            "pooled with any other workload of its group it would save no GPUs"
            if not parts
            else f"pooled with {'the other' if rest == 1 else f'any of the other {rest}'} it would save no GPUs"
        )
    return "alone: " + "; ".join(parts)
