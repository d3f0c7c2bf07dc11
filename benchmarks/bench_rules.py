"""Rule-evaluation benchmark: lint 1,000 generated declarations (no traces).

Generates a capacity repository of N workloads spread over pools of a few
clusters (all with declared numbers only, so no measurement is read), then
times each pipeline step separately: loading + validation + resolution, and
rule evaluation (views + all rules). Not a test: run it by hand.

    python benchmarks/bench_rules.py [--workloads 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path


def generate(
    root: Path, workloads: int, pools_per_cluster: int = 10, clusters: int | None = None, cls: str | None = None
) -> None:
    """Clusters of ``pools_per_cluster`` pools (by default one cluster per 100 workloads), workloads spread over them.

    A pool's class alternates (training every third pool, else inference) unless ``cls`` names one for all.
    """
    clusters = clusters or max(1, workloads // 100)
    for c in range(clusters):
        pools = []
        for p in range(pools_per_cluster):
            pools.append(
                f"""    - name: pool-{p}
      gpu: {{model: H100-80GB, memoryGiB: 80}}
      reservedGpus: {8 + p}
      elastic: {{maxGpus: 4, kind: autoscale, coldStartSeconds: 300}}
      serves: [{cls or ('training' if p % 3 == 0 else 'inference')}]
      overflow: queue
      queue: {{maxDepth: 100, maxWaitSeconds: 30}}
      scheduling: {{gang: true, preemption: true}}
"""
            )
        (root / f"cluster-{c}.yaml").write_text(
            f"apiVersion: policylint/v1\nkind: Cluster\nmetadata:\n  name: cluster-{c}\nspec:\n  pools:\n" + "".join(pools)
        )
    docs = []
    for w in range(workloads):
        c = w % clusters
        p = w % pools_per_cluster
        kind = cls or ("training" if p % 3 == 0 else "inference")
        docs.append(
            f"""apiVersion: policylint/v1
kind: Workload
metadata: {{name: w-{w}, team: team-{w % 17}}}
spec:
  class: {kind}
  cluster: cluster-{c}
  pool: pool-{p}
  gpusPerReplica: {8 if kind == 'training' else 1}
  concurrency: {{declared: {10 + w % 50}}}
  perGpuConcurrency: {{value: 4, measuredIn: production, source: load test board}}
  coldStartSeconds: 300
  tolerance: {{maxQueueSeconds: {1 + w % 900}, evidence: "SLO document, section {w % 9}"}}
  vram: {{residentGiB: 40, residencySeconds: 86400, activeComputeSeconds: 40000}}
  durations: {{p50Seconds: 600, p90Seconds: 1800, p99Seconds: 3600}}
"""
        )
    (root / "workloads.yaml").write_text("---\n".join(docs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from policylint.engine.linter import LintOptions, judge, lint
    from policylint.resources import rules_dir
    from policylint.engine.ruleset import load_rules

    ruleset = load_rules([rules_dir()])
    now = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate(root, args.workloads)
        structural = LintOptions(root=root, now=now)  # no ruleset: load, validate, resolve only
        load_times, judge_times = [], []
        findings = 0
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            result = lint([root], structural)
            t1 = time.perf_counter()
            assert result.model is not None
            found = judge(result.model, LintOptions(root=root, now=now, ruleset=ruleset))
            t2 = time.perf_counter()
            load_times.append(t1 - t0)
            judge_times.append(t2 - t1)
            findings = len(found)
        rules = sum(1 for r in ruleset.rules.values() if not r.builtin)
        print(f"declarations: {args.workloads} workloads + {len(result.model.pools)} pools in "
              f"{len(result.model.clusters)} clusters; {rules} rules; {findings} findings")
        print(f"load + validate + resolve: median {statistics.median(load_times) * 1000:8.1f} ms")
        print(f"rule evaluation:           median {statistics.median(judge_times) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
