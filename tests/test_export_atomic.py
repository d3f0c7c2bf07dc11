"""``export --output`` writes its files all or none (policylint.writer_transaction.WriteTransaction).

Every manifest is staged as a temporary file beside its target first; only when
all are staged are they renamed. A file that cannot be written - its target a
folder, a read-only file, a rename that fails half-way - leaves every existing
file as it was and no temporary file behind.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import EXAMPLES, run_cli

from policylint import writer_transaction
from policylint.errors import PolicylintError
from policylint.writer import WriteFailed, WriteRefused
from policylint.writer_transaction import WriteTransaction

NOW = ["--now", "2026-12-01"]
NAMES = ["batch.yaml", "cohorts.yaml", "resource-flavors.yaml", "serving.yaml", "training.yaml"]


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _export(out: Path) -> tuple[int, str, str]:
    return run_cli(["export", "kueue", str(EXAMPLES / "good"), "--output", str(out), *NOW])


def test_export_writes_every_file(tmp_path: Path) -> None:
    code, _, err = _export(tmp_path / "out")
    assert code == 0, err
    assert _listing(tmp_path / "out") == NAMES
    assert err.endswith(f"wrote 5 files to {tmp_path / 'out'}\n")


@pytest.mark.parametrize(("blocked", "kind"), [("cohorts.yaml", "folder"), ("training.yaml", "read-only")])
def test_one_file_that_cannot_be_written_leaves_every_file_as_it_was(tmp_path: Path, blocked: str, kind: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for name in NAMES:
        if name != blocked:
            (out / name).write_text(f"old {name}\n")
    if kind == "folder":
        (out / blocked).mkdir()
        why = "a folder, not a regular file: the manifest not written"
    else:
        (out / blocked).write_text("frozen\n")
        (out / blocked).chmod(0o444)
        why = "read-only file (mode 0444): the manifest not written; make it writable first"
    code, stdout, err = _export(out)
    assert (code, stdout) == (2, "")
    assert err == f"policylint: error: {out / blocked}: {why}\n"
    assert _listing(out) == NAMES  # no temporary file left
    for name in NAMES:
        if name != blocked:
            assert (out / name).read_text() == f"old {name}\n"
    if kind == "read-only":
        assert (out / blocked).read_text() == "frozen\n"


def test_a_link_leaving_the_repository_at_one_name_writes_none_of_the_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    blocker = tmp_path / "elsewhere"
    blocker.mkdir()
    out.mkdir()
    # refused also for an explicit --output: a committed link named like an output must not redirect it
    os.symlink(blocker / "x.yaml", out / "serving.yaml")
    code, _, err = _export(out)
    assert code == 2
    assert "serving.yaml: is a symbolic link to" in err
    assert _listing(out) == ["serving.yaml"]
    assert _listing(blocker) == []


# -- the transaction itself ---------------------------------------------------------------------------


def test_nothing_is_visible_before_the_commit(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("old a")
    batch = WriteTransaction()
    batch.add(tmp_path / "a", "new a", root=tmp_path)
    batch.add(tmp_path / "b", "new b", root=tmp_path)
    assert (tmp_path / "a").read_text() == "old a"
    assert not (tmp_path / "b").exists()
    assert len(_listing(tmp_path)) == 3  # a and two temporary files
    assert batch.commit() == [Path(os.path.realpath(tmp_path / "a")), Path(os.path.realpath(tmp_path / "b"))]
    assert ((tmp_path / "a").read_text(), (tmp_path / "b").read_text()) == ("new a", "new b")
    assert _listing(tmp_path) == ["a", "b"]


def test_a_rename_failing_half_way_puts_the_replaced_files_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in "abc":
        (tmp_path / name).write_text(f"old {name}")
    (tmp_path / "a").chmod(0o640)
    real = os.replace
    calls: list[str] = []

    def replace(src: str, dst: str) -> None:
        calls.append(os.path.basename(dst))
        if os.path.basename(dst) == "c" and src.endswith(".tmp"):
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(writer_transaction.os, "replace", replace)
    batch = WriteTransaction()
    for name in "abcd":
        batch.add(tmp_path / name, f"new {name}", root=tmp_path)
    with pytest.raises(WriteFailed) as caught:
        batch.commit()
    assert str(caught.value) == f"{tmp_path / 'c'}: cannot write file: No space left on device; nothing was written"
    assert calls[:3] == ["a", "b", "c"]  # a and b were replaced, then put back
    for name in "abc":
        assert (tmp_path / name).read_text() == f"old {name}"
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o640
    assert (tmp_path / "a").stat().st_nlink == 1
    assert _listing(tmp_path) == ["a", "b", "c"]  # d never appeared, no temporary or backup left


def test_a_refused_second_file_removes_the_first_files_temporary(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("old")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    batch = WriteTransaction()
    batch.add(tmp_path / "a", "new", root=tmp_path)
    with pytest.raises(WriteRefused, match="lies outside the repository root"):
        batch.add(outside / "b", "new", root=tmp_path)
    assert _listing(tmp_path) == ["a"]
    assert (tmp_path / "a").read_text() == "old"
    assert _listing(outside) == []
    with pytest.raises(ValueError, match="already committed or aborted"):
        batch.add(tmp_path / "c", "x", root=tmp_path)


def test_an_edit_saved_before_the_commit_stops_every_file(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("a as read")
    (tmp_path / "b").write_text("b as read")
    batch = WriteTransaction()
    batch.add(tmp_path / "a", "new a", root=tmp_path, if_unchanged=b"a as read")
    batch.add(tmp_path / "b", "new b", root=tmp_path, if_unchanged=b"b as read")
    (tmp_path / "b").write_text("b edited meanwhile")
    with pytest.raises(WriteRefused, match="changed on disk while policylint was editing it"):
        batch.commit()
    assert (tmp_path / "a").read_text() == "a as read"
    assert (tmp_path / "b").read_text() == "b edited meanwhile"
    assert _listing(tmp_path) == ["a", "b"]


def test_folders_made_for_the_files_go_when_the_write_fails(tmp_path: Path) -> None:
    (tmp_path / "blocked").mkdir()
    with pytest.raises(PolicylintError, match="a folder, not a regular file"), WriteTransaction() as batch:
        batch.add(tmp_path / "x" / "y" / "a", "new", root=tmp_path, parents=True)
        batch.add(tmp_path / "blocked", "new", root=tmp_path)
    assert _listing(tmp_path) == ["blocked"]


def test_leaving_the_block_through_an_exception_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), WriteTransaction() as batch:
        batch.add(tmp_path / "a", "new", root=tmp_path)
        raise RuntimeError("stop")
    assert _listing(tmp_path) == []


def test_the_same_file_named_twice_is_refused(tmp_path: Path) -> None:
    batch = WriteTransaction()
    batch.add(tmp_path / "a", "one", root=tmp_path)
    with pytest.raises(WriteRefused, match="named twice in one write"):
        batch.add(tmp_path / "." / "a", "two", root=tmp_path)
    assert _listing(tmp_path) == []


def test_an_update_whose_new_file_cannot_be_written_leaves_the_manifests_as_they_were(tmp_path: Path) -> None:
    import shutil

    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "kueue", repo)
    shutil.copy(Path(__file__).parent / "data" / "kueue-hami" / "cluster-queues.yaml", repo / "kueue" / "cluster-queues.yaml")
    path = repo / "kueue" / "cluster-queues.yaml"
    text = path.read_text(encoding="utf-8")
    cut = text.index("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: batch")
    (repo / "elsewhere.yaml").write_text(text[cut:], encoding="utf-8")  # batch's queue: not among the manifests updated
    path.write_text(text[:cut].rstrip().removesuffix("---").rstrip() + "\n", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in (repo / "kueue").iterdir()}
    update = ["export", "kueue", str(repo), "--update", str(repo / "kueue"), *NOW]
    # where the new objects would go, learnt from a copy of the repository
    trial = Path(shutil.copytree(repo, tmp_path / "trial"))
    code, _, err = run_cli(["export", "kueue", str(trial), "--update", str(trial / "kueue"), *NOW, "--output", str(tmp_path / "seen")])
    assert code == 0, err
    (name,) = _listing(tmp_path / "seen")
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)  # the new file's name is taken by a folder
    code, stdout, err = run_cli([*update, "--output", str(out)])
    assert (code, stdout) == (2, "")
    assert err.endswith(f"policylint: error: {out / name}: a folder, not a regular file: the manifest not written\n")
    assert {p.name: p.read_bytes() for p in (repo / "kueue").iterdir()} == before  # the quotas were not edited either
    assert _listing(out) == [name]
