"""What a ``--diff`` run knows of the base revision: the pools then, where each workload ran, the demand then.

:func:`history_for` gathers it for the view builder (:class:`policylint.engine.view.History`);
the git and base-revision reading lives in :mod:`policylint.engine.history`.
:func:`baselines_at_base` measures a pool's pooled baseline as the base revision's own files
give it, with the same readers, calculator and pooling as today's run, so that PL950 can ask
whether new measurements back a raise, not only whether some measurement changed.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.engine.history import Change, PoolThen
    from policylint.engine.view import History
    from policylint.model import Model, Pool

#: loads and resolves the repository at a folder as the run does (the linter's own, handed in)
LoadBase = Callable[[Path], "Model | None"]


def history_for(options: Any, model: Model, now: dt.datetime, load_base: LoadBase) -> History | None:
    """The ``--diff`` history of ``model`` (None without ``--diff``); ``options`` are the run's
    :class:`~policylint.engine.linter.LintOptions`, ``load_base`` loads the base revision's files."""
    from policylint.engine.history import measured_on, pools_at_base, renamed_pools, same_traces
    from policylint.engine.view import History

    change = options.change
    if change is None:
        return None
    then, by_name = pools_at_base(change, model, options.limits, options.gpu_resources)
    measured = measured_on(change, model, then, by_name, options.limits)
    then = renamed_pools(model, then, measured)
    before = {q: p.reserved_gpus for q, p in then.items() if p.reserved_gpus is not None}
    change.reserved_before = before
    changed = frozenset(os.path.realpath(p) for p in change.files)
    # PL950's candidates: pools that own more than at the base; of their changed measurements,
    # those that read as they did then are no new evidence
    grown = [p for p in model.pools if p.qualified in then and p.owned_gpus > then[p.qualified].owned_gpus]

    def cited(pool: object) -> set[str]:
        return {os.path.realpath(m.path) for w in pool.workloads for m in w.measurements.values()  # type: ignore[attr-defined]
                if m.path is not None}

    traces = {t for p in grown for t in cited(p)} & changed
    evidence = changed - same_traces(change, model, options.trace_limits, traces)
    # of those, the pools whose evidence did change: is the raise backed by the demand it measures?
    backed = {p.qualified: then[p.qualified] for p in grown if cited(p) & evidence}
    return History(reserved_before=before, changed_files=evidence, pools_then=then, measured_on=measured,
                   baseline_before=baselines_at_base(change, backed, options, now, load_base) if backed else {})


def baselines_at_base(change: Change, wanted: dict[str, PoolThen], options: Any, now: dt.datetime,
                      load_base: LoadBase) -> dict[str, int]:
    """The pooled baseline GPUs each pool of ``wanted`` (today's name -> the pool at the base) had at the base.

    The base revision's policylint documents under the repository's folder are written to a
    scratch folder (each through the one writer), loaded and resolved as today's are; the
    measurements the wanted pools' workloads cite there are written beside them, measured
    and pooled by the same functions as today's (:func:`policylint.measure.run.measure`,
    :func:`policylint.measure.pools.measure_pool`). A pool whose demand the base does not
    give whole (a file missing or unreadable there, a workload unmeasured) has no entry,
    and PL950 then judges only whether its evidence changed, as it always did.
    """
    import tempfile

    from policylint.errors import MeasurementError, PolicylintError

    top, commit = change.top, change.commit
    if top is None or commit is None or not wanted:
        return {}
    folder = Path(os.path.realpath(top))
    home = Path(os.path.realpath(options.repository or options.root))
    try:
        rel = home.relative_to(folder)
    except ValueError:
        return {}
    try:
        with tempfile.TemporaryDirectory(prefix="policylint-base-") as scratch:
            return _measured_at_base(folder, commit.hexsha, rel, Path(scratch), wanted, options, now, load_base)
    except (OSError, ValueError, PolicylintError, MeasurementError, subprocess.SubprocessError):
        return {}


