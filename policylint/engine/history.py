"""Git-aware runs: what changed since a base revision, and what a pool was then.

Uses GitPython (imported lazily). A missing base revision - typical in a
shallow CI clone - is a usage error with a message that says how to fetch it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.engine.base_files import placement, placements_at, workloads_at
from policylint.engine.cohort_quota import cohort_state
from policylint.errors import PolicylintError

if TYPE_CHECKING:
    from policylint.model.load import Document, LoadLimits, SourceFile
    from policylint.model import Model


@dataclass
class Change:
    """Files changed since ``base`` and the previous reserved GPUs of each pool."""

    base: str
    files: list[Path] = field(default_factory=list)
    reserved_before: dict[str, int] = field(default_factory=dict)  # "cluster/pool" -> GPUs at base
    cohorts_before: Any = None  # the Kueue Cohorts at the base (:func:`policylint.engine.cohort_quota.cohort_state`)
    commit: Any = None  # the GitPython commit of ``base``
    top: Path | None = None  # the repository's working tree
    #: real path of a file today -> real path of the file git finds it renamed from since the base (``git diff -M``:
    #: a file moved, kept whole or with a few lines edited)
    renamed: dict[str, str] = field(default_factory=dict)
    #: "cluster/pool" -> why the base revision of its file cannot be read (a submodule's commit no git folder here
    #: holds), for each pool found nowhere at the base: PL950 reports it rather than passing a pool with no base
    unreadable: dict[str, str] = field(default_factory=dict)


def _repo(root: Path) -> Any:
    try:
        import git
    except ImportError as exc:  # pragma: no cover - gitpython is a dependency
        raise PolicylintError(f"--diff needs GitPython: {exc}") from None
    try:
        return git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise PolicylintError(f"--diff needs a git repository, and {root} is not inside one") from None


def staged_changes(where: Path) -> tuple[list[Path], list[Path]]:
    """(files the staged change adds or edits, files it deletes), as absolute paths, each sorted.

    pre-commit passes a hook only the staged files that still exist, so a commit that
    deletes a workload or a trace would otherwise reach no check at all; and a hook limited
    to a monorepo's capacity folder (``files: ^capacity/``) is not given a shared file the
    folder links to (red team, 2026-12-06, round 16). Outside a git repository (or without
    git) there is no staged change: two empty lists. Plain ``git`` is run rather than
    GitPython, once: this is on every commit's path.
    """
    import subprocess

    def git(*args: str) -> bytes | None:
        try:
            done = subprocess.run(["git", *args], cwd=where, capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    listed = git("diff", "--cached", "--name-status", "-z", "--no-renames")
    if not top or listed is None:
        return [], []
    folder = Path(os.fsdecode(top.strip()))
    fields = listed.split(b"\0")
    edited: list[Path] = []
    deleted: list[Path] = []
    for status, name in zip(fields[0::2], fields[1::2]):
        if name:
            (deleted if status.startswith(b"D") else edited).append(folder / os.fsdecode(name))
    return sorted(edited), sorted(deleted)


def tracked_configurations(where: Path) -> list[Path]:
    """The policylint configuration files git tracks in the repository holding ``where``.

    A change that leads to none of them, in a repository that has some, belongs to no
    capacity repository (a monorepo's other projects).
    """
    import subprocess

    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", "--full-name", ":(top,glob)**/.policylint.yaml", ":(top,glob)**/.policylint.yml"],
            cwd=where, capture_output=True, timeout=60, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    return [Path(os.fsdecode(n)) for n in done.stdout.split(b"\0") if n]


def changed_since(root: Path, base: str) -> Change:
    """Files changed between ``base`` (its merge base with HEAD) and the working tree (untracked files included).

    The revision is resolved by git itself (``rev-parse --verify``), so every
    form git accepts (``@{-1}``, ``HEAD@{yesterday}``, ``origin/main~3``) works
    or fails with one message, instead of reaching GitPython's partial parser.
    File names are read NUL-separated: git quotes non-ASCII names otherwise.
    """
    import git

    from policylint.engine.base_files import renames_since

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
    # A pull request is a change since it left its base branch, not against that branch's tip:
    # compared with a tip that moved on, every later change of the base (a pool lowered there)
    # would read as this change undoing it. The merge base with HEAD is that point, as in
    # `git diff BASE...HEAD`; for an ancestor of HEAD (HEAD~1, a tag) it is the revision itself.
    try:
        fork = repo.git.merge_base(commit.hexsha, "HEAD").strip()
    except (git.GitCommandError, ValueError):
        fork = ""  # no HEAD yet, or no common history: the revision as given
    if fork and fork != commit.hexsha:
        commit = repo.commit(fork)
    top = Path(repo.working_tree_dir or root)
    try:
        changed = repo.git.diff("--name-only", "-z", "--no-renames", commit.hexsha, "--", stdout_as_string=False)
        untracked = repo.git.ls_files("--others", "--exclude-standard", "-z", stdout_as_string=False)
    except git.GitCommandError as exc:
        message = " ".join(str(exc.stderr or exc).split())
        raise PolicylintError(f"git cannot list the changes since '{base}': {message}") from None
    # a submodule bumped is the files changed in it (round 16: a raise in a submodule's cluster file judged nothing)
    from policylint.engine.submodules import changed_within

    names = changed_within(top, commit.hexsha, {os.fsdecode(n) for n in (changed + untracked).split(b"\0") if n})
    return Change(base=base, files=sorted(top / n for n in names), commit=commit, top=top,
                  renamed=renames_since(top, commit.hexsha))



@dataclass(frozen=True)
class PoolThen:
    """A pool as the ``--diff`` base revision declares it: what was measured on it ran there."""

    key: tuple[str, str, str]  # :attr:`policylint.model.Pool.key` of the pool at the base
    reserved_gpus: int | None
    owned_gpus: int  # :attr:`policylint.model.Pool.owned_gpus`: reserved, or a Kueue flavor's nominal quota
    capacity_gpus: int  # :attr:`policylint.model.Pool.capacity_gpus`, the one definition
    gpu_model: str | None  # ``gpu.model`` as written (stripped), None when not declared
    proposed_gpus: int = 0  # what the base's proposals asked for it (:meth:`policylint.model.Model.proposed_gpus`)
    buffer_gpus: int = 0  # :attr:`policylint.model.Pool.buffer_gpus`: bought and kept free, so bought all the same

    @property
    def owned_and_proposed_gpus(self) -> int:
        """What the pool was to own once the base's proposals were delivered, its buffer included: PL950's figure at the base."""
        return self.owned_gpus + self.buffer_gpus + self.proposed_gpus


def pools_at_base(
    change: Change, model: Model, limits: LoadLimits | None = None, gpu_resources: tuple[str, ...] = ()
) -> tuple[dict[str, PoolThen], dict[tuple[str, str], PoolThen]]:
    """Every pool of the documents backing today's pools, as the base revision declares it.

    Two maps: today's pools (by qualified name) found again at the base by the
    document that backs them - a Cluster's pool, a Kueue ClusterQueue flavor, a
    Volcano Queue - and its name (see :attr:`policylint.model.Pool.key`), whatever
    its kind; and every pool those documents held at the base by its (cluster, pool)
    names then, for a workload placed elsewhere at the base (a pool renamed, a
    workload moved). The base versions are read and resolved by the same readers as
    today's, so a raised ``nominalQuota`` or ``guarantee`` is a raised
    ``reservedGpus`` like any other, within the same limits as the working tree.
    """
    from policylint.model.load import LoadLimits, is_scheduler_doc
    from policylint.model.resolve import resolve
    from policylint.model.validate import validate_document

    limits = limits or LoadLimits()
    commit, top = change.commit, change.top
    if commit is None or top is None:
        return {}, {}
    files: set[str] = set()
    for pool in model.pools:
        files |= {pool.doc.source.path.as_posix(), pool.cluster.doc.source.path.as_posix()}
    from policylint.model import schedulers, whole_number

    for doc in schedulers.documents(model):
        # a LocalQueue shapes no pool, but places the workloads admitted through it in one: a
        # ClusterQueue renamed with its LocalQueue repointed is found by the LocalQueue at the base
        # (red team, 2026-12-06, round 12)
        files.add(doc.source.path.as_posix())
    # and every file of the base that declares one, wherever it lies today: a cluster file moved or
    # renamed in the change left every history rule without a base (red team, 2026-12-06, round 12)
    from policylint.engine.base_files import pool_files_at

    files |= {p.as_posix() for p in pool_files_at(top, commit.hexsha, Path(model.root))}
    # and the proposals: GPUs the base asked for are delivered by a raise that drops the proposal
    files |= {p.as_posix() for p in pool_files_at(top, commit.hexsha, Path(model.root), kinds=("Proposal",))}
    clusters: list[Document] = []
    scheduler_docs: list[Document] = []
    from policylint.engine.base_files import parsed_at

    folder = Path(os.path.realpath(top))
    names = sorted({os.path.relpath(os.path.realpath(p), folder).replace(os.sep, "/") for p in files})
    for old in parsed_at(folder, commit.hexsha, [n for n in names if not n.startswith("../")], limits):
        for doc in old.documents:
            if doc.is_policylint and doc.kind in ("Cluster", "Proposal") and not validate_document(doc):
                clusters.append(doc)
            elif is_scheduler_doc(doc):
                scheduler_docs.append(doc)
    from policylint.engine.submodules import unreadable_pools

    change.unreadable = unreadable_pools(folder, commit.hexsha, model)
    if not clusters and not scheduler_docs:
        return {}, {}
    before, _ = resolve(clusters, model.root, [], scheduler_docs, gpu_resources or schedulers.GPU_RESOURCES)
    by_key: dict[tuple[str, str, str], PoolThen] = {}
    by_name: dict[tuple[str, str], PoolThen] = {}
    by_id: dict[int, PoolThen] = {}
    proposed, _ = before.proposed_gpus()
    for pool in [*before.pools, *schedulers.all_pools(before)]:
        reserved = pool.spec.get("reservedGpus")
        model_then = (pool.spec.get("gpu") or {}).get("model")
        then = PoolThen(
            key=pool.key,
            reserved_gpus=whole_number(reserved),
            owned_gpus=pool.owned_gpus,
            capacity_gpus=pool.capacity_gpus,
            gpu_model=(model_then.strip() or None) if isinstance(model_then, str) else None,
            proposed_gpus=proposed.get(pool.qualified, 0),
            buffer_gpus=pool.buffer_gpus,
        )
        by_key.setdefault(pool.key, then)
        by_name.setdefault((pool.cluster.name, pool.name), then)
        by_id.setdefault(id(pool), then)
    # each queue a workload may name, to the pool the base admitted it to
    by_name.update({placed: by_id[id(p)] for placed, p in schedulers.queue_pools(before).items() if id(p) in by_id})
    out = {pool.qualified: by_key[pool.key] for pool in model.pools if pool.key in by_key}
    change.unreadable = {q: why for q, why in change.unreadable.items() if q not in out}
    change.reserved_before = {q: p.reserved_gpus for q, p in out.items() if p.reserved_gpus is not None}
    change.cohorts_before = cohort_state(schedulers.all_pools(before))
    return out, by_name


def measured_on(change: Change, model: Model, then: dict[str, PoolThen], by_name: dict[tuple[str, str], PoolThen],
                limits: LoadLimits | None = None) -> dict[str, PoolThen]:
    """The pool each workload's measurements were taken on: where the base revision placed it.

    A trace in a change was measured on what runs - the pool the base declares - never
    on the capacity or the GPU the same change writes (red team, 2026-12-06, round 10:
    a per-GPU figure lowered from 19 to 1 while the pool was raised to match). A
    workload whose file is unchanged is placed as today, in its pool found again at the
    base; one whose file changed is placed as that file said at the base (a workload
    moved, or its pool renamed). A workload new at the base, or placed then where the
    base declares no pool, has no entry: today's pool is all there is to judge it by.
    """
    from policylint.model.load import LoadLimits

    if change.commit is None or change.top is None:
        return {}
    limits = limits or LoadLimits()
    changed = {os.path.realpath(p) for p in change.files}
    mine = {os.path.realpath(w.doc.source.path): w for w in model.workloads.values()}
    folder = Path(os.path.realpath(change.top))
    held = placements_at(folder, change.commit.hexsha, [Path(p) for p in sorted(changed & set(mine))], limits)
    placed = {name: where for _, name, where, _ in held if name is not None}
    moved: tuple[dict[str, Any], dict[str, Any]] | None = None
    by_file: dict[str, list[tuple[str, str]]] = {}
    for file, _, where, _ in held:
        by_file.setdefault(os.path.join(folder, file), []).append(where)
    out: dict[str, PoolThen] = {}
    for name, w in sorted(model.workloads.items()):
        if w.pool is None:
            continue
        real = os.path.realpath(w.doc.source.path)
        now = placement(w.spec)
        # a workload renamed in its own file (the file's one workload then) was placed where that one was
        then_placed = placed.get(name)
        if then_placed is None and real in changed and len(by_file.get(real, ())) == 1:
            then_placed = by_file[real][0]
        if then_placed is None and real in changed:
            # its file moved (git mv), or it was renamed beside others: found at the base by its name in any
            # file, else by the concurrency trace it cites (red team, 2026-12-06, round 16: +149 and +58)
            if moved is None:
                moved = workloads_at(folder, change.commit.hexsha, Path(model.root), limits)
            trace = w.measurements.get("concurrency")
            cited = os.path.realpath(trace.path) if trace is not None and trace.path is not None else None
            # ... or by the trace its own was moved from (renamed and moved in one change: red team, 2026-12-07)
            then_placed = moved[0].get(name) or (
                (moved[1].get(cited) or moved[1].get(change.renamed.get(cited, ""))) if cited is not None else None)
        if real not in changed or then_placed == now:
            # admitted through a queue: the pool the base's own queue led to, whatever today's names (a
            # ClusterQueue renamed, or two swapping names: red team, 2026-12-06, rounds 12 and 14)
            queued = by_name.get(now) if now is not None and now[0].startswith("queue:") else None
            found = queued if queued is not None else then.get(w.pool.qualified)
        else:
            found = by_name.get(then_placed) if then_placed is not None else None
        if found is not None:
            out[name] = found
    return out


def renamed_pools(model: Model, then: dict[str, PoolThen], measured: dict[str, PoolThen]) -> dict[str, PoolThen]:
    """``then`` with each pool the base does not declare found again by its workloads, when they all ran in one.

    A pool renamed in the change (``training`` to ``training-h100``) is not found by its
    name, and without a base every history rule passed it (red team, 2026-12-06, round 11:
    a renamed pool raised from 392 to 450 GPUs). A pool whose placed workloads all ran, at
    the base, in one pool is that pool - also when another pool took the old name, and when
    it has a namesake at the base that ran other workloads (two queues that swapped names).
    A pool the base does not declare whose workloads ran in several is the one most of them
    ran in (then the most GPUs owned), the others' workloads its newcomers: merged under a
    new name, it is judged as a merge into an old name is.
    """
    out = dict(then)
    for pool in model.pools:
        placed = [measured[w.name] for w in pool.workloads if w.name in measured]
        if not placed or len(placed) != len(pool.workloads):
            continue
        came = {id(p): p for p in placed}
        if len(came) == 1:
            # also over a pool of the same name at the base: two ClusterQueues that swapped names are each
            # the pool their workloads ran in, not the namesake (red team, 2026-12-06, round 14)
            out[pool.qualified] = placed[0]
        elif pool.qualified not in out:
            # merged from several pools under a new name (round 14: +8 owned GPUs unjudged): the pool most
            # of them ran in, the rest its newcomers - as a merge into an old name is judged
            count = {key: sum(1 for p in placed if id(p) == key) for key in came}
            out[pool.qualified] = max(came.values(), key=lambda p: (count[id(p)], p.owned_gpus, p.key))
    return out


def previous_pools(
    where: Path, rev: str, files: list[Path], limits: LoadLimits, defined: set[tuple[str, str]] | None = None
) -> set[tuple[str, str]]:
    """(cluster, pool) of every Workload document the ``files`` held at revision ``rev``; for one admitted
    through a scheduler queue, (``"queue:<scheduler>"``, the queue's name); and each pool a Proposal
    document of theirs asked GPUs for (the gate fuzz target: a proposal moved to another pool left the
    first below its baseline, PL104, and the hook did not look there). With ``defined``, the names the
    files' documents defined at ``rev`` are added to it (see :func:`policylint.engine.widen.lost_name`).

    A workload moved to another pool changes the pool it left as much as the one it
    joined (the old pool loses its demand), but only its new placement is written in
    the working tree: a narrowed run reads the old one here and judges that pool too.
    One ``git cat-file --batch`` for all the files (plain git, as on every commit's
    path); a file that did not exist at ``rev``, is over the size limit, does not parse,
    or a repository without git gives nothing.
    """
    requested: list[tuple[str, str]] = []
    placed = {placed for _, _, placed, _ in placements_at(where, rev, files, limits, requested, defined)}
    return placed | set(requested)


def same_traces(change: Change, model: Model, limits: Any, candidates: set[str], moved: set[str] | None = None) -> set[str]:
    """Of the changed measurement files in ``candidates`` (real paths), those that read as they read at the base.

    PL950 asks whether a pool's evidence changed. A file whose bytes changed but whose
    reading did not (a blank line appended, a column reformatted, rows reordered) is no
    new evidence: each such file is read at the base with the same reader and options
    as today, for every role a workload cites it in, and what the calculator takes from it
    is compared exactly - a concurrency trace's times, values and usable samples; a job
    list's jobs (duration and GPUs of each, in any row order), its latest end and the rows
    its filters dropped; a VRAM trace's residency facts; a tolerance evidence document's
    words (red team, 2026-12-06: a job list sorted again, a blank line in another, were new
    evidence for 61 more GPUs). A file that did not exist at the base, is larger than the
    trace limit there, or does not read (then or now) counts as changed; so does a file one
    of its citations reads differently. The files that read as the base's samples moved in time
    (:data:`MOVED`) are added to ``moved``.
    """
    import tempfile

    from policylint.readers.limits import DEFAULT_LIMITS
    from policylint.writer import write_file

    commit, top = change.commit, change.top
    if commit is None or top is None or not candidates:
        return set()
    cap = (limits or DEFAULT_LIMITS).max_file_bytes
    alike: dict[str, bool] = {}
    with tempfile.TemporaryDirectory(prefix="policylint-base-") as scratch:
        copies: dict[str, Path | None] = {}
        for w in sorted(model.workloads.values(), key=lambda w: w.name):
            for role, ref in sorted(w.measurements.items()):
                if ref.path is None:
                    continue
                real = os.path.realpath(ref.path)
                if real not in candidates:
                    continue
                if real not in copies:
                    copies[real] = _base_copy(commit, top, real, cap, Path(scratch), write_file)
                old = copies[real]
                same = old is not None and _reads_alike(role, ref, old, w, limits)
                if same == MOVED and moved is not None:
                    moved.add(real)  # per citation: a column moved in time beside another one edited (round 14)
                alike[real] = bool(same) and alike.get(real, True)  # alike only when every citation reads alike
    return {real for real, same in alike.items() if same}


def _base_copy(commit: Any, top: Path, real: str, cap: int, scratch: Path, write_file: Any) -> Path | None:
    """A scratch copy of ``real`` as the base revision holds it (None when it holds none, or too large)."""
    try:
        rel = Path(real).relative_to(top.resolve()).as_posix()
        blob = commit.tree / rel
        if blob.size > cap:
            return None
        old = scratch / f"{len(os.listdir(scratch))}-{Path(real).name}"
        # a scratch copy the readers open like the file itself, written as every file is
        write_file(old, blob.data_stream.read(), root=None, explicit=True, durable=False, mode=0o600,
                   what="the base revision of a measurement")
    except (KeyError, ValueError, TypeError, AttributeError, OSError, PolicylintError):
        return None
    return old


MOVED = "moved"  # what :func:`_reads_alike` answers for a trace holding the base's samples moved in time


def _reads_alike(role: str, ref: Any, old: Path, w: Any, limits: Any) -> bool | str:
    """True when ``old`` gives what ``ref``'s file gives today, read as ``w`` cites it in ``role``; :data:`MOVED` when
    today's concurrency trace holds the base's samples moved in time (re-timed, or reordered within the day)."""
    import dataclasses

    import numpy as np

    from policylint import traces
    from policylint.errors import MeasurementError
    from policylint.measure.reading import reader_arguments

    try:
        if role == "concurrency":
            from policylint.measure.workload import declared_exclusions
            from policylint.readers.series import apply_exclusions

            options = reader_arguments(ref, limits, "trace")
            # the ranges the workload leaves out are no evidence either way (red team, 2026-12-06, round 9:
            # one sample edited inside a declared incident was "new evidence" for 12 GPUs on equal bands)
            left_out = declared_exclusions(w, ref)[0]
            raw_then, raw_now = traces.read_series(old, **options), traces.read_series(ref.path, **options)
            then, now = apply_exclusions(raw_then, left_out), apply_exclusions(raw_now, left_out)
            if (then.step_seconds == now.step_seconds and np.array_equal(then.times, now.times)
                    and np.array_equal(then.valid, now.valid)
                    and np.array_equal(then.values, now.values, equal_nan=True)):
                return True
            # the same samples under other times (a false UTC offset, red team round 11) are no new evidence,
            # nor the same values reordered within each day at their times (nights rotated, round 8 of 2026-12-07)
            from policylint.measure.integrity.retiming import reordered, retimed

            if (retimed(raw_then.times, raw_then.values, raw_now.times, raw_now.values)
                    or reordered(then.times, then.values, now.times, now.values)):
                return MOVED
            return False
        if role == "durations":
            options = reader_arguments(ref, limits, "jobs")
            a, b = traces.read_jobs(old, **options), traces.read_jobs(ref.path, **options)
            oa, ob = np.lexsort((a.gpus, a.durations)), np.lexsort((b.gpus, b.durations))
            return bool(np.array_equal(a.durations[oa], b.durations[ob]) and np.array_equal(a.gpus[oa], b.gpus[ob])
                        and a.last_time == b.last_time and a.notes == b.notes)
        if role in ("vram", "vram_activity"):
            from policylint.measure.vram import vram_trace

            vref, activity = w.measurements.get("vram"), w.measurements.get("vram_activity")
            if vref is None or vref.path is None:
                return False
            if role == "vram":
                then_ref, then_activity = dataclasses.replace(vref, path=old), activity
            else:
                then_ref, then_activity = vref, dataclasses.replace(ref, path=old)
            return bool(vram_trace(w, then_ref, limits, then_activity) == vram_trace(w, vref, limits, activity))
        if role == "evidence":
            words = [p.read_text(encoding="utf-8", errors="replace").split() for p in (old, ref.path)]
            return words[0] == words[1]
    except (KeyError, ValueError, TypeError, AttributeError, OSError, MeasurementError, PolicylintError):
        return False
    return False

