"""A folder the repository links to is read like any other folder.

Red team, 2026-12-06 (found while closing round 16): the walk did not follow a symbolic link
to a folder, so ``kueue/extra -> ../../shared/kueue-extra`` holding a ClusterQueue of 64 more
GPUs was read by no run - the whole check, the hook's ``--changed-files`` run, ``--diff`` - and
the gate passed without a word. A linked folder is now walked, inside the repository and outside
it (as a linked file is read wherever it lies), each real folder once; a link the walk cannot
follow (one leading nowhere, one to a folder holding the repository) is reported (PL008).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLES, git, run_cli
from policylint.model.load.files import discover
from test_manifests import EXTRA_QUEUE

EXTRA = json.dumps(EXTRA_QUEUE, indent=2)


def _check(cwd: Path, *args: str) -> tuple[int, list[tuple[str, str]]]:
    code, out, err = run_cli(["check", "--format", "json", *args], cwd=cwd)
    assert code in (0, 1) and "Traceback" not in err, err
    return code, sorted((f["code"], f["file"]) for f in json.loads(out)["findings"])


def _monorepo(tmp_path: Path) -> tuple[Path, Path]:
    """(top, capacity): the Kueue example at ``top/capacity``, its ``kueue/extra`` a link to ``top/shared/kueue-extra``."""
    top = tmp_path / "mono"
    repo = Path(shutil.copytree(EXAMPLES / "kueue", top / "capacity"))
    (top / "shared" / "kueue-extra").mkdir(parents=True)
    (top / "shared" / "kueue-extra" / "README.md").write_text("queues the teams share\n", encoding="utf-8")
    (repo / "kueue" / "extra").symlink_to("../../shared/kueue-extra", target_is_directory=True)
    return top, repo


def test_a_linked_folder_of_cluster_queues_outside_the_repository_is_judged(tmp_path: Path) -> None:
    top, repo = _monorepo(tmp_path)
    assert _check(repo) == (0, [])
    (top / "shared" / "kueue-extra" / "extra.yaml").write_text(EXTRA, encoding="utf-8")
    code, found = _check(repo)
    assert code == 1  # shown through the link, as a linked file outside the working folder is
    assert ("PL110", "kueue/extra/extra.yaml") in found, found


def test_a_linked_folder_inside_the_repository_that_the_walk_skips_is_judged(tmp_path: Path) -> None:
    """Queues shipped in a package under node_modules/ and linked into kueue/: read through the link."""
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    package = repo / "node_modules" / "@acme" / "gpu-queues"
    package.mkdir(parents=True)
    (package / "extra.yaml").write_text(EXTRA, encoding="utf-8")
    (repo / "kueue" / "acme").symlink_to("../node_modules/@acme/gpu-queues", target_is_directory=True)
    code, found = _check(repo)
    assert code == 1
    # inside the working folder a linked file is shown by its real path; so is a file under a linked folder
    assert ("PL110", "node_modules/@acme/gpu-queues/extra.yaml") in found, found


def test_a_link_loop_ends_and_nothing_is_read_twice(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    plain = [p.relative_to(repo).as_posix() for p, _ in discover([repo])]
    (repo / "kueue" / "loop").symlink_to("..", target_is_directory=True)
    (repo / "workloads" / "deeper").mkdir()
    (repo / "workloads" / "deeper" / "back").symlink_to("../..", target_is_directory=True)
    walked = [p.relative_to(repo).as_posix() for p, _ in discover([repo])]
    assert walked == plain
    assert _check(repo) == (0, [])


def test_two_links_to_one_folder_read_each_file_once(tmp_path: Path) -> None:
    top, repo = _monorepo(tmp_path)
    (top / "shared" / "kueue-extra" / "extra.yaml").write_text(EXTRA, encoding="utf-8")
    (repo / "kueue" / "again").symlink_to("../../shared/kueue-extra", target_is_directory=True)
    (repo / "workloads" / "queues").symlink_to("../kueue/extra", target_is_directory=True)
    walked = [p.relative_to(repo).as_posix() for p, _ in discover([repo], root=repo)]
    assert [p for p in walked if p.endswith("extra.yaml")] == ["kueue/again/extra.yaml"], walked
    code, found = _check(repo)
    assert code == 1 and ("PL021", "kueue/again/extra.yaml") not in found, found  # not defined twice
    assert [f for f in found if f[0] == "PL110"] == [("PL110", "kueue/again/extra.yaml")]


@pytest.mark.parametrize("target", ["../nowhere", "../..", "/"], ids=["broken", "above-the-repository", "the-root"])
def test_a_link_the_walk_cannot_follow_is_reported(tmp_path: Path, target: str) -> None:
    top, repo = _monorepo(tmp_path)
    (repo / "kueue" / "far").symlink_to(target, target_is_directory=True)
    code, found = _check(repo)
    assert (code, found) == (1, [("PL008", "kueue/far")])
    _, out, _ = run_cli(["check"], cwd=repo)
    assert "kueue/far:1:1: error PL008 [unwalked-link] symbolic link to " + target in out, out
    # an exclude pattern leaves it alone (and PL977 names the pattern as a loosening)
    (repo / ".policylint.yaml").write_text(
        (repo / ".policylint.yaml").read_text(encoding="utf-8") + "exclude: [far]\n", encoding="utf-8")
    assert "PL008" not in {c for c, _ in _check(repo)[1]}


def test_a_broken_folder_link_named_on_the_command_line_is_one_pl008(tmp_path: Path) -> None:
    """Named, the link was read as a file too: PL003 beside PL008 for one cause, and two files counted."""
    top, repo = _monorepo(tmp_path)
    (repo / "kueue" / "far").symlink_to("../nowhere", target_is_directory=True)
    for args in (["kueue/far"], ["kueue/far", "kueue"], ["--changed-files", "kueue/far"]):
        assert _check(repo, *args) == (1, [("PL008", "kueue/far")]), args
    _, out, _ = run_cli(["check", "kueue/far"], cwd=repo)
    assert out.rstrip().endswith("in 0 documents in 1 file."), out
    # a link named as a YAML file that leads nowhere is still a file that cannot be read
    (repo / "gone.yaml").symlink_to("../nowhere.yaml")
    assert _check(repo, "gone.yaml") == (1, [("PL003", "gone.yaml")])


def test_a_broken_link_named_as_a_file_is_not_pl008(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    (repo / "docs").mkdir()
    (repo / "docs" / "diagram.svg").symlink_to("../build/diagram.svg")
    assert _check(repo) == (0, [])


@pytest.mark.parametrize(
    ("where", "staged"),
    [
        pytest.param("capacity", ["kueue/extra/extra.yaml"], id="through-the-link"),
        pytest.param("capacity", ["../shared/kueue-extra/extra.yaml"], id="from-the-capacity-folder"),
        pytest.param(".", ["shared/kueue-extra/extra.yaml"], id="from-the-top-as-pre-commit-passes-it"),
    ],
)
def test_the_hook_judges_a_staged_file_in_a_linked_folder(tmp_path: Path, where: str, staged: list[str]) -> None:
    top, repo = _monorepo(tmp_path)
    git(top, "init", "-q")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "capacity plans")
    (top / "shared" / "kueue-extra" / "extra.yaml").write_text(EXTRA, encoding="utf-8")
    git(top, "add", "shared/kueue-extra/extra.yaml")
    code, found = _check(top / where, "--changed-files", *staged)
    # the hook's output is relative to the top of the git repository, where the file lies
    assert (code, found) == (1, [("PL110", "shared/kueue-extra/extra.yaml"), ("PL204", "shared/kueue-extra/extra.yaml")])


def test_a_dangling_link_beside_workloads_is_reported_by_every_run(tmp_path: Path) -> None:
    """A workload file turned into a link whose target is gone: its workload would leave its pool unreported.

    Beside policylint documents it is read (PL003) as an emptied file is (PL004), its pool is not
    judged (PL981), and the hook's run on it answers as the whole run instead of stopping on
    "path does not exist"; elsewhere a dangling link stays another project's business.
    """
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    (repo / "notes").mkdir()
    (repo / "notes" / "draft.yaml").symlink_to("../drafts/draft.yaml")
    assert _check(repo) == (0, [])
    (repo / "workloads" / "research-ml.yaml").symlink_to("../../elsewhere/research-ml.yaml")
    code, found = _check(repo)
    assert code == 1 and ("PL003", "workloads/research-ml.yaml") in found, found
    assert any(c == "PL981" for c, _ in found), found
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "plans")
    hooked = _check(repo, "--changed-files", "workloads/research-ml.yaml")
    assert hooked == (code, found)


def test_a_dangling_link_whose_target_was_inside_the_repository_is_shown_as_the_link(tmp_path: Path) -> None:
    """The missing target's name (``gone/research.yaml``) is not a file of the repository: the
    finding names the link, in the whole run and in the hook's run alike."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    (repo / "gone").mkdir()
    (repo / "workloads" / "research.yaml").unlink()
    (repo / "workloads" / "research.yaml").symlink_to("../gone/research.yaml")
    code, found = _check(repo)
    assert code == 1 and ("PL003", "workloads/research.yaml") in found, found
    assert not any("gone/" in f for _, f in found), found
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "plans")
    assert _check(repo, "--changed-files", "workloads/research.yaml") == (code, found)


