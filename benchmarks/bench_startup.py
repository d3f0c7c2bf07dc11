"""Start-up cost of ``policylint --version`` against ``python -c "import argparse"``.

Run: ``python benchmarks/bench_startup.py [--runs N]``. Both commands are
started as fresh processes, alternately, N times each; the script prints the
median wall time of each and their ratio (target: at most 1.5). The installed
``policylint`` console script is used when it is on PATH (that is what users
run), else ``python -m policylint``.

Also prints which command modules ``--version`` and ``--help`` import (none is
expected): start-up must not pay for commands that do not run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _imported_commands(flag: str) -> list[str]:
    code = (
        "import contextlib, io, sys\n"
        "from policylint.cli import main\n"
        "try:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        f"        main([{flag!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('policylint.commands.'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return done.stdout.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="runs of each command (default 30)")
    args = parser.parse_args()
    script = shutil.which("policylint", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    tool = [script, "--version"] if script else [sys.executable, "-m", "policylint", "--version"]
    reference = [sys.executable, "-c", "import argparse"]
    for cmd in (tool, reference):  # warm the file cache once
        _time(cmd)
    tool_times, ref_times = [], []
    for _ in range(args.runs):
        tool_times.append(_time(tool))
        ref_times.append(_time(reference))
    t, r = statistics.median(tool_times), statistics.median(ref_times)
    print(f"{' '.join(os.path.basename(c) for c in tool)}: median {t * 1000:.1f} ms over {args.runs} runs")
    print(f"python -c 'import argparse': median {r * 1000:.1f} ms over {args.runs} runs")
    print(f"ratio: {t / r:.2f}x (target <= 1.5x)")
    for flag in ("--version", "--help"):
        modules = _imported_commands(flag)
        print(f"command modules imported by {flag}: {', '.join(modules) or 'none'}")


if __name__ == "__main__":
    main()
