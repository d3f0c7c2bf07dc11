"""``--diff`` finds the base's cluster files however their text spells the kind (red team, 2026-12-07, round 15).

The history rules found a cluster file moved in the change by a ``git grep -I`` of the base tree
for ``kind: Cluster``. Two ways past it gave a raise with no base to compare: a ``.gitattributes``
line ``* -diff`` in the same change (git calls every file binary, ``-I`` skips it: serving
48 -> 213, +160 GPUs, with reranker's per-GPU figure cut 19 -> 1), and ``kind: !!str Cluster``
committed first, the files moved with the raise later (+65). The grep now reads every YAML and
JSON file as text, and every base file the change deleted, moved or edited is parsed as the
loader parses it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import committed_example, git, replace_once, run_cli

SERVING = "clusters/prod-east.yaml"
TRAINING = "clusters/train-central.yaml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_example(tmp_path, message="the honest plan")


def _edit(repo: Path, name: str, old: str, new: str) -> None:
    replace_once(repo / name, old, new)


def _diff(repo: Path) -> tuple[int, dict[str, list[str]]]:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the change")
    code, out, err = run_cli(["check", "--format", "json", "--diff", "HEAD~1"], cwd=repo)
    assert code in (0, 1) and err == "", err
    found: dict[str, list[str]] = {}
    for f in json.loads(out)["findings"]:
        found.setdefault(f["code"], []).append(f["subject"])
    return code, found


def _raise_serving(repo: Path, reserved: int = 213) -> None:
    _edit(repo, "workloads/search.yaml", "    value: 19\n", "    value: 1\n")  # reranker's per-GPU figure
    _edit(repo, SERVING, "reservedGpus: 48", f"reservedGpus: {reserved}")
    git(repo, "rm", "-q", "proposals/2027-q1-serving.yaml")
    git(repo, "mv", SERVING, "clusters/east.yaml")


@pytest.mark.parametrize("attributes", ["* -diff\n", "*.yaml binary\n", "clusters/** -text -diff\n"])
def test_a_moved_cluster_file_git_calls_binary_keeps_its_base(repo: Path, attributes: str) -> None:
    (repo / ".gitattributes").write_text(attributes, encoding="utf-8")
    _raise_serving(repo)
    code, found = _diff(repo)
    assert code == 1
    assert "pool prod-east/serving" in found.get("PL950", [])


def test_a_tagged_kind_committed_first_then_moved_keeps_its_base(repo: Path) -> None:
    for name in (SERVING, TRAINING):
        _edit(repo, name, "kind: Cluster\n", "kind: !!str Cluster\n")
    code, found = _diff(repo)
    assert "PL950" not in found  # the tag alone changes nothing
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 60")
    _edit(repo, SERVING, "maxGpus: 10", "maxGpus: 4")
    _edit(repo, TRAINING, "reservedGpus: 392", "reservedGpus: 450")
    git(repo, "rm", "-q", "proposals/2027-q1-serving.yaml")
    git(repo, "mv", SERVING, "clusters/east.yaml")
    git(repo, "mv", TRAINING, "clusters/central.yaml")
    code, found = _diff(repo)
    assert code == 1
    assert {"pool prod-east/serving", "pool train-central/training"} <= set(found.get("PL950", []))


@pytest.mark.parametrize("spelling", ["kind:\n  Cluster\n", "kind: \"Clus\\x74er\"\n", "kind: !!str 'Cluster'\n"])
def test_any_spelling_of_the_kind_is_read_at_the_base(repo: Path, spelling: str) -> None:
    _edit(repo, SERVING, "kind: Cluster\n", spelling)
    _diff(repo)
    _raise_serving(repo, 120)
    code, found = _diff(repo)
    assert code == 1
    assert "pool prod-east/serving" in found.get("PL950", [])


def test_an_honest_move_of_a_binary_attributed_cluster_file_stays_clean(repo: Path) -> None:
    (repo / ".gitattributes").write_text("* -diff\n", encoding="utf-8")
    git(repo, "mv", SERVING, "clusters/east.yaml")
    code, found = _diff(repo)
    assert "PL950" not in found and "PL951" not in found


def test_cluster_files_the_base_reached_through_a_linked_folder_keep_their_base(tmp_path: Path) -> None:
    # red team, 2026-12-07, round 16: capacity/clusters was a link to the monorepo's shared/clusters; the change
    # moved the files into the capacity repository and raised serving 48 (+5 proposed) -> 86: no base was found
    import shutil

    from conftest import EXAMPLES

    mono = tmp_path / "mono"
    (mono / "shared").mkdir(parents=True)
    capacity = Path(shutil.copytree(EXAMPLES / "good", mono / "capacity"))
    shutil.move(str(capacity / "clusters"), str(mono / "shared" / "clusters"))
    (capacity / "clusters").symlink_to(Path("..") / "shared" / "clusters")
    git(mono, "init", "-q")
    git(mono, "add", "-A")
    git(mono, "commit", "-qm", "the honest plan")
    (capacity / "clusters").unlink()
    (capacity / "cluster-defs").mkdir()
    for name in ("prod-east.yaml", "train-central.yaml"):
        git(mono, "mv", f"shared/clusters/{name}", f"capacity/cluster-defs/{name}")
    _edit(capacity, "cluster-defs/prod-east.yaml", "reservedGpus: 48", "reservedGpus: 86")
    _edit(capacity, "cluster-defs/prod-east.yaml", "maxGpus: 10", "maxGpus: 4")
    git(mono, "rm", "-q", "capacity/proposals/2027-q1-serving.yaml")
    git(mono, "add", "-A")
    git(mono, "commit", "-qm", "the change")
    code, out, err = run_cli(["check", "--format", "json", "--diff", "HEAD~1"], cwd=capacity)
    assert code == 1 and err == "", err
    assert "pool prod-east/serving" in {f["subject"] for f in json.loads(out)["findings"] if f["code"] == "PL950"}
