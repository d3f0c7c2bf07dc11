"""The one Finding type every step produces and every reporter consumes."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(enum.IntEnum):
    """Finding severity, ordered so that ``>=`` compares seriousness."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    @classmethod
    def parse(cls, text: str) -> Severity:
        """Parse ``error``/``warning``/``info`` (case-insensitive)."""
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (expected error, warning or info)") from None

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at one place.

    ``file`` is the path as given relative to the run's root (POSIX separators);
    ``doc_path`` is the JSON-pointer-like path inside the document
    (``spec/pools/0/reservedGpus``) and, with ``doc_index``, identifies the spot
    independently of line numbers (baselines key on it). ``line`` and ``column``
    are 1-based; 0 means "the whole file".
    """

    file: str
    line: int
    column: int
    code: str
    name: str
    severity: Severity = field(compare=False)
    message: str = field(compare=False)
    hint: str = field(default="", compare=False)
    doc_index: int = field(default=0, compare=False)
    doc_path: str = field(default="", compare=False)
    subject: str = field(default="", compare=False)

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.file, self.line, self.column, self.code, self.message)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict with stable keys (the ``--format json`` item shape)."""
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "name": self.name,
            "severity": self.severity.label,
            "message": self.message,
            "hint": self.hint,
            "document": self.doc_index,
            "path": self.doc_path,
            "subject": self.subject,
        }


def sort_findings(findings: list[Finding] | tuple[Finding, ...]) -> list[Finding]:
    """Deterministic order: file, line, column, code, message."""
    return sorted(set(findings), key=Finding.sort_key)
