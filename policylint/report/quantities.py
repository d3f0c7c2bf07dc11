"""How the text reports write a quantity: a count or a band, and a duration.

One home for both, below the commands that print them (``bands``, ``bands --pool``),
so neither command imports the other to share a formatter. ``duration`` is the finding
messages' own (:func:`policylint.engine.messages.duration`), re-exported here.
"""

from __future__ import annotations

import math

# A duration reads the same in a finding's message and in a text report: one function, kept
# with the message formats (the engine may not import a report).
from policylint.engine.messages import duration

__all__ = ["duration", "number"]


def number(value: float) -> str:
    """Numbers as people read them: integers without decimals, others to 2 places."""
    if not math.isfinite(value):
        return "unbounded"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
