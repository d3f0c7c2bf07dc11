"""One truth per number: every command gives the same figure for the same subject.

For every pool and workload of the examples (good, bad, kueue, kueue-bad) and of
generated plans, this puts side by side what each part of the tool says about it:

* ``bands TRACE`` with the workload's own reading and calculation settings
  (its effective cold start, its GPU conversion),
* ``bands --pool CLUSTER/POOL --format json``,
* the facts ``check`` judges (the views of :class:`policylint.session.Session`,
  the Python API the engine uses: ``check --format json`` carries findings only),
* the ``data-*`` figures of ``report --html``,
* the quotas ``export kueue`` writes,
* ``plan --format json``: today's pools, and every planned pool's bands against
  ``bands`` of its members at the planned pool's cold start,

and asserts that they agree on every figure they share: bands in concurrency
and GPUs, cold start, window days, flat days, capacity = reserved + elastic,
the sum of the workloads' own bands, and a pool of one workload equal to that
workload. Small and fast: each repository is checked once, then every command
runs once per subject.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES, run_cli

NOW = "2026-12-01"


# --------------------------------------------------------------------------- what check judges


@dataclass
class Judged:
    """The model and the facts ``check`` judged, by workload name and by pool (``cluster/pool``)."""

    model: Any
    workloads: dict[str, dict[str, Any]]
    pools: dict[str, dict[str, Any]]


def _judged(repo: Path) -> Judged:
    from policylint.cli import build_parser
    from policylint.session import Session

    args = build_parser("check").parse_args(["check", "--no-cache", "--now", NOW, str(repo)])
    result = Session.from_args(args).lint()
    assert result.model is not None
    workloads = {v.facts["name"]: v.facts for v in result.views if v.subject == "workload"}
    pools = {v.facts["qualified"]: v.facts for v in result.views if v.subject == "pool"}
    return Judged(result.model, workloads, pools)


# --------------------------------------------------------------------------- bands TRACE, as the workload reads it


_WHERE_OPS = {"eq": "=", "ne": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<=", "in": "=", "notIn": "!="}


def _where(spec: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for column, test in spec.items():
        if isinstance(test, list):
            out += ["--where", f"{column}={','.join(str(v) for v in test)}"]
        elif isinstance(test, dict):
            for op, value in test.items():
                shown = ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
                out += ["--where", f"{column}{_WHERE_OPS[op]}{shown}"]
        else:
            out += ["--where", f"{column}={test}"]
    return out


_OPTIONS = {
    "format": "--input-format",
    "timestampColumn": "--timestamp-column",
    "startColumn": "--start-column",
    "endColumn": "--end-column",
    "durationColumn": "--duration-column",
    "timestampUnit": "--timestamp-unit",
    "durationUnit": "--duration-unit",
    "timeOrigin": "--time-origin",
    "stepSeconds": "--step",
    "gpusColumn": "--gpus-column",
    "unit": "--unit",
}


def _bands_args(workload: Any) -> list[str] | None:
    """``bands`` arguments that read and analyse the workload's trace as ``check`` does; None when they cannot."""
    from policylint.measure.cold_start import effective_cold_start

    ref = workload.measurements.get("concurrency")
    conc = workload.spec.get("concurrency") or {}
    if ref is None or ref.path is None or (conc.get("share") or {}).get("fraction") not in (None, 1):
        return None  # a declared share scales the series after reading; bands TRACE has no such option
    spec = ref.spec
    args = [str(ref.path)]
    for key, option in _OPTIONS.items():
        if spec.get(key) is not None:
            args += [option, str(spec[key])]
    for column in spec.get("columns") or []:
        args += ["--column", str(column)]
    for label, value in (spec.get("match") or {}).items():
        args += ["--match", f"{label}={value}"]
    key = spec.get("key") or {}
    if key.get("column"):
        args += ["--key-column", str(key["column"])]
        if key.get("select") is not None:
            args += ["--select", str(key["select"])]
        if key.get("aggregate"):
            args += ["--aggregate", str(key["aggregate"])]
    args += _where(spec.get("where") or {})
    if spec.get("skipIncomplete"):
        args.append("--skip-incomplete")
    for item in conc.get("exclude") or []:
        args += ["--exclude", f"{item['start']}/{item['end']}"]
    if conc.get("excludeOutlierDays") is not None:
        args += ["--outlier-mad", str(conc["excludeOutlierDays"])]
    args += ["--cold-start", repr(effective_cold_start(workload))]
    return args


