"""``policylint config``: print the effective configuration."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "config"
HELP = "print the effective configuration (after discovery and validation)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="where the run would look (default: .)")
    parser.add_argument("--config", type=Path, metavar="FILE", help="configuration file (default: discovered)")
    parser.add_argument("--isolated", action="store_true", help="ignore configuration files")


def run(args: argparse.Namespace) -> int:
    from policylint.model.config import load_config
    from policylint.resources import rules_dir
    from policylint.engine.ruleset import configure_rules, load_rules, select_rules

    paths = list(args.paths) or [Path(".")]
    config = load_config(paths, config_file=args.config, isolated=args.isolated)
    source = str(config.path) if config.path else "<defaults>"
    ruleset = load_rules([rules_dir(), *config.rule_dirs])
    configure_rules(ruleset, config.rules, source)
    selected = select_rules(ruleset, config.select, config.extend_select, config.ignore, source)
    data = config.to_dict()
    data["selected-rules"] = sorted(selected)
    data["rule-options"] = {code: ruleset.params[code] for code in sorted(ruleset.params) if ruleset.params[code]}
    data["severities"] = {code: r.severity.label for code, r in sorted(ruleset.rules.items())}
    print(json.dumps(data, indent=2, sort_keys=True))
    return 0
