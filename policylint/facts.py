"""How facts are declared: one typed record per subject kind, each field a fact with its unit and description.

A fact sheet is a dataclass deriving from :class:`Facts`. Each field is one fact
(:func:`fact`), written once with its type, unit and description; a field marked
with :func:`part` holds another sheet whose facts count as the owner's own (the
stage that computes them declares them where it lives: the integrity facts in
``measure``, the scheduler facts in ``schedulers``). From that one declaration
come:

* :func:`catalogue` - name -> description, what rule files are checked against
  when they load; :func:`declarations` - everything declared about each fact, from
  which ``docs/facts.md`` is written (``python tools/fact_catalogue.py``);
* the read-only mapping every sheet is (``facts["name"]``, ``facts.get(...)``,
  ``dict(facts)``), which rule conditions, check functions and message
  templates read by name - the names are the declared fields and nothing else.

Code that builds or changes a sheet uses its attributes, so the type checker
sees every fact.
"""

from __future__ import annotations

import dataclasses
import operator
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

#: Keys of a field's metadata.
_DESCRIPTION, _UNIT, _PART = "description", "unit", "part"

#: How to reach one fact from a sheet: the chain of part fields, then the fact's own field.
_Route = tuple[str, ...]


def fact(description: str, unit: str | None = None, *, default: Any = dataclasses.MISSING) -> Any:
    """One fact: a dataclass field with its description and unit (None: a count, a flag or a text).

    Without ``default`` the builder of the sheet must give it; facts a later step
    fills in (the pooled queue, near copies, the run's configuration) default to None.
    """
    return dataclasses.field(default=default, metadata={_DESCRIPTION: description, _UNIT: unit})


def part(factory: Any = dataclasses.MISSING) -> Any:
    """A field holding another sheet whose facts are read as the owner's own.

    ``factory`` makes the sheet a later step replaces (every fact None until then).
    """
    return dataclasses.field(default_factory=factory, metadata={_PART: True})


@dataclasses.dataclass(eq=False)
class Facts(Mapping[str, Any]):
    """Base of every fact sheet: a read-only mapping over its declared facts, parts flattened."""

    #: per sheet class, fact name -> route (built once, on first use)
    _routes: ClassVar[dict[type, dict[str, _Route]]] = {}
    #: per sheet class, fact name -> a getter of its value from a sheet (set when the first sheet is made)
    _fact_getters: ClassVar[dict[str, Callable[[Any], Any]]]

    @classmethod
    def routes(cls) -> dict[str, _Route]:
        """Every fact of the sheet, in declaration order, with the fields that lead to it."""
        found = Facts._routes.get(cls)
        if found is None:
            found = {}
            for f in dataclasses.fields(cls):
                if f.metadata.get(_PART):
                    items = [(name, (f.name, *route)) for name, route in _part_type(cls, f).routes().items()]
                elif _DESCRIPTION in f.metadata:
                    items = [(f.name, (f.name,))]
                else:
                    raise TypeError(f"{cls.__name__}.{f.name} is neither a fact nor a part")
                for name, route in items:
                    if name in found:
                        raise TypeError(f"fact {name!r} is declared twice in {cls.__name__}")
                    found[name] = route
            Facts._routes[cls] = found
        return found

    def __post_init__(self) -> None:
        cls = type(self)
        if "_fact_getters" not in cls.__dict__:
            # rules read facts by name thousands of times a run: one C-level getter per fact
            cls._fact_getters = {name: operator.attrgetter(".".join(route)) for name, route in cls.routes().items()}

    def __getitem__(self, name: str) -> Any:
        return self._fact_getters[name](self)

    def get(self, name: str, default: Any = None) -> Any:
        getter = self._fact_getters.get(name)
        return default if getter is None else getter(self)

    def __contains__(self, name: object) -> bool:
        return name in self._fact_getters

    def __iter__(self) -> Iterator[str]:
        return iter(self._fact_getters)

    def __len__(self) -> int:
        return len(self._fact_getters)


_Sheet = TypeVar("_Sheet", bound=Facts)


#: per sheet class, its resolved annotations (``get_type_hints`` of a whole class, made once, not once per part)
_HINTS: dict[type, dict[str, Any]] = {}


def _part_type(cls: type, part_field: dataclasses.Field[Any]) -> type[Facts]:
    """The sheet class a part field holds (its annotation may be a string: ``from __future__ import annotations``)."""
    inner = part_field.type
    if not isinstance(inner, type):
        hints = _HINTS.get(cls)
        if hints is None:
            hints = _HINTS[cls] = typing.get_type_hints(cls)
        inner = hints[part_field.name]
    if not (isinstance(inner, type) and issubclass(inner, Facts)):
        raise TypeError(f"{cls.__name__}.{part_field.name} is a part but not a fact sheet")
    return inner


