"""Load, validate and select rules from rule files.

Rule files are YAML validated against ``schemas/rule.schema.json``; then every
rule's condition is checked: facts named in ``needs``/``when``/``require``/
``at`` and in message placeholders must exist for the rule's subject, cerberus
must accept the schemas, ``check`` must name a registered function (whose
message variables the bundled rules declare under ``provides:``), a ``fix`` must
be the bundled rule's own, parameter defaults must fit their declared type.
What the bundled files declare is read by :mod:`policylint.catalogue`, which
the steps below the engine use too. Any problem stops the run with one
message naming the file and the rule key (exit 2).
"""

from __future__ import annotations

import os
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from policylint.engine import rule_cache
from policylint.catalogue import FixDeclaration, check_variables, fixes
from policylint.engine.conditions import compile_schema, plain_forms, trust_conditions
from policylint.engine.rule import Param, Rule, RuleSet
from policylint.errors import PolicylintError, did_you_mean
from policylint.finding import Severity
from policylint.resources import rules_dir

_TYPES: dict[str, tuple[type, ...]] = {
    "number": (int, float),
    "integer": (int,),
    "string": (str,),
    "boolean": (bool,),
}


def _load_file(path: Path) -> list[dict[str, Any]]:
    import jsonschema

    from policylint.resources import load_schema

    from policylint.model.load import read_settings_yaml

    data = read_settings_yaml(path)
    validator = jsonschema.Draft202012Validator(load_schema("Rule"))
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        err = errors[0]
        key = _key_path(data, list(err.absolute_path))
        message = err.message
        if err.validator == "additionalProperties":
            extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
            key = ".".join(filter(None, [key, extra[0] if extra else ""]))
            message = "unknown key"
        elif err.validator == "required":
            message = err.message.replace("is a required property", "is required")
        raise PolicylintError(message, source=str(path), key=key or "(top level)")
    rules: list[dict[str, Any]] = data["rules"]
    return rules


def _key_path(data: Any, path: list[Any]) -> str:
    """Human key path, naming rules by code: ``rules[PL101].docs.why``."""
    parts: list[str] = []
    node = data
    for i, p in enumerate(path):
        if isinstance(p, int) and parts and parts[-1] == "rules" and isinstance(node, list):
            item = node[p] if p < len(node) else None
            code = item.get("code") if isinstance(item, dict) else None
            parts[-1] = f"rules[{code or p}]"
        else:
            parts.append(str(p))
        try:
            node = node[p]
        except (KeyError, IndexError, TypeError):
            node = None
        del i
    return ".".join(parts)


def _fields_in(schema: Mapping[str, Any]) -> set[str]:
    return set(schema)


#: Condition arguments that name another fact, and where the name sits inside them.
_FACT_ARGUMENTS = {"min_field": None, "max_field": None, "below_field": None, "max_over": "field"}


def _references(condition: Mapping[str, Any], key: str) -> list[tuple[str, str]]:
    """(key path, fact) for every fact a condition compares against, at any depth.

    Top-level keys are facts too, but are checked by the caller; here it is the
    arguments - ``max_over: {field: baseline_gpus}``, ``max_field: daily_gpus`` -
    that a typo would otherwise turn into a comparison that never fires.
    """
    found: list[tuple[str, str]] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, Mapping):
            for name, value in node.items():
                here = f"{where}.{name}"
                if name in _FACT_ARGUMENTS:
                    inner = _FACT_ARGUMENTS[name]
                    if inner is None and isinstance(value, str):
                        found.append((here, value))
                    elif inner is not None and isinstance(value, Mapping) and isinstance(value.get(inner), str):
                        found.append((f"{here}.{inner}", value[inner]))
                walk(value, here)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}[{i}]")

    walk(condition, key)
    return found


def _placeholders(template: str) -> set[str]:
    names = set()
    for _, name, _, _ in string.Formatter().parse(template):
        if name is None:
            continue
        if not name.isidentifier():
            raise ValueError(f"placeholder '{{{name}}}' must be a plain name (no attribute or index access)")
        names.add(name)
    return names


