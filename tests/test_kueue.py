"""Kueue manifests as pools: quantities, the real examples, mapping, placement, PL901/PL902."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from conftest import run_cli
from fixture_helpers import DATA, FIXTURES, expected_marks, reported_marks, run
from policylint.model.schedulers.quantity import gpu_count, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", Decimal(8)),
        (8, Decimal(8)),
        ("2000m", Decimal(2)),
        ("100Gi", Decimal(100 * 2**30)),
        ("36Gi", Decimal(36 * 2**30)),
        ("4G", Decimal(4 * 10**9)),
        ("1.5k", Decimal(1500)),
        ("1e3", Decimal(1000)),
        ("+.5", Decimal("0.5")),
        ("250u", Decimal("0.00025")),
    ],
)
def test_parse_quantity(text: object, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "abc", "8 GPUs", "1.2.3", "Gi", True, None, "5gi"])
def test_parse_quantity_refuses(text: object) -> None:
    with pytest.raises(ValueError):
        parse_quantity(text)


def test_gpu_count_whole_gpus() -> None:
    assert [gpu_count(v) for v in ("2000m", "8", 8, 8.0, "1e1")] == [2, 8, 8, 8, 10]
    with pytest.raises(ValueError):
        gpu_count("-1")
    # red team, 2026-12-06: 65 ClusterQueues of 999m each rounded down to no GPU while Kueue lent 64.9
    for fraction in ("999m", "1500m", 0.5, "1.5"):
        with pytest.raises(ValueError, match="not a whole number of GPUs"):
            gpu_count(fraction)


def test_real_manifests_are_judged_like_cluster_pools(tmp_path: Path) -> None:
    shutil.copytree(DATA / "kueue", tmp_path / "kueue")
    code, out, err = run_cli(["check", "--isolated", "--now", "2026-12-01", "--format", "json", str(tmp_path / "kueue")])
    assert (code, err) == (1, "")
    report = json.loads(out)
    # The GPU ClusterQueue is a pool like a Cluster's: 16 GPUs no workload measured (PL110), and
    # no queue limits (PL204); Kueue's own invariants hold. The CPU-only queue is no pool.
    assert [(f["code"], Path(f["file"]).name, f["line"]) for f in report["findings"]] == [
        ("PL204", "sample-gpu-queues.yaml", 27),
        ("PL110", "sample-gpu-queues.yaml", 40),
    ]
    # 4 + 3 documents read (the scheduler documents count: this is not an empty run)
    assert (report["summary"]["documents"], report["summary"]["files"]) == (7, 2)


def test_real_manifests_map_to_pools(tmp_path: Path) -> None:
    result = run([DATA / "kueue"], DATA / "kueue", rules=False)  # the folder is the repository (kueue-hami is another)
    assert result.findings == []
    index = result.model.schedulers["kueue"]
    assert sorted(index.local_queues) == ["default/tas-user-queue", "default/user-queue"]
    # the CPU-only ClusterQueue has no GPU pool; the TAS one has one pool of 16 GPUs
    assert sorted(index.pools) == ["tas-cluster-queue"]
    pool = index.pools["tas-cluster-queue"][0]
    assert pool.spec["reservedGpus"] == 16 and pool.spec["elastic"]["maxGpus"] == 0
    assert pool.spec["scheduling"]["gang"] is True  # topology-aware flavor
    assert pool.cluster.name == "tas-cluster-queue"  # no cohort: its own cluster
    # no workload goes through it, and it is in the model all the same, as a Cluster's pool would be
    assert result.model.clusters["tas-cluster-queue"].pools == {"tas-cluster-queue": pool}
    assert pool.workloads == []


WORKLOAD = """\
apiVersion: policylint/v1
kind: Workload
metadata:
  name: chat
  team: assistants
spec:
  class: inference
  queue: {{scheduler: kueue, name: {queue}}}
  gpusPerReplica: 1
  concurrency:
    trace:
      path: trace.csv
  perGpuConcurrency: {{value: 10, measuredIn: production, source: "grafana board"}}
  coldStartSeconds: 600
  tolerance:
    maxQueueSeconds: 2
    evidence: "p99 TTFT SLO 2 s"
