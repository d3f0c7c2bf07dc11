"""Fleet shapes the fleet benchmark does not generate: scaling of whole runs in each (super-linear hunt).

Not a test: run it by hand from the repository root. ``bench_cache.build``
generates N workloads in one pool, each with its own single-column trace. Real
fleets also have:

* ``multicol``: traces of several summed columns (``columns: [a, b]``), one CSV per
  team of four workloads holding five series, neighbours sharing a column;
* ``wide``: one CSV export of 14 days holding every workload's series as a column of its own
  (one column per workload: the file is N columns wide);
* ``pools``: 50 pools in 5 clusters (every third a training pool) and one
  proposal per 10 workloads, each citing a pool and five of its workloads;
* ``durations``: batch workloads whose ``durations`` come from a job list shared
  by five workloads;
* ``kueue``: Kueue manifests instead of a Cluster: one ClusterQueue (and
  LocalQueue) per 10 workloads, cohorts of ten queues, two flavours;
* ``training``: one pool of inference and one of training workloads in one
  cluster, the training ones measured from job lists (concurrency and
  durations), the lists shared by pairs of workloads.

Every series is an example trace with noise of its own (``bench_cache``'s
``independent``). For each shape and size three cases run as whole processes
(``--jobs 1``, text report, private cache; CPU seconds, the machine being shared): (a) ``check . --no-cache``; (b)
``check --changed-files workloads/w-7.yaml`` after a filling run; (c) the same
after w-7's ``maxQueueSeconds`` was edited. The ratio of the sizes' times is
printed: linear scaling gives about N2/N1.

    python benchmarks/fleet_shapes.py --shapes multicol --sizes 1000,4000 [--keep DIR] [--out DIR]

With ``--out DIR`` the reports are written to DIR/SHAPE-N-CASE.txt (to compare
before and after a change).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_cache import EXAMPLES, _columns  # noqa: E402
from bench_rules import generate  # noqa: E402

SHAPES = ("multicol", "wide", "pools", "durations", "kueue", "training")
ONE = "workloads/w-7.yaml"
NOW = "2026-12-01"
JOBS = EXAMPLES / "measurements" / "jobs"


def _series(i: int) -> tuple[str, np.ndarray, np.ndarray]:
    """Example trace ``i % 7`` with independent noise of -1..+1 per sample (seeded by ``i``)."""
    traces = sorted((EXAMPLES / "measurements" / "traces").glob("*.csv"))
    header, stamps, values = _CACHE.setdefault(traces[i % len(traces)], _columns(traces[i % len(traces)]))
    noise = np.random.default_rng(i).integers(-1, 2, size=values.size)
    return header, stamps, np.maximum(values + noise, 0)


_CACHE: dict[Path, tuple[str, np.ndarray, np.ndarray]] = {}


def _write(path: Path, columns: dict[str, np.ndarray]) -> None:
    import pyarrow as pa
    import pyarrow.csv

    sink = io.BytesIO()
    pyarrow.csv.write_csv(pa.table(columns), sink, write_options=pyarrow.csv.WriteOptions(quoting_style="none"))
    path.write_bytes(sink.getvalue())


def _trace(path: str, columns: list[str]) -> str:
    return (f"concurrency:\n    trace: {{path: {path}, format: csv, timestampColumn: timestamp, "
            f"columns: [{', '.join(columns)}]}}")


def _jobs_ref(path: str) -> str:
    return f"{{path: {path}, format: jobs, startColumn: start, endColumn: end, gpusColumn: gpus}}"


def _job_list(path: Path, source: str, seed: int) -> None:
    """An example job list with every job's start and end moved back by 0-3,599 s of its own (seeded)."""
    lines = (JOBS / source).read_text().splitlines()
    rng = np.random.default_rng(seed)
    out = [lines[0]]
    for line in lines[1:]:
        job, start, end, g = line.split(",")
        a, b = rng.integers(0, 3600, size=2)
        out.append(f"{job},{int(start) - a},{max(int(end) - b, int(start) - a + 60)},{g}")
    path.write_text("\n".join(out) + "\n")


def _docs(root: Path, n: int, **layout: object) -> list[str]:
    generate(root, n, **layout)  # type: ignore[arg-type]
    docs = (root / "workloads.yaml").read_text().split("---\n")
    (root / "workloads.yaml").unlink()
    for d in ("traces", "workloads", "jobs"):
        (root / d).mkdir()
    return docs


def _independent(root: Path, i: int) -> str:
    header, stamps, values = _series(i)
    _write(root / "traces" / f"w-{i}.csv", {"timestamp": stamps, header.split(",")[1]: values})
    return _trace(f"../traces/w-{i}.csv", [header.split(",")[1]])


