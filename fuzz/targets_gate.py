"""Fuzz target for the pre-commit gate: the hook's run answers as the whole run does.

* ``gate`` - a git repository holding a copy of ``examples/good`` or ``examples/kueue``
  (no finding) is committed, a cache is filled on it, and a few random edits are
  staged: a number in a YAML file changed, a workload or proposal moved to another
  pool or cluster (or to one that does not exist), a name changed, a measurement path
  pointed at another measurement, a document file deleted or copied under another
  name, a cell of a trace or job list scaled, a trace cut short. Then the whole run (``check``,
  without a cache and with the warm one) and the hook's run (``check
  --changed-files`` with the staged files that still exist, as pre-commit passes
  them, with and without the cache) are compared.

The contract, the gate's own: a cache makes no run different (warm equals cold,
for the whole run and for the hook's); the hook reports nothing the whole run does
not (same file, place, code and message: one figure per quantity); and since the
base had no finding, every finding of the whole run is the change's, so the hook
reports every one of them (from ``examples/bad`` or ``examples/kueue-bad``, every one
in a changed file) - a hook that passes where the whole run fails is a
gate that did not look. One exception: a changed document that does not load or
validate is left out of the model, so the hook fails on it (PL0xx) and may not
yet report what leaving it out does to other documents.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from targets import EXAMPLES, ContractViolation, Target, _cli

#: the edits, each applied with three numbers drawn (which file, which place in it, which new value)
OPS = ("number", "pool", "delete", "copy", "cell", "cut", "rename", "path", "cluster")
#: the clean repositories an input starts from (its first number, when it has five)
BASES = ("good", "kueue", "bad", "kueue-bad")
#: the bases without a finding: there every finding of the whole run after the edits is the change's
CLEAN = ("good", "kueue")
#: values a number is set to (and the old one halved or doubled)
NUMBERS = (0, 1, 2, 5, 10, 48, 64, 100, 1000)
POOLS = ("serving", "batch", "training", "nowhere")
_NUMBER = re.compile(r"(:\s+)(\d+(?:\.\d+)?)[ \t]*$", re.M)
_POOL = re.compile(r"(\bpool:\s+)([A-Za-z0-9_.-]+)")
_NAME = re.compile(r"(\bname:\s+)(\S+)")
_CELL = re.compile(r"\d+(?:\.\d+)?")
_PATH = re.compile(r"(\bpath:\s+)(\S+\.(?:csv|json))")
_CLUSTER = re.compile(r"(\bcluster:\s+)([A-Za-z0-9_.-]+)")
CLUSTERS = ("prod-east", "train-central", "east", "nowhere")


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "fuzz", "GIT_AUTHOR_EMAIL": "fuzz@example.com",
           "GIT_COMMITTER_NAME": "fuzz", "GIT_COMMITTER_EMAIL": "fuzz@example.com", "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout


def _files(repo: Path, pattern: str) -> list[Path]:
    return sorted(p for p in repo.rglob(pattern) if ".git" not in p.parts and p.name != ".policylint.yaml")


def apply_edit(repo: Path, edit: list[int]) -> str:
    """Apply one edit (``[op, file, place, value]``, any non-negative numbers) to ``repo``; what it did, for the report."""
    op, which, place, value = (OPS[edit[0] % len(OPS)], *edit[1:4])
    yamls, tables = _files(repo, "*.yaml"), _files(repo, "*.csv")
    if op in ("cell", "cut") and not tables or op not in ("cell", "cut") and not yamls:
        return f"{op}: nothing to edit"
    if op in ("number", "pool", "rename", "path", "cluster"):
        file = yamls[which % len(yamls)]
        text = file.read_text(encoding="utf-8")
        found = list({"number": _NUMBER, "pool": _POOL, "rename": _NAME, "path": _PATH, "cluster": _CLUSTER}[op].finditer(text))
        if not found:
            return f"{op}: none in {file.name}"
        match = found[place % len(found)]
        if op == "number":
            old = float(match.group(2))
            new = str((*NUMBERS, int(old * 2), int(old // 2))[value % (len(NUMBERS) + 2)])
        elif op == "pool":
            new = POOLS[value % len(POOLS)]
        elif op == "rename":
            new = f"{match.group(2)}-{value % 3}"
        elif op == "cluster":
            new = CLUSTERS[value % len(CLUSTERS)]
        else:  # another measurement file of the repository, as the document's folder names it
            others = [p for p in (*tables, *_files(repo, "*.json")) if p.parent.name in ("traces", "jobs")]
            if not others:
                return "path: no measurement to point at"
            new = os.path.relpath(others[value % len(others)], file.parent).replace(os.sep, "/")
        file.write_text(text[: match.start(2)] + new + text[match.end(2):], encoding="utf-8")
        return f"{op}: {file.relative_to(repo)} {match.group(2)} -> {new}"
    if op == "delete":
        file = yamls[which % len(yamls)]
        file.unlink()
        return f"delete {file.relative_to(repo)}"
    if op == "copy":
        file = yamls[which % len(yamls)]
        text = _NAME.sub(lambda m: f"{m.group(1)}{m.group(2)}-copy", file.read_text(encoding="utf-8"), count=1)
        file.with_name(f"copy-{value % 3}-{file.name}").write_text(text, encoding="utf-8")
        return f"copy {file.relative_to(repo)}"
    file = tables[which % len(tables)]
    lines = file.read_text(encoding="utf-8").splitlines()
    if op == "cut":
        keep = 1 + place % max(len(lines), 1)
        file.write_text("\n".join(lines[:keep]) + "\n", encoding="utf-8")
        return f"cut {file.relative_to(repo)} to {keep} lines"
    if len(lines) < 2:
        return f"cell: {file.name} has no rows"
    row = 1 + place % (len(lines) - 1)
    cells = lines[row].split(",")
    numeric = [i for i, c in enumerate(cells) if _CELL.fullmatch(c)]
    if not numeric:
        return f"cell: row {row} of {file.name} holds no number"
    at = numeric[value % len(numeric)]
    cells[at] = str(int(float(cells[at]) * (0, 2, 10)[value % 3]))
    lines[row] = ",".join(cells)
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f"cell {file.relative_to(repo)} row {row}"


@contextmanager
def _cache(folder: Path | None) -> Iterator[None]:
    old = os.environ.get("POLICYLINT_CACHE_DIR")
    if folder is not None:
        os.environ["POLICYLINT_CACHE_DIR"] = str(folder)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("POLICYLINT_CACHE_DIR", None)
        else:
            os.environ["POLICYLINT_CACHE_DIR"] = old


def _check(repo: Path, args: list[str], cache: Path | None) -> tuple[int, set[tuple[Any, ...]], str]:
    words = ["check", "--format", "json", "--now", "2026-12-01", *([] if cache is not None else ["--no-cache"]), *args]
    with _cache(cache):
        code, out, err = _cli(words, cwd=repo)
    if code not in (0, 1):
        raise ContractViolation(f"{' '.join(words)}: exit {code}; stderr: {err[:800]!r}")
    found = {(f["file"], f["line"], f["column"], f["code"], f["message"]) for f in json.loads(out)["findings"]}
    return code, found, err


def run_gate(item: tuple[str, bytes]) -> int:
    """Check the contract on one input; the whole run's exit code (the seeds' are all 1)."""
    edits = json.loads(item[1])
    base = BASES[int(edits[0][4]) % len(BASES)] if edits and len(edits[0]) > 4 else "good"
    top = Path(tempfile.mkdtemp(prefix="policylint-gate-"))
    try:
        repo, cache = top / "repo", top / "cache"
        shutil.copytree(EXAMPLES / base, repo)
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "base")
        code, before, _ = _check(repo, [], cache)
        if base in CLEAN and (code != 0 or before):
            raise ContractViolation(f"the base is not clean: {sorted(before)[:3]}")
        done = [apply_edit(repo, [int(n) for n in edit[:4]] + [0] * (4 - len(edit[:4]))) for edit in edits]
        _git(repo, "add", "-A")
        staged = _git(repo, "diff", "--cached", "--name-only", "--no-renames", "--diff-filter=d").split()
        what = f"{base}: edits {done}, staged {staged}"
        whole_code, whole, _ = _check(repo, [], None)
        warm_code, warm, _ = _check(repo, [], cache)
        hook_code, hook, _ = _check(repo, ["--changed-files", *staged], cache)
        cold_code, cold, _ = _check(repo, ["--changed-files", *staged], None)
        if (warm_code, warm) != (whole_code, whole):
            raise ContractViolation(f"the warm whole run differs: +{sorted(warm - whole)[:3]} -{sorted(whole - warm)[:3]}; {what}")
        if (hook_code, hook) != (cold_code, cold):
            raise ContractViolation(f"the warm hook run differs: +{sorted(hook - cold)[:3]} -{sorted(cold - hook)[:3]}; {what}")
        if hook - whole:
            raise ContractViolation(f"the hook reports what the whole run does not: {sorted(hook - whole)[:3]}; {what}")
        # A changed document that does not load or validate (PL0xx) is not in the model: the hook fails on it,
        # and what its absence does elsewhere (a pool losing a proposal) is reported once it validates.
        invalid = any(f[0] in staged and f[3] < "PL100" for f in hook)
        if base not in CLEAN:
            # findings the base had stay the whole run's business; the changed files' own are the hook's
            ours = {f for f in whole if f[0] in staged} - hook
            if ours and not invalid:
                raise ContractViolation(f"the hook misses findings in the changed files: {sorted(ours)[:3]}; {what}")
            return whole_code
        if hook_code != whole_code or (whole - hook and not invalid):
            raise ContractViolation(f"the hook (exit {hook_code}) misses the change's findings (exit {whole_code}): "
                                    f"{sorted(whole - hook)[:3]}; {what}")
        return whole_code
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _encoded(edits: list[list[int]]) -> tuple[str, bytes]:
    return ("edits", json.dumps(edits).encode())


#: edits that each changed what the whole run finds when written (kept as the corpus the runner starts from)
SEED_EDITS: list[list[list[int]]] = [
    [[0, 7, 0, 0]],             # a number in a workload file set to 0
    [[1, 5, 0, 3]],             # a workload moved to a pool that does not exist
    [[2, 4, 0, 0], [0, 1, 5, 2]],  # a document file deleted, another number changed
    [[3, 5, 0, 1]],             # a workload copied under another name (twice the demand)
    [[4, 6, 40, 2], [5, 2, 7, 0]],  # a trace cell scaled, a job list cut short
    [[0, 0, 1, 0, 1]],          # examples/kueue: a number in a manifest or workload
    [[7, 4, 0, 2, 0]],          # a measurement path pointed at another workload's file
    [[8, 5, 0, 3, 0]],          # a workload or proposal moved to a cluster that does not exist
]


def _seeds() -> list[tuple[str, bytes]]:
    return [_encoded(edits) for edits in SEED_EDITS]


def _strategy(seeds: list[tuple[str, bytes]]) -> st.SearchStrategy[tuple[str, bytes]]:
    edit = st.lists(st.integers(0, 10_000), min_size=5, max_size=5)
    return st.one_of(st.sampled_from(seeds), st.lists(edit, min_size=1, max_size=3).map(_encoded))


TARGETS: dict[str, Target] = {
    "gate": Target("gate", _seeds, _strategy, run_gate),
}
