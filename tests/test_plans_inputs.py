"""Plans built to game the inputs, and sound plans that must survive them (issue 9, parts 3-5).

Each test writes a small capacity repository into a temporary folder - a cluster, its
workloads and generated traces - and runs the real pipeline over it. "Must not pass"
tests assert that a specific rule reports; "must not fail" tests assert that a sound
variant of the same plan stays quiet for that rule. Part 3: measurements must be
measurements (flat days, exact windows, coarse traces, cold starts). Part 4: evidence
that can be checked. Part 5: the framework's inputs (real-time/queue-tolerant mixes,
gang scheduling, long tails, VRAM and durations, queue limits, VRAM units, GPU sharing).
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fixture_helpers import RULESET

from policylint.engine.evaluate import evaluate_rule
from policylint.finding import Finding
from policylint.engine.linter import LintOptions, lint
from policylint.model.load import Document
from policylint.measure.run import measure
from policylint.engine.view import View
from policylint.engine.views import build_views

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
END = int(dt.datetime(2026, 11, 30, 23, 55, tzinfo=dt.timezone.utc).timestamp())
STEP = 300

# --------------------------------------------------------------------------- building plans


def diurnal(times: np.ndarray) -> np.ndarray:
    """In-flight requests over the UTC day: 60 at midnight, 140 at noon (never constant)."""
    hour = (times % 86_400) / 3600.0
    return np.rint(100 - 40 * np.cos(2 * np.pi * hour / 24)).astype(np.int64)


def write_trace(path: Path, values: np.ndarray, step: int = STEP, end: int = END) -> None:
    times = end - step * np.arange(values.size)[::-1]
    rows = np.column_stack([times, values])
    path.parent.mkdir(parents=True, exist_ok=True)
    # The bytes np.savetxt(fmt="%d") writes, built over whole arrays (savetxt loops per row).
    cells = rows.astype(np.int64).astype(str)
    lines = np.char.add(np.char.add(cells[:, 0], ","), cells[:, 1])
    path.write_text("timestamp,in_flight\n" + "\n".join(lines.tolist()) + "\n", encoding="utf-8")


def day_samples(days: float, step: int = STEP) -> np.ndarray:
    n = int(round(days * 86_400 / step))
    return END - step * np.arange(n)[::-1]


POOL = """apiVersion: policylint/v1
kind: Cluster
metadata: {{name: prod}}
spec:
  pools:
    - name: serving
      gpu: {{model: H100-80GB, memoryGiB: 80}}
      reservedGpus: {reserved}
      serves: {serves}
      overflow: {overflow}
      queue: {{maxDepth: {depth}, maxWaitSeconds: {wait}}}
{extra}"""

EVIDENCE = """    evidence:
      objectiveSeconds: 2.5
      serviceSeconds: 0.5
      url: https://slo.acme-ai.dev/chat#ttft"""

VRAM = "  vram: {residentGiB: 20, residencySeconds: 86400, activeComputeSeconds: 60000}"


def workload(
    name: str,
    *,
    cls: str = "inference",
    trace: str = "traces/chat.csv",
    trace_extra: str = "",
    cold: Any = 3600,
    tolerance: Any = 2,
    evidence: str = EVIDENCE,
    vram: str = VRAM,
    gpr: int = 1,
    per_gpu: float = 10,
    durations: str = "",
) -> str:
    return f"""---
apiVersion: policylint/v1
kind: Workload
metadata: {{name: {name}, team: platform}}
spec:
  class: {cls}
  cluster: prod
  pool: serving
  gpusPerReplica: {gpr}
  concurrency:
    trace:
      path: {trace}{trace_extra}
  perGpuConcurrency: {{value: {per_gpu}, measuredIn: production, source: grafana board}}
  coldStartSeconds: {cold}
  tolerance:
    maxQueueSeconds: {tolerance}
{evidence}
{vram}
{durations}
"""


