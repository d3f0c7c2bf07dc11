"""``policylint export``: manifests valid against the real CRDs, and read back as the same pools."""

from __future__ import annotations

import functools
import re
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from conftest import EXAMPLES, run_cli
from fixture_helpers import DATA, NOW, crd_schema, run
from policylint.measure.run import measure
from policylint.export import kueue as export_kueue, plans as export
from policylint.engine.views import build_views

CRDS = {
    ("kueue.x-k8s.io/v1beta2", "ClusterQueue"): ("kueue.x-k8s.io_clusterqueues.yaml", "v1beta2"),
    ("kueue.x-k8s.io/v1beta2", "LocalQueue"): ("kueue.x-k8s.io_localqueues.yaml", "v1beta2"),
    ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"): ("kueue.x-k8s.io_resourceflavors.yaml", "v1beta2"),
    ("kueue.x-k8s.io/v1beta2", "Cohort"): ("kueue.x-k8s.io_cohorts.yaml", "v1beta2"),
    ("scheduling.volcano.sh/v1beta1", "Queue"): ("scheduling.volcano.sh_queues.yaml", "v1beta1"),
}


#: what examples/good gains when its pools declare nodes and namespaces (the Cluster schema allows both)
DECLARED = {
    "      serves: [inference]\n": (
        "      serves: [inference]\n"
        "      namespaces: [product-ai, search-serving]\n"
        "      nodes:\n"
        "        labels: {nvidia.com/gpu.product: NVIDIA-H200, node-pool: serving-h200}\n"
        "        taints: [{key: dedicated, value: serving, effect: NoSchedule}]\n"
        "        tolerations: [{key: dedicated, operator: Equal, value: serving, effect: NoSchedule}]\n"
    ),
    "      serves: [batch]\n": "      serves: [batch]\n      namespaces: [batch-jobs]\n      nodes: {resourceFlavor: spot-h100}\n",
    "      serves: [training]\n": "      serves: [training]\n      namespaces: [research]\n",
}


def _declared_repo(tmp_path: Path) -> Path:
    """examples/good whose pools state their nodes and namespaces."""
    repo = tmp_path / "declared"
    shutil.copytree(EXAMPLES / "good", repo)
    for path in (repo / "clusters").glob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        for old, new in DECLARED.items():
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
    return repo


def _plans(repo: Path) -> list[export.PoolPlan]:
    model = run([repo], repo, rules=False).model
    facts, _ = measure(model, NOW)
    return export.plan(model, build_views(model, facts, NOW))


@pytest.fixture(scope="module")
def good_plans() -> list[export.PoolPlan]:
    return _plans(EXAMPLES / "good")


@pytest.fixture(scope="module")
def declared_plans(tmp_path_factory: pytest.TempPathFactory) -> list[export.PoolPlan]:
    return _plans(_declared_repo(tmp_path_factory.mktemp("declared")))


def _export(tmp_path: Path, scheduler: str, repo: Path = EXAMPLES / "good") -> Path:
    out = tmp_path / scheduler
    code, stdout, err = run_cli(["export", scheduler, str(repo), "--output", str(out)])
    assert code == 0, err
    return out


@functools.cache
def crd_validator(crd_file: str, version: str) -> Any:
    """A validator for one CRD version, its schema checked once (as ``jsonschema.validate`` does each call)."""
    schema = crd_schema(DATA / "crds" / crd_file, version)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate_manifests(text: str) -> list[dict[str, object]]:
    """Every document of ``text`` validated against its CRD; the documents."""
    docs = list(yaml.safe_load_all(text))
    for doc in docs:
        assert isinstance(doc, dict), "an empty document (comments only) in the output"
        crd_validator(*CRDS[(doc["apiVersion"], doc["kind"])]).validate(doc)
    return docs


@pytest.mark.parametrize("declared", [False, True])
@pytest.mark.parametrize("scheduler", ["kueue", "volcano"])
def test_export_validates_against_crds(tmp_path: Path, scheduler: str, declared: bool) -> None:
    out = _export(tmp_path, scheduler, _declared_repo(tmp_path) if declared else EXAMPLES / "good")
    seen = set()
    for path in sorted(out.glob("*.yaml")):
        seen |= {str(d["kind"]) for d in validate_manifests(path.read_text(encoding="utf-8"))}
    if scheduler == "volcano":
        assert seen == {"Queue"}
    else:
        # LocalQueues only where namespaces are declared
        assert seen == {"ClusterQueue", "ResourceFlavor", "Cohort"} | ({"LocalQueue"} if declared else set())


def test_no_node_label_or_namespace_is_guessed(tmp_path: Path) -> None:
    out = _export(tmp_path, "kueue")
    flavors = out / "resource-flavors.yaml"
    text = flavors.read_text(encoding="utf-8")
    assert [d["spec"] for d in yaml.safe_load_all(text)] == [{}, {}]  # comments aside, nothing is written
    assert text.count("# TODO: no node selection is declared") == 2
    serving = (out / "serving.yaml").read_text(encoding="utf-8")
    assert [d["kind"] for d in yaml.safe_load_all(serving)] == ["ClusterQueue"]
    assert "# TODO: no namespace is declared for pool prod-east/serving (teams product-ai, search)" in serving
    assert not re.search(r"namespace: (?!<namespace>)", serving)
    assert not re.search(r"(product-ai|search)/serving", serving)  # no team name stands in for a namespace


