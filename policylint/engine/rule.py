"""The rule types: one rule's metadata, documentation, parameters and condition, and a set of rules.

Rules are data (``rules/*.yaml``); this module only defines their in-memory
shape: :class:`Rule`, :class:`Param`, and :class:`RuleSet` (the rules as loaded
and configured, which :mod:`policylint.engine.rule_cache` stores and rebuilds).
Loading and validation live in :mod:`policylint.engine.ruleset`, evaluation in
:mod:`policylint.engine.evaluate`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policylint.finding import Severity

#: Where rule documentation is published: the rule's section of docs/rules.md (its heading
#: anchor); {code} (lower case) and {name} are filled in.
DOCS_URL = "https://github.com/policylint/policylint/blob/main/docs/rules.md#{code}-{name}"

#: How ``check --fix`` may apply a rule's fix (``fix: applicability:`` in a rule file), as in ruff:
#: ``safe`` fixes are applied by ``--fix``; ``unsafe`` ones raise capacity and wait for
#: ``--unsafe-fixes``; ``display-only`` fixes are shown by ``--fix-dry-run`` and never written.
FIX_APPLICABILITY = ("safe", "unsafe", "display-only")

#: What each applicability means, in the rule's documentation and ``policylint rule``.
FIX_TEXT = {
    "safe": "Fix: safe (applied by `check --fix`).",
    "unsafe": "Fix: unsafe (it raises capacity; applied only with `check --fix --unsafe-fixes`).",
    "display-only": "Fix: display-only (shown by `check --fix-dry-run`, never written).",
}

#: The fixed documentation sections, in order, with their headings.
DOC_SECTIONS = {
    "what": "What it does",
    "why": "Why is this bad?",
    "example": "Example",
    "use_instead": "Use instead",
    "options": "Options",
    "references": "References",
}


@dataclass(frozen=True)
class Param:
    """A rule parameter (threshold) with its type, default and description."""

    name: str
    type: str  # "number", "integer", "string", "boolean"
    default: Any
    description: str
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True)
class Rule:
    """One rule, as loaded from a rule file."""

    code: str
    name: str
    severity: Severity
    section: str
    subject: str  # "workload", "pool", "cluster", "proposal", or "document" for built-in checks
    summary: str
    message: str  # the template of evaluated rules; "" for built-in rules (their step writes the text)
    hint: str
    docs: dict[str, Any]
    source: Path
    params: dict[str, Param] = field(default_factory=dict)
    at: str | None = None
    needs: tuple[str, ...] = ()
    when: dict[str, Any] = field(default_factory=dict)
    require: dict[str, Any] = field(default_factory=dict)
    check: str | None = None
    builtin: bool = False  # emitted by the pipeline (load/validate/resolve), not evaluated
    #: how ``check --fix`` may apply the rule's fix (one of :data:`FIX_APPLICABILITY`); None: no fix.
    #: The rest of the declaration (what it rewrites, its order) is read by :func:`policylint.catalogue.fixes`.
    fix: str | None = None

    @property
    def help_uri(self) -> str:
        return DOCS_URL.format(code=self.code.lower(), name=self.name)

    def markdown(self, level: int = 1) -> str:
        """The rule's documentation as Markdown (SARIF help, docs/rules.md).

        ``level`` is the heading level of the title; sections are one below.
        """
        title, section = "#" * level, "#" * (level + 1)
        lines = [f"{title} {self.code} {self.name}", "", f"{self.summary}", ""]
        lines += [f"Severity: {self.severity.label}. Framework section: {self.section}. Applies to: {self.subject}.", ""]
        if self.fix is not None:
            lines += [FIX_TEXT[self.fix], ""]
        for key, heading in DOC_SECTIONS.items():
            body = self.docs.get(key)
            if key == "options" and self.params:
                listed = "\n".join(
                    f"- `{p.name}` ({p.type}, default {f'`{p.default}`' if p.default != '' else 'empty'}): {p.description}"
                    for p in self.params.values()
                )
                body = f"{listed}\n\n{str(body).strip()}" if body else listed
            if not body:
                continue
            lines += [f"{section} {heading}", ""]
            if key in ("example", "use_instead"):
                lines += ["```yaml", str(body).rstrip(), "```"]
            elif key == "references" and isinstance(body, list):
                lines += [f"- {ref}" for ref in body]
            else:
                lines.append(str(body).rstrip())
            lines.append("")
        return "\n".join(lines).rstrip() + "\n"


@dataclass
class RuleSet:
    """All loaded rules, by code, with their effective parameters and severities."""

    rules: dict[str, Rule] = field(default_factory=dict)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)

    def find(self, key: str) -> Rule | None:
        """A rule by code or name (case-insensitive)."""
        k = key.strip()
        rule = self.rules.get(k.upper())
        if rule is not None:
            return rule
        for r in self.rules.values():
            if r.name == k.lower():
                return r
        return None

    def matches(self, selector: str) -> list[Rule]:
        """Rules selected by a code, a code prefix (PL1), a name, or ALL."""
        s = selector.strip()
        if s.upper() == "ALL":
            return list(self.rules.values())
        by_name = [r for r in self.rules.values() if r.name == s.lower()]
        if by_name:
            return by_name
        return [r for r in self.rules.values() if r.code.startswith(s.upper())]

    def sorted(self) -> list[Rule]:
        return [self.rules[c] for c in sorted(self.rules)]
