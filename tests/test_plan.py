"""``policylint plan``: pools derived from the measurements, sized from their pooled bands, checked by check.

The plan of every example and of generated repositories passes ``check`` without a sizing
finding; the what-if options move the planned GPUs by the amounts worked out by hand
from the traces' shapes; the JSON output matches its published schema; the exported
manifests validate against the real Kueue and Volcano CRDs.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES, REPO, replace_once, run_cli
from policylint.model import load
from policylint.plan import SIZING_RULES
from test_export import validate_manifests

SCHEMA = json.loads((REPO / "schemas" / "plan.schema.json").read_text(encoding="utf-8"))
CLUSTER_SCHEMA = json.loads((REPO / "schemas" / "cluster.schema.json").read_text(encoding="utf-8"))

# --- generated repositories ------------------------------------------------------------------

#: 92 days of 5-minute samples ending 2026-11-30 (the examples' period)
STEP = 300
END = 1_796_083_200  # 2026-12-01T00:00:00Z
DAYS = 92


@dataclass(frozen=True)
class Spec:
    """One workload: ``level`` all day, ``level + burst`` for ``burst_minutes`` from ``burst_hour`` UTC."""

    name: str
    cls: str = "inference"
    level: int = 10
    burst: int = 10
    burst_hour: int = 14
    burst_minutes: int = 60
    per_gpu: int = 1
    replicas: int = 1
    cold_start: int = 3600
    tolerance: float = 0.5
    pool: str = "all"
    #: the latency objective the tolerance's evidence states (default: the tolerance plus the 1 s of service)
    objective: float | None = None


def trace(spec: Spec) -> np.ndarray:
    t = np.arange(END - DAYS * 86_400, END, STEP, dtype=np.int64)
    minute = (t % 86_400) // 60
    start = spec.burst_hour * 60
    busy = (minute >= start) & (minute < start + spec.burst_minutes)
    return np.stack([t, spec.level + spec.burst * busy.astype(np.int64)], axis=1)


def make_repo(dest: Path, specs: list[Spec], reserved: int = 100) -> Path:
    """A capacity repository: one cluster whose pools hold ``specs`` as placed, traces and all."""
    (dest / "clusters").mkdir(parents=True)
    (dest / "workloads").mkdir()
    (dest / "measurements").mkdir()
    (dest / ".policylint.yaml").write_text('now: "2026-12-01"\n', encoding="utf-8")
    pools = sorted({s.pool for s in specs})
    cluster = {
        "apiVersion": "policylint/v1",
        "kind": "Cluster",
        "metadata": {"name": "east"},
        "spec": {
            "pools": [
                {
                    "name": p,
                    "gpu": {"model": "H100-SXM-80GB", "memoryGiB": 80},
                    "reservedGpus": reserved,
                    "serves": sorted({s.cls for s in specs if s.pool == p}),
                }
                for p in pools
            ]
        },
    }
    (dest / "clusters" / "east.yaml").write_text(yaml.safe_dump(cluster, sort_keys=False), encoding="utf-8")
    for s in specs:
        rows = trace(s)
        lines = ["timestamp,in_flight"] + [f"{a},{b}" for a, b in rows.tolist()]
        (dest / "measurements" / f"{s.name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        spec: dict[str, Any] = {
            "class": s.cls,
            "cluster": "east",
            "pool": s.pool,
            "gpusPerReplica": s.replicas,
            "concurrency": {"trace": {"path": f"../measurements/{s.name}.csv", "columns": ["in_flight"]}},
            "perGpuConcurrency": {"value": s.per_gpu, "measuredIn": "production", "source": "load test in production"},
            "coldStartSeconds": s.cold_start,
            "tolerance": {
                "maxQueueSeconds": s.tolerance,
                "evidence": {"objectiveSeconds": s.tolerance + 1 if s.objective is None else s.objective, "serviceSeconds": 1},
            },
        }
        if s.cls == "inference":
            spec["vram"] = {"residentGiB": 10, "residencySeconds": 86400, "activeComputeSeconds": 60000}
        else:
            spec["durations"] = {"p50Seconds": 600, "p90Seconds": 900, "p99Seconds": 1200}
        doc = {"apiVersion": "policylint/v1", "kind": "Workload", "metadata": {"name": s.name}, "spec": spec}
        (dest / "workloads" / f"{s.name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return dest


def plan_json(repo: Path, *extra: str) -> dict[str, Any]:
    code, out, err = run_cli(["plan", str(repo), "--format", "json", *extra])
    assert code == 0, err
    assert "Traceback" not in err
    doc: dict[str, Any] = json.loads(out)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    return doc


def pool_of(doc: dict[str, Any], workload: str) -> dict[str, Any]:
    (pool,) = [p for p in doc["plan"]["pools"] if workload in p["workloads"]]
    return pool


def sizing_findings(repo: Path) -> list[dict[str, Any]]:
    """``check`` on ``repo``: its findings of the rules a plan answers for."""
    code, out, err = run_cli(["check", str(repo), "--format", "json", "--no-cache"])
    assert code in (0, 1), err
    return [f for f in json.loads(out)["findings"] if f["code"] in SIZING_RULES]


def declared_totals(repo: Path) -> dict[str, int]:
    """Reserved, elastic and proposed GPUs as the repository's Cluster and Proposal documents declare them."""
    reserved = elastic = proposed = 0
    pools: set[tuple[str, str]] = set()
    proposals = []
    for path in sorted(repo.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not isinstance(doc, dict) or doc.get("apiVersion") != "policylint/v1":
                continue
            if doc["kind"] == "Cluster":
                for p in doc["spec"]["pools"]:
                    pools.add((doc["metadata"]["name"], p["name"]))
                    reserved += p.get("reservedGpus", 0)
                    elastic += (p.get("elastic") or {}).get("maxGpus", 0)
            elif doc["kind"] == "Proposal":
                proposals.append(doc["spec"])
    for spec in proposals:
        proposed += sum(r["gpus"] for r in spec["requests"] if (spec["cluster"], r["pool"]) in pools)
    return {"reserved_gpus": reserved, "elastic_gpus": elastic, "proposed_gpus": proposed,
            "total_gpus": reserved + elastic + proposed}


# --- the bundled examples --------------------------------------------------------------------


@pytest.fixture(scope="module")
def bad_plan(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("bad-plan")
    doc = plan_json(
        EXAMPLES / "bad",
        "--repository", str(out / "planned"),
        "--output", str(out / "clusters.yaml"),
        "--kueue", str(out / "kueue.yaml"),
        "--volcano", str(out / "volcano.yaml"),
    )  # fmt: skip
    return doc, out


def test_bad_plan_passes_check_and_states_its_savings(bad_plan: tuple[dict[str, Any], Path]) -> None:
    doc, out = bad_plan
    assert doc["check"]["passes"] and doc["check"]["sizing_findings"] == []
    assert sizing_findings(out / "planned") == []
    total = doc["comparison"]["total"]
    assert total["today"] == declared_totals(EXAMPLES / "bad")
    assert total["planned"]["total_gpus"] < total["today"]["total_gpus"]
    assert total["saves"]["total_gpus"] == total["today"]["total_gpus"] - total["planned"]["total_gpus"]
    # the workloads without measured GPU demand are named, not silently sized at zero
    assert doc["comparison"]["unmeasured_workloads"] == ["code-completion", "query-rewrite", "safety-filter"]


def test_bad_plan_separates_what_the_framework_separates(bad_plan: tuple[dict[str, Any], Path]) -> None:
    doc, _ = bad_plan
    pools = doc["plan"]["pools"]
    # training and inference of the old shared pool go apart; the batch eval leaves the inference pool
    assert pool_of(doc, "pre-training")["class"] == "training"
    assert pool_of(doc, "chat-assistant")["class"] == "inference"
    assert pool_of(doc, "nightly-eval")["class"] == "batch"
    assert pool_of(doc, "nightly-eval")["scheduling"]["gang"] is True
    # pre-training's p99 job runs more than 20 x its median: preemption protects the tail (PL601)
    assert pool_of(doc, "pre-training")["scheduling"]["preemption"] is True
    for p in pools:
        assert set(p["derivation"]) >= {"reservedGpus", "queue.maxDepth", "queue.maxWaitSeconds"}
    # translate and translate-eu (and chat-assistant and the reranker) cite one trace: pooled, it would count twice
    assert pool_of(doc, "translate")["pool"] != pool_of(doc, "translate-eu")["pool"]
    assert pool_of(doc, "chat-assistant")["pool"] != pool_of(doc, "reranker")["pool"]
    # apart, each pool buys that demand (PL972 in the planned repository): PL111 is not resolved by the split
    serving = next(c for c in doc["comparison"]["current_pools"] if c["pool"] == "prod-west/serving")
    assert "PL111" not in {f["code"] for f in serving["resolves"]} and "PL112" in {f["code"] for f in serving["resolves"]}
    # the standby pool nobody measured gets nothing, and its proposal is resolved
    standby = next(c for c in doc["comparison"]["current_pools"] if c["pool"] == "prod-west/standby")
    assert standby["planned_in"] == [] and {f["code"] for f in standby["resolves"]} == {"PL110", "PL803"}
    shared = next(c for c in doc["comparison"]["current_pools"] if c["pool"] == "prod-east/shared")
    assert {"PL101", "PL102", "PL401", "PL801"} <= {f["code"] for f in shared["resolves"]}


def test_every_sized_number_carries_its_derivation(bad_plan: tuple[dict[str, Any], Path]) -> None:
    doc, _ = bad_plan
    for p in doc["plan"]["pools"]:
        if not p["measured"]:
            assert p["reserved_gpus"] == p["elastic_gpus"] == 0
            continue
        d = p["derivation"]
        assert d["reservedGpus"]["value"] == p["reserved_gpus"] == p["pooled"]["baseline_gpus"]
        assert d["reservedGpus"]["band"] == "baseline" and ", ".join(p["workloads"]) in d["reservedGpus"]["measurement"]
        assert d["elastic.maxGpus"]["value"] == p["elastic_gpus"]
        assert p["capacity_gpus"] <= p["pooled"]["daily_gpus"]
        if p["overflow"] == "reject":
            assert p["capacity_gpus"] == p["pooled"]["daily_gpus"]  # PL205: a rejecting pool reaches its daily band


def test_planned_clusters_are_valid_cluster_documents(bad_plan: tuple[dict[str, Any], Path]) -> None:
    _, out = bad_plan
    docs = list(yaml.safe_load_all((out / "clusters.yaml").read_text(encoding="utf-8")))
    assert docs and all(d["kind"] == "Cluster" for d in docs)
    for d in docs:
        jsonschema.Draft202012Validator(CLUSTER_SCHEMA).validate(d)
    assert (out / "clusters.yaml").read_text(encoding="utf-8") == (out / "planned" / "planned-clusters.yaml").read_text(
        encoding="utf-8"
    )
    # the planned repository holds no proposal and no old cluster
    code, out_json, _ = run_cli(["check", str(out / "planned"), "--format", "json", "--no-cache"])
    assert not any("proposals/" in f["file"] or "clusters/" in f["file"] for f in json.loads(out_json)["findings"])


@pytest.mark.parametrize("scheduler", ["kueue", "volcano"])
def test_exported_manifests_validate_against_the_crds(bad_plan: tuple[dict[str, Any], Path], scheduler: str) -> None:
    doc, out = bad_plan
    manifests = validate_manifests((out / f"{scheduler}.yaml").read_text(encoding="utf-8"))
    kind = "ClusterQueue" if scheduler == "kueue" else "Queue"
    queues = [m for m in manifests if m["kind"] == kind]
    if scheduler == "volcano":  # one parent queue per cluster above the pools' queues
        queues = [q for q in queues if q["spec"].get("parent")]
    assert len(queues) == len(doc["plan"]["pools"])


@pytest.mark.parametrize("example", ["good", "kueue", "kueue-bad"])
def test_example_plans_pass_check(tmp_path: Path, example: str) -> None:
    doc = plan_json(EXAMPLES / example, "--repository", str(tmp_path / "planned"))
    assert doc["check"]["passes"]
    assert sizing_findings(tmp_path / "planned") == []


# --- what-if options, with hand-computed expectations ----------------------------------------
#
# One workload, level 10 all day and 20 from 14:00 to 15:00 UTC (12 samples of 300 s), one
# request per GPU. With a 3600 s cold start the hour-long burst survives the trailing minimum
# for one sample a day (0.35% of the time, under the 1% above the daily band's p99): the
# bands are 10/10. With a 600 s cold start it survives 11 samples a day (3.8%): daily band 20.


def test_faster_cold_start_pays_for_elastic_capacity(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", [Spec("chat", cold_start=3600, tolerance=0.5)])
    before = pool_of(plan_json(repo), "chat")
    assert (before["reserved_gpus"], before["elastic_gpus"]) == (10, 0)
    after = pool_of(plan_json(repo, "--cold-start", "600"), "chat")
    # real-time (rejects overflow): capacity = daily band 20, reserved = baseline 10
    assert (after["reserved_gpus"], after["elastic_gpus"]) == (10, 10)
    assert after["cold_start_seconds"] == 600
    assert after["derivation"]["elastic.coldStartSeconds"]["value"] == 600


@pytest.mark.parametrize(
    ("tolerance", "capacity"),
    [
        # capacity C holds the burst's backlog (20 - C) x 3600 GPU-seconds; it waits backlog / C
        # at C = 10 the backlog never drains (demand stays at 10) and grows every day: C = 11 drains
        # its (20 - 11) x 3600 = 32400 GPU-seconds in 9 hours and waits at most 32400 / 11 = 2945 s
        (7200, 11),
        (1800, 14),  # C = 13 waits 25200 / 13 = 1938 s; C = 14 waits 21600 / 14 = 1543 s
        (600, 18),  # C = 17 waits 10588 / 17 = 635 s; C = 18 waits 7200 / 18 = 400 s
    ],
)
def test_relaxed_tolerance_is_worth_gpus(tmp_path: Path, tolerance: float, capacity: int) -> None:
    # the latency objective leaves two hours of queueing: every tolerance below is one the evidence allows (PL305)
    repo = make_repo(tmp_path / "r", [Spec("embed", cls="batch", cold_start=600, tolerance=300, objective=7201)])
    # the framework's sizing: elastic = daily band (20) - baseline (10), whatever the tolerance;
    # what queueing to the tolerance would save is stated, not applied
    plain = pool_of(plan_json(repo), "embed")
    assert (plain["reserved_gpus"], plain["capacity_gpus"]) == (10, 20)
    elastic = plain["derivation"]["elastic.maxGpus"]
    # 300 s: C = 18 waits 7200 / 18 = 400 s, C = 19 waits 3600 / 19 = 189 s
    assert (elastic["sized_by"], elastic["tolerance_capacity_gpus"], elastic["queueing_saves_gpus"]) == ("daily band", 19, 1)
    assert "queueing would save 1 GPUs" in elastic["rule"] and "--size-queues-by-tolerance" in elastic["rule"]
    relaxed = pool_of(plan_json(repo, "--tolerance", f"embed={tolerance:g}"), "embed")
    assert (relaxed["reserved_gpus"], relaxed["capacity_gpus"]) == (10, 20)
    assert relaxed["derivation"]["elastic.maxGpus"]["queueing_saves_gpus"] == 20 - capacity
    assert relaxed["queue"]["max_wait_seconds"] == tolerance
    # --size-queues-by-tolerance applies it
    strict = pool_of(plan_json(repo, "--size-queues-by-tolerance"), "embed")
    assert (strict["reserved_gpus"], strict["capacity_gpus"]) == (10, 19)
    assert strict["derivation"]["elastic.maxGpus"]["sized_by"] == "tolerance"
    sized = pool_of(
        plan_json(repo, "--tolerance", f"embed={tolerance:g}", "--size-queues-by-tolerance", "--repository", str(tmp_path / "p")),
        "embed",
    )
    assert (sized["reserved_gpus"], sized["capacity_gpus"]) == (10, capacity)
    assert sized["derivation"]["elastic.maxGpus"]["queueing_saves_gpus"] == 20 - capacity
    assert sizing_findings(tmp_path / "p") == []


def test_queueing_figure_is_in_every_format(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", [Spec("embed", cls="batch", cold_start=600, tolerance=300)])
    code, out, _ = run_cli(["plan", str(repo)])
    assert code == 0
    out = " ".join(out.split())  # the text is folded to 100 columns
    assert "queueing would save 1 GPUs" in out
    assert "queueing to the tolerances would save 1 GPUs in all (not applied; --size-queues-by-tolerance applies it)" in out
    code, out, _ = run_cli(["plan", str(repo), "--format", "markdown"])
    assert code == 0 and "Queueing to the tolerances would save 1 GPUs in all" in out
    code, out, _ = run_cli(["plan", str(repo), "--size-queues-by-tolerance"])
    out = " ".join(out.split())
    assert code == 0 and "least capacity at which daily-band demand waits at most 300 s" in out
    assert "queueing to the tolerances" not in out


def test_headroom_adds_the_share_the_bands_say(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", [Spec("chat", cold_start=600, tolerance=0.5)])
    plain = pool_of(plan_json(repo), "chat")
    assert (plain["reserved_gpus"], plain["capacity_gpus"]) == (10, 20)
    padded = pool_of(plan_json(repo, "--headroom", "0.1", "--repository", str(tmp_path / "p")), "chat")
    # floor(10 x 1.1) = 11 reserved, floor(20 x 1.1) = 22 in all
    assert (padded["reserved_gpus"], padded["capacity_gpus"]) == (11, 22)
    assert sizing_findings(tmp_path / "p") == []


def test_workloads_that_peak_apart_are_pooled(tmp_path: Path) -> None:
    # half-hour bursts at 02:00 and at 14:00, each sustained for 5 samples a day (1.7%): alone,
    # baseline 10 and daily 20 each; together 10 samples a day (3.5%) at 30: baseline 20, daily 30
    specs = [Spec("day", burst_hour=14, burst_minutes=30, cold_start=600),
             Spec("night", burst_hour=2, burst_minutes=30, cold_start=600)]
    doc = plan_json(make_repo(tmp_path / "r", specs, reserved=60), "--repository", str(tmp_path / "p"))
    pool = pool_of(doc, "day")
    assert pool["workloads"] == ["day", "night"]
    assert (pool["reserved_gpus"], pool["capacity_gpus"]) == (20, 30)
    assert pool["apart"] == {"reserved": 20, "capacity": 40}
    assert pool["pooling_saves_gpus"] == 10
    assert "pooled" in pool["reasons"]["day"]
    assert sizing_findings(tmp_path / "p") == []


def test_a_workload_left_alone_is_told_why(tmp_path: Path, bad_plan: tuple[dict[str, Any], Path]) -> None:
    doc, _ = bad_plan
    # the copies name each other and say what the split costs
    why = pool_of(doc, "translate-eu")["reasons"]["translate-eu"]
    assert "cites the same measurement as translate (PL111)" in why and "apart each pool buys it" in why
    assert "cites the same measurement as translate-eu (PL111)" in pool_of(doc, "translate")["reasons"]["translate"]
    # a trace that covers too little of another's window names that workload and PL112's window
    assert "its trace overlaps the trace of summarise for less than 90 days (PL112)" in why
    # two workloads peaking together save nothing pooled; one alone in its group is the only one
    specs = [Spec("first", cold_start=600), Spec("second", burst_minutes=90, cold_start=600),
             Spec("batchy", cls="batch", tolerance=3600, cold_start=600)]
    got = plan_json(make_repo(tmp_path / "r", specs, reserved=80), "--repository", str(tmp_path / "p"))
    for name in ("first", "second"):
        assert pool_of(got, name)["workloads"] == [name]
        assert pool_of(got, name)["reasons"][name].endswith(
            "alone: pooled with any other workload of its group it would save no GPUs")
    assert pool_of(got, "batchy")["reasons"]["batchy"].endswith("alone: the only measured workload of its group")


def test_classes_and_tiers_never_share_a_pool(tmp_path: Path) -> None:
    specs = [
        Spec("chat", cls="inference", tolerance=0.5),
        Spec("eval", cls="batch", tolerance=3600, burst_hour=2),
        Spec("train", cls="training", tolerance=3600, replicas=8, per_gpu=1, burst_hour=6),
        Spec("search", cls="inference", tolerance=600, burst_hour=20),
    ]
    doc = plan_json(make_repo(tmp_path / "r", specs), "--repository", str(tmp_path / "p"))
    assert len({pool_of(doc, s.name)["pool"] for s in specs}) == 4
    assert pool_of(doc, "train")["scheduling"]["gang"] is True
    assert pool_of(doc, "chat")["overflow"] == "reject" and pool_of(doc, "search")["overflow"] == "queue"
    assert sizing_findings(tmp_path / "p") == []


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["inference", "batch", "training"]),
            st.integers(1, 30),  # level
            st.integers(1, 30),  # burst
            st.integers(0, 23),  # burst hour
            st.sampled_from([15, 60, 180]),  # burst minutes
            st.sampled_from([1, 4]),  # per GPU
            st.sampled_from([1, 2]),  # GPUs per replica
            st.sampled_from([600, 1800]),  # cold start
            st.sampled_from([0.5, 30, 900, 7200]),  # tolerance
            st.sampled_from(["a", "b"]),  # today's pool
        ),
        min_size=1,
        max_size=3,
    ),
    st.booleans(),  # --size-queues-by-tolerance
)
def test_every_generated_plan_passes_check(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[Any, ...]], by_tolerance: bool
) -> None:
    specs = [
        Spec(f"w{i}", cls=c, level=lv, burst=b, burst_hour=h, burst_minutes=m, per_gpu=g, replicas=r, cold_start=cs,
             tolerance=t, pool=p)
        for i, (c, lv, b, h, m, g, r, cs, t, p) in enumerate(rows)
    ]
    base = tmp_path_factory.mktemp("gen")
    repo = make_repo(base / "r", specs)
    doc = plan_json(repo, "--repository", str(base / "p"), *(["--size-queues-by-tolerance"] if by_tolerance else []))
    assert doc["check"]["passes"]
    assert sizing_findings(base / "p") == []
    for p in doc["plan"]["pools"]:
        assert p["reserved_gpus"] == p["pooled"]["baseline_gpus"]
        assert p["reserved_gpus"] <= p["capacity_gpus"] <= p["pooled"]["daily_gpus"]
        if not by_tolerance:  # the framework's elastic band: daily band minus baseline
            assert p["capacity_gpus"] == p["pooled"]["daily_gpus"]


