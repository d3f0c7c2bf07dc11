"""The red-team entries of docs/red-team.md that closed with new checks: their facts, exactly.

Each rule is also proven by its fixtures (tests/test_rule_fixtures.py); these tests pin the
figures the facts must have on the attack and on the honest series next to it, and run the
attacks that need a whole repository (a configuration, a pulled file) through the CLI.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import REPO, run_cli
from fixture_helpers import FIXTURES

from policylint import traces
from policylint.calc.runs import SKETCH_SIZE, run_sketch, sketch_similarity
from policylint.engine.loosened import loosened_options
from policylint.engine.ruleset import load_rules
from policylint.measure.integrity.checks import (
    cold_start_floor,
    gpu_memory_contradicts_model,
)
from policylint.measure.integrity.copies import near_copies
from policylint.measure.integrity.plausibility import model_memory_gib
from policylint.measure.integrity.resolution import JUMP_SHARE, jump_block
from policylint.measure.integrity.workload import trace_facts
from policylint.resources import rules_dir

TRACES = FIXTURES / "_traces"


def _facts(name: str) -> dict[str, object]:
    s = traces.read_series(TRACES / name)
    return trace_facts(s.times, s.values, s.valid, float(s.step_seconds))


def _sketch(name: str) -> list[int] | None:
    s = traces.read_series(TRACES / name)
    return run_sketch(s.values, s.valid)


# --- identity ----------------------------------------------------------------------------------


def test_a_pasted_week_with_every_copy_edited_is_found_as_near_repeats() -> None:
    edited = _facts("pasted-week-edited.csv")
    # no day repeats exactly any more: PL966 sees nothing
    assert edited["repeated_days"] == 0
    # 91 days, the first 7 measured: every one of the 84 copies repeats its week at >= 90% of its changes
    assert (edited["near_repeated_days"], edited["edited_repeated_days"]) == (84, 84)
    assert edited["edited_repeated_day_share"] == 84 / 91


def test_measured_days_are_not_near_repeats() -> None:
    honest = _facts("bursty-sustained.csv")
    assert (honest["repeated_days"], honest["near_repeated_days"], honest["edited_repeated_day_share"]) == (0, 0, 0.0)
    # the exact copies of the pasted week are near repeats too, but not edited ones (PL966 has them)
    pasted = _facts("pasted-week.csv")
    assert (pasted["repeated_days"], pasted["near_repeated_days"], pasted["edited_repeated_days"]) == (84, 84, 0)


def test_a_near_copy_shares_most_runs_and_a_measured_trace_none() -> None:
    original, edited, other = _sketch("minutely-5min.csv"), _sketch("minutely-5min-edited.csv"), _sketch("bursty-sustained.csv")
    assert original is not None and edited is not None and other is not None
    assert len(original) == SKETCH_SIZE
    # five samples changed spoil the runs around them: 120 of the 128 smallest hashes survive
    assert sketch_similarity(original, edited) == 120 / 128
    assert sketch_similarity(original, other) == 0.0
    assert sketch_similarity(original, original) == 1.0


def test_a_near_copy_with_an_offset_and_sparse_noise_shares_most_runs() -> None:
    # 2 added everywhere, one sample in a hundred moved by one more: no value of the copy equals
    # its original's, yet its steps are the original's around all but the moved samples
    original, offset = _sketch("minutely-5min.csv"), _sketch("minutely-5min-offset.csv")
    assert original is not None and offset is not None
    assert 0.5 < sketch_similarity(original, offset) < 1.0
    s = traces.read_series(TRACES / "minutely-5min.csv")
    # a constant alone changes nothing; a scale does (PL111's shape fingerprint has scaled copies)
    assert run_sketch(s.values + 7.0, s.valid) == original
    assert sketch_similarity(original, run_sketch(s.values * 1.5, s.valid) or []) < 0.5


def test_two_measured_random_walks_at_one_level_share_no_runs() -> None:
    # honest replicas of one service: the same level and the same kind of noise, drawn apart
    rng = np.random.default_rng(11)
    a = 200 + np.cumsum(rng.integers(-3, 4, size=30_000)).astype(float)
    b = 200 + np.cumsum(rng.integers(-3, 4, size=30_000)).astype(float)
    valid = np.ones(a.size, dtype=bool)
    sa, sb = run_sketch(a, valid), run_sketch(b, valid)
    assert sa is not None and sb is not None
    assert sketch_similarity(sa, sb) == 0.0


def test_two_pollers_toggling_apart_are_not_copies() -> None:
    # second red team: two independent series toggling 0/1 at 98% of samples (pollers, cron jobs)
    # shared 73% of their sketched runs - patterns each repeats itself; only runs held once count
    rng = np.random.default_rng(11)
    valid = np.ones(26_000, dtype=bool)
    a = (np.cumsum(rng.random(valid.size) < 0.98) % 2).astype(float)
    b = (np.cumsum(rng.random(valid.size) < 0.98) % 2).astype(float)
    sa, sb = run_sketch(a, valid), run_sketch(b, valid)
    assert sa is None or sb is None or sketch_similarity(sa, sb) <= 0.5
    # a repeated pattern is left out, not the trace: a measured trace keeps a full sketch
    assert len(_sketch("bursty-sustained.csv") or []) == SKETCH_SIZE


def test_near_copies_skip_one_file_cited_twice_and_pairs_pl111_reports() -> None:
    a, b = [1, 2, 3, 4], [1, 2, 3, 5]
    entries = [("chat", "/t/a.csv", "p/s", a), ("embed", "/t/b.csv", "p/b", b), ("rerank", "/t/a.csv", "p/s", a)]
    found = near_copies(entries)
    # chat and rerank cite one file (open, visible): not judged; embed is later than chat by name
    assert found == {"embed": ("chat", 3 / 4), "rerank": ("embed", 3 / 4)}
    assert near_copies(entries, {frozenset(("chat", "embed")), frozenset(("embed", "rerank"))}) == {}


# --- resolution --------------------------------------------------------------------------------


def test_hourly_blocks_under_jitter_are_found() -> None:
    jittered = _facts("hourly-jitter-5min.csv")
    assert (jittered["resolution_block_samples"], jittered["resolution_step_seconds"]) == (12, 3600.0)
    assert jittered["resolution_jump_share"] is not None and jittered["resolution_jump_share"] >= JUMP_SHARE


@pytest.mark.parametrize("name", ["bursty-sustained.csv", "night-busy-120d.csv", "minutely-5min.csv"])
def test_a_daily_burst_whose_edges_fall_on_one_phase_is_not_a_block(name: str) -> None:
    # a three-hour burst every day puts both its edges 12 samples apart: most of the energy on
    # one phase, but the typical boundary step is as small as any other
    facts = _facts(name)
    assert (facts["resolution_block_samples"], facts["resolution_jump_share"]) == (1, None)


def test_jitter_blocks_on_a_random_walk_are_not_found() -> None:
    rng = np.random.default_rng(7)
    values = 200 + np.cumsum(rng.integers(-3, 4, size=20_000)).astype(float)
    assert jump_block(values, np.ones(values.size, dtype=bool)) == (1, None)


# --- plausibility ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "sizes"),
    [
        ("H100-80GB", (80.0,)),
        ("NVIDIA-A100-SXM4-40GB", (40.0,)),
        ("NVIDIA-A100-SXM4-80GB", (80.0,)),
        ("NVIDIA-H100-80GB-HBM3", (80.0,)),
        ("A100", (40.0, 80.0)),
        ("NVIDIA-L4", (24.0,)),
        ("Tesla-T4", (16.0,)),
        ("NVIDIA H100 NVL", (94.0,)),
        ("NVIDIA-A10G", (24.0,)),
        ("L40S", (48.0,)),
        ("AMD Instinct MI300X", (192.0,)),
        ("TPU-v5e", None),
        (None, None),
    ],
)
def test_gpu_model_memory_is_read_from_the_name_or_the_table(model: str | None, sizes: tuple[float, ...] | None) -> None:
    assert model_memory_gib(model) == sizes


def test_a_gfd_memory_label_in_mib_agrees_with_its_model() -> None:
    # nvidia.com/gpu.memory of an H100 80GB is 81559 MiB: 79.65 GiB, within PL974's 10%
    ratio = (81559 / 1024) / 80.0
    assert gpu_memory_contradicts_model(
        {"gpu_memory_contradiction": ratio, "gpu_memory_gib": 81559 / 1024, "gpu_model_memory_gib": 80.0},
        {"tolerance": 0.1},
    ) == []
    assert gpu_memory_contradicts_model(
        {"gpu_memory_contradiction": 0.5, "gpu_memory_gib": 40.0, "gpu_model_memory_gib": 80.0}, {"tolerance": 0.1}
    ) == [{"_figures": (40.0, 80.0)}]


def test_the_cold_start_floor_adds_loading_each_gpus_part_of_the_model() -> None:
    params = {"min_seconds": 60, "load_gib_per_second": 2}
    # 70 GiB on one GPU: 60 + 35 = 95 s
    found = cold_start_floor({"cold_start_window_seconds": 61.0, "vram_resident_gib": 70.0, "gpus_per_replica": 1}, params)
    assert [p["floor_seconds"] for p in found] == [95.0]
    # the same model over two GPUs loads in parallel: 60 + 17.5 = 77.5 s, and 80 s passes
    assert cold_start_floor({"cold_start_window_seconds": 80.0, "vram_resident_gib": 70.0, "gpus_per_replica": 2}, params) == []
    # without a known resident size only the fixed minimum counts, exactly as before
    assert cold_start_floor({"cold_start_window_seconds": 60.0, "vram_resident_gib": None}, params) == []
    assert cold_start_floor({"cold_start_window_seconds": 59.0, "vram_resident_gib": None}, params)[0]["_figures"] == (59.0, 60.0)


@pytest.mark.parametrize(
    "folder",
    # tests/data/kueue and tests/data/volcano are the shared data's real manifests, copied with their attribution
    [REPO / "tests" / "data" / "kueue", REPO / "tests" / "data" / "volcano", REPO / "examples" / "kueue"],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_real_scheduler_manifests_contradict_nothing(folder: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(folder, repo)
    status, out, err = run_cli(
        ["check", str(repo), "--root", str(repo), "--isolated", "--no-cache", "--now", "2026-12-01",
         "--select", "PL974,PL975,PL976", "--format", "json"]
    )
    assert (status, json.loads(out)["findings"]) == (0, []), err


# --- the gate itself ---------------------------------------------------------------------------



def _said(loosened: Callable[..., list[str]], *args: Any) -> list[str]:
    """The sentences of PL977's fact without the word that accepts each (its own test below)."""
    found = loosened(*args)
    assert all(re.search(r" \[accept: \S+\]$", line) for line in found), found
    return [re.sub(r" \[accept: \S+\]$", "", line) for line in found]

