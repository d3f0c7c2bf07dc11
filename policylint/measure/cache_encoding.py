"""The measurement entries' value encoding: dataclasses, tuples and arrays as JSON plus raw arrays.

:class:`Encoder` turns a value into a JSON document and a few named arrays (one
per dtype) for :func:`policylint.cache.store.write_entry`; :func:`decode`
rebuilds it from what :func:`policylint.cache.store.load_entry` read. Nothing is
pickled, and the decoder builds nothing but plain data, arrays and the
dataclasses of a closed table (:func:`_types`): an entry names a type by a tag
of that table, never by a module or class, and each field is checked against
the dataclass's own annotation, so a value of another type is a miss.

Two compact forms keep entries small: a regular time axis is stored as its start
and step (only when rebuilding it gives the same bits), a long boolean mask one
bit per element; many same-class dataclasses of plain numbers (a trace's spikes)
are stored one array per field. What the compact forms expand to is charged to
the entry's :class:`~policylint.cache.store.Budget` before anything is allocated.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import math
import sys
import types
import typing
from collections.abc import Callable
from typing import Any

from policylint.bands import BandReport, QueueStats, SpikeTable
from policylint.cache.store import DTYPES, Budget, Uncacheable
from policylint.measure.facts import GpuDemand, PoolFacts, WorkloadFacts
from policylint.measure.pooled import PooledGrid, PooledReport
from policylint.readers.series import Exclusion, Gap, Series

#: a tuple of at least this many same-class dataclasses is stored column by column
_COLUMNAR_MIN = 8
#: the exact types :meth:`Encoder.encode` hands back as they are (subclasses take the long way)
_PLAIN_SCALARS = frozenset((type(None), bool, str, int, float))


@functools.lru_cache(maxsize=256)
def _init_fields(cls: type) -> tuple[str, ...]:
    """The names of ``cls``'s init fields, in order (what an entry stores of one of its instances)."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)


class Encoder:
    """Turn dataclasses, tuples and arrays into JSON plus named arrays."""

    def __init__(self) -> None:
        # Arrays of one dtype are laid end to end in one blob: an archive member costs
        # a header parse on load, and an entry holds a dozen small arrays.
        self._parts: dict[str, list[Any]] = {}
        self._sizes: dict[str, int] = {}
        self._names: dict[str, str] = {}  # dtype -> archive member
        self._seen: dict[int, list[Any]] = {}  # one array shared by two fields is stored once

    def _array(self, value: Any) -> list[Any]:
        """Add an array (or numpy scalar); return its reference: [blob, offset, shape]."""
        import numpy as np

        if isinstance(value, np.ndarray) and id(value) in self._seen:
            return self._seen[id(value)]
        arr = np.asarray(value)
        if arr.dtype.str not in DTYPES:
            raise Uncacheable(f"array of {arr.dtype}")
        compact = _compact(arr)
        if compact is None and arr.dtype == np.bool_ and arr.ndim == 1 and arr.size >= 64:
            # a validity mask: one bit per sample instead of one byte
            compact = ["=bits", self._array(np.packbits(arr)), int(arr.size)]
        if compact is not None:
            if isinstance(value, np.ndarray):
                self._seen[id(value)] = compact
            return compact
        blob = self._names.setdefault(arr.dtype.str, f"b{len(self._names)}")
        offset = self._sizes.get(blob, 0)
        self._parts.setdefault(blob, []).append(arr.ravel())
        self._sizes[blob] = offset + arr.size
        ref = [blob, offset, list(arr.shape)]
        if isinstance(value, np.ndarray):
            self._seen[id(value)] = ref
        return ref

    def blobs(self) -> dict[str, Any]:
        """The archive members: one flat array per dtype."""
        import numpy as np

        return {blob: np.concatenate(parts) for blob, parts in self._parts.items()}

    def encode(self, value: Any) -> Any:
        if type(value) in _PLAIN_SCALARS:  # most of an entry's values: as the checks below would give them
            return value
        import numpy as np

        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, np.generic):  # before float: np.float64 is a float
            return {"$scalar": self._array(value)}
        if type(value) in (int, float):
            return value
        if isinstance(value, np.ndarray):
            return {"$array": self._array(value)}
        if isinstance(value, dt.datetime):
            return {"$datetime": value.isoformat()}
        if isinstance(value, (tuple, list)):
            columns = self._columnar(value)
            if columns is not None:
                return columns
            items = [self.encode(v) for v in value]
            return {"$tuple": items} if isinstance(value, tuple) else {"$list": items}
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                raise Uncacheable("dict with non-text keys")
            return {"$dict": {k: self.encode(v) for k, v in value.items()}}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            tag = _tag_of(type(value))
            fields = {name: self.encode(getattr(value, name)) for name in _init_fields(type(value))}
            return {"$type": tag, "fields": fields}
        raise Uncacheable(type(value).__name__)

    def _columnar(self, items: tuple[Any, ...] | list[Any]) -> Any:
        """Many same-class dataclasses of plain numbers become one array per field."""
        import numpy as np

        if len(items) < _COLUMNAR_MIN or not isinstance(items, tuple):
            return None
        cls = type(items[0])
        if not dataclasses.is_dataclass(cls) or any(type(x) is not cls for x in items):
            return None
        fields = _init_fields(cls)
        columns = {}
        for name in fields:
            values = [getattr(x, name) for x in items]
            kind = type(values[0])
            # one exact Python type per field, so tolist() gives back the same objects
            if kind not in (int, float, bool) or any(type(v) is not kind for v in values):
                return None
            columns[name] = self._array(np.array(values, dtype={int: np.int64, float: np.float64, bool: np.bool_}[kind]))
        return {"$columns": _tag_of(cls), "n": len(items), "fields": columns}


