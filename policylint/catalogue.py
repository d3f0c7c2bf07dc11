"""What the bundled rule files declare, read once per process for the steps below the engine.

The rule files (``rules/*.yaml``, their shape in ``schemas/rule.schema.json``)
are the one registry of rule metadata: every code with its name and default
severity, which rules ``check --fix`` can fix and how (``fix:``), and the
message variables each named check function adds (``provides:``). Loading,
validating and selecting rules is the engine's work
(:mod:`policylint.engine.ruleset`); this module only reads those few keys, so
that a step far below the engine (the loader, the measurements, the schedulers'
readers) can name a finding by its code alone without importing the engine.

Nothing here is validated against the schema: the bundled files are checked
when the rule set loads, and by the suite. The reading stays cheap because runs
that never load the full rule set still name their load findings from it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from policylint.errors import PolicylintError
from policylint.finding import Severity
from policylint.resources import rules_dir


class UnknownRuleCode(LookupError):
    """A finding was emitted under a code no bundled rule file declares (a bug, not bad input)."""

    def __init__(self, code: str) -> None:
        super().__init__(f"{code} is not declared in any bundled rule file (rules/*.yaml)")
        self.code = code


@dataclass(frozen=True)
class FixDeclaration:
    """A rule's ``fix:`` entry: how ``check --fix`` may apply the fix, the number it rewrites, and its rank.

    ``rewrites`` names a fix of :data:`policylint.edit.rewrites.REWRITES`;
    ``order`` ranks the rules whose fixes rewrite the same number of one pool:
    when several of them report on it, the fix of the lowest order is made;
    ``direction`` is ``set`` (the number becomes the target) or ``raise`` (only
    where the target is higher: the fix never lowers it).
    """

    applicability: str
    rewrites: str
    order: int
    direction: str = "set"


#: code -> (file name, raw entry) of every bundled rule, once read (or taken from the rule cache: :func:`seed`)
_BUNDLED: dict[str, tuple[str, dict[str, Any]]] | None = None


def _bundled() -> dict[str, tuple[str, dict[str, Any]]]:
    """Code -> (file name, raw entry) of every bundled rule, in file order."""
    global _BUNDLED
    if _BUNDLED is None:
        _BUNDLED = _read_bundled()
    return _BUNDLED


def bundled_entries() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every bundled rule as its file declares it (code -> (file name, raw entry)), for the rule cache to keep."""
    return _bundled()


def seed(entries: dict[str, tuple[str, dict[str, Any]]]) -> None:
    """Take the bundled rules as a rule-cache entry kept them, instead of reading the files again.

    The rule cache keeps them under a key made of every bundled rule file's bytes
    and the code (:func:`policylint.engine.rule_cache.rules_key`), so they are what
    reading the files would give; once the files were read in this process, this
    does nothing.
    """
    global _BUNDLED
    if _BUNDLED is None:
        _BUNDLED = entries


def _read_bundled() -> dict[str, tuple[str, dict[str, Any]]]:
    import yaml  # deferred: commands that never name a rule (--version, --help) do not load it

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in sorted(rules_dir().glob("*.y*ml")):
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 - a safe loader
        for raw in (data or {}).get("rules", []):
            out[str(raw["code"])] = (path.name, raw)
    return out


@functools.cache
def catalogue() -> dict[str, tuple[str, Severity]]:
    """Code -> (name, default severity) of every bundled rule.

    Severity overrides of a run are applied later, by the filter step, from the
    configured rule set; here are the defaults the rule files write.
    """
    return {code: (str(raw["name"]), Severity.parse(str(raw["severity"]))) for code, (_, raw) in _bundled().items()}


def builtin(code: str) -> tuple[str, Severity]:
    """(name, default severity) of a bundled rule; :class:`UnknownRuleCode` for a code no rule file declares.

    A step that reports a problem gives only its code. A code missing from the
    rule files is a bug in policylint and is refused loudly, never reported under
    an invented name; the suite checks every code the package writes against
    the rule files.
    """
    try:
        return catalogue()[code]
    except KeyError:
        raise UnknownRuleCode(code) from None


@functools.cache
def fixes() -> dict[str, FixDeclaration]:
    """Code -> its ``fix:`` declaration, for every bundled rule that has one, lowest ``order`` first."""
    found = {
        code: FixDeclaration(
            str(raw["fix"]["applicability"]),
            str(raw["fix"]["rewrites"]),
            int(raw["fix"]["order"]),
            str(raw["fix"].get("direction", "set")),
        )
        for code, (_, raw) in _bundled().items()
        if raw.get("fix")
    }
    return dict(sorted(found.items(), key=lambda item: (item[1].order, item[0])))


def fix_applicability() -> dict[str, str]:
    """Code -> ``safe``, ``unsafe`` or ``display-only``: how ``check --fix`` may apply the rule's fix."""
    return {code: declared.applicability for code, declared in fixes().items()}


@functools.cache
def check_variables() -> dict[str, frozenset[str]]:
    """Check function name -> the message variables it adds, as the bundled rules naming it declare them.

    A check named by more than one bundled rule must be declared the same way by
    each; a disagreement is a fault of the bundled files and stops the run.
    """
    out: dict[str, frozenset[str]] = {}
    for code, (name, raw) in _bundled().items():
        check = raw.get("check")
        if not check:
            continue
        declared = frozenset(str(v) for v in raw.get("provides") or ())
        if check in out and out[check] != declared:
            raise PolicylintError(
                f"check '{check}' provides {sorted(out[check])} elsewhere in the bundled rules",
                source=name,
                key=f"rules[{code}].provides",
            )
        out[str(check)] = declared
    return out