def test_only_looser_options_are_reported() -> None:
    ruleset = load_rules([rules_dir()])
    assert _said(loosened_options, ruleset, {}) == []
    config = {
        "rules": {
            "PL961": {"max_share": 0.05, "max_top_share": 0.5},  # tighter, looser
            "PL970": {"min_value": 0.5},  # min_*: lower is looser
            "PL302": {"tight_seconds": 0.5, "max_share": 0.2},  # fewer tolerances count as tight: looser; max_share tighter
            "PL965": {"severity": "info"},
            "PL111": {"severity": "error"},  # not lowered
        },
        "ignore": ["PL96"],  # a prefix: every PL96x
        "per-file-ignores": {"legacy/*.yaml": ["PL972"]},
    }
    found = _said(loosened_options, ruleset, config)
    assert "PL961 max_top_share = 0.5, looser than its default 0.25" in found
    assert not any(line.startswith("PL961 max_share") for line in found)
    assert "PL970 min_value = 0.5, looser than its default 1" in found
    assert "PL302 tight_seconds = 0.5, looser than its default 1.0" in found
    assert not any(line.startswith("PL302 max_share") for line in found)
    assert "PL965 reports as info, not warning" in found
    assert not any(line.startswith("PL111") for line in found)
    assert "PL966 (trace-days-repeated) is ignored" in found
    assert "PL972 (measurement-copied) is ignored in legacy/*.yaml" in found


