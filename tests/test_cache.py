"""The measurement cache and parallel measuring: faster runs, never different answers."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import EXAMPLES, REPO, copy_minirepo, minirepo_path, replace_once, run_cli
from fixture_helpers import MINI_POOLS

from policylint.cache import digests as digest_cache
from policylint.measure import cache_encoding as encoding
from policylint.measure import measurement_cache as measure_cache
from policylint.cache import store
from policylint.engine.linter import LintOptions, lint
from policylint.engine.ruleset import load_rules_cached
from policylint.measure.facts import PoolFacts, WorkloadFacts
from policylint.measure.pools import CachedPool, measure_pool, measure_pools
from policylint.measure.run import measure
from policylint.model import Model

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
WHEN = ["--now", "2026-12-01"]


def entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.entry"))


def copy_good(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "good", repo)
    return repo


def copy_mini(tmp_path: Path) -> Path:
    """A copy of the small shared repository: three traced workloads, reranker and chat-assistant among them."""
    return copy_minirepo(tmp_path / "repo")


def model_of(repo: Path) -> Model:
    result = lint([repo], LintOptions(root=repo, now=NOW))
    assert result.model is not None
    return result.model


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every trace the readers open from now on."""
    from policylint import traces

    calls: list[str] = []
    for name in ("read_series", "read_jobs"):
        real = getattr(traces, name)

        def counting(path, _real=real, **kwargs):  # type: ignore[no-untyped-def]
            calls.append(Path(path).name)
            return _real(path, **kwargs)

        monkeypatch.setattr(traces, name, counting)
    return calls


def assert_same_facts(a: WorkloadFacts, b: WorkloadFacts) -> None:
    """Every figure and array of two measurements agrees exactly (NaN where NaN)."""
    assert (a.report is None) == (b.report is None)
    if a.report is not None and b.report is not None:
        assert a.report.to_dict() == b.report.to_dict()
        assert a.report.spikes == b.report.spikes
    # The facts keep the cleaned series' GPU demand and highest sample, not the series itself.
    assert (a.demand is None) == (b.demand is None)
    if a.demand is not None and b.demand is not None:
        assert a.demand.gpus.dtype == b.demand.gpus.dtype
        assert np.array_equal(a.demand.gpus, b.demand.gpus, equal_nan=True)
        assert np.array_equal(a.demand.axis().view(np.int64), b.demand.axis().view(np.int64))
        assert a.demand.step_seconds == b.demand.step_seconds
    assert a.usable_max == b.usable_max
    for name in ("step_seconds", "last_sample", "p50", "p90", "p99", "tail_ratio", "tail_job_gpus",
                 "vram_ratio", "vram_resident_gib", "cold_start_seconds", "flat_days", "errors"):
        assert getattr(a, name) == getattr(b, name), name
    assert (a.sustained_max == b.sustained_max) or (a.sustained_max != a.sustained_max and b.sustained_max != b.sustained_max)


# --- byte-identical output --------------------------------------------------------------------


def target_of(example: str) -> str:
    """A clean repository (the small shared one) or one with findings (examples/bad)."""
    return str(minirepo_path() if example == "clean" else EXAMPLES / example)


#: Cleanly measured traced workloads of each target (each gets a cache entry).
STORED = {"clean": sum(len(pool) for pool in MINI_POOLS.values()), "bad": 4}


@pytest.mark.parametrize("example", ["clean", "bad"])
def test_cached_runs_print_exactly_what_uncached_runs_print(example: str, cache_dir: Path) -> None:
    target = target_of(example)
    fresh = run_cli(["check", target, "--format", "json", "--no-cache", *WHEN])
    assert not cache_dir.exists()  # --no-cache writes nothing either
    cold = run_cli(["check", target, "--format", "json", *WHEN])
    assert len(entries(cache_dir)) >= STORED[example]  # every cleanly measured traced workload was stored
    warm = run_cli(["check", target, "--format", "json", *WHEN])
    assert fresh == cold == warm
    assert fresh[0] in (0, 1) and fresh[2] == ""


