"""Fleet benchmark: the pre-commit hook and whole runs on one-pool and many-pool repositories (issue 26).

Not a test, and never run by the tests: run it by hand from the repository root.
It generates capacity repositories of traced workloads (one file per workload,
each with its own 92-day, 5-minute CSV trace, as ``bench_cache.py`` builds
them) in two layouts:

* **one-pool**: one cluster, one inference pool holding every workload - the
  shape of a real inference fleet, where narrowing a run to the changed pool
  narrows nothing;
* **many-pool**: ``bench_rules.py``'s layout, pools of 100 workloads (one
  cluster per 100 workloads).

Every trace is one of the examples' traces with noise of its own at every sample
(``--series independent``, the default), as the series of workloads measured apart
are; ``--series raised`` gives the copies with one sample raised that the figures
before 2026-12-06 were taken on, where the double-count rule recognises thousands
of workloads as scaled copies of others. ``--keep DIR`` generates the repositories
there once and reuses them.

For each layout and size, every case runs as its own process (``python -m
policylint check --format json``) with a private cache folder; wall time, CPU
time (user + system of the process and its children) and peak resident memory
(``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` of a wrapper process: the
largest process of the run) are the medians (memory: the largest) over
``--rounds`` runs:

1. **fill**: the first run, filling an empty cache (the folder is moved aside
   before each round);
2. **warm full**: ``check .`` with the cache filled;
3. **pre-commit**: ``check --changed-files workloads/w-7.yaml``, warm cache, the
   file unchanged since the cache was filled (the repository is a git repository,
   as a hook's is: its root is where the cluster lies);
4. **pre-commit, text**: the same in the hook's own output format (the text report; the
   other cases ask for ``--format json``);
5. **pre-commit, spec edited**: the same after the file's tolerance was edited
   (a new value each round, so every round meets a document not seen before);
6. **check FILE**: ``check workloads/w-7.yaml`` (no ``--changed-files``), warm;
7. **cold, no cache**: ``check . --no-cache``;
8. **pre-commit, served** (and **edited, served**): cases 4 and 5 handed to a resident
   server (``policylint server start``, :mod:`policylint.resident`) started for the
   benchmark; only this tree's installation, and wall time is the figure (the CPU
   printed is the caller's: the run's is the server's child's). Every other case
   runs with ``POLICYLINT_SERVER=off``, whatever server the user runs;

and two references in the same invocation, also whole processes: reading every
trace of the repository with ``pyarrow.csv.read_csv`` (interpreter start-up and
the pyarrow import included, as a run includes its own), and ``ruff check`` of
one Python file (``--isolated --no-cache``) when ruff is on ``PATH`` or given
with ``--ruff``. The ratios printed are the cold run against the pyarrow read and
the pre-commit run against ruff. The load average is printed with every figure:
on a shared machine, compare ratios from one invocation, not figures across
invocations.

    python benchmarks/bench_fleet.py --sizes 1000               # quick: 1,000 workloads, both layouts
    python benchmarks/bench_fleet.py --sizes 1000,10000 --rounds 5
    python benchmarks/bench_fleet.py --layouts one-pool --cases pre-commit,check-file
    python benchmarks/bench_fleet.py --sizes 1000 --against /tmp/base   # before / after, side by side

With ``--against DIR`` every policylint case also runs the package found in DIR
(a checkout of another version), alternating with this tree's within each round;
the printed ratio is this tree's figure over DIR's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_cache import build  # noqa: E402
from bench_check import LAST_CPU, policylint, run  # noqa: E402

LAYOUTS: dict[str, dict[str, object]] = {
    "one-pool": {"pools_per_cluster": 1, "clusters": 1, "cls": "inference"},
    "many-pool": {},
}
CASES = ("fill", "warm-full", "pre-commit", "pre-commit-text", "pre-commit-edit", "check-file", "no-cache",
         "pre-commit-served", "pre-commit-edit-served")
LABELS = {
    "fill": "first run, filling the cache",
    "warm-full": "warm full check",
    "pre-commit": "pre-commit, --changed-files FILE, warm",
    "pre-commit-text": "the same, the hook's text format",
    "pre-commit-edit": "pre-commit, FILE's spec edited, warm",
    "check-file": "check FILE, warm",
    "no-cache": "cold, --no-cache",
    "pre-commit-served": "pre-commit, text, resident server",
    "pre-commit-edit-served": "pre-commit, FILE edited, resident server",
    "pyarrow": "pyarrow.csv.read_csv of every trace",
    "ruff": "ruff check of one Python file",
}
ONE = "workloads/w-7.yaml"

#: the reference reader: every CSV trace of a folder, read by pyarrow
_ARROW = r"""
import sys
from pathlib import Path

