"""Issue 22 through the CLI: ``--fix`` edits only the value it judged, and no writer leaves the repository.

Each test reproduces one defect of "Writes outside the repository" or "--fix
edits the wrong value" on a copy of an example and asserts where the bytes
went: the exit code, the message, the document and the file a planted link
pointed at.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLES, run_cli

PROD_EAST = "clusters/prod-east.yaml"
RESERVED_123 = "      reservedGpus: 123  # expect: PL101"
BASHRC = "# the user's shell startup file\n"


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES / "bad", tmp_path / "bad")
    return tmp_path / "bad"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the repository that a planted link points at."""
    path = tmp_path / "home" / ".bashrc"
    path.parent.mkdir()
    path.write_text(BASHRC)
    return path


def fix(repo: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(["check", "--fix", "-q", *extra, "."], cwd=repo)


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _after(name: str, monkeypatch: pytest.MonkeyPatch, then: Callable[[], None]) -> None:
    """Run ``then`` right after ``policylint.edit.fixes.<name>`` returns (a change made mid-run)."""
    import policylint.edit.fixes as fixes

    original = getattr(fixes, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        then()
        return result

    monkeypatch.setattr(fixes, name, wrapped)


# -- writes outside the repository ------------------------------------------------------------


def test_a_planted_fix_temporary_link_is_not_followed(bad: Path, victim: Path) -> None:
    """`.<file>.policylint-fix` was a fixed name opened with open(..., "w"): a committed link there won."""
    planted = bad / "clusters" / ".prod-east.yaml.policylint-fix"
    planted.symlink_to(victim)
    code, _, err = fix(bad)
    assert code == 1 and "Traceback" not in err
    assert "PL101 spec/pools/0/reservedGpus 123 -> 57" in err
    assert victim.read_text() == BASHRC
    assert planted.is_symlink() and os.readlink(planted) == str(victim)
    document = bad / PROD_EAST
    assert not document.is_symlink()
    assert "      reservedGpus: 57  # expect: PL101" in document.read_text()
    assert listing(bad / "clusters") == [".prod-east.yaml.policylint-fix", "batch-west.yaml", "prod-east.yaml", "prod-west.yaml"]


def test_a_planted_update_temporary_link_is_not_followed(tmp_path: Path, victim: Path) -> None:
    repo = tmp_path / "kueue"
    shutil.copytree(EXAMPLES / "kueue", repo)
    queues = repo / "kueue" / "cluster-queues.yaml"
    queues.write_text(queues.read_text().replace("nominalQuota: 22", "nominalQuota: 40"))
    planted = repo / "kueue" / ".cluster-queues.yaml.policylint-update"
    planted.symlink_to(victim)
    code, _, err = run_cli(["export", "kueue", str(repo), "--update", str(repo / "kueue")])
    assert code == 0, err
    assert "nominalQuota 40 -> 22" in err
    assert victim.read_text() == BASHRC
    assert not queues.is_symlink() and "nominalQuota: 22" in queues.read_text()


def test_export_update_refuses_a_manifest_linking_out_of_its_folder(tmp_path: Path, victim: Path) -> None:
    repo = tmp_path / "kueue"
    shutil.copytree(EXAMPLES / "kueue", repo)
    queues = repo / "kueue" / "cluster-queues.yaml"
    outside = tmp_path / "home" / "queues.yaml"
    outside.write_text(queues.read_text().replace("nominalQuota: 22", "nominalQuota: 40"))
    queues.unlink()
    queues.symlink_to(outside)
    before = outside.read_bytes()
    code, _, err = run_cli(["export", "kueue", str(repo), "--update", str(repo / "kueue")])
    assert code == 2
    assert "cluster-queues.yaml: is a symbolic link to" in err and "outside the repository: the manifest not written" in err
    assert outside.read_bytes() == before


def test_baseline_does_not_write_through_a_link_leaving_the_repository(tmp_path: Path, victim: Path) -> None:
    repo = tmp_path / "bad"
    shutil.copytree(EXAMPLES / "bad", repo)
    (repo / ".policylint-baseline.json").symlink_to(victim)
    code, _, err = run_cli(["baseline"], cwd=repo)
    assert code == 2
    assert err.startswith("policylint: error: .policylint-baseline.json: is a symbolic link to ")
    assert "outside the repository: the baseline file not written" in err
    assert victim.read_text() == BASHRC
    # a link that stays inside the repository is written through, and stays a link
    (repo / ".policylint-baseline.json").unlink()
    (repo / "baselines").mkdir()
    (repo / "baselines" / "current.json").write_text("{}")
    (repo / ".policylint-baseline.json").symlink_to("baselines/current.json")
    code, _, err = run_cli(["baseline"], cwd=repo)
    assert code == 0, err
    assert (repo / ".policylint-baseline.json").is_symlink()
    assert json.loads((repo / "baselines" / "current.json").read_text())["findings"]


def test_baseline_default_file_stays_inside_the_repository(tmp_path: Path) -> None:
    repo = tmp_path / "bad"
    shutil.copytree(EXAMPLES / "bad", repo)
    code, _, err = run_cli(["baseline", "--root", "bad", "bad"], cwd=tmp_path)
    # the default file is the repository's own, at its root, wherever the command runs from (check reads it
    # there); never in the working folder outside the repository
    assert code == 0, err
    assert (repo / ".policylint-baseline.json").is_file()
    assert not (tmp_path / ".policylint-baseline.json").exists()
    # named with --output, it goes where the user said, even outside the repository
    code, _, err = run_cli(["baseline", "--root", "bad", "bad", "-o", "kept.json"], cwd=tmp_path)
    assert code == 0, err
    assert json.loads((tmp_path / "kept.json").read_text())["findings"]


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["check", "--format", "sarif=out.sarif", "--format", "concise", "."], "the sarif report"),
        (["report", "--html", "out.sarif", "."], "the HTML report"),
    ],
)
def test_report_files_do_not_follow_a_link_out_of_the_repository(bad: Path, victim: Path, args: list[str], what: str) -> None:
    (bad / "out.sarif").symlink_to(victim)
    code, out, err = run_cli(args, cwd=bad)
    assert (code, out) == (2, "")  # nothing half-written to stdout either
    assert f"out.sarif: is a symbolic link to {victim}, outside the repository: {what} not written" in err
    assert victim.read_text() == BASHRC


