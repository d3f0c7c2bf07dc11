"""``policylint init`` never follows a link below DIR, never overwrites without ``--force``, never hangs (issue 22)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli

SECRET = "user data\n"


def init(folder: Path, *args: str) -> tuple[int, str, str]:
    return run_cli(["init", str(folder), *args])


def init_bounded(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """init in a child process with a deadline: a pipe that blocks it fails the test instead of hanging it."""
    return subprocess.run(
        [sys.executable, "-m", "policylint", "init", str(folder), *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def test_a_dangling_link_is_kept_not_followed(tmp_path: Path, outside: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".policylint.yaml").symlink_to(outside / "created-by-init")
    code, out, err = init(repo)
    assert code == 0, err
    assert f"kept {repo.as_posix()}/.policylint.yaml (exists; --force overwrites it) (a symbolic link;" in out
    assert os.listdir(outside) == []
    assert (repo / ".policylint.yaml").is_symlink()


def test_force_replaces_the_link_itself_never_its_target(tmp_path: Path, outside: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    target = outside / "config"
    target.write_text(SECRET)
    (repo / ".policylint.yaml").symlink_to(target)
    code, out, err = init(repo, "--force")
    assert code == 0, err
    assert f"wrote {repo.as_posix()}/.policylint.yaml\n" in out
    assert target.read_text() == SECRET
    assert not (repo / ".policylint.yaml").is_symlink()
    assert (repo / ".policylint.yaml").read_text().startswith("# policylint configuration.")


@pytest.mark.parametrize("force", [False, True])
def test_a_symlinked_folder_stops_init_before_anything_is_written(tmp_path: Path, outside: Path, force: bool) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "schemas").symlink_to(outside)
    code, out, err = init(repo, *(["--force"] if force else []))
    assert (code, out) == (2, "")
    assert err == (
        f"policylint: error: {repo.as_posix()}/schemas: a symbolic link where init writes a folder; "
        "init never follows links (remove it, or init another folder)\n"
    )
    assert os.listdir(outside) == []
    assert sorted(os.listdir(repo)) == ["schemas"]


def test_a_link_inside_the_folder_is_not_followed_either(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "real").mkdir(parents=True)
    (repo / "workloads").symlink_to("real")
    code, _, err = init(repo)
    assert code == 2 and "workloads: a symbolic link where init writes a folder" in err
    assert os.listdir(repo / "real") == []


@pytest.mark.parametrize("name", [".pre-commit-config.yaml", ".vscode/settings.json", "clusters/example.yaml"])
@pytest.mark.parametrize("force", [False, True])
def test_a_named_pipe_is_refused_without_hanging(tmp_path: Path, name: str, force: bool) -> None:
    repo = tmp_path / "repo"
    (repo / name).parent.mkdir(parents=True)
    os.mkfifo(repo / name)
    done = init_bounded(repo, *(["--force"] if force else []))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"policylint: error: {repo.as_posix()}/{name}: a named pipe, device or socket where init writes a file; "
        "refused (remove it, or init another folder)\n"
    )
    assert not (repo / ".policylint.yaml").exists()  # nothing written


def test_a_device_behind_a_link_is_never_read(tmp_path: Path) -> None:
    """A link to /dev/zero as .pre-commit-config.yaml would be read forever: a link is not opened."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".pre-commit-config.yaml").symlink_to("/dev/zero")
    done = init_bounded(repo)
    assert done.returncode == 0, done.stderr
    assert ".pre-commit-config.yaml exists; add this entry under `repos:`:" in done.stdout
    assert (repo / ".pre-commit-config.yaml").is_symlink()


def test_a_folder_where_a_file_goes_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".policylint.yaml").mkdir(parents=True)
    code, out, err = init(repo, "--force")
    assert (code, out) == (2, "")
    assert err.endswith(".policylint.yaml: a folder where init writes a file; refused (remove it, or init another folder)\n")


def test_a_read_only_file_is_not_forced(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".policylint.yaml").write_text(SECRET)
    (repo / ".policylint.yaml").chmod(0o444)
    code, _, err = init(repo, "--force")
    assert code == 2
    assert ".policylint.yaml: read-only file (mode 0444): .policylint.yaml not written" in err
    assert (repo / ".policylint.yaml").read_text() == SECRET


def test_existing_files_are_kept_without_force(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".policylint.yaml").write_text(SECRET)
    code, out, _ = init(repo)
    assert code == 0
    assert f"kept {repo.as_posix()}/.policylint.yaml (exists; --force overwrites it)\n" in out
    assert (repo / ".policylint.yaml").read_text() == SECRET


def test_a_dangling_link_as_the_folder_is_an_error(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "repo").symlink_to(outside / "missing")
    code, out, err = init(tmp_path / "repo")
    assert (code, out) == (2, "")
    assert "a dangling symbolic link, not a folder" in err
    assert not (outside / "missing").exists()


def test_a_linked_folder_named_by_the_user_is_followed(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "repo").symlink_to(outside)
    code, _, err = init(tmp_path / "repo")
    assert code == 0, err
    assert (outside / ".policylint.yaml").is_file() and (outside / "schemas").is_dir()


def test_a_refused_force_changes_nothing(tmp_path: Path) -> None:
    """The read-only file is found before the writable one next to it is replaced."""
    repo = tmp_path / "repo"
    (repo / "clusters").mkdir(parents=True)
    (repo / ".policylint.yaml").write_text(SECRET)
    (repo / "clusters" / "example.yaml").write_text(SECRET)
    (repo / "clusters" / "example.yaml").chmod(0o444)
    code, out, err = init(repo, "--force")
    assert (code, out) == (2, "")
    assert "clusters/example.yaml: read-only file (mode 0444)" in err
    assert (repo / ".policylint.yaml").read_text() == SECRET
    assert sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*")) == [".policylint.yaml", "clusters", "clusters/example.yaml"]
