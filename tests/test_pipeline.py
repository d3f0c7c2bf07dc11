"""One pipeline: the repository root is always loaded and resolved; PATHs only narrow the report.

Each test drives the installed entry point on a copy of an example repository
and pins one way the report used to depend on how the run was started.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLES, copy_minirepo, git, replace_once, run_cli


def _copy(tmp_path_factory: pytest.TempPathFactory, example: str) -> Path:
    repo = tmp_path_factory.mktemp(example) / "capacity"
    shutil.copytree(EXAMPLES / example, repo)
    return repo


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _copy(tmp_path_factory, "good")


def files_reported(cwd: Path, *args: str) -> tuple[int, list[tuple[str, str]]]:
    code, out, err = run_cli(["check", "--format", "json", "--no-cache", *args], cwd=cwd)
    assert err == "" or code != 2, err
    return code, [(f["file"], f["code"]) for f in json.loads(out)["findings"]]


# -- PATHs narrow the report, never the model -------------------------------------------


def test_a_folder_is_judged_with_the_rest_of_the_repository(tmp_path: Path) -> None:
    """`check workloads/` used to read only that folder: every pool reference was unknown (PL020)."""
    good = copy_minirepo(tmp_path / "capacity")  # clean, with workloads whose pools live in clusters/
    assert run_cli(["check", "workloads/", "--no-cache"], cwd=good)[0] == 0
    files = sorted(str(p.relative_to(good)) for p in (good / "workloads").glob("*.yaml"))
    assert run_cli(["check", *files, "--no-cache"], cwd=good)[0] == 0
    code, out, _ = run_cli(["check", "workloads", "--format", "json", "--no-cache"], cwd=good)
    assert (code, json.loads(out)["findings"]) == (0, [])


def test_a_folder_reports_only_its_own_files(tmp_path_factory: pytest.TempPathFactory) -> None:
    bad = _copy(tmp_path_factory, "bad")
    _, everything = files_reported(bad)
    _, clusters = files_reported(bad, "clusters")
    assert clusters and {f for f, _ in clusters} == {f for f, _ in everything if f.startswith("clusters/")}
    assert sorted(clusters) == sorted(x for x in everything if x[0].startswith("clusters/"))


def test_a_folder_without_policylint_documents_is_still_refused(good: Path) -> None:
    code, _, err = run_cli(["check", "evidence"], cwd=good)
    assert code == 2
    assert err == (
        "policylint: error: no policylint documents found in evidence "
        "(looked for YAML files with apiVersion: policylint/v1)\n"
    )


def test_diff_honours_the_paths_given(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`--diff HEAD proposals/x.yaml` used to report on every changed file."""
    bad = _copy(tmp_path_factory, "bad")
    git(bad, "init", "-q")
    git(bad, "add", "-A")
    git(bad, "commit", "-qm", "base")
    for name in ("proposals/2027-q1-everything.yaml", "proposals/2027-q1-standby.yaml", "clusters/prod-east.yaml"):
        with (bad / name).open("a", encoding="utf-8") as fh:
            fh.write("# touched\n")
    _, changed = files_reported(bad, "--diff", "HEAD")
    assert {"proposals/2027-q1-standby.yaml", "clusters/prod-east.yaml"} <= {f for f, _ in changed}
    _, narrowed = files_reported(bad, "--diff", "HEAD", "proposals/2027-q1-standby.yaml")
    assert narrowed == [x for x in changed if x[0] == "proposals/2027-q1-standby.yaml"] and narrowed


# -- scheduler pools in --changed-files and --diff ----------------------------------------


@pytest.fixture(scope="module")
def kueue_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/kueue with the serving ClusterQueue's quota cut so that its queue overflows (PL203)."""
    repo = _copy(tmp_path_factory, "kueue")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    replace_once(repo / "kueue" / "cluster-queues.yaml", "nominalQuota: 22", "nominalQuota: 12")
    return repo


