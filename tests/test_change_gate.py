"""The gate judges the change: deletions re-judge what depended on them, monorepos in any order.

pre-commit passes a hook only the staged files that still exist, so deleting a workload
or a trace used to reach no check ("(no files to check) Skipped"), and ``--diff`` found
nothing to report about a file that is gone. A change that deletes evidence is now
judged like any other: the whole repository is re-judged, because whatever referenced
the deleted file cannot be found from it any more.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import EXAMPLES, REPO, git, run_cli

DELETED_WORKLOAD = {
    ("PL110", "pool example/serving"),
    ("PL802", "proposal example-request"),
    ("PL803", "proposal example-request"),
    ("PL020", ""),  # an unresolved reference belongs to its document, not to a subject
}


def _capacity(where: Path, name: str = "capacity") -> Path:
    """A repository from `init` at ``where/name`` (clean under every rule)."""
    repo = where / name
    code, _, err = run_cli(["init", str(repo)])
    assert code == 0, err
    return repo


def _committed(repo: Path) -> Path:
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "capacity plans")
    return repo


def _findings(out: str) -> set[tuple[str, str]]:
    return {(f["code"], f["subject"]) for f in json.loads(out)["findings"]}


def test_the_hook_runs_when_only_deletions_are_staged() -> None:
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["always_run"] is True and hook["pass_filenames"] is True


def test_a_staged_deleted_workload_is_judged(tmp_path: Path) -> None:
    repo = _committed(_capacity(tmp_path))
    git(repo, "rm", "-q", "workloads/example-service.yaml")
    code, out, err = run_cli(["check", "--changed-files", "--format", "json"], cwd=repo)
    assert (code, err) == (1, "")
    assert _findings(out) == DELETED_WORKLOAD


def test_a_staged_deleted_trace_is_judged(tmp_path: Path) -> None:
    repo = _committed(_capacity(tmp_path))
    git(repo, "rm", "-q", "measurements/example-service.csv")
    code, out, _ = run_cli(["check", "--changed-files", "--format", "json"], cwd=repo)
    full = run_cli(["check", "--format", "json"], cwd=repo)
    assert code == 1 and full[0] == 1
    assert _findings(out) == _findings(full[1]) != set()


def test_a_committed_deletion_fails_diff(tmp_path: Path) -> None:
    repo = _committed(_capacity(tmp_path))
    git(repo, "rm", "-q", "workloads/example-service.yaml")
    git(repo, "commit", "-q", "-m", "drop the service")
    code, out, _ = run_cli(["check", "--diff", "HEAD~1", "--format", "json"], cwd=repo)
    assert code == 1
    assert _findings(out) == DELETED_WORKLOAD


def test_nothing_changed_is_clean_without_loading_anything(tmp_path: Path) -> None:
    repo = _committed(_capacity(tmp_path))
    (repo / "clusters" / "example.yaml").write_text("not: [valid", encoding="utf-8")  # not staged, not judged
    code, out, err = run_cli(["check", "--changed-files", "--format", "json"], cwd=repo)
    assert (code, err) == (0, "")
    assert json.loads(out)["findings"] == []


def _monorepo(tmp_path: Path) -> Path:
    top = tmp_path / "mono"
    top.mkdir()
    _capacity(top)
    (top / "other.yaml").write_text("kind: Deployment\n", encoding="utf-8")
    _committed(top)
    cluster = top / "capacity" / "clusters" / "example.yaml"
    text = cluster.read_text(encoding="utf-8")
    assert text.count("reservedGpus: 7") == 1
    cluster.write_text(text.replace("reservedGpus: 7", "reservedGpus: 30"), encoding="utf-8")
    return top


@pytest.mark.parametrize(
    "order",
    [["capacity/clusters/example.yaml", "other.yaml"], ["other.yaml", "capacity/clusters/example.yaml"]],
    ids=["capacity-first", "other-first"],
)
def test_monorepo_files_outside_the_capacity_root_never_decide(tmp_path: Path, order: list[str]) -> None:
    top = _monorepo(tmp_path)
    code, out, err = run_cli(["check", "--changed-files", "--format", "json", *order], cwd=top)
    assert (code, err) == (1, "")
    assert ("PL101", "pool example/serving") in _findings(out)
    assert {f["file"] for f in json.loads(out)["findings"]} <= {
        "capacity/clusters/example.yaml",
        "capacity/proposals/example-request.yaml",
        "capacity/workloads/example-service.yaml",
    }


def test_monorepo_change_outside_the_capacity_root_is_no_change(tmp_path: Path) -> None:
    top = _monorepo(tmp_path)
    code, out, _ = run_cli(["check", "--changed-files", "--format", "json", "other.yaml"], cwd=top)
    assert code == 0 and json.loads(out)["findings"] == []


def test_two_capacity_repositories_in_one_change_are_a_usage_error(tmp_path: Path) -> None:
    top = tmp_path / "mono"
    top.mkdir()
    _capacity(top, "team-a")
    _capacity(top, "team-b")
    _committed(top)
    code, out, err = run_cli(
        ["check", "--changed-files", "team-a/clusters/example.yaml", "team-b/clusters/example.yaml"], cwd=top
    )
    assert (code, out) == (2, "")
    assert "belong to 2 capacity repositories" in err and "files: ^FOLDER/" in err


@pytest.mark.realtool
def test_pre_commit_blocks_a_commit_that_deletes_evidence(tmp_path: Path) -> None:
    """The real hook, from this checkout: `git rm` of a workload is no longer '(no files to check) Skipped'."""
    from test_installed_cli import _hook_repository

    source = _hook_repository(tmp_path)
    rev = git(source, "rev-parse", "HEAD").strip()
    repo = _capacity(tmp_path)
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {source}\n    rev: {rev}\n    hooks:\n      - id: policylint\n", encoding="utf-8"
    )
    _committed(repo)
    git(repo, "rm", "-q", "workloads/example-service.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--color", "never"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "PL110" in done.stdout and "PL020" in done.stdout
    assert "no files to check" not in done.stdout


def test_monorepo_deletion_outside_the_capacity_repository_is_no_change(tmp_path: Path) -> None:
    top = _monorepo(tmp_path)
    git(top, "checkout", "-q", "--", ".")
    git(top, "rm", "-q", "other.yaml")
    code, out, _ = run_cli(["check", "--changed-files", "--format", "json"], cwd=top)
    assert code == 0 and json.loads(out)["findings"] == []
    git(top, "rm", "-q", "capacity/measurements/example-service.csv")
    code, out, _ = run_cli(["check", "--changed-files", "--format", "json"], cwd=top)
    assert code == 1 and json.loads(out)["findings"]


# --- a file kept elsewhere in a monorepo that the capacity folder links to -------------------------


def _linked_monorepo(tmp_path: Path) -> Path:
    """A monorepo whose ``capacity/workloads/example-service.yaml`` links to ``shared/example-service.yaml``.

    Committed clean; then the shared file is edited and staged so that one GPU sustains 4 requests
    instead of 10, and the serving pool's 7 GPUs no longer hold its baseline (PL104).
    """
    top = tmp_path / "mono"
    top.mkdir()
    repo = _capacity(top)
    (top / "shared").mkdir()
    (repo / "workloads" / "example-service.yaml").rename(top / "shared" / "example-service.yaml")
    (repo / "workloads" / "example-service.yaml").symlink_to("../../shared/example-service.yaml")
    (top / "shared" / "notes.yaml").write_text("owner: search-team\n", encoding="utf-8")
    _committed(top)
    assert run_cli(["check"], cwd=repo)[0] == 0
    shared = top / "shared" / "example-service.yaml"
    text = shared.read_text(encoding="utf-8")
    assert text.count("    value: 10 ") == 1
    shared.write_text(text.replace("    value: 10 ", "    value: 4  "), encoding="utf-8")
    git(top, "add", "shared/example-service.yaml")
    return top


@pytest.mark.parametrize(
    ("where", "staged"),
    [
        pytest.param("capacity", ["../shared/example-service.yaml"], id="from-the-capacity-folder"),
        pytest.param(".", ["shared/example-service.yaml"], id="from-the-top-as-pre-commit-passes-it"),
        pytest.param(".", [], id="from-the-top-with-files-limited-to-the-capacity-folder"),
        pytest.param("capacity", ["workloads/example-service.yaml"], id="the-link-itself"),
    ],
)
def test_a_staged_file_the_capacity_folder_links_to_is_its_change(
    tmp_path: Path, where: str, staged: list[str]
) -> None:
    """Red team, 2026-12-06, round 16: the edit passed the hook with "0 documents in 0 files"."""
    top = _linked_monorepo(tmp_path)
    full = run_cli(["check", "--format", "json"], cwd=top / "capacity")
    code, out, err = run_cli(["check", "--changed-files", "--format", "json", *staged], cwd=top / where)
    assert (code, err) == (1, ""), out
    assert ("PL104", "pool example/serving") in _findings(out)
    assert _findings(out) == _findings(full[1])


def test_a_staged_file_outside_that_nothing_links_to_is_still_no_change(tmp_path: Path) -> None:
    top = _linked_monorepo(tmp_path)
    git(top, "reset", "-q")
    (top / "shared" / "notes.yaml").write_text("owner: ranking-team\n", encoding="utf-8")
    git(top, "add", "shared/notes.yaml")
    for where, staged in (("capacity", ["../shared/notes.yaml"]), (".", ["shared/notes.yaml"]), (".", [])):
        code, out, err = run_cli(["check", "--changed-files", *staged], cwd=top / where)
        assert (code, err) == (0, ""), out
        assert out == "All checks passed: 0 documents in 0 files.\n", (where, staged)


def test_a_staged_rule_file_in_a_linked_folder_rejudges_everything(tmp_path: Path) -> None:
    """The capacity folder's rule folder is a link to a folder the monorepo's teams share."""
    from test_precommit import RULE

    top = tmp_path / "mono"
    top.mkdir()
    repo = _capacity(top)
    (top / "shared" / "policy").mkdir(parents=True)
    (top / "shared" / "policy" / "acme.yaml").write_text(RULE, encoding="utf-8")
    (repo / "policy").symlink_to("../shared/policy", target_is_directory=True)
    config = repo / ".policylint.yaml"
    text = config.read_text(encoding="utf-8")
    assert text.count("select: [PL]\n") == 1
    config.write_text(text.replace("select: [PL]\n", "select: [PL, ACME]\n") + "rule-dirs: [policy]\n", encoding="utf-8")
    _committed(top)
    assert run_cli(["check"], cwd=repo)[0] == 0
    rule = top / "shared" / "policy" / "acme.yaml"
    rule.write_text(RULE.replace("default: 4,", "default: 100,"), encoding="utf-8")
    git(top, "add", "shared/policy/acme.yaml")
    full = run_cli(["check", "--format", "json"], cwd=repo)
    assert ("ACME001", "pool example/serving") in _findings(full[1])
    for where, staged in (("capacity", ["../shared/policy/acme.yaml"]), (".", ["shared/policy/acme.yaml"])):
        code, out, err = run_cli(["check", "--changed-files", "--format", "json", *staged], cwd=top / where)
        assert (code, err) == (1, ""), out
        assert _findings(out) == _findings(full[1])


# --- init inside an existing git repository ----------------------------------------------------


def test_init_in_a_monorepo_writes_the_hook_and_editor_settings_at_the_top(tmp_path: Path) -> None:
    top = tmp_path / "mono"
    top.mkdir()
    git(top, "init", "-q")
    code, out, err = run_cli(["init", "capacity"], cwd=top)
    assert (code, err) == (0, "")
    assert not (top / "capacity" / ".pre-commit-config.yaml").exists()
    assert not (top / "capacity" / ".vscode").exists()
    hooks = yaml.safe_load((top / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    (hook,) = hooks["repos"][0]["hooks"]
    assert hook == {"id": "policylint", "files": "^capacity/"}
    settings = json.loads((top / ".vscode" / "settings.json").read_text(encoding="utf-8"))["yaml.schemas"]
    assert settings["./capacity/schemas/workload.schema.json"] == [
        "capacity/workloads/**/*.yaml", "capacity/workloads/**/*.yml",
    ]
    for schema in settings:
        assert (top / schema).is_file()
    assert "wrote .pre-commit-config.yaml" in out and "limited to capacity/" in out
    assert run_cli(["check", "capacity"], cwd=top)[0] == 0


def test_init_in_a_monorepo_never_rewrites_the_top_files(tmp_path: Path) -> None:
    top = tmp_path / "mono"
    top.mkdir()
    git(top, "init", "-q")
    existing = "repos:\n  - repo: local\n    hooks: []\n"
    (top / ".pre-commit-config.yaml").write_text(existing, encoding="utf-8")
    code, out, _ = run_cli(["init", "capacity"], cwd=top)
    assert code == 0
    assert (top / ".pre-commit-config.yaml").read_text(encoding="utf-8") == existing
    assert ".pre-commit-config.yaml exists; add this entry under `repos:`" in out
    assert "        files: ^capacity/\n" in out


def test_a_staged_deletion_named_by_a_hand_written_hook_is_a_deletion(tmp_path: Path) -> None:
    """A hook written as ``policylint check --changed-files $(git diff --cached --name-only)`` names the files a commit
    deletes too (pre-commit names only those that exist). A staged deletion is judged as one, not refused as a path
    that does not exist (sixth red team, 2026-12-07); a path that is neither is still refused."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "rm", "-q", "measurements/traces/chat-assistant.csv")
    code, out, err = run_cli(["check", "--changed-files", "--format", "json", "measurements/traces/chat-assistant.csv"],
                             cwd=repo)
    assert code == 1 and err == "", err
    assert any(f["code"] == "PL022" and "chat-assistant.csv" in f["message"] for f in json.loads(out)["findings"]), out
    code, _, err = run_cli(["check", "--changed-files", "measurements/traces/no-such.csv"], cwd=repo)
    assert code == 2 and "path does not exist" in err