"""


def _repo(tmp_path: Path, queue: str) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(DATA / "kueue", repo)
    shutil.copy(FIXTURES / "_traces" / "diurnal-100.csv", repo / "trace.csv")
    (repo / "chat.yaml").write_text(WORKLOAD.format(queue=queue), encoding="utf-8")
    return repo


@pytest.mark.parametrize(("quota", "code"), [(64, "PL101"), (8, "PL104"), (14, None)])
def test_framework_rules_land_on_nominal_quota(tmp_path: Path, quota: int, code: str | None) -> None:
    repo = _repo(tmp_path, "default/tas-user-queue")
    manifest = repo / "sample-gpu-queues.yaml"
    manifest.write_text(manifest.read_text().replace("nominalQuota: 16", f"nominalQuota: {quota}"))
    result = run([repo], repo)
    pool = result.model.clusters["tas-cluster-queue"].pools["tas-cluster-queue"]
    assert [w.name for w in pool.workloads] == ["chat"]
    assert pool.spec["serves"] == ["inference"]
    quota_line = next(i for i, line in enumerate(manifest.read_text().splitlines(), 1) if "nominalQuota: " + str(quota) in line)
    # the trace's baseline band is 14 GPUs at 10 in flight per GPU
    sized = [(f.code, f.file.endswith("sample-gpu-queues.yaml"), f.line) for f in result.findings if f.code in ("PL101", "PL104")]
    assert sized == ([(code, True, quota_line)] if code else [])


def test_short_local_queue_name_and_unknown_queue(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "tas-user-queue")
    assert "tas-cluster-queue" in run([repo], repo, rules=False).model.clusters
    repo2 = _repo(tmp_path / "b", "default/missing")
    findings = run([repo2], repo2, rules=False).findings
    assert [(f.code, f.doc_path) for f in findings] == [("PL020", "spec/queue/name")]
    assert "unknown Kueue LocalQueue 'default/missing'" in findings[0].message
    repo3 = _repo(tmp_path / "c", "default/user-queue")  # CPU-only ClusterQueue
    assert "has no GPU quota" in run([repo3], repo3, rules=False).findings[0].message


COHORT = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: serving
spec:
  cohort: east
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: h100
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: "24"
        lendingLimit: 4
    - name: a100
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: 8
        borrowingLimit: 2
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: training
spec:
  cohortName: east
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: h100
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: 64
        lendingLimit: 16
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: east
spec:
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: h100
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: 10
"""


