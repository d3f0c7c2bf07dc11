"""The pooled-sum cache: a pool's summed GPU demand kept whole and updated one member at a time.

A pool's exact entry (:func:`policylint.measure.measurement_cache.pool_key`) is keyed by every
member's measurement key, so any edit to any member misses it, and summing the
pool afresh reads every member's GPU demand series back from the cache: in a
one-pool repository of a thousand workloads that is hundreds of megabytes for a
one-line change. This cache keeps, per pool, the sum itself - split so that it
can be taken apart again exactly:

* ``total``: per grid instant, the sum of the members' usable GPU counts, as
  64-bit integers;
* ``missing``: per grid instant, how many members have no usable sample there
  (the pooled series is unknown where any one is missing);
* per member: its measurement key, the extent of its time axis (step, first and
  last time: what the grid is laid from, :func:`policylint.measure.pooled.grid_spec`) and
  its bands alone at the pool's cold start (for the "sum of the workloads' bands"
  comparison).

A run whose pool misses the exact entry but finds this one takes the members
whose key changed (edited, added, removed, moved from or to another pool) and
updates the sum: the old series of each one that left (read from its own series
entry, by its old key) is subtracted on the pool's grid, the new one added - the
others are not read at all. Every step is exact: GPU counts are whole numbers,
summed as integers, and the pooled series is ``total`` where nothing is missing,
which is bit for bit the float sum :func:`policylint.measure.pooled.align` computes
(integers below 2**53 add exactly in any order). When anything could make the
result differ - a grid that moves (a changed member bounds the common time span,
or has the finest step), another pool cold start, a count that is not a whole
number below the exact range, an old series that cannot be read, too many
changed members - the pool is summed afresh from every member, exactly as
without this cache, and a new entry is written.

The entry is one sealed binary entry (:mod:`policylint.cache.store`:
HMAC per entry under its own kind, read as user files are, size-limited), holding
plain JSON and two integer arrays; every field is checked on reading and anything
unexpected is a miss. It is found by the pool's name, the repository's real path
and the code fingerprint - not by its content, which is what it is checked against.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.cache.store import FORMAT_VERSION, code_fingerprint, load_entry, write_entry
from policylint.measure.pooled import GridSpec, PoolMember, on_grid

if TYPE_CHECKING:
    import numpy as np

#: layout of a pooled-sum entry; part of its locator
SUM_FORMAT = 1
#: the entry kind (its own HMAC key: an entry of another kind never passes for one)
KIND = "poolsum"
#: sums and counts stay below this: float64 adds whole numbers below 2**53 exactly
_EXACT_LIMIT = 2**52
#: at most this share of a pool's members (at least 8) may have changed for an update
MAX_CHANGED_SHARE = 0.25
_MIN_CHANGED = 8

#: a member's bands alone at the pool's cold start: baseline, daily, peak, sustained maximum
Alone = tuple[float | None, float | None, float | None, float | None]


@dataclass(frozen=True)
class SumMember:
    """What the pooled sum knows of one member (see the module docs)."""

    key: str
    step: float
    first: float
    last: float
    alone: Alone


@dataclass
class PoolSum:
    """A pool's summed GPU demand, ready to be updated (see the module docs)."""

    locator: str
    grid: GridSpec
    cold_start: float
    members: dict[str, SumMember]
    total: np.ndarray  # int64, one per grid instant
    missing: np.ndarray  # int32, one per grid instant

    def changes(self, keys: Mapping[str, str]) -> tuple[list[str], list[str]] | None:
        """(members to take out, members to put in) to reach ``keys``; None when too many changed."""
        out = sorted(n for n, m in self.members.items() if keys.get(n) != m.key)
        into = sorted(n for n, k in keys.items() if n not in self.members or self.members[n].key != k)
        limit = max(_MIN_CHANGED, int(MAX_CHANGED_SHARE * max(len(keys), len(self.members))))
        if len(out) + len(into) > limit:
            return None
        return out, into

    def pooled(self) -> np.ndarray:
        """The pooled series g(t) of the grid: the total, NaN where a member is missing."""
        import numpy as np

        out: np.ndarray = np.where(self.missing > 0, np.nan, self.total.astype(np.float64))
        return out


def locator(root: Path, qualified: str) -> str:
    """Where a pool's sum is kept: its repository (real path), its name and the code."""
    real = os.path.realpath(root)
    text = f"poolsum/{SUM_FORMAT}/{FORMAT_VERSION}/{code_fingerprint()}\0{real}\0{qualified}"
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _path(folder: Path, key: str) -> Path:
    return folder / f"{KIND}-v{FORMAT_VERSION}" / key[:2] / f"{key}.sum"


class Inexact(Exception):
    """A member's demand that the integer sum cannot hold exactly: the pool is summed afresh."""


