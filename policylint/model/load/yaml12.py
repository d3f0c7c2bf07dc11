"""What a YAML 1.2 reader makes of a plain scalar that policylint (YAML 1.1) reads as a number or a boolean.

policylint reads YAML as PyYAML does, by the YAML 1.1 rules, and so does ``kubectl``. Editors
(yaml-language-server, behind every ``# yaml-language-server: $schema=`` line), js-yaml and most
other current readers follow YAML 1.2's core schema, and so does a person reading the digits as
written. The two disagree on a few plain spellings: ``0610`` is octal 392 to YAML 1.1 and 610 to
YAML 1.2; ``1_000``, ``0b101`` and ``1:30`` are numbers to 1.1 and text to 1.2; ``yes``, ``no``,
``on`` and ``off`` are booleans to 1.1 and text to 1.2 (red team round 21, 2026-12-07: a pool's
``reservedGpus: 0610`` was judged at 392 and read by its reviewers as 610).
:func:`other_reading` says how YAML 1.2 reads such a scalar, when that is not what policylint read.
"""

from __future__ import annotations

import math
import re

_INT = re.compile(r"[-+]?[0-9]+")
_OCT = re.compile(r"0o[0-7]+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INF = re.compile(r"[-+]?\.(?:inf|Inf|INF)")
_NAN = re.compile(r"\.(?:nan|NaN|NAN)")
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})


def core_schema(text: str) -> object:
    """``text``, a plain scalar, as YAML 1.2's core schema resolves it (None, bool, int, float or str)."""
    if text in _NULLS:
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    if _INT.fullmatch(text):
        return int(text, 10)
    if _OCT.fullmatch(text):
        return int(text[2:], 8)
    if _HEX.fullmatch(text):
        return int(text[2:], 16)
    if _FLOAT.fullmatch(text):
        return float(text)
    if _INF.fullmatch(text):
        return -math.inf if text.startswith("-") else math.inf
    if _NAN.fullmatch(text):
        return math.nan
    return text


def _same(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def other_reading(text: str, value: object) -> object | None:
    """What YAML 1.2 reads the plain scalar ``text`` as, when that differs from ``value`` (policylint's
    reading, a bool, int or float); None when the two agree.

    A string of digits without a leading zero, a decimal such as ``2.5`` and ``true``/``false`` agree
    by construction and are settled without a regular expression: a document holds many of them.
    """
    if type(value) is int and text.isdigit() and (text[0] != "0" or len(text) == 1):
        return None
    if type(value) is bool and text in _BOOLS:
        return None
    theirs = core_schema(text)
    return None if _same(theirs, value) else (theirs if theirs is not None else "null")


def shown(value: object) -> str:
    """``value`` as a reviewer would write it in YAML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the text '{value}'"
    return repr(value)