# --- formats, determinism and bad input ------------------------------------------------------


def test_text_and_markdown_are_deterministic() -> None:
    runs = [run_cli(["plan", str(EXAMPLES / "good"), "--format", fmt]) for fmt in ("text", "markdown", "text")]
    assert all(code == 0 for code, _, _ in runs)
    assert runs[0][1] == runs[2][1]
    assert runs[0][1].startswith("Capacity plan for ")
    assert "check on the planned repository: no finding the plan answers for" in runs[0][1]
    assert runs[1][1].startswith("## policylint plan\n")
    assert "| planned pool |" in runs[1][1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tolerance", "chat"], "expected WORKLOAD=SECONDS"),
        (["--tolerance", "chat=soon"], "with a number of seconds"),
        (["--tolerance", "nobody=5"], "--tolerance names no workload of the repository: nobody"),
        (["--cold-start", "0"], "expected a positive number of seconds"),
        (["--cold-start", "nan"], "expected a positive number of seconds"),
        # newcomer trial: 1e9 made every workload unmeasured and the plan 'saved' all of today's GPUs
        (["--cold-start", "1e9"], "--cold-start 1e+09: not shorter than the 90-day measurement window"),
        (["--cold-start", "7776000"], "not shorter than the 90-day measurement window"),
        (["--headroom", "-1"], "expected a fraction of at least 0"),
        (["--headroom", "0.5"], "--headroom 0.5 is outside 0..0.15"),
        (["--format", "yaml"], "invalid choice"),
    ],
)
def test_bad_input_is_one_usage_error(args: list[str], message: str) -> None:
    code, out, err = run_cli(["plan", str(EXAMPLES / "good"), *args])
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if "error" in line]) == 1


