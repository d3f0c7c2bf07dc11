"""A change the narrowed run cannot map to the subjects it affects is judged as a whole run.

Red team, 2026-12-05: a Kueue LocalQueue re-pointed at another ClusterQueue, a
ResourceFlavor given another GPU, and a trace's provenance record edited each
changed verdicts in a whole run, while ``check --changed-files FILE`` (the
pre-commit hook) judged nothing and passed. No subject names those files as its
document, so the narrowed run now judges everything when one of them changed;
a file the model does not read (a README) still narrows the run to nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO, run_cli

NOW = ["--now", "2026-12-01"]


def _codes(out: str) -> list[tuple[str, str, int]]:
    return sorted((f["code"], f["file"], f["line"]) for f in json.loads(out)["findings"])


def _both(repo: Path, changed: str) -> tuple[list[tuple[str, str, int]], list[tuple[str, str, int]]]:
    """(findings of the whole run, findings of the one-file run for ``changed``)."""
    rc_all, out_all, err_all = run_cli(["check", *NOW, "--format", "json", "."], cwd=repo)
    rc_one, out_one, err_one = run_cli(["check", *NOW, "--format", "json", "--changed-files", changed], cwd=repo)
    assert rc_all in (0, 1) and rc_one in (0, 1), err_all + err_one
    return _codes(out_all), _codes(out_one)


@pytest.fixture
def kueue(tmp_path: Path) -> Path:
    repo = tmp_path / "kueue"
    shutil.copytree(REPO / "examples" / "kueue", repo)
    return repo


def test_a_local_queue_pointed_at_another_cluster_queue_is_judged(kueue: Path) -> None:
    queues = kueue / "kueue" / "local-queues.yaml"
    text = queues.read_text()
    assert "clusterQueue: serving" in text
    queues.write_text(text.replace("clusterQueue: serving", "clusterQueue: training", 1))
    whole, one = _both(kueue, "kueue/local-queues.yaml")
    assert whole and one == whole  # inference admitted into the training queue: reported by both


def test_a_flavor_given_another_gpu_is_judged(kueue: Path) -> None:
    flavors = kueue / "kueue" / "flavors.yaml"
    before = _both(kueue, "kueue/flavors.yaml")[0]
    text = flavors.read_text()
    labels = [line for line in text.splitlines() if "gpu.product" in line or "gpu-memory" in line.lower()]
    assert labels, text
    # every GPU of every flavor becomes a 16 GiB card: the resident models no longer fit
    changed = text
    for line in labels:
        key, _, _ = line.partition(":")
        changed = changed.replace(line, f"{key}: {'Tesla-T4' if 'product' in key else '16384'}")
    flavors.write_text(changed)
    whole, one = _both(kueue, "kueue/flavors.yaml")
    assert whole != before  # the change moves verdicts ...
    assert one == whole  # ... and the hook sees them


def test_an_edited_provenance_record_is_judged(tmp_path: Path) -> None:
    repo = tmp_path / "good"
    shutil.copytree(REPO / "examples" / "good", repo)
    workload = repo / "workloads" / "search.yaml"
    text = workload.read_text()
    anchor = "      match: {model_name: bge-m3-embed}\n"
    assert anchor in text
    # the trace is declared as pulled from Prometheus: its provenance record is read and judged
    workload.write_text(text.replace(anchor, anchor + "      prometheus:\n        template: vllm-running\n"
                                     "        params: {model: bge-m3-embed}\n        step: 5m\n        lookback: 92d\n", 1))
    record = repo / "measurements" / "traces" / "embeddings-search.json.provenance.json"
    record.write_text(json.dumps({
        "end": "2026-11-30T23:55:00Z", "format": "policylint-provenance/1", "lookback_seconds": 7948800,
        "params": {"model": "bge-m3-embed"}, "pulled_at": "2026-10-01T00:00:00Z",
        "query": "sum(vllm:num_requests_waiting{model_name=\"bge-m3-embed\"})", "samples": 26496, "series": 1,
        "server": "https://prometheus.example", "start": "2026-10-01T00:00:00Z", "step_seconds": 300,
        "template": "vllm-running",
    }, indent=2) + "\n")
    whole, one = _both(repo, "measurements/traces/embeddings-search.json.provenance.json")
    assert any(code in ("PL130", "PL131") for code, _, _ in whole)
    assert one == whole


def test_a_file_the_model_does_not_read_still_narrows_to_nothing(kueue: Path) -> None:
    queues = kueue / "kueue" / "local-queues.yaml"
    queues.write_text(queues.read_text().replace("clusterQueue: serving", "clusterQueue: training", 1))
    (kueue / "NOTES.md").write_text("not a capacity document\n")
    rc, out, err = run_cli(["check", *NOW, "--format", "json", "--changed-files", "NOTES.md"], cwd=kueue)
    assert (rc, _codes(out)) == (0, []), err


def test_a_new_file_that_claims_a_name_first_is_judged_with_the_file_it_took_it_from(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 16: a new `a-fine-tuning.yaml` declared `fine-tuning` in a new cluster and was
    read before `research.yaml`, which still places it in train-central/training (+119 reserved GPUs): the whole
    run reported PL021 on research.yaml and PL981 on the pool, the hook nothing. A file that defines a name another
    file defines decides which one the model reads: the narrowed run judges everything."""
    repo = tmp_path / "good"
    shutil.copytree(REPO / "examples" / "good", repo)
    research = (repo / "workloads" / "research.yaml").read_text()
    start = research.index("apiVersion", research.index("name: fine-tuning") - 200)
    end = research.find("\n---", start)
    copy = research[start:end if end >= 0 else None]
    (repo / "workloads" / "a-fine-tuning.yaml").write_text(copy)
    whole, one = _both(repo, "workloads/a-fine-tuning.yaml")
    assert ("PL021", "workloads/research.yaml") in [(c, f) for c, f, _ in whole]
    assert one == whole


