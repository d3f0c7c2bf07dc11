"""Whole-run benchmark of ``policylint check``: schema checking, traced repositories, scaling.

Not a test: run it by hand from the repository root. Every figure is a whole
``policylint check`` process (wall time, start-up included), with its own cache
folder, on data generated into a temporary folder; ratios are between runs made
in the same invocation.

(a) **1,000 untraced declarations** (one file per document: the workloads,
    clusters and pools of ``bench_rules.py``): ``policylint check`` against
    ``check-jsonschema`` validating the same files against policylint's own JSON
    Schemas (``schemas/*.schema.json``), one ``check-jsonschema`` process per
    schema. ``policylint check`` does more (cross-file resolution and every
    rule); the comparison is what a user pays for it. Skipped, with a note, when
    ``check-jsonschema`` is not installed (``pip install check-jsonschema``).
(b) **1,000 traced workloads** (each with its own copy of a 92-day, 5-minute
    trace from ``examples/good``, as ``bench_cache.py``): a cold run (empty cache)
    with its peak resident memory, a warm whole-repository run, and a warm
    pre-commit style run ``--changed-files workloads/w-7.yaml``.
(c) **Scaling**: untraced repositories of 100, 1,000 and 10,000 declarations,
    time per declaration beyond the fixed cost of a run (start-up and rule
    loading, measured on a one-declaration repository in the same invocation).

    python benchmarks/bench_check.py                      # all three parts
    python benchmarks/bench_check.py --parts a,c          # no traced repository
    python benchmarks/bench_check.py --traced 200 --sizes 100,1000
    python benchmarks/bench_check.py --rounds 3           # medians of three runs each
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from bench_cache import build as build_traced  # noqa: E402
from bench_rules import generate  # noqa: E402

NOW = "2026-12-01"
#: run a child process; print its wall time, the peak RSS of its largest process (KiB),
#: its exit code and the CPU time (user + system) of it and its own children
_MEASURE = r"""
import resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if done.returncode not in (0, 1) or b"Traceback" in done.stderr or b"No module named" in done.stderr:
    sys.exit("the measured command failed: " + done.stderr.decode(errors="replace")[-2000:])