def test_a_warm_run_reads_no_trace(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_cli(["check", target_of("clean"), *WHEN])
    calls = count_reads(monkeypatch)
    code, out, _ = run_cli(["check", target_of("clean"), *WHEN])
    assert code == 0, out
    assert calls == []


def test_cached_facts_equal_measured_facts(tmp_path: Path) -> None:
    model = model_of(copy_mini(tmp_path))
    fresh, fresh_findings = measure(model, NOW)
    measure(model, NOW, cache_dir=tmp_path / "c")
    cached, cached_findings = measure(model, NOW, cache_dir=tmp_path / "c")
    assert fresh_findings == cached_findings == []
    assert sorted(fresh) == sorted(cached)
    for name in fresh:
        assert_same_facts(fresh[name], cached[name])


# --- invalidation -----------------------------------------------------------------------------


def test_a_changed_trace_is_measured_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = copy_mini(tmp_path)
    folder = tmp_path / "c"
    before = measure(model_of(repo), NOW, cache_dir=folder)[0]
    trace = repo / "measurements" / "traces" / "reranker.csv"
    lines = trace.read_text().splitlines()
    # double every sample: same timestamps, twice the demand
    doubled = [lines[0], *(f"{t},{int(v) * 2}" for t, v in (line.split(",") for line in lines[1:]))]
    trace.write_text("\n".join(doubled) + "\n")
    model = model_of(repo)
    calls = count_reads(monkeypatch)
    after = measure(model, NOW, cache_dir=folder)[0]
    assert calls == ["reranker.csv"]  # the others came from the cache
    old, new = before["reranker"].report, after["reranker"].report
    assert old is not None and new is not None
    assert new.peak == 2 * old.peak and new.baseline == 2 * old.baseline
    monkeypatch.undo()
    assert_same_facts(after["reranker"], measure(model, NOW)[0]["reranker"])


def test_a_moved_repository_finds_its_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries are keyed by a trace's bytes and name, not by where the repository lies (a CI clone)."""
    folder = tmp_path / "c"
    first = copy_minirepo(tmp_path / "first")
    before = measure(model_of(first), NOW, cache_dir=folder)[0]
    moved = copy_minirepo(tmp_path / "elsewhere" / "second")
    model = model_of(moved)
    calls = count_reads(monkeypatch)
    after = measure(model, NOW, cache_dir=folder)[0]
    assert calls == []
    assert sorted(before) == sorted(after)
    for name in before:
        assert_same_facts(before[name], after[name])


def test_a_moved_repository_with_other_bytes_is_measured_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "c"
    measure(model_of(copy_minirepo(tmp_path / "first")), NOW, cache_dir=folder)
    moved = copy_minirepo(tmp_path / "second")
    trace = moved / "measurements" / "traces" / "reranker.csv"
    lines = trace.read_text().splitlines()
    trace.write_text("\n".join([lines[0], *(f"{t},{int(v) + 1}" for t, v in (x.split(",") for x in lines[1:]))]) + "\n")
    model = model_of(moved)
    calls = count_reads(monkeypatch)
    measured = measure(model, NOW, cache_dir=folder)[0]
    assert calls == ["reranker.csv"]
    monkeypatch.undo()
    assert_same_facts(measured["reranker"], measure(model, NOW)[0]["reranker"])


def test_a_changed_setting_is_measured_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = copy_mini(tmp_path)
    folder = tmp_path / "c"
    before = measure(model_of(repo), NOW, cache_dir=folder)[0]
    replace_once(repo / "workloads" / "search.yaml", "coldStartSeconds: 1200", "coldStartSeconds: 1800")
    model = model_of(repo)
    calls = count_reads(monkeypatch)
    after = measure(model, NOW, cache_dir=folder)[0]
    assert calls == ["reranker.csv"]
    assert before["reranker"].cold_start_seconds == 1200 and after["reranker"].cold_start_seconds == 1800
    monkeypatch.undo()
    assert_same_facts(after["reranker"], measure(model, NOW)[0]["reranker"])


def test_the_date_of_the_run_does_not_shape_the_facts(tmp_path: Path) -> None:
    """``now`` is left out of the key: measuring must not depend on it (staleness is a rule's job)."""
    model = model_of(copy_mini(tmp_path))
    early, late = measure(model, NOW)[0], measure(model, NOW + dt.timedelta(days=400))[0]
    for name in early:
        assert_same_facts(early[name], late[name])


def test_trace_limits_are_part_of_the_key(tmp_path: Path) -> None:
    from policylint.readers.limits import TraceLimits

    model = model_of(copy_mini(tmp_path))
    workload = model.workloads["reranker"]
    assert measure_cache.workload_key(workload, None) != measure_cache.workload_key(workload, TraceLimits(max_rows=10))
    assert measure_cache.workload_key(workload, None) == measure_cache.workload_key(workload, None)


def test_untraced_workloads_are_not_cached(tmp_path: Path) -> None:
    model = model_of(copy_good(tmp_path))
    untraced = [w for w in model.workloads.values() if not any(r.path for r in w.measurements.values())]
    for workload in untraced:
        assert measure_cache.workload_key(workload, None) is None


# --- damaged entries --------------------------------------------------------------------------


def test_damaged_entries_are_ignored_and_rewritten(cache_dir: Path) -> None:
    target = str(EXAMPLES / "bad")
    expected = run_cli(["check", target, "--format", "json", "--no-cache", *WHEN])
    run_cli(["check", target, "--format", "json", *WHEN])
    files = entries(cache_dir)
    assert len(files) >= 3
    files[0].write_bytes(files[0].read_bytes()[:100])  # truncated mid-archive
    files[1].write_bytes(b"not a cache entry at all")  # garbage
    files[2].write_bytes(b"")  # empty
    assert run_cli(["check", target, "--format", "json", *WHEN]) == expected
    for path in files[:3]:
        key = path.stem
        assert measure_cache.load(cache_dir, key) is not None, f"{path.name} was not rewritten"


def test_an_entry_under_the_wrong_name_is_not_trusted(tmp_path: Path) -> None:
    model = model_of(copy_mini(tmp_path))
    folder = tmp_path / "c"
    measure(model, NOW, cache_dir=folder)
    a, b = (measure_cache.workload_key(model.workloads[n], None) for n in ("reranker", "chat-assistant"))
    assert a is not None and b is not None
    path_a = measure_cache._entry_path(folder, a)
    shutil.copyfile(measure_cache._entry_path(folder, b), path_a)  # b's facts filed under a's key
    assert measure_cache.load(folder, a) is None
    facts = measure(model, NOW, cache_dir=folder)[0]
    assert_same_facts(facts["reranker"], measure(model, NOW)[0]["reranker"])


@pytest.mark.parametrize(
    "facts",
    [
        {"$class": "subprocess:Popen", "fields": {"args": "true"}},
        {"$class": "policylint.measure:WorkloadFacts", "fields": {"no_such_field": 1}},
        {"$columns": "os:system", "n": 1, "fields": {}},
    ],
)
def test_an_entry_names_only_policylint_dataclasses_with_current_fields(tmp_path: Path, facts: object) -> None:
    """The JSON of an entry cannot make the reader build anything else."""
    key = "ab" * 32
    path = measure_cache._entry_path(tmp_path, key)
    store.write_entry(path, {"format": store.FORMAT_VERSION, "key": key, "facts": facts}, {})
    assert measure_cache.load(tmp_path, key) is None


def test_an_unwritable_cache_folder_costs_speed_not_correctness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(blocker))
    expected = run_cli(["check", target_of("clean"), "--format", "json", "--no-cache", *WHEN])
    assert run_cli(["check", target_of("clean"), "--format", "json", *WHEN]) == expected