def test_declared_node_selection_is_exported_exactly(tmp_path: Path) -> None:
    out = _export(tmp_path, "kueue", _declared_repo(tmp_path))
    flavors = {d["metadata"]["name"]: d["spec"] for d in yaml.safe_load_all((out / "resource-flavors.yaml").read_text())}
    # spot-h100 exists in the cluster already (nodes.resourceFlavor): not written, only named
    assert sorted(flavors) == ["h100-sxm-80gb", "h200-sxm-141gb"]
    assert flavors["h200-sxm-141gb"] == {
        "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H200", "node-pool": "serving-h200"},
        "nodeTaints": [{"key": "dedicated", "value": "serving", "effect": "NoSchedule"}],
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "serving", "effect": "NoSchedule"}],
    }
    assert flavors["h100-sxm-80gb"] == {}  # training declares no nodes: nothing guessed
    batch = list(yaml.safe_load_all((out / "batch.yaml").read_text()))
    assert batch[0]["spec"]["resourceGroups"][0]["flavors"][0]["name"] == "spot-h100"
    assert [(d["metadata"]["namespace"], d["spec"]["clusterQueue"]) for d in batch[1:]] == [("batch-jobs", "batch")]
    serving = list(yaml.safe_load_all((out / "serving.yaml").read_text()))
    assert serving[0]["spec"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["product-ai", "search-serving"]
    assert [d["metadata"]["namespace"] for d in serving[1:]] == ["product-ai", "search-serving"]
    volcano = (_export(tmp_path / "v", "volcano", _declared_repo(tmp_path / "v")) / "serving.yaml").read_text()
    assert '#   nodeSelector: {"node-pool": "serving-h200", "nvidia.com/gpu.product": "NVIDIA-H200"}' in volcano


def test_a_pool_naming_a_flavor_cannot_also_list_labels(tmp_path: Path) -> None:
    repo = _declared_repo(tmp_path)
    path = repo / "clusters" / "prod-east.yaml"
    path.write_text(path.read_text().replace("nodes: {resourceFlavor: spot-h100}", "nodes: {resourceFlavor: spot-h100, labels: {a: b}}"))
    out = tmp_path / "out"
    code, stdout, err = run_cli(["export", "kueue", str(repo), "--output", str(out)])
    assert code == 1 and stdout == ""
    assert re.search(r"clusters/prod-east\.yaml:\d+:\d+: PL010 Cluster: unknown field .labels. in .spec/pools/1/nodes. \(allowed: resourceFlavor\)", err), err
    assert "nothing exported" in err and not out.exists()


def test_overflow_is_stated_truthfully(tmp_path: Path) -> None:
    out = _export(tmp_path, "kueue")
    serving = (out / "serving.yaml").read_text()  # overflow: reject
    assert "nothing is rejected" not in serving and "waits in the queue" not in serving
    assert "# overflow: reject - pool serving declares that demand above its daily band is refused, not queued." in serving
    assert "# Kueue cannot enforce that: work it cannot admit stays pending, it is never refused." in serving
    assert "sheds requests (more than 4000 waiting or a wait above 5 s)" in serving
    assert 'policylint.dev/overflow: "reject"' in serving
    assert "the peak band gets nothing: it is rejected (overflow: reject)" in serving
    batch = (out / "batch.yaml").read_text()  # overflow: queue
    assert "# overflow: queue - work beyond the quota waits" in batch and "overflow: reject" not in batch
    volcano = (_export(tmp_path, "volcano") / "serving.yaml").read_text()
    assert "# Volcano cannot enforce that: work it cannot admit stays pending" in volcano


NUMBER = re.compile(r'^\s*(?:- )?"?[\w./-]+"?: "?\d')


@pytest.mark.parametrize("scheduler", ["kueue", "volcano"])
def test_every_number_carries_its_derivation(tmp_path: Path, scheduler: str) -> None:
    out = _export(tmp_path, scheduler, _declared_repo(tmp_path))
    checked = 0
    for path in sorted(out.glob("*.yaml")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if NUMBER.match(line):
                checked += 1
                assert "#" in line or lines[i - 1].lstrip().startswith("#"), f"{path.name}:{i + 1}: {line}"
    assert checked >= 10


def test_crd_check_catches_a_wrong_field() -> None:
    doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "x"},
           "spec": {"cohort": "east"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, crd_schema(DATA / "crds" / "kueue.x-k8s.io_clusterqueues.yaml", "v1beta2"))


def test_numbers_follow_the_bands(good_plans: list[export.PoolPlan]) -> None:
    serving = next(p for p in good_plans if p.pool == "serving")
    assert serving.measured
    # Pooled bands of prod-east/serving (docs/pooled.md): baseline 53, daily 56; the
    # workloads' own daily bands add up to 58, which pooling does not need.
    assert (serving.guaranteed, serving.borrow) == (53, 3)
    assert sum(m.daily_gpus or 0 for m in serving.members) == 58
    text = export_kueue.kueue(good_plans)["serving.yaml"]
    assert f"nominalQuota: {serving.guaranteed}" in text
    assert f"borrowingLimit: {serving.borrow}" in text
    assert "# pooled baseline band, guaranteed: 53 GPUs (own baselines: chat-assistant" in text


def _read_back(tmp_path: Path, scheduler: str, plans: list[export.PoolPlan]) -> Path:
    """examples/good with its clusters replaced by the exported manifests, workloads pointed at the queues."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "good", repo)
    shutil.rmtree(repo / "clusters")
    shutil.rmtree(repo / "proposals")
    shutil.copytree(_export(tmp_path, scheduler, _declared_repo(tmp_path)), repo / scheduler)
    by_pool = {(p.cluster, p.pool): p for p in plans}

    def point(m: re.Match[str]) -> str:
        workload, between, cluster, pool = m.group(1), m.group(2), m.group(3), m.group(4)
        plan = by_pool[(cluster, pool)]
        name = f"{plan.namespaces[0]}/{plan.queue}" if scheduler == "kueue" else plan.queue
        return f"  name: {workload}\n{between}  queue: {{scheduler: {scheduler}, name: {name}}}\n"

    for path in (repo / "workloads").glob("*.yaml"):
        text = re.sub(r"  name: (\S+)\n((?:.*\n)*?)  cluster: (\S+)\n  pool: (\S+)\n", point, path.read_text(encoding="utf-8"))
        path.write_text(text, encoding="utf-8")
    return repo


@pytest.mark.parametrize("scheduler", ["kueue", "volcano"])
def test_round_trip_gives_the_same_pools(tmp_path: Path, scheduler: str, declared_plans: list[export.PoolPlan]) -> None:
    good_plans = declared_plans
    repo = _read_back(tmp_path, scheduler, good_plans)
    result = run([repo], repo, rules=False)
    assert result.findings == []
    back = {p.name: p for p in result.model.pools}
    assert sorted(back) == sorted(p.queue for p in good_plans)
    for plan in good_plans:
        pool = back[plan.queue]
        assert pool.origin == scheduler
        assert pool.cluster.name == plan.cohort
        assert pool.spec["reservedGpus"] == plan.guaranteed
        assert pool.spec["elastic"]["maxGpus"] == plan.borrow
        assert sorted(w.name for w in pool.workloads) == [m.name for m in plan.members]
        assert pool.spec["serves"] == sorted({m.cls for m in plan.members})
        assert pool.spec["overflow"] == plan.overflow
    # and the bands computed through the scheduler pools are the ones exported
    again = {p.queue: (p.guaranteed, p.borrow) for p in _plans(repo)}
    assert again == {p.queue: (p.guaranteed, p.borrow) for p in good_plans}


def test_export_to_stdout_and_errors(tmp_path: Path) -> None:
    code, out, err = run_cli(["export", "kueue", str(EXAMPLES / "kueue")])
    assert code == 0, err
    docs = [d for d in yaml.safe_load_all(out) if d]
    # read from Kueue manifests: the existing flavors are named, not written again
    assert {d["kind"] for d in docs} == {"Cohort", "ClusterQueue", "LocalQueue"}
    (tmp_path / "q.yaml").write_text((DATA / "kueue" / "sample-gpu-queues.yaml").read_text())
    code, out, err = run_cli(["export", "volcano", str(tmp_path), "--isolated"])
    assert code == 2 and "nothing to export" in err
    code, out, err = run_cli(["export", "slurm", str(tmp_path)])
    assert code == 2


def test_export_import_is_cheap() -> None:
    import subprocess
    import sys

    code = "import sys, policylint.commands.export; print('policylint.engine.linter' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.parametrize(
    ("toleration", "message"),
    [
        ("{operator: Equal, value: x}", "'spec/pools/0/nodes/tolerations/0/operator' must be one of: Exists (got 'Equal')"),
        ("{key: k, effect: NoSchedule, tolerationSeconds: 30}", "'spec/pools/0/nodes/tolerations/0/effect' must be one of: NoExecute (got 'NoSchedule')"),
    ],
)
def test_tolerations_kubernetes_would_refuse_are_schema_errors(tmp_path: Path, toleration: str, message: str) -> None:
    repo = _declared_repo(tmp_path)
    path = repo / "clusters" / "prod-east.yaml"
    text = path.read_text()
    path.write_text(text.replace("tolerations: [{key: dedicated, operator: Equal, value: serving, effect: NoSchedule}]", f"tolerations: [{toleration}]"))
    code, out, err = run_cli(["export", "kueue", str(repo)])
    assert code == 1 and out == ""
    assert message in err
