"""Kubernetes resource quantities ("100Gi", "2000m", "8", "1e3") and GPU resource names."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

#: Extended resources counted as GPUs. Override per call (``gpu_resources=``) for other vendors.
GPU_RESOURCES: tuple[str, ...] = ("nvidia.com/gpu", "amd.com/gpu")

#: device-plugin domains whose extended resources are accelerators, whatever their names
_ACCELERATOR_DOMAINS = frozenset({"nvidia.com", "amd.com", "gpu.intel.com", "habana.ai", "aws.amazon.com"})


def looks_like_gpu(name: object) -> bool:
    """True for an extended resource that names a GPU or a slice of one (``nvidia.com/mig-7g.80gb``,
    ``gpu.intel.com/i915``, ``example.com/gpu-shared``): a quota of it is GPU capacity, counted
    only when the configuration's ``gpu-resources`` lists it (PL905 says so when it does not)."""
    if not isinstance(name, str) or "/" not in name:
        return False
    domain, _, resource = name.lower().partition("/")
    if domain == "aws.amazon.com":
        return resource.startswith("neuron")
    return "gpu" in resource or resource.startswith("mig-") or domain in _ACCELERATOR_DOMAINS

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


#: Largest decimal exponent read: Kubernetes itself stores quantities in 64 bits
#: (about 9.2e18), and ``1e999999999`` must not become a billion-digit number.
MAX_EXPONENT = 30
#: Most GPUs (or pods) one quantity may name; far beyond any cluster.
MAX_COUNT = 10**9


def parse_quantity(value: Any) -> Decimal:
    """The numeric value of a Kubernetes quantity; ValueError when it is not one.

    Not-a-number, infinities and values beyond about 1e30 are not quantities.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    if isinstance(value, int):
        if abs(value) > 10**MAX_EXPONENT:
            raise ValueError(f"{_shown(value)} is out of range for a Kubernetes quantity")
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a Kubernetes quantity (a number is needed)")
        if abs(value) > 10.0**MAX_EXPONENT:
            raise ValueError(f"{value!r} is out of range for a Kubernetes quantity")
        return Decimal(repr(value))
    text = str(value).strip()
    m = _QUANTITY.match(text)
    if not m:
        raise ValueError(f"'{_shown(value)}' is not a Kubernetes quantity (e.g. 8, 500m, 100Gi)")
    try:
        number = Decimal(m.group("num"))
        if m.group("exp") is not None:
            exp = m.group("exp")
            if len(exp.lstrip("+-0")) > 4 or abs(int(exp)) > MAX_EXPONENT or number.adjusted() > MAX_EXPONENT:
                raise ValueError(f"'{_shown(value)}' is out of range for a Kubernetes quantity")
            result = number.scaleb(int(exp))
        else:
            result = number * _SUFFIXES[m.group("suffix") or ""]
    except ArithmeticError:  # decimal signals (overflow, invalid operation)
        raise ValueError(f"'{_shown(value)}' is out of range for a Kubernetes quantity") from None
    if result.adjusted() > MAX_EXPONENT:
        raise ValueError(f"'{_shown(value)}' is out of range for a Kubernetes quantity")
    return result


def _shown(value: Any) -> str:
    """``value`` for a one-line message: control characters escaped, long text cut."""
    text = str(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    return text if text.isprintable() else repr(text)[1:-1]


def gpu_count(value: Any) -> int:
    """A quantity as a whole number of GPUs (``8``, ``"8"``, ``2000m``); ValueError for a fraction of one.

    Kubernetes counts extended resources such as GPUs in whole units, but a quota is any
    quantity, and Kueue adds a cohort's quotas in milli-units: 65 queues of ``999m`` lend
    64 GPUs while each rounded down to none (red team, 2026-12-06). A fraction is refused
    rather than rounded, so no GPU of it goes uncounted.
    """
    q = parse_quantity(value)
    if q < 0:
        raise ValueError(f"'{_shown(value)}' is negative")
    if q > MAX_COUNT:
        raise ValueError(f"'{_shown(value)}' is more than {MAX_COUNT} GPUs")
    if q != q.to_integral_value():
        raise ValueError(f"'{_shown(value)}' is not a whole number of GPUs ({q.normalize()}); GPUs are counted whole,"
                         " and a scheduler adds the fractions of its queues together")
    return int(q)


def whole_count(value: Any, what: str = "count") -> int:
    """A non-negative whole number (pods, replicas, gang sizes); ValueError otherwise.

    Integral floats (``2.0``) are accepted; not-a-number, infinities, fractions,
    text and values above :data:`MAX_COUNT` are not.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a whole number, got {_shown(repr(value))}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ValueError(f"{what} must be a whole number, got {value!r}")
    if value < 0 or value > MAX_COUNT:
        raise ValueError(f"{what} must be between 0 and {MAX_COUNT}, got {_shown(value)}")
    return int(value)