def test_missing_path_and_occupied_repository_folder(tmp_path: Path) -> None:
    code, _, err = run_cli(["plan", str(tmp_path / "nowhere")])
    assert code == 2 and "path not found" in err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("", encoding="utf-8")
    code, _, err = run_cli(["plan", str(EXAMPLES / "good"), "--repository", str(tmp_path / "full")])
    assert code == 2 and "exists and is not an empty folder" in err
    assert (tmp_path / "full" / "x").exists()


def test_the_planned_copy_is_never_written_inside_the_repository(tmp_path: Path) -> None:
    """Newcomer trial: `plan bad --repository bad/x` was accepted, and every later run of the
    repository read each document twice (PL021). It is refused, and nothing is written."""
    repo = tmp_path / "good"
    shutil.copytree(EXAMPLES / "good", repo)
    before = sorted(p.relative_to(repo) for p in repo.rglob("*"))
    for inside in (repo / "planned", repo / "workloads" / "new"):
        code, out, err = run_cli(["plan", str(repo), "--repository", str(inside)])
        assert (code, out) == (2, "") and "lies inside the repository it plans" in err, inside
    assert run_cli(["plan", str(repo), "--repository", str(repo)])[0] == 2
    assert sorted(p.relative_to(repo) for p in repo.rglob("*")) == before
    assert run_cli(["check", str(repo)])[0] == 0


