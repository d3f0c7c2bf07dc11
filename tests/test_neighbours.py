"""A one-file run judges a changed workload's neighbours only by the rules that read what they take from it.

The other workloads of a changed workload's pool ("neighbours") are judged by
the rules whose facts can move with the change (:data:`policylint.engine.scope.NEIGHBOUR_FACTS`,
read by the rules according to their metadata), and the narrowed run reports
byte for byte what a fully judged run narrowed the same way reports.
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, assert_narrowed_is_full_narrowed, git, run_cli

from policylint.engine.reads import check_reads, facts_read
from policylint.engine.linter import LintOptions, lint
from policylint.resources import rules_dir
from policylint.engine.ruleset import load_rules
from policylint.engine.scope import NEIGHBOUR_FACTS, neighbour_skips

WHEN = ["--now", "2026-12-01"]
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
TRACES = sorted((EXAMPLES / "good" / "measurements" / "traces").glob("*.csv"))

_CLUSTER = """apiVersion: policylint/v1
kind: Cluster
metadata:
  name: fleet
spec:
  pools:
    - name: shared
      gpu: {model: H100-80GB, memoryGiB: 80}
      reservedGpus: 40
      elastic: {maxGpus: 4, kind: autoscale, coldStartSeconds: 300}
      serves: [inference]
      overflow: queue
      queue: {maxDepth: 100, maxWaitSeconds: 30}
      scheduling: {gang: true, preemption: true}
"""

_WORKLOAD = """apiVersion: policylint/v1
kind: Workload
metadata: {{name: w-{i}, team: team-{team}}}
spec:
  class: inference
  cluster: fleet
  pool: shared
  gpusPerReplica: 1
  concurrency:
    trace: {{path: ../traces/w-{i}.csv, format: csv, timestampColumn: timestamp, columns: [{column}]}}
  perGpuConcurrency: {{value: 4, measuredIn: production, source: load test board}}
  coldStartSeconds: 300
  tolerance: {{maxQueueSeconds: {tolerance}, evidence: "{evidence}"}}
  durations: {{p50Seconds: 600, p90Seconds: 1800, p99Seconds: 3600}}
