"""Git-aware runs: what changed since a base revision, and what a pool was then.

Uses GitPython (imported lazily). A missing base revision - typical in a
shallow CI clone - is a usage error with a message that says how to fetch it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.errors import PolicylintError

if TYPE_CHECKING:
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
    """Files changed between ``base`` and the working tree (untracked files included)."""
    import git

    repo = _repo(root)
    try:
        commit = repo.commit(base)
        # A shallow clone names the parent of its oldest commit (HEAD~1) without
        # holding that commit; make git prove the object is really there.
        repo.git.rev_parse("--verify", "--quiet", f"{commit.hexsha}^{{commit}}")
    except (git.BadName, ValueError, git.GitCommandError):
        shallow = Path(repo.git_dir, "shallow").exists()
        extra = (
            " This is a shallow clone: fetch the base first (git fetch --deepen=50 origin, "
            "or actions/checkout with fetch-depth: 0)."
            if shallow
            else ""
        )
        raise PolicylintError(f"git revision '{base}' not found.{extra}") from None
    top = Path(repo.working_tree_dir or root)
    names = set(repo.git.diff("--name-only", commit.hexsha, "--").splitlines())
    names |= set(repo.untracked_files)
    return Change(base=base, files=sorted(top / n for n in names if n), commit=commit, top=top)


def previous_reserved(change: Change, model: Model) -> dict[str, int]:
    """Reserved GPUs per pool at the base revision, for clusters present in both."""
    from policylint.load import SourceFile, parse_text

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
            text = blob.data_stream.read().decode("utf-8")
        except (KeyError, UnicodeDecodeError):
            continue  # new file, or unreadable at base: nothing to compare with
        old = SourceFile(path=Path(rel), display=rel, text=text)
        parse_text(old)
        for doc in old.documents:
            if doc.kind != "Cluster" or doc.name != cluster.name:
                continue
            pools = (doc.data.get("spec") or {}).get("pools") or []
            for pool in pools:
                if isinstance(pool, dict) and isinstance(pool.get("reservedGpus"), int):
                    out[f"{cluster.name}/{pool.get('name')}"] = int(pool["reservedGpus"])
    change.reserved_before = out
    return out