wall = time.perf_counter() - start
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, use.ru_maxrss, done.returncode, use.ru_utime + use.ru_stime)
"""


def split_untraced(root: Path, declarations: int) -> dict[str, list[Path]]:
    """``bench_rules`` declarations, one document per file; files by schema kind."""
    generate(root, declarations)
    files: dict[str, list[Path]] = {"workload": [], "cluster": []}
    (root / "workloads").mkdir()
    for i, doc in enumerate((root / "workloads.yaml").read_text().split("---\n")):
        path = root / "workloads" / f"w-{i}.yaml"
        path.write_text(doc)
        files["workload"].append(path)
    (root / "workloads.yaml").unlink()
    files["cluster"] = sorted(root.glob("cluster-*.yaml"))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return files


#: CPU seconds (user + system) of the last run: printed beside wall times, as the machine may be shared
LAST_CPU = [0.0]
#: environment the runs get on top of this process's: empty unless a benchmark measures runs served by a
#: resident server (policylint.resident); otherwise no run is served, even with a server of the user's running
SERVED_ENV: dict[str, str] = {}
#: cache folders moved aside so far (see median_run)
MOVED = [0]


def run(command: list[str], cwd: Path, cache: Path | None) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in MB, exit code) of one process; its CPU time goes to ``LAST_CPU``."""
    env = {**os.environ, "NO_COLOR": "1", "POLICYLINT_SERVER": "off", **SERVED_ENV}
    # An installed wheel has its bytecode compiled; with PYTHONDONTWRITEBYTECODE set, every run of
    # a checkout would compile the whole package again (about 0.4 s) and measure that instead.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if cache is not None:
        env["POLICYLINT_CACHE_DIR"] = str(cache)
    # Flush what earlier steps wrote (the generated repository, the last run's cache entries)
    # before the clock starts, so a run is not timed while the disk catches up on them.
    os.sync()
    out = subprocess.run([sys.executable, "-c", _MEASURE, *command], cwd=cwd, env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    LAST_CPU[0] = float(out[3])
    return float(out[0]), int(out[1]) // 1024, int(out[2])


def policylint(*args: str, text: bool = False) -> list[str]:
    """``policylint check`` with JSON output (``text``: the default text report, as the pre-commit hook prints it)."""
    fmt = [] if text else ["--format", "json"]
    return [sys.executable, "-m", "policylint", "check", *fmt, "--now", NOW, *args]


def median_run(command: list[str], cwd: Path, cache: Path | None, rounds: int,
               reset: bool = False) -> tuple[float, int]:
    """Median wall time and largest peak RSS over ``rounds`` runs (cache emptied first with ``reset``).

    Emptied by moving the old folder aside, not by deleting it: right after
    thousands of files are deleted, ext4 is slow to hand out new inodes for a
    while (measured here: a cold run that followed the deletion of the previous
    run's 4,000 cache entries took 5 s longer, all of it system time in inode
    allocation). A first run on a new machine or CI workspace meets no such
    deletion. The folders moved aside go with the temporary folder at the end.
    """
    walls, peaks, cpus = [], [], []
    for _ in range(rounds):
        if reset and cache is not None and cache.exists():
            MOVED[0] += 1
            cache.rename(cache.with_name(f"{cache.name}.old-{MOVED[0]}"))
        wall, peak, code = run(command, cwd, cache)
        if code not in (0, 1):
            raise SystemExit(f"{' '.join(command)} exited with {code}")
        walls.append(wall)
        peaks.append(peak)
        cpus.append(LAST_CPU[0])
    LAST_CPU[0] = statistics.median(cpus)
    return statistics.median(walls), max(peaks)


def cpu() -> str:
    """The CPU time of the last figure, for printing."""
    return f"(CPU {LAST_CPU[0]:6.2f} s)"


def part_a(tmp: Path, declarations: int, rounds: int) -> None:
    print(f"(a) {declarations:,} untraced declarations, one file each")
    root = tmp / "untraced"
    root.mkdir()
    files = split_untraced(root, declarations)
    cache = tmp / "cache-a"
    nocache, _ = median_run(policylint(".", "--no-cache"), root, None, rounds)
    print(f"  policylint check, no cache        {nocache:7.2f} s {cpu()}")
    nocache_cpu = LAST_CPU[0]
    cold, _ = median_run(policylint("."), root, cache, rounds, reset=True)
    print(f"  policylint check, cold cache      {cold:7.2f} s {cpu()}")
    warm, _ = median_run(policylint("."), root, cache, rounds)
    print(f"  policylint check, warm cache      {warm:7.2f} s {cpu()}")
    warm_cpu = LAST_CPU[0]
    tool = shutil.which("check-jsonschema")
    if tool is None:
        print("  check-jsonschema is not installed (pip install check-jsonschema): comparison skipped")
        return
    total = total_cpu = 0.0
    for kind, paths in files.items():
        schema = REPO / "schemas" / f"{kind}.schema.json"
        wall, _ = median_run([tool, "--schemafile", str(schema), *map(str, paths)], root, None, rounds)
        print(f"  check-jsonschema, {len(paths):5,} {kind} files {wall:7.2f} s {cpu()}")
        total += wall
        total_cpu += LAST_CPU[0]
    print(f"  check-jsonschema, all files       {total:7.2f} s (CPU {total_cpu:6.2f} s)")
    ratio = warm / total
    print(f"  policylint (warm) / check-jsonschema: wall {ratio:5.2f}x, CPU {warm_cpu / total_cpu:5.2f}x"
          f"   (no cache: wall {nocache / total:5.2f}x, CPU {nocache_cpu / total_cpu:5.2f}x;"
          f" target <= 0.5x: {'met' if ratio <= 0.5 else 'MISSED'})")


def part_b(tmp: Path, workloads: int, rounds: int) -> None:
    print(f"(b) {workloads:,} traced workloads (92-day, 5-minute traces)")
    root = tmp / "traced"
    root.mkdir()
    build_traced(root, workloads)
    cache = tmp / "cache-b"
    one = "workloads/w-7.yaml"
    cold, cold_peak = median_run(policylint(".", "--jobs=1"), root, cache, rounds, reset=True)
    print(f"  cold, --jobs 1                    {cold:7.2f} s {cpu()}  peak {cold_peak:5,} MB"
          " (targets <= 10 s, <= 400 MB)")
    cold_jobs, jobs_peak = median_run(policylint("."), root, cache, rounds, reset=True)
    print(f"  cold, --jobs {os.cpu_count() or 1} (default)         {cold_jobs:7.2f} s {cpu()}  peak {jobs_peak:5,} MB"
          " (largest process)")
    warm, warm_peak = median_run(policylint("."), root, cache, rounds)
    print(f"  warm, whole repository            {warm:7.2f} s {cpu()}  peak {warm_peak:5,} MB")
    fresh_one, _ = median_run(policylint("--changed-files", one, "--no-cache"), root, None, rounds)
    print(f"  --changed-files {one}, no cache {fresh_one:7.2f} s {cpu()}")
    warm_one, one_peak = median_run(policylint("--changed-files", one), root, cache, rounds)
    print(f"  --changed-files {one}, warm     {warm_one:7.2f} s {cpu()}  peak {one_peak:5,} MB (target <= 1 s:"
          f" {'met' if warm_one <= 1.0 else 'MISSED'})")
    size = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    print(f"  cache folder: {size / 1e6:,.0f} MB;  cold / warm: {cold_jobs / warm:4.1f}x;"
          f"  no-cache one-file / warm one-file: {fresh_one / warm_one:4.1f}x")


def part_c(tmp: Path, sizes: list[int], rounds: int) -> None:
    print("(c) scaling, untraced declarations (warm cache, one file each)")
    per: list[float] = []
    # the fixed cost of a run (start-up, rules, one declaration), taken out of the per-declaration figure
    root = tmp / "scale-fixed"
    root.mkdir()
    split_untraced(root, 1)
    run(policylint("."), root, tmp / "cache-c-fixed")
    fixed, _ = median_run(policylint("."), root, tmp / "cache-c-fixed", rounds)
    fixed_cpu = LAST_CPU[0]
    print(f"  fixed cost (1 declaration)  {fixed:6.2f} s {cpu()}")
    for n in sizes:
        root = tmp / f"scale-{n}"
        root.mkdir()
        split_untraced(root, n)
        cache = tmp / f"cache-c-{n}"
        run(policylint("."), root, cache)  # fill the rule cache
        wall, peak = median_run(policylint("."), root, cache, rounds)
        # CPU time is the steadier measure on a shared machine: the linearity verdict uses it
        per.append((LAST_CPU[0] - fixed_cpu) / n)
        print(f"  {n:7,} declarations  {wall:8.2f} s {cpu()}  {(wall - fixed) / n * 1e3:7.3f} ms wall,"
              f" {per[-1] * 1e3:7.3f} ms CPU per declaration beyond the fixed cost  peak {peak:5,} MB")
    for (a, pa), (b, pb) in zip(zip(sizes, per), zip(sizes[1:], per[1:])):
        change = pb / pa - 1
        print(f"  CPU per declaration {a:,} -> {b:,}: {change:+.0%} (target within 10%:"
              f" {'met' if abs(change) <= 0.10 else 'MISSED'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="a,b,c", help="which parts to run (a, b, c; comma-separated)")
    parser.add_argument("--declarations", type=int, default=1000, help="(a) untraced declarations")
    parser.add_argument("--traced", type=int, default=1000, help="(b) traced workloads")
    parser.add_argument("--sizes", default="100,1000,10000", help="(c) repository sizes")
    parser.add_argument("--rounds", type=int, default=1, help="runs per figure (median)")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    # Byte-compile the package first, as installing it does: a development checkout run with
    # PYTHONDONTWRITEBYTECODE set would otherwise compile every changed module in every run.
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("policylint")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            compileall.compile_dir(folder, quiet=1)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if "a" in parts:
            part_a(tmp, args.declarations, args.rounds)
        if "b" in parts:
            part_b(tmp, args.traced, args.rounds)
        if "c" in parts:
            part_c(tmp, [int(n) for n in args.sizes.split(",")], args.rounds)


if __name__ == "__main__":
    main()