def test_a_replaced_document_with_an_error_is_named_not_dropped(tmp_path: Path) -> None:
    """The plan replaces proposals and clusters, so one with an error does not stop it; but it is
    today's, and missing from today's figures: the run says which (newcomer trial: it said nothing)."""
    repo = tmp_path / "good"
    shutil.copytree(EXAMPLES / "good", repo)
    proposal = repo / "proposals" / "2027-q1-serving.yaml"
    replace_once(proposal, "pool: serving", "pool: nosuchpool")
    code, out, err = run_cli(["plan", str(repo)])
    assert code == 0 and "proposed 0 =" in out
    assert err == (
        f"policylint: plan: not in today's figures: {load.display_path(proposal)}:13:7: PL020 cluster 'prod-east'"
        " has no pool 'nosuchpool' (known: batch, serving)\n"
    )
    assert run_cli(["plan", str(EXAMPLES / "good")])[2] == ""


def test_a_repository_with_model_errors_gets_no_plan(tmp_path: Path) -> None:
    repo = tmp_path / "good"
    shutil.copytree(EXAMPLES / "good", repo)
    path = repo / "workloads" / "product-ai.yaml"
    text = path.read_text(encoding="utf-8")
    assert "gpusPerReplica: 1" in text
    path.write_text(text.replace("gpusPerReplica: 1", "gpusPerReplica: many", 1), encoding="utf-8")
    code, out, err = run_cli(["plan", str(repo)])
    assert code == 1 and out == ""
    assert "no plan" in err and "PL010" in err


