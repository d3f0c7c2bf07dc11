"""Fuzz targets for the writers (issue 22): ``check --fix`` and ``init``.

* ``fix`` - ``check --fix --unsafe-fixes`` on a copy of one fixable rule's
  fixture (PL101, PL102, PL104, PL801) with a document mutated, and with a trap
  laid beside it: a link at the old fixed temporary name pointing outside the
  repository, a read-only document, or a hard link to it. The contract: a clean
  exit, nothing written outside the repository, no file left behind, a file
  reported as unfixed is byte for byte as it was (read-only and hard-linked
  files always are), and a file that was valid YAML stays valid YAML.
* ``init`` - ``policylint init [--force]`` on a folder where some of the paths
  init writes already hold a file, a link (to a file outside, dangling, or to
  a folder outside), a named pipe or a folder. The contract: a clean exit in
  time (no pipe is ever opened), nothing outside the folder written, and
  without ``--force`` every file that was there is unchanged.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from mutate import mutated
from targets import REPO, ContractViolation, Target, _cli, _expect_clean_exit, _workdir

RULES = REPO / "tests" / "rules"
FIX_CODES = ("PL101", "PL102", "PL104", "PL801")
TRAPS = ("none", "temporary-link", "read-only", "hard-link")
CANARY = b"# outside the repository: never written\n"


def _outside() -> Path:
    """A folder outside every repository the targets build, with a canary file in it."""
    folder = _workdir() / "outside"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    (folder / "canary").write_bytes(CANARY)
    return folder


def _check_outside(folder: Path) -> None:
    if sorted(os.listdir(folder)) != ["canary"] or (folder / "canary").read_bytes() != CANARY:
        raise ContractViolation(f"something was written outside the repository: {sorted(os.listdir(folder))}")


def _files(folder: Path) -> dict[str, bytes | str]:
    """Every entry below ``folder``: a file's bytes, or what kind of thing it is."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            rel = path.relative_to(folder).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                out[rel] = f"link to {os.readlink(path)}"
            elif stat.S_ISREG(mode):
                out[rel] = path.read_bytes()
            elif stat.S_ISDIR(mode):
                out[rel] = "folder"
            else:
                out[rel] = "special"
    return out


# -- fix -----------------------------------------------------------------------------------------


def _fix_seeds() -> list[tuple[str, str, bytes, str]]:
    seeds = []
    for code in FIX_CODES:
        for path in sorted((RULES / code / "fail").glob("*.yaml")):
            seeds.append((code, path.name, path.read_bytes(), "none"))
    return seeds


def _fix_strategy(seeds: list[tuple[str, str, bytes, str]]) -> st.SearchStrategy[tuple[str, str, bytes, str]]:
    def one(index: int) -> st.SearchStrategy[tuple[str, str, bytes, str]]:
        code, name, data, _ = seeds[index]
        # few edits: most inputs must still read, so that a fix is planned and written
        text = st.one_of(st.just(data), mutated([data], max_edits=2))
        return st.tuples(st.just(code), st.just(name), text, st.sampled_from(TRAPS))

    return st.integers(0, len(seeds) - 1).flatmap(one)


def _yaml_broken(path: Path) -> bool:
    from policylint.model.load import load_file

    return any(f.code in ("PL001", "PL003", "PL005") for f in load_file(path, path.name).findings)


