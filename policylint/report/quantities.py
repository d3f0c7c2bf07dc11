"""How the text reports write a quantity: a count or a band, and a duration.

One home for both, below the commands that print them (``bands``, ``bands --pool``),
so neither command imports the other to share a formatter.
"""

from __future__ import annotations

import math


def number(value: float) -> str:
    """Numbers as people read them: integers without decimals, others to 2 places."""
    if not math.isfinite(value):
        return "unbounded"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def duration(seconds: float) -> str:
    """Seconds as the largest unit that keeps the figure readable (s, min, h, d)."""
    if not math.isfinite(seconds):
        return "unbounded"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86_400:.1f} d"