def test_a_changed_cluster_queue_keeps_the_findings_of_its_workloads(kueue_repo: Path) -> None:
    """The findings of the workloads behind a changed ClusterQueue stay in scope; its own PL203 is on it."""
    code, full = files_reported(kueue_repo)
    assert code == 1 and ("kueue/cluster-queues.yaml", "PL203") in full
    assert files_reported(kueue_repo, "--changed-files", "kueue/cluster-queues.yaml") == (1, full)
    assert files_reported(kueue_repo, "--diff", "HEAD") == (1, full)


# -- broken documents -----------------------------------------------------------------------


def test_a_broken_cluster_does_not_silence_an_unknown_pool(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Any Cluster failing validation used to silence every unknown-pool PL020 (a `servng` typo)."""
    repo = _copy(tmp_path_factory, "good")
    replace_once(repo / "clusters" / "prod-east.yaml", "reservedGpus: 48", "reservedGpus: forty-eight")
    replace_once(repo / "workloads" / "search.yaml", "name: embeddings-search", "name: embeddings-search")
    text = (repo / "workloads" / "search.yaml").read_text(encoding="utf-8")
    (repo / "workloads" / "search.yaml").write_text(text.replace("pool: serving", "pool: servng", 1), encoding="utf-8")
    code, out, _ = run_cli(["check", "--format", "json", "--no-cache", "--select", "PL0"], cwd=repo)
    found = [(f["file"], f["line"], f["code"], f["message"]) for f in json.loads(out)["findings"]]
    assert code == 1
    assert [f for f in found if f[2] == "PL020"] == [
        ("workloads/search.yaml", 14, "PL020", "cluster 'prod-east' has no pool 'servng' (known: batch, serving)")
    ]
    assert [f[:3] for f in found if f[2] == "PL010"] == [("clusters/prod-east.yaml", 19, "PL010")]


# -- export writes only from a sound model ----------------------------------------------------


def test_export_refuses_a_model_with_a_schema_error(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A workload failing validation dropped out of its pool: the quota was written too small, exit 0."""
    repo = _copy(tmp_path_factory, "good")
    code, out, err = run_cli(["export", "kueue"], cwd=repo)
    assert code == 0 and "nominalQuota: 53" in out
    replace_once(repo / "workloads" / "search.yaml", "  name: embeddings-search\n", "  name: embeddings-search\n  replicas: 3\n")
    code, out, err = run_cli(["export", "kueue", "--output", "out"], cwd=repo)
    assert (code, out) == (1, "")
    assert err.startswith("workloads/search.yaml:8:3: PL010 ")
    assert err.endswith("policylint: the capacity model has 1 error; nothing exported (fix them, `policylint check` shows them)\n")
    assert not (repo / "out").exists()
    # the whole repository counts, whatever PATH the export is given
    code, out, err = run_cli(["export", "kueue", "clusters"], cwd=repo)
    assert (code, out) == (1, "") and "nothing exported" in err


# -- one kind of pool ---------------------------------------------------------------------------


def test_pool_fact_places_are_known_facts_and_places() -> None:
    from policylint.model import POOL_PLACES
    from policylint.engine.pool_view import POOL_FACT_PLACES
    from policylint.engine.sheets import FACTS

    assert set(POOL_FACT_PLACES.values()) <= set(POOL_PLACES)
    assert set(POOL_FACT_PLACES) - {"queue_depth_limit", "queue_wait_limit"} <= set(FACTS["pool"])
    # scheduler and pooled facts are declared with the rest, not added by whoever imports first
    assert {"scheduler", "cohort", "reclaims_in_time"} <= set(FACTS["pool"])


def test_a_reader_cannot_give_a_pool_an_unknown_place(tmp_path: Path) -> None:
    from policylint.model.load import load_file
    from policylint.model import Cluster, Pool

    (tmp_path / "q.yaml").write_text("kind: Queue\nmetadata: {name: q}\n")
    doc = load_file(tmp_path / "q.yaml", "q.yaml").documents[0]
    with pytest.raises(ValueError, match="unknown places reserved_gpus"):
        Pool("q", Cluster("c", doc, {}), {}, doc, (), origin="volcano", places={"reserved_gpus": ("spec",)})