def build_rule(raw: dict[str, Any], source: Path) -> Rule:
    """Turn a schema-valid raw rule into a :class:`Rule`, checking its references."""
    from policylint.engine.checks import CHECKS
    from policylint.engine.conditions import compile_schema
    from policylint.engine.sheets import FACTS

    code = raw["code"]
    where = f"rules[{code}]"

    def fail(key: str, message: str) -> PolicylintError:
        return PolicylintError(message, source=str(source), key=f"{where}.{key}")

    params: dict[str, Param] = {}
    for name, p in (raw.get("params") or {}).items():
        default = p["default"]
        ok = isinstance(default, _TYPES[p["type"]]) and not (p["type"] != "boolean" and isinstance(default, bool))
        if not ok:
            raise fail(f"params.{name}.default", f"default {default!r} is not of type {p['type']}")
        params[name] = Param(name, p["type"], default, p["description"], p.get("minimum"), p.get("maximum"))
    builtin = bool(raw.get("builtin", False))
    subject = raw["subject"]
    if raw.get("fix") is not None:
        fixable = fixes()
        if {"direction": "set", **raw["fix"]} != _fix_entry(fixable.get(code)):
            # a fix nobody wrote, or one other than the bundled rule's: --fix would promise what it cannot do
            raise fail("fix", f"policylint has no fix for {code} (fixes exist for {', '.join(sorted(fixable))})")
    if builtin and subject != "document":
        raise fail("builtin", "built-in rules must have subject 'document'")
    if builtin:
        for key in ("message", "hint"):
            if key in raw:
                # One source of text: the step that finds the problem writes it.
                raise fail(key, f"a built-in rule has no '{key}' template; the step that reports it writes the text")
    elif "message" not in raw:
        raise fail("message", "is required")
    if not builtin:
        if subject == "document":
            raise fail("subject", "only built-in rules may have subject 'document'")
        if not raw.get("require") and not raw.get("check"):
            raise fail("require", "a rule needs a condition: 'require' (a schema) or 'check' (a function)")
        known = set(FACTS[subject])
        for key in ("needs",):
            for fact in raw.get(key, []):
                if fact not in known:
                    raise fail(key, f"unknown fact '{fact}' for subject {subject}")
        for key in ("when", "require"):
            for fact in _fields_in(raw.get(key) or {}):
                if fact not in known:
                    raise fail(key, f"unknown fact '{fact}' for subject {subject}")
        for key in ("when", "require"):
            for argument, fact in _references(raw.get(key) or {}, key):
                if fact not in known:
                    raise fail(argument, f"unknown fact '{fact}' for subject {subject}")
        if raw.get("at") and raw["at"] not in known:
            raise fail("at", f"unknown fact '{raw['at']}' for subject {subject}")
        check = raw.get("check")
        if check and check not in CHECKS:
            raise fail("check", f"unknown check function '{check}' (registered: {', '.join(sorted(CHECKS))})")
        for key in ("when", "require"):
            if raw.get(key):
                try:
                    compile_schema(raw[key], {n: p.default for n, p in params.items()})
                except (ValueError, KeyError) as exc:
                    raise fail(key, f"invalid condition: {exc}") from None
        allowed = known | set(params) | {"subject"}
        if check:
            provided = check_variables().get(check, frozenset())
            if "provides" in raw and set(raw["provides"]) != provided:
                listed = ", ".join(sorted(provided)) or "nothing"
                raise fail("provides", f"check function '{check}' provides {listed} (as the bundled rules declare)")
            allowed |= provided
        for key in ("message", "hint"):
            try:
                names = _placeholders(raw.get(key, ""))
            except ValueError as exc:
                raise fail(key, str(exc)) from None
            unknown = sorted(names - allowed)
            if unknown:
                raise fail(key, f"unknown placeholder '{{{unknown[0]}}}'")
    return Rule(
        code=code,
        name=raw["name"],
        severity=Severity.parse(raw["severity"]),
        section=raw["section"],
        subject=subject,
        summary=raw["summary"],
        message=raw.get("message", ""),
        hint=raw.get("hint", ""),
        docs=dict(raw["docs"]),
        source=source,
        params=params,
        at=raw.get("at"),
        needs=tuple(raw.get("needs", [])),
        when=dict(raw.get("when") or {}),
        require=dict(raw.get("require") or {}),
        check=raw.get("check"),
        builtin=builtin,
        fix=raw["fix"]["applicability"] if raw.get("fix") else None,
    )


def _fix_entry(declared: FixDeclaration | None) -> dict[str, Any] | None:
    """A bundled fix declaration as the rule file writes it (None: the rule has no fix)."""
    if declared is None:
        return None
    return {
        "applicability": declared.applicability,
        "rewrites": declared.rewrites,
        "order": declared.order,
        "direction": declared.direction,
    }


def load_rules(dirs: Iterable[Path]) -> RuleSet:
    """Load every ``*.yaml`` rule file in ``dirs`` (bundled rules first)."""
    ruleset = RuleSet()
    for folder in dirs:
        if not folder.is_dir():
            raise PolicylintError(f"rule folder not found: {folder}")
        for path in sorted(folder.glob("*.y*ml")):
            for raw in _load_file(path):
                rule = build_rule(raw, path)
                for other in ruleset.rules.values():
                    if other.code == rule.code or other.name == rule.name:
                        raise PolicylintError(
                            f"rule {rule.code} ({rule.name}) is already defined in {other.source}",
                            source=str(path),
                            key=f"rules[{rule.code}].code",
                        )
                ruleset.rules[rule.code] = rule
                ruleset.params[rule.code] = {n: p.default for n, p in rule.params.items()}
    return ruleset


