"""``policylint rules``: list every rule."""

from __future__ import annotations

import argparse
import json
import sys

NAME = "rules"
HELP = "list all rules (code, name, severity, section, summary)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("--rule-dir", action="append", default=[], metavar="DIR", help="extra folder of rule files")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from policylint.resources import rules_dir
    from policylint.ruleset import load_rules

    ruleset = load_rules([rules_dir(), *(Path(d) for d in args.rule_dir)])
    rules = ruleset.sorted()
    if args.format == "json":
        payload = [
            {
                "code": r.code,
                "name": r.name,
                "severity": r.severity.label,
                "section": r.section,
                "subject": r.subject,
                "summary": r.summary,
                "params": {n: p.default for n, p in r.params.items()},
                "url": r.help_uri,
            }
            for r in rules
        ]
        print(json.dumps(payload, indent=2, sort_keys=True))
        return 0
    width = max(len(r.name) for r in rules)
    for r in rules:
        sys.stdout.write(f"{r.code}  {r.name:<{width}}  {r.severity.label:<7}  {r.section:<11}  {r.summary}\n")
    return 0
