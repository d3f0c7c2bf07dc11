"""Git submodules at a revision: the files a submodule held there, read from the submodule's own objects.

In its parent's tree a submodule is a commit id (mode 160000), not files, so every reader of the
``--diff`` base found no file under it: a cluster file kept in a submodule had no base, and a raise
committed by bumping the submodule passed PL950 (red team, 2026-12-07, round 16). The commit the
base names is read from a git folder that holds it - the submodule's checkout, or its repository
under the parent's ``.git/modules`` - whichever does: a commit id names one content wherever it is
found. A commit no git folder here holds (a submodule fetched shallow, or never initialised) cannot
be read; :func:`gitlinks` says why, so that a pool whose file lay there is reported, not passed.
Submodules inside submodules are not followed.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policylint.model import Model

#: the mode of a submodule's entry in its parent's tree
GITLINK_MODE = b"160000"

#: variables that would point a git command run in a submodule at the parent's repository (a hook's environment)
_PARENT_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
                     "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX")


@dataclass(frozen=True)
class Gitlink:
    """A submodule as a revision of its parent names it."""

    path: str  # relative to the parent's top, as git writes it (``/``-separated)
    commit: str  # the commit id the parent's tree names
    git_dir: Path | None  # a git folder that holds the commit; None when none here does
    why: str = ""  # when ``git_dir`` is None: why the commit cannot be read


def clean_env() -> dict[str, str]:
    """The environment without the variables that would point git at the parent's repository."""
    return {k: v for k, v in os.environ.items() if k not in _PARENT_VARIABLES}


def run_git(folder: Path, args: list[str], given: bytes | None = None, timeout: int = 120,
            env: dict[str, str] | None = None) -> bytes:
    """``git args`` run in ``folder`` (``given`` on its standard input, ``env`` its environment: None, this
    process's); its standard output. Raises ``OSError`` when git fails or does not answer in ``timeout`` seconds."""
    try:
        done = subprocess.run(["git", *args], cwd=folder, input=given, capture_output=True, timeout=timeout,
                              check=False, env=env)
    except subprocess.SubprocessError as exc:
        raise OSError(f"git {args[0]} failed") from exc
    if done.returncode != 0:
        raise OSError(f"git {args[0]} failed")
    return done.stdout


def git(folder: Path, args: list[str], timeout: int = 120) -> bytes:
    """:func:`run_git` in ``folder`` (a work tree or a git folder) with the parent's location variables left out."""
    return run_git(folder, args, timeout=timeout, env=clean_env())


def top_of(folder: Path) -> Path | None:
    """The top of the work tree holding ``folder`` (None outside one)."""
    try:
        return Path(os.fsdecode(git(folder, ["rev-parse", "--show-toplevel"]).strip()))
    except OSError:
        return None


def gitlinks(top: Path, rev: str, paths: list[str], recursive: bool = False) -> list[Gitlink]:
    """The submodules ``rev`` names at ``paths`` (relative to ``top``), or under them with ``recursive``.

    Each with a git folder holding its commit, or the reason none does. Nothing when git fails.
    """
    if not paths:
        return []
    try:
        out = git(top, ["ls-tree", "-z", "--full-tree", *(["-r"] if recursive else []), rev, "--", *paths])
    except OSError:
        return []
    found = []
    for entry in out.split(b"\0"):
        head, _, name = entry.partition(b"\t")
        parts = head.split(b" ")
        if name and len(parts) == 3 and parts[0] == GITLINK_MODE:
            path, commit = os.fsdecode(name), parts[2].decode("ascii", "replace")
            found.append(_located(top, rev, path, commit))
    return found


