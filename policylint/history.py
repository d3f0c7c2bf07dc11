"""Git-aware runs: what changed since a base revision, and what a pool was then.

Uses GitPython (imported lazily). A missing base revision - typical in a
shallow CI clone - is a usage error with a message that says how to fetch it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.errors import PolicylintError

if TYPE_CHECKING:
    from policylint.load import LoadLimits
    from policylint.model import Model


@dataclass
class Change:
    """Files changed since ``base`` and the previous reserved GPUs of each pool."""

    base: str
    files: list[Path] = field(default_factory=list)
    reserved_before: dict[str, int] = field(default_factory=dict)  # "cluster/pool" -> GPUs at base
    commit: Any = None  # the GitPython commit of ``base``
    top: Path | None = None  # the repository's working tree


def _repo(root: Path) -> Any:
    try:
        import git
    except ImportError as exc:  # pragma: no cover - gitpython is a dependency
        raise PolicylintError(f"--diff needs GitPython: {exc}") from None
    try:
        return git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise PolicylintError(f"--diff needs a git repository, and {root} is not inside one") from None


def changed_since(root: Path, base: str) -> Change:
    """Files changed between ``base`` and the working tree (untracked files included).

    The revision is resolved by git itself (``rev-parse --verify``), so every
    form git accepts (``@{-1}``, ``HEAD@{yesterday}``, ``origin/main~3``) works
    or fails with one message, instead of reaching GitPython's partial parser.
    File names are read NUL-separated: git quotes non-ASCII names otherwise.
    """
    import git

    if not base.strip():
        raise PolicylintError("--diff needs a git revision, got an empty string")
    if base.startswith("-"):
        raise PolicylintError(f"--diff needs a git revision, got '{base}' (an option, not a revision)")
    repo = _repo(root)
    try:
        sha = repo.git.rev_parse("--verify", "--quiet", f"{base}^{{commit}}").strip()
        commit = repo.commit(sha)
    except (git.GitCommandError, git.BadName, ValueError):
        shallow = Path(repo.git_dir, "shallow").exists()
        extra = (
            " This is a shallow clone: fetch the base first (git fetch --deepen=50 origin, "
            "or actions/checkout with fetch-depth: 0)."
            if shallow
            else ""
        )
        raise PolicylintError(f"git revision '{base}' not found.{extra}") from None
    top = Path(repo.working_tree_dir or root)
    try:
        changed = repo.git.diff("--name-only", "-z", "--no-renames", commit.hexsha, "--", stdout_as_string=False)
        untracked = repo.git.ls_files("--others", "--exclude-standard", "-z", stdout_as_string=False)
    except git.GitCommandError as exc:
        message = " ".join(str(exc.stderr or exc).split())
        raise PolicylintError(f"git cannot list the changes since '{base}': {message}") from None
    names = {os.fsdecode(n) for n in (changed + untracked).split(b"\0") if n}
    return Change(base=base, files=sorted(top / n for n in names), commit=commit, top=top)


def previous_reserved(change: Change, model: Model, limits: LoadLimits | None = None) -> dict[str, int]:
    """Reserved GPUs per pool at the base revision, for clusters present in both.

    The old text is read within the same limits as the working tree's.
    """
    from policylint.load import LoadLimits, SourceFile, parse_text

    limits = limits or LoadLimits()

    commit, top = change.commit, change.top
    if commit is None or top is None:
        return {}
    out: dict[str, int] = {}
    for cluster in model.clusters.values():
        try:
            rel = Path(cluster.doc.source.path).resolve().relative_to(top.resolve()).as_posix()
        except ValueError:
            continue
        try:
            blob = commit.tree / rel
            if blob.size > limits.max_file_bytes:
                continue  # refused today too: never read an oversized file from history
            text = blob.data_stream.read().decode("utf-8")
        except (KeyError, ValueError, TypeError, AttributeError):
            continue  # new file, not a file, or unreadable at base: nothing to compare with
        old = SourceFile(path=Path(rel), display=rel, text=text)
        parse_text(old, limits)
        for doc in old.documents:
            if doc.kind != "Cluster" or doc.name != cluster.name:
                continue
            spec = doc.data.get("spec")
            pools = spec.get("pools") if isinstance(spec, dict) else None
            if not isinstance(pools, list):
                continue
            for pool in pools:
                if isinstance(pool, dict) and isinstance(pool.get("reservedGpus"), int):
                    out[f"{cluster.name}/{pool.get('name')}"] = int(pool["reservedGpus"])
    change.reserved_before = out
    return out