def plan(
    root: Path,
    *workloads: str,
    reserved: int = 14,
    serves: str = "[inference]",
    overflow: str = "queue",
    depth: int = 1000,
    wait: float = 3600,
    extra: str = "",
    trace: np.ndarray | None = None,
    step: int = STEP,
) -> Path:
    """A repository: one cluster with pool prod/serving and the given workloads."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "repo.yaml").write_text(
        POOL.format(reserved=reserved, serves=serves, overflow=overflow, depth=depth, wait=wait, extra=extra)
        + "".join(workloads or (workload("chat"),)),
        encoding="utf-8",
    )
    if not (root / "traces" / "chat.csv").exists():
        write_trace(root / "traces" / "chat.csv", diurnal(day_samples(92)) if trace is None else trace, step=step)
    return root


def check(root: Path) -> list[Finding]:
    return lint([root], LintOptions(root=root, now=NOW, ruleset=RULESET)).findings


def codes(root: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in check(root):
        out.setdefault(f.code, []).append(f.message)
    return out


def views_of(root: Path) -> dict[str, View]:
    model = lint([root], LintOptions(root=root, now=NOW, ruleset=None)).model
    assert model is not None
    facts, _ = measure(model, NOW)
    return {v.label: v for v in build_views(model, facts, NOW)}


JOB_EVIDENCE = "    evidence: {url: https://wiki.acme-ai.dev/research/planning#queueing}"
DURATIONS = "  durations: {p50Seconds: 3600, p90Seconds: 5000, p99Seconds: 7000}"


# =========================================================================== part 3


def test_padded_trace_has_only_its_measured_days(tmp_path: Path) -> None:
    """Must not pass: 90 days on paper, 80 of them zeros - a 10-day window."""
    times = day_samples(90)
    values = np.where(times > END - 10 * 86_400, diurnal(times), 0)
    found = codes(plan(tmp_path, trace=values))
    assert any("measured over 10 days (80 flat days left out)" in m for m in found["PL106"])
    assert any("constant all day on 80 days" in m for m in found["PL120"])
    view = views_of(tmp_path)["workload chat"]
    assert view.facts["window_days"] == pytest.approx(10.0, abs=1e-9)
    assert view.facts["flat_days"] == 80


def test_dead_exporter_days_are_flat_at_any_value(tmp_path: Path) -> None:
    """Must not pass: an exporter that repeated 140 for the last 20 days."""
    times = day_samples(100)
    values = np.where(times >= END - 20 * 86_400 + STEP, 140, diurnal(times))
    found = codes(plan(tmp_path, trace=values))
    assert "PL120" in found
    assert any("measured over 80 days" in m or "measured over 80." in m for m in found["PL106"])


def test_full_window_without_flat_days_passes(tmp_path: Path) -> None:
    """Must not fail: 92 measured days that move every day."""
    found = codes(plan(tmp_path))
    assert "PL106" not in found and "PL120" not in found


def test_window_is_compared_exactly(tmp_path: Path) -> None:
    """Must not pass: 89.9965 days is not 90 (no rounding before the verdict)."""
    short = plan(tmp_path / "short", workload("chat", cold=600), trace=diurnal(END - 60 * np.arange(129_595)[::-1]), step=60)
    view = views_of(short)["workload chat"]
    assert view.facts["window_days"] == pytest.approx(129_595 * 60 / 86_400)
    assert view.facts["window_days"] < 90
    assert any("89.9965 days" in m for m in codes(short)["PL106"])


def test_exactly_ninety_days_is_enough(tmp_path: Path) -> None:
    """Must not fail: 129,600 one-minute samples are exactly 90 days."""
    full = plan(tmp_path, workload("chat", cold=600), trace=diurnal(END - 60 * np.arange(129_600)[::-1]), step=60)
    assert "PL106" not in codes(full)


def test_trace_step_not_finer_than_cold_start_is_an_error(tmp_path: Path) -> None:
    """Must not pass: 5-minute samples against a 5-minute cold start; must not fail at 301 s."""
    coarse = codes(plan(tmp_path / "coarse", workload("chat", cold=300)))
    assert coarse["PL121"] == [
        "workload chat's trace is sampled every 300 s, not finer than its 300 s cold-start window:"
        " every sample counts as sustained, so noise spikes become bands"
    ]
    assert "PL121" not in codes(plan(tmp_path / "fine", workload("chat", cold=301)))


@pytest.mark.parametrize("cold", [0, -5])
def test_cold_start_of_zero_or_less_is_a_schema_error(tmp_path: Path, cold: int) -> None:
    """Must not pass: a non-positive cold start is refused on the declaration, never measured."""
    found = check(plan(tmp_path, workload("chat", cold=cold), extra="      elastic: {maxGpus: 2, kind: autoscale, coldStartSeconds: 0}\n"))
    schema = [f for f in found if f.code == "PL010"]
    assert {f.line for f in schema} == {
        n for n, line in enumerate((tmp_path / "repo.yaml").read_text().splitlines(), 1) if "oldStartSeconds" in line
    }
    assert all("coldStartSeconds" in f.message for f in schema)
    assert not [f for f in found if f.code == "PL024"]


def test_staleness_is_not_rounded(tmp_path: Path) -> None:
    """Must not pass: a trace 30.004 days old is older than 30 days."""
    end = int((NOW - dt.timedelta(days=30.004)).timestamp())
    end -= end % STEP
    times = end - STEP * np.arange(92 * 288)[::-1]
    write_trace(tmp_path / "traces" / "chat.csv", diurnal(times), end=end)
    view = views_of(plan(tmp_path))["workload chat"]
    assert view.facts["measurement_age_days"] > 30
    assert "PL107" in codes(tmp_path)


def _view(subject: str, facts: dict[str, Any]) -> View:
    doc = Document.__new__(Document)
    return View(subject, f"{subject} x", doc, ("metadata", "name"), facts)


def _judged(code: str, facts: dict[str, Any]) -> bool:
    rule = RULESET.rules[code]
    view = _view(rule.subject, facts)
    try:
        return bool(evaluate_rule(rule, view, RULESET.params.get(code, {})))
    except AttributeError:  # the dummy document cannot place a finding: the rule fired
        return True


@pytest.mark.parametrize(
    ("code", "facts", "fires"),
    [
        # waits: 0.5000001 s is longer than a 0.5 s tolerance; a wait limit caps the wait judged
        ("PL203", {"daily_max_wait_seconds": 0.5000001, "workload_tolerances": [{"name": "a", "tolerance_seconds": 0.5}]}, True),
        ("PL203", {"daily_max_wait_seconds": 0.5, "workload_tolerances": [{"name": "a", "tolerance_seconds": 0.5}]}, False),
        ("PL203", {"daily_max_wait_seconds": 9.0, "queue_max_wait_seconds": 0.5, "workload_tolerances": [{"name": "a", "tolerance_seconds": 0.5}]}, False),
        ("PL203", {"daily_max_wait_seconds": 9.0, "queue_max_wait_seconds": 0.5000001, "workload_tolerances": [{"name": "a", "tolerance_seconds": 0.5}]}, True),
        # ratios: 19.996 is below 20, 20 is not
        ("PL601", {"tail_ratio": 19.996, "pool_tail_protected": False}, False),
        ("PL601", {"tail_ratio": 20.0, "pool_tail_protected": False}, True),
        # spread: 100.04x is more than 100x
        ("PL303", {"tolerance_min_seconds": 1, "tolerance_max_seconds": 100.04, "tolerance_spread": 100.04}, True),
        # VRAM ratio: 10.004 is above 10
        ("PL501", {"vram_ratio": 10.004}, True),
        ("PL501", {"vram_ratio": 10.0}, False),
        # window: 89.9965 days is not 90
        ("PL106", {"window_days": 89.9965, "flat_days": 0}, True),
        # headroom: 115.000001 GPUs exceeds 100 + 15%
        ("PL101", {"reserved_gpus": 115.000001, "baseline_gpus": 100}, True),
    ],
)
def test_verdicts_compare_exact_numbers(code: str, facts: dict[str, Any], fires: bool) -> None:
    assert _judged(code, facts) is fires


def test_views_do_not_round_what_rules_compare(tmp_path: Path) -> None:
    root = plan(
        tmp_path,
        workload(
            "chat",
            durations="  durations: {p50Seconds: 1000, p90Seconds: 5000, p99Seconds: 19996}",
            vram="  vram: {residentGiB: 20, residencySeconds: 86400, activeComputeSeconds: 8639}",
        ),
    )
    facts = views_of(root)["workload chat"].facts
    assert facts["tail_ratio"] == 19.996
    assert facts["vram_ratio"] == 86400 / 8639
    assert facts["window_days"] == pytest.approx(92.0)


# =========================================================================== part 4


@pytest.mark.parametrize(
    "evidence",
    [
        '    evidence: "TODO fill in later"',
        "    evidence: urgent urgent urgent",
        "    evidence: TBD",
        "    evidence: n/a",
        '    evidence: "High priority!"',
        '    evidence: "critical"',
        "    evidence: p99 TTFT SLO 2.5 s in the product SLO doc, prefill 0.5 s",  # free text
        "    evidence: {url: 'https://wiki.acme-ai.dev/slo/TODO'}",
        "    evidence: {url: 'https://slo.acme-ai.dev/chat', note: 'tbc'}",
    ],
)
def test_uncheckable_evidence_is_refused(tmp_path: Path, evidence: str) -> None:
    """Must not pass: placeholders, labels and free text."""
    assert "PL304" in codes(plan(tmp_path, workload("chat", evidence=evidence)))


def test_tolerance_beyond_its_latency_budget_is_refused(tmp_path: Path) -> None:
    """Must not pass: 0.8 s objective - 0.3 s service leaves 0.5 s, not 0.6 s."""
    evidence = "    evidence: {objectiveSeconds: 0.8, serviceSeconds: 0.3}"
    found = codes(plan(tmp_path, workload("chat", tolerance=0.6, evidence=evidence)))
    assert found["PL305"] == [
        "workload chat tolerates 0.6 s of queueing, but its latency objective of 0.8 s minus 0.3 s of service leaves 0.5 s"
    ]


def test_evidence_document_must_exist_inside_the_repository(tmp_path: Path) -> None:
    """Must not pass: a document that is missing, or outside the repository."""
    root = tmp_path / "repo"
    missing = codes(plan(root, workload("chat", evidence="    evidence: {document: slo/chat.md}")))
    assert any("evidence document file 'slo/chat.md' does not exist" in m for m in missing["PL022"])
    (tmp_path / "outside.md").write_text("SLO\n")
    outside = codes(plan(root, workload("chat", evidence="    evidence: {document: ../outside.md}")))
    assert any("leaves the repository root" in m for m in outside["PL023"])


@pytest.mark.parametrize(
    "evidence",
    [
        "    evidence: {objectiveSeconds: 2.5, serviceSeconds: 0.5}",  # budget exactly 2 s
        "    evidence: {document: slo/chat.md}",
        "    evidence: {url: 'https://slo.acme-ai.dev/chat#ttft', note: 'the chat page is on the critical path'}",
    ],
)
def test_checkable_evidence_passes(tmp_path: Path, evidence: str) -> None:
    """Must not fail: each of the three checkable forms."""
    (tmp_path / "slo").mkdir()
    (tmp_path / "slo" / "chat.md").write_text(
        "# Chat SLO\nAgreed in the product review: the p99 time to first token of the chat service stays under"
        " 2.5 s at the gateway, and a typical prefill takes 0.5 s, so a request may wait at most 2 s.\n")
    found = codes(plan(tmp_path, workload("chat", evidence=evidence)))
    assert not {"PL301", "PL304", "PL305", "PL022", "PL023", "PL010"} & set(found), found


# =========================================================================== part 5


def _jobs(root: Path, name: str = "jobs.csv") -> str:
    starts = END - 40 * 86_400 + 9000 * np.arange(100)
    rows = ["job_id,start,end,gpus"] + [f"j{i},{s},{s + 3600 + 12 * i},8" for i, s in enumerate(starts)]
    (root / name).write_text("\n".join(rows) + "\n")
    return f"{name}\n      format: jobs\n      startColumn: start\n      endColumn: end"


def test_training_job_relabelled_batch_in_an_inference_pool_is_caught(tmp_path: Path) -> None:
    """Must not pass: the label says batch, the 30-minute tolerance says queue-tolerant."""
    relabelled = workload(
        "finetune", cls="batch", trace=_jobs(tmp_path), tolerance=1800, evidence=JOB_EVIDENCE,
        vram="", gpr=8, per_gpu=1, durations=DURATIONS,
    )
    found = codes(plan(tmp_path, workload("chat"), relabelled, serves="[inference, batch]",
                       extra="      scheduling: {gang: true}\n"))
    assert "PL401" not in found  # the class check alone is fooled
    assert found["PL306"] == [
        "pool prod/serving holds real-time work (chat (2 s)) next to queue-tolerant work (finetune (1800 s)):"
        " batch and real-time are sized together"
    ]


def test_workloads_of_similar_tolerance_share_a_pool(tmp_path: Path) -> None:
    """Must not fail: 2 s and 60 s are both interactive enough to share."""
    found = codes(plan(tmp_path, workload("chat"), workload("embed", tolerance=60, trace="traces/chat.csv")))
    assert "PL306" not in found


def test_multi_gpu_batch_jobs_need_gang_scheduling(tmp_path: Path) -> None:
    """Must not pass: 2-GPU batch jobs without gang admission; must not fail with 1-GPU jobs."""
    def batch(gpr: int) -> str:
        return workload("eval", cls="batch", trace=_jobs(tmp_path), tolerance=3600, evidence=JOB_EVIDENCE,
                        vram="", gpr=gpr, per_gpu=1, durations=DURATIONS)
    assert "PL403" in codes(plan(tmp_path, batch(2), serves="[batch]"))
    assert "PL403" not in codes(plan(tmp_path, batch(1), serves="[batch]"))


@pytest.mark.parametrize(("buffer", "p99", "fires"), [(4, 20000, True), (8, 20000, False), (0, 19996, False)])
def test_long_tail_buffer_must_hold_a_long_tail_job(tmp_path: Path, buffer: int, p99: int, fires: bool) -> None:
    """A 4-GPU buffer for 8-GPU jobs is no protection; 19.996x is below the 20x limit."""
    job = workload("train", cls="training", trace=_jobs(tmp_path), tolerance=3600, evidence=JOB_EVIDENCE,
                   vram="", gpr=8, per_gpu=1,
                   durations=f"  durations: {{p50Seconds: 1000, p90Seconds: 5000, p99Seconds: {p99}}}")
    extra = "      scheduling: {gang: true, preemption: false}\n" + (f"      bufferGpus: {buffer}\n" if buffer else "")
    assert ("PL601" in codes(plan(tmp_path, job, serves="[training]", extra=extra))) is fires


def test_long_tail_job_gpus_come_from_the_job_list(tmp_path: Path) -> None:
    """The GPUs of the longest jobs in the list (8), not gpusPerReplica (1), size the buffer."""
    jobs = _jobs(tmp_path)
    job = workload("train", cls="training", trace=jobs, tolerance=3600, evidence=JOB_EVIDENCE, vram="", gpr=1,
                   per_gpu=1, durations=f"  durations:\n    jobs:\n      path: {jobs}")
    facts = views_of(plan(tmp_path, job, serves="[training]", extra="      bufferGpus: 4\n"))["workload train"].facts
    assert facts["tail_job_gpus"] == 8
    assert facts["pool_tail_protected"] is False


def test_missing_vram_and_durations_are_findings(tmp_path: Path) -> None:
    """Must not pass: inference without VRAM data, batch without a duration distribution."""
    found = codes(plan(tmp_path, workload("chat", vram=""),
                       workload("score", cls="batch", trace=_jobs(tmp_path), tolerance=2, vram="", per_gpu=1),
                       serves="[inference, batch]"))
    assert found["PL503"] == [
        "workload chat is an inference workload without VRAM residency data (missing: residency ratio and"
        " resident GiB): nobody can tell how much of its GPU time is storage, not compute"
    ]
    assert any(m.startswith("workload score is a batch workload without a job duration distribution") for m in found["PL602"])


def test_queue_shallower_than_the_spikes_is_caught(tmp_path: Path) -> None:
    """Must not pass: capacity 100 in flight, demand up to 140, a queue of 10."""
    found = codes(plan(tmp_path, workload("chat", tolerance=3600, evidence=JOB_EVIDENCE), reserved=10, depth=10))
    assert found["PL206"] == [
        "pool prod/serving lets 10 requests or jobs wait, but spikes put up to 40 above a workload's share of the"
        " capacity (needed: chat 40): the rest is dropped, not queued"
    ]
    assert "PL206" not in codes(plan(tmp_path, workload("chat", tolerance=3600, evidence=JOB_EVIDENCE), reserved=10, depth=40))


def test_queue_wait_limit_below_tolerance_reports_what_is_rejected(tmp_path: Path) -> None:
    """Must not pass: a 60 s limit for work that may wait an hour; the pool's rejected share is reported."""
    found = codes(plan(tmp_path, workload("chat", tolerance=3600, evidence=JOB_EVIDENCE), reserved=12, wait=60))
    (message,) = found["PL207"]
    assert message.startswith("pool prod/serving turns away queued work after 60 s, and at the measured demand that is ")
    assert message.endswith("of its pooled daily-band work, although chat (3600 s) could wait longer: work that could wait is turned away, and capacity gets bought for it")
    share = float(message.split("that is ")[1].split("%")[0])
    assert share > 0
    view = views_of(tmp_path)["pool prod/serving"]
    assert view.facts["daily_rejected_share"] == pytest.approx(share / 100, abs=5e-4)
    assert "PL207" not in codes(plan(tmp_path, workload("chat", tolerance=3600, evidence=JOB_EVIDENCE), reserved=12, wait=3600))