"""


def _trace(source: Path, i: int) -> str:
    """A copy of ``source`` with one sample raised at a place of its own: a series no other workload has."""
    rows = source.read_text().split("\n")
    at = 1 + (i * 7919) % (len(rows) - 2)
    stamp, value = rows[at].split(",")
    rows[at] = f"{stamp},{int(value) + 1 + i}"
    return "\n".join(rows)


def make_fleet(root: Path, workloads: int = 6) -> Path:
    """One pool of ``workloads`` traced workloads, one file each; the last repeats the one before's trace (PL111)."""
    (root / "workloads").mkdir(parents=True)
    (root / "traces").mkdir()
    (root / "cluster.yaml").write_text(_CLUSTER)
    for i in range(workloads):
        source = TRACES[i % 2]  # the two inference traces of the examples
        column = source.read_text().split("\n", 1)[0].split(",")[1]
        copy_of = i - 1 if i == workloads - 1 else i
        (root / "traces" / f"w-{i}.csv").write_text(_trace(TRACES[copy_of % 2], copy_of))
        # every other workload cites free text as its evidence (a workload-only finding on it)
        evidence = "SLO document, section 3" if i % 2 else "we think so"
        (root / "workloads" / f"w-{i}.yaml").write_text(
            _WORKLOAD.format(i=i, team=i % 3, column=column, tolerance=5 + 10 * i, evidence=evidence)
        )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fleet(tmp_path_factory.mktemp("fleet") / "repo")


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for every case: what is compared is narrowed against full, not cold against warm."""
    return tmp_path_factory.mktemp("neighbours-cache")


def _judge_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """Judge every view with every rule, then narrow what is reported (as tests/test_warm.py does)."""
    from policylint.engine import linter, scope
    from policylint import session

    monkeypatch.setattr(session.Session, "_reported", lambda self, changed, previous=None: None)
    monkeypatch.setattr(linter.Scope, "select", lambda self, views: list(views))
    monkeypatch.setattr(scope, "needed", lambda model, judged: None)


def _workload_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "workloads").rglob("*.yaml"))


EXAMPLE_CASES = [(example, file) for example in ("good", "bad") for file in _workload_files(EXAMPLES / example)]
EXAMPLE_CASES += [("good", "measurements/traces/chat-assistant.csv"), ("bad", "clusters/prod-east.yaml")]


def _compare(root: Path, file: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    runs: dict[str, tuple[int, str, str]] = {}
    for mode in ("narrowed", "full"):
        with monkeypatch.context() as patch:
            if mode == "full":
                _judge_everything(patch)
            runs[mode] = run_cli(["check", "--changed-files", file, "--format", "json", *WHEN], cwd=root)
    assert_narrowed_is_full_narrowed(runs["narrowed"], runs["full"], root, WHEN)
    assert runs["narrowed"][0] in (0, 1) and runs["narrowed"][2] == ""
    return runs["narrowed"]


@pytest.mark.parametrize(("example", "file"), EXAMPLE_CASES, ids=[f"{e}:{f}" for e, f in EXAMPLE_CASES])
def test_a_one_file_run_reports_what_the_full_run_narrowed_the_same_way_reports(
    example: str, file: str, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(shared_cache))
    _compare(EXAMPLES / example, file, monkeypatch)


@pytest.mark.parametrize("file", ["workloads/w-0.yaml", "workloads/w-4.yaml", "traces/w-2.csv", "cluster.yaml"])
def test_the_same_on_a_generated_pool(file: str, fleet: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(shared_cache))
    _compare(fleet, file, monkeypatch)


def _judged(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(rule code, view label) of every rule run on a view."""
    from policylint.engine import evaluate

    judged: list[tuple[str, str]] = []
    original = evaluate.evaluate_rule_on

    def counting(rule, view, params):  # type: ignore[no-untyped-def]
        judged.append((rule.code, view.label))
        return original(rule, view, params)

    monkeypatch.setattr(evaluate, "evaluate_rule_on", counting)
    return judged


def _findings(out: str) -> list[tuple[str, str]]:
    import json

    return sorted((f["code"], f["file"]) for f in json.loads(out)["findings"])