def test_excluded_files_are_a_loosening() -> None:
    """Red team: `exclude: ["*-q2-*"]` dropped a 60-GPU proposal from the walk, and the gate passed saying nothing."""
    ruleset = load_rules([rules_dir()])
    found = _said(loosened_options, ruleset, {"exclude": ["vendor/**", "*-q2-*"]})
    assert found == ["files matching 'vendor/**', '*-q2-*' are excluded from every check"]
    assert _said(loosened_options, ruleset, {"exclude": []}) == []


def test_a_fail_on_above_warning_is_a_loosening() -> None:
    """Red team: `fail-on: error` in .policylint.yaml turned every warning-only defence off, and PL977 said nothing."""
    ruleset = load_rules([rules_dir()])
    assert _said(loosened_options, ruleset, {"fail-on": "error"}) == ["fail-on: error lets every warning pass the gate (default: warning)"]
    assert _said(loosened_options, ruleset, {"fail-on": "warning"}) == []
    assert _said(loosened_options, ruleset, {"fail-on": "info"}) == []  # stricter


def test_a_select_that_leaves_rules_out_is_one_loosening_naming_them() -> None:
    """Red team: `select: [PL0]` in .policylint.yaml left PL977 out too, and examples/bad passed."""
    ruleset = load_rules([rules_dir()])
    found = _said(loosened_options, ruleset, {"select": ["PL0", "PL101"]})
    left = sorted(c for c, r in ruleset.rules.items() if not r.builtin and not c.startswith("PL0") and c not in ("PL101", "PL977"))
    assert found == [f"its select leaves out {len(left)} rules: {', '.join(left[:12])} and {len(left) - 12} more"]
    # a rule both left out and ignored is named once, as ignored
    found = _said(loosened_options, ruleset, {"select": ["PL0", "PL1"], "extend-select": ["PL2", "PL3", "PL4", "PL5", "PL6", "PL7", "PL8"],
                                       "ignore": ["PL101"]})
    assert "PL101 (reserved-above-baseline) is ignored" in found
    assert [line for line in found if line.startswith("its select")] == [
        "its select leaves out " + (f"{len(rest)} rules: " if len(rest := sorted(
            c for c, r in ruleset.rules.items() if not r.builtin and c[:3] == "PL9" and c != "PL977")) != 1 else "1 rule: ")
        + ", ".join(rest[:12]) + (f" and {len(rest) - 12} more" if len(rest) > 12 else "")
    ]
    assert _said(loosened_options, ruleset, {"select": ["PL"]}) == []


