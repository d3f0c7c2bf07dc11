"""policylint.writer.write_file: the one safe writer (issue 22, "One safe writer")."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from policylint.errors import PolicylintError
from policylint import writer as writer_module
from policylint.writer import WriteFailed, WriteRefused, write_file


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_writes_a_new_file_with_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        written = write_file(tmp_path / "a.yaml", "x: 1\r\n\ufeff", root=tmp_path)
    finally:
        os.umask(old)
    assert written == Path(os.path.realpath(tmp_path / "a.yaml"))
    assert (tmp_path / "a.yaml").read_bytes() == "x: 1\r\n\ufeff".encode()
    assert stat.S_IMODE((tmp_path / "a.yaml").stat().st_mode) == 0o640
    assert _listing(tmp_path) == ["a.yaml"]


def test_replacing_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "secret.yaml"
    target.write_text("old")
    target.chmod(0o600)
    write_file(target, b"new", root=tmp_path)
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_replacing_keeps_the_owner_and_group_when_possible(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("old")
    if os.geteuid() == 0:
        owner = (1, 1)  # root may give the file to anyone
    else:
        groups = [g for g in os.getgroups() if g != target.stat().st_gid]
        if not groups:
            pytest.skip("no second group to give the file")
        owner = (os.getuid(), groups[0])
    os.chown(target, *owner)
    write_file(target, "new", root=tmp_path)
    assert (target.stat().st_uid, target.stat().st_gid) == owner
    assert target.read_text() == "new"


def test_a_read_only_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "frozen.yaml"
    target.write_text("old")
    target.chmod(0o444)
    with pytest.raises(WriteRefused, match=r"read-only file \(mode 0444\)"):
        write_file(target, "new", root=tmp_path)
    assert target.read_text() == "old"
    assert _listing(tmp_path) == ["frozen.yaml"]


def test_a_hard_linked_file_is_refused_and_stays_linked(tmp_path: Path) -> None:
    target = tmp_path / "a.yaml"
    target.write_text("old")
    os.link(target, tmp_path / "b.yaml")
    with pytest.raises(WriteRefused, match="has 2 hard links"):
        write_file(target, "new", root=tmp_path)
    assert (tmp_path / "b.yaml").read_text() == "old"
    assert os.path.samefile(target, tmp_path / "b.yaml")


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_pipes_and_folders_are_refused(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "out"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    with pytest.raises(WriteRefused, match="named pipe" if kind == "fifo" else "a folder"):
        write_file(target, "x", root=tmp_path)
    assert _listing(tmp_path) == ["out"]


def test_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WriteRefused, match="a device"):
        write_file("/dev/null", "x", root=tmp_path, explicit=True)


def test_outside_the_root_is_refused_unless_explicit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    with pytest.raises(WriteRefused, match="outside the repository root"):
        write_file(repo / ".." / "escaped", "x", root=repo)
    assert not (tmp_path / "escaped").exists()
    write_file(tmp_path / "named", "x", root=repo, explicit=True)
    assert (tmp_path / "named").read_text() == "x"


def test_a_symlinked_folder_leaving_the_root_is_refused(tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (repo / "reports").symlink_to(outside)
    with pytest.raises(WriteRefused, match="outside the repository root"):
        write_file(repo / "reports" / "r.json", "x", root=repo)
    assert _listing(outside) == []


def test_a_link_inside_the_root_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "real.yaml").write_text("old")
    (tmp_path / "link.yaml").symlink_to("real.yaml")
    written = write_file(tmp_path / "link.yaml", "new", root=tmp_path)
    assert written == Path(os.path.realpath(tmp_path / "real.yaml"))
    assert (tmp_path / "link.yaml").is_symlink()
    assert (tmp_path / "real.yaml").read_text() == "new"


@pytest.mark.parametrize("explicit", [False, True])
def test_a_link_leaving_the_root_is_refused_even_when_explicit(tmp_path: Path, explicit: bool) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    victim = tmp_path / "bashrc"
    victim.write_text("safe\n")
    (repo / "out.sarif").symlink_to(victim)
    with pytest.raises(WriteRefused, match="symbolic link to .*outside the repository"):
        write_file(repo / "out.sarif", "evil", root=repo, explicit=explicit)
    assert victim.read_text() == "safe\n"
    assert (repo / "out.sarif").is_symlink()


def test_a_dangling_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").symlink_to(tmp_path / "missing")
    with pytest.raises(WriteRefused, match="dangling"):
        write_file(tmp_path / "out", "x", root=tmp_path)
    assert not (tmp_path / "missing").exists()


def test_links_refuse_and_replace(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("old")
    (tmp_path / "link").symlink_to("real")
    with pytest.raises(WriteRefused, match="is a symbolic link"):
        write_file(tmp_path / "link", "x", root=tmp_path, links="refuse")
    write_file(tmp_path / "link", "new", root=tmp_path, links="replace")
    assert not (tmp_path / "link").is_symlink()
    assert (tmp_path / "link").read_text() == "new"
    assert (tmp_path / "real").read_text() == "old"


def test_overwrite_false_refuses_anything_there(tmp_path: Path) -> None:
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(WriteRefused, match="exists"):
        write_file(tmp_path / "dangling", "x", root=tmp_path, overwrite=False)
    assert not (tmp_path / "nowhere").exists()


def test_parents_are_created_only_when_asked(tmp_path: Path) -> None:
    with pytest.raises(WriteFailed, match="does not exist"):
        write_file(tmp_path / "a" / "b" / "c.json", "x", root=tmp_path)
    write_file(tmp_path / "a" / "b" / "c.json", "x", root=tmp_path, parents=True)
    assert (tmp_path / "a" / "b" / "c.json").read_text() == "x"


def test_a_planted_temporary_link_is_never_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even when the random name is guessed, O_EXCL|O_NOFOLLOW refuses the planted link and another name is drawn."""
    import policylint.writer as writer

    victim = tmp_path / "victim"
    victim.write_text("safe")
    names = iter(["guessed", "guessed", "fresh"])
    monkeypatch.setattr(writer.secrets, "token_hex", lambda n: next(names))
    (tmp_path / ".doc.yaml.guessed.tmp").symlink_to(victim)
    write_file(tmp_path / "doc.yaml", "new", root=tmp_path)
    assert victim.read_text() == "safe"
    assert (tmp_path / "doc.yaml").read_text() == "new"
    assert _listing(tmp_path) == [".doc.yaml.guessed.tmp", "doc.yaml", "victim"]


