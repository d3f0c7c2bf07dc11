"""The walk of a repository is bounded: a linked data folder cannot make every run list millions of files.

A symbolic link to a folder is followed wherever it leads (``tests/test_linked_folders.py``:
a monorepo's shared folder of ClusterQueues must be read), so ``data -> /mnt/datasets`` in a
capacity repository was listed in full by every run, the pre-commit hook's included, and an
``exclude`` pattern only dropped the files afterwards. The walk now counts what it lists
(``limits.max-walked-entries``), stops the run with one message naming the link when it passes
the limit, and never enters a folder an ``exclude`` pattern covers whole.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, run_cli
from test_manifests import EXTRA_QUEUE

from policylint.model.load.files import discover


def _repo_with_data_link(tmp_path: Path, files: int = 300) -> tuple[Path, Path]:
    """(repo, data): ``examples/kueue`` copied, its ``datasets`` a link to a folder of ``files`` files outside it."""
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    data = tmp_path / "mnt" / "datasets"
    for i in range(files):
        shard = data / f"shard-{i // 100}"
        shard.mkdir(parents=True, exist_ok=True)
        (shard / f"part-{i}.parquet").write_bytes(b"PAR1")
    (repo / "datasets").symlink_to(data, target_is_directory=True)
    return repo, data


def _config(repo: Path, text: str) -> None:
    (repo / ".policylint.yaml").write_text(text, encoding="utf-8")


def test_a_walk_past_the_limit_stops_the_run_naming_the_link(tmp_path: Path) -> None:
    repo, data = _repo_with_data_link(tmp_path)
    _config(repo, "limits: {max-walked-entries: 200}\n")
    code, out, err = run_cli(["check", "."], cwd=repo)
    assert code == 2 and "Traceback" not in err, err
    assert "more than 200 files and folders (limits.max-walked-entries)" in err
    assert f"reached through the link datasets -> {data.resolve()}" in err  # the link, not just a deep folder
    assert 'exclude: ["datasets/*"]' in err  # the way out, in the configuration's own words
    assert err.count("\n") == 1 and out == ""  # one line, nothing half-reported


def test_the_default_limit_reads_an_ordinary_repository(tmp_path: Path) -> None:
    repo, _ = _repo_with_data_link(tmp_path)
    code, out, err = run_cli(["check", "--format", "json", "."], cwd=repo)
    assert code == 0 and "Traceback" not in err, err
    assert json.loads(out)["findings"] == []


def test_an_excluded_folder_is_not_walked_at_all(tmp_path: Path) -> None:
    """Under the same low limit, excluding the link's folder keeps the walk out of it: the run passes."""
    repo, _ = _repo_with_data_link(tmp_path)
    _config(repo, 'limits: {max-walked-entries: 200}\nexclude: ["datasets/*"]\n')
    code, out, err = run_cli(["check", "--format", "json", "."], cwd=repo)
    assert code in (0, 1) and "Traceback" not in err, err
    codes = {f["code"] for f in json.loads(out)["findings"]}
    assert codes <= {"PL977"}, codes  # only the loosening itself is reported: excluding is a reviewed choice


def test_a_pattern_that_covers_only_some_files_does_not_prune_the_folder(tmp_path: Path) -> None:
    """``datasets/*.yaml`` leaves the folder's other files to be read: a ClusterQueue in a .yml file is judged."""
    repo, data = _repo_with_data_link(tmp_path, files=3)
    (data / "shard-0" / "queue.yml").write_text(json.dumps(EXTRA_QUEUE, indent=2), encoding="utf-8")
    _config(repo, 'exclude: ["datasets/*.yaml"]\n')
    code, out, err = run_cli(["check", "--format", "json", "."], cwd=repo)
    assert code == 1, err
    assert "datasets/shard-0/queue.yml" in {f["file"] for f in json.loads(out)["findings"]}


def test_exclusion_still_drops_the_same_files_with_pruning(tmp_path: Path) -> None:
    """What ``discover`` yields under a covering pattern is what it yielded when it filtered file by file."""
    repo = tmp_path / "r"
    for rel in ("a/x.yaml", "a/b/y.yaml", "c/z.yaml", "ab/w.yaml"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("k: 1\n", encoding="utf-8")
    found = {p.relative_to(repo).as_posix() for p, _ in discover([repo], ["a/*"], root=repo)}
    assert found == {"c/z.yaml", "ab/w.yaml"}  # "a/*" covers a/ only, not ab/


@pytest.mark.parametrize(
    ("pattern", "prefix"),
    [("data/*", "data/"), ("data/**", "data/"), ("a/b/*", "a/b/"), ("*.yaml", None), ("data/*.csv", None),
     ("da?a/*", None), ("[d]ata/*", None), ("data", None), ("data/", None), ("*", None)],
)
def test_only_a_plain_folder_then_stars_covers_a_folder(pattern: str, prefix: str | None) -> None:
    from policylint.model.load.files import _covering_prefix

    assert _covering_prefix(pattern) == prefix


def test_a_link_into_an_excluded_folder_is_read_where_it_is_reached(tmp_path: Path) -> None:
    """Red team round 12: with ``datasets/*`` excluded (and the exclusion accepted), a raised ClusterQueue in
    ``datasets/`` linked into ``kueue/`` - a file link or a folder link - is applied by ``kubectl apply -R -f kueue/``;
    it was excluded by its real path and the gate passed without a word."""
    for kind in ("file", "folder"):
        repo, _ = _repo_with_data_link(tmp_path / kind, files=3)
        (repo / "datasets").unlink()
        (repo / "datasets").mkdir()
        raised = json.dumps({**EXTRA_QUEUE, "metadata": {"name": "training"}}, indent=2)
        (repo / "datasets" / "training.yaml").write_text(raised, encoding="utf-8")
        if kind == "file":
            (repo / "kueue" / "zz-training.yaml").symlink_to("../datasets/training.yaml")
        else:
            (repo / "kueue" / "more").symlink_to("../datasets", target_is_directory=True)
        _config(repo, 'exclude: ["datasets/*"]\n')
        code, out, err = run_cli(["check", "--format", "json", "."], cwd=repo)
        assert code == 1 and "Traceback" not in err, err
        codes = {f["code"] for f in json.loads(out)["findings"]} - {"PL977"}
        assert codes, (kind, out)  # the queue is read: it is judged (here a second 'training' ClusterQueue)


def test_the_limit_met_without_a_link_names_no_folder_to_exclude_blindly(tmp_path: Path) -> None:
    """The walk of the repository's own folders past the limit: no advice to exclude the folder it was in."""
    repo, _ = _repo_with_data_link(tmp_path, files=3)
    (repo / "datasets").unlink()
    _config(repo, "limits: {max-walked-entries: 5}\n")
    code, _, err = run_cli(["check", "."], cwd=repo)
    assert code == 2 and "more than 5 files and folders" in err, err
    # no concrete folder to exclude (it was `exclude: ["kueue/*"]`, the queues themselves), no link
    assert 'exclude: ["FOLDER/*"]' in err and "reached through" not in err, err
