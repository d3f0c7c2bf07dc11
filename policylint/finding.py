"""The one Finding type every step produces and every reporter consumes."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple


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
class Subject:
    """What a finding is about, by kind and qualified name (``pool``, ``prod/serving``).

    Identity only: it never changes with how a subject is shown, so keys built
    from it survive a new display label (a scheduler cluster shown under another
    name, say). ``str()`` gives ``"<kind> <name>"``.
    """

    kind: str  # "workload", "pool", "cluster", "proposal"
    name: str  # the qualified name: pools are "<cluster>/<pool>"

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def pool_subject(cluster: str, pool: str, scheduler: str | None = None) -> Subject:
    """The identity of a pool, whatever document declares it.

    A policylint pool is ``<cluster>/<pool>``. A scheduler queue (Kueue
    ClusterQueue, Volcano Queue) is named by its scheduler and queue:
    ``kueue:<queue>``. Queue names are unique per scheduler, whereas the
    synthetic cluster a queue is shown under can be renamed (``kueue-shared``
    when a policylint Cluster already uses ``shared``) by a change elsewhere;
    the key must not move with it. ``:`` never occurs in policylint names.
    """
    if scheduler:
        return Subject("pool", f"{scheduler}:{pool}")
    return Subject("pool", f"{cluster}/{pool}")


def cluster_subject(name: str, backing: tuple[str, str, str] | None = None) -> Subject:
    """The identity of a cluster: a policylint Cluster by its name, a scheduler-made one by what backs it.

    ``backing`` is ``(scheduler, kind, name)`` of what the synthetic cluster
    stands for - a Kueue cohort (``kueue:Cohort/<cohort>``), a Kueue
    ClusterQueue without a cohort (``kueue:ClusterQueue/<queue>``) or a Volcano
    parent queue (``volcano:Queue/<parent>``). The displayed name of such a
    cluster can change (``kueue-shared``) when a policylint Cluster takes the
    plain name; this identity does not.
    """
    if backing is not None:
        scheduler, kind, backing_name = backing
        return Subject("cluster", f"{scheduler}:{kind}/{backing_name}")
    return Subject("cluster", name)


class FindingKey(NamedTuple):
    """The line-independent identity of a finding (see :meth:`Finding.key`)."""

    code: str
    file: str
    document: int
    path: str
    subject: str  # ``str(Subject)``, or "" when the finding is about a document only


@dataclass(frozen=True)
class Finding:
    """One problem at one place.

    ``file`` is the path as given relative to the run's root (POSIX separators);
    ``doc_path`` is the JSON-pointer-like path inside the document
    (``spec/pools/0/reservedGpus``) and, with ``doc_index``, identifies the spot
    independently of line numbers. ``line`` and ``column`` are 1-based; 0 means
    "the whole file".

    ``target`` is the typed subject the finding is about (None for document
    checks); ``subject`` is only its display label. ``figures`` are the numbers
    a rule compared, ``(measured, allowed)`` - the baseline records them so that
    a finding that got worse is reported again.

    Two findings are equal only when every field is: two schema errors at the
    same place with different messages are two findings.
    """

    file: str
    line: int
    column: int
    code: str
    name: str
    severity: Severity
    message: str
    hint: str = ""
    doc_index: int = 0
    doc_path: str = ""
    subject: str = ""
    target: Subject | None = None
    figures: tuple[float, float] | None = None

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.file, self.line, self.column, self.code, self.message)

    def key(self) -> FindingKey:
        """The one identity used by deduplication of twins, the baseline, SARIF fingerprints and scope.

        It leaves out the line (edits above move it), the message (it quotes
        numbers that change) and the display label.
        """
        return FindingKey(
            self.code, self.file, self.doc_index, self.doc_path, "" if self.target is None else str(self.target)
        )

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


def _full_order(f: Finding) -> tuple[object, ...]:
    # Ties on the display order are broken by every other field, so the output
    # never depends on the order the steps produced findings in.
    return (*f.sort_key(), f.name, f.severity, f.hint, f.doc_index, f.doc_path, f.subject,
            "" if f.target is None else str(f.target), f.figures or ())


def sort_findings(findings: list[Finding] | tuple[Finding, ...]) -> list[Finding]:
    """Deterministic order (file, line, column, code, message); exact duplicates only are dropped."""
    return sorted(set(findings), key=_full_order)