@pytest.mark.parametrize("call", ["write", "fsync"])
def test_a_full_disk_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str) -> None:
    target = tmp_path / "doc.yaml"
    target.write_text("old")

    def full(*args: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, call, full)
    with pytest.raises(WriteFailed, match="No space left on device") as caught:
        write_file(target, "new" * 1000, root=tmp_path)
    monkeypatch.undo()
    assert isinstance(caught.value, PolicylintError)
    assert str(caught.value).startswith(f"{target}: cannot write file")
    assert target.read_text() == "old"
    assert _listing(tmp_path) == ["doc.yaml"]


def test_a_failed_rename_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(WriteFailed, match="I/O error"):
        write_file(tmp_path / "new.yaml", "x", root=tmp_path)
    monkeypatch.undo()
    assert _listing(tmp_path) == []


def test_short_writes_are_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:3])))
    write_file(tmp_path / "f", "0123456789", root=tmp_path)
    monkeypatch.undo()
    assert (tmp_path / "f").read_text() == "0123456789"


def test_the_file_and_its_folder_are_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_file(tmp_path / "f", "x", root=tmp_path)
    assert synced == ["file", "folder"]


def test_a_root_is_required_unless_explicit(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_file(tmp_path / "f", "x", root=None)


# --- cache entries created in place -------------------------------------------------------------------


def _replaces(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = os.replace

    def spy(a: str, b: str) -> None:
        calls.append(str(b))
        real(a, b)

    monkeypatch.setattr(writer_module.os, "replace", spy)
    return calls


def test_a_new_cache_entry_is_written_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replaced = _replaces(monkeypatch)
    target = tmp_path / "ab" / "entry.json"
    writer_module.write_file(target, b"sealed", root=tmp_path, parents=True, mode=0o600, durable=False, in_place=True)
    assert target.read_bytes() == b"sealed" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert replaced == [] and os.listdir(target.parent) == ["entry.json"]
    # an entry that exists is replaced atomically, through a temporary file, as every other file
    writer_module.write_file(target, b"again", root=tmp_path, mode=0o600, durable=False, in_place=True)
    assert target.read_bytes() == b"again" and replaced == [str(target)]
    # durable files never take the shortcut
    other = tmp_path / "ab" / "durable.json"
    writer_module.write_file(other, b"x", root=tmp_path, durable=True, in_place=True)
    assert replaced == [str(target), str(other)]


def test_an_entry_that_fails_in_place_leaves_nothing(tmp_path: Path) -> None:
    def parts() -> Iterator[bytes]:
        yield b"half"
        raise ValueError("a part that cannot be encoded")

    target = tmp_path / "entry.json"
    with pytest.raises(ValueError):
        writer_module.write_file(target, parts(), root=tmp_path, durable=False, in_place=True)
    assert os.listdir(tmp_path) == []


def test_an_entry_that_appears_meanwhile_is_replaced_not_appended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another run wrote the entry between the check and the creation: the temporary file takes over."""
    target = tmp_path / "entry.json"
    target.write_bytes(b"the other run's entry, longer than ours")
    replaced = _replaces(monkeypatch)
    monkeypatch.setattr(writer_module, "_lstat", lambda path: None)  # the check saw nothing there
    writer_module.write_file(target, b"ours", root=tmp_path, durable=False, in_place=True)
    assert target.read_bytes() == b"ours" and replaced == [str(target)]
    assert os.listdir(tmp_path) == ["entry.json"]


@pytest.mark.parametrize("outside_exists", [False, True])
def test_a_link_planted_at_a_new_entry_name_is_never_written_through(tmp_path: Path, outside_exists: bool) -> None:
    """A link planted where a new cache entry will go, to a file elsewhere (existing or not yet): the
    in-place creation (O_EXCL | O_NOFOLLOW) never opens it, and whatever the writer then does, the
    file the link names is neither created nor changed."""
    cache = tmp_path / "cache"
    cache.mkdir()
    outside = tmp_path / "victim"
    if outside_exists:
        outside.write_bytes(b"the user's file")
    target = cache / "entry.json"
    target.symlink_to(outside)
    try:
        writer_module.write_file(target, b"sealed entry", root=cache, mode=0o600, durable=False, in_place=True)
    except PolicylintError:
        pass  # refused: equally safe
    if outside_exists:
        assert outside.read_bytes() == b"the user's file"
    else:
        assert not outside.exists()
    if not target.is_symlink():
        assert target.read_bytes() == b"sealed entry"