def counts(row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(whole GPU counts as int64 with 0 where missing, missing as int32) of a member's row on the grid.

    Raises :class:`Inexact` when a usable value is not a whole number in ``[0, 2**52]``
    (GPU counts always are; an infinite or negative count is summed afresh).
    """
    import numpy as np

    missing = np.isnan(row)
    usable = np.where(missing, 0.0, row)
    if usable.size and not (
        np.all(usable >= 0) and np.all(usable <= _EXACT_LIMIT) and np.array_equal(usable, np.floor(usable))
    ):
        raise Inexact("not whole GPU counts")
    return usable.astype(np.int64), missing.astype(np.int32)


class Accumulator:
    """Collects each member's row while :func:`policylint.measure.pooled.align` sums them (its ``parts``)."""

    def __init__(self, size: int) -> None:
        import numpy as np

        self.total = np.zeros(size, dtype=np.int64)
        self.missing = np.zeros(size, dtype=np.int32)
        self.exact = True

    def __call__(self, member: PoolMember, row: np.ndarray) -> None:
        if not self.exact:
            return
        try:
            add, gone = counts(row)
        except Inexact:
            self.exact = False
            return
        self.total += add
        self.missing += gone


def build(
    loc: str,
    grid: GridSpec,
    cold_start: float,
    members: Mapping[str, SumMember],
    total: np.ndarray,
    missing: np.ndarray,
) -> PoolSum | None:
    """A :class:`PoolSum`, or None when its total leaves the exact range."""
    import numpy as np

    if total.size and (int(np.max(total)) > _EXACT_LIMIT or int(np.min(total)) < 0 or int(np.min(missing)) < 0):
        return None
    return PoolSum(loc, grid, float(cold_start), dict(members), total, missing)


def update(
    base: PoolSum,
    grid: GridSpec,
    leaving: Sequence[PoolMember],
    joining: Sequence[tuple[PoolMember, SumMember]],
) -> PoolSum | None:
    """``base`` with ``leaving`` taken out and ``joining`` put in, on the unchanged ``grid``; None when not exact."""
    if grid != base.grid:
        return None
    times = grid.times()
    total = base.total.copy()
    missing = base.missing.copy()
    members = dict(base.members)
    try:
        for m in leaving:
            add, gone = counts(on_grid(m, times, grid))
            total -= add
            missing -= gone
            members.pop(m.name, None)
        for m, meta in joining:
            add, gone = counts(on_grid(m, times, grid))
            total += add
            missing += gone
            members[m.name] = meta
    except Inexact:
        return None
    return build(base.locator, grid, base.cold_start, members, total, missing)


# --------------------------------------------------------------------------- entry


def store(folder: Path, pool_sum: PoolSum) -> None:
    """Write ``pool_sum`` under its locator (sealed, atomically); a folder that refuses is skipped."""
    g = pool_sum.grid
    document = {
        "format": FORMAT_VERSION,
        "sum_format": SUM_FORMAT,
        "kind": KIND,
        "key": pool_sum.locator,
        "grid": [g.origin, g.step, g.k0, g.k1],
        "cold_start": pool_sum.cold_start,
        "members": [
            [name, m.key, m.step, m.first, m.last, list(m.alone)] for name, m in sorted(pool_sum.members.items())
        ],
    }
    try:
        write_entry(
            _path(folder, pool_sum.locator),
            document,
            {"total": pool_sum.total, "missing": pool_sum.missing},
            kind=KIND,
            folder=folder,
        )
    except (ValueError, TypeError):
        return


def _number(value: Any) -> float:
    if type(value) is not float or not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


def load(folder: Path, loc: str) -> PoolSum | None:
    """The sum kept under ``loc``, or None: absent, damaged, foreign, or any field not as written."""
    import numpy as np

    try:
        meta, arrays, _ = load_entry(_path(folder, loc), kind=KIND, folder=folder)
        if (
            meta.get("format") != FORMAT_VERSION
            or meta.get("sum_format") != SUM_FORMAT
            or meta.get("kind") != KIND
            or meta.get("key") != loc
        ):
            return None
        origin, step, k0, k1 = meta["grid"]
        if type(k0) is not int or type(k1) is not int or k1 < k0 or _number(step) <= 0:
            return None
        grid = GridSpec(_number(origin), step, k0, k1)
        cold = _number(meta["cold_start"])
        members: dict[str, SumMember] = {}
        for row in meta["members"]:
            name, key, m_step, first, last, alone = row
            if not isinstance(name, str) or not isinstance(key, str) or name in members:
                return None
            if not isinstance(alone, list) or len(alone) != 4:
                return None
            figures = tuple(None if a is None else _number(a) for a in alone)
            members[name] = SumMember(key, _number(m_step), _number(first), _number(last), figures)  # type: ignore[arg-type]
        total, missing = arrays["total"], arrays["missing"]
        size = k1 - k0
        if total.dtype != np.int64 or missing.dtype != np.int32 or total.size != size or missing.size != size:
            return None
        if set(arrays) != {"total", "missing"} or not members:
            return None
        return build(loc, grid, cold, members, total.copy(), missing.copy())
    except Exception:  # noqa: BLE001 - a missing or damaged entry is a miss, never an error
        return None

