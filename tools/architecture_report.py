"""Module sizes and import cycles of policylint, for the closing note of a layering change.

    python tools/architecture_report.py [--package DIR] [--limit LINES] [--edges]

Prints every module over ``--limit`` lines (default 500), then the strongly
connected components of the package's import graph: first counting every import
(module level, inside functions, under TYPE_CHECKING), then only the imports that
run when a module loads, so the difference shows which cycles exist only through
imports inside functions. ``--edges`` lists, for each cycle, the imports inside
it. The graph is read with ``ast`` by ``tests/import_graph.py``, the same reader
the architecture contract (``tests/test_architecture.py``) uses. Not shipped: a
development tool of the checkout.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _import_graph():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("import_graph", REPO / "tests" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_graph"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", type=Path, default=REPO / "policylint", help="package folder (default: the checkout's)")
    parser.add_argument("--limit", type=int, default=500, help="report modules longer than this many lines")
    parser.add_argument("--edges", action="store_true", help="list the imports inside each cycle")
    args = parser.parse_args(argv)
    graph = _import_graph()
    package = graph.read_package(args.package, "policylint")

    total = sum(package.lines.values())
    print(f"{len(package.files)} modules, {total:,} lines in {args.package}")
    big = sorted(((n, m) for m, n in package.lines.items() if n > args.limit), reverse=True)
    print(f"\nmodules over {args.limit} lines: {len(big)}")
    for n, m in big:
        print(f"  {n:6,}  {m}")

    for title, kinds in (
        ("every import (module level, in functions, under TYPE_CHECKING)", ("module", "function", "type-checking")),
        ("imports that run when the module loads (module level only)", ("module",)),
    ):
        cycles = package.cycles(kinds)
        in_cycles = sum(len(c) for c in cycles)
        print(f"\nimport cycles counting {title}: {len(cycles)}, {in_cycles} modules in them")
        for cycle in cycles:
            print(f"  {len(cycle)} modules: {', '.join(m.removeprefix('policylint.') for m in cycle)}")
            if args.edges:
                members = set(cycle)
                for imp in package.imports:
                    if imp.kind in kinds and imp.source in members and imp.target in members:
                        print(f"      {imp.describe()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