def test_a_changed_folder_holding_a_linked_folder_reports_what_the_link_holds(tmp_path: Path) -> None:
    """``--changed-files FOLDER`` takes the files the loader would walk there: a folder linked inside it
    holds changed files too (a recursive glob followed no nested link, and their findings were left out)."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    shared = tmp_path / "shared" / "teams"
    shared.mkdir(parents=True)
    moved = repo / "workloads" / "research.yaml"
    text = moved.read_text(encoding="utf-8")
    moved.unlink()
    (shared / "research.yaml").write_text(text.replace("maxQueueSeconds", "maxQueueSecondz", 1), encoding="utf-8")
    (repo / "workloads" / "teams").symlink_to(shared, target_is_directory=True)
    code, found = _check(repo)
    assert code == 1 and any(f == "workloads/teams/research.yaml" for _, f in found), found
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "plans")
    hooked = _check(repo, "--changed-files", "workloads")
    assert [x for x in hooked[1] if x[1].startswith("workloads/")] == [x for x in found if x[1].startswith("workloads/")]
    assert hooked[0] == 1


def test_a_run_narrowed_to_a_folder_reports_the_links_in_it_wherever_they_lead(tmp_path: Path) -> None:
    """``check FOLDER`` judged a file by its real path only: a broken link to a folder (PL008) and a linked
    workload file kept outside the folder, both in the folder asked about, were left out and the run passed."""
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    shared = tmp_path / "shared"
    shared.mkdir()
    (repo / "kueue" / "extra").symlink_to("../../gone-folder")
    source = next(p for p in sorted((repo / "workloads").glob("*.yaml")))
    text = source.read_text(encoding="utf-8")
    (shared / "copy.yaml").write_text(text.replace("maxQueueSeconds", "maxQueueSecondz", 1), encoding="utf-8")
    (repo / "workloads" / "copy.yaml").symlink_to(shared / "copy.yaml")
    whole = _check(repo)
    assert ("PL008", "kueue/extra") in whole[1], whole
    assert any(f == "workloads/copy.yaml" for _, f in whole[1]), whole
    for folder in ("kueue", "workloads"):
        code, found = _check(repo, folder)
        assert code == 1 and found == [x for x in whole[1] if x[1].startswith(folder + "/")], (folder, found)
    assert ("PL008", "kueue/extra") not in _check(repo, "workloads")[1]
