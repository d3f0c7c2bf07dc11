"""Rule loading with and without the rule-set cache, each in a fresh process.

Not a test. Run from the repository root::

    python benchmarks/bench_rulecache.py [--runs 7]

Times (CPU), in fresh processes, what a ``check`` run spends on its rules: loading,
schema-checking and configuring the bundled rule files (``load_rules`` +
``configure_rules``), against reading the same rule set back from the cache
(:func:`policylint.engine.ruleset.load_rules_cached` with a warm entry). Both include
compiling every rule condition once, as evaluation does. Prints medians and the
ratio.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile

_CHILD = r"""
import sys, time
from pathlib import Path
start = time.process_time()
from policylint.engine.conditions import compile_schema
from policylint.engine.ruleset import load_rules_cached
from policylint.resources import rules_dir
folder = None if sys.argv[1] == "none" else Path(sys.argv[1])
ruleset = load_rules_cached([rules_dir()], {}, "bench", folder)
for code, rule in ruleset.rules.items():
    for schema in (rule.when, rule.require):
        if schema and not rule.builtin:
            compile_schema(schema, ruleset.params[code])
print(time.process_time() - start)
"""


def child(folder: str) -> float:
    out = subprocess.run([sys.executable, "-c", _CHILD, folder], capture_output=True, text=True, check=True)
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        child(folder)  # fill the cache
        fresh, cached = [], []
        for _ in range(args.runs):
            fresh.append(child("none"))
            cached.append(child(folder))
    a, b = statistics.median(fresh), statistics.median(cached)
    print(f"rules loaded and checked afresh: {a * 1000:7.1f} ms (median of {args.runs})")
    print(f"rules read from the cache:       {b * 1000:7.1f} ms")
    print(f"afresh / cached:                 {a / b:7.2f}x")


if __name__ == "__main__":
    main()