def _repo_from(tmp_path: Path, fixture: str) -> Path:
    repo = tmp_path / "plan"
    (repo / "traces").mkdir(parents=True)
    source = FIXTURES / fixture
    for f in source.iterdir():
        text = f.read_text(encoding="utf-8")
        for name in set(re.findall(r"\.\./\.\./_traces/([\w.-]+)", text)):
            shutil.copyfile(TRACES / name, repo / "traces" / name)
            if (TRACES / f"{name}.provenance.json").exists():
                shutil.copyfile(TRACES / f"{name}.provenance.json", repo / "traces" / f"{name}.provenance.json")
        (repo / f.name).write_text(text.replace("../../_traces/", "traces/"), encoding="utf-8")
    return repo


def _findings(repo: Path, code: str, *extra: str) -> tuple[int, list[dict[str, object]]]:
    status, out, err = run_cli(
        ["check", str(repo), "--root", str(repo), "--no-cache", "--now", "2026-12-01", *extra, "--format", "json"]
    )
    return status, [f for f in json.loads(out)["findings"] if f["code"] == code]


def test_a_loosened_configuration_is_reported_through_the_cli(tmp_path: Path) -> None:
    repo = _repo_from(tmp_path, "PL977/fail")
    _, found = _findings(repo, "PL977")
    assert [f["message"] for f in found] == [
        ("cluster prod is judged with a loosened gate: PL961 max_share = 0.5, looser than its default 0.1"
         " [accept: PL961.max_share=0.5]; PL966 reports as warning, not error [accept: PL966.severity=warning];"
         " PL972 (measurement-copied) is ignored [accept: PL972.ignore]")
    ]
    # the same repository without the configuration: nothing to report
    (repo / ".policylint.yaml").unlink()
    assert _findings(repo, "PL977")[1] == []


