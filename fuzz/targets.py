"""Fuzz targets: each feeds one mutated input to a public entry point and checks the contract.

The contract (README, "Hardening"): no input makes policylint print an internal
error, hang, or exceed its memory bound. A target raises
:class:`ContractViolation` (or lets an unexpected exception through) when the
contract is broken; expected refusals - findings, ``PolicylintError`` - are
fine.

Targets:

* ``load`` - the YAML loader on mutated documents, parsed with libyaml and with
  the pure-Python parser (the results must be identical), then validation and
  suppression-comment scanning of what was loaded;
* ``traces`` - ``policylint.traces.read_series`` / ``read_jobs`` on mutated CSV
  series, request logs, job lists and Prometheus JSON;
* ``config`` - ``policylint config`` on a mutated ``.policylint.yaml`` or
  ``pyproject.toml``;
* ``check`` - the full ``policylint check`` on a copy of ``examples/good`` with
  one file (a document, a measurement or the configuration) mutated.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from mutate import mutated

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
CORPUS = Path(__file__).resolve().parent / "corpus"
#: Measurement seeds are cut to their first lines: the readers' paths are the same, the runs faster.
SEED_LINES = 300


class ContractViolation(AssertionError):
    """policylint answered an input in a way the contract forbids."""


@dataclass
class Target:
    name: str
    seeds: Callable[[], list[Any]]
    strategy: Callable[[list[Any]], st.SearchStrategy[Any]]
    run: Callable[[Any], object]


def _head(path: Path, lines: int = SEED_LINES) -> bytes:
    with path.open("rb") as handle:
        return b"".join(line for _, line in zip(range(lines), handle))


def _workdir() -> Path:
    """One scratch folder per process (targets overwrite their files in it)."""
    global _WORK
    if _WORK is None:
        _WORK = Path(tempfile.mkdtemp(prefix="policylint-fuzz-"))
    return _WORK


_WORK: Path | None = None


def _cli(args: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
    """The real entry point in-process; (exit code, stdout, stderr)."""
    from policylint.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:
                code = int(exc.code or 0)
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def _expect_clean_exit(code: int, out: str, err: str, allowed: Sequence[int], json_out: bool) -> None:
    if code not in allowed:
        raise ContractViolation(f"exit code {code}; stderr: {err[:500]!r}")
    if "internal error" in err or "Traceback" in err:
        raise ContractViolation(f"internal error: {err[:1000]!r}")
    if code == 2:
        if err.count("\n") != 1 or not err.startswith("policylint: error: "):
            raise ContractViolation(f"a tool error must be one line: {err[:1000]!r}")
        if out:
            raise ContractViolation(f"output written before an error: {out[:200]!r}")
    elif json_out:
        json.loads(out)


# -- load --------------------------------------------------------------------------------------------


def _yaml_seeds() -> list[bytes]:
    files = sorted(EXAMPLES.rglob("*.yaml")) + sorted((CORPUS / "yaml").glob("*"))
    return [p.read_bytes() for p in files if p.is_file()]


_RULESET: Any = None


def _snapshot(source: Any) -> tuple[Any, ...]:
    docs = [(d.index, repr(d.data), sorted(d.positions._values.items(), key=repr), sorted(d.positions._keys.items(), key=repr)) for d in source.documents]
    findings = [(f.code, f.line, f.column, f.message, f.doc_index) for f in source.findings]
    return (docs, findings)


def run_load(data: bytes) -> None:
    import policylint.model.load as load
    import policylint.model.load.compose as compose
    from policylint.engine.filter import scan_suppressions
    from policylint.resources import rules_dir
    from policylint.engine.ruleset import load_rules
    from policylint.model.validate import validate_document

    global _RULESET
    if _RULESET is None:
        _RULESET = load_rules([rules_dir()])
    path = _workdir() / "doc.yaml"
    path.write_bytes(data)
    snapshots = []
    saved = compose.LIBYAML
    try:
        for libyaml in ([True, False] if saved else [False]):
            compose.LIBYAML = libyaml
            source = load.load_file(path, "doc.yaml")
            snapshots.append(_snapshot(source))
    finally:
        compose.LIBYAML = saved
    if len(snapshots) == 2 and snapshots[0] != snapshots[1]:
        raise ContractViolation(f"libyaml and pure-Python results differ:\n{snapshots[0]!r}\n{snapshots[1]!r}"[:3000])
    for f in source.findings:
        if f.line < 1 or f.column < 1:
            raise ContractViolation(f"finding without a position: {f}")
    for doc in source.documents:
        if doc.is_policylint:
            for f in validate_document(doc):
                if f.line < 1 or f.column < 1:
                    raise ContractViolation(f"validation finding without a position: {f}")
    scan_suppressions(source, _RULESET)


# -- traces ------------------------------------------------------------------------------------------

TRACE_FORMS = ("csv", "requests", "prometheus", "jobs")


def _trace_seeds() -> list[tuple[str, bytes]]:
    seeds: list[tuple[str, bytes]] = []
    for path in sorted(EXAMPLES.rglob("measurements/traces/*.csv")):
        seeds.append(("csv", _head(path)))
    for path in sorted(EXAMPLES.rglob("measurements/jobs/*.csv")):
        seeds.append(("jobs", _head(path)))
    for path in sorted((CORPUS / "traces").glob("*")):
        form = "prometheus" if path.suffix == ".json" else "jobs" if "jobs" in path.name else (
            "requests" if "requests" in path.name else "csv"
        )
        seeds.append((form, path.read_bytes()))
    return seeds


def _trace_strategy(seeds: list[tuple[str, bytes]]) -> st.SearchStrategy[tuple[str, bytes]]:
    by_form = {form: [d for f, d in seeds if f == form] for form in TRACE_FORMS}
    everything = [d for _, d in seeds]

    def one(form: str) -> st.SearchStrategy[tuple[str, bytes]]:
        # mostly the form's own seeds; sometimes another form's, to cross the readers' assumptions
        pool = st.sampled_from([by_form[form] or everything, everything])
        return pool.flatmap(lambda chosen: mutated(chosen)).map(lambda d: (form, d))

    return st.sampled_from(TRACE_FORMS).flatmap(one)


def run_traces(item: tuple[str, bytes]) -> None:
    from policylint.errors import PolicylintError
    from policylint.traces import read_jobs, read_series

    form, data = item
    path = _workdir() / ("trace.json" if form == "prometheus" else "trace.csv")
    path.write_bytes(data)
    try:
        if form == "jobs":
            read_jobs(path, display_name="trace.csv")
        else:
            read_series(path, format=form, display_name=path.name)
    except PolicylintError:
        pass  # a bad measurement is reported, which is the point


# -- config ------------------------------------------------------------------------------------------


def _config_seeds() -> list[tuple[str, bytes]]:
    seeds = [("yaml", p.read_bytes()) for p in sorted(EXAMPLES.rglob(".policylint.yaml"))]
    for path in sorted((CORPUS / "config").glob("*")):
        seeds.append(("toml" if path.suffix == ".toml" else "yaml", path.read_bytes()))
    return seeds


def _config_strategy(seeds: list[tuple[str, bytes]]) -> st.SearchStrategy[tuple[str, bytes]]:
    def one(kind: str) -> st.SearchStrategy[tuple[str, bytes]]:
        return mutated([d for k, d in seeds if k == kind]).map(lambda d: (kind, d))

    return st.sampled_from(["yaml", "toml"]).flatmap(one)


def run_config(item: tuple[str, bytes]) -> None:
    kind, data = item
    folder = _workdir() / "config"
    folder.mkdir(exist_ok=True)
    name = "pyproject.toml" if kind == "toml" else ".policylint.yaml"
    (folder / name).write_bytes(data)
    code, out, err = _cli(["config", "--config", name], cwd=folder)
    _expect_clean_exit(code, out, err, (0, 2), json_out=True)
    # the key a warm run would remember the settings under: any settings, no internal error
    from policylint.errors import PolicylintError
    from policylint.model.config_cache import config_key
    from policylint.model.config_checks import check_plain
    from policylint.model.config_files import read_config_file

    try:
        raw = read_config_file(folder / name)
        if isinstance(raw, dict):
            check_plain(raw, name)
            config_key(raw)
    except PolicylintError:
        pass


# -- check -------------------------------------------------------------------------------------------

_REPO_COPY: Path | None = None


def _check_repo() -> Path:
    global _REPO_COPY
    if _REPO_COPY is None:
        _REPO_COPY = _workdir() / "repo"
        if _REPO_COPY.exists():
            shutil.rmtree(_REPO_COPY)
        shutil.copytree(EXAMPLES / "good", _REPO_COPY)
    return _REPO_COPY


def _check_seeds() -> list[tuple[str, bytes]]:
    repo = EXAMPLES / "good"
    # fuzz/run.py --check-files yaml leaves the measurements alone (while a reader bug is open)
    suffixes = (".yaml",) if os.environ.get("POLICYLINT_FUZZ_CHECK_FILES") == "yaml" else (".yaml", ".csv")
    files = sorted(p for p in repo.rglob("*") if p.is_file() and p.suffix in suffixes)
    return [(p.relative_to(repo).as_posix(), p.read_bytes()) for p in files]


def _check_strategy(seeds: list[tuple[str, bytes]]) -> st.SearchStrategy[tuple[str, bytes]]:
    def one(index: int) -> st.SearchStrategy[tuple[str, bytes]]:
        name, data = seeds[index]
        return mutated([data], max_edits=4).map(lambda d: (name, d))

    return st.integers(0, len(seeds) - 1).flatmap(one)


def run_check(item: tuple[str, bytes]) -> None:
    name, data = item
    repo = _check_repo()
    target = repo / name
    original = (EXAMPLES / "good" / name).read_bytes()
    target.write_bytes(data)
    try:
        code, out, err = _cli(["check", "--format", "json", "--now", "2026-12-01", "."], cwd=repo)
    finally:
        target.write_bytes(original)
    _expect_clean_exit(code, out, err, (0, 1, 2), json_out=True)


TARGETS: dict[str, Target] = {
    "load": Target("load", _yaml_seeds, lambda seeds: mutated(seeds), run_load),
    "traces": Target("traces", _trace_seeds, _trace_strategy, run_traces),
    "config": Target("config", _config_seeds, _config_strategy, run_config),
    "check": Target("check", _check_seeds, _check_strategy, run_check),
}


def all_targets() -> dict[str, Target]:
    """Every target: the ones above, then each ``fuzz/targets_<surface>.py`` module's ``TARGETS``.

    A surface (the writers, the caches, ``pull``, Parquet/Arrow, the command line)
    keeps its targets in a module of its own; the modules are read in name order.
    """
    import importlib

    found = dict(TARGETS)
    for module_path in sorted(Path(__file__).resolve().parent.glob("targets_*.py")):
        module = importlib.import_module(module_path.stem)
        for name, target in module.TARGETS.items():
            if name in found:
                raise ValueError(f"fuzz target {name!r} is defined twice ({module_path.name})")
            found[name] = target
    return found