def run_fix(item: tuple[str, str, bytes, str]) -> None:
    code, name, data, trap = item
    root = _workdir() / "fix"
    if root.exists():
        shutil.rmtree(root)
    outside = _outside()
    shutil.copytree(RULES / "_traces", root / "_traces")
    shutil.copytree(RULES / code / "fail", root / code / "fail")
    folder = root / code / "fail"
    target = folder / name
    target.write_bytes(data)
    was_broken = _yaml_broken(target)
    if trap == "temporary-link":
        for other in folder.glob("*.yaml"):
            (folder / f".{other.name}.policylint-fix").symlink_to(outside / "canary")
    elif trap == "read-only":
        target.chmod(0o444)
    elif trap == "hard-link":
        os.link(target, outside / "canary-link")
    before = _files(folder)
    exit_code, out, err = _cli(
        ["check", "--isolated", "--now", "2026-12-01", "--root", str(root), "--select", code,
         "--fix", "--unsafe-fixes", "-q", str(folder)]
    )
    _expect_clean_exit(exit_code, out, err, (0, 1, 2), json_out=False)
    if trap == "hard-link":
        os.unlink(outside / "canary-link")
    _check_outside(outside)
    after = _files(folder)
    if sorted(after) != sorted(before):
        raise ContractViolation(f"files appeared or vanished: {sorted(set(after) ^ set(before))}")
    changed = [rel for rel in before if before[rel] != after[rel]]
    if trap in ("read-only", "hard-link") and name in changed:
        raise ContractViolation(f"a {trap} document was rewritten")
    if err.startswith("fixed 0 numbers") and changed:
        raise ContractViolation(f"nothing reported fixed, but {changed} changed")
    for rel in changed:
        if isinstance(after[rel], str):
            raise ContractViolation(f"{rel} became a {after[rel]}")
        if not was_broken and _yaml_broken(folder / rel):
            raise ContractViolation(f"the fix broke the YAML of {rel}")


# -- init ----------------------------------------------------------------------------------------

#: Paths init writes (and folders it writes into), where the fuzzer puts something first.
INIT_PLACES = (
    ".policylint.yaml", ".pre-commit-config.yaml", ".vscode", ".vscode/settings.json", "schemas",
    "schemas/workload.schema.json", "workloads", "workloads/example-service.yaml", "clusters/example.yaml",
    "measurements", "measurements/example-service.csv", "proposals/example-request.yaml",
)
KINDS = ("file", "read-only", "link-to-file", "dangling-link", "link-to-folder", "fifo", "folder")


def _init_seeds() -> list[tuple[tuple[tuple[str, str, bytes], ...], bool]]:
    return [((), False), (((".policylint.yaml", "file", b"fail-on: error\n"),), True)]


def _init_strategy(seeds: list[Any]) -> st.SearchStrategy[tuple[tuple[tuple[str, str, bytes], ...], bool]]:
    entry = st.tuples(st.sampled_from(INIT_PLACES), st.sampled_from(KINDS), st.binary(max_size=40))
    return st.tuples(st.lists(entry, max_size=4).map(tuple), st.booleans())


def _place(repo: Path, outside: Path, rel: str, kind: str, data: bytes) -> None:
    path = repo / rel
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # an earlier entry put a file where this one needs a folder
    if os.path.lexists(path):
        return
    if kind in ("file", "read-only"):
        path.write_bytes(data)
        if kind == "read-only":
            path.chmod(0o444)
    elif kind == "link-to-file":
        path.symlink_to(outside / "canary")
    elif kind == "dangling-link":
        path.symlink_to(outside / "created")
    elif kind == "link-to-folder":
        path.symlink_to(outside)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()


def run_init(item: tuple[tuple[tuple[str, str, bytes], ...], bool]) -> None:
    entries, force = item
    repo = _workdir() / "init"
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir()
    outside = _outside()
    for rel, kind, data in entries:
        _place(repo, outside, rel, kind, data)
    before = _files(repo)
    exit_code, out, err = _cli(["init", str(repo), *(["--force"] if force else [])])
    _expect_clean_exit(exit_code, out, err, (0, 2), json_out=False)
    _check_outside(outside)
    after = _files(repo)
    for rel, was in before.items():
        now = after.get(rel)
        if now == was:
            continue
        if exit_code == 2:
            raise ContractViolation(f"init refused, yet changed {rel}")
        if not force:
            raise ContractViolation(f"without --force, {rel} changed")
        if isinstance(was, bytes) and isinstance(now, bytes):
            continue  # --force rewrites a file init writes
        if isinstance(was, str) and was.startswith("link") and isinstance(now, bytes):
            continue  # --force replaces a link itself
        raise ContractViolation(f"{rel}: {was!r:.60} became {now!r:.60}")


TARGETS: dict[str, Target] = {
    "fix": Target("fix", _fix_seeds, _fix_strategy, run_fix),
    "init": Target("init", _init_seeds, _init_strategy, run_init),
}
