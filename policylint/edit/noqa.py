"""``check --add-noqa``: write a suppression for every reported finding, with a reason still to write.

As ruff's ``--add-noqa``, for adopting policylint in a repository that has
findings today: each line a finding points at gets, at its end::

    reservedGpus: 123  # policylint: disable=PL101 -- TODO: reason

A suppression must give a reason, and ``TODO: reason`` is no reason: the filter
step reports it as PL030 (suppression-without-reason) and does not apply it,
until somebody writes why the finding is acceptable. The comments mark every
place to decide; they hide nothing by themselves.

What is left alone, with a note saying why:

- a finding about a whole file (line 0) gets ``# policylint: disable-file=CODE --
  TODO: reason`` as the file's first line;
- findings in files that are not YAML documents (traces) and findings about
  suppressions themselves (PL030-PL033) get nothing;
- a line that already holds a ``# policylint:`` directive is not given a second
  one (only the first directive of a comment is read): add the code to it by hand;
- a line where a comment would change the document (inside a block or
  multi-line scalar) or would cover another line (a line holding only a
  comment) is refused: the file's data is composed again after each edit and
  must be what it was, and the new comment must be read as covering the line.

Files are re-read, edited only when unchanged since the lint, and written
through the safe writer (:func:`policylint.writer.write_file`), which keeps
their mode and writes through links inside the repository.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.engine.filter import PLACEHOLDER_REASON

if TYPE_CHECKING:
    from policylint.engine.linter import LintOptions
    from policylint.engine.result import LintResult

#: The reason ``--add-noqa`` writes; the filter step treats it as no reason (PL030).
PLACEHOLDER = PLACEHOLDER_REASON

#: Findings about suppression comments are not themselves suppressed.
_SUPPRESSION_RULES = frozenset({"PL030", "PL031", "PL032", "PL033"})


@dataclass
class NoqaOutcome:
    """What ``--add-noqa`` wrote, and what it left alone."""

    added: int = 0  # suppression comments written
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def directive(codes: list[str], *, whole_file: bool = False) -> str:
    """``# policylint: disable=CODE[,CODE] -- TODO: reason``."""
    kind = "disable-file" if whole_file else "disable"
    return f"# policylint: {kind}={','.join(codes)} -- {PLACEHOLDER}"


def _documents(text: str) -> list[Any] | None:
    """The file's data (every document), or None when it does not load."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return list(yaml.load_all(text, Loader=loader))  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        return None
    except (ValueError, RecursionError):
        return None


def _covers(text: str, line: int, path: Path) -> bool:
    """Whether ``text`` holds a directive comment on ``line`` that covers ``line`` (or, on line 1 of a whole-file one, the file)."""
    from policylint.engine.filter import find_comment, parse_directive
    from policylint.model.load.comments import source_comments
    from policylint.model.load.documents import SourceFile

    for comment in source_comments(SourceFile(path, str(path), text), "policylint:"):
        if comment.line != line:
            continue
        found = find_comment(comment.text)
        parsed = parse_directive(found[1]) if found else None
        if parsed is None:
            return False
        return parsed.kind == "disable-file" or not comment.alone
    return False


def _has_directive(text: str, path: Path) -> set[int]:
    """Lines of ``text`` that already hold a ``# policylint:`` directive comment."""
    from policylint.engine.filter import find_comment
    from policylint.model.load.comments import source_comments
    from policylint.model.load.documents import SourceFile

    return {c.line for c in source_comments(SourceFile(path, str(path), text), "policylint:") if find_comment(c.text)}


def _edit(text: str, line: int, codes: list[str]) -> str:
    """``text`` with the directive for ``codes`` at the end of ``line`` (line 0: a new first line)."""
    lines = text.splitlines(keepends=True)
    if line == 0:
        ending = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
        return directive(codes, whole_file=True) + ending + text
    body = lines[line - 1]
    stripped = body.rstrip("\r\n")
    ending = body[len(stripped) :]
    lines[line - 1] = f"{stripped.rstrip()}  {directive(codes)}{ending}"
    return "".join(lines)


def add_suppressions(result: LintResult, options: LintOptions) -> NoqaOutcome:
    """Write a placeholder suppression at each reported finding's line; see the module docstring."""
    from policylint.errors import PolicylintError
    from policylint.safeio import read_bytes
    from policylint.writer import write_file

    outcome = NoqaOutcome()
    wanted: dict[str, dict[int, set[str]]] = {}
    for f in result.findings:
        if f.code in _SUPPRESSION_RULES:
            outcome.notes.append(f"{f.file}:{f.line}:{f.column}: {f.code} not suppressed (a finding about a suppression: fix the comment)")
            continue
        if f.file not in result.sources:
            outcome.notes.append(f"{f.file}: {f.code} not suppressed (not a YAML document that can hold a comment)")
            continue
        wanted.setdefault(f.file, {}).setdefault(max(f.line, 0), set()).add(f.code)
    for display, by_line in sorted(wanted.items()):
        source = result.sources[display]
        path = source.path
        try:
            raw = read_bytes(path, limit=options.limits.max_file_bytes, what="document")
            current = raw.decode("utf-8")
        except PolicylintError as exc:
            outcome.notes.append(f"{display}: not suppressed ({exc.message})")
            continue
        except UnicodeDecodeError as exc:
            outcome.notes.append(f"{display}: not suppressed ({exc})")
            continue
        bom = "\ufeff" if current.startswith("\ufeff") else ""
        text = current.removeprefix("\ufeff")
        if text != source.text:
            outcome.notes.append(f"{display}: not suppressed (the file changed since it was linted: run check --add-noqa again)")
            continue
        data = _documents(text)
        if data is None:
            outcome.notes.append(f"{display}: not suppressed (the file does not load as YAML: fix it first)")
            continue
        taken = _has_directive(text, path)
        edited, added = text, 0
        # bottom up, so that a new first line (a whole-file finding) moves no line still to edit
        for line in sorted(by_line, reverse=True):
            codes = sorted(by_line[line])
            where = f"{display}:{line}" if line else display
            if line and line in taken:
                outcome.notes.append(
                    f"{where}: {', '.join(codes)} not suppressed (the line already has a suppression comment: add the code to it)"
                )
                continue
            candidate = _edit(edited, line, codes)
            # repr, not ==: a .nan value is not equal to itself, yet it is unchanged
            if repr(_documents(candidate)) != repr(data) or not _covers(candidate, line or 1, path):
                outcome.notes.append(
                    f"{where}: {', '.join(codes)} not suppressed (a comment there would change the document or cover "
                    "another line: suppress it by hand)"
                )
                continue
            edited, added = candidate, added + 1
        if not added:
            continue
        try:
            write_file(path, bom + edited, root=options.root, what="the suppressed document", if_unchanged=raw)
        except PolicylintError as exc:
            outcome.notes.append(f"{display}: not suppressed ({exc.message})")
            continue
        outcome.added += added
        outcome.files.append(display)
    return outcome


def summary(outcome: NoqaOutcome) -> str:
    """Lines for stderr: how many suppressions were written, and what was left alone."""
    n, files = outcome.added, len(outcome.files)
    head = f"added {n} suppression{'s' if n != 1 else ''} in {files} file{'s' if files != 1 else ''}"
    if n:
        head += f"; each gives the reason '{PLACEHOLDER}', reported as PL030 until you write why the finding is acceptable"
    return "\n".join([head, *(f"  {note}" for note in outcome.notes)]) + "\n"
