"""``policylint export``: manifests valid against the real CRDs, and read back as the same pools."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml

from conftest import EXAMPLES, run_cli
from fixture_helpers import DATA, NOW, crd_schema, run
from policylint.measure import measure
from policylint.schedulers import export
from policylint.views import build_views

CRDS = {
    ("kueue.x-k8s.io/v1beta2", "ClusterQueue"): ("kueue.x-k8s.io_clusterqueues.yaml", "v1beta2"),
    ("kueue.x-k8s.io/v1beta2", "LocalQueue"): ("kueue.x-k8s.io_localqueues.yaml", "v1beta2"),
    ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"): ("kueue.x-k8s.io_resourceflavors.yaml", "v1beta2"),
    ("kueue.x-k8s.io/v1beta2", "Cohort"): ("kueue.x-k8s.io_cohorts.yaml", "v1beta2"),
    ("scheduling.volcano.sh/v1beta1", "Queue"): ("scheduling.volcano.sh_queues.yaml", "v1beta1"),
}


def _plans(repo: Path) -> list[export.PoolPlan]:
    model = run([repo], repo, rules=False).model
    facts, _ = measure(model, NOW)
    return export.plan(model, build_views(model, facts, NOW))


@pytest.fixture(scope="module")
def good_plans() -> list[export.PoolPlan]:
    return _plans(EXAMPLES / "good")


def _export(tmp_path: Path, scheduler: str) -> Path:
    out = tmp_path / scheduler
    code, stdout, err = run_cli(["export", scheduler, str(EXAMPLES / "good"), "--output", str(out)])
    assert code == 0, err
    return out


@pytest.mark.parametrize("scheduler", ["kueue", "volcano"])
def test_export_validates_against_crds(tmp_path: Path, scheduler: str) -> None:
    out = _export(tmp_path, scheduler)
    seen = set()
    for path in sorted(out.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            key = (doc["apiVersion"], doc["kind"])
            crd_file, version = CRDS[key]
            jsonschema.validate(doc, crd_schema(DATA / "crds" / crd_file, version))
            seen.add(key[1])
    expected = {"ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort"} if scheduler == "kueue" else {"Queue"}
    assert seen == expected


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
    text = export.kueue(good_plans)["serving.yaml"]
    assert f"nominalQuota: {serving.guaranteed}" in text
    assert f"borrowingLimit: {serving.borrow}" in text
    assert "# pooled baseline band, guaranteed: 53 GPUs (own baselines: chat-assistant" in text


def _read_back(tmp_path: Path, scheduler: str, plans: list[export.PoolPlan]) -> Path:
    """examples/good with its clusters replaced by the exported manifests, workloads pointed at the queues."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "good", repo)
    shutil.rmtree(repo / "clusters")
    shutil.rmtree(repo / "proposals")
    shutil.copytree(_export(tmp_path, scheduler), repo / scheduler)
    by_pool = {(p.cluster, p.pool): p for p in plans}
    teams = {m.name: m.team for p in plans for m in p.members}
    def point(m: re.Match[str]) -> str:
        workload, between, cluster, pool = m.group(1), m.group(2), m.group(3), m.group(4)
        plan = by_pool[(cluster, pool)]
        name = f"{teams[workload]}/{plan.queue}" if scheduler == "kueue" else plan.queue
        return f"  name: {workload}\n{between}  queue: {{scheduler: {scheduler}, name: {name}}}\n"

    for path in (repo / "workloads").glob("*.yaml"):
        text = re.sub(r"  name: (\S+)\n((?:.*\n)*?)  cluster: (\S+)\n  pool: (\S+)\n", point, path.read_text(encoding="utf-8"))
        path.write_text(text, encoding="utf-8")
    return repo


@pytest.mark.parametrize("scheduler", ["kueue", "volcano"])
def test_round_trip_gives_the_same_pools(tmp_path: Path, scheduler: str, good_plans: list[export.PoolPlan]) -> None:
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
    # and the bands computed through the scheduler pools are the ones exported
    again = {p.queue: (p.guaranteed, p.borrow) for p in _plans(repo)}
    assert again == {p.queue: (p.guaranteed, p.borrow) for p in good_plans}


def test_export_to_stdout_and_errors(tmp_path: Path) -> None:
    code, out, err = run_cli(["export", "kueue", str(EXAMPLES / "kueue")])
    assert code == 0, err
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert {d["kind"] for d in docs} == {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue"}
    (tmp_path / "q.yaml").write_text((DATA / "kueue" / "sample-gpu-queues.yaml").read_text())
    code, out, err = run_cli(["export", "volcano", str(tmp_path), "--isolated"])
    assert code == 2 and "nothing to export" in err
    code, out, err = run_cli(["export", "slurm", str(tmp_path)])
    assert code == 2


def test_export_import_is_cheap() -> None:
    import subprocess
    import sys

    code = "import sys, policylint.commands.export; print('policylint.linter' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