def test_report_file_named_outside_the_repository_is_written(bad: Path, tmp_path: Path) -> None:
    code, _, err = run_cli(["check", "--format", f"json={tmp_path / 'reports' / 'r.json'}", "."], cwd=bad)
    assert code == 1, err
    assert json.loads((tmp_path / "reports" / "r.json").read_text())["findings"]


def test_schema_write_does_not_follow_a_link_out_of_its_folder(tmp_path: Path, victim: Path) -> None:
    folder = tmp_path / "schemas"
    folder.mkdir()
    (folder / "workload.schema.json").symlink_to(victim)
    code, out, err = run_cli(["schema", "--write", str(folder)])
    assert code == 2
    assert "workload.schema.json: is a symbolic link to" in err
    assert victim.read_text() == BASHRC


def test_export_output_does_not_follow_a_link_out_of_the_repository(tmp_path: Path, victim: Path) -> None:
    repo = tmp_path / "good"
    shutil.copytree(EXAMPLES / "good", repo)
    out = repo / "quotas"
    out.mkdir()
    code, _, err = run_cli(["export", "kueue", str(repo), "--output", str(out)])
    assert code == 0, err
    # the Cohorts' file: without it the model still holds (without a ClusterQueue's file, the Cohort's
    # own quota would be quota no queue can use: PL906, and nothing exported)
    name = "cohorts.yaml"
    assert name in listing(out)
    (out / name).unlink()
    (out / name).symlink_to(victim)
    code, _, err = run_cli(["export", "kueue", str(repo), "--output", str(out)])
    assert code == 2
    assert f"{name}: is a symbolic link to {victim}, outside the repository: the manifest not written" in err
    assert victim.read_text() == BASHRC


# -- export from a model with errors ------------------------------------------------------------


def test_export_from_a_model_with_errors_writes_nothing(bad: Path) -> None:
    code, out, err = run_cli(["export", "kueue", str(bad)])
    assert (code, out) == (1, "")
    assert "PL106" in err and "PL111" in err and "PL121" in err
    assert err.rstrip().splitlines()[-1].startswith("policylint: the measured demand has ")
    assert err.endswith("nothing exported (fix them, `policylint check` shows them)\n")
    code, out, err = run_cli(["export", "volcano", str(bad), "--output", str(bad / "quotas")])
    assert (code, out) == (1, "") and not (bad / "quotas").exists()


# -- --fix edits the wrong value ------------------------------------------------------------------


