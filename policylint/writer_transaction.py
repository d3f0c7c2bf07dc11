"""Several files written all or nothing: :class:`WriteTransaction` (``export --output``, ``export --update``).

Each file is checked and staged exactly as :func:`policylint.writer.write_file`
checks and stages one (the same functions do it), so every rule of that module
holds for each file; what this module adds is the renaming of them all together
and putting back what a failed rename already replaced.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from policylint.writer import (
    Links,
    WriteFailed,
    WriteRefused,
    check_target,
    recheck,
    remove_quietly,
    stage,
    sync_folder,
)


class _Staged:
    __slots__ = ("backup", "if_unchanged", "info", "overwrite", "shown", "target", "tmp", "what")

    def __init__(self, target: str, info: os.stat_result | None, tmp: str, shown: str, what: str,
                 overwrite: bool, if_unchanged: bytes | None) -> None:
        self.target, self.info, self.tmp, self.shown, self.what = target, info, tmp, shown, what
        self.overwrite, self.if_unchanged = overwrite, if_unchanged
        self.backup: str | None = None


class WriteTransaction:
    """Several files written all or nothing, each under :func:`write_file`'s rules.

    ::

        with WriteTransaction() as batch:
            batch.add(out / "a.yaml", text_a, root=root, explicit=True, parents=True)
            batch.add(out / "b.yaml", text_b, root=root, explicit=True, parents=True)
        # both are written when the block ends without an error; neither otherwise

    :meth:`add` checks the target exactly as :func:`write_file` does and writes
    the data to a temporary file beside it (``O_CREAT | O_EXCL | O_NOFOLLOW``,
    synced, with the mode of the file it will replace); nothing visible changes.
    :meth:`commit` checks every target once more (nothing appeared, nobody edited
    it), then renames the temporary files over their targets. Before the first
    rename each file to be replaced gets a hard link under a temporary name, so
    that a rename failing half-way puts the files already replaced back as they
    were. On any error - while staging or renaming - every temporary file is
    removed, the targets are left exactly as they were, folders created for the
    files are removed again when empty, and the error names the file it is
    about. Leaving the ``with`` block through an exception aborts.
    """

    def __init__(self, *, durable: bool = True) -> None:
        self.durable = durable
        self._staged: list[_Staged] = []
        self._folders: list[str] = []  # created for the files, deepest last
        self._done = False
        self._committed = False

    def __enter__(self) -> WriteTransaction:
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if self._done:
            return
        if exc is None:
            self.commit()
        else:
            self.abort()

    def add(
        self,
        path: Path | str,
        data: bytes | str,
        *,
        root: Path | str | None,
        explicit: bool = False,
        links: Links = "inside",
        overwrite: bool = True,
        parents: bool = False,
        mode: int | None = None,
        what: str = "file",
        if_unchanged: bytes | None = None,
    ) -> Path:
        """Stage ``data`` for ``path`` (see :func:`write_file` for the options); the path that will be replaced.

        A refusal or failure aborts the whole transaction before it is raised.
        """
        if self._done:
            raise ValueError("the transaction is already committed or aborted")
        shown = str(path)
        try:
            if root is None and not explicit:
                raise ValueError("WriteTransaction.add needs the repository root, or explicit=True")
            payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
            real_root = os.path.realpath(root) if root is not None else None
            if parents:
                self._note_missing(os.path.dirname(os.path.abspath(path)))
            target, info = check_target(
                Path(path), shown, real_root=real_root, explicit=explicit, links=links, overwrite=overwrite,
                parents=parents, what=what,
            )
            if any(s.target == target for s in self._staged):
                raise WriteRefused(f"named twice in one write: {what} not written", source=shown)
            try:
                tmp = stage(target, info, payload, mode, self.durable)
            except OSError as exc:
                raise WriteFailed(f"cannot write {what}: {exc.strerror or exc}", source=shown) from None
        except BaseException:
            self.abort()
            raise
        self._staged.append(_Staged(target, info, tmp, shown, what, overwrite, if_unchanged))
        return Path(target)

    def _note_missing(self, folder: str) -> None:
        missing = []
        at = os.path.realpath(folder)
        while not os.path.lexists(at):
            missing.append(at)
            parent = os.path.dirname(at)
            if parent == at:
                break
            at = parent
        self._folders += [f for f in reversed(missing) if f not in self._folders]

    def commit(self) -> list[Path]:
        """Rename every staged file over its target; the paths replaced, in the order added."""
        if self._done:
            raise ValueError("the transaction is already committed or aborted")
        current: _Staged | None = None
        replaced: list[_Staged] = []
        try:
            for current in self._staged:
                recheck(current.target, current.shown, current.what, current.overwrite, current.if_unchanged)
                if current.info is not None:
                    current.backup = _backup(current.target)
            for current in self._staged:
                os.replace(current.tmp, current.target)
                replaced.append(current)
        except BaseException as exc:
            self._roll_back(replaced)
            self.abort()
            if isinstance(exc, OSError) and current is not None:
                raise WriteFailed(f"cannot write {current.what}: {exc.strerror or exc}; nothing was written",
                                  source=current.shown) from None
            raise
        self._done = self._committed = True
        for staged in self._staged:
            if staged.backup is not None:
                remove_quietly(staged.backup)
        if self.durable:
            for folder in dict.fromkeys(os.path.dirname(s.target) for s in self._staged):
                try:
                    sync_folder(folder)
                except OSError:
                    pass  # the files are in place; only their durability across a crash is in doubt
        return [Path(s.target) for s in self._staged]

    def _roll_back(self, replaced: list[_Staged]) -> None:
        for staged in reversed(replaced):
            try:
                if staged.backup is not None:
                    os.replace(staged.backup, staged.target)
                    staged.backup = None
                else:
                    os.unlink(staged.target)  # it did not exist before
            except OSError:
                pass

    def abort(self) -> None:
        """Remove every temporary file (and backup link) and the folders created for the files; write nothing.

        Nothing to do once committed: the files are in place.
        """
        if self._committed:
            return
        self._done = True
        for staged in self._staged:
            remove_quietly(staged.tmp)
            if staged.backup is not None:
                remove_quietly(staged.backup)
        for folder in reversed(self._folders):
            try:
                os.rmdir(folder)
            except OSError:
                pass  # not empty (or never made): left alone
        self._staged = []


def _backup(target: str) -> str | None:
    """A hard link to ``target`` under a fresh temporary name (None where links cannot be made)."""
    folder, name = os.path.split(target)
    for _ in range(100):
        link = os.path.join(folder, f".{name[:200]}.{secrets.token_hex(6)}.bak")
        try:
            os.link(target, link, follow_symlinks=False)
            return link
        except FileExistsError:
            continue
        except OSError:
            return None  # a file system without hard links: a failed rename cannot be undone there
    return None