def _range_of(start: float, step: float, n: int) -> Any:
    """The grid ``start + i x step``: how a regular time axis is rebuilt, bit for bit."""
    import numpy as np

    return start + np.arange(n, dtype=np.float64) * step


def _compact(arr: Any) -> list[Any] | None:
    """A short reference for arrays that need not be stored sample by sample, else None.

    A regular float grid (a trace's time axis) becomes its start and step, but only
    when rebuilding it gives exactly the same bits (boolean masks are packed to one
    bit per element by the encoder). Both are most of an entry's bytes.
    """
    import numpy as np

    if arr.ndim != 1 or arr.size < 3:
        return None
    if arr.dtype == np.float64:
        start = float(arr[0])
        step = float(arr[1] - arr[0])
        # compared bit for bit: array_equal would take -0.0 for 0.0
        rebuilt = _range_of(start, step, arr.size)
        if math.isfinite(start) and math.isfinite(step) and np.array_equal(rebuilt.view(np.int64), arr.view(np.int64)):
            return ["=range", start, step, int(arr.size)]
        return None
    return None


# The closed table of what an entry can rebuild. An entry names a type by one of these
# tags, never by a module or class name; any other tag, or fields that differ from the
# dataclass's own, make the entry a miss. The table holds exactly the dataclasses that
# WorkloadFacts, GpuDemand and PoolFacts are made of (a test walks their annotations).


@functools.lru_cache(maxsize=1)
def _types() -> dict[str, tuple[type, dict[str, Callable[[Any], bool]]]]:
    """Tag -> (dataclass, a type check per init field): everything an entry may rebuild."""
    table: dict[str, type] = {
        "WorkloadFacts": WorkloadFacts,
        "GpuDemand": GpuDemand,
        "PoolFacts": PoolFacts,
        "BandReport": BandReport,
        "QueueStats": QueueStats,
        "SpikeTable": SpikeTable,
        "Series": Series,
        "Gap": Gap,
        "Exclusion": Exclusion,
        "PooledReport": PooledReport,
        "PooledGrid": PooledGrid,
    }
    return {tag: (cls, _field_checks(cls)) for tag, cls in table.items()}


def _field_checks(cls: type) -> dict[str, Callable[[Any], bool]]:
    """A check per init field of ``cls``, from its annotations: a value of another type is a miss."""
    import numpy as np

    # the annotations are strings naming types their module imports only for mypy
    names: dict[str, Any] = {"np": np, "dt": dt}
    for module in ("policylint.readers.series", "policylint.bands", "policylint.measure.pooled", "policylint.measure.facts"):
        names.update(vars(sys.modules[module]))
    names.update(vars(sys.modules[cls.__module__]))
    hints = typing.get_type_hints(cls, globalns=names)
    return {f.name: _check_for(hints[f.name]) for f in dataclasses.fields(cls) if f.init}