def test_a_placement_the_plan_replaces_is_no_model_error(tmp_path: Path) -> None:
    repo = tmp_path / "good"
    shutil.copytree(EXAMPLES / "good", repo)
    path = repo / "workloads" / "product-ai.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("pool: serving", "pool: nowhere", 1), encoding="utf-8")
    code, out, err = run_cli(["plan", str(repo), "--gpu", "H200-SXM-141GB=141"])
    assert code == 0, err


def test_exported_quotas_are_the_planned_numbers(tmp_path: Path) -> None:
    doc = plan_json(EXAMPLES / "kueue", "--kueue", str(tmp_path / "k.yaml"), "--headroom", "0.1")
    manifests = validate_manifests((tmp_path / "k.yaml").read_text(encoding="utf-8"))
    quotas = {
        m["metadata"]["name"]: r
        for m in manifests
        if m["kind"] == "ClusterQueue"
        for g in m["spec"]["resourceGroups"]
        for f in g["flavors"]
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu"
    }
    for p in doc["plan"]["pools"]:
        assert quotas[p["pool"]]["nominalQuota"] == p["reserved_gpus"]
        assert quotas[p["pool"]].get("borrowingLimit", 0) == p["elastic_gpus"]
    text = (tmp_path / "k.yaml").read_text(encoding="utf-8")
    assert "# planned reserved GPUs: reserved = pooled baseline band" in text  # headroom: not the band alone


def test_docs_excerpt_is_the_real_output() -> None:
    """The text excerpts in docs/plan.md are what `policylint plan examples/bad` prints, line for line."""
    import re

    text = (REPO / "docs" / "plan.md").read_text(encoding="utf-8")
    excerpts = re.findall(r"```text\n(.*?)```", text, re.S)
    assert len(excerpts) == 2
    code, out, _ = run_cli(["plan", "examples/bad"], cwd=REPO)
    assert code == 0
    lines = out.splitlines()
    for excerpt in excerpts:
        for line in excerpt.splitlines():
            if line.strip() and line.strip() != "...":
                assert line in lines, line


def test_findings_the_plan_does_not_answer_are_counted_not_dropped() -> None:
    """Newcomer trial: a short trace's PL106 was only in the JSON; the text and Markdown now count
    every finding of the planned repository that is not the plan's to answer, by code."""
    code, out, _ = run_cli(["plan", "examples/bad", "--format", "json"], cwd=REPO)
    other = json.loads(out)["check"]["other_findings_by_code"]
    assert code == 0 and other["PL106"] == 3 and other["PL120"] == 1
    listed = ", ".join(f"{c} x{n}" if n > 1 else c for c, n in other.items())
    line = (
        f"not answered by the plan: {sum(other.values())} other findings on the planned repository ({listed});"
        " the plan is sized from the same measurements - `policylint check` shows them"
    )
    # the text folds it to the terminal's 100 columns: the same words, last
    assert " ".join(run_cli(["plan", "examples/bad"], cwd=REPO)[1].split()).endswith(line)
    assert run_cli(["plan", "examples/bad", "--format", "markdown"], cwd=REPO)[1].splitlines()[-1] == "N" + line[1:] + "."
    code, out, _ = run_cli(["plan", "examples/good"], cwd=REPO)
    assert code == 0 and "not answered by the plan" not in out


