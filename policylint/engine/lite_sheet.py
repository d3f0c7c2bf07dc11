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
#: digests read (PL111, PL972: double counts, near copies; the rounding and the baseline the pool's PL113
#: sums). Any other fact read makes the whole sheet.
LITE: tuple[str, ...] = (
    "name", "pool", "workload_class", "gpus_per_replica", "trace_unit", "per_gpu", "baseline", "sustained_max",
    "baseline_gpus", "rounding_gpus_mean", "daily_gpus", "peak_gpus", "tolerance_seconds", "vram_resident_gib", "multi_gpu_job",
    "tail_job_gpus", "durations_measured", "tail_ratio",  # the pool's buffer need (PL603)
    "queue_depth_needed", "capacity_share", "pool_overflow", "concurrency_measured",
    # the pooled part (every fact of it: the pool steps replace it whole)
    "pool_capacity_gpus", "measured_pool_gpus", "measured_pool_basis", "max_wait_seconds", "p99_wait_seconds", "daily_max_wait_seconds",
    "daily_rejected_share", "queue_rejection_note", "measurement_double_counted", "double_counted_with",
    "double_count_basis", "measurement_share", "durations_shared", "durations_shared_with", "durations_shared_pool",
    # the integrity part: fingerprints (double counts, near copies) and the near-copy facts
    "values_fingerprint", "series_fingerprint", "shape_fingerprint", "value_changes", "jobs_fingerprint",
    "part_fingerprints", "part_sketches", "part_shapes", "part_labels",
    "samples_fingerprint",
    "near_copy_of", "near_copy_similarity", "near_copy_trace", "near_copy_pool", "near_copy_part",
)

#: the key of a stand-in's ``__dict__`` holding its fill callback until the whole sheet is made
_FILL = "_lite_fill"
#: counters for tests: stand-ins made, and stand-ins whose whole sheet was made
STATS: dict[str, int] = {"made": 0, "filled": 0}


class _Unheld:
    """A field a stand-in does not hold yet: reading it makes the whole sheet, whose value it then holds.

    A non-data descriptor on the stand-in class, so a field the instance holds is read
    straight from its ``__dict__`` (no Python call); only a field not held comes here.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        held = obj.__dict__
        fill = held.get(_FILL)
        if fill is None:
            raise AttributeError(self.name)
        fill()
        return held[self.name]


_CLASSES: dict[type, type] = {}
#: the stand-in classes made
_STAND_INS: set[type] = set()


def _lite_class(cls: type[_T]) -> type[_T]:
    """The stand-in subclass of the sheet class ``cls`` (one per class): every field an :class:`_Unheld`."""
    import dataclasses
    import operator

    found = _CLASSES.get(cls)
    if found is None:
        space: dict[str, Any] = {f.name: _Unheld(f.name) for f in dataclasses.fields(cls)}
        # what Facts.__post_init__ would set on the class: one getter per fact, by its route
        space["_fact_getters"] = {name: operator.attrgetter(".".join(route)) for name, route in cls.routes().items()}
        space["__module__"] = __name__
        meta: Any = type(cls)  # the sheet's metaclass (ABCMeta: a sheet is a Mapping)
        found = meta(f"Lite{cls.__name__}", (cls,), space)
        _CLASSES[cls] = found
        _STAND_INS.add(found)
    return found


#: per sheet class: the stand-in plan - per part field (None for the sheet's own facts), (stand-in class, field names,
#: the picker of their values from the LITE values)
_PLANS: dict[type, list[tuple[str | None, type, list[str], Callable[[Sequence[Any]], Any]]]] = {}


def _picker(places: list[int]) -> Callable[[Sequence[Any]], Any]:
    """The values at ``places``, in order (``operator.itemgetter``: made per stand-in, 30,000 times at 10,000 workloads)."""
    import operator

    if len(places) == 1:
        at = places[0]
        return lambda values: (values[at],)
    return operator.itemgetter(*places) if places else (lambda values: ())


def _plan(cls: type[Facts]) -> list[tuple[str | None, type, list[str], Callable[[Sequence[Any]], Any]]]:
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
        found = [(None, _lite_class(cls), own[0], _picker(own[1]))]
        found += [(field, _lite_class(part_cls), names, _picker(places))
                  for field, (part_cls, names, places) in parts.items()]
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
    new = object.__new__
    root: Any = None
    parts: list[tuple[str, Any]] = []
    for field, lite_cls, names, pick in plan:
        obj: Any = new(lite_cls)
        obj.__dict__.update(zip(names, pick(values)))
        if field is None:
            root = obj
        else:
            parts.append((field, obj))
    held = root.__dict__
    held.update(parts)

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
    STATS["made"] += 1
    return root  # type: ignore[no-any-return]


def is_stand_in(sheet: object) -> bool:
    """True for a stand-in made by :func:`stand_in` (or one of its parts), filled or not."""
    return type(sheet) in _STAND_INS


def set_facts(sheet: Facts, changes: Mapping[str, Any]) -> None:
    """Set ``changes`` (fields of ``sheet``) in place: for a stand-in's part, what ``replaced`` would make of it."""
    for key, value in changes.items():
        setattr(sheet, key, value)