#: per sheet class, its fields in order with the sheet class of each part (None for a fact);
#: built once: resolving a string annotation is a ``get_type_hints`` of the whole class
_PLANS: dict[type, list[tuple[str, type[Facts] | None]]] = {}


def _plan(sheet: type[Facts]) -> list[tuple[str, type[Facts] | None]]:
    found = _PLANS.get(sheet)
    if found is None:
        found = [(f.name, _part_type(sheet, f) if f.metadata.get(_PART) else None) for f in dataclasses.fields(sheet)]
        _PLANS[sheet] = found
    return found


def rebuild(sheet: type[_Sheet], flat: Mapping[str, Any]) -> _Sheet:
    """A sheet from every one of its facts by name (``dict(sheet)`` read back); parts are rebuilt the same way."""
    given: dict[str, Any] = {}
    for name, inner in _plan(sheet):
        given[name] = flat[name] if inner is None else rebuild(inner, flat)
    return sheet(**given)


def _direct(sheet: type[Facts]) -> bool:
    """True when setting a new instance's attributes is exactly what the sheet's ``__init__`` does with every field given.

    That is the dataclass-made ``__init__`` (every field an init parameter, set in field
    order by plain assignment) followed by :meth:`Facts.__post_init__` alone: no frozen or
    slotted class, no ``__setattr__`` of its own, no descriptor on a field's name.
    """
    import inspect

    params = getattr(sheet, "__dataclass_params__", None)
    init = sheet.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    if params is None or not params.init or params.frozen or code is None or code.co_filename != "<string>":
        return False
    if "__slots__" in sheet.__dict__ or sheet.__setattr__ is not object.__setattr__:
        return False
    if getattr(sheet, "__post_init__", None) is not Facts.__post_init__:
        return False
    fields = dataclasses.fields(sheet)
    given = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    if list(given) != ["self", *(f.name for f in fields)]:  # an InitVar, or a field that is no parameter
        return False
    for f in fields:
        if not f.init or hasattr(type(inspect.getattr_static(sheet, f.name, None)), "__set__"):
            return False
    return True


def builder(sheet: type[_Sheet], names: Sequence[str]) -> Callable[[list[Any]], _Sheet] | None:
    """A maker of ``sheet`` from the values of its facts listed in ``names``' order, as :func:`rebuild` makes it.

    None when ``names`` are not exactly the sheet's facts in declaration order. The maker
    sets each new sheet's fields at once when :func:`_direct` allows it, and calls the
    sheet's class otherwise; it reads the list it is given and never changes it.
    """
    if list(names) != list(sheet.routes()):
        return None
    return _maker(sheet, 0, len(names))[0]


def _maker(sheet: type[_Sheet], start: int, total: int) -> tuple[Callable[[list[Any]], _Sheet], int]:
    """(the maker of ``sheet`` whose facts begin at ``start`` of a list of ``total`` values, where they end)."""
    names: list[str] = []
    picks: list[int] = []
    parts: list[Callable[[list[Any]], Any]] = []
    at = start
    for name, inner in _plan(sheet):
        names.append(name)
        if inner is None:
            picks.append(at)
            at += 1
        else:
            make, at = _maker(inner, at, total)
            picks.append(total + len(parts))  # made parts follow the values
            parts.append(make)
    if len(picks) < 2 or not _direct(sheet):

        def plain(values: list[Any]) -> _Sheet:
            made = [make(values) for make in parts]
            return sheet(**{n: (values[i] if i < total else made[i - total]) for n, i in zip(names, picks)})

        return plain, at
    pick = operator.itemgetter(*picks)
    new = sheet.__new__

    def direct(values: list[Any]) -> _Sheet:
        obj = new(sheet)
        obj.__dict__.update(zip(names, pick([*values, *[make(values) for make in parts]] if parts else values)))
        obj.__post_init__()
        return obj

    return direct, at


@dataclasses.dataclass(frozen=True)
class Declared:
    """One fact as declared: its name, type (as written), unit, description and the sheet that declares it."""

    name: str
    written_type: str
    unit: str | None
    description: str
    sheet: type[Facts]


def declarations(sheet: type[Facts]) -> list[Declared]:
    """Every fact of a sheet, parts flattened, in declaration order."""
    out: list[Declared] = []
    for f in dataclasses.fields(sheet):
        if f.metadata.get(_PART):
            out += declarations(_part_type(sheet, f))
        else:
            written = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
            out.append(Declared(f.name, written, f.metadata.get(_UNIT), f.metadata[_DESCRIPTION], sheet))
    return out


def catalogue(sheet: type[Facts]) -> dict[str, str]:
    """Fact name -> description, for every fact of a sheet."""
    return {d.name: d.description for d in declarations(sheet)}