def test_a_trace_shorter_than_its_cold_start_gets_no_gpus(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", [Spec("chat", cold_start=600), Spec("brief", cold_start=3600, burst_hour=3)])
    # brief's trace: two samples, far less than one cold start
    (repo / "measurements" / "brief.csv").write_text(f"timestamp,in_flight\n{END - 600},5\n{END - 300},6\n", encoding="utf-8")
    code, out, err = run_cli(["plan", str(repo), "--format", "json"])
    assert code == 0, err
    doc = json.loads(out)
    brief = pool_of(doc, "brief")
    assert not brief["measured"] and brief["reserved_gpus"] == 0
    assert doc["comparison"]["unmeasured_workloads"] == ["brief"]
    assert pool_of(doc, "chat")["measured"]


def test_docs_name_every_rule_the_plan_answers_for() -> None:
    import re

    text = (REPO / "docs" / "plan.md").read_text(encoding="utf-8")
    (selected,) = re.findall(r"policylint check planned --select (\S+)", text)
    assert selected.split(",") == sorted(SIZING_RULES)


def test_clusters_are_optional_input(tmp_path: Path) -> None:
    """Workloads alone: placed on the GPU type given, in the clusters they name or the one given."""
    repo = tmp_path / "workloads-only"
    make_repo(repo, [Spec("chat", cold_start=600), Spec("eval", cls="batch", tolerance=3600, burst_hour=2)])
    shutil.rmtree(repo / "clusters")
    for path in (repo / "workloads").glob("*.yaml"):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        del doc["spec"]["pool"]
        if doc["metadata"]["name"] == "eval":
            del doc["spec"]["cluster"]  # names no cluster: goes to --cluster
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    code, out, err = run_cli(["plan", str(repo)])
    assert (code, out) == (2, "")
    assert "no workload of" in err and "--gpu MODEL=GIB" in err
    doc = plan_json(repo, "--gpu", "H100-SXM-80GB=80", "--cluster", "west", "--repository", str(tmp_path / "p"))
    assert pool_of(doc, "chat")["cluster"] == "east" and pool_of(doc, "eval")["cluster"] == "west"
    assert pool_of(doc, "chat")["gpu"] == {"model": "H100-SXM-80GB", "memoryGiB": 80}
    assert doc["comparison"]["total"]["today"]["total_gpus"] == 0
    assert sizing_findings(tmp_path / "p") == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpu", "H100"], "expected MODEL=GIB"),
        (["--gpu", "H100=0"], "expected a positive memory in GiB"),
        (["--cluster", "East Side"], "expected a cluster name"),
    ],
)
def test_bad_placement_options(args: list[str], message: str) -> None:
    code, out, err = run_cli(["plan", str(EXAMPLES / "good"), *args])
    assert (code, out) == (2, "") and message in err