def _check_for(kind: Any) -> Callable[[Any], bool]:
    """A predicate that holds for values of the annotation ``kind`` (numpy scalars count as numbers)."""
    import numpy as np

    if kind is type(None):
        return lambda v: v is None
    if kind is bool:
        return lambda v: isinstance(v, (bool, np.bool_))
    if kind is int:
        return lambda v: isinstance(v, (int, np.integer))
    if kind is float:
        return lambda v: isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
    if kind is str:
        return lambda v: isinstance(v, str)
    if kind is np.ndarray:
        return lambda v: isinstance(v, np.ndarray)
    if kind is dt.datetime:
        return lambda v: isinstance(v, dt.datetime)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return lambda v: isinstance(v, kind)
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        return _union_check(args)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _check_for(args[0])
        return lambda v: isinstance(v, tuple) and all(item(x) for x in v)
    if origin is tuple:
        items = [_check_for(a) for a in args]
        return lambda v: isinstance(v, tuple) and len(v) == len(items) and all(ok(x) for ok, x in zip(items, v))
    if origin is list:
        item = _check_for(args[0]) if args else (lambda v: True)
        return lambda v: isinstance(v, list) and all(item(x) for x in v)
    if origin is dict:
        value = _check_for(args[1]) if len(args) == 2 else (lambda v: True)
        return lambda v: isinstance(v, dict) and all(isinstance(k, str) and value(x) for k, x in v.items())
    # an annotation this table does not know: the value is plain data (the decoder builds nothing else)
    return lambda v: True


