"""Stand-in sheets for unchanged neighbours: the few facts the pool steps read, the rest made only when read.

A one-file run in a pool of N workloads rebuilt every neighbour's whole view
from its index row (a JSON parse of about 110 values, three sheet objects, the
clock facts), although the pool steps (:func:`policylint.engine.views.build_views`:
the pool view, capacity shares, queue depth, double counts, near copies, the
cluster's tolerances) read a handful of them, and a neighbour whose kept verdict
holds (:mod:`policylint.engine.verdicts`) is read for nothing else: its digest
reads its pool and the facts the pool steps give it.

A stand-in (:func:`stand_in`) is an instance of a subclass of the sheet's own
class holding only the facts named in :data:`LITE` (kept in the index row as
their own small JSON text, taken from the same view as the row's values) and
what later steps set on it. Reading any other field makes the whole sheet: the
``fill`` callback rebuilds it from the row exactly as before and every field not
yet held is taken from it, so a field set by a pool step keeps the value it was
set to. Reads are therefore always the values of the plain rebuilt sheet with
the pool steps' changes over them: the list only decides what is fast.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from policylint.engine.sheets import WorkloadFactSheet
from policylint.facts import Facts

_T = TypeVar("_T", bound=Facts)

#: The facts of a workload sheet a stand-in holds: what the pool steps and the neighbour rules' verdict
#: digests read (PL111, PL972: double counts, near copies). Any other fact read makes the whole sheet.
LITE: tuple[str, ...] = (
    "name", "pool", "workload_class", "gpus_per_replica", "trace_unit", "per_gpu", "sustained_max",
    "baseline_gpus", "daily_gpus", "peak_gpus", "tolerance_seconds", "vram_resident_gib", "multi_gpu_job",
    "queue_depth_needed", "capacity_share", "pool_overflow", "concurrency_measured",
    # the pooled part (every fact of it: the pool steps replace it whole)
    "pool_capacity_gpus", "max_wait_seconds", "p99_wait_seconds", "daily_max_wait_seconds",
    "daily_rejected_share", "queue_rejection_note", "measurement_double_counted", "double_counted_with",
    "double_count_basis", "measurement_share",
    # the integrity part: fingerprints (double counts, near copies) and the near-copy facts
    "values_fingerprint", "series_fingerprint", "shape_fingerprint", "value_changes",
    "near_copy_of", "near_copy_similarity", "near_copy_trace", "near_copy_pool",
)

#: the key of a stand-in's ``__dict__`` holding its fill callback until the whole sheet is made
_FILL = "_lite_fill"
#: counters for tests: stand-ins made, and stand-ins whose whole sheet was made
STATS: dict[str, int] = {"made": 0, "filled": 0}


class _Guard:
    """A sheet holding some of its fields: reading one it does not hold yet makes the whole sheet first."""

    __slots__ = ()
    #: the sheet's dataclass fields (set per stand-in class)
    _lite_fields: frozenset[str] = frozenset()

    def __getattribute__(self, name: str) -> Any:
        held = object.__getattribute__(self, "__dict__")
        try:
            return held[name]
        except KeyError:
            pass
        if _FILL in held and name in type(self)._lite_fields:
            held[_FILL]()
            return held[name]
        return object.__getattribute__(self, name)


_CLASSES: dict[type, type] = {}


def _lite_class(cls: type[_T]) -> type[_T]:
    """The stand-in subclass of the sheet class ``cls`` (one per class)."""
    import dataclasses

    found = _CLASSES.get(cls)
    if found is None:
        meta: Any = type(cls)  # the sheet's metaclass (ABCMeta: a sheet is a Mapping)
        found = meta(f"Lite{cls.__name__}", (_Guard, cls), {
            "_lite_fields": frozenset(f.name for f in dataclasses.fields(cls)),
            "__module__": __name__,
        })
        _CLASSES[cls] = found
    return found


#: per sheet class: the stand-in plan - per part field (None for the sheet's own facts), (field names, places in LITE)
_PLANS: dict[type, list[tuple[str | None, type | None, list[str], list[int]]]] = {}


def _plan(cls: type[Facts]) -> list[tuple[str | None, type | None, list[str], list[int]]]:
    found = _PLANS.get(cls)
    if found is None:
        import dataclasses

        from policylint.facts import _part_type

        routes = cls.routes()
        own: tuple[list[str], list[int]] = ([], [])
        parts: dict[str, tuple[type, list[str], list[int]]] = {}
        for f in dataclasses.fields(cls):
            if f.metadata.get("part"):
                parts[f.name] = (_part_type(cls, f), [], [])
        for i, name in enumerate(LITE):
            route = routes[name]
            if len(route) == 1:
                own[0].append(name)
                own[1].append(i)
            elif len(route) == 2 and route[0] in parts:
                parts[route[0]][1].append(route[1])
                parts[route[0]][2].append(i)
            else:
                raise TypeError(f"{name} is not a fact of {cls.__name__} or of one of its parts")
        found = [(None, None, own[0], own[1])]
        found += [(field, part_cls, names, places) for field, (part_cls, names, places) in parts.items()]
        _PLANS[cls] = found
    return found


def lite_values(sheet: Mapping[str, Any]) -> list[Any]:
    """The values of :data:`LITE` in ``sheet`` (a workload's view facts), in order: what a stand-in is made from."""
    return [sheet[name] for name in LITE]


def stand_in(values: Sequence[Any], fill: Callable[[], WorkloadFactSheet]) -> WorkloadFactSheet:
    """A workload sheet holding the :data:`LITE` facts ``values``; ``fill()`` gives the whole sheet when another is read.

    The whole sheet's fields are taken only where the stand-in holds none, its parts'
    likewise: what a step set on the stand-in (or on its parts) stays.
    """
    if len(values) != len(LITE):
        raise ValueError("values")
    plan = _plan(WorkloadFactSheet)
    root_cls = _lite_class(WorkloadFactSheet)
    root = object.__new__(root_cls)
    held = root.__dict__
    parts: list[tuple[str, Any]] = []
    for field, part_cls, names, places in plan:
        if field is None:
            held.update(zip(names, [values[i] for i in places]))
            continue
        assert part_cls is not None
        part: Any = object.__new__(_lite_class(part_cls))
        part.__dict__.update(zip(names, [values[i] for i in places]))
        held[field] = part
        parts.append((field, part))

    def made() -> None:
        whole = fill()
        for field, part in parts:
            mine = part.__dict__
            mine.pop(_FILL, None)
            for key, value in getattr(whole, field).__dict__.items():
                mine.setdefault(key, value)
        held.pop(_FILL, None)
        for key, value in whole.__dict__.items():
            held.setdefault(key, value)
        STATS["filled"] += 1

    held[_FILL] = made
    for _, part in parts:
        part.__dict__[_FILL] = made
    for obj in (root, *(p for _, p in parts)):
        if "_fact_getters" not in type(obj).__dict__:
            obj.__post_init__()  # the class's getters, made once per class
    STATS["made"] += 1
    return root


def is_stand_in(sheet: object) -> bool:
    """True for a stand-in made by :func:`stand_in` (or one of its parts), filled or not."""
    return isinstance(sheet, _Guard)


def set_facts(sheet: Facts, changes: Mapping[str, Any]) -> None:
    """Set ``changes`` (fields of ``sheet``) in place: for a stand-in's part, what ``replaced`` would make of it."""
    for key, value in changes.items():
        setattr(sheet, key, value)
