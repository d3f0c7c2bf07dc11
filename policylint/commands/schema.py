"""``policylint schema KIND`` / ``policylint schema --write DIR``: the bundled JSON Schemas.

``KIND`` prints one schema. ``--write DIR`` copies all of them into DIR (the
editor association ``policylint init`` sets up points there), byte for byte
as shipped, so re-running it after an upgrade refreshes them. Each schema's
``$id`` is relative (``./workload.schema.json``): it resolves to the copy it
is read from, online or not.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

NAME = "schema"
HELP = "print the JSON Schema of a document kind, or write them all with --write DIR"
DESCRIPTION = (
    "Print the JSON Schema of KIND (workload, cluster, proposal, rule, config), "
    "or write every bundled schema into DIR with --write DIR (for editor completion)."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", nargs="?", metavar="KIND", help="workload, cluster, proposal, rule or config")
    parser.add_argument("--write", type=Path, metavar="DIR", help="write all schemas into DIR (created if missing)")


def write_schemas(folder: Path) -> list[tuple[Path, str]]:
    """Copy every bundled schema into ``folder``; (path, "created" | "updated" | "unchanged") per file.

    Each file goes through :func:`policylint.writer.write_file` with ``folder``
    as its root: a link in it is followed only to a file inside ``folder``, and
    a pipe, device or read-only file there is refused.
    """
    from policylint.errors import PolicylintError
    from policylint.resources import SCHEMA_FILES, schemas_dir
    from policylint.safeio import read_bytes
    from policylint.writer import write_file

    source = schemas_dir()
    done: list[tuple[Path, str]] = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PolicylintError(f"cannot write the schemas: {exc.strerror or exc}", source=str(folder)) from None
    if not folder.is_dir():
        raise PolicylintError("not a folder", source=str(folder))
    for filename in SCHEMA_FILES.values():
        data = (source / filename).read_bytes()
        target = folder / filename
        if not target.is_symlink() and not target.exists():
            status = "created"
        else:
            try:
                status = "unchanged" if read_bytes(target, limit=len(data), what="schema") == data else "updated"
            except PolicylintError:
                status = "updated"  # too large, or not a regular file: the writer decides
        if status != "unchanged":
            write_file(target, data, root=folder, what="the schema")
        done.append((target, status))
    return done


_VERB = {"created": "wrote", "updated": "updated", "unchanged": "unchanged"}


def run(args: argparse.Namespace) -> int:
    from policylint.errors import PolicylintError
    from policylint.resources import SCHEMA_FILES, load_schema

    if args.write is not None:
        if args.kind is not None:
            raise PolicylintError("give either KIND (print one schema) or --write DIR (write them all), not both")
        from policylint.report.safe_text import escape_controls

        for path, status in write_schemas(args.write):
            # the folder is the user's to name: a control character in it is shown, not sent to the terminal
            sys.stdout.write(f"{_VERB[status]} {escape_controls(path.as_posix())}\n")
        return 0
    if args.kind is None:
        raise PolicylintError("name a KIND (workload, cluster, proposal, rule, config) or give --write DIR")
    names = {k.lower(): k for k in SCHEMA_FILES}
    kind = names.get(args.kind.lower(), args.kind)
    print(json.dumps(load_schema(kind), indent=2))
    return 0