def test_neighbours_are_judged_and_reported_only_by_the_rules_that_read_neighbour_facts(
    fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skipped = neighbour_skips(load_rules([rules_dir()]))
    judged = _judged(monkeypatch)
    code, out, err = run_cli(["check", "--changed-files", "workloads/w-0.yaml", "--no-cache", "--format", "json", *WHEN],
                             cwd=fleet)
    assert err == ""
    on_changed = {c for c, label in judged if label == "workload w-0"}
    on_neighbours = {c for c, label in judged if label.startswith("workload ") and label != "workload w-0"}
    assert on_changed & skipped  # the changed workload: every rule
    assert on_neighbours and not on_neighbours & skipped
    assert {label for _, label in judged if label.startswith("workload ")} == {f"workload w-{i}" for i in range(6)}
    narrowed = _findings(out)
    full = _findings(run_cli(["check", "--no-cache", "--format", "json", *WHEN], cwd=fleet)[1])
    # the repeat of w-4's trace is a neighbour's finding the change can move: reported
    assert ("PL111", "workloads/w-5.yaml") in narrowed
    # what only a neighbour's own documents decide is not reported by a run over w-0's change
    dropped = [(c, f) for c, f in full if f not in ("workloads/w-0.yaml", "cluster.yaml") and c in skipped]
    assert dropped and not set(dropped) & set(narrowed)
    assert [(c, f) for c, f in full if f == "workloads/w-0.yaml"] == [(c, f) for c, f in narrowed if f == "workloads/w-0.yaml"]


def _workload_facts(root: Path) -> dict[str, dict[str, Any]]:
    result = lint([root], LintOptions(root=root, now=NOW, ruleset=load_rules([rules_dir()])))
    return {v.label: v.facts for v in result.views if v.subject == "workload"}


@pytest.mark.parametrize("example", ["fleet", "good"])
def test_a_workloads_change_moves_only_the_neighbour_facts_of_its_neighbours(
    example: str, fleet: Path, tmp_path: Path
) -> None:
    """A changed workload (trace and tolerance) leaves every other fact of every other workload as it was."""
    root = tmp_path / "repo"
    shutil.copytree(fleet if example == "fleet" else EXAMPLES / "good", root)
    before = _workload_facts(root)
    if example == "fleet":
        changed, trace, other = "workload w-1", root / "traces" / "w-1.csv", root / "traces" / "w-2.csv"
        document = root / "workloads" / "w-1.yaml"
    else:
        changed = "workload chat-assistant"
        trace = root / "measurements" / "traces" / "chat-assistant.csv"
        other = root / "measurements" / "traces" / "code-completion.csv"
        document = next(p for p in (root / "workloads").rglob("*.yaml") if "name: chat-assistant" in p.read_text())
    _, rows = other.read_text().split("\n", 1)
    # another series (bands, spikes, shape) under this trace's own column name
    trace.write_text(trace.read_text().split("\n", 1)[0] + "\n" + rows.replace(",", ",1", 400))
    document.write_text(document.read_text().replace("maxQueueSeconds: ", "maxQueueSeconds: 1", 1))
    after = _workload_facts(root)
    assert before.keys() == after.keys()
    moved: set[str] = set()
    for label in before:
        if label == changed:
            continue
        differ = {k for k in before[label].keys() | after[label].keys() if before[label].get(k) != after[label].get(k)}
        assert differ <= NEIGHBOUR_FACTS, (label, differ - NEIGHBOUR_FACTS)
        moved |= differ
    assert moved  # the test changed something the neighbours see


def test_what_a_rule_reads_comes_from_its_metadata() -> None:
    rules = load_rules([rules_dir()]).rules
    reads = facts_read(rules["PL111"])
    assert reads is not None and "measurement_double_counted" in reads and "double_counted_with" in reads
    # a check function's reads come from its source; one that computes fact names reads "anything"
    assert check_reads("vram_exceeds_memory") == {"vram_resident_gib", "pool_gpu_memory_gib", "gpus_per_replica"}
    assert check_reads("queue_wait_below_tolerance") is None
    # names taken by a loop from a module-level table of constant names are read by name
    assert check_reads("declared_bands_drift") == {
        "baseline", "daily", "peak", "declared_baseline", "declared_daily", "declared_peak"}
    assert check_reads("samples_after_now") == {
        "seconds_after_now", "vram_seconds_after_now", "jobs_seconds_after_now", "samples_after_now", "first_sample"}
    skipped = neighbour_skips(load_rules([rules_dir()]))
    assert "PL108" in skipped and "PL960" in skipped and "PL111" not in skipped and "PL972" not in skipped
    assert all(rules[c].subject == "workload" for c in skipped)


def test_a_loop_variable_reads_by_name_only_when_it_holds_nothing_but_a_tables_names() -> None:
    import ast

    from policylint.engine.reads import _loop_names

    source = (
        "def f(facts, params):\n"
        "    for a, b in T:\n"
        "        facts.get(a), facts.get(b)\n"
        "    for c in T:\n"
        "        c = c + 'x'\n"  # assigned again: any name
        "    for d, e in U:\n"  # e holds a number
        "        pass\n"
        "    for g, *h in T:\n"  # a starred target: columns unknown
        "        pass\n"
        "    for k in V:\n"  # a table the function rebinds
        "        pass\n"
        "    V = ()\n"
    )
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef)
    tables = {"T": (("x", "y"), ("z", "w")), "U": (("x", 1),), "V": ("v",)}
    assert _loop_names(function, tables) == {"a": {"x", "z"}, "b": {"y", "w"}, "d": {"x"}}