def test_bounded_queue_matches_a_sample_by_sample_reference() -> None:
    """The queue simulation honours the wait limit exactly like the plain recursion."""
    from policylint.bands import bounded_queue

    rng = np.random.default_rng(7)
    for _ in range(50):
        values = rng.poisson(rng.uniform(2, 12), 500).astype(float)
        values[rng.random(500) < 0.03] = np.nan
        capacity, limit, step = float(rng.integers(1, 10)), float(rng.uniform(0, 30)), 60.0
        backlog, rejected, top = 0.0, 0.0, 0.0
        for c in values:
            if math.isnan(c):
                continue
            backlog += (c - capacity) * step
            if backlog > limit * capacity:
                rejected += backlog - limit * capacity
                backlog = limit * capacity
            backlog = max(backlog, 0.0)
            top = max(top, backlog)
        got = bounded_queue(values, capacity, step, limit)
        assert got.rejected == pytest.approx(rejected, rel=1e-9, abs=1e-6)
        assert got.max_wait == pytest.approx(top / capacity, rel=1e-9, abs=1e-9)


def _vram_plan(root: Path, unit: str, scale: float) -> dict[str, Any]:
    times = day_samples(7)
    loaded = (times % 86_400) >= 6 * 3600  # unloaded from midnight to 06:00
    memory = np.where(loaded, 20 * scale, 0)
    busy = np.where(loaded, 25, 0)
    rows = ["timestamp,memory,busy"] + [f"{t},{m!r},{b}" for t, m, b in zip(times, memory.tolist(), busy, strict=True)]
    (root / "vram.csv").parent.mkdir(parents=True, exist_ok=True)
    (root / "vram.csv").write_text("\n".join(rows) + "\n")
    vram = f"  vram:\n    trace: {{path: vram.csv, columns: [memory], unit: {unit}, activeColumn: busy}}"
    return views_of(plan(root, workload("chat", vram=vram)))["workload chat"].facts


