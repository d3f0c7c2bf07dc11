"""``prometheus.headers``: extra HTTP headers for ``policylint pull``, checked.

Kept apart from the client (:mod:`policylint.measure.sources.prometheus`) so that reading
the configuration - which every command does - never loads the network code.
A header's value may be a secret (a gateway's key), so no message here shows one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from policylint.errors import PolicylintError

__all__ = ["FORBIDDEN_HEADERS", "HEADERS_KEY", "check_header_setting", "check_header_settings", "header_value_problem"]

#: A header name as RFC 7230 defines it: one or more token characters.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Headers that say how the request is framed or where it goes: set by the client, never configured.
FORBIDDEN_HEADERS = ("host", "content-length", "transfer-encoding", "content-type", "connection")
HEADERS_KEY = "prometheus.headers"


def header_value_problem(value: str) -> str | None:
    """What makes ``value`` unfit for a header, in words that do not show it; None when it is fit."""
    if not value:
        return "is empty"
    if any(ch in "\r\n" for ch in value):
        return "holds a line break (CR or LF), which would end the header and start another"
    if not all(" " <= ch <= "~" for ch in value):
        return "holds a control character or a character outside ASCII, which a header cannot carry as it is"
    if value != value.strip(" "):
        return "starts or ends with a space, which the server would drop"
    return None


def check_header_setting(name: Any, value: Any, *, source: str) -> str | dict[str, str]:
    """One entry of ``prometheus.headers``, checked: ``value`` as it is (a string or ``{"env": VARIABLE}``).

    Raises a :class:`PolicylintError` naming ``source`` and the key; a value is never shown.
    """
    key = f"{HEADERS_KEY}.{name}"
    if not isinstance(name, str) or not _TOKEN.match(name):
        raise PolicylintError(
            f"{str(name)!r} is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)",
            source=source,
            key=HEADERS_KEY,
        )
    if name.lower() in FORBIDDEN_HEADERS:
        raise PolicylintError(
            f"{name} is set by policylint itself (it says how the request is sent); it cannot be configured",
            source=source,
            key=key,
        )
    if isinstance(value, dict):
        variable = value.get("env")
        if not isinstance(variable, str) or not _VARIABLE.match(variable):
            raise PolicylintError(
                "env must name an environment variable (letters, digits and _, not starting with a digit)",
                source=source,
                key=f"{key}.env",
            )
        return {"env": variable}
    if not isinstance(value, str):
        raise PolicylintError("must be a string, or {env: VARIABLE}", source=source, key=key)
    problem = header_value_problem(value)
    if problem is not None:
        raise PolicylintError(f"the value {problem}; its value is not shown", source=source, key=key)
    return value


def check_header_settings(configured: Mapping[Any, Any], *, source: str) -> dict[str, str | dict[str, str]]:
    """Every entry of ``prometheus.headers`` checked (:func:`check_header_setting`), and no name twice:
    two names that differ only in case are the same header to HTTP."""
    checked: dict[str, str | dict[str, str]] = {}
    seen: dict[str, str] = {}
    for name, value in configured.items():
        entry = check_header_setting(name, dict(value) if isinstance(value, Mapping) else value, source=source)
        if name.lower() in seen:
            raise PolicylintError(
                f"the same header as {seen[name.lower()]} (header names ignore case)", source=source, key=f"{HEADERS_KEY}.{name}"
            )
        seen[name.lower()] = name
        checked[name] = entry
    return checked