def build(root: Path, shape: str, n: int) -> None:
    root.mkdir(parents=True)
    if shape == "multicol":
        docs = _docs(root, n, pools_per_cluster=1, clusters=1, cls="inference")
        for g in range(0, n, 4):
            _, stamps, _ = _series(g)
            cols = {"timestamp": stamps}
            for c in range(5):
                cols[f"c{c}"] = _series(g * 5 + c)[2] // 2
            _write(root / "traces" / f"g-{g // 4}.csv", cols)
        for i, doc in enumerate(docs):
            j = i % 4
            doc = re.sub(r"concurrency: \{declared: \d+\}", _trace(f"../traces/g-{i // 4}.csv", [f"c{j}", f"c{j + 1}"]), doc)
            (root / "workloads" / f"w-{i}.yaml").write_text(doc)
    elif shape == "wide":
        docs = _docs(root, n, pools_per_cluster=1, clusters=1, cls="inference")
        rows = 14 * 288  # 14 days: one column per workload makes the file N columns wide
        cols = {"timestamp": _series(0)[1][-rows:]}
        for i in range(n):
            cols[f"w_{i}"] = _series(i)[2][-rows:]
        _write(root / "traces" / "fleet.csv", cols)
        for i, doc in enumerate(docs):
            doc = re.sub(r"concurrency: \{declared: \d+\}", _trace("../traces/fleet.csv", [f"w_{i}"]), doc)
            (root / "workloads" / f"w-{i}.yaml").write_text(doc)
    elif shape == "pools":
        docs = _docs(root, n, pools_per_cluster=10, clusters=5)
        by_pool: dict[tuple[str, str], list[int]] = {}
        for i, doc in enumerate(docs):
            doc = re.sub(r"concurrency: \{declared: \d+\}", _independent(root, i), doc)
            (root / "workloads" / f"w-{i}.yaml").write_text(doc)
            c = re.search(r"cluster: (\S+)\n  pool: (\S+)", doc)
            assert c
            by_pool.setdefault((c[1], c[2]), []).append(i)
        (root / "proposals").mkdir()
        keys = sorted(by_pool)
        for p in range(n // 10):
            cluster, pool = keys[p % len(keys)]
            members = by_pool[(cluster, pool)]
            cited = list(dict.fromkeys(f"w-{members[(p // len(keys) * 5 + k) % len(members)]}" for k in range(5)))
            (root / "proposals" / f"p-{p}.yaml").write_text(f"""apiVersion: policylint/v1
kind: Proposal
metadata:
  name: p-{p}
  team: team-{p % 17}
  owner: capacity@example.com
spec:
  cluster: {cluster}
  date: "2026-11-{1 + p % 28:02d}"
  requests:
    - pool: {pool}
      gpus: {1 + p % 4}
      gpuModel: H100-80GB
      unitCost: 25000
  workloads: [{', '.join(cited)}]
  justification: >-
    The measured baseline band of the cited workloads has grown past what {cluster}/{pool}
    reserves; these GPUs close the gap.
""")
    elif shape == "durations":
        docs = _docs(root, n, pools_per_cluster=1, clusters=1, cls="batch")
        for g in range(0, n, 5):
            _job_list(root / "jobs" / f"g-{g // 5}.csv", "nightly-eval.csv", g)
        for i, doc in enumerate(docs):
            doc = re.sub(r"concurrency: \{declared: \d+\}", _independent(root, i), doc)
            doc = re.sub(r"durations: \{[^}]*\}", f"durations:\n    jobs: {_jobs_ref(f'../jobs/g-{i // 5}.csv')}", doc)
            (root / "workloads" / f"w-{i}.yaml").write_text(doc)
    elif shape == "kueue":
        docs = _docs(root, n, pools_per_cluster=1, clusters=1, cls="inference")
        (root / "cluster-0.yaml").unlink()
        (root / "kueue").mkdir()
        queues = max(1, n // 10)
        flavors = ["h100", "h200"]
        (root / "kueue" / "flavors.yaml").write_text("---\n".join(f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: {f}
spec:
  nodeLabels:
    nvidia.com/gpu.product: {'H100-SXM-80GB' if f == 'h100' else 'H200-SXM-141GB'}
    nvidia.com/gpu.memory: "{81920 if f == 'h100' else 144384}"
""" for f in flavors))
        cqs, lqs, cohorts = [], [], []
        for q in range(queues):
            f = flavors[q % 2]
            cqs.append(f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cq-{q}
  annotations:
    policylint.dev/queue-max-depth: "4000"
    policylint.dev/queue-max-wait-seconds: "30"
spec:
  cohortName: cohort-{q // 10}
  namespaceSelector: {{}}
  queueingStrategy: BestEffortFIFO
  preemption:
    reclaimWithinCohort: Any
    withinClusterQueue: Never
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: {f}
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: {20 + q % 7}
        borrowingLimit: {2 + q % 3}
""")
            lqs.append(f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: team-{q}
  name: serving
spec:
  clusterQueue: cq-{q}
""")
        for c in range((queues + 9) // 10):
            cohorts.append(f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: cohort-{c}
spec:
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
""" + "".join(f"""    - name: {f}
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: 16
""" for f in flavors))
        (root / "kueue" / "cluster-queues.yaml").write_text("---\n".join(cqs))
        (root / "kueue" / "local-queues.yaml").write_text("---\n".join(lqs))
        (root / "kueue" / "cohorts.yaml").write_text("---\n".join(cohorts))
        for i, doc in enumerate(docs):
            doc = re.sub(r"concurrency: \{declared: \d+\}", _independent(root, i), doc)
            doc = re.sub(r"  cluster: \S+\n  pool: \S+\n",
                         f"  queue: {{scheduler: kueue, name: team-{i % queues}/serving}}\n", doc)
            (root / "workloads" / f"w-{i}.yaml").write_text(doc)
    elif shape == "training":
        docs = _docs(root, n, pools_per_cluster=2, clusters=1)  # pool-0 training, pool-1 inference
        for i in range(0, n, 4):  # training workloads are the even ones; pairs share a job list
            _job_list(root / "jobs" / f"j-{i // 4}.csv", "fine-tuning.csv", i)
        for i, doc in enumerate(docs):
            if i % 2 == 0:
                ref = _jobs_ref(f"../jobs/j-{i // 4}.csv")
                doc = re.sub(r"concurrency: \{declared: \d+\}",
                             f"concurrency:\n    trace: {{path: ../jobs/j-{i // 4}.csv, format: jobs, "
                             "startColumn: start, endColumn: end, stepSeconds: 300}", doc)
                doc = re.sub(r"durations: \{[^}]*\}", f"durations:\n    jobs: {ref}", doc)
            else:
                doc = re.sub(r"concurrency: \{declared: \d+\}", _independent(root, i), doc)
            (root / "workloads" / f"w-{i}.yaml").write_text(doc)
    else:
        raise SystemExit(f"unknown shape {shape}")
    (root / ".policylint.yaml").write_text(f'now: "{NOW}"\n')
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"], cwd=root, check=True)


def run(root: Path, cache: Path, *args: str) -> tuple[float, str, int]:
    env = {**os.environ, "NO_COLOR": "1", "POLICYLINT_SERVER": "off", "POLICYLINT_CACHE_DIR": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    os.sync()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "policylint", "check", "--jobs", "1", *args], cwd=root, env=env,
                          capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{args} exited {done.returncode}: {done.stderr[-2000:]}")
    # CPU time (user + system): the machine is shared, and wall time follows its load
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, done.stdout, done.returncode


def edit(root: Path, i: int) -> None:
    path = root / ONE
    text = path.read_text()
    path.write_text(re.sub(r"maxQueueSeconds: (\d+)", lambda m: f"maxQueueSeconds: {int(m[1]) + 1000 + i}", text, count=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--sizes", default="1000,4000")
    parser.add_argument("--cases", default="cold,pre-commit,edited")
    parser.add_argument("--keep", type=Path, default=Path("/tmp/sweep-shapes"))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    cases = args.cases.split(",")
    for shape in args.shapes.split(","):
        times: dict[int, dict[str, float]] = {}
        for n in sizes:
            root = args.keep / f"{shape}-{n}"
            if not root.exists():
                t = time.perf_counter()
                build(root, shape, n)
                print(f"built {root} in {time.perf_counter() - t:.1f} s", flush=True)
            if args.build_only:
                continue
            # restore w-7 in case an earlier invocation left it edited
            subprocess.run(["git", "checkout", "-q", "--", ONE], cwd=root, check=True)
            cache = args.keep / f"cache-{shape}-{n}"
            shutil.rmtree(cache, ignore_errors=True)
            got: dict[str, float] = {}
            outs: dict[str, str] = {}
            if "cold" in cases:
                got["cold"], outs["cold"], _ = run(root, cache, ".", "--no-cache")
            if "pre-commit" in cases or "edited" in cases:
                got["fill"], outs["fill"], _ = run(root, cache, ".")
                got["pre-commit"], outs["pre-commit"], _ = run(root, cache, "--changed-files", ONE)
                if "edited" in cases:
                    edit(root, 0)
                    got["edited"], outs["edited"], _ = run(root, cache, "--changed-files", ONE)
                    subprocess.run(["git", "checkout", "-q", "--", ONE], cwd=root, check=True)
            times[n] = got
            findings = outs.get("cold", outs.get("fill", "")).count("\n")
            print(f"{shape:10s} N={n:5d} " + "  ".join(f"{k} {v:7.2f} s" for k, v in got.items())
                  + f"  ({findings} report lines, load {os.getloadavg()[0]:.1f})", flush=True)
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                for k, v in outs.items():
                    (args.out / f"{shape}-{n}-{k}.txt").write_text(v)
        if len(times) >= 2:
            a, b = sizes[0], sizes[-1]
            print(f"{shape:10s} ratio {b}/{a} (linear {b / a:.1f}): "
                  + "  ".join(f"{k} {times[b][k] / times[a][k]:5.2f}" for k in times[a]), flush=True)


if __name__ == "__main__":
    main()