def test_check_definitions_from_the_module_tree_are_getsources() -> None:
    """check_reads takes each check's definition from its module's tree (parsed once per module); it is the
    same syntax tree as the function's own source would give, for every registered check."""
    import ast
    import functools
    import inspect
    import textwrap

    from policylint.engine import reads
    from policylint.engine.checks import CHECKS

    assert CHECKS
    for name, function in CHECKS.items():
        alone = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
        found = reads._definition(function)
        assert found is not None, name
        assert ast.dump(found) == ast.dump(alone), name
    # what has no code of its own is left to the plain way
    assert reads._definition(functools.partial(print)) is None


def test_a_change_that_cites_another_pools_file_reports_the_copy_wherever_it_lands(tmp_path: Path) -> None:
    """One trace file cited from two pools without a share is PL972's, reported on the workload later by name.

    When the earlier one is the changed file, the finding lands on the other, unchanged
    workload: a narrowed run (the pre-commit hook) still judges and reports it, with
    or without the cache.
    """
    source = Path(__file__).parent / "rules" / "PL972" / "fail" / "same-file-other-pool.yaml"
    cluster, ask, mirror = source.read_text().split("\n---\n")[:3]
    root = tmp_path / "repo"
    (root / "workloads").mkdir(parents=True)
    (root / "cluster.yaml").write_text(cluster + "\n")
    (root / "traces").mkdir()
    shutil.copy(Path(__file__).parent / "rules" / "_traces" / "busy-afternoons.csv", root / "traces" / "ask.csv")
    trace = "../traces/ask.csv"
    (root / "workloads" / "ask.yaml").write_text(ask.replace("../../_traces/busy-afternoons.csv", trace) + "\n")
    (root / "workloads" / "zz-mirror.yaml").write_text(
        mirror.replace("../../_traces/busy-afternoons.csv  # expect: PL972", trace).replace("ask-mirror", "zz-mirror") + "\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    full = [f for f in _findings(run_cli(["check", "--no-cache", "--format", "json", *WHEN], cwd=root)[1]) if f[0] == "PL972"]
    assert full == [("PL972", "workloads/zz-mirror.yaml")]
    for cache in (["--no-cache"], [], []):  # cold, then filled, then warm
        out = run_cli(["check", "--changed-files", "workloads/ask.yaml", "--format", "json", *cache, *WHEN], cwd=root)[1]
        assert ("PL972", "workloads/zz-mirror.yaml") in _findings(out)


@pytest.mark.parametrize(("name", "cluster", "pool"), [
    ("aaa-copy", "train-central", "training"), ("zzz-copy", "train-central", "training"),
    # the red team of 2026-12-06: the next pool of the same cluster is measured by the narrowed run
    # (the cluster's views read it) but judged by no near-copy rule, and was searched for no partner
    ("aaa-copy", "prod-east", "batch"), ("zzz-copy", "prod-east", "batch"),
])
def test_a_near_copy_from_another_cluster_is_reported_by_every_narrowed_run(
    tmp_path: Path, name: str, cluster: str, pool: str
) -> None:
    """A trace copied from another cluster under another file name, five samples changed, is PL972's.

    The narrowed runs measure only the changed workload's pool and cluster; the original
    lies outside both, so they compared nothing and passed what the whole run reports -
    the gate of a pull request (``--diff``) included. Its partners are now found from the
    run sketches (the index's, or measured) and measured with it. "aaa-copy" comes before
    chat-assistant by name, so the finding lands on the unchanged original in the other
    cluster; "zzz-copy" after it, so on the change itself.
    """
    import csv

    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "good", root)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    traces = root / "measurements" / "traces"
    with (traces / "chat-assistant.csv").open(newline="") as fh:
        rows = list(csv.reader(fh))
    for i in (100, 200, 300, 400, 500):
        rows[i][1] = str(int(float(rows[i][1])) + 1)
    with (traces / "assist-copy.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    chat = (root / "workloads" / "product-ai.yaml").read_text().split("\n---\n")[0]
    copy = (chat.replace("name: chat-assistant", f"name: {name}").replace("cluster: prod-east", f"cluster: {cluster}")
            .replace("pool: serving", f"pool: {pool}").replace("chat-assistant.csv", "assist-copy.csv"))
    (root / "workloads" / f"{name}.yaml").write_text(copy + "\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a copy in another cluster")

    def copies(*args: str) -> list[tuple[str, str]]:
        code, out, err = run_cli(["check", *args, "--format", "json", *WHEN], cwd=root)
        assert code == 1 and "Traceback" not in err, err
        return [f for f in _findings(out) if f[0] == "PL972"]

    lands = "workloads/product-ai.yaml" if name < "chat-assistant" else f"workloads/{name}.yaml"
    assert copies("--no-cache") == [("PL972", lands)]
    changed = f"workloads/{name}.yaml"
    for cache in (["--no-cache"], [], []):  # cold, then filled, then warm (the partner from the index)
        assert copies("--changed-files", changed, *cache) == [("PL972", lands)]
        assert copies("--diff", "HEAD~1", *cache) == [("PL972", lands)]
        assert copies(lands, *cache) == [("PL972", lands)]
    # the partner is reported on by the near-copy rules only: chat-assistant's own verdicts did not move
    code, out, _ = run_cli(["check", "--changed-files", changed, "--format", "json", *WHEN], cwd=root)
    assert {f for f in _findings(out) if f[1] == "workloads/product-ai.yaml"} <= {("PL972", "workloads/product-ai.yaml")}



@pytest.mark.parametrize("name", ["aaa-sum", "zzz-sum"])
def test_a_column_copied_from_another_cluster_is_reported_by_every_narrowed_run(tmp_path: Path, name: str) -> None:
    """Another workload's trace pasted in as one more column of a summed trace, one sample raised (PL972).

    Red team, 2026-12-06, round 12: the sum shares few runs with anything and PL111's exact
    column print misses the edit. The column's own sketch pairs it with the original, in
    whole runs and in narrowed runs changing either side - the original's file too, when
    the summing workload lies in another cluster and must be found as a partner. The finding
    lands on the workload whose column it is, whatever the names.
    """
    import csv

    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "good", root)
    traces = root / "measurements" / "traces"
    with (traces / "chat-assistant.csv").open(newline="") as fh:
        rows = list(csv.reader(fh))
    state = 7
    with (traces / "summed.csv").open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["timestamp", "own", "retries"])
        for i, (stamp, value) in enumerate(rows[1:]):
            state = (1103515245 * state + 12345) % (1 << 31)
            out.writerow([stamp, 5 + (state >> 8) % 11, int(float(value)) + (1 if i == 1000 else 0)])
    chat = (root / "workloads" / "product-ai.yaml").read_text().split("\n---\n")[0]
    summed = (chat.replace("name: chat-assistant", f"name: {name}").replace("cluster: prod-east", "cluster: train-central")
              .replace("pool: serving", "pool: training")
              .replace("chat-assistant.csv", "summed.csv").replace("columns: [in_flight]", "columns: [own, retries]"))
    assert "columns: [own, retries]" in summed
    (root / "workloads" / f"{name}.yaml").write_text(summed + "\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")

    def copies(*args: str) -> list[tuple[str, str]]:
        code, out, err = run_cli(["check", *args, "--format", "json", *WHEN], cwd=root)
        assert "Traceback" not in err, err
        return [f for f in _findings(out) if f[0] == "PL972"]

    lands = [("PL972", f"workloads/{name}.yaml")]
    assert copies("--no-cache") == lands
    code, out, _ = run_cli(["check", "--no-cache", "--format", "json", "--select", "PL972", *WHEN], cwd=root)
    assert "column retries of its concurrency trace shares" in out
    for changed in (f"workloads/{name}.yaml", "workloads/product-ai.yaml"):
        for cache in (["--no-cache"], [], []):  # cold, then filled, then warm (the partner from the index)
            assert copies("--changed-files", changed, *cache) == lands, (changed, cache)


