"""``policylint rule CODE|NAME``: show one rule's documentation."""

from __future__ import annotations

import argparse
import sys

from policylint.errors import PolicylintError

NAME = "rule"
HELP = "show the documentation of a rule"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rule", metavar="CODE|NAME", help="rule code (PL101) or name (reserved-above-baseline)")
    parser.add_argument("--format", choices=("text", "markdown"), default="text", help="rendered or raw Markdown")
    parser.add_argument("--rule-dir", action="append", default=[], metavar="DIR", help="extra folder of rule files")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from policylint.resources import rules_dir
    from policylint.engine.ruleset import load_rules

    ruleset = load_rules([rules_dir(), *(Path(d) for d in args.rule_dir)])
    rule = ruleset.find(args.rule)
    if rule is None:
        from policylint.engine.ruleset import rule_hint

        raise PolicylintError(f"unknown rule '{args.rule}'{rule_hint(ruleset, args.rule)} (see `policylint rules`)")
    text = rule.markdown()
    if args.format == "markdown":
        sys.stdout.write(text)
        return 0
    from rich.console import Console
    from rich.markdown import Markdown

    from policylint.commands.check import use_color

    color = use_color("auto", sys.stdout)
    console = Console(force_terminal=color, no_color=not color, highlight=False)
    if color:
        console.print(Markdown(text))
        return 0
    # piped or redirected: the rendering without the padding to the console's width on every line
    with console.capture() as captured:
        console.print(Markdown(text))
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
    return 0
