"""The one way policylint writes a file: atomically, inside the repository, never through a planted link.

Every file policylint writes - ``check --fix``, ``export --update`` and
``--output``, ``baseline``, ``init``, ``report --html``, ``schema --write``,
report files, ``pull`` and the caches - goes through :func:`write_file`::

    write_file(path, data, *, root, explicit=False, links="inside",
               overwrite=True, parents=False, mode=None, what="file") -> Path

How a file is written:

1. The target is examined without following it (``lstat``). A folder, named
   pipe, device or socket is refused; so is a read-only file (no write bit
   for anyone: policylint does not rewrite a file somebody protected, even
   when running as root) and a file with more than one hard link (replacing
   it would silently detach it from its other names; policylint refuses
   rather than breaking the link or writing in place without atomicity).
2. Containment: the folder the file is written into must resolve (all links
   followed) inside ``root``, the repository root. ``explicit=True`` lifts
   this for a path the user named on the command line (``--output``,
   ``--format sarif=FILE``): they chose where it goes. ``root=None`` with
   ``explicit=False`` is a programming error.
3. A symbolic link at the target (``links``):

   * ``"inside"`` (default): written *through* when the link's final target
     exists and lies inside ``root`` - the link is kept and the file it
     points to is replaced. A link that leaves the repository, or dangles,
     is refused, also for explicit paths (a committed link named like an
     output must not send the output elsewhere).
   * ``"refuse"``: any link is refused.
   * ``"replace"``: the link itself is replaced by a regular file; its
     target is never touched (``init --force``).

4. A unique temporary file (``.<name>.<random>.tmp``) is created in the
   target's own folder with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and mode 0600,
   so an existing file or a planted link at that name is never opened. The
   data is written in full and ``fsync``-ed; the temporary file gets the mode
   of the file it replaces (and its owner and group when the process may set
   them), or ``mode`` / ``0666 & ~umask`` for a new file; then ``os.replace``
   swaps it in atomically and the folder is ``fsync``-ed so the rename
   survives a crash.
5. On any error - a full disk included - the temporary file is removed and
   the target is left exactly as it was; the error is a
   :class:`~policylint.errors.PolicylintError` naming the file.

Several files that belong together (``export --output``) are written with a
:class:`~policylint.writer_transaction.WriteTransaction`: each is checked and
staged by the same functions as here (:func:`check_target`, :func:`stage`,
:func:`recheck`), then all are renamed, and on any error none is.

``in_place=True`` is for cache entries alone, whose seal makes a torn file a miss
(:mod:`policylint.cache.store`; never with ``durable``): a target that does not exist
is created in place with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and written there - no
temporary file, no rename, about half the cost of a new entry - and removed again on
any error. A target that exists, or appears meanwhile, takes the temporary file as above.

``overwrite=False`` refuses any existing entry at the target (a file, a link,
even a dangling one). ``if_unchanged=BYTES`` refuses to replace a file whose
content is no longer ``BYTES`` (an edit saved meanwhile is never lost): the
file is compared once more just before the rename. ``parents=True`` creates missing folders, after checking
that they would lie inside ``root`` (or the path is explicit).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from collections.abc import Iterable
from typing import Literal

from policylint.errors import PolicylintError

Links = Literal["inside", "refuse", "replace"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


class WriteRefused(PolicylintError):
    """The target is not something policylint may write: outside the repository, a link, a pipe, read-only."""


class WriteFailed(PolicylintError):
    """Writing failed (disk full, permissions, I/O error); the target is unchanged and nothing is left behind."""


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def _check_regular(info: os.stat_result, shown: str, what: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise WriteRefused(f"{_kind(info.st_mode)}, not a regular file: {what} not written", source=shown)
    if not info.st_mode & _WRITE_BITS:
        raise WriteRefused(f"read-only file (mode {stat.S_IMODE(info.st_mode):04o}): {what} not written; make it writable first", source=shown)
    if info.st_nlink > 1:
        raise WriteRefused(
            f"has {info.st_nlink} hard links: {what} not written (replacing it would detach it from its other names); "
            "copy it to a file of its own first",
            source=shown,
        )


def check_target(path: Path, shown: str, *, real_root: str | None, explicit: bool, links: Links, overwrite: bool, parents: bool, what: str) -> tuple[str, os.stat_result | None]:
    """The path to replace (the link's target when written through) and its current state."""
    absolute = os.path.abspath(path)
    folder, name = os.path.split(absolute)
    if not name or name in (".", ".."):
        raise WriteRefused(f"not a file name: {what} not written", source=shown)
    real_folder = os.path.realpath(folder)
    if not explicit and real_root is not None and not _within(real_folder, real_root):
        raise WriteRefused(f"lies outside the repository root {real_root}: {what} not written", source=shown)
    if not os.path.isdir(real_folder):
        if os.path.lexists(real_folder):
            raise WriteRefused(f"cannot write {what}: {folder} is not a folder", source=shown)
        if not parents:
            raise WriteFailed(f"cannot write {what}: folder {folder} does not exist", source=shown)
        try:
            os.makedirs(real_folder, exist_ok=True)
        except OSError as exc:
            raise WriteFailed(f"cannot create the folder of {what}: {exc.strerror or exc}", source=shown) from None
    target = os.path.join(real_folder, name)
    info = _lstat(target)
    if info is None:
        return target, None
    if not overwrite:
        raise WriteRefused(f"exists: {what} not written", source=shown)
    if stat.S_ISLNK(info.st_mode):
        if links == "replace":
            return target, None  # the link itself is replaced, as a new file
        if links == "refuse":
            raise WriteRefused(f"is a symbolic link: {what} not written (policylint does not follow links here)", source=shown)
        final = os.path.realpath(target)
        if real_root is None or not _within(final, real_root):
            raise WriteRefused(f"is a symbolic link to {final}, outside the repository: {what} not written", source=shown)
        info = _lstat(final)
        if info is None:
            raise WriteRefused(f"is a dangling symbolic link: {what} not written", source=shown)
        target = final
    _check_regular(info, shown, what)
    return target, info


def _write_all(fd: int, data: bytes | Iterable[bytes | memoryview]) -> None:
    for part in (data,) if isinstance(data, bytes) else data:
        view = memoryview(part)
        while view:
            written = os.write(fd, view)
            view = view[written:]


def sync_folder(folder: str) -> None:
    """Flush ``folder``'s entries to disk, so that a rename in it survives a crash."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    except OSError:
        return  # a platform that cannot open folders (Windows) has nothing to sync
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP, errno.EACCES):
            raise
    finally:
        os.close(fd)


def _set_mode(fd: int, path: str, mode: int) -> None:
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:  # Windows: only the read-only bit exists, set by name
        os.chmod(path, mode)


def _current(path: str, size: int) -> bytes | None:
    """Up to ``size + 1`` bytes of the regular file ``path`` (None when it is gone or not a regular file)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC | _BINARY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        remaining = size + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _temporary(folder: str, name: str) -> tuple[int, str]:
    """A new file beside the target, opened for writing; never an existing file nor a link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY
    stem = name[:200]
    for _ in range(100):
        tmp = os.path.join(folder, f".{stem}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", folder)


def write_file(
    path: Path | str,
    data: bytes | str | Iterable[bytes | memoryview],
    *,
    root: Path | str | None,
    explicit: bool = False,
    links: Links = "inside",
    overwrite: bool = True,
    parents: bool = False,
    mode: int | None = None,
    what: str = "file",
    if_unchanged: bytes | None = None,
    durable: bool = True,
    in_place: bool = False,
) -> Path:
    """Write ``data`` to ``path`` atomically and safely; the path actually replaced.

    ``data`` given as text is written as UTF-8 exactly as it is (no newline
    translation, so line endings and a byte-order mark are kept); given as an
    iterable of bytes, its parts are written one after another as it yields them
    (an exception it raises is raised as it is, the target left as it was). ``root`` is
    the repository root the file must resolve into unless ``explicit``; ``what``
    names the file in messages ("the baseline file"). See the module
    docstring for the rules; every refusal or failure is a
    :class:`~policylint.errors.PolicylintError` (:class:`WriteRefused` or
    :class:`WriteFailed`) and leaves the target and its folder as they were.

    ``durable=False`` skips the two ``fsync`` calls, for files whose loss after a crash
    costs nothing but time: cache entries, which carry their own checksum (a torn or
    missing entry is a miss). Everything the user reads or commits is written durably.
    """
    shown = str(path)
    if root is None and not explicit:
        raise ValueError("write_file needs the repository root, or explicit=True")
    payload: bytes | Iterable[bytes | memoryview]
    if isinstance(data, str):
        payload = data.encode("utf-8")
    elif isinstance(data, (bytes, bytearray, memoryview)):
        payload = bytes(data)
    else:
        payload = data  # written part by part as the iterable gives them (a large entry never held whole)
    real_root = os.path.realpath(root) if root is not None else None
    target, info = check_target(
        Path(path), shown, real_root=real_root, explicit=explicit, links=links, overwrite=overwrite, parents=parents, what=what
    )
    folder, _ = os.path.split(target)
    if in_place and info is None and not durable and if_unchanged is None:
        try:
            if _create_in_place(target, payload, mode):
                return Path(target)
        except OSError as exc:
            raise WriteFailed(f"cannot write {what}: {exc.strerror or exc}", source=shown) from None
    tmp: str | None = None
    try:
        tmp = stage(target, info, payload, mode, durable)
        recheck(target, shown, what, overwrite, if_unchanged)
        os.replace(tmp, target)
        tmp = None
        if durable:
            sync_folder(folder)
    except OSError as exc:
        raise WriteFailed(f"cannot write {what}: {exc.strerror or exc}", source=shown) from None
    finally:
        if tmp is not None:
            remove_quietly(tmp)
    return Path(target)


def _create_in_place(target: str, payload: bytes | Iterable[bytes | memoryview], mode: int | None) -> bool:
    """Create ``target`` as a new file holding ``payload``; False (nothing done) when something is there already."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY
    try:
        fd = os.open(target, flags, 0o600)
    except FileExistsError:
        return False
    try:
        _write_all(fd, payload)
        _set_mode(fd, target, (0o666 if mode is None else mode) & ~_umask())
    except BaseException:
        os.close(fd)
        remove_quietly(target)
        raise
    os.close(fd)
    return True


def remove_quietly(path: str) -> None:
    """Delete ``path`` if it can be deleted; a file already gone (or undeletable) is left as it is."""
    try:
        os.unlink(path)
    except OSError:
        pass


def stage(target: str, info: os.stat_result | None, payload: bytes | Iterable[bytes | memoryview], mode: int | None, durable: bool) -> str:
    """A temporary file beside ``target`` holding ``payload``, synced, with the mode (and owner) the
    target has, or ``mode`` for a new file; its path. Removed again if anything fails."""
    folder, name = os.path.split(target)
    fd, tmp = _temporary(folder, name)
    try:
        _write_all(fd, payload)
        _set_mode(fd, tmp, stat.S_IMODE(info.st_mode) if info is not None else (0o666 if mode is None else mode) & ~_umask())
        if info is not None and hasattr(os, "fchown") and (info.st_uid, info.st_gid) != (os.getuid(), os.getgid()):
            try:
                os.fchown(fd, info.st_uid, info.st_gid)
            except OSError:
                pass  # keeping the owner is best effort; the content and mode are what matter
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        remove_quietly(tmp)
        raise
    os.close(fd)
    return tmp


def recheck(target: str, shown: str, what: str, overwrite: bool, if_unchanged: bytes | None) -> None:
    """The last checks before the rename: nothing appeared where nothing may be, nobody edited the file."""
    if not overwrite and os.path.lexists(target):
        raise WriteRefused(f"exists: {what} not written", source=shown)
    if if_unchanged is not None and _current(target, len(if_unchanged)) != if_unchanged:
        raise WriteRefused(f"changed on disk while policylint was editing it: {what} not written", source=shown)