def _gpu_args(workload: Any, trace_unit: str) -> list[str]:
    from policylint.measure.conversion import gpu_conversion

    if trace_unit == "gpus":
        return []
    per_gpu, replicas = gpu_conversion(workload, trace_unit)
    return [] if per_gpu is None else ["--per-gpu", repr(per_gpu), "--gpus-per-replica", str(replicas)]


def _json(argv: list[str]) -> dict[str, Any] | None:
    """A command's JSON answer; None when it refuses (exit 2)."""
    code, out, err = run_cli(argv)
    if code == 2:
        return None
    assert code in (0, 1), err
    document: dict[str, Any] = json.loads(out)
    return document


def _assert_workload(name: str, workload: Any, facts: dict[str, Any]) -> None:
    args = _bands_args(workload)
    if args is None:
        return
    cli = _json(["bands", *args, *_gpu_args(workload, facts["trace_unit"]), "--format", "json"])
    if not facts["concurrency_measured"]:
        assert cli is None, f"{name}: bands reads a trace check could not"
        return
    assert cli is not None, f"{name}: check measured a trace bands refuses"
    where = f"workload {name}"
    assert cli["cold_start_seconds"] == facts["cold_start_window_seconds"], where
    assert cli["window_days"] == facts["window_days"], where
    assert len(cli["flat_days"]) == facts["flat_days"], where
    assert cli["step_seconds"] == facts["step_seconds"], where
    for band in ("baseline", "daily", "peak"):
        assert cli["bands"][band] == facts[band], f"{where}: {band}"
        gpus = cli.get("bands_gpus", {}).get(band, cli["bands"][band] if facts["trace_unit"] == "gpus" else None)
        if facts[f"{band}_gpus"] is not None or gpus is not None:
            assert gpus == facts[f"{band}_gpus"], f"{where}: {band} GPUs"


# --------------------------------------------------------------------------- bands --pool


def _assert_pool(qualified: str, pool: dict[str, Any], judged: Judged) -> dict[str, Any] | None:
    where = f"pool {qualified}"
    # capacity = reserved + elastic, wherever it is shown
    assert pool["capacity_gpus"] == pool["reserved_gpus"] + pool["elastic_gpus"], where
    doc = _json(["bands", "--pool", qualified, "--format", "json", str(judged.model.root)])
    if doc is None:
        assert pool["baseline_gpus"] is None, f"{where}: check has pooled bands that bands --pool refuses"
        return None
    capacity = doc["capacity"]
    assert (capacity["reserved_gpus"], capacity["elastic_gpus"], capacity["total_gpus"]) == (
        pool["reserved_gpus"], pool["elastic_gpus"], pool["capacity_gpus"]
    ), where
    assert capacity["total_gpus"] == capacity["reserved_gpus"] + capacity["elastic_gpus"], where
    pooled = doc["pooled"]
    assert pooled["bands_gpus"] == {
        "baseline": pool["baseline_gpus"], "daily": pool["daily_gpus"], "peak": pool["peak_gpus"]
    }, where
    assert pooled["sustained_max_gpus"] == pool["sustained_max_gpus"], where
    assert pooled["window_days"] == pool["pooled_window_days"], where
    assert pooled["cold_start_seconds"] == pool["pooled_cold_start_seconds"], where
    members = [judged.workloads[m] for m in pooled["members"]]
    # FRAMEWORK: the pool's cold start is the longest effective cold start of its members
    assert pooled["cold_start_seconds"] == max(m["cold_start_window_seconds"] for m in members), where
    own = doc["workloads"]
    for name, entry in own.items():
        facts = judged.workloads[name]
        if not entry.get("measured"):
            assert facts["baseline_gpus"] is None, f"{where}: {name}"
            continue
        assert entry["cold_start_seconds"] == facts["cold_start_window_seconds"], f"{where}: {name}"
        assert entry["bands_gpus"]["baseline"] == facts["baseline_gpus"], f"{where}: {name}"
        assert entry["bands_gpus"]["daily"] == facts["daily_gpus"], f"{where}: {name}"
        assert entry["bands_gpus"]["peak"] == facts["peak_gpus"], f"{where}: {name}"
    summed = doc.get("sum_of_workload_bands_gpus")
    if summed is not None:
        for band in ("baseline", "daily", "peak"):
            assert summed[band] == pool[f"{band}_gpus_sum"], f"{where}: sum of {band}"
    if len(pooled["members"]) == 1:
        # a pool of one workload is that workload, in every figure the two share
        (name,) = pooled["members"]
        facts = judged.workloads[name]
        for band in ("baseline", "daily", "peak"):
            assert pooled["bands_gpus"][band] == facts[f"{band}_gpus"], f"{where} = {name}: {band}"
        assert pooled["cold_start_seconds"] == facts["cold_start_window_seconds"], f"{where} = {name}"
        assert pooled["window_days"] == facts["window_days"], f"{where} = {name}"
        if summed is not None:
            assert summed["baseline"] == pooled["bands_gpus"]["baseline"], f"{where} = {name}: nothing pooled"
    return doc