def _measured_at_base(folder: Path, sha: str, rel: Path, scratch: Path, wanted: dict[str, PoolThen],
                      options: Any, now: dt.datetime, load_base: LoadBase) -> dict[str, int]:
    from policylint.measure.pools import measure_pool
    from policylint.measure.run import measure
    from policylint.model import schedulers
    from policylint.model.load.files import SKIPPED_FOLDERS, is_yaml_name
    from policylint.model.needed import Needed

    base_home = scratch / rel
    base_home.mkdir(parents=True, exist_ok=True)
    names = [n for n in _tree(folder, sha, rel)
             if is_yaml_name(n) and not (set(Path(n).parts[:-1]) & SKIPPED_FOLDERS)]
    _write_blobs(folder, sha, names, scratch, options.limits.max_file_bytes)

    def load() -> tuple[Model | None, dict[str, Pool]]:
        base = load_base(base_home)
        if base is None:
            return None, {}
        pools = {p.key: p for p in [*base.pools, *schedulers.all_pools(base)]}
        return base, {q: pools[then.key] for q, then in wanted.items() if then.key in pools}

    # the documents first, for the files the wanted pools' workloads cite; then again with those files
    _, found = load()
    cited: set[str] = set()
    for pool in found.values():
        for w in pool.workloads:
            cited |= _paths_cited(w.doc.data, Path(os.path.realpath(w.doc.source.path)).parent, Path(scratch))
    cap = options.trace_limits.max_file_bytes if options.trace_limits is not None else None
    _write_blobs(folder, sha, sorted(cited), scratch, cap)
    base, found = load()
    if base is None:
        return {}
    members = {w.name: w for p in found.values() for w in p.workloads}
    only = Needed(workloads=frozenset(members), pools=frozenset(p.qualified for p in found.values()),
                  clusters=frozenset(), proposals=frozenset())
    facts, _ = measure(base, now, limits=options.trace_limits, only=only)
    out: dict[str, int] = {}
    for q, pool in sorted(found.items()):
        report = measure_pool(pool, facts).report
        if report is not None and report.baseline is not None:
            out[q] = int(report.baseline)  # pooled bands are whole GPU counts (as pooled_pool_facts reads them)
    return out


def _paths_cited(data: object, declared_in: Path, scratch: Path) -> set[str]:
    """Every ``path`` a document's ``spec`` gives (its measurements and evidence), relative to ``scratch``."""
    out: set[str] = set()
    stack = [data.get("spec")] if isinstance(data, dict) else []
    top = Path(os.path.realpath(scratch))
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "path" and isinstance(value, str) and not os.path.isabs(value):
                    try:
                        out.add(Path(os.path.normpath(declared_in / value)).relative_to(top).as_posix())
                    except ValueError:
                        pass  # outside the repository: refused when read, as today
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return out


def _git(folder: Path, args: list[str], given: bytes | None = None) -> bytes:
    done = subprocess.run(["git", *args], cwd=folder, input=given, capture_output=True, timeout=120, check=False)
    if done.returncode != 0:
        raise OSError(f"git {args[0]} failed")
    return done.stdout


def _tree(folder: Path, sha: str, rel: Path) -> list[str]:
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


def _write_blobs(folder: Path, sha: str, names: list[str], scratch: Path, cap: int | None) -> None:
    """Each of ``names`` as ``sha`` holds it, written under ``scratch`` (one ``git cat-file --batch``)."""
    from policylint.writer import write_file

    names = [n for n in names if "\n" not in n and not Path(n).is_absolute() and ".." not in Path(n).parts]
    if not names:
        return
    out = _git(folder, ["cat-file", "--batch"], "".join(f"{sha}:{n}\n" for n in names).encode())
    at = 0
    for name in names:
        end = out.find(b"\n", at)
        if end < 0:
            return
        head = out[at:end].split()
        at = end + 1
        if len(head) != 3 or head[1] != b"blob" or not head[2].isdigit():
            continue
        size = int(head[2])
        body, at = out[at : at + size], at + size + 1
        if cap is not None and size > cap:
            continue  # refused today too: never read an oversized file from history
        write_file(scratch / name, body, root=None, explicit=True, parents=True, durable=False, mode=0o600,
                   what="the base revision of a file")
