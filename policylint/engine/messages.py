"""Finding messages: a rule's message and hint templates filled in from facts, parameters and check variables.

Templates name plain variables only (never attribute or index access); numbers are
tidied for reading, an unknown value reads "unknown" and an infinite one "unbounded".
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping
from typing import Any

from policylint.engine.checks import format_share, listed


class _SafeFormatter(string.Formatter):
    """str.format restricted to plain names; numbers are tidied for reading.

    ``{n:plural:GPU}`` writes the number with its noun, singular for exactly one
    ("1 GPU", "3 GPUs"); an irregular plural follows a second colon
    (``{n:plural:entry:entries}``). ``{x:share}`` writes a share of work (0..1) as a
    percentage that never reads 0% or 100% unless it is exactly that
    (:func:`policylint.engine.checks.format_share`, the one function every message uses).
    ``{x:or:no pool}`` writes the words after ``or:`` where ``x`` is unknown, for a value
    whose absence has a meaning of its own (a workload in no pool), not "unknown".
    ``{x:duration}`` writes a number of seconds in the largest unit that keeps it readable
    (:func:`duration`: "45 s", "6.7 min", "19.9 d"); the fact itself keeps its exact seconds.
    """

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        if not field_name.isidentifier():
            raise KeyError(field_name)
        return kwargs.get(field_name, f"{{{field_name}}}"), field_name

    def format_field(self, value: Any, format_spec: str) -> Any:
        if format_spec.startswith("or:"):
            return format_spec[3:] if value is None else _plain(value)
        if format_spec.startswith("plural:"):
            return _plural(value, *format_spec.split(":")[1:3])
        if format_spec == "share":
            return format_share(value)
        if format_spec and (value is None or isinstance(value, float) and math.isinf(value)):
            return _plain(value)  # "unknown" / "unbounded", whatever the number format
        if format_spec == "duration" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return duration(float(value))
        if format_spec:
            try:
                return super().format_field(value, format_spec)
            except (ValueError, TypeError):
                return str(value)
        return _plain(value)


def duration(seconds: float) -> str:
    """Seconds as the largest unit that keeps the figure readable (s, min, h, d).

    The one way policylint writes a length of time in words: finding messages
    (the ``{x:duration}`` format) and the text reports (``policylint.report.quantities``).
    """
    if not math.isfinite(seconds):
        return "unbounded"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86_400:.1f} d"


def _plural(value: Any, word: str, plural: str | None = None) -> str:
    """``1 GPU``, ``2 GPUs``, ``unknown GPUs``; ``plural`` when adding "s" is wrong."""
    text = _plain(value)
    # Decided on the number as shown, so that 1.001 (shown "1") reads "1 GPU".
    return f"{text} {word if text == '1' else (plural or word + 's')}"


def _plain(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "unknown" if value is None else str(value).lower()
    if isinstance(value, float):
        if math.isinf(value):
            return "unbounded"
        if value.is_integer():
            return str(int(value))
        return f"{value:.2f}".rstrip("0").rstrip(".")
    if isinstance(value, list):
        return listed([_plain(v) for v in value]) or "none"
    return str(value)


_FORMATTER = _SafeFormatter()


def render(template: str, variables: Mapping[str, Any]) -> str:
    """Fill a rule's message template (plain names only, never attribute access).

    ``variables`` is only looked up by name (:meth:`_SafeFormatter.get_field`),
    never copied: a finding's variables are a view of its facts, not a copy of them.
    """
    return _FORMATTER.vformat(template, (), variables)
