"""The rule-set cache: the rules as loaded and configured, kept between runs as one sealed JSON entry.

Loading rules parses and schema-checks every rule file and compiles every
condition; :func:`policylint.engine.ruleset.load_rules_cached` reads a rule set
stored here instead. The key (:func:`rules_key`) is a SHA-256 over the code
fingerprint, the cerberus version, the rule folders, every rule file's name and
bytes, the configuration file and its per-rule overrides. The entry holds the
rule set as JSON and the fact that every condition compiled when it was stored.

This module knows the rules only as data (:mod:`policylint.engine.rule`): the
caller passes in what the evaluator does with a condition - compile it when an
entry is written, and mark it as already checked when one is read (see
:func:`policylint.engine.conditions.trust_conditions`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from policylint import catalogue
from policylint.cache.store import (
    MAX_ENTRY_BYTES, atomic_write, code_fingerprint, library_identity, read_sealed, seal_json,
)
from policylint.engine.rule import Param, Rule, RuleSet
from policylint.errors import PolicylintError
from policylint.finding import Severity
from policylint.model.load.limits import LoadLimits
from policylint.safeio import read_bytes

#: bumped whenever the layout of a cached rule set changes; part of every rule key
RULES_FORMAT_VERSION = 2

#: one condition as the evaluator compiles it: a rule's ``when`` or ``require`` schema, and the rule's parameters
Condition = tuple[Mapping[str, Any], Mapping[str, Any]]


def rules_key(dirs: Sequence[Path], overrides: Mapping[str, Any], source: str = "") -> str | None:
    """The cache key of a configured rule set; None when a rule file cannot be read.

    A SHA-256 over the code fingerprint (policylint version and package source),
    the installed cerberus (it judges the conditions) and PyYAML (the bundled rules
    kept beside the rule set are its parse), each by
    :func:`~policylint.cache.store.library_identity`, every rule folder (as named
    and as its real path: the repository's own folders identify it), every rule
    file's name and bytes in loading order, the configuration file (``source``)
    and its per-rule overrides. Any edit to a rule file, a new file in a rule
    folder, or a changed option or severity gives another key.

    Rule files are read exactly as the loader reads them (a regular file within
    the load size limit): a pipe, a device or an oversized file gives None, and
    the loader then reports it as it does without the cache.
    """
    checker = library_identity("cerberus") or "none"
    parser = library_identity("yaml") or "none"  # the bundled rules kept beside the rule set are its parse
    digest = hashlib.sha256(f"rules/{RULES_FORMAT_VERSION}/{code_fingerprint()}/{checker}/{parser}".encode())
    digest.update(b"\0source\0" + source.encode("utf-8", "surrogateescape"))
    limit = LoadLimits().max_file_bytes
    for folder in dirs:
        if not folder.is_dir():
            return None  # the loader reports a missing folder; nothing to cache
        real = os.path.realpath(folder)
        digest.update(b"\0dir\0" + str(folder).encode("utf-8", "surrogateescape") + b"\0" + real.encode("utf-8", "surrogateescape"))
        for path in sorted(folder.glob("*.y*ml")):
            try:
                data = read_bytes(path, limit=limit, what="rule file")
            except (PolicylintError, OSError):
                return None  # refused or unreadable: the loader says so, nothing is cached
            digest.update(b"\0file\0" + path.name.encode("utf-8", "surrogateescape") + b"\0" + str(len(data)).encode() + b"\0" + data)
    try:
        text = json.dumps(overrides, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None  # an override JSON cannot spell (a YAML date): load afresh every time
    digest.update(b"\0overrides\0" + text.encode())
    return digest.hexdigest()


def _rules_path(folder: Path, key: str) -> Path:
    return folder / f"rules-v{RULES_FORMAT_VERSION}" / f"{key}.json"


def _encode_ruleset(ruleset: RuleSet) -> dict[str, Any]:
    rules = []
    for rule in ruleset.rules.values():
        rules.append(
            {
                "code": rule.code,
                "name": rule.name,
                "severity": rule.severity.name,
                "section": rule.section,
                "subject": rule.subject,
                "summary": rule.summary,
                "message": rule.message,
                "hint": rule.hint,
                "docs": rule.docs,
                "source": str(rule.source),
                "params": [
                    [p.name, p.type, p.default, p.description, p.minimum, p.maximum] for p in rule.params.values()
                ],
                "at": rule.at,
                "needs": list(rule.needs),
                "when": rule.when,
                "require": rule.require,
                "check": rule.check,
                "builtin": rule.builtin,
                "fix": rule.fix,
            }
        )
    return {"rules": rules, "params": ruleset.params}


def _decode_ruleset(document: Mapping[str, Any]) -> RuleSet:
    ruleset = RuleSet()
    for raw in document["rules"]:
        params = {p[0]: Param(*p) for p in raw["params"]}
        rule = Rule(
            code=raw["code"],
            name=raw["name"],
            severity=Severity[raw["severity"]],
            section=raw["section"],
            subject=raw["subject"],
            summary=raw["summary"],
            message=raw["message"],
            hint=raw["hint"],
            docs=raw["docs"],
            source=Path(raw["source"]),
            params=params,
            at=raw["at"],
            needs=tuple(raw["needs"]),
            when=raw["when"],
            require=raw["require"],
            check=raw["check"],
            builtin=raw["builtin"],
            fix=raw["fix"],
        )
        ruleset.rules[rule.code] = rule
    options: Any = document["params"]
    if not isinstance(options, dict) or set(options) != set(ruleset.rules):
        raise ValueError("parameters do not match the rules")
    ruleset.params = {code: dict(values) for code, values in options.items()}
    return ruleset


def _conditions(ruleset: RuleSet) -> list[Condition]:
    """Every (schema, parameters) pair the evaluator compiles for this rule set."""
    return [
        (schema, ruleset.params[code])
        for code, rule in ruleset.rules.items()
        for schema in (rule.when, rule.require)
        if schema and not rule.builtin
    ]



def _encode_catalogue() -> str | None:
    """The bundled rules as read (:func:`policylint.catalogue.bundled_entries`) as JSON text, when it keeps them
    exactly, in their order and with each entry's keys in theirs (text, so the entry's sorted keys leave it be)."""
    entries = catalogue.bundled_entries()
    try:
        text = json.dumps([[code, name, raw] for code, (name, raw) in entries.items()], allow_nan=False)
        back = _decode_catalogue(text)
    except (TypeError, ValueError):
        return None
    # JSON keeps the order of codes and of each entry's keys; a value it changes (a key that is
    # not text, a YAML date) makes the two differ
    return text if back == entries else None


def _decode_catalogue(text: str) -> dict[str, tuple[str, dict[str, Any]]]:
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for code, name, raw in json.loads(text):
        if not isinstance(code, str) or not isinstance(name, str) or not isinstance(raw, dict):
            raise ValueError("not a rule entry")
        out[code] = (name, raw)
    return out


def read_rules(
    folder: Path,
    key: str,
    trust: Callable[[Sequence[Condition], Any], None],
    seed_reads: Callable[[Any], None] | None = None,
) -> RuleSet | None:
    """The rule set stored under ``key``, or None: absent, damaged, foreign or not matching.

    When the entry records that every condition compiled, ``trust`` is given the
    conditions, with the forms kept beside them (None if none were), so that the
    evaluator need not check them again. ``seed_reads`` is
    given the check functions' reads kept with the rule set (see :func:`write_rules`).
    Anything that goes wrong, in reading, in ``trust`` or in ``seed_reads``, is a miss.
    """
    try:
        body = read_sealed(_rules_path(folder, key), folder, "rules", MAX_ENTRY_BYTES["rules"])
        if body is None:
            return None
        document = json.loads(body.decode("utf-8"))
        if document.get("format") != RULES_FORMAT_VERSION or document.get("key") != key:
            return None
        ruleset = _decode_ruleset(document["ruleset"])
        kept = document.get("catalogue")
        bundled = _decode_catalogue(kept) if isinstance(kept, str) else None
        if document.get("compiled") is True:
            trust(_conditions(ruleset), document.get("forms"))
        if bundled is not None:
            catalogue.seed(bundled)
        if seed_reads is not None and "check_reads" in document:
            seed_reads(document["check_reads"])
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a damaged entry means "not cached", never an error
        return None
    return ruleset


def write_rules(
    folder: Path,
    key: str,
    ruleset: RuleSet,
    compile_condition: Callable[[Mapping[str, Any], Mapping[str, Any]], object],
    keeps_catalogue: bool = False,
    forms: Callable[[Sequence[Condition]], list[str | None]] | None = None,
    reads: Mapping[str, Any] | None = None,
) -> None:
    """Keep ``ruleset`` under ``key``, when it reads back equal to itself; a folder that refuses is skipped.

    JSON must not change a value's type, so the rule set is decoded again before
    anything is written. ``compile_condition`` (the evaluator's) is then called on
    every condition; one that raises ``ValueError`` or ``KeyError`` is reported when
    evaluated, and the entry records that not every condition compiled. With
    ``keeps_catalogue`` (the key covers the bundled rule folder) the bundled rules
    as read are kept too, when JSON holds them exactly; a run that reads the entry
    gives them to :func:`policylint.catalogue.seed` rather than parsing the files.
    ``reads`` (which facts each check function reads, worked out from the package's
    source: the key's code fingerprint covers it) is kept as it is given, and so is
    what ``forms`` (the evaluator's) gives for the conditions of a rule set all of
    whose conditions compiled: one text or None per condition, in their order.
    """
    try:
        body = _encode_ruleset(ruleset)
        text = json.dumps(body, sort_keys=True, allow_nan=False)
        back = _decode_ruleset(json.loads(text))
    except (TypeError, ValueError, KeyError):
        return  # a value JSON cannot carry faithfully: load afresh next time
    if back.rules != ruleset.rules or back.params != ruleset.params:
        return
    compiled = True
    for schema, params in _conditions(ruleset):
        try:
            compile_condition(schema, params)
        except (ValueError, KeyError):
            compiled = False  # reported when evaluated; never marked as checked
    document: dict[str, Any] = {"format": RULES_FORMAT_VERSION, "key": key, "compiled": compiled, "ruleset": body}
    if compiled and forms is not None:
        document["forms"] = forms(_conditions(ruleset))
    if reads is not None:
        document["check_reads"] = reads
    if keeps_catalogue:
        kept = _encode_catalogue()
        if kept is not None:
            document["catalogue"] = kept
    sealed = seal_json(folder, "rules", json.dumps(document, sort_keys=True, allow_nan=False).encode("utf-8"))
    if sealed is not None and len(sealed) <= MAX_ENTRY_BYTES["rules"]:
        atomic_write(_rules_path(folder, key), sealed, folder)
