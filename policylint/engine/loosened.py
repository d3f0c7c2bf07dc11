"""PL977's fact: how a repository's configuration loosens the rule pack (the integrity of the gate).

A configuration can quietly lower the bar the plans are judged by: an option set
looser than its documented default, a severity lowered, a rule ignored for the
whole repository or for some files. This reads the rule set in force and the
repository's own configuration file and writes each loosening as one sentence;
the linter hands them to every cluster view (``loosened_options``). It judges a
rule set, so it belongs to the engine, not to the measurements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from policylint.catalogue import catalogue
from policylint.finding import Severity

if TYPE_CHECKING:
    from policylint.engine.rule import RuleSet


#: Rule options whose looser setting is the lower one, and those whose looser setting is the higher
#: one although their name says min_ (a floor below which nothing is reported: raising it reports less).
#: The rest: max_*, tolerance, headroom and margins loosen upward; min_* downward; text options loosen
#: by any change. ``tests/test_rule_docs.py::test_what_pl977_calls_looser_reports_no_more`` holds every bundled numeric
#: option to what its rule then reports.
_LOOSER_DOWN = {
    "tight_seconds", "latency_seconds", "realtime_seconds",
    # PL208 warns up to its share, where PL207 (by its own option) stays silent: a lower share warns less
    "PL208.max_rejected_share",
}
_LOOSER_UP = {
    "min_workloads", "queue_tolerant_seconds",
    # red team, 2026-12-06: each of these switches its rule off when raised, and was read as tightened
    "min_gpus",  # PL113, PL980: rounding below it is never reported
    "min_finished",  # PL979: with fewer finished rows the comparison is not made
    "min_pools",  # PL980: fewer pools adding rounding are not judged
    "load_gib_per_second",  # PL965: a faster load is a shorter floor
    "min_saving_gpus", "min_saving_share",  # PL988: a smaller saving is never reported
}
#: options that 0 switches off whatever their direction (PL965: 0 leaves model loading out of the floor)
_OFF_AT_ZERO = {"load_gib_per_second"}


def _looser(name: str, default: Any, value: Any, code: str = "") -> bool | None:
    """True when ``value`` loosens option ``name`` (of rule ``code``) against ``default``; None when no direction is known."""
    if value == default:
        return False
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not isinstance(default, (int, float)):
        return None
    if name in _OFF_AT_ZERO and value == 0:
        return True
    if f"{code}.{name}" in _LOOSER_DOWN:
        return value < default
    if name in _LOOSER_UP:
        return value > default
    if name in _LOOSER_DOWN:
        return value < default
    if name.startswith("min_"):
        return value < default
    return value > default


#: rule codes a select that leaves rules out names before "and N more"
_SHOWN = 12


#: PL977's option naming the loosenings a repository accepts (:func:`accepted_keys`); not a loosening itself
ACCEPT = "accept"


def accepted_keys(value: Any) -> frozenset[str]:
    """The loosenings PL977's ``accept`` option names: its whitespace-separated words, or a list of them."""
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    return frozenset(str(value).split()) if isinstance(value, str) else frozenset()


