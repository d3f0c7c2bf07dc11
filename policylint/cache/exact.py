"""Exact texts of plain values: two values share one only when they are equal and of the same types.

Cache keys and kept results compare values exactly - ``1``, ``1.0`` and ``True``
apart, a list apart from a tuple, ``-0.0`` apart from ``0.0``, key order
included. For values built only of None, bool, int, float, str, lists, tuples
and dicts with string keys, Python's ``repr`` is such a text (it reads back as
a literal of the same value), and it is made in C: :func:`quick_canonical` gives
it, and :func:`is_plain` says whether a value qualifies.
"""

from __future__ import annotations

from typing import Any


#: the types whose ``repr`` is an exact text of the value: two values of these types share a
#: ``repr`` only when they are equal and of the same types (floats by their shortest round-tripping
#: text, so signed zeros differ; every NaN is "nan", as :meth:`float.hex` has it too)
_SCALARS = frozenset((type(None), bool, int, float, str))


def is_plain(value: Any) -> bool:
    """True when ``value`` is built only of :data:`_SCALARS`, lists, tuples and dicts with string keys."""
    t = type(value)
    if t in _SCALARS:
        return True
    if t is list or t is tuple:
        return set(map(type, value)) <= _SCALARS or all(map(is_plain, value))
    if t is dict:
        return set(map(type, value)) <= {str} and (set(map(type, value.values())) <= _SCALARS or all(map(is_plain, value.values())))
    return False


def quick_canonical(value: Any) -> str | None:
    """An exact text of ``value`` made by ``repr``; None when ``value`` is not plain (:func:`is_plain`).

    ``repr`` of a value built only of None, bool, int, float, str, list, tuple and dict
    with string keys is Python's literal text of it: distinct values (types included,
    ``1``, ``1.0`` and ``True`` apart; list and tuple apart) give distinct texts. A
    container holding itself (``repr`` would abbreviate it) fails :func:`is_plain` by recursion.
    """
    try:
        if not is_plain(value):
            return None
        return repr(value)
    except (RecursionError, ValueError):  # ValueError: an int too long for its text
        return None


def quick_bytes(value: Any) -> bytes | None:
    """An exact, deterministic byte form of ``value`` (``marshal`` format 0); None when marshal cannot hold it.

    Ten times faster than :func:`quick_canonical`, for digests only (it is not text). Format 0
    writes neither back-references nor interned strings, whose use hangs on how many references
    an object has and how a string was made: equal values built alike give equal bytes, and
    equal bytes are equal values (``marshal.loads`` gives the value back; floats as 17 digits,
    every NaN as "nan"). Types are kept apart (``1``, ``1.0``, ``True``; list and tuple). A
    value of another type (a subclass of float, an object), or a container holding itself, gives None.
    """
    import marshal

    try:
        return marshal.dumps(value, 0)
    except (ValueError, RecursionError):
        return None
