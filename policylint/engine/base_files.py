"""The base revision's files, read with plain git (no checkout): what ``--diff`` compares with.

Listing a tree, finding the files that declare pools, and writing chosen files as the base
holds them into a scratch folder - each through the one writer.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from policylint.model.load.documents import SCHEDULER_KINDS


def _git(folder: Path, args: list[str], given: bytes | None = None, timeout: int = 120) -> bytes:
    done = subprocess.run(["git", *args], cwd=folder, input=given, capture_output=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise OSError(f"git {args[0]} failed")
    return done.stdout


def tree_at(folder: Path, sha: str, rel: Path) -> list[str]:
    """Regular files (paths relative to the repository's top) under ``rel`` at ``sha``."""
    spec = [] if rel == Path(".") else ["--", f"{rel.as_posix()}/"]
    out = _git(folder, ["ls-tree", "-r", "-z", "--full-tree", sha, *spec])
    names = []
    for entry in out.split(b"\0"):
        head, _, name = entry.partition(b"\t")
        mode = head.split(b" ")[0] if head else b""
        if name and mode in (b"100644", b"100755"):  # no links, no submodules: a link could lead outside
            names.append(os.fsdecode(name))
    return names


def blobs(folder: Path, specs: list[str], timeout: int = 120) -> Iterator[bytes | None]:
    """Each object ``specs`` names (``<rev>:<path>``), in order, as bytes; ``None`` for one missing.

    One ``git cat-file --batch`` for all of them. Raises ``OSError`` when git fails; stops early
    when its output ends short (a truncated stream yields nothing more).
    """
    out = _git(folder, ["cat-file", "--batch"], "".join(f"{spec}\n" for spec in specs).encode(), timeout)
    at = 0
    for _ in specs:
        end = out.find(b"\n", at)
        if end < 0:
            return
        head = out[at:end].split()
        at = end + 1
        if len(head) != 3 or head[1] != b"blob" or not head[2].isdigit():
            yield None  # "<spec> missing": not in that revision
            continue
        size = int(head[2])
        body, at = out[at : at + size], at + size + 1
        yield body


def write_blobs(folder: Path, sha: str, names: list[str], scratch: Path, cap: int | None) -> None:
    """Each of ``names`` as ``sha`` holds it, written under ``scratch`` (one ``git cat-file --batch``)."""
    from policylint.writer import write_file

    names = [n for n in names if "\n" not in n and not Path(n).is_absolute() and ".." not in Path(n).parts]
    if not names:
        return
    for name, body in zip(names, blobs(folder, [f"{sha}:{n}" for n in names])):
        if body is None or (cap is not None and len(body) > cap):
            continue  # missing, or refused today too: never read an oversized file from history
        write_file(scratch / name, body, root=None, explicit=True, parents=True, durable=False, mode=0o600,
                   what="the base revision of a file")


#: the kinds of document that declare a pool: a policylint Cluster, Kueue's and Volcano's queues and flavors;
#: and Kueue's LocalQueue, which places the workloads admitted through it in one
_POOL_KINDS = ("Cluster", *SCHEDULER_KINDS)


def pool_files_at(top: Path, sha: str, root: Path) -> list[Path]:
    """The YAML files under ``root`` that held, at ``sha``, a document of a kind that declares pools
    (or, a Kueue LocalQueue, places workloads in one).

    One ``git grep`` over the base tree (plain git, no checkout); the kind may be quoted. A
    repository without git, or a root outside the work tree, gives none.
    """
    from policylint.model.load.files import is_json_name, is_yaml_name

    folder = Path(os.path.realpath(top))
    try:
        rel = Path(os.path.realpath(root)).relative_to(folder)
    except ValueError:
        return []
    pattern = "kind[\"']?[[:space:]]*:[[:space:]]*[\"']?(" + "|".join(_POOL_KINDS) + ")[\"']?[[:space:]]*($|[,}#])"
    spec = [] if rel == Path(".") else ["--", f"{rel.as_posix()}/"]
    try:
        done = subprocess.run(["git", "grep", "-l", "-z", "-E", "-I", pattern, sha, *spec], cwd=folder,
                              capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode not in (0, 1):  # 1: nothing matched
        return []
    out = []
    for entry in done.stdout.split(b"\0"):
        name = os.fsdecode(entry).split(":", 1)[-1] if entry else ""
        if name and (is_yaml_name(name) or is_json_name(name)):  # kubectl applies JSON manifests too
            out.append(folder / name)
    return sorted(out)