def _value(value: Any) -> str:
    """An option's value as an ``accept`` word writes it (no spaces: a word of a whitespace-separated list)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_value(v) for v in value)
    return "".join(str(value).split())


def loosened_options(ruleset: RuleSet, config: dict[str, Any] | None = None) -> list[str]:
    """Integrity of the gate: the loosening a configuration applies to the rule pack, as sentences.

    ``ruleset`` holds the options and severities in force; ``config`` is the
    repository's own configuration file as read (its ``rules``, ``ignore``, ``select``,
    ``extend-select``, ``per-file-ignores`` and ``exclude``), so a configuration is judged even when
    the run that reads it used other options. A ``--select`` or ``--ignore`` given on
    the command line is not reported: it is written in the CI job, where a reviewer sees it.

    Each sentence ends with the word that accepts it (``[accept: KEY]``); a loosening
    PL977's ``accept`` option names by that word is left out. The word pins the value
    (``PL961.max_share=0.5``, ``select=PL0,PL101``): moving an accepted option further, or
    trading it for another loosening, is a loosening nobody accepted.
    """
    accepted = _accepted(ruleset, config)
    return [sentence for key, sentence in loosenings(ruleset, config) if key not in accepted]


def _accepted(ruleset: RuleSet, config: dict[str, Any] | None) -> frozenset[str]:
    """The words PL977's ``accept`` names: the repository's own file first, else the option in force."""
    rules_cfg = (config or {}).get("rules")
    if isinstance(rules_cfg, dict):
        for key, values in rules_cfg.items():
            rule = ruleset.find(str(key)) if isinstance(values, dict) else None
            if rule is not None and rule.code == "PL977" and ACCEPT in values:
                return accepted_keys(values[ACCEPT])
    return accepted_keys(ruleset.params.get("PL977", {}).get(ACCEPT))


def loosenings(ruleset: RuleSet, config: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """Every loosening ``config`` applies, as (the word that accepts it, its sentence), in a stable order."""
    config = config or {}
    bundled = catalogue()
    found: dict[tuple[str, str], tuple[str, str]] = {}
    merged: dict[str, dict[str, Any]] = {code: dict(values) for code, values in ruleset.params.items()}
    severities = {code: rule.severity for code, rule in ruleset.rules.items()}
    rules_cfg = config.get("rules")
    settings: dict[str, Any] = rules_cfg if isinstance(rules_cfg, dict) else {}
    for key, values in settings.items():
        rule = ruleset.find(str(key)) if isinstance(values, dict) else None
        if rule is None:
            continue
        for name, value in values.items():
            if name == "severity":
                try:
                    severities[rule.code] = Severity.parse(str(value))
                except ValueError:  # an unreadable severity is the configuration loader's error
                    continue
            elif name in rule.params:
                merged.setdefault(rule.code, {})[name] = value

    def codes(selectors: Any) -> set[str]:
        if not isinstance(selectors, list):
            return set()
        return {r.code for sel in selectors for r in ruleset.matches(str(sel))}

    ignored = codes(config.get("ignore"))
    if isinstance(config.get("select"), list):
        chosen = codes(config.get("select")) | codes(config.get("extend-select")) | {"PL977"}
        left = sorted(code for code, rule in ruleset.rules.items() if not rule.builtin and code not in chosen | ignored)
        if left:
            # one sentence for the lot: a select naming a few rules leaves out most of the pack
            from policylint.engine.checks import listed

            shown = listed(left, _SHOWN)
            found[("~select", "")] = (f"select={_value(config.get('select'))}",
                                      f"its select leaves out {len(left)} rule{'s' if len(left) != 1 else ''}: {shown}")
    per_file_cfg = config.get("per-file-ignores")
    per_file: dict[str, Any] = per_file_cfg if isinstance(per_file_cfg, dict) else {}
    for code in sorted(ruleset.rules):
        rule = ruleset.rules[code]
        for name, param in rule.params.items():
            if code == "PL977" and name == ACCEPT:
                continue  # the accepted loosenings are named one by one: each is judged by itself
            value = merged.get(code, {}).get(name, param.default)
            looser = _looser(name, param.default, value, code)
            if looser or looser is None:
                how = "looser than" if looser else "changed from"
                found[(code, name)] = (f"{code}.{name}={_value(value)}",
                                       f"{code} {name} = {value!r}, {how} its default {param.default!r}")
        default = bundled.get(code, (None, None))[1]
        now = severities.get(code)
        if default is not None and now is not None and now < default:
            found[(code, "severity")] = (f"{code}.severity={now.label}", f"{code} reports as {now.label}, not {default.label}")
        if code in ignored:
            found[(code, "ignore")] = (f"{code}.ignore", f"{code} ({rule.name}) is ignored")
        globs = sorted(str(g) for g, sel in per_file.items() if code in codes(sel))
        if globs:
            found[(code, "per-file")] = (f"{code}.per-file-ignores={_value(globs)}",
                                         f"{code} ({rule.name}) is ignored in {', '.join(globs)}")
    fail_on = config.get("fail-on")
    if isinstance(fail_on, str):
        try:
            level = Severity.parse(fail_on)
        except ValueError:  # an unreadable level is the configuration loader's error
            level = None
        if level is not None and level > Severity.WARNING:
            # every warning-only defence (PL905, PL113, PL963, ...) still reports, and no longer fails the run
            found[("~fail-on", "")] = (f"fail-on={level.label}",
                                       f"fail-on: {level.label} lets every warning pass the gate (default: warning)")
    excluded = config.get("exclude")
    if isinstance(excluded, list) and excluded:
        # a file the walk never reads is judged by no rule at all: a proposal named to match is gone
        shown = ", ".join(repr(str(p)) for p in excluded)
        found[("~exclude", "")] = (f"exclude={_value([str(p) for p in excluded])}",
                                   f"files matching {shown} are excluded from every check")
    return [(key, f"{sentence} [accept: {key}]") for key, sentence in (found[k] for k in sorted(found))]
