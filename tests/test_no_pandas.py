"""No path of ``check`` imports pandas: importing it costs about 200 ms and 33 MB that no reader needs (issue 26)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES

_RUN = r"""
import contextlib, io, sys
from policylint.cli import main

with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(["check", "--format", "json", "--now", "2026-12-01", "--jobs", "1", *sys.argv[1:]])
    except SystemExit:
        pass
assert "pandas" not in sys.modules, "pandas was imported"
print("ok")
"""

_WORKLOAD = """apiVersion: policylint/v1
kind: Workload
metadata: {{name: {name}, team: platform}}
spec:
  class: {cls}
  cluster: fleet
  pool: shared
  gpusPerReplica: 1
  concurrency:
    trace: {trace}
  perGpuConcurrency: {{value: 4, measuredIn: production, source: load test board}}
  coldStartSeconds: 300
  tolerance: {{maxQueueSeconds: 30, evidence: "SLO document, section 3"}}
"""

_CLUSTER = """apiVersion: policylint/v1
kind: Cluster
metadata: {name: fleet}
spec:
  pools:
    - name: shared
      gpu: {model: H100-80GB, memoryGiB: 80}
      reservedGpus: 40
      serves: [inference, batch]
      overflow: queue
      queue: {maxDepth: 100, maxWaitSeconds: 30}
"""


def _timed_repo(root: Path) -> Path:
    """Traces whose times are typed timestamps or ISO text, and a job list: the readers' conversion paths."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    (root / "traces").mkdir(parents=True)
    start = 1_788_134_400
    times = start + 300 * np.arange(26_496)
    values = (40 + 20 * np.sin(np.arange(times.size) / 288 * 2 * np.pi)).round()
    stamps = pa.array(times * 1_000_000, type=pa.timestamp("us", tz="UTC"))
    pq.write_table(pa.table({"timestamp": stamps, "in_flight": pa.array(values)}), root / "traces" / "typed.parquet")
    iso = np.datetime_as_string(times.astype("datetime64[s]"), unit="s", timezone="UTC")
    (root / "traces" / "iso.csv").write_text(
        "timestamp,in_flight\n" + "".join(f"{t},{int(v)}\n" for t, v in zip(iso.tolist(), values.tolist()))
    )
    begin = start + 3_600 * np.arange(2_000)
    jobs = pa.table({
        "start": pa.array(begin * 1_000_000, type=pa.timestamp("us", tz="UTC")),
        "end": pa.array((begin + 7_200) * 1_000_000, type=pa.timestamp("us", tz="UTC")),
    })
    pq.write_table(jobs, root / "traces" / "jobs.parquet")
    traces = {
        "typed": ("inference", "{path: ../traces/typed.parquet, format: parquet, timestampColumn: timestamp,"
                               " columns: [in_flight]}"),
        "iso": ("inference", "{path: ../traces/iso.csv, format: csv, timestampColumn: timestamp, columns: [in_flight]}"),
        "jobs": ("batch", "{path: ../traces/jobs.parquet, format: jobs, startColumn: start, endColumn: end}"),
    }
    (root / "workloads").mkdir()
    (root / "cluster.yaml").write_text(_CLUSTER)
    for name, (cls, trace) in traces.items():
        (root / "workloads" / f"{name}.yaml").write_text(_WORKLOAD.format(name=name, cls=cls, trace=trace))
    return root


@pytest.mark.parametrize("where", ["good", "bad", "kueue", "timed", "timed-cached"])
def test_check_never_imports_pandas(where: str, tmp_path: Path) -> None:
    root = _timed_repo(tmp_path / "repo") if where.startswith("timed") else EXAMPLES / where
    cache = ["--no-cache"] if where != "timed-cached" else []
    env = {"POLICYLINT_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    for _ in range(2 if cache == [] else 1):  # a cached run: filling the cache, then reading it
        done = subprocess.run([sys.executable, "-c", _RUN, *cache], cwd=root, env=env, capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
    if where.startswith("timed"):
        # the repository really was read through the typed, ISO and job-list paths
        out = subprocess.run(
            [sys.executable, "-m", "policylint", "check", "--no-cache", "--format", "json", "--now", "2026-12-01"],
            cwd=root, env=env, capture_output=True, text=True,
        )
        assert '"PL024"' not in out.stdout and "Traceback" not in out.stderr, out.stdout[-2000:] + out.stderr[-2000:]