def test_thresholds_come_from_the_configured_rules(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", [Spec("chat", tolerance=2, cold_start=600)])
    assert pool_of(plan_json(repo), "chat")["tier"] == "realtime"
    (repo / ".policylint.yaml").write_text(
        'now: "2026-12-01"\nrules:\n  PL306: {realtime_seconds: 1}\n  PL101: {headroom: 0.05}\n', encoding="utf-8"
    )
    doc = plan_json(repo, "--repository", str(tmp_path / "p"))
    chat = pool_of(doc, "chat")
    assert (chat["tier"], chat["overflow"]) == ("interactive", "queue")
    assert doc["plan"]["thresholds"]["realtime_seconds"] == 1
    assert doc["plan"]["thresholds"]["allowed_headroom"] == 0.05
    assert sizing_findings(tmp_path / "p") == []
    code, _, err = run_cli(["plan", str(repo), "--headroom", "0.1"])
    assert code == 2 and "outside 0..0.05" in err


def test_a_workload_the_plan_cannot_place_is_listed_not_fatal(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", [Spec("chat", cold_start=600), Spec("lost", cold_start=600, burst_hour=3)])
    path = repo / "workloads" / "lost.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    del doc["spec"]["pool"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    code, out, err = run_cli(["plan", str(repo), "--format", "json"])
    assert code == 0, err
    result = json.loads(out)
    assert result["check"]["passes"]
    assert list(result["plan"]["unplaced"]) == ["lost"] and "--gpu" in result["plan"]["unplaced"]["lost"]
    assert result["comparison"]["unplaced_workloads"] == ["lost"]


def test_the_planned_repository_keeps_the_workloads_comments(bad_plan: tuple[dict[str, Any], Path]) -> None:
    doc, out = bad_plan
    planned = (out / "planned" / "workloads" / "serving.yaml").read_text(encoding="utf-8")
    original = (EXAMPLES / "bad" / "workloads" / "serving.yaml").read_text(encoding="utf-8")
    # only the pool names change: every other line, comments included, is as it was
    changed = [(a, b) for a, b in zip(original.splitlines(), planned.splitlines(), strict=True) if a != b]
    assert changed and all(a.strip().startswith("pool:") and b.strip().startswith("pool:") for a, b in changed)
    assert f"pool: {pool_of(doc, 'chat-assistant')['pool']}  # inference placed" in planned
    assert not (out / "planned" / "clusters").exists() and not (out / "planned" / "proposals").exists()
    # a file that also holds a Cluster is written again without it
    pulled = list(yaml.safe_load_all((out / "planned" / "workloads" / "pulled.yaml").read_text(encoding="utf-8")))
    assert [d["kind"] for d in pulled] == ["Workload"]


def test_the_plan_of_a_planned_repository_is_the_same_plan(tmp_path: Path) -> None:
    first = plan_json(EXAMPLES / "good", "--repository", str(tmp_path / "planned"))
    again = plan_json(tmp_path / "planned")
    assert again["plan"]["pools"] == first["plan"]["pools"]
    assert again["comparison"]["total"]["saves"] == {"reserved_gpus": 0, "total_gpus": 0}
    assert all(c["resolves"] == [] for c in again["comparison"]["current_pools"])


def test_a_copied_trace_moved_in_time_is_never_pooled_with_its_original(tmp_path: Path) -> None:
    """The planner's double-count guard judges content, as PL111 does, not file names.

    ``night`` cites ``day``'s samples, value for value, with every timestamp moved
    twelve hours earlier, under its own file name: its burst lands at 02:00, so
    pooling it with ``day`` would look like a saving. It is the same demand counted
    twice, and the planned repository would fail ``check`` with PL111.
    """
    specs = [Spec("day", burst_hour=14, burst_minutes=30, cold_start=600),
             Spec("night", burst_hour=2, burst_minutes=30, cold_start=600)]
    repo = make_repo(tmp_path / "r", specs, reserved=60)
    rows = trace(specs[0])
    rows[:, 0] -= 12 * 3600
    lines = ["timestamp,in_flight"] + [f"{a},{b}" for a, b in rows.tolist()]
    (repo / "measurements" / "night.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    doc = plan_json(repo, "--repository", str(tmp_path / "p"))
    assert pool_of(doc, "day") != pool_of(doc, "night")
    code, out, err = run_cli(["check", str(tmp_path / "p"), "--format", "json", "--no-cache"])
    assert code in (0, 1), err
    assert [f["message"] for f in json.loads(out)["findings"] if f["code"] == "PL111"] == []


def test_a_double_count_the_plan_splits_apart_is_not_resolved(tmp_path: Path) -> None:
    """Two workloads of one pool citing one file (PL111) are never pooled together by the plan.

    Apart, each pool buys that demand: the planned repository reports the second citation
    (PL972, one file cited from two pools without a share), and the comparison does not
    count PL111 among what the plan resolves.
    """
    specs = [Spec("day", burst_hour=14, burst_minutes=30, cold_start=600),
             Spec("mirror", burst_hour=14, burst_minutes=30, cold_start=600)]
    repo = make_repo(tmp_path / "r", specs, reserved=60)
    text = (repo / "workloads" / "mirror.yaml").read_text(encoding="utf-8")
    (repo / "workloads" / "mirror.yaml").write_text(text.replace("measurements/mirror.csv", "measurements/day.csv"),
                                                   encoding="utf-8")
    code, out, _ = run_cli(["check", str(repo), "--format", "json", "--no-cache"])
    assert [f["subject"] for f in json.loads(out)["findings"] if f["code"] == "PL111"] == ["workload mirror"]
    doc = plan_json(repo, "--repository", str(tmp_path / "p"))
    assert pool_of(doc, "day") != pool_of(doc, "mirror")
    code, out, err = run_cli(["check", str(tmp_path / "p"), "--format", "json", "--no-cache"])
    planned = json.loads(out)["findings"]
    assert [f["subject"] for f in planned if f["code"] == "PL972"] == ["workload mirror"]
    resolved = [r["code"] for c in doc["comparison"]["current_pools"] for r in c["resolves"]]
    assert "PL111" not in resolved


@pytest.mark.parametrize("example", ["good", "bad", "kueue", "kueue-bad"])
def test_the_text_plan_fits_a_terminal(example: str) -> None:
    # derivations, headlines and lists of pools are folded to 100 columns; only a single name
    # longer than the room left (a generated pool name) may carry a line past it
    from policylint.commands.plan import WIDTH

    code, out, err = run_cli(["plan", str(EXAMPLES / example), "--now", "2026-12-01"])
    assert code in (0, 1), err
    lines = out.splitlines()
    assert len(lines) > 20
    for line in lines:
        if len(line) > WIDTH and not line.startswith("total today: "):  # the totals stay one line
            assert max(map(len, line.split())) >= 40, line
    # nothing is lost to the folding: every derivation word is still there, in order
    code, doc, _ = run_cli(["plan", str(EXAMPLES / example), "--now", "2026-12-01", "--format", "json"])
    words = " ".join(out.split())
    for pool in json.loads(doc)["plan"]["pools"]:
        for derivation in pool["derivation"].values():
            why = derivation.get("why") if isinstance(derivation, dict) else None
            if isinstance(why, str):
                assert " ".join(why.split()) in words


# --- the plan answers for what it set ----------------------------------------------------------


def _check_json(repo: Path) -> tuple[int, list[dict[str, Any]]]:
    code, out, err = run_cli(["check", str(repo), "--format", "json", "--no-cache"])
    assert code in (0, 1), err
    return code, json.loads(out)["findings"]


def test_a_cold_start_the_traces_cannot_show_fails_the_plan(tmp_path: Path) -> None:
    """Red team, round 6: ``--cold-start 60`` on five-minute traces planned a repository that
    ``check`` rejects (PL121, PL965), while ``plan`` said "no sizing finding" and exited 0.

    The plan set that cold start: both findings are the plan's, named with the facts it
    changed, in every format, and the exit code is the one ``check`` gives the planned
    repository. Without the what-if the same repository plans clean.
    """
    repo = make_repo(tmp_path / "r", [Spec("chat", cold_start=600)])
    assert plan_json(repo)["check"] == {"passes": True, "sizing_findings": [], "other_findings_by_code": {}}
    planned = tmp_path / "p"
    code, out, err = run_cli(["plan", str(repo), "--cold-start", "60", "--format", "json", "--repository", str(planned)])
    assert code == 1, err
    doc = json.loads(out)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    check = doc["check"]
    assert check["passes"] is False and check["other_findings_by_code"] == {}
    assert [(f["code"], f["subject"], f["because"]) for f in check["sizing_findings"]] == [
        ("PL121", "workload chat", "the plan changed cold_start_window_seconds from 600 to 60"),
        ("PL965", "workload chat",
         "the plan changed cold_start_seconds from 600 to 60, cold_start_window_seconds from 600 to 60"),
    ]
    # check on the planned repository rejects it by exactly these findings, with the same messages
    code, findings = _check_json(planned)
    assert code == 1
    assert sorted((f["code"], f["subject"], f["message"]) for f in findings) == [
        (f["code"], f["subject"], f["message"]) for f in check["sizing_findings"]
    ]
    code, text, _ = run_cli(["plan", str(repo), "--cold-start", "60"])
    assert code == 1
    assert "check on the planned repository: 2 findings the plan answers for\n" in text
    assert "no finding the plan answers for" not in text and "not answered by the plan" not in text
    words = " ".join(text.split())
    for f in check["sizing_findings"]:
        assert f"{f['code']} {f['message']} ({f['because']})" in words
    code, md, _ = run_cli(["plan", str(repo), "--cold-start", "60", "--format", "markdown"])
    assert code == 1
    assert "The plan fails `check`: 2 findings on the planned repository are the plan's to answer for." in md
    assert [line[:8] for line in md.splitlines() if line.startswith("- PL")] == ["- PL121 ", "- PL965 "]


def test_a_tolerance_the_evidence_does_not_leave_fails_the_plan(tmp_path: Path) -> None:
    """``--tolerance`` past the latency budget the workload's evidence leaves: PL305 on the
    planned repository is the plan's, for the tolerance it set."""
    repo = make_repo(tmp_path / "r", [Spec("chat", cold_start=600, tolerance=0.5)])
    code, out, err = run_cli(["plan", str(repo), "--tolerance", "chat=5", "--format", "json"])
    assert code == 1, err
    check = json.loads(out)["check"]
    assert [(f["code"], f["because"]) for f in check["sizing_findings"]] == [
        ("PL305", "the plan changed tolerance_seconds from 0.5 to 5")
    ]
    assert plan_json(repo, "--tolerance", "chat=0.4")["check"]["passes"]


def _window_repo(dest: Path) -> Path:
    """One workload declaring a 300 s cold start beside a 300 s trace step, in a pool whose elastic
    capacity takes 1800 s to come up: today its bands are computed at 1800 s (PL121 silent); the plan
    sizes its own pool at the workload's 300 s."""
    repo = make_repo(dest, [Spec("chat", cold_start=300)])
    cluster = yaml.safe_load((repo / "clusters" / "east.yaml").read_text(encoding="utf-8"))
    cluster["spec"]["pools"][0]["elastic"] = {"maxGpus": 10, "kind": "autoscale", "coldStartSeconds": 1800}
    (repo / "clusters" / "east.yaml").write_text(yaml.safe_dump(cluster, sort_keys=False), encoding="utf-8")
    return repo


def test_a_window_the_plan_shortens_below_the_step_fails_the_plan_in_every_output(tmp_path: Path) -> None:
    """No what-if: the planned pool's elastic cold start (the longest of its members') shortens the
    workload's effective window from 1800 s to 300 s, which its trace cannot show. The plan's figures
    are computed at that window, so PL121 is the plan's - in the JSON, the text and the review page."""
    repo = _window_repo(tmp_path / "r")
    _, today = _check_json(repo)
    assert "PL121" not in {f["code"] for f in today}
    code, out, err = run_cli(["plan", str(repo), "--format", "json"])
    assert code == 1, err
    check = json.loads(out)["check"]
    assert [(f["code"], f["because"]) for f in check["sizing_findings"]] == [
        ("PL121", "the plan changed cold_start_window_seconds from 1800 to 300")
    ]
    page = tmp_path / "review.html"
    code, _, err = run_cli(["report", "--html", str(page), "--plan", str(repo), "--no-cache"])
    assert code in (0, 1), err
    html = page.read_text(encoding="utf-8")
    assert 'data-passes="false" data-sizing-findings="1"' in html
    assert "1 finding the plan answers for: PL121 workload chat&#x27;s trace is sampled every 300 s" in html
    assert "(the plan changed cold_start_window_seconds from 1800 to 300)" in html


def test_what_the_repository_declares_is_inherited_not_the_plans(tmp_path: Path) -> None:
    """A 300 s cold start declared beside a 300 s trace step is PL121 before any plan: the planned
    repository still has it, counted among the findings the plan does not answer for."""
    repo = make_repo(tmp_path / "r", [Spec("chat", cold_start=300)])
    _, today = _check_json(repo)
    assert [f["code"] for f in today if f["code"] == "PL121"] == ["PL121"]
    check = plan_json(repo)["check"]
    assert check == {"passes": True, "sizing_findings": [], "other_findings_by_code": {"PL121": 1}}


def test_the_cold_start_what_if_of_the_docs_is_the_real_output() -> None:
    """docs/plan.md: in examples/good 600 s asks for 522 GPUs where the declared cold starts need 514;
    300 s is a window its five-minute traces cannot show, PL121 for every measured workload."""
    import re

    text = " ".join((REPO / "docs" / "plan.md").read_text(encoding="utf-8").split())
    (seconds, asks, declared) = re.findall(r"in `examples/good` (\d+) s asks for (\d+) GPUs where the declared cold starts need (\d+)", text)[0]

    def total(*extra: str) -> tuple[int, str]:
        code, out, _ = run_cli(["plan", "examples/good", *extra], cwd=REPO)
        (planned,) = re.findall(r"^total today: .* = \d+ GPUs; planned: .* = (\d+) GPUs$", out, re.M)
        return code, planned

    assert total("--cold-start", seconds) == (0, asks)
    assert total() == (0, declared)
    code, out, _ = run_cli(["plan", "examples/good", "--cold-start", "300", "--format", "json"], cwd=REPO)
    check = json.loads(out)["check"]
    assert code == 1 and not check["passes"]
    assert {f["code"] for f in check["sizing_findings"]} == {"PL121"}
    assert all(f["because"].startswith("the plan changed cold_start_window_seconds from ") for f in check["sizing_findings"])
