"""The user-facing error types.

Anything a user can write wrong is reported either as a finding (a bad document)
or as a :class:`PolicylintError` (a bad setup: config, rule file, usage), which
the CLI prints as one line and turns into exit code 2. No other exception is
expected to escape to the user.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Control characters (a newline in a YAML key, say) would break the one-line message.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def escape_controls(text: str) -> str:
    """``text`` with control characters written as escapes (``\\n``, ``\\x1b``), on one line."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the option closest to ``word`` when one is close (a typo), else ``""``."""
    import difflib

    chosen = {o.lower(): o for o in options}
    close = difflib.get_close_matches(word.strip().lower(), list(chosen), n=1, cutoff=0.75)
    return f"; did you mean '{chosen[close[0]]}'?" if close else ""


class PolicylintError(Exception):
    """A usage, configuration or tool error that stops the run (exit 2).

    ``source`` names the file (and ``key`` the nested key) the problem is in, so
    the message can point the user at the exact place to fix.
    """

    def __init__(self, message: str, *, source: str | None = None, key: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.key = key
        #: where ``key`` is written in ``source`` (1-based), once found (:mod:`policylint.model.config_locate`)
        self.line: int | None = None
        self.column: int | None = None

    def __str__(self) -> str:
        parts = []
        if self.source:
            at = f":{self.line}:{self.column}" if self.line is not None and self.column is not None else ""
            parts.append(self.source + at)
        if self.key:
            parts.append(f"at key '{self.key}'")
        prefix = ": ".join([" ".join(parts)]) if parts else ""
        return escape_controls(f"{prefix}: {self.message}" if prefix else self.message)


class MeasurementError(PolicylintError):
    """A measurement file cannot be read or is not a valid series.

    ``row`` is the 1-based line (CSV) or sample index the problem was found at,
    when there is one. In ``check`` this becomes a finding at the line of the
    document that references the file; in ``bands`` it stops the run.
    """

    def __init__(self, message: str, *, source: str | None = None, row: int | None = None) -> None:
        super().__init__(message, source=source)
        self.row = row

    def __str__(self) -> str:
        where = self.source or ""
        if self.row is not None:
            where = f"{where}:{self.row}" if where else f"row {self.row}"
        return escape_controls(f"{where}: {self.message}" if where else self.message)