def _gate(repo: Path, config: str) -> list[str]:
    (repo / ".policylint.yaml").write_text(config, encoding="utf-8")
    status, found = _findings(repo, "PL977")
    assert status in (0, 1)
    return [str(f["message"]).split(": ", 1)[1] for f in found]


def test_a_tolerated_count_of_loosenings_is_gone_and_each_accepted_loosening_is_named(tmp_path: Path) -> None:
    """Red team, 2026-12-06: `PL977: {max_loosened: 10}` tolerated any ten loosenings, so three
    thresholds loosened later passed without a word. A reviewed loosening is accepted by the word
    its sentence ends with, and the word holds the value: any other loosening, the accepted option
    moved further, or another loosening traded for it, is reported."""
    repo = _repo_from(tmp_path, "PL977/pass")
    loosened = "  PL961: {max_share: 0.5}\n  PL113: {severity: info}\n"
    # the old count stops the run with one message naming the key, and says what replaced it
    (repo / ".policylint.yaml").write_text("rules:\n  PL977: {max_loosened: 10}\n" + loosened, encoding="utf-8")
    status, out, err = run_cli(["check", str(repo), "--root", str(repo), "--no-cache", "--now", "2026-12-01"])
    assert status == 2 and out == "" and "rules.PL977.max_loosened" in err and "accept" in err, err
    assert len(err.strip().splitlines()) == 1, err
    # both accepted by name: nothing to report
    accepted = 'rules:\n  PL977: {accept: "PL961.max_share=0.5 PL113.severity=info"}\n'
    assert _gate(repo, accepted + loosened) == []
    # the accepted option moved further: reported, with the word that would accept the new value
    assert _gate(repo, accepted + loosened.replace("0.5", "0.9")) == [
        "PL961 max_share = 0.9, looser than its default 0.1 [accept: PL961.max_share=0.9]"]
    # one accepted loosening traded for another: the new one is reported, the stale word accepts nothing
    assert _gate(repo, accepted + "  PL961: {max_share: 0.5}\n  PL966: {severity: warning}\n") == [
        "PL966 reports as warning, not error [accept: PL966.severity=warning]"]
    # a loosening added beside the accepted ones
    assert _gate(repo, accepted + loosened + "ignore: [PL972]\n") == [
        "PL972 (measurement-copied) is ignored [accept: PL972.ignore]"]
    # the words as a YAML list accept the same
    assert _gate(repo, 'rules:\n  PL977: {accept: ["PL961.max_share=0.5", PL113.severity=info]}\n' + loosened) == []
    # accepting is not itself a loosening, and a select is pinned to its list
    assert _gate(repo, 'select: [PL0, PL101]\nrules:\n  PL977: {accept: "select=PL0,PL101"}\n') == []
    assert _gate(repo, 'select: [PL0]\nrules:\n  PL977: {accept: "select=PL0,PL101"}\n')[0].startswith(
        "its select leaves out ")


def test_vram_traces_and_job_lists_after_now_fail_through_the_cli(tmp_path: Path) -> None:
    repo = _repo_from(tmp_path, "PL960/fail")
    status, found = _findings(repo, "PL960", "--isolated", "--select", "PL960")
    assert status == 1
    by_subject = {(f["subject"], str(f["message"]).split("'s ")[1].split(" runs")[0]) for f in found}
    assert by_subject == {
        ("workload chat", "concurrency trace"),
        ("workload llm-future", "VRAM trace"),
        ("workload pretrain-future", "job list"),
    }
    # the VRAM trace and the job list both end exactly ten days after now
    assert sum("runs 10.0 d past now" in str(f["message"]) for f in found) == 2