def test_pools_reordered_between_lint_and_write_are_not_fixed(bad: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fix of pool 0 (123 -> 57) used to land on whichever pool was first by then (8 -> 57)."""
    document = bad / PROD_EAST
    text = document.read_text()
    head, rest = text.split("    - name: shared", 1)
    shared, rest = rest.split("    - name: serving", 1)
    serving, rerank = rest.split("    - name: rerank", 1)
    reordered = head + "    - name: rerank" + rerank.rstrip("\n") + "\n" + "    - name: serving" + serving + "    - name: shared" + shared
    assert sorted(reordered.splitlines()) == sorted(text.splitlines())

    _after("plan", monkeypatch, lambda: document.write_text(reordered))
    code, _, err = fix(bad, "--unsafe-fixes")
    assert code == 1 and "Traceback" not in err
    assert f"{PROD_EAST}: not fixed (the file changed since it was linted; spec/pools/0/reservedGpus" in err
    assert err.startswith("fixed 0 numbers\n")
    assert document.read_text() == reordered  # the rerank pool still reserves 8


def test_a_duplicated_key_is_not_fixed(bad: Path) -> None:
    """'123 -> 57' was reported while the dead first `reservedGpus` was rewritten."""
    document = bad / PROD_EAST
    text = document.read_text().replace(RESERVED_123, "      reservedGpus: 8\n" + RESERVED_123)
    document.write_text(text)
    code, _, err = fix(bad, "--unsafe-fixes")
    assert code == 1 and "Traceback" not in err
    # the duplicated key is an error of the capacity model itself: no fix is planned from it at all
    # (the editor's own refusal, "key 'reservedGpus' is written twice in its mapping", stays behind it)
    assert f"no fix: the capacity model has 1 error ({PROD_EAST}:" in err
    assert "123 -> 57" not in err.split("\n", 1)[0]
    assert not any(line.startswith(f"  {PROD_EAST}: PL101") for line in err.splitlines())
    assert document.read_text() == text  # neither occurrence, nor the elastic limit planned from it, changed


def test_an_edit_saved_during_the_fix_is_not_lost(bad: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    document = bad / PROD_EAST
    saved = document.read_text().replace("  region: us-east\n", "  region: us-east  # saved by the user meanwhile\n")

    _after("apply_edits", monkeypatch, lambda: document.write_text(saved))
    code, _, err = fix(bad)
    assert "Traceback" not in err
    assert f"{PROD_EAST}: not fixed (changed on disk while policylint was editing it" in err
    assert document.read_text() == saved
    assert listing(bad / "clusters") == ["batch-west.yaml", "prod-east.yaml", "prod-west.yaml"]


def test_the_span_must_still_hold_the_old_value(bad: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fix whose number moved, even in a file read back identical, is refused by the editor."""
    import policylint.edit.fixes as fixes
    from policylint.edit.fix import Fix

    original = fixes.plan

    def shifted(*args: Any, **kwargs: Any) -> Any:
        planned, notes = original(*args, **kwargs)
        return [f if f.at is None else Fix(**{**f.__dict__, "at": (f.at[0] + 1, f.at[1] + 1)}) for f in planned], notes

    monkeypatch.setattr(fixes, "plan", shifted)
    before = (bad / PROD_EAST).read_bytes()
    code, _, err = fix(bad)
    assert "spec/pools/0/reservedGpus no longer holds the value the fix was computed from" in err
    assert (bad / PROD_EAST).read_bytes() == before


def test_the_mode_of_a_fixed_file_is_kept(bad: Path) -> None:
    document = bad / PROD_EAST
    document.chmod(0o600)
    code, _, err = fix(bad)
    assert "PL101 spec/pools/0/reservedGpus 123 -> 57" in err
    assert stat.S_IMODE(document.stat().st_mode) == 0o600
    assert "reservedGpus: 57" in document.read_text()


def test_a_read_only_file_is_not_rewritten(bad: Path) -> None:
    document = bad / PROD_EAST
    before = document.read_bytes()
    document.chmod(0o444)
    code, _, err = fix(bad)
    assert code == 1
    assert f"{PROD_EAST}: not fixed (read-only file (mode 0444): the fixed document not written" in err
    assert err.startswith("fixed 0 numbers")
    assert document.read_bytes() == before
    assert stat.S_IMODE(document.stat().st_mode) == 0o444


def test_a_hard_linked_file_is_not_broken(bad: Path, tmp_path: Path) -> None:
    document = bad / PROD_EAST
    other = tmp_path / "prod-east-copy.yaml"
    os.link(document, other)
    before = document.read_bytes()
    code, _, err = fix(bad)
    assert f"{PROD_EAST}: not fixed (has 2 hard links: the fixed document not written" in err
    assert os.path.samefile(document, other)
    assert document.read_bytes() == before


def test_a_symlinked_document_is_fixed_through_the_link(bad: Path) -> None:
    document = bad / PROD_EAST
    real = bad / ".real" / "prod-east.yaml"
    real.parent.mkdir()
    shutil.move(document, real)
    document.symlink_to(Path("..") / ".real" / "prod-east.yaml")
    code, _, err = fix(bad)
    assert "PL101 spec/pools/0/reservedGpus 123 -> 57" in err
    assert document.is_symlink()
    assert "      reservedGpus: 57  # expect: PL101" in real.read_text()
    # converged: the rule it fixed is quiet now
    code, out, _ = run_cli(["check", "--format", "json", "--select", "PL101", "."], cwd=bad)
    assert [f for f in json.loads(out)["findings"] if f["file"] == PROD_EAST] == []


def test_a_document_linking_out_of_the_repository_is_not_fixed(bad: Path, tmp_path: Path) -> None:
    document = bad / PROD_EAST
    outside = tmp_path / "elsewhere.yaml"
    shutil.move(document, outside)
    document.symlink_to(outside)
    before = outside.read_bytes()
    code, _, err = fix(bad)
    assert code == 1
    assert f"{PROD_EAST}: not fixed (is a symbolic link to {outside}, outside the repository" in err
    assert outside.read_bytes() == before and document.is_symlink()


def test_fix_converges(bad: Path) -> None:
    code, _, err = fix(bad, "--unsafe-fixes")
    assert err.startswith("fixed 4 numbers in 1 file\n")
    code, out, err = run_cli(["check", "--fix-dry-run", "--unsafe-fixes", "."], cwd=bad)
    assert (code, out) == (0, "")
    assert err.startswith("would fix 0 numbers")