@pytest.mark.parametrize(
    ("file", "old", "new"),
    [
        ("clusters/prod-east.yaml", "  name: prod-east\n", "  name: prod-east-0\n"),  # a cluster
        ("clusters/prod-east.yaml", "    - name: batch\n", "    - name: offline\n"),  # one of its pools
        ("workloads/search.yaml", "  name: reranker\n", "  name: reranker-v2\n"),  # a workload a proposal cites
    ],
)
def test_a_name_taken_away_by_the_change_is_judged_where_it_was_named(tmp_path: Path, file: str, old: str, new: str) -> None:
    """A cluster, pool or workload renamed in its own file leaves the unchanged documents naming it pointing at
    nothing (PL020 and the like): the hook and --diff judge the whole run, as for a deleted file (found by the gate
    fuzz target: a renamed cluster passed the hook's narrowing of its workloads and proposal)."""
    from conftest import git, replace_once

    repo = Path(shutil.copytree(REPO / "examples" / "good", tmp_path / "repo"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    replace_once(repo / file, old, new)
    git(repo, "add", "-A")
    code, out, err = run_cli(["check", "--format", "json"], cwd=repo)
    whole = (code, _codes(out))
    assert code == 1 and any(f[1] != file for f in whole[1]), whole
    code, out, err = run_cli(["check", "--format", "json", "--changed-files", file], cwd=repo)
    assert (code, _codes(out)) == whole, err
    code, out, err = run_cli(["check", "--format", "json", "--diff", "HEAD"], cwd=repo)
    assert code == 1 and set(whole[1]) <= set(_codes(out)), err


def test_a_cluster_queue_renamed_is_judged_where_its_local_queue_names_it(kueue: Path) -> None:
    """A ClusterQueue renamed in its own manifest: the LocalQueue and the workloads admitted through it now lead
    nowhere (PL020 on a workload), which no changed file defines any more (found by the gate fuzz target)."""
    from conftest import git, replace_once

    git(kueue, "init", "-q")
    git(kueue, "add", "-A")
    git(kueue, "commit", "-qm", "base")
    replace_once(kueue / "kueue" / "cluster-queues.yaml", "  name: serving\n", "  name: serving-0\n")
    git(kueue, "add", "-A")
    whole, one = _both(kueue, "kueue/cluster-queues.yaml")
    assert any(code == "PL020" and file.startswith("workloads/") for code, file, _ in whole), whole
    assert one == whole