def test_values_edited_inside_a_pulled_range_fail_through_the_cli(tmp_path: Path) -> None:
    repo = _repo_from(tmp_path, "PL978/fail")
    status, found = _findings(repo, "PL978", "--isolated", "--select", "PL978")
    assert status == 1 and len(found) == 1
    assert "its SHA-256 differs from the one its provenance record holds" in str(found[0]["message"])
    # PL969 sees nothing: the first and last samples are where the pull left them
    assert _findings(repo, "PL969", "--isolated", "--select", "PL969")[1] == []


def test_a_row_filter_on_the_value_column_of_a_time_series_is_refused(tmp_path: Path) -> None:
    """Red team, 2026-12-06 (round 8): `where: {in_flight: {gt: 150}}` on an unmodified trace dropped 67% of its
    samples - the quiet ones - with only an info note; PL961 allows 10% for declared exclusions."""
    from policylint.errors import MeasurementError

    wide = tmp_path / "wide.csv"
    wide.write_text("timestamp,model,in_flight\n" + "".join(f"{60 * i},{'a' if i % 2 else 'b'},{i % 7}\n" for i in range(200)))
    with pytest.raises(MeasurementError, match="value column 'in_flight'"):
        traces.read_series(wide, where={"in_flight": {"gt": 3}}, value_columns=["in_flight"])
    plain = tmp_path / "plain.csv"
    plain.write_text("timestamp,in_flight\n" + "".join(f"{60 * i},{i % 7}\n" for i in range(200)))
    with pytest.raises(MeasurementError, match="value column 'in_flight'"):  # the value column found by the reader
        traces.read_series(plain, where={"in_flight": {"ge": 1}})
    # a filter on a column that says whose rows they are reads as before (two models' rows at every time)
    both = tmp_path / "both.csv"
    both.write_text("timestamp,model,in_flight\n" + "".join(f"{60 * i},{m},{i % 7}\n" for i in range(100) for m in "ab"))
    kept = traces.read_series(both, where={"model": "b"}, value_columns=["in_flight"])
    assert kept.values.size == 100
    long = tmp_path / "long.csv"
    long.write_text("timestamp,pod,in_flight\n" + "".join(f"{60 * (i // 2)},p{i % 2},{i % 5}\n" for i in range(200)))
    with pytest.raises(MeasurementError, match="value column 'in_flight'"):
        traces.read_series(long, where={"in_flight": {"lt": 4}}, key_column="pod", aggregate="sum")
    assert traces.read_series(long, where={"pod": "p0"}, key_column="pod", aggregate="sum").values.size == 100