def test_cohort_mapping_v1beta1_and_v1beta2(tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text(COHORT, encoding="utf-8")
    result = run([tmp_path], tmp_path, rules=False)  # the manifests' own findings (no workload: PL110 is due)
    assert result.findings == []
    pools = {p.name: p for ps in result.model.schedulers["kueue"].pools.values() for p in ps}
    assert sorted(pools) == ["serving.a100", "serving.h100", "training"]
    h100 = pools["serving.h100"]
    assert h100.cluster.name == "east"
    # guaranteed = nominal - lendingLimit; elastic = its own lendable 4 (Kueue lets it use its whole
    # nominal quota) + no borrowingLimit: everything the cohort lends on h100
    assert h100.spec["reservedGpus"] == 20
    assert h100.spec["elastic"] == {"maxGpus": 4 + 16 + 10, "kind": "borrow"}
    # reserved + elastic is what Kueue lets the queue run: its nominal quota plus what it borrows
    assert h100.spec["reservedGpus"] + h100.spec["elastic"]["maxGpus"] == 24 + 16 + 10
    # borrowingLimit 2, but nobody lends a100 GPUs
    assert pools["serving.a100"].spec["elastic"]["maxGpus"] == 0
    train = pools["training"]
    assert train.spec["reservedGpus"] == 48 and train.spec["elastic"]["maxGpus"] == 16 + 4 + 10
    assert h100.place("reserved") == ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota")


def test_bad_quantity_is_a_finding(tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text(COHORT.replace('nominalQuota: "24"', "nominalQuota: lots"), encoding="utf-8")
    findings = run([tmp_path], tmp_path, rules=False).findings
    assert [(f.code, f.line) for f in findings] == [("PL010", 13)]


@pytest.mark.parametrize("code", ["PL901", "PL902"])
def test_builtin_rule_fixtures(code: str) -> None:
    fail = FIXTURES / code / "fail"
    assert expected_marks(fail, code)
    assert reported_marks(fail, code) == expected_marks(fail, code)
    assert reported_marks(FIXTURES / code / "pass", code) == set()


def test_example_repository_is_clean() -> None:
    examples = Path(__file__).resolve().parents[1] / "examples" / "kueue"
    code, out, err = run_cli(["check", str(examples)])
    assert code == 0, out + err
    result = run([examples], examples, rules=False)
    pools = {p.qualified: p for p in result.model.pools}
    assert sorted(pools) == ["east/batch", "east/serving", "east/training"]
    assert all(p.origin == "kueue" for p in pools.values())


def test_gpu_resource_names_come_from_the_configuration(tmp_path: Path) -> None:
    """Other vendors' accelerators count as GPUs once the configuration names them."""
    import shutil

    from conftest import EXAMPLES, run_cli

    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "kueue", repo)
    for path in (repo / "kueue").glob("*.yaml"):
        path.write_text(path.read_text().replace('"nvidia.com/gpu"', '"habana.ai/gaudi"'))
    code, out, _ = run_cli(["check", ".", "--format", "json"], cwd=repo)
    assert code == 1
    assert '"code": "PL020"' in out  # the queues hold no GPU the default list knows

    config = repo / ".policylint.yaml"
    config.write_text(config.read_text() + "gpu-resources: [habana.ai/gaudi]\n")
    code, out, err = run_cli(["check", "."], cwd=repo)
    assert (code, err) == (0, ""), out


def _h100(nominal: int, borrowing: int | None, lending: int | None) -> str:
    """One resource group: flavor h100 holding ``nominal`` nvidia.com/gpu, with the limits given."""
    limits = "".join(f"\n        {k}: {v}" for k, v in (("borrowingLimit", borrowing), ("lendingLimit", lending)) if v is not None)
    return f"""  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: h100
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: {nominal}{limits}
"""


def _cq(name: str, cohort: str, nominal: int, *, borrowing: int | None = None, lending: int | None = None) -> str:
    return f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {name}
spec:
  cohortName: {cohort}
  namespaceSelector: {{}}
{_h100(nominal, borrowing, lending)}"""


def _cohort(name: str, quota: int, *, parent: str | None = None, borrowing: int | None = None,
            lending: int | None = None) -> str:
    up = f"\n  parentName: {parent}" if parent else ""
    return f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: {name}
spec:{up}
{_h100(quota, borrowing, lending)}"""


def _elastic(tmp_path: Path, *docs: str, codes: tuple[str, ...] = ()) -> dict[str, int]:
    (tmp_path / "q.yaml").write_text("---\n".join(docs), encoding="utf-8")
    result = run([tmp_path], tmp_path, rules=False)
    assert [f.code for f in result.findings] == list(codes)
    return {p.name: p.spec["elastic"]["maxGpus"] for ps in result.model.schedulers["kueue"].pools.values() for p in ps}


def test_a_parent_cohort_lends_to_the_queues_below_it(tmp_path: Path) -> None:
    # The red team of 2026-12-06: the parent Cohort's 200 GPUs were lendable to no pool, so a
    # borrowingLimit of 224 was judged as the 24 the queue's own cohort holds.
    docs = [_cohort("org", 200), _cohort("east", 8, parent="org"), _cq("training", "east", 104, borrowing=224),
            _cq("batch", "east", 16, borrowing=8)]
    assert _elastic(tmp_path, *docs) == {"training": 8 + 16 + 200, "batch": 8}
    # the same without the parent: the flat cohort of before
    assert _elastic(tmp_path, _cohort("east", 8), *docs[2:]) == {"training": 8 + 16, "batch": 8}


def test_cohort_limits_bound_what_crosses_between_subtrees(tmp_path: Path) -> None:
    # east may borrow 10 from above; west lends at most 5 upward; a queue of west lends 20 to its cohort
    docs = [_cohort("org", 100), _cohort("east", 8, parent="org", borrowing=10),
            _cohort("west", 0, parent="org", lending=5), _cq("training", "east", 104), _cq("infer", "west", 20)]
    got = _elastic(tmp_path, *docs)
    # training: its own cohort's 8, then at most 10 of what org's subtree holds (100 + 5 from west)
    assert got["training"] == 8 + 10
    # infer: west holds nothing else; from above (no borrowingLimit on west) org's 100, east's subtree
    # (8 + training's whole nominal 104, no lendingLimit on east)
    assert got["infer"] == 100 + 8 + 104


def test_a_cycle_of_parents_ends(tmp_path: Path) -> None:
    docs = [_cohort("a", 4, parent="b"), _cohort("b", 6, parent="a"), _cq("q", "a", 10)]
    assert _elastic(tmp_path, *docs) == {"q": 4 + 6}


def test_a_second_gpu_resource_without_a_limit_borrows_without_one(tmp_path: Path) -> None:
    # The red team of 2026-12-06: nvidia.com/gpu's borrowingLimit of 24 was taken for the whole flavor,
    # and the Cohort's 500 amd.com/gpu that the limitless resource may borrow read as unreachable (PL976).
    two = _cq("training", "east", 104, borrowing=24) + '''      - name: "amd.com/gpu"
        nominalQuota: 0
'''
    two = two.replace('coveredResources: ["nvidia.com/gpu"]', 'coveredResources: ["nvidia.com/gpu", "amd.com/gpu"]')
    cohort = _cohort("east", 32) + '''      - name: "amd.com/gpu"
        nominalQuota: 500
'''
    cohort = cohort.replace('coveredResources: ["nvidia.com/gpu"]', 'coveredResources: ["nvidia.com/gpu", "amd.com/gpu"]')
    (tmp_path / "q.yaml").write_text("---\n".join([cohort, two]), encoding="utf-8")
    result = run([tmp_path], tmp_path, rules=False)
    (pool,) = [p for ps in result.model.schedulers["kueue"].pools.values() for p in ps]
    assert pool.spec["elastic"]["maxGpus"] == 32 + 500
    assert pool.scheduler["borrowing_limit"] is None
    # and lending: a resource without a lendingLimit lends its whole quota beside one that has a limit
    lend = _cq("serving", "east", 10, lending=4) + '''      - name: "amd.com/gpu"
        nominalQuota: 6
'''
    lend = lend.replace('coveredResources: ["nvidia.com/gpu"]', 'coveredResources: ["nvidia.com/gpu", "amd.com/gpu"]')
    (tmp_path / "q.yaml").write_text("---\n".join([_cohort("east", 0), lend, _cq("other", "east", 0)]), encoding="utf-8")
    result = run([tmp_path], tmp_path, rules=False)
    pools = {p.name: p for ps in result.model.schedulers["kueue"].pools.values() for p in ps}
    assert pools["serving"].spec["reservedGpus"] == 16 - (4 + 6)
    assert pools["other"].spec["elastic"]["maxGpus"] == 4 + 6


def _contradictions(tmp_path: Path, *docs: str) -> list[str]:
    (tmp_path / "q.yaml").write_text("---\n".join(docs), encoding="utf-8")
    return [f.message for f in run([tmp_path], tmp_path).findings if f.code == "PL976"]


def test_a_v1beta1_cohort_names_its_parent_parent(tmp_path: Path) -> None:
    # The red team of 2026-12-06: v1alpha1 and v1beta1 Cohorts write spec.parent, v1beta2 spec.parentName;
    # only parentName was read, and the parent's 200 GPUs were lendable to no pool.
    east = _cohort("east", 0).replace("v1beta2", "v1beta1").replace("spec:\n", "spec:\n  parent: root\n", 1)
    assert _elastic(tmp_path, _cohort("root", 200), east, _cq("training", "east", 104)) == {"training": 200}
    # and a v1beta2 Cohort's `parent` is no field of its version: not read
    wrong = _cohort("east", 0).replace("spec:\n", "spec:\n  parent: root\n", 1)
    (tmp_path / "q.yaml").write_text("---\n".join([_cohort("root", 200), wrong, _cq("training", "east", 104)]), encoding="utf-8")
    result = run([tmp_path], tmp_path, rules=False)
    (pool,) = [p for ps in result.model.schedulers["kueue"].pools.values() for p in ps]
    assert pool.spec["elastic"]["maxGpus"] == 0


def test_cohort_limits_are_combined_over_its_gpu_resources(tmp_path: Path) -> None:
    # The red team of 2026-12-06: one (borrowingLimit, lendingLimit) pair per flavor was kept, the last
    # resource's; side's nvidia.com/gpu lendingLimit of 0 was lost behind an amd.com/gpu without one.
    side = _cohort("side", 24, parent="root", lending=0) + '      - name: "amd.com/gpu"\n        nominalQuota: 0\n'
    side = side.replace('coveredResources: ["nvidia.com/gpu"]', 'coveredResources: ["nvidia.com/gpu", "amd.com/gpu"]')
    got = _elastic(tmp_path, _cohort("root", 0), _cohort("east", 0, parent="root"), side, _cq("training", "east", 104),
                   codes=("PL906",))  # side's 24 GPUs reach no queue: it lends nothing up, and no queue is in it
    assert got == {"training": 0}  # side lends 0 + amd's whole quota 0


def test_what_kueue_refuses_or_disables_in_a_cohort_is_a_contradiction(tmp_path: Path) -> None:
    queue = _cq("training", "east", 104, borrowing=24)
    # a flavor listed twice: the webhook refuses the Cohort, its quota counts for nothing
    twice = _cohort("east", 24).replace("    flavors:\n", "    flavors:\n    - name: h100\n      resources:\n"
                                        '      - name: "nvidia.com/gpu"\n        nominalQuota: 24\n', 1)
    found = _contradictions(tmp_path, twice, queue)
    assert any("Cohort east lists flavor h100 twice" in m for m in found)
    assert _elastic(tmp_path, twice, queue) == {"training": 24}  # the first listing only, not 48
    # a cycle of parents: Kueue disables every ClusterQueue in it
    found = _contradictions(tmp_path, _cohort("east", 0, parent="loop"), _cohort("loop", 24, parent="east"), queue)
    assert any("Cohort east is in a cycle of parents (east -> loop -> east)" in m for m in found)
    # GPU quota under two resource names in one flavor, of a ClusterQueue or of a Cohort
    mixed = queue + '      - name: "amd.com/gpu"\n        nominalQuota: 48\n'
    mixed = mixed.replace('coveredResources: ["nvidia.com/gpu"]', 'coveredResources: ["nvidia.com/gpu", "amd.com/gpu"]')
    found = _contradictions(tmp_path, _cohort("east", 0), mixed)
    assert any("ClusterQueue training holds GPU quota of flavor h100 under 2 resource names (nvidia.com/gpu, amd.com/gpu)"
               in m for m in found)
    cohort = _cohort("east", 0) + '      - name: "amd.com/gpu"\n        nominalQuota: 24\n'
    cohort = cohort.replace('coveredResources: ["nvidia.com/gpu"]', 'coveredResources: ["nvidia.com/gpu", "amd.com/gpu"]')
    assert any("Cohort east holds GPU quota of flavor h100 under 2 resource names" in m
               for m in _contradictions(tmp_path, cohort, queue))
    # none of it in a sound cohort
    assert _contradictions(tmp_path, _cohort("east", 24), _cq("training", "east", 104, borrowing=24)) == []


def test_cohort_quota_no_queue_can_borrow_is_unreachable(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 6: 512 GPUs of a parent Cohort whose only queue of the flavor sat under a
    child Cohort with borrowingLimit: 0 passed PL906 (a queue of the tree listed the flavor) and PL110 (the
    queue's pool holds 0 GPUs)."""
    def found(*docs: str) -> list[str]:
        (tmp_path / "q.yaml").write_text("---\n".join(docs), encoding="utf-8")
        return [f.message for f in run([tmp_path], tmp_path, rules=False).findings if f.code == "PL906"]

    child = _cohort("east-spare", 0, parent="east", borrowing=0)
    queue = _cq("reserve", "east-spare", 0)
    [message] = found(_cohort("east", 512), child, queue)
    assert message.startswith("Cohort east holds 512 GPUs of flavor h100, but the ClusterQueues of its cohort that"
                              " list h100 cannot borrow them")
    # the child may borrow: reachable
    assert found(_cohort("east", 512), _cohort("east-spare", 0, parent="east"), queue) == []
    # a queue's own borrowingLimit of 0 is its sizing (the band rules judge it), not a wall in the tree
    assert found(_cohort("east", 512), _cq("reserve", "east", 0, borrowing=0)) == []
    # the quota of a child that lends nothing up, to a queue beside it
    side = _cohort("side", 24, parent="east", lending=0)
    assert len(found(_cohort("east", 0), side, _cq("training", "east", 8))) == 1
