"""``policylint export kueue|volcano --update MANIFESTS``: only the GPU quotas change, byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from conftest import EXAMPLES, run_cli
from fixture_helpers import DATA, NOW, run
from test_export import validate_manifests

HAMI = Path(__file__).parent / "data" / "kueue-hami" / "cluster-queues.yaml"
NOW_ARG = ["--now", NOW.date().isoformat()]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """examples/kueue with the ClusterQueues of a HAMi setup, sized by hand."""
    out = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "kueue", out)
    shutil.copy(HAMI, out / "kueue" / "cluster-queues.yaml")
    return out


def _update(repo: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(["export", "kueue", str(repo), "--update", str(repo / "kueue"), *NOW_ARG, *extra])


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(a) == len(b)
    return [(x, y) for x, y in zip(a, b) if x != y]


def test_update_changes_only_the_gpu_quotas(repo: Path) -> None:
    path = repo / "kueue" / "cluster-queues.yaml"
    before = path.read_text(encoding="utf-8")
    others = {p.name: p.read_bytes() for p in (repo / "kueue").iterdir() if p != path}
    code, out, err = _update(repo)
    assert code == 0, err
    assert out == ""  # every pool has its ClusterQueue: nothing new to write
    after = path.read_text(encoding="utf-8")
    # serving: guaranteed = nominalQuota - lendingLimit = baseline 22, the lendingLimit of 4 is kept;
    # the quoting and the trailing comment stay. training: borrowingLimit was missing (unlimited): added.
    added = '        borrowingLimit: 24\n'
    assert after.replace(added, "", 1).count("\n") == before.count("\n")
    assert _changed_lines(before, after.replace(added, "", 1)) == [
        ('        nominalQuota: "40"   # sized by hand last quarter\n', '        nominalQuota: "26"   # sized by hand last quarter\n'),
        # the daily band is 2 above the baseline, and the lendingLimit of 4 is the queue's own to use
        # too (Kueue lets it run its whole nominal quota): nothing is left to borrow
        ("        borrowingLimit: 9\n", "        borrowingLimit: 0\n"),
        ("        nominalQuota: 120\n", "        nominalQuota: 104\n"),
    ]
    assert after.index(added) == after.index("        nominalQuota: 104\n") + len("        nominalQuota: 104\n")
    # flavors, CPU, memory, HAMi's shared-GPU resources, namespaces and the other files: untouched
    assert {p.name: p.read_bytes() for p in (repo / "kueue").iterdir() if p != path} == others
    for needle in ('"nvidia.com/total-gpucores"', "nominalQuota: 4000", "nominalQuota: 5640Gi", "nominalQuota: 3Ti", "- name: h200"):
        assert needle in after
    assert "serving nominalQuota 40 -> 26 (pooled baseline band of east/serving + lendingLimit 4 kept)" in err
    assert "training borrowingLimit added: 24" in err
    # and that lendingLimit alone lets it run 2 GPUs above its daily band: said, not lowered behind its back
    assert "ClusterQueue serving: its lendingLimit of 4 is more than the 2 GPUs of the daily band above the baseline" in err
    validate_manifests(after)


def test_update_reads_back_as_the_plan_and_is_idempotent(repo: Path) -> None:
    code, _, err = _update(repo)
    assert code == 0, err
    # the one note: serving's lendingLimit (4) exceeds its daily band above the baseline (2)
    assert [line for line in err.splitlines() if line.startswith("note:")] == [
        line for line in err.splitlines() if line.startswith("note:") and "serving: its lendingLimit of 4" in line
    ] and "note:" in err
    pools = {p.name: p for p in run([repo], repo, rules=False).model.pools if p.workloads}
    assert {n: (p.spec["reservedGpus"], p.spec["elastic"]["maxGpus"]) for n, p in pools.items()} == {
        "serving": (22, 4),
        "training": (104, 24),
        "batch": (16, 8),
    }
    snapshot = {p: p.read_bytes() for p in (repo / "kueue").iterdir()}
    code, out, err = _update(repo)
    assert code == 0 and out == ""
    assert err.startswith("set 0 quota numbers in 0 files")
    assert {p: p.read_bytes() for p in (repo / "kueue").iterdir()} == snapshot


def test_dry_run_prints_the_diff_and_writes_nothing(repo: Path) -> None:
    path = repo / "kueue" / "cluster-queues.yaml"
    before = path.read_bytes()
    code, out, err = _update(repo, "--dry-run")
    assert code == 0, err
    assert path.read_bytes() == before
    assert '-        nominalQuota: "40"   # sized by hand last quarter\n+        nominalQuota: "26"   # sized by hand last quarter\n' in out
    assert "+        borrowingLimit: 24\n" in out
    assert err.startswith("would set 4 quota numbers in 1 file")


def test_a_pool_without_an_object_gets_new_ones(repo: Path) -> None:
    path = repo / "kueue" / "cluster-queues.yaml"
    text = path.read_text(encoding="utf-8")
    batch = text.index("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: batch")
    moved = repo / "elsewhere.yaml"  # the model still reads the batch queue, the manifests to update lack it
    moved.write_text(text[batch:], encoding="utf-8")
    path.write_text(text[:batch].rstrip().removesuffix("---").rstrip() + "\n", encoding="utf-8")
    code, out, err = _update(repo)
    assert code == 0, err
    assert "new objects for pools without one: east/batch" in err
    code, diff, err = _update(repo, "--dry-run")
    assert code == 0 and "kind: ClusterQueue" not in diff and "1 new manifest file not written" in err
    code, out, err = _update(repo)
    docs = validate_manifests(out)
    # the flavor and the cohort exist already: only the ClusterQueue and its LocalQueue are new,
    # in the namespace the existing LocalQueue declares
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [("ClusterQueue", "batch"), ("LocalQueue", "batch")]
    assert docs[1]["metadata"]["namespace"] == "research"
    assert docs[0]["spec"]["resourceGroups"][0]["flavors"][0]["name"] == "h100"


def test_update_refuses_broken_manifests(repo: Path) -> None:
    path = repo / "kueue" / "cluster-queues.yaml"
    broken = repo / "kueue" / "broken.yaml"
    broken.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: [x\n", encoding="utf-8")
    before = path.read_bytes()
    code, out, err = _update(repo)
    assert code == 1 and out == ""
    assert "broken.yaml:" in err and "nothing exported" in err
    assert path.read_bytes() == before


def test_update_volcano_queues(tmp_path: Path) -> None:
    """Volcano: guarantee = baseline, capability = daily band; the other resources stay."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "good", repo)
    code, _, err = run_cli(["export", "volcano", str(repo), "--output", str(repo / "volcano"), *NOW_ARG])
    assert code == 0, err
    path = repo / "volcano" / "serving.yaml"
    exported = path.read_text(encoding="utf-8")
    hand = exported.replace("      nvidia.com/gpu: 53", "      nvidia.com/gpu: 60\n      cpu: 400")
    hand = hand.replace("    nvidia.com/gpu: 56", "    nvidia.com/gpu: 70\n    memory: 2Ti")
    hand = hand.replace("    # fair share = the guarantee (53): anything above it is borrowed and reclaimable\n    nvidia.com/gpu: 53", "    nvidia.com/gpu: 65")
    assert hand != exported
    path.write_text(hand, encoding="utf-8")
    code, out, err = run_cli(["export", "volcano", str(repo), "--update", str(repo / "volcano"), *NOW_ARG])
    assert code == 0, err
    after = path.read_text(encoding="utf-8")
    assert _changed_lines(hand, after) == [
        ("      nvidia.com/gpu: 60\n", "      nvidia.com/gpu: 53\n"),
        ("    nvidia.com/gpu: 65\n", "    nvidia.com/gpu: 56\n"),  # deserved above the new capability: lowered to it
        ("    nvidia.com/gpu: 70\n", "    nvidia.com/gpu: 56\n"),
    ]
    doc = validate_manifests(after)[0]
    assert doc["spec"]["guarantee"]["resource"] == {"nvidia.com/gpu": 53, "cpu": 400}
    assert doc["spec"]["capability"] == {"nvidia.com/gpu": 56, "memory": "2Ti"}
    assert "serving deserved/nvidia.com/gpu 65 -> 56 (kept within guarantee 53 .. capability 56, as Volcano requires)" in err