def test_an_aggregate_exported_beside_its_parts_is_refused(tmp_path: Path) -> None:
    """Red team, 2026-12-06 (rounds 8 and 9): a Prometheus answer with three per-pod series and, under the
    same metric name, their total (job="federate") summed to twice the demand; so did the total with one
    sample nudged, and a zone's subtotal of two of the pods. No series was a copy of another."""
    from policylint.errors import MeasurementError
    from policylint.readers.grid import refuse_repeated

    rng = np.random.default_rng(7)
    times = np.arange(500, dtype=np.float64) * 60
    pods = [rng.integers(0, 40, size=500).astype(np.float64) for _ in range(3)]
    total = pods[0] + pods[1] + pods[2]
    parts = [(f"pod-{i}", times, v) for i, v in enumerate(pods)]
    refuse_repeated(parts, "pods")  # measured replicas alone: their noise is their own
    with pytest.raises(MeasurementError, match=r"series federate is the total of 3 other series \(pod-0, pod-1, pod-2\)"
                                               r" at 500 of the 500 samples"):
        refuse_repeated([*parts, ("federate", times, total)], "pods")
    # the total with one request more at one sample is still the total
    nudged = total.copy()
    nudged[250] += 1
    with pytest.raises(MeasurementError, match="at 499 of the 500 samples"):
        refuse_repeated([*parts, ("federate", times, nudged)], "pods")
    # a subtotal of two of them (a zone, a node)
    with pytest.raises(MeasurementError, match=r"series zone-a is the total of 2 of the other series \(pod-0, pod-1\)"):
        refuse_repeated([*parts, ("zone-a", times, pods[0] + pods[1])], "pods")
    # a replica that started later: the fit and the test use the samples every series has
    late = [("pod-0", times, pods[0]), ("pod-1", times, pods[1]), ("pod-2", times[100:], pods[2][100:])]
    with pytest.raises(MeasurementError, match="is the total of 3 other series"):
        refuse_repeated([*late, ("all", times, total - np.r_[pods[2][:100], np.zeros(400)])], "pods")
    # a wide table: columns share one time axis
    with pytest.raises(MeasurementError, match="series total is the total"):
        refuse_repeated([(f"c{i}", np.empty(0), v) for i, v in enumerate(pods)] + [("total", np.empty(0), total)], "wide")
    # a fourth pod whose traffic follows the others' sum loosely is a pod, not their total
    loose = total + rng.integers(-3, 4, size=500)
    refuse_repeated([*parts, ("pod-3", times, np.clip(loose, 0, None))], "pods")
    # through the reader: the Prometheus answer of the game
    answer = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "inflight", "pod": name}, "values": [[float(t), str(int(x))] for t, x in zip(times, v, strict=True)]}
        for name, v in [("a", pods[0]), ("b", pods[1]), ("c", pods[2]), ("federate", total)]]}}
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(answer), encoding="utf-8")
    with pytest.raises(MeasurementError, match="is the total of 3 other series"):
        traces.read_series(path)


def test_an_exclusion_time_in_an_offset_no_time_zone_has_is_refused() -> None:
    """Red team, 2026-12-06 (round 8): `start: 2026-10-14T09:00:00+23:59` read as a six-hour window removed thirty hours."""
    from policylint.readers.timestamps import parse_exclusion

    six_hours = parse_exclusion("2026-10-14T09:00:00+14:00/2026-10-14T15:00:00+14:00")
    assert six_hours.end - six_hours.start == 6 * 3600
    for text in ("2026-10-14T09:00:00+23:59/2026-10-14T15:00:00Z", "2026-10-14T09:00:00Z/2026-10-14T15:00:00-1501"):
        with pytest.raises(ValueError, match="which no time zone has"):
            parse_exclusion(text)


def test_a_row_filter_that_leaves_times_out_of_a_time_series_is_refused(tmp_path: Path) -> None:
    """Red team, 2026-12-06 (round 9): a `change` column (this sample minus the previous one) and
    `where: {change: {ge: 0}}` dropped every falling sample - 49% of a trace - past the value-column test."""
    from policylint.errors import MeasurementError

    values = [(i * 37) % 11 for i in range(300)]
    rows = "".join(f"{60 * i},{v},{v - (values[i - 1] if i else v)},{v}\n" for i, v in enumerate(values))
    derived = tmp_path / "derived.csv"
    derived.write_text("timestamp,in_flight,change,copy\n" + rows)
    for where in ({"change": {"ge": 0}}, {"copy": {"gt": 3}}):
        with pytest.raises(MeasurementError, match=r"where leaves out [\d,]+ of the 300 times of this time series"):
            traces.read_series(derived, where=where, value_columns=["in_flight"])
    # an export holding two regions' rows at every time: a filter on the region keeps every time
    regions = tmp_path / "regions.csv"
    regions.write_text("timestamp,region,in_flight\n" + "".join(
        f"{60 * i},{r},{(i * 7 + len(r)) % 13}\n" for i in range(300) for r in ("eu", "us")))
    eu = traces.read_series(regions, where={"region": "eu"}, value_columns=["in_flight"])
    assert eu.values.size == 300 and eu.notes == ("300 rows of 600 dropped by the filter (region = eu: 300 failed)",)