def _simple(kind: Any) -> tuple[tuple[type, ...], bool] | None:
    """The types :func:`_check_for` accepts for ``kind`` by one isinstance test, and whether it refuses bools."""
    import numpy as np

    if kind is type(None):
        return (type(None),), False
    if kind is bool:
        return (bool, np.bool_), False
    if kind is int:
        return (int, np.integer), False
    if kind is float:
        return (int, float, np.integer, np.floating), True
    if kind in (str, np.ndarray, dt.datetime) or (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
        return (kind,), False
    return None


def _union_check(args: tuple[Any, ...]) -> Callable[[Any], bool]:
    """:func:`_check_for` of a union: one isinstance test for its plain options (a warm run checks
    hundreds of thousands of values), the others one by one. Accepts exactly what any option accepts.
    """
    plain: list[type] = []
    numbers: tuple[type, ...] = ()  # a float option: numbers but not bools
    rest: list[Callable[[Any], bool]] = []
    for arg in args:
        simple = _simple(arg)
        if simple is None:
            rest.append(_check_for(arg))
        elif simple[1]:
            numbers = simple[0]
        else:
            plain.extend(simple[0])
    if numbers and any(issubclass(bool, t) for t in plain):
        plain.extend(numbers)  # bools are accepted anyway: the float option's exception is moot
        numbers = ()
    accepted = tuple(dict.fromkeys(plain))
    if not numbers and not rest:
        return lambda v: isinstance(v, accepted)

    def check(v: Any) -> bool:
        if isinstance(v, accepted) or (numbers and isinstance(v, numbers) and not isinstance(v, bool)):
            return True
        return any(ok(v) for ok in rest)

    return check


@functools.lru_cache(maxsize=1)
def _tags() -> dict[type, str]:
    return {cls: tag for tag, (cls, _) in _types().items()}


def _tag_of(cls: type) -> str:
    """The tag an entry stores for ``cls``; :class:`Uncacheable` for a type outside the table."""
    tag = _tags().get(cls)
    if tag is None:
        raise Uncacheable(f"{cls.__qualname__} is not in the entry type table")
    return tag


def _resolve_tag(tag: Any, stored: Any) -> tuple[Any, dict[str, Callable[[Any], bool]]]:
    """The dataclass of ``tag`` and its field checks, only if its init fields are exactly ``stored``."""
    found = _types().get(tag) if isinstance(tag, str) else None
    if found is None:
        raise ValueError("unknown type tag")
    cls, checks = found
    if not isinstance(stored, dict) or checks.keys() != stored.keys():
        raise ValueError(f"fields of {tag} differ")
    return cls, checks


def _slice(arrays: dict[str, Any], ref: list[Any], budget: Budget | None = None) -> Any:
    """The array a reference [member, offset, shape] (or a compact form) points at.

    A compact form's declared size is charged to ``budget`` before anything is
    allocated (a range of 3e8 samples would otherwise cost gigabytes).
    """
    if budget is None:
        budget = Budget(0)
    if not isinstance(ref, list) or not ref:
        raise ValueError("bad reference")
    if ref[0] == "=range":
        _, start, step, n = ref
        if type(n) is not int or not isinstance(start, float) or not isinstance(step, float):
            raise ValueError("bad range")
        if not (math.isfinite(start) and math.isfinite(step)):
            raise ValueError("bad range")
        budget.take(n)
        return _range_of(start, step, n)
    if ref[0] == "=bits":
        import numpy as np

        _, inner, n = ref
        if type(n) is not int or n < 0:
            raise ValueError("bad bit mask")
        packed = _slice(arrays, inner, budget)
        if packed.dtype != np.uint8 or packed.ndim != 1 or packed.size != (n + 7) // 8:
            raise ValueError("bad bit mask")
        return np.unpackbits(packed, count=n).astype(np.bool_)
    name, offset, shape = ref
    blob = arrays[name]
    if type(offset) is not int or not isinstance(shape, list) or any(type(n) is not int or n < 0 for n in shape):
        raise ValueError("bad reference")
    size = 1
    for n in shape:
        size *= n
    if offset < 0 or offset + size > blob.size:
        raise ValueError("reference outside its blob")
    return blob[offset : offset + size].reshape(shape)


#: the values JSON gives that :func:`decode` returns as they are
_SCALARS = frozenset({int, float, str, bool, type(None)})


def decode(value: Any, arrays: dict[str, Any], budget: Budget | None = None) -> Any:
    """Rebuild a value the encoder wrote: plain data, arrays and dataclasses of the table only."""
    if budget is None:
        budget = Budget(0)
    if not isinstance(value, dict):
        if isinstance(value, list):
            raise ValueError("bare list")
        return value
    if len(value) == 1:
        ((tag, inner),) = value.items()
        if tag == "$scalar":
            return _slice(arrays, inner, budget)[()]
        if tag == "$array":
            return _slice(arrays, inner, budget)
        if tag == "$datetime" and isinstance(inner, str):
            return dt.datetime.fromisoformat(inner)
        # (a plain JSON scalar decodes to itself: taken without a call, as decode would return it)
        if tag == "$tuple" and isinstance(inner, list):
            return tuple(v if type(v) in _SCALARS else decode(v, arrays, budget) for v in inner)
        if tag == "$list" and isinstance(inner, list):
            return [v if type(v) in _SCALARS else decode(v, arrays, budget) for v in inner]
        if tag == "$dict" and isinstance(inner, dict):
            return {k: v if type(v) in _SCALARS else decode(v, arrays, budget) for k, v in inner.items()}
        raise ValueError("unknown tag")
    if "$type" in value and len(value) == 2:
        fields = value["fields"]
        cls, checks = _resolve_tag(value["$type"], fields)
        decoded = {k: v if type(v) in _SCALARS else decode(v, arrays, budget) for k, v in fields.items()}
        for name, item in decoded.items():
            if not checks[name](item):
                raise ValueError(f"{value['$type']}.{name} has the wrong type")
        return cls(**decoded)
    if "$columns" in value and len(value) == 3:
        fields = value["fields"]
        cls, checks = _resolve_tag(value["$columns"], fields)
        # positional, in the dataclass's own field order: thousands of spikes per trace
        names = [f.name for f in dataclasses.fields(cls) if f.init]
        columns = [_slice(arrays, fields[name], budget).tolist() for name in names]
        if any(len(col) != value["n"] for col in columns):
            raise ValueError("column lengths differ")
        # one array per column, so one Python type per column: its first value speaks for all
        if any(col and not checks[name](col[0]) for name, col in zip(names, columns)):
            raise ValueError("a column has the wrong type")
        return tuple(map(cls, *columns))
    raise ValueError("unknown tag")

