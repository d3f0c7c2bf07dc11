"""``policylint schema KIND``: print the JSON Schema of a document kind."""

from __future__ import annotations

import argparse
import json

from policylint.resources import SCHEMA_FILES, load_schema

NAME = "schema"
HELP = "print the JSON Schema of a document kind (workload, cluster, proposal, rule, config)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", metavar="KIND", help="workload, cluster, proposal, rule or config")


def run(args: argparse.Namespace) -> int:
    names = {k.lower(): k for k in SCHEMA_FILES}
    kind = names.get(args.kind.lower(), args.kind)
    print(json.dumps(load_schema(kind), indent=2))
    return 0