# --- concurrency and --jobs -------------------------------------------------------------------


@pytest.mark.realtool
def test_two_concurrent_runs_share_one_cache_folder(tmp_path: Path) -> None:
    env = {**os.environ, "POLICYLINT_CACHE_DIR": str(tmp_path / "c"), "NO_COLOR": "1"}
    command = [sys.executable, "-m", "policylint", "check", str(EXAMPLES / "bad"), "--format", "json", *WHEN]
    runs = [subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [1, 1]
    assert outputs[0] == outputs[1]
    assert outputs[0][1] == b""
    expected = run_cli(["check", str(EXAMPLES / "bad"), "--format", "json", "--no-cache", *WHEN])[1]
    assert outputs[0][0].decode() == expected
    assert not [p for p in (tmp_path / "c").rglob("*") if p.name.startswith(".tmp-")]


@pytest.mark.parametrize("example", ["clean", "bad"])
def test_jobs_give_the_same_result_as_one_process(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from policylint.measure import parallel

    started: list[int] = []
    real = parallel.measure_parallel

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(*args, **kwargs)
        started.append(len(out))
        return out

    monkeypatch.setattr(parallel, "measure_parallel", spy)
    # these repositories hold fewer workloads than make processes pay; force them here
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORKLOADS", 2)
    target = target_of(example)
    one = run_cli(["check", target, "--format", "json", "--no-cache", "--jobs", "1", *WHEN])
    assert started == []
    two = run_cli(["check", target, "--format", "json", "--no-cache", "--jobs", "2", *WHEN])
    assert one == two
    assert len(started) == 1 and started[0] >= parallel.PARALLEL_MIN_WORKLOADS


def test_a_parallel_cold_run_hashes_new_traces_in_its_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Traces without a digest record are hashed by the worker that measures them: same report, same entries."""
    from policylint.measure import parallel

    rekeyed: list[frozenset[str]] = []
    real = parallel.measure_parallel

    def spy(model, names, keys, rekey, *rest):  # type: ignore[no-untyped-def]
        rekeyed.append(rekey)
        return real(model, names, keys, rekey, *rest)

    monkeypatch.setattr(parallel, "measure_parallel", spy)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORKLOADS", 2)
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(tmp_path / "c"))
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    traces = list(repo.joinpath("measurements").rglob("*.*"))
    monkeypatch.setattr(digest_cache, "_RACY_SECONDS", -60.0)  # the files were just written: record their digests at once
    command = ["check", str(repo), "--format", "json", "--jobs", "2", *WHEN]
    expected = run_cli(["check", str(repo), "--format", "json", "--no-cache", "--jobs", "1", *WHEN])
    assert run_cli(command) == expected
    assert len(rekeyed) == 1 and len(rekeyed[0]) >= 2  # the first workload is hashed before the fork
    entries = {p: p.stat().st_mtime_ns for p in (tmp_path / "c").glob("measure-v*/*/*.entry")}
    # every trace hashed, its digest recorded - in the run's digest tables, the workers' rows included
    assert not list((tmp_path / "c").glob("stat-v*"))  # no entry of its own per trace
    tables = list((tmp_path / "c").glob("stattable-v*/*/*.json"))
    rows = {real for t in tables for real in json.loads(store.unseal_json(tmp_path / "c", "stattable", t.read_bytes()) or b"{}").get("files", {})}
    assert entries and len(rows & {os.path.realpath(t) for t in traces}) >= len(entries)

    # New file times, same bytes (a fresh clone): the workers hash again and find every entry.
    rekeyed.clear()
    for trace in traces:
        os.utime(trace, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    assert run_cli(command) == expected
    assert len(rekeyed) == 1 and rekeyed[0]
    assert {p: p.stat().st_mtime_ns for p in entries} == entries  # hits: nothing measured or stored again


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_cold_run_with_the_cache_reads_each_new_trace_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    """The bytes hashed for a trace's cache key are the bytes its reader parses: no second read of the file.

    Every reader that does not take the hashed bytes opens the file again through
    ``readers.read_start``; the spy logs those opens to a file, so the workers of a
    parallel run (forked after the spy is set) log theirs too; ``PARALLEL_MIN_WORKLOADS`` is
    lowered so that this small repository's new traces count as many. Without the cache
    nothing is hashed, and every trace read goes through ``read_start``: the spy sees it.
    """
    import policylint.readers as readers
    from policylint.measure import parallel

    log = tmp_path / "opened.txt"
    real = readers.read_start

    def spy(source: Any) -> Any:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{source.path}\n")
        return real(source)

    monkeypatch.setattr(readers, "read_start", spy)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORKLOADS", 2)
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    csv_traces = sorted(os.path.realpath(p) for p in repo.joinpath("measurements").rglob("*.csv"))
    assert len(csv_traces) >= 2

    def opened() -> list[str]:
        found = sorted(os.path.realpath(line) for line in log.read_text(encoding="utf-8").split()) if log.exists() else []
        log.unlink(missing_ok=True)
        return [p for p in found if p in csv_traces]

    expected = run_cli(["check", str(repo), "--format", "json", "--no-cache", "--jobs", jobs, *WHEN])
    from collections import Counter

    read = Counter(opened())  # the spy sees every read that is not handed the hashed bytes
    assert len(read) >= 4
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(tmp_path / "c"))
    assert run_cli(["check", str(repo), "--format", "json", "--jobs", jobs, *WHEN]) == expected
    # hashed beside its measuring (by a worker, or by the one process), then parsed from the same
    # bytes: one read less per trace (a trace read twice without the cache - cited twice - is opened
    # once more for its second reading)
    assert Counter(opened()) == read - Counter(set(read))

    # New file times, same bytes (a fresh clone): hashed again, every entry found - and the bytes
    # kept for a reader that never comes are let go, not held to the end of the run
    from policylint.readers import kept

    for trace in repo.joinpath("measurements").rglob("*.*"):
        os.utime(trace, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    assert run_cli(["check", str(repo), "--format", "json", "--jobs", jobs, *WHEN]) == expected
    assert opened() == [] and not kept._KEPT


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_trace_rewritten_between_its_hashing_and_its_reading_is_not_kept_under_the_old_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """The facts read from new bytes are neither stored nor pooled under a key naming the old ones.

    A trace is rewritten just before its reader opens it (after its digest went into the
    key). When its old bytes come back, a run with the cache must say what a run without
    it says - not the facts of the bytes that were there in between.
    """
    import policylint.readers as readers
    from policylint.measure import parallel

    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORKLOADS", 2)
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    victim = repo / "measurements" / "traces" / "chat-assistant.csv"
    original = victim.read_bytes()
    other = (repo / "measurements" / "traces" / "code-completion.csv").read_bytes()
    real_take = readers.take
    rewritten: list[str] = []

    def racing_take(path: Any) -> Any:
        if os.path.realpath(path) == os.path.realpath(victim) and not rewritten:
            victim.write_bytes(other)  # rewritten between its hashing and its reading
            rewritten.append(str(path))
        return real_take(path)

    monkeypatch.setattr(readers, "take", racing_take)
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(tmp_path / "c"))
    command = ["check", str(repo), "--format", "json", "--jobs", jobs, *WHEN]
    run_cli(command)
    assert rewritten or jobs == "2"  # in a worker the spy's list is the worker's own
    assert victim.read_bytes() == other
    monkeypatch.setattr(readers, "take", real_take)
    victim.write_bytes(original)  # the old bytes are back
    expected = run_cli(["check", str(repo), "--format", "json", "--no-cache", "--jobs", "1", *WHEN])
    assert run_cli(command) == expected
    assert run_cli(command) == expected


def test_a_narrowed_run_whose_trace_is_rewritten_while_measured_keeps_nothing_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pre-commit path: a spec edit sends its workload to be measured again, and its trace changes meanwhile.

    Its digest comes from the digest table (the trace is settled, so nothing is hashed); the
    reader then reads bytes the key does not name. Neither the workload's entry nor its
    pool's sum may be kept under that key: with the old bytes back, the cached runs print
    what ``--no-cache`` prints.
    """
    import policylint.readers as readers

    monkeypatch.setattr(digest_cache, "_RACY_SECONDS", -60.0)  # just written, yet recorded at once
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    victim = repo / "measurements" / "traces" / "chat-assistant.csv"
    original = victim.read_bytes()
    other = (repo / "measurements" / "traces" / "code-completion.csv").read_bytes()
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(tmp_path / "c"))
    run_cli(["check", str(repo), "--format", "json", *WHEN])  # fills the cache and the digest table
    spec = repo / "workloads" / "product-ai.yaml"
    spec.write_text(spec.read_text(encoding="utf-8").replace("maxQueueSeconds: 0.5", "maxQueueSeconds: 0.6", 1),
                    encoding="utf-8")
    real_take = readers.take
    rewritten: list[bool] = []

    def racing_take(path: Any) -> Any:
        if os.path.realpath(path) == os.path.realpath(victim) and not rewritten:
            victim.write_bytes(other)  # another workload's trace, while it is measured
            rewritten.append(True)
        return real_take(path)

    monkeypatch.setattr(readers, "take", racing_take)
    narrowed = ["check", "--changed-files", str(spec), "--format", "json", *WHEN]
    with contextlib.chdir(repo):
        run_cli(narrowed)
        assert rewritten and victim.read_bytes() == other
        monkeypatch.setattr(readers, "take", real_take)
        in_between = run_cli([*narrowed, "--no-cache"])
        victim.write_bytes(original)
        expected = run_cli([*narrowed, "--no-cache"])
        assert in_between != expected  # the bytes read in between show in the findings
        assert run_cli(narrowed) == expected
    assert run_cli(["check", str(repo), "--format", "json", *WHEN]) == run_cli(
        ["check", str(repo), "--format", "json", "--no-cache", *WHEN])


def test_jobs_must_be_positive() -> None:
    code, _, err = run_cli(["check", target_of("clean"), "--jobs", "0"])
    assert code == 2
    assert "--jobs" in err and "at least 1" in err


# --- cached rule sets ---------------------------------------------------------------------------


def _rules_copy(tmp_path: Path) -> Path:
    from policylint.resources import rules_dir

    folder = tmp_path / "rules"
    shutil.copytree(rules_dir(), folder)
    return folder


def _count_rule_loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from policylint.engine import ruleset as ruleset_module

    calls: list[int] = []
    real = ruleset_module.load_rules

    def counting(dirs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(dirs)

    monkeypatch.setattr(ruleset_module, "load_rules", counting)
    return calls


def _rule_entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("rules-v*/*.json"))


def test_a_cached_rule_set_equals_a_loaded_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from policylint.resources import rules_dir
    from policylint.engine.ruleset import configure_rules, load_rules

    overrides = {"PL101": {"headroom": 0.3, "severity": "warning"}}
    fresh = configure_rules(load_rules([rules_dir()]), overrides, "cfg")
    folder = tmp_path / "c"
    calls = _count_rule_loads(monkeypatch)
    first = load_rules_cached([rules_dir()], overrides, "cfg", folder)
    second = load_rules_cached([rules_dir()], overrides, "cfg", folder)
    assert calls == [1]  # the second run read the entry, not the rule files
    assert len(_rule_entries(folder)) == 1
    for got in (first, second):
        assert got.rules == fresh.rules and list(got.rules) == list(fresh.rules)
        assert got.params == fresh.params
    assert second.rules["PL101"].severity.label == "warning" and second.params["PL101"]["headroom"] == 0.3
    # no cache folder (--no-cache): plain loading every time, nothing written
    load_rules_cached([rules_dir()], overrides, "cfg", None)
    assert calls == [1, 1]


def test_the_bundled_rules_are_kept_beside_the_rule_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm run takes the catalogue of bundled rules from the rule cache, equal to reading the files."""
    from policylint import catalogue
    from policylint.resources import rules_dir

    read = catalogue._read_bundled()
    folder = tmp_path / "c"
    load_rules_cached([rules_dir()], {}, "cfg", folder)  # fills the entry, the catalogue with it
    (entry,) = _rule_entries(folder)
    assert b'"catalogue"' in entry.read_bytes()
    monkeypatch.setattr(catalogue, "_BUNDLED", None)  # as a new process starts
    parses: list[int] = []
    monkeypatch.setattr(catalogue, "_read_bundled", lambda: parses.append(1) or read)
    load_rules_cached([rules_dir()], {}, "cfg", folder)
    assert catalogue._BUNDLED == read and parses == []
    assert list(catalogue._BUNDLED) == list(read)  # in file order
    # a rule folder without the bundled one keeps no catalogue: its key does not cover those files
    other = tmp_path / "c2"
    load_rules_cached([_rules_copy(tmp_path)], {}, "cfg", other)
    (entry,) = _rule_entries(other)
    assert b'"catalogue"' not in entry.read_bytes()


def test_check_reads_are_kept_beside_the_rule_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm run takes which facts each check function reads from the rule cache, equal to parsing their source."""
    from policylint.engine import reads
    from policylint.engine.checks import CHECKS
    from policylint.resources import rules_dir

    reads._check_reads.cache_clear()
    worked_out = {name: reads._check_reads(name) for name in CHECKS}
    assert any(r is not None for r in worked_out.values()) and None in worked_out.values()  # both kinds kept
    folder = tmp_path / "c"
    monkeypatch.setattr(reads, "_KNOWN", {})
    load_rules_cached([rules_dir()], {}, "cfg", folder)  # fills the entry
    assert reads._KNOWN == {}  # the run that wrote the entry worked them out itself
    # as a new process starts: nothing worked out, no module parsed
    reads._check_reads.cache_clear()
    parsed: list[str] = []
    monkeypatch.setattr(reads, "_check_reads", lambda name: parsed.append(name))
    load_rules_cached([rules_dir()], {}, "cfg", folder)
    assert {name: reads.check_reads(name) for name in CHECKS} == worked_out
    assert parsed == []


@pytest.mark.parametrize(
    "table",
    [None, [], {"no_such_check": None}, "text", {"__all__": ["x"]}],
    ids=["null", "list", "unknown-check", "text", "foreign-key"],
)
def test_a_malformed_reads_table_is_not_taken(table: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from policylint.engine import reads
    from policylint.engine.checks import CHECKS

    monkeypatch.setattr(reads, "_KNOWN", {})
    reads.seed_reads(table)
    assert reads._KNOWN == {}
    name = sorted(CHECKS)[0]
    wrong = {n: None for n in CHECKS} | {name: [1, 2]}  # a name that is not text spoils the whole table
    reads.seed_reads(wrong)
    assert reads._KNOWN == {}
    assert reads.check_reads(name) == reads._check_reads(name)


def test_a_changed_rule_file_is_loaded_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = _rules_copy(tmp_path)
    folder = tmp_path / "c"
    before = load_rules_cached([rules], {}, "cfg", folder)
    bands = rules / "bands.yaml"
    bands.write_text(bands.read_text().replace("default: 0.15", "default: 0.25", 1))  # PL101's headroom
    calls = _count_rule_loads(monkeypatch)
    after = load_rules_cached([rules], {}, "cfg", folder)
    assert calls == [1]
    assert before.params["PL101"]["headroom"] == 0.15 and after.params["PL101"]["headroom"] == 0.25
    # a new rule file in the folder changes the key too
    # (copies of rules have no fix of their own: a `fix:` is only for codes policylint can fix)
    extra = re.sub(r"\n    fix:\n(?:      .*\n)+", "\n", (rules / "bands.yaml").read_text())
    (rules / "zz-extra.yaml").write_text(extra.replace("code: PL1", "code: XL1").replace("name: ", "name: x-"))
    extended = load_rules_cached([rules], {}, "cfg", folder)
    assert calls == [1, 1] and len(extended.rules) > len(after.rules)


def test_a_changed_override_is_configured_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from policylint.resources import rules_dir

    folder = tmp_path / "c"
    calls = _count_rule_loads(monkeypatch)
    plain = load_rules_cached([rules_dir()], {}, "cfg", folder)
    quiet = load_rules_cached([rules_dir()], {"PL101": {"severity": "info"}}, "cfg", folder)
    wider = load_rules_cached([rules_dir()], {"PL101": {"headroom": 0.5}}, "cfg", folder)
    assert calls == [1, 1, 1] and len(_rule_entries(folder)) == 3
    assert plain.rules["PL101"].severity.label == "error" and quiet.rules["PL101"].severity.label == "info"
    assert plain.params["PL101"]["headroom"] == 0.15 and wider.params["PL101"]["headroom"] == 0.5
    # a bad override is an error with or without an entry for the good ones
    from policylint.errors import PolicylintError

    with pytest.raises(PolicylintError, match="must be >= 0"):
        load_rules_cached([rules_dir()], {"PL101": {"headroom": -1}}, "cfg", folder)


@pytest.mark.parametrize(
    "damage",
    ["truncate", "garbage", "wrong-key", "bad-severity", "missing-params", "empty"],
)
def test_a_damaged_rule_entry_is_ignored_and_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    from policylint.resources import rules_dir

    folder = tmp_path / "c"
    good = load_rules_cached([rules_dir()], {}, "cfg", folder)
    (entry,) = _rule_entries(folder)
    text = entry.read_text()
    if damage == "truncate":
        entry.write_text(text[: len(text) // 2])
    elif damage == "garbage":
        entry.write_bytes(os.urandom(512))
    elif damage == "wrong-key":
        entry.write_text(text.replace(entry.stem, "0" * 64))
    elif damage == "bad-severity":
        entry.write_text(text.replace('"severity": "ERROR"', '"severity": "FATAL"', 1))
    elif damage == "missing-params":
        document = json.loads(text)
        document["ruleset"]["params"].pop("PL101")
        entry.write_text(json.dumps(document))
    else:
        entry.write_text("")
    calls = _count_rule_loads(monkeypatch)
    again = load_rules_cached([rules_dir()], {}, "cfg", folder)
    assert calls == [1]  # not trusted: loaded from the rule files
    assert again.rules == good.rules and again.params == good.params
    assert entry.read_text() == text  # and the entry was written back whole


def test_check_output_is_the_same_with_cached_rules_and_follows_a_config_change(cache_dir: Path, tmp_path: Path) -> None:
    repo = tmp_path / "bad"
    shutil.copytree(EXAMPLES / "bad", repo)
    fresh = run_cli(["check", str(repo), "--format", "json", "--no-cache", *WHEN])
    cold = run_cli(["check", str(repo), "--format", "json", *WHEN])
    warm = run_cli(["check", str(repo), "--format", "json", *WHEN])
    assert fresh == cold == warm and _rule_entries(cache_dir)
    assert '"PL101"' in fresh[1]
    config = repo / ".policylint.yaml"
    original = config.read_text()
    assert "rules:" not in original
    config.write_text(original + "\nrules:\n  PL101: {severity: info}\n")
    changed = run_cli(["check", str(repo), "--format", "json", *WHEN])
    uncached = run_cli(["check", str(repo), "--format", "json", "--no-cache", *WHEN])
    assert changed == uncached and changed != warm


# --- reusing trace digests ------------------------------------------------------------------------


def _count_hashing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = digest_cache._file_digest

    def counting(path: Path) -> str:
        calls.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(digest_cache, "_file_digest", counting)
    return calls


def test_an_unchanged_file_is_not_hashed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_cache, "_RACY_SECONDS", 0.0)  # the file was just written: accept it at once
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,c\n2026-01-01T00:00:00Z,1\n")
    calls = _count_hashing(monkeypatch)
    first = digest_cache.known_digest(trace, tmp_path / "c")
    second = digest_cache.known_digest(trace, tmp_path / "c")
    assert first == second == digest_cache._file_digest(trace)
    assert calls == ["t.csv", "t.csv"]  # the third call is the reference above, not a reuse


def test_a_rewrite_that_keeps_size_and_mtime_is_hashed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_cache, "_RACY_SECONDS", 0.0)
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,c\n2026-01-01T00:00:00Z,1\n")
    before = digest_cache.known_digest(trace, tmp_path / "c")
    stat = trace.stat()
    trace.write_text("timestamp,c\n2026-01-01T00:00:00Z,7\n")  # same size
    os.utime(trace, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the old modification time
    assert trace.stat().st_size == stat.st_size and trace.stat().st_mtime_ns == stat.st_mtime_ns
    after = digest_cache.known_digest(trace, tmp_path / "c")
    assert after != before and after == digest_cache._file_digest(trace)


def test_a_file_changed_just_before_hashing_is_not_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,c\n2026-01-01T00:00:00Z,1\n")  # written now: within the racy window
    calls = _count_hashing(monkeypatch)
    digest_cache.known_digest(trace, tmp_path / "c")
    digest_cache.known_digest(trace, tmp_path / "c")
    assert calls == ["t.csv", "t.csv"]
    assert not list((tmp_path / "c").rglob("*.json"))


def test_a_damaged_digest_table_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_cache, "_RACY_SECONDS", 0.0)
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,c\n2026-01-01T00:00:00Z,1\n")
    good = digest_cache.known_digest(trace, tmp_path / "c")
    digest_cache.flush_digests(tmp_path / "c")
    (table,) = (tmp_path / "c").rglob("*.json")
    calls = _count_hashing(monkeypatch)
    for damage in ("", "{", json.dumps({"dir": str(tmp_path), "files": {str(trace): [[], "0" * 64]}})):
        table.write_text(damage)
        assert digest_cache.known_digest(trace, tmp_path / "c") == good
        digest_cache._TABLES.clear()  # as a new run: read from the folder again
    assert calls == ["t.csv"] * 3  # each damaged table: hashed again


def test_a_digest_entry_of_the_old_kind_is_not_believed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries of kind ``stat`` (one per trace, written before the tables alone kept digests) are not read:
    one sealed with this cache's secret and naming the trace's identity now, but an old digest, changes nothing."""
    import hashlib

    monkeypatch.setattr(digest_cache, "_RACY_SECONDS", 0.0)
    folder = tmp_path / "c"
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,c\n2026-01-01T00:00:00Z,1\n")
    old = digest_cache._file_digest(trace)
    trace.write_text("timestamp,c\n2026-01-01T00:00:00Z,2\n")
    real = os.path.realpath(trace)
    document = {"path": real, "stat": store.stat_identity(os.stat(real)), "sha256": old}
    sealed = store.seal_json(folder, "stat", json.dumps(document, separators=(",", ":")).encode())
    assert sealed is not None
    name = hashlib.sha256(real.encode()).hexdigest()
    planted = folder / f"stat-v{store.FORMAT_VERSION}" / name[:2] / f"{name}.json"
    planted.parent.mkdir(parents=True)
    planted.write_bytes(sealed)
    digest_cache._TABLES.clear()
    assert digest_cache.known_digest(trace, folder) == digest_cache._file_digest(trace) != old


def test_rows_hashed_in_a_worker_are_written_by_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A forked worker's tables die with it: it hands its rows over, and only well-formed ones are taken."""
    monkeypatch.setattr(digest_cache, "_RACY_SECONDS", 0.0)
    folder = tmp_path / "c"
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,c\n2026-01-01T00:00:00Z,1\n")
    digest_cache.take_fresh()
    good = digest_cache.known_digest(trace, folder)
    rows = digest_cache.take_fresh()
    assert [r[2:] for r in rows] == [(os.path.realpath(trace), store.stat_identity(trace.stat()), good)]
    assert digest_cache.take_fresh() == []
    digest_cache._TABLES.clear()  # the worker's tables, gone with it
    real = os.path.realpath(trace)
    bad = [("x",), (str(folder), str(tmp_path), real, [1, 2], good), (str(folder), "/elsewhere", real, rows[0][3], good),
           (str(folder), rows[0][1], real, rows[0][3], "z" * 64)]
    digest_cache.adopt(bad + rows)
    digest_cache.flush_digests(folder)
    calls = _count_hashing(monkeypatch)
    assert digest_cache.known_digest(trace, folder) == good and calls == []  # from the table the run wrote
    (table,) = folder.rglob("*.json")
    assert list(json.loads(store.unseal_json(folder, "stattable", table.read_bytes()) or b"{}")["files"]) == [real]


@pytest.mark.parametrize(
    "array",
    [
        np.arange(100, dtype=np.float64) * 300.0 + 1.7e9,  # a regular time axis: stored as start and step
        np.array([-0.0, 1.0, 2.0, 3.0]),  # -0.0 rebuilt would be 0.0: must be stored as is
        np.array([0.0, 0.1, 0.2, 0.30000000000000004, 0.4]),
        np.array([1.0, np.nan, 3.0, 4.0]),
        np.linspace(0.0, 1.0, 7),
        np.array([True, False] * 50),  # packed to bits
        np.ones(65, dtype=np.bool_),
        np.array([5, 6, 7, 8], dtype=np.int64),
    ],
)
def test_entry_arrays_come_back_bit_for_bit(tmp_path: Path, array: np.ndarray) -> None:
    encoder = encoding.Encoder()
    document = {"format": store.FORMAT_VERSION, "key": "k", "facts": encoder.encode((array, array.copy()))}
    path = tmp_path / "e.entry"
    store.write_entry(path, document, encoder.blobs())
    meta, arrays = store.read_entry(path)
    for back in encoding.decode(meta["facts"], arrays):
        assert back.dtype == array.dtype and back.shape == array.shape
        assert back.tobytes() == array.tobytes()
    # a flipped byte anywhere after the header is caught by the checksum
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError):
        store.read_entry(path)


# --- pooled demand ----------------------------------------------------------------------------


def pooled_run(model: Model, folder: Path | None) -> tuple[dict[str, Any], dict[str, WorkloadFacts], dict[str, PoolFacts]]:
    """Measure as ``check`` does: the workloads, then every pool (through the cache when ``folder``)."""
    cached: dict[str, CachedPool] = {}
    facts, findings = measure(model, NOW, cache_dir=folder, pooled=cached)
    assert findings == []
    return cached, facts, measure_pools(model, facts, cache_dir=folder, cached=cached)


def assert_same_pools(a: dict[str, PoolFacts], b: dict[str, PoolFacts]) -> None:
    """Two runs' pooled demand agree exactly: members, figures and the summed series bit for bit."""
    assert sorted(a) == sorted(b)
    for name in a:
        x, y = a[name], b[name]
        assert (x.measured, x.unknown, x.cold_start_seconds) == (y.measured, y.unknown, y.cold_start_seconds)
        assert (x.report is None) == (y.report is None)
        if x.report is not None and y.report is not None:
            assert json.dumps(x.report.to_dict()) == json.dumps(y.report.to_dict())
        assert (x.grid is None) == (y.grid is None)
        if x.grid is not None and y.grid is not None:
            assert x.grid.names == y.grid.names and x.grid.step_seconds == y.grid.step_seconds
            assert np.array_equal(x.grid.times.view(np.int64), y.grid.times.view(np.int64))
            missing = np.isnan(x.grid.pooled)
            assert np.array_equal(missing, np.isnan(y.grid.pooled))
            assert np.array_equal(x.grid.pooled[~missing].view(np.int64), y.grid.pooled[~missing].view(np.int64))


def pool_entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.pool"))


def test_a_warm_run_takes_each_pools_sum_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = model_of(copy_mini(tmp_path))
    folder = tmp_path / "c"
    _, _, fresh = pooled_run(model, None)
    pooled_run(model, folder)
    assert len(pool_entries(folder)) == len(MINI_POOLS)
    calls = count_reads(monkeypatch)
    for summing in ("measure_pool", "_measure_pool", "_update_pool"):
        monkeypatch.setattr(f"policylint.measure.pools.{summing}", lambda *a: pytest.fail("a cached pool was summed again"))
    cached, facts, warm = pooled_run(model, folder)
    assert calls == []
    assert all(c.facts is not None for c in cached.values())
    # the members' series were not read back: only the pools' sums were
    assert all(f.demand is None for f in facts.values())
    assert_same_pools(fresh, warm)


def test_a_changed_member_misses_its_pools_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = copy_mini(tmp_path)
    folder = tmp_path / "c"
    _, _, before = pooled_run(model_of(repo), folder)
    trace = repo / "measurements" / "traces" / "reranker.csv"
    lines = trace.read_text().splitlines()
    trace.write_text("\n".join([lines[0], *(f"{t},{int(v) * 2}" for t, v in (x.split(",") for x in lines[1:]))]) + "\n")
    model = model_of(repo)
    from policylint.measure import pools

    summed: list[str] = []
    real, update = pools._measure_pool, pools._update_pool

    def counting(pool: Any, *args: Any) -> Any:
        summed.append(pool.name)
        return real(pool, *args)

    def updating(pool: Any, *args: Any) -> Any:
        summed.append(pool.name)  # summed again, from its kept sum and the changed member only
        return update(pool, *args)

    monkeypatch.setattr(pools, "_measure_pool", counting)
    monkeypatch.setattr(pools, "_update_pool", updating)
    cached, _, after = pooled_run(model, folder)
    assert set(summed) == {"serving"}  # the pool of the changed workload, and no other
    serving = next(q for q in after if q.endswith("/serving"))
    assert cached[serving].facts is None
    old, new = before[serving].report, after[serving].report
    assert old is not None and new is not None and old.peak is not None and new.peak is not None
    assert new.peak > old.peak
    monkeypatch.undo()
    assert_same_pools(after, pooled_run(model, None)[2])
    # and the new sum was stored: the next run finds it
    assert all(c.facts is not None for c in pooled_run(model, folder)[0].values())


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "wrong name"])
def test_a_damaged_pool_entry_is_summed_again_and_rewritten(tmp_path: Path, damage: str) -> None:
    model = model_of(copy_mini(tmp_path))
    folder = tmp_path / "c"
    _, _, fresh = pooled_run(model, None)
    pooled_run(model, folder)
    first, second = pool_entries(folder)[:2]
    data = first.read_bytes()
    if damage == "truncated":
        first.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        first.write_bytes(b"not a cache entry at all")
    elif damage == "empty":
        first.write_bytes(b"")
    else:
        first.write_bytes(second.read_bytes())  # another pool's sum filed under this pool's key
    assert measure_cache.load_pool(folder, first.stem) is None
    cached, _, warm = pooled_run(model, folder)
    assert sum(c.facts is None for c in cached.values()) == 1
    assert_same_pools(fresh, warm)
    assert measure_cache.load_pool(folder, first.stem) is not None  # written back whole


def test_a_damaged_series_entry_measures_the_workload_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = model_of(copy_mini(tmp_path))
    folder = tmp_path / "c"
    _, _, fresh = pooled_run(model, None)
    pooled_run(model, folder)
    for path in pool_entries(folder) + sorted(folder.glob("poolsum-v*/*/*.sum")):
        path.unlink()  # the sums must be computed again, from the members' series
    key = measure_cache.workload_key(model.workloads["reranker"], None)
    assert key is not None
    series = measure_cache._series_path(folder, key)
    series.write_bytes(series.read_bytes()[:200])
    calls = count_reads(monkeypatch)
    _, facts, warm = pooled_run(model, folder)
    assert calls == ["reranker.csv"]
    monkeypatch.undo()
    assert_same_pools(fresh, warm)
    assert_same_facts(facts["reranker"], measure(model, NOW)[0]["reranker"])
    assert measure_cache.load(folder, key) is not None