@pytest.mark.parametrize(
    ("unit", "scale"),
    [("GiB", 1.0), ("MiB", 1024.0), ("bytes", float(2**30)), ("fraction", 0.25), ("percent", 25.0)],
)
def test_vram_trace_units_and_resident_time(tmp_path: Path, unit: str, scale: float) -> None:
    """20 GiB on an 80 GiB GPU in any unit; zero samples are not resident time."""
    facts = _vram_plan(tmp_path, unit, scale / 20 if unit in ("fraction", "percent") else scale)
    assert facts["vram_resident_gib"] == pytest.approx(20.0)
    # Resident 18 h a day, busy 25% of it: 4.0, not 24 h / 4.5 h = 5.33.
    assert facts["vram_ratio"] == pytest.approx(4.0)


def test_vram_trace_without_unit_is_a_schema_error(tmp_path: Path) -> None:
    (tmp_path / "vram.csv").write_text("timestamp,memory\n1,2\n")
    vram = "  vram:\n    trace: {path: vram.csv, columns: [memory]}"
    found = check(plan(tmp_path, workload("chat", vram=vram)))
    assert any(f.code == "PL010" and "'unit' is required" in f.message for f in found)


def test_vram_adds_up_only_when_gpus_are_shared(tmp_path: Path) -> None:
    """50 + 40 GiB models on 80 GiB GPUs: fine one model per GPU (the default), not when shared."""
    def models(root: Path, extra: str) -> dict[str, list[str]]:
        vram = "  vram: {{residentGiB: {}, residencySeconds: 86400, activeComputeSeconds: 60000}}"
        return codes(plan(root, workload("chat", vram=vram.format(50)), workload("search", vram=vram.format(40)),
                          extra=extra))
    assert "PL502" not in models(tmp_path / "exclusive", "")
    assert "PL502" in models(tmp_path / "shared", "      sharing: shared\n")
    assert "PL502" not in models(tmp_path / "explicit", "      sharing: exclusive\n")