def test_a_copy_too_plain_for_a_sketch_is_found_by_its_values_in_every_narrowed_run(tmp_path: Path) -> None:
    """A trace with a dozen steps has no run sketch; its copy in another cluster is found by its values.

    The warm narrowed run takes the original's values fingerprint from the repository
    index's stand-in view; it once looked the fact up where a stand-in does not hold it,
    found none, and passed the copy the cold run reported.
    """
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "good", root)
    traces = root / "measurements" / "traces"
    levels = [40 + 10 * ((i // 400) % 2) for i in range(90 * 24 * 6)]  # 90 days of 10-minute samples, a step every 400
    for name, start in (("plain.csv", 1_788_134_400), ("plain-moved.csv", 1_788_134_400 + 3600)):
        lines = ["timestamp,in_flight", *(f"{start + 600 * i},{v}" for i, v in enumerate(levels))]
        (traces / name).write_text("\n".join(lines) + "\n")
    chat = (root / "workloads" / "product-ai.yaml").read_text().split("\n---\n")[0]
    original = chat.replace("name: chat-assistant", "name: plain-a").replace("chat-assistant.csv", "plain.csv")
    (root / "workloads" / "plain-a.yaml").write_text(original + "\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    copy = (chat.replace("name: chat-assistant", "name: plain-b").replace("cluster: prod-east", "cluster: train-central")
            .replace("pool: serving", "pool: training").replace("chat-assistant.csv", "plain-moved.csv"))
    (root / "workloads" / "plain-b.yaml").write_text(copy + "\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a copy in another cluster")

    def copies(*args: str) -> list[tuple[str, str]]:
        code, out, err = run_cli(["check", *args, "--format", "json", *WHEN], cwd=root)
        assert code == 1 and "Traceback" not in err, err
        return [f for f in _findings(out) if f[0] == "PL972"]

    lands = [("PL972", "workloads/plain-b.yaml")]
    assert copies("--no-cache") == lands
    assert copies() == lands  # a whole run fills the index
    for cache in ([], ["--no-cache"]):  # warm (the original from the index), then cold
        assert copies("--diff", "HEAD~1", *cache) == lands
        assert copies("--changed-files", "workloads/plain-b.yaml", *cache) == lands


def test_kept_prints_that_are_damaged_or_planted_are_misses(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A narrowed run's kept copy prints are read as any cache entry: a torn or foreign one is not used.

    Each kept entry is torn, then replaced by one whose seal does not hold; the narrowed run
    reads the traces again and reports what it reported from a clean cache.
    """
    root = EXAMPLES / "good"  # files older than two seconds: a copy made now would be too fresh to keep
    args = ["check", "workloads/research.yaml", "--format", "json", *WHEN]
    want = run_cli(args, cwd=root)
    kept = sorted(cache_dir.glob("prints-v*/*/*.prints"))
    assert kept, "the narrowed run kept no prints"
    from policylint import traces

    reads: list[str] = []
    original = traces.read_series

    def counting(path, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(str(path))
        return original(path, **kwargs)

    monkeypatch.setattr(traces, "read_series", counting)
    assert run_cli(args, cwd=root) == want
    clean = len(reads)  # the kept prints taken: only the judged part's traces read
    for damage in (lambda b: b[: len(b) // 2], lambda b: b[:-1] + bytes([b[-1] ^ 1])):
        for entry in kept:
            entry.write_bytes(damage(entry.read_bytes()))
        reads.clear()
        assert run_cli(args, cwd=root) == want
        assert len(reads) == clean + len(kept)  # every damaged entry a miss: its trace read again