import pyarrow.csv

for path in sorted(Path(sys.argv[1]).glob("*.csv")):
    pyarrow.csv.read_csv(path)
"""


@dataclass
class Figure:
    case: str
    wall: float
    cpu: float
    peak: int  # MB
    load: float  # 1-minute load average when the case finished
    tree: str = "this tree"  # or the --against folder


def load() -> float:
    return os.getloadavg()[0]


#: the package trees measured, in order: None is the installed policylint, a path a checkout of
#: another version (``--against``), put first on ``PYTHONPATH`` for its runs
TREES: list[Path | None] = [None]


def measure(
    command: list[str],
    cwd: Path,
    cache: Path | None,
    rounds: int,
    *,
    reset: bool = False,
    before: Callable[[int], None] | None = None,
) -> list[tuple[float, float, int]]:
    """Per tree of :data:`TREES`: median wall and CPU seconds and the largest peak RSS (MB) over ``rounds`` runs.

    The trees take turns within every round, so a change in the machine's load
    weighs on them alike; each has its own cache folder (``cache`` with the
    tree's index appended). ``reset`` moves the cache folder aside before each
    round (not deleted: right after thousands of deletions ext4 is slow to
    allocate inodes, see ``bench_check.median_run``); ``before(i)`` runs before
    round ``i`` of each tree.
    """
    walls: list[list[float]] = [[] for _ in TREES]
    cpus: list[list[float]] = [[] for _ in TREES]
    peaks: list[list[int]] = [[] for _ in TREES]
    saved = os.environ.get("PYTHONPATH")
    for i in range(rounds):
        for k, tree in enumerate(TREES):
            folder = None if cache is None else cache.with_name(f"{cache.name}-{k}")
            if reset and folder is not None and folder.exists():
                n = 0
                while folder.with_name(f"{folder.name}.old-{n}").exists():
                    n += 1
                folder.rename(folder.with_name(f"{folder.name}.old-{n}"))
            if before is not None:
                before(i)
            if tree is not None:
                os.environ["PYTHONPATH"] = str(tree)
            try:
                wall, peak, code = run(command, cwd, folder)
            finally:
                if saved is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = saved
            if code not in (0, 1):
                raise SystemExit(f"{' '.join(command)} exited with {code}")
            walls[k].append(wall)
            cpus[k].append(LAST_CPU[0])
            peaks[k].append(peak)
    return [(statistics.median(w), statistics.median(c), max(p)) for w, c, p in zip(walls, cpus, peaks)]


def edit_tolerance(path: Path, original: str) -> Callable[[int], None]:
    """Before round i, give the workload a tolerance no earlier round used."""

    def before(i: int) -> None:
        marker = "maxQueueSeconds: "
        at = original.index(marker) + len(marker)
        end = original.index(",", at)
        path.write_text(f"{original[:at]}{int(original[at:end]) + 1000 + i}{original[end:]}")

    return before


@contextlib.contextmanager
def resident_server(tmp: Path) -> Iterator[bool]:
    """A resident server of the installed policylint for the runs inside (True when it started)."""
    import bench_check

    folder = Path(tempfile.mkdtemp(prefix="plb", dir="/tmp"))  # a socket's path is short
    folder.chmod(0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(folder), "POLICYLINT_SERVER": "use"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = subprocess.run([sys.executable, "-m", "policylint", "server", "start", "--idle-minutes", "60"],
                           env=env, capture_output=True, text=True, cwd=tmp)
    if start.returncode != 0:
        print(f"  resident server not started: {start.stderr.strip() or start.stdout.strip()}", flush=True)
    bench_check.SERVED_ENV.update(XDG_RUNTIME_DIR=str(folder), POLICYLINT_SERVER="use")
    try:
        yield start.returncode == 0
    finally:
        bench_check.SERVED_ENV.clear()
        subprocess.run([sys.executable, "-m", "policylint", "server", "stop"], env=env, capture_output=True, cwd=tmp)
        shutil.rmtree(folder, ignore_errors=True)


def bench(tmp: Path, layout: str, size: int, cases: list[str], rounds: int, fill_rounds: int,
          ruff: str | None, series: str = "independent", keep: Path | None = None) -> list[Figure]:
    root = (keep or tmp) / f"{layout}-{size}-{series}"
    done = root / ".generated"  # written last: a folder without it was cut short and is generated again
    if not done.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        build(root, size, distinct=series == "raised", independent=series == "independent",
              **LAYOUTS[layout])  # type: ignore[arg-type]
        # A pre-commit hook runs in a git repository, and the repository's root is where
        # `--changed-files` finds the clusters: without one (and without a configuration
        # file) the root would be the changed file's folder, workloads/, whose workloads
        # then name an unknown cluster and no pool - a run that measures nothing pooled.
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        done.write_text("")
    cache = tmp / f"cache-{layout}-{size}"
    traces = sum(p.stat().st_size for p in (root / "traces").iterdir())
    print(f"\n{layout}, {size:,} workloads ({traces / 1e6:,.0f} MB of CSV traces); load {load():.1f}", flush=True)
    figures: list[Figure] = []

    def note(case: str, measured: list[tuple[float, float, int]]) -> None:
        for k, (wall, cpu, peak) in enumerate(measured):
            if k == 0:
                figures.append(Figure(case, wall, cpu, peak, load()))
                label = LABELS[case]
            else:
                figures.append(Figure(case, wall, cpu, peak, load(), str(TREES[k])))
                first = measured[0]
                label = (f"  {TREES[k]}: this tree / it: wall {first[0] / wall:4.2f}x, CPU {first[1] / cpu:4.2f}x,"
                         f" peak {first[2] / peak:4.2f}x")
            print(f"  {label:42s} {wall:8.2f} s wall {cpu:8.2f} s CPU {peak:7,} MB   load {load():4.1f}", flush=True)

    # The cache is filled first in any case: the warm cases need it.
    filled = measure(policylint("."), root, cache, fill_rounds if "fill" in cases else 1, reset=True)
    if "fill" in cases:
        note("fill", filled)
    if "warm-full" in cases:
        note("warm-full", measure(policylint("."), root, cache, rounds))
    if "pre-commit" in cases:
        note("pre-commit", measure(policylint("--changed-files", ONE), root, cache, rounds))
    if "pre-commit-text" in cases:
        # the hook prints the text report (no terminal: no colour); the other cases ask for JSON
        note("pre-commit-text", measure(policylint("--changed-files", ONE, text=True), root, cache, rounds))
    if "pre-commit-edit" in cases:
        original = (root / ONE).read_text()
        note("pre-commit-edit", measure(policylint("--changed-files", ONE), root, cache, rounds,
                                        before=edit_tolerance(root / ONE, original)))
        (root / ONE).write_text(original)
        measure(policylint("--changed-files", ONE), root, cache, 1)  # the original file's entry again
    if "check-file" in cases:
        note("check-file", measure(policylint(ONE), root, cache, rounds))
    if "no-cache" in cases:
        note("no-cache", measure(policylint(".", "--no-cache"), root, None, rounds))
    trees = TREES[:]
    TREES[:] = [None]  # the references are the same programs whatever tree is measured
    served = [c for c in ("pre-commit-served", "pre-commit-edit-served") if c in cases]
    if served:
        # This tree's installation only: the hook's command, handed to a resident server started for
        # the benchmark in a private socket folder. Wall time is the figure: CPU is the caller's alone.
        with resident_server(tmp) as started:
            if started:
                if "pre-commit-served" in served:
                    note("pre-commit-served", measure(policylint("--changed-files", ONE, text=True), root, cache, rounds))
                if "pre-commit-edit-served" in served:
                    original = (root / ONE).read_text()
                    note("pre-commit-edit-served", measure(policylint("--changed-files", ONE, text=True), root, cache,
                                                           rounds, before=edit_tolerance(root / ONE, original)))
                    (root / ONE).write_text(original)
    note("pyarrow", measure([sys.executable, "-c", _ARROW, str(root / "traces")], root, None, rounds))
    if ruff is not None:
        # a Python file of about the size of a workload's YAML and trace handling: this benchmark itself
        target = tmp / "one.py"
        shutil.copyfile(__file__, target)
        note("ruff", measure([ruff, "check", "--isolated", "--no-cache", "--exit-zero", str(target)], tmp, None,
                             rounds))
    TREES[:] = trees
    by = {f.case: f for f in figures if f.tree == "this tree"}
    if "no-cache" in by:
        print(f"  cold --no-cache / pyarrow.csv.read_csv: {by['no-cache'].wall / by['pyarrow'].wall:5.2f}x wall,"
              f" {by['no-cache'].cpu / by['pyarrow'].cpu:5.2f}x CPU (target <= 1.3x)")
    if "ruff" in by:
        for case in ("pre-commit", "pre-commit-edit"):
            if case in by:
                print(f"  {case} / ruff check: {by[case].wall / by['ruff'].wall:6.1f}x wall,"
                      f" {by[case].cpu / by['ruff'].cpu:6.1f}x CPU")
    if "fill" in by and "no-cache" in by:
        print(f"  fill / --no-cache: {by['fill'].wall / by['no-cache'].wall:5.2f}x wall (target <= 1.3x at 10,000)")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="workload counts, comma-separated")
    parser.add_argument("--layouts", default="one-pool,many-pool", help=f"of {', '.join(LAYOUTS)}")
    parser.add_argument("--cases", default=",".join(CASES), help=f"of {', '.join(CASES)}")
    parser.add_argument("--rounds", type=int, default=5, help="runs per figure (medians; default 5)")
    parser.add_argument("--fill-rounds", type=int, default=None, help="runs of the cache-filling case (default --rounds)")
    parser.add_argument("--ruff", default=shutil.which("ruff"), help="the ruff executable (default: ruff on PATH)")
    parser.add_argument("--series", choices=("independent", "raised"), default="independent",
                        help="independent (default): every trace an example's with its own noise at every sample;"
                             " raised: copies with one sample raised (the figures before 2026-12-06)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="generate the repositories in this folder and reuse them in later invocations"
                             " (10,000 workloads take minutes to write)")
    parser.add_argument("--against", type=Path, default=None,
                        help="a folder holding another version's policylint package (e.g. `git archive BASE policylint"
                             " rules schemas | tar -x -C DIR`), measured in the same rounds; ratios this tree / it")
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    if args.against is not None:
        TREES.append(args.against.resolve())
    unknown = sorted(set(cases) - set(CASES)) + sorted(set(args.layouts.split(",")) - set(LAYOUTS))
    if unknown:
        parser.error(f"unknown case or layout: {', '.join(unknown)}")
    import compileall
    import importlib.util

    # Byte-compile first, as installing does (see bench_check.main).
    spec = importlib.util.find_spec("policylint")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            compileall.compile_dir(folder, quiet=1)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; medians of {args.rounds}"
          f"{'' if args.ruff else '; ruff not found (--ruff): no ruff comparison'}")
    results: list[tuple[str, int, Figure]] = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for size in (int(n) for n in args.sizes.split(",")):
            for layout in args.layouts.split(","):
                for f in bench(tmp, layout, size, cases, args.rounds, args.fill_rounds or args.rounds, args.ruff,
                               args.series, args.keep):
                    results.append((layout, size, f))
    print("\n| layout | workloads | case | tree | wall | CPU | peak RSS | load |")
    print("|---|---:|---|---|---:|---:|---:|---:|")
    for layout, size, f in results:
        print(f"| {layout} | {size:,} | {LABELS[f.case]} | {f.tree} | {f.wall:.2f} s | {f.cpu:.2f} s | {f.peak:,} MB"
              f" | {f.load:.1f} |")


if __name__ == "__main__":
    main()