def test_volcano_crd_is_the_copied_one() -> None:
    assert (DATA / "crds" / "scheduling.volcano.sh_queues.yaml").exists()
    assert yaml.safe_load((DATA / "crds" / "scheduling.volcano.sh_queues.yaml").read_text())["kind"] == "CustomResourceDefinition"


def test_fresh_export_of_a_hami_queue_keeps_its_flavor_and_resources(repo: Path) -> None:
    code, out, err = run_cli(["export", "kueue", str(repo), *NOW_ARG])
    assert code == 0, err
    docs = validate_manifests(out.replace("# file: ", "#"))
    assert "ResourceFlavor" not in {d["kind"] for d in docs}  # h100 and h200 exist: named, not rewritten
    serving = next(d for d in docs if d["kind"] == "ClusterQueue" and d["metadata"]["name"] == "serving")
    group = serving["spec"]["resourceGroups"][0]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu", "nvidia.com/total-gpucores", "nvidia.com/total-gpumem"]
    flavor = group["flavors"][0]
    assert flavor["name"] == "h200"
    assert flavor["resources"] == [
        {"name": "cpu", "nominalQuota": 384},
        {"name": "memory", "nominalQuota": "3Ti"},
        {"name": "nvidia.com/gpu", "nominalQuota": 22, "borrowingLimit": 2},
        {"name": "nvidia.com/total-gpucores", "nominalQuota": 4000},
        {"name": "nvidia.com/total-gpumem", "nominalQuota": "5640Gi"},
    ]
    local = [d for d in docs if d["kind"] == "LocalQueue" and d["metadata"]["name"] == "serving"]
    assert [d["metadata"]["namespace"] for d in local] == ["product-ai"]  # the existing LocalQueue's namespace