def test_flat_days_of_the_real_helios_trace() -> None:
    """The flatness test on real data: two Sundays of May 2020 never changed (38 GPUs, then 0)."""
    from policylint.bands import flat_days
    from policylint.traces import read_series

    series = read_series(Path(__file__).parent / "data" / "helios_vc3sl_2020-05.csv",
                         value_columns=["running_gpu_num", "pending_gpu_num"])
    days = flat_days(series.times, series.values)
    assert [dt.datetime.fromtimestamp(d, tz=dt.timezone.utc).date().isoformat() for d in days] == [
        "2020-05-03", "2020-05-10"
    ]
    # Independent check with plain Python: days whose 1,440 samples hold one value.
    by_day: dict[int, set[float]] = {}
    for t, v in zip(series.times.tolist(), series.values.tolist(), strict=True):
        by_day.setdefault(int(t // 86_400), set()).add(v)
    assert [d * 86_400.0 for d, vs in sorted(by_day.items()) if len(vs) == 1] == days.tolist()


def test_long_jobs_from_a_job_list_are_not_flat_days(tmp_path: Path) -> None:
    """Must not fail: four-day jobs keep the count constant for days; the job list says they ran."""
    starts = END - 92 * 86_400 + 86_400 * np.arange(0, 92, 2)
    rows = ["job_id,start,end"] + [f"j{i},{s},{s + 4 * 86_400}" for i, s in enumerate(starts)]
    (tmp_path / "runs.csv").write_text("\n".join(rows) + "\n")
    trace = "runs.csv\n      format: jobs\n      startColumn: start\n      endColumn: end\n      stepSeconds: 300"
    job = workload("pretrain", cls="training", trace=trace, tolerance=3600, evidence=JOB_EVIDENCE, vram="",
                   gpr=1, per_gpu=1, durations=DURATIONS)
    found = codes(plan(tmp_path, job, serves="[training]"))
    assert "PL120" not in found
    facts = views_of(tmp_path)["workload pretrain"].facts
    assert facts["flat_days"] == 0