def _located(top: Path, rev: str, path: str, commit: str) -> Gitlink:
    """``path``'s commit with the first git folder that holds it: its checkout's, then the parent's ``modules``."""
    candidates: list[Path] = []
    checkout = top / path
    dot = checkout / ".git"
    if dot.is_file():
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            candidates.append(checkout / text[len("gitdir:"):].strip())
    elif dot.is_dir():
        candidates.append(dot)
    try:
        common = Path(os.fsdecode(git(top, ["rev-parse", "--path-format=absolute", "--git-common-dir"]).strip()))
    except OSError:
        common = top / ".git"
    candidates += [common / "modules" / name for name in [*_names(top, rev, path), path]]
    seen = [c for c in candidates if c.is_dir()]
    for folder in seen:
        try:
            git(folder, ["cat-file", "-e", f"{commit}^{{commit}}"], timeout=60)
        except OSError:
            continue
        return Gitlink(path, commit, folder)
    why = (f"its repository here does not hold commit {commit[:12]} (a shallow or partial fetch of the submodule:"
           f" fetch its history, e.g. `git submodule update --init` without --depth, or `git -C {path} fetch"
           " --unshallow`)") if seen else (
        f"the submodule is not checked out here, so commit {commit[:12]} cannot be read (`git submodule update --init`)")
    return Gitlink(path, commit, None, why)


def _names(top: Path, rev: str, path: str) -> list[str]:
    """The names ``.gitmodules`` at ``rev`` gives the submodule at ``path`` (its folder under ``.git/modules``)."""
    try:
        out = git(top, ["config", "-z", "--blob", f"{rev}:.gitmodules", "--get-regexp", r"^submodule\..*\.path$"],
                  timeout=60)
    except OSError:
        return []
    names = []
    for entry in out.split(b"\0"):
        key, _, value = os.fsdecode(entry).partition("\n")
        if value == path and key.startswith("submodule.") and key.endswith(".path"):
            names.append(key[len("submodule."):-len(".path")])
    return names


def split(path: str, links: list[Gitlink]) -> tuple[Gitlink, str] | None:
    """The submodule of ``links`` that ``path`` (relative to the parent's top) lies in, and its path inside it."""
    for link in links:
        if path.startswith(link.path + "/"):
            return link, path[len(link.path) + 1:]
    return None


def ancestors(path: str) -> list[str]:
    """``a``, ``a/b`` for ``a/b/c``: the folders a submodule could be at."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def changed_within(top: Path, rev: str, names: set[str]) -> set[str]:
    """``names`` (changed paths relative to ``top`` since ``rev``) with each submodule among them replaced by the
    files changed in it: since the commit ``rev`` names, in its checkout (untracked files too), or every file under
    its checkout when that commit cannot be read there or ``rev`` held no submodule at that path."""
    folders = {n for n in names if (top / n).is_dir() and not (top / n).is_symlink()}
    if not folders:
        return names
    then = {link.path: link for link in gitlinks(top, rev, sorted(folders))}
    out = names - folders
    for name in sorted(folders):
        checkout = top / name
        link = then.get(name)
        try:
            if link is None or link.git_dir is None:
                raise OSError("no commit to compare with")
            listed = git(checkout, ["diff", "--name-only", "--relative", "-z", "--no-renames", link.commit, "--"])
            listed += git(checkout, ["ls-files", "--others", "--exclude-standard", "-z"])
            out |= {f"{name}/{os.fsdecode(n)}" for n in listed.split(b"\0") if n}
        except OSError:
            for folder, dirs, files in os.walk(checkout):
                dirs[:] = [d for d in dirs if d != ".git"]
                rel = Path(folder).relative_to(top).as_posix()
                out |= {f"{rel}/{f}" for f in files if f != ".git"}
    return out


def unreadable_pools(top: Path, rev: str, model: Model) -> dict[str, str]:
    """Why the revision ``rev`` of each pool's file cannot be read ("cluster/pool" -> the reason), for the pools whose
    file lies in a submodule whose commit at ``rev`` no git folder here holds: such a pool has no base, and PL950
    reports it rather than passing it silently."""
    files = {}
    for pool in model.pools:
        real = os.path.realpath(pool.doc.source.path)
        if real.startswith(str(top) + os.sep):
            files[pool.qualified] = os.path.relpath(real, top).replace(os.sep, "/")
    links = [link for link in gitlinks(top, rev, sorted({a for f in files.values() for a in ancestors(f)}))
             if link.git_dir is None]
    out = {}
    for qualified, name in files.items():
        hit = split(name, links)
        if hit is not None:
            out[qualified] = (f"the base revision of {name} cannot be read: it lies in the submodule {hit[0].path},"
                              f" and {hit[0].why}")
    return out