def test_what_cannot_be_done_is_reported_not_guessed(repo: Path) -> None:
    kueue = repo / "kueue"
    cohort = kueue / "cohort.yaml"
    # the cohort lends no h200 GPUs any more: serving's borrowingLimit of 2 cannot be met
    cohort.write_text(cohort.read_text().replace("        # serving borrows 2\n        nominalQuota: 2", "        nominalQuota: 0"))
    path = kueue / "cluster-queues.yaml"
    # batch's quota in milli-units is not a number the editor rewrites; serving lends nothing (a
    # lendingLimit is the queue's own quota to use too, and would cover the 2 GPUs it cannot borrow)
    text = path.read_text().replace("nominalQuota: 16\n", "nominalQuota: 16000m\n")
    path.write_text(text.replace("        lendingLimit: 4\n", "", 1))
    code, out, err = _update(repo)
    # the quotas are written, and the check that follows says what they leave short (exit 1)
    assert code == 1, err
    assert "note: serving: reads back as 22 guaranteed + 0 borrowable GPUs, not 22 + 2: the rest of its cohort cannot lend that much" in err
    assert "error PL203 pool east/serving keeps its pooled daily-band demand waiting up to 5.0 s at 22 GPUs" in err
    assert err.endswith("policylint: the updated quotas do not pass the sizing rules (1 finding above); see the notes of the update\n")
    assert "ClusterQueue batch: nominalQuota is not written as a whole number; set it to 16 by hand" in err
    assert "nominalQuota: 16000m\n" in path.read_text()


def test_update_arguments(tmp_path: Path) -> None:
    code, _, err = run_cli(["export", "kueue", str(EXAMPLES / "kueue"), "--dry-run"])
    assert code == 2 and "--dry-run needs --update MANIFESTS" in err
    code, _, err = run_cli(["export", "kueue", str(EXAMPLES / "kueue"), "--update", str(tmp_path / "nowhere")])
    assert code == 2 and "no such file or folder" in err