# --------------------------------------------------------------------------- report --html


class _Data(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.items: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        data = {k[5:]: v or "" for k, v in attrs if k.startswith("data-")}
        if data:
            self.items.append((tag, data))


def _figure(text: str) -> int | None:
    return None if text == "" else int(text)


def _assert_report(repo: Path, judged: Judged, tmp: Path) -> None:
    target = tmp / "report.html"
    code, _out, err = run_cli(["report", "--html", str(target), "--no-cache", "--now", NOW, str(repo)])
    assert code in (0, 1), err
    parser = _Data()
    parser.feed(target.read_text(encoding="utf-8"))
    shown = [(tag, d) for tag, d in parser.items if "pool" in d and tag in ("tr", "section")]
    assert shown, "the page shows no pool"
    for _tag, d in shown:
        pool = judged.pools[d["pool"]]
        where = f"report, pool {d['pool']}"
        for attr, fact in (("reserved-gpus", "reserved_gpus"), ("elastic-gpus", "elastic_gpus"),
                           ("capacity-gpus", "capacity_gpus"), ("baseline-gpus", "baseline_gpus"),
                           ("daily-gpus", "daily_gpus"), ("peak-gpus", "peak_gpus")):
            assert _figure(d[attr]) == pool[fact], f"{where}: {attr}"
        assert int(d["capacity-gpus"]) == int(d["reserved-gpus"]) + int(d["elastic-gpus"]), where
    for tag, d in parser.items:
        if tag == "tr" and "workload" in d and "baseline-gpus" in d:
            assert _figure(d["baseline-gpus"]) == judged.workloads[d["workload"]]["baseline_gpus"], d["workload"]


# --------------------------------------------------------------------------- export kueue


_POOL_LINE = re.compile(r"^# Pool (\S+): ", re.M)
_OWN = re.compile(r"own (baselines|daily bands): ([^)]*)\)")


def _assert_export(repo: Path, judged: Judged) -> None:
    code, out, err = run_cli(["export", "kueue", str(repo), "--now", NOW])
    if code == 1 and not out:
        return  # a model with errors exports nothing (documented)
    assert code == 0, err
    for document in out.split("\n---\n"):
        if "kind: ClusterQueue" not in document:
            continue
        found = _POOL_LINE.search(document)
        assert found, document[:200]
        pool = judged.pools[found.group(1)]
        nominal = re.search(r"nominalQuota: (\d+)", document)
        borrowing = re.search(r"borrowingLimit: (\d+)", document)
        assert nominal, document
        where = f"export, pool {found.group(1)}"
        if "pooled baseline band, guaranteed" in document:
            assert int(nominal.group(1)) == pool["baseline_gpus"], where
            if borrowing is not None:
                assert int(borrowing.group(1)) == max(0, pool["daily_gpus"] - pool["baseline_gpus"]), where
            for kind, listed in _OWN.findall(document):
                fact = "baseline_gpus" if kind == "baselines" else "daily_gpus"
                parts = dict(p.rsplit(" ", 1) for p in listed.split(" = ")[0].split(" + "))
                for name, gpus in parts.items():
                    assert int(gpus) == judged.workloads[name][fact], f"{where}: {name} {fact}"
        elif "declared reserved GPUs" in document:
            assert int(nominal.group(1)) == pool["reserved_gpus"], where


# --------------------------------------------------------------------------- plan


def _assert_plan(repo: Path, judged: Judged) -> None:
    """Today's pools as check sees them; every planned pool's bands as bands computes them at its cold start."""
    code, out, err = run_cli(["plan", str(repo), "--format", "json"])
    if code == 2:
        return  # a repository the plan refuses (its errors are check's business)
    assert code in (0, 1), err
    document = json.loads(out)
    for current in document["comparison"]["current_pools"]:
        pool = judged.pools[current["pool"]]
        assert (current["reserved_gpus"], current["elastic_gpus"]) == (pool["reserved_gpus"], pool["elastic_gpus"])
    for planned in document["plan"]["pools"]:
        pooled = planned.get("pooled")
        if not planned.get("measured") or not pooled:
            continue
        where = f"plan, pool {planned['cluster']}/{planned['pool']}"
        summed = {"baseline": 0, "daily": 0, "peak": 0}
        windows = []
        for name in planned["workloads"]:
            workload = judged.model.workloads[name]
            args = _bands_args(workload)
            if args is None:
                break
            cli = _json(["bands", *args[:-1], repr(planned["cold_start_seconds"]),
                         *_gpu_args(workload, judged.workloads[name]["trace_unit"]), "--format", "json"])
            assert cli is not None, f"{where}: {name}"
            gpus = cli.get("bands_gpus") or {b: int(cli["bands"][b]) for b in summed}
            for band in summed:
                summed[band] += gpus[band]
            windows.append(cli["window_days"])
        else:
            # the sum of the members' own bands is taken at the planned pool's cold start
            assert pooled["sum_of_member_bands_gpus"] == summed, where
            if len(planned["workloads"]) == 1:
                # a planned pool of one workload is that workload at the pool's cold start
                assert {b: pooled[f"{b}_gpus"] for b in summed} == summed, where
                assert pooled["window_days"] == round(windows[0], 3), where
        assert planned["reserved_gpus"] == pooled["baseline_gpus"], where


# --------------------------------------------------------------------------- the harness


def assert_coherent(repo: Path, tmp: Path) -> Judged:
    """Every figure the commands share about ``repo`` is the same in each of them."""
    judged = _judged(repo)
    for name, facts in judged.workloads.items():
        _assert_workload(name, judged.model.workloads[name], facts)
    for qualified, pool in judged.pools.items():
        if pool["workload_count"]:
            _assert_pool(qualified, pool, judged)
    _assert_report(repo, judged, tmp)
    _assert_export(repo, judged)
    _assert_plan(repo, judged)
    return judged


@pytest.mark.parametrize("example", ["good", "bad", "kueue", "kueue-bad"])
def test_examples_are_coherent(example: str, tmp_path: Path) -> None:
    judged = assert_coherent(EXAMPLES / example, tmp_path)
    assert any(f["concurrency_measured"] for f in judged.workloads.values())


# --------------------------------------------------------------------------- generated plans

STEP = 300
END = 1_795_996_800  # 2026-12-01T00:00:00Z

CLUSTER = """apiVersion: policylint/v1
kind: Cluster
metadata: {{name: gen}}
spec:
  pools:
{pools}"""

POOL = """    - name: {name}
      gpu: {{model: H100-80GB, memoryGiB: 80}}
      reservedGpus: {reserved}
{elastic}      serves: [inference]
      overflow: queue
      queue: {{maxDepth: 1000, maxWaitSeconds: 600}}
"""

WORKLOAD = """---
apiVersion: policylint/v1
kind: Workload
metadata: {{name: {name}, team: platform}}
spec:
  class: inference
  cluster: gen
  pool: {pool}
  gpusPerReplica: {replicas}
  concurrency:
    trace: {{path: traces/{name}.csv{reading}}}
  perGpuConcurrency: {{value: {per_gpu}, measuredIn: production, source: "grafana: latency board, 2026-11"}}
{cold_start}  tolerance:
    maxQueueSeconds: 600
    evidence: {{url: "https://slo.example.com/{name}"}}
  vram: {{residentGiB: 20, residencySeconds: 86400, activeComputeSeconds: 60000}}
"""


def _trace(path: Path, days: int, seed: int) -> None:
    """A diurnal load with bursts, ``days`` long at five minutes (no day constant)."""
    rng = np.random.default_rng(seed)
    n = days * 86_400 // STEP
    times = END - STEP * np.arange(n)[::-1]
    hour = (times % 86_400) / 3600.0
    values = np.rint(50 - 30 * np.cos(2 * np.pi * (hour - seed % 24) / 24)).astype(np.int64)
    values += rng.integers(0, 4, size=n)
    for start in rng.choice(n - 12, size=6, replace=False):
        values[start : start + int(rng.integers(1, 12))] += int(rng.integers(10, 60))
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{t},{v}" for t, v in zip(times.tolist(), values.tolist(), strict=True)]
    path.write_text("timestamp,in_flight\n" + "\n".join(lines) + "\n", encoding="utf-8")


def _jobs(path: Path, days: int, seed: int) -> None:
    """A GPU job list: long jobs that hold their GPUs for days (constant, non-zero days), short ones
    that come and go, and one job still running at the export (no end)."""
    rng = np.random.default_rng(seed)
    start = END - days * 86_400
    rows = ["job,start,end,num_gpu", f"long,{start},{END},8", f"open,{start + 3600},,4"]
    for k in range(40):
        at = start + int(rng.integers(0, days * 86_400 // 2))  # the second half of the trace: long jobs only
        rows.append(f"short-{k},{at},{at + int(rng.integers(600, 14_400))},{int(rng.integers(1, 4))}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


workloads = st.lists(
    st.fixed_dictionaries(
        {
            "jobs": st.booleans(),
            "pool": st.integers(0, 1),
            "per_gpu": st.sampled_from([1, 4, 10, 2.5]),
            "replicas": st.integers(1, 2),
            "cold_start": st.none() | st.sampled_from([120, 600, 1200]),
            "days": st.sampled_from([3, 5]),
        }
    ),
    min_size=1,
    max_size=3,
)
pools = st.lists(
    st.fixed_dictionaries({"reserved": st.integers(0, 60), "elastic": st.none() | st.integers(0, 30),
                           "cold_start": st.sampled_from([300, 600, 900])}),
    min_size=2,
    max_size=2,
)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads=workloads, pools=pools, seed=st.integers(0, 2**16))
def test_generated_plans_are_coherent(workloads: list[dict[str, Any]], pools: list[dict[str, Any]], seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        (root / ".policylint.yaml").write_text(f'now: "{NOW}"\n', encoding="utf-8")
        blocks = []
        for i, p in enumerate(pools):
            elastic = "" if p["elastic"] is None else (
                f"      elastic: {{maxGpus: {p['elastic']}, kind: autoscale, coldStartSeconds: {p['cold_start']}}}\n"
            )
            blocks.append(POOL.format(name=f"p{i}", reserved=p["reserved"], elastic=elastic))
        text = CLUSTER.format(pools="".join(blocks))
        for i, w in enumerate(workloads):
            name = f"w{i}"
            if w["jobs"]:
                _jobs(root / "traces" / f"{name}.csv", w["days"], seed + i)
                reading = ", format: jobs, unit: gpus, stepSeconds: 300"
            else:
                _trace(root / "traces" / f"{name}.csv", w["days"], seed + i)
                reading = ""
            cold = "" if w["cold_start"] is None else f"  coldStartSeconds: {w['cold_start']}\n"
            text += WORKLOAD.format(name=name, pool=f"p{w['pool']}", replicas=w["replicas"], per_gpu=w["per_gpu"],
                                    cold_start=cold, reading=reading)
        (root / "plan.yaml").write_text(text, encoding="utf-8")
        judged = assert_coherent(root, Path(tmp))
        assert all(judged.workloads[f"w{i}"]["concurrency_measured"] for i in range(len(workloads)))
