"""Kubernetes resource quantities ("100Gi", "2000m", "8", "1e3") and GPU resource names."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

#: Extended resources counted as GPUs. Override per call (``gpu_resources=``) for other vendors.
GPU_RESOURCES: tuple[str, ...] = ("nvidia.com/gpu", "amd.com/gpu")

_SUFFIXES: dict[str, Decimal] = {
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
# The same grammar as the CRDs' quantity pattern: sign, number, then a binary or
# decimal suffix or a decimal exponent.
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exp>[+-]?[0-9]+))?$"
)


def parse_quantity(value: Any) -> Decimal:
    """The numeric value of a Kubernetes quantity; ValueError when it is not one."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    m = _QUANTITY.match(str(value).strip())
    if not m:
        raise ValueError(f"'{value}' is not a Kubernetes quantity (e.g. 8, 500m, 100Gi)")
    try:
        number = Decimal(m.group("num"))
    except InvalidOperation:  # pragma: no cover - the pattern admits only valid numbers
        raise ValueError(f"'{value}' is not a Kubernetes quantity") from None
    if m.group("exp") is not None:
        return number.scaleb(int(m.group("exp")))
    return number * _SUFFIXES[m.group("suffix") or ""]


def gpu_count(value: Any) -> int:
    """A quantity as a whole number of GPUs (fractions are rounded down: a GPU is not divisible)."""
    q = parse_quantity(value)
    if q < 0:
        raise ValueError(f"'{value}' is negative")
    return int(q)