def configure_rules(
    ruleset: RuleSet,
    settings: Mapping[str, Mapping[str, Any]],
    source: str,
) -> RuleSet:
    """Apply per-rule severity and parameter overrides from the configuration."""
    for key, values in settings.items():
        rule = ruleset.find(key)
        if rule is None:
            raise PolicylintError(f"unknown rule '{key}'", source=source, key=f"rules.{key}")
        for name, value in values.items():
            if name == "severity":
                ruleset.rules[rule.code] = replace(ruleset.rules[rule.code], severity=Severity.parse(str(value)))
                continue
            param = rule.params.get(name)
            if param is None:
                options = ", ".join(sorted(rule.params)) or "none"
                # 0.2.0's count of tolerated loosenings: any loosening could take a counted one's place
                moved = ("; a count of tolerated loosenings is gone since 0.2.0: name each reviewed loosening in"
                         " accept, by the word its PL977 sentence ends with") if (rule.code, name) == ("PL977", "max_loosened") else ""
                raise PolicylintError(
                    f"rule {rule.code} ({rule.name}) has no option '{name}' (options: {options}){moved}",
                    source=source,
                    key=f"rules.{key}.{name}",
                )
            if (rule.code, name) in (("PL977", "accept"), ("PL905", "allow")) and isinstance(value, list) and all(isinstance(v, str) for v in value):
                value = " ".join(value)  # the accepted words as a YAML list, as naturally as one string (newcomer trial)
            types = _TYPES[param.type]
            if not isinstance(value, types) or (param.type != "boolean" and isinstance(value, bool)):
                from policylint.model.validate import shown

                got = shown(value, wanted_number=param.type in ("number", "integer"))
                raise PolicylintError(f"must be of type {param.type}, got {got}", source=source, key=f"rules.{key}.{name}")
            number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
            if number is not None and param.minimum is not None and number < param.minimum:
                raise PolicylintError(f"must be >= {param.minimum}, got {value}", source=source, key=f"rules.{key}.{name}")
            if number is not None and param.maximum is not None and number > param.maximum:
                raise PolicylintError(f"must be <= {param.maximum}, got {value}", source=source, key=f"rules.{key}.{name}")
            ruleset.params[rule.code][name] = value
    return ruleset


def load_rules_cached(
    dirs: Sequence[Path], overrides: Mapping[str, Mapping[str, Any]], source: str, folder: Path | None
) -> RuleSet:
    """:func:`load_rules` then :func:`configure_rules`, reused between runs through the rule cache.

    With ``folder`` None (``--no-cache``) this is exactly the two calls. Otherwise a
    rule set stored under :func:`policylint.engine.rule_cache.rules_key` is read back
    instead of parsing, schema-checking and compiling the rule files again; a
    missing, damaged or mismatching entry is ignored and rewritten. Rule files that
    do not load raise exactly as without the cache (nothing is stored for them). An
    entry is only written when it reads back equal to what was loaded, so JSON never
    changes a value's type, and it records whether every condition compiled with the
    configured options.
    """
    from policylint.engine.reads import reads_table, seed_reads

    key = rule_cache.rules_key(dirs, overrides, source) if folder is not None else None
    if key is not None and folder is not None:
        cached = rule_cache.read_rules(folder, key, trust_conditions, seed_reads)
        if cached is not None:
            return cached
    ruleset = load_rules(dirs)
    configure_rules(ruleset, overrides, source)
    if key is not None and folder is not None:
        bundled = os.path.realpath(rules_dir())
        keeps = any(os.path.realpath(d) == bundled for d in dirs)
        rule_cache.write_rules(
            folder, key, ruleset, compile_schema, keeps_catalogue=keeps, reads=reads_table(), forms=plain_forms
        )
    return ruleset


def select_rules(ruleset: RuleSet, select: list[str], extend: list[str], ignore: list[str], source: str) -> set[str]:
    """Codes of the rules that run, from select / extend-select / ignore selectors."""

    def resolve(selectors: list[str], key: str) -> set[str]:
        out: set[str] = set()
        for i, s in enumerate(selectors):
            found = ruleset.matches(s)
            if not found:
                # the item's own place (ignore.2), where the file has it
                raise PolicylintError(f"'{s}' matches no rule{rule_hint(ruleset, s)}", source=source, key=f"{key}.{i}")
            out |= {r.code for r in found}
        return out

    chosen = resolve(select, "select") if select else set(ruleset.rules)
    chosen |= resolve(extend, "extend-select")
    if UNJUDGED in ruleset.rules and any(not ruleset.rules[c].builtin and ruleset.rules[c].section != "document"
                                         for c in chosen):
        chosen.add(UNJUDGED)  # which pools the selected plan rules could not judge: with any such selection
    chosen -= resolve(ignore, "ignore")
    return chosen


def rule_hint(ruleset: RuleSet, selector: str) -> str:
    """A "did you mean" for a selector that matches no rule: the closest code or name (a typo such as PL1O7)."""
    letter_o = selector.strip().upper().replace("O", "0")  # PL1O7: the letter O for a zero
    if letter_o in ruleset.rules:
        return f"; did you mean '{letter_o}'?"
    return did_you_mean(selector, [*ruleset.rules, *(r.name for r in ruleset.rules.values())])


#: the rule that names pools no capacity rule could judge (a workload that may be theirs was not read)
UNJUDGED = "PL981"
