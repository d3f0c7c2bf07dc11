"""The path shortcuts of a run give the answers of the plain computations.

* :class:`~policylint.model.load.RealPaths` lists a busy folder once instead of an
  ``lstat`` per file: its answers stay ``os.path.realpath``'s, and a folder it
  cannot list falls back to the ``lstat``;
* :func:`~policylint.model.resolve.check_reference` takes a regular file from that
  listing without a ``stat``: the findings on links, folders and escapes are the same;
* :func:`~policylint.report.paths.rebase` works on text: the same repository paths
  as ``os.path.relpath`` on the joined ``Path``;
* :func:`~policylint.engine.scope.reach` hands the files it found unchanged to
  :class:`~policylint.engine.scope.Reach`, whose answers stay those of its own test
  (a hard link of a changed file included), and the narrowing reuses the reach the
  linter was given;
* :func:`~policylint.model.load.discover` yields files in ``Path`` order.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policylint.engine.linter import LintOptions, lint
from policylint.engine.result import LintResult
from policylint.engine.scope import Reach, narrow, reach
from policylint.finding import Finding, Severity
from policylint.model.load import RealPaths, discover, discover_real, display_path, display_real, load_file
from policylint.model.load.files import child_path, folder_text
from policylint.model.resolve import References, check_reference, resolve
from policylint.report import paths as report_paths

needs_symlinks = pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs symlinks")

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)

CLUSTER = """\
apiVersion: policylint/v1
kind: Cluster
metadata:
  name: prod
spec:
  pools:
    - name: batch
      gpu: {model: H100, memoryGiB: 80}
      reservedGpus: 4
      serves: [batch]
"""


def workload(name: str, trace: str) -> str:
    return (
        "apiVersion: policylint/v1\nkind: Workload\nmetadata:\n"
        f"  name: {name}\nspec:\n  class: batch\n  gpusPerReplica: 1\n  pool: batch\n"
        f"  concurrency:\n    trace:\n      path: {trace}\n"
    )


def _tree(tmp_path: Path) -> Path:
    """A folder of plain files, links inside and outside, a link loop, a folder and a broken link."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.csv").write_text("t,v\n")
    repo = tmp_path / "repo"
    (repo / "m").mkdir(parents=True)
    for i in range(40):
        (repo / "m" / f"t{i}.csv").write_text("t,v\n")
    (repo / "m" / "inside.csv").symlink_to(repo / "m" / "t0.csv")
    (repo / "m" / "out.csv").symlink_to(tmp_path / "outside" / "secret.csv")
    (repo / "m" / "broken.csv").symlink_to(tmp_path / "gone.csv")
    (repo / "m" / "loop.csv").symlink_to(repo / "m" / "loop.csv")
    (repo / "m" / "folder.csv").mkdir()
    (repo / "m" / "linked").symlink_to(tmp_path / "outside", target_is_directory=True)
    return repo


CASES = [
    "m/t0.csv", "m/t39.csv", "m/inside.csv", "m/out.csv", "m/broken.csv", "m/loop.csv", "m/folder.csv",
    "m/linked", "m/linked/secret.csv", "m/missing.csv", "m/T0.csv", "m/t0.csv/below", "m/./t1.csv", "m/../m/t2.csv",
    "m/", "m/.", "m/..",
]


@needs_symlinks
@pytest.mark.parametrize("list_after", [0, 1, 1000])
def test_real_paths_from_a_folder_listing_equal_os_realpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, list_after: int
) -> None:
    repo = _tree(tmp_path)
    monkeypatch.chdir(repo)
    monkeypatch.setattr(RealPaths, "LIST_AFTER", list_after)
    real = RealPaths()
    for case in CASES + [str(repo / c) for c in CASES] + [f"m/t{i}.csv" for i in range(40)]:
        assert real(case) == os.path.realpath(case), case
    with pytest.raises(ValueError):
        RealPaths()("m/t1\x00.csv")


@needs_symlinks
def test_a_folder_that_cannot_be_listed_is_asked_file_by_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _tree(tmp_path)
    monkeypatch.chdir(repo)
    monkeypatch.setattr(RealPaths, "LIST_AFTER", 0)

    def refuse(path: object) -> object:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "scandir", refuse)
    real = RealPaths()
    for case in CASES:
        assert real(case) == os.path.realpath(case), case
        assert real.regular_file(case) is None, case  # nothing is known without a stat


@needs_symlinks
def test_regular_files_are_told_by_the_listing_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _tree(tmp_path)
    monkeypatch.chdir(repo)
    monkeypatch.setattr(RealPaths, "LIST_AFTER", 0)
    real = RealPaths()
    assert real.regular_file("m/t3.csv") == os.path.realpath("m/t3.csv")
    assert real.regular_file(str(repo / "m" / "t3.csv")) == os.path.realpath("m/t3.csv")
    # links (even to a regular file), folders, missing names and other spellings: not told
    for case in ("m/inside.csv", "m/out.csv", "m/broken.csv", "m/loop.csv", "m/folder.csv", "m/missing.csv", "m/T3.csv", "m/", "m/.."):
        assert real.regular_file(case) is None, case


@needs_symlinks
def test_references_are_judged_alike_with_and_without_folder_listings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Links inside and outside, broken links, folders, escapes: the same findings and paths."""
    repo = _tree(tmp_path)
    (repo / "w").mkdir()
    traces = [f"../{c}" for c in CASES if not c.endswith(("/", ".", ".."))] + ["../../outside/secret.csv", "../m"]
    traces += [f"../m/t{i}.csv" for i in range(40)]
    (repo / "c.yaml").write_text(CLUSTER)
    for i, trace in enumerate(traces):
        (repo / "w" / f"w{i}.yaml").write_text(workload(f"w{i}", trace))
    docs = [d for p in sorted(repo.rglob("*.yaml")) for d in load_file(p, p.relative_to(repo).as_posix()).documents]

    def resolved(list_after: int) -> tuple[list[tuple[str, str, int, str]], dict[str, str]]:
        monkeypatch.setattr(RealPaths, "LIST_AFTER", list_after)
        model, findings = resolve(docs, repo)
        refs = {name: str(w.measurements["concurrency"].path) for name, w in model.workloads.items()}
        return [(f.code, f.file, f.line, f.message) for f in findings], refs

    plain = resolved(10**6)
    assert resolved(0) == plain
    assert resolved(5) == plain
    codes = {message.split("'")[1]: code for code, _, _, message in plain[0]}
    assert codes["../m/out.csv"] == "PL023" and codes["../m/linked/secret.csv"] == "PL023"
    assert codes["../m/broken.csv"] == "PL023" and codes["../m/folder.csv"] == "PL022"
    assert "../m/inside.csv" not in codes and "../m/t39.csv" not in codes


def _relative_plain(path: str, root: str) -> str | None:
    rel = os.path.relpath(path, root)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return None
    return Path(rel).as_posix()


def test_repository_paths_from_text_equal_relpath() -> None:
    for root in ("/", "/repo", "/repo/sub"):
        for path in ("/", "/repo", "/repo/a.yaml", "/repo/sub/b.yaml", "/repository/a.yaml", "/rep", "/repo/..x/c.yaml", "/x"):
            assert report_paths._relative(path, root) == _relative_plain(path, root), (path, root)


@needs_symlinks
def test_rebased_paths_equal_those_of_the_joined_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    (repo / "a" / "b").mkdir(parents=True)
    (repo / "a" / "x.yaml").write_text("")
    (repo / "a" / "link.yaml").symlink_to(repo / "a" / "x.yaml")
    (tmp_path / "out.yaml").write_text("")
    (repo / "a" / "away.yaml").symlink_to(tmp_path / "out.yaml")
    (tmp_path / "alias").symlink_to(repo, target_is_directory=True)
    displays = [
        "x.yaml", "./x.yaml", "b//../x.yaml", "link.yaml", "away.yaml", "missing.yaml", "../a/x.yaml", "../../out.yaml",
        "", ".", "b/", str(repo / "a" / "x.yaml"), str(tmp_path / "alias" / "a" / "x.yaml"),
    ]
    real = RealPaths()
    root = os.path.realpath(repo)
    for cwd in (repo / "a", tmp_path / "alias" / "a"):
        move = report_paths._Rebaser(repo, cwd)
        for display in displays:
            expected = _relative_plain(real(Path(cwd) / display), root) or display
            assert move(display) == expected, (cwd, display)
            assert move(display, repo) == (_relative_plain(real(repo / display), root) or display), display


def test_a_finding_whose_path_stays_is_kept_as_it_is(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "a").mkdir(parents=True)
    stays = Finding("../../outside.yaml", 1, 1, "PL1", "n", Severity.ERROR, "m")
    moves = Finding("x.yaml", 2, 1, "PL1", "n", Severity.ERROR, "m")
    result = LintResult([moves, stays], {}, None, 1, 2)
    out = report_paths.rebase(result, repo, repo, cwd=repo / "a")
    assert out.findings[0] is stays
    assert out.findings == [stays, Finding("a/x.yaml", 2, 1, "PL1", "n", Severity.ERROR, "m")]


def _repo_with_hard_links(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "w").mkdir(parents=True)
    (repo / "t").mkdir()
    (repo / "c.yaml").write_text(CLUSTER)
    for i in range(4):
        (repo / "t" / f"w{i}.csv").write_text("timestamp,v\n2026-11-30T00:00:00Z,1\n")
        (repo / "w" / f"w{i}.yaml").write_text(workload(f"w{i}", f"../t/w{i}.csv"))
    # w4's trace is a hard link of w0's: the same file to reach, another real path
    os.link(repo / "t" / "w0.csv", repo / "t" / "w4.csv")
    (repo / "w" / "w4.yaml").write_text(workload("w4", "../t/w4.csv"))
    return repo


@pytest.mark.skipif(not hasattr(os, "link"), reason="needs hard links")
@pytest.mark.parametrize("changed", [["t/w0.csv"], ["w/w1.yaml"], ["c.yaml"], ["t/gone.csv"], []])
def test_reach_answers_equal_its_own_test_without_the_files_found_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changed: list[str]
) -> None:
    repo = _repo_with_hard_links(tmp_path)
    monkeypatch.chdir(repo)
    result = lint([repo], LintOptions(root=repo, now=NOW))
    assert result.model is not None
    paths = [Path(c) for c in changed]
    seeded = reach(result.model, paths)
    assert not changed or seeded.unchanged  # the shortcut is taken
    plain = Reach(seeded.files, seeded.subjects, seeded.neighbours, seeded.skipped)
    asked = [p.relative_to(repo).as_posix() for p in sorted(repo.rglob("*")) if p.is_file()]
    asked += [str(repo / a) for a in asked] + ["t/gone.csv", "w/../t/w0.csv"]
    for file in asked:
        assert seeded.changed(file) == plain.changed(file), file
    findings = list(result.findings)
    assert narrow(result, paths, reached=seeded).findings == narrow(_copy(result, findings), paths).findings


def _copy(result: LintResult, findings: list[Finding]) -> LintResult:
    return LintResult(findings, result.sources, result.model, result.documents, result.files)


def test_walked_files_come_in_path_order(tmp_path: Path) -> None:
    # "a-b" sorts before "a/..." as text, after "a" as a path part
    for rel in ("a/b.yaml", "a-b/x.yaml", "a/c/d.yml", "a.yaml", "a/b/e.yaml", "b.yaml", "a0/z.yaml", "A/q.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x: 1\n")
    found = [p for p, _ in discover([tmp_path])]
    assert found == sorted(found, key=lambda p: p.parts)
    assert found == sorted(Path(d, n) for d, _, names in os.walk(tmp_path) for n in names)
    assert {p.relative_to(tmp_path).as_posix() for p in found} == {
        "a/b.yaml", "a-b/x.yaml", "a/c/d.yml", "a.yaml", "a/b/e.yaml", "b.yaml", "a0/z.yaml", "A/q.yaml"
    }


# --------------------------------------------------------------------------- paths made from their folder's

_names = st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda n: n not in (".", "..") and os.sep not in n
)
_folders = st.sampled_from([".", "/", "a", "a/b", "/a", "/a/b", "./a", "a/./b", "a//b", "/a/b/", "..", "../a"])


@settings(max_examples=300, deadline=None)
@given(_folders, _names)
def test_a_child_path_equals_the_joined_path(folder: str, name: str) -> None:
    parent = Path(folder)
    child = child_path(parent, folder_text(parent), name)
    plain = parent / name
    assert str(child) == str(plain) and os.fspath(child) == os.fspath(plain)
    assert child == plain and hash(child) == hash(plain) and child.parts == plain.parts
    assert child.name == plain.name and child.parent == plain.parent and child.as_posix() == plain.as_posix()
    assert type(child) is type(plain)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "..", ".", "c.csv", ""]), min_size=1, max_size=5))
def test_reference_paths_from_their_folder_equal_path(parts: list[str]) -> None:
    text = os.path.normpath(os.path.join("/repo", *parts))  # as check_reference makes it
    refs = References(Path("/repo"), RealPaths())
    made = refs.path(text)
    assert made == Path(text) and str(made) == str(Path(text)) and made.parts == Path(text).parts
    assert refs.path(text) == made  # the folder's Path taken again


@needs_symlinks
@pytest.mark.parametrize("where", ["repo", "above", "inside"])
def test_walked_files_come_with_their_real_paths_and_displays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """discover_real's real paths and display_real's displays are realpath's and display_path's (links included)."""
    repo = _tree(tmp_path)
    (repo / "w").mkdir()
    (repo / "w" / "a.yaml").write_text("x: 1\n")
    (repo / "w" / "b.yml").write_text("x: 1\n")
    (repo / "w" / "link.yaml").symlink_to(repo / "w" / "a.yaml")  # the same real path: yielded once
    (repo / "w" / "away.yaml").symlink_to(tmp_path / "outside" / "secret.csv")
    (repo / "m" / "x.yaml").write_text("x: 1\n")
    cwd = {"repo": repo, "above": tmp_path, "inside": repo / "w"}[where]
    monkeypatch.chdir(cwd)
    for given in (Path("."), Path(os.path.relpath(repo, cwd)), repo, repo / "w" / "a.yaml"):
        real = RealPaths()
        walked = list(discover_real([given], real=real))
        assert [(p, e) for p, _, e in walked] == list(discover([given]))
        for path, found, explicit in walked:
            assert (found is None) == explicit
            if found is not None:
                assert found == os.path.realpath(path) == real(path)
                assert display_real(path, found, real) == display_path(path) == display_path(path, real=RealPaths())


@needs_symlinks
@pytest.mark.parametrize("relative_root", [False, True])
def test_a_runs_references_equal_check_reference_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative_root: bool
) -> None:
    """resolve's References (root, folders and Paths made once) answer as a fresh check_reference per reference."""
    repo = _tree(tmp_path)
    (repo / "w" / "deep").mkdir(parents=True)
    traces = [f"../{c}" for c in CASES] + ["../../outside/secret.csv", "../m", "/etc/passwd", "~/x.csv", "../m/t1\x00.csv"]
    traces += [f"../../{c}" for c in CASES[:4]] + ["../" + "x" * 300 + ".csv"]
    (repo / "c.yaml").write_text(CLUSTER)
    for i, trace in enumerate(traces):
        folder = repo / "w" / ("deep" if i % 2 else "")
        rel = trace if folder == repo / "w" else "../" + trace
        (folder / f"w{i}.yaml").write_text(workload(f"w{i}", json_text(rel)))
    monkeypatch.chdir(repo if relative_root else tmp_path)
    root = Path(".") if relative_root else repo
    docs = [
        d
        for p in sorted((root / "w").rglob("*.yaml"))
        for d in load_file(p, p.as_posix()).documents
    ]
    model, findings = resolve(docs, root)
    by_file = {(f.file, f.message) for f in findings}
    for w in model.workloads.values():
        ref = w.measurements["concurrency"]
        path, problem = check_reference(w.doc, ref.doc_path, str(ref.spec["path"]), root)
        assert ref.path == path and str(ref.path) == str(path)
        assert (problem is None) or (problem.file, problem.message) in by_file
        on_it = [f for f in findings if f.file == w.doc.file and f.doc_path.startswith("spec/concurrency")]
        assert on_it == ([problem] if problem else [])


def json_text(text: str) -> str:
    import json

    return json.dumps(text)


@needs_symlinks
@pytest.mark.parametrize("named", [["m/t1.csv"], ["m"], ["m/inside.csv", "m/linked"], ["."], ["m/missing.csv"]])
def test_a_scope_asks_the_runs_real_paths_as_realpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: list[str]
) -> None:
    """Scope.holds with the run's RealPaths (a folder resolved once, listed when busy) answers as with realpath."""
    from policylint.engine.linter import Scope

    repo = _tree(tmp_path)
    monkeypatch.chdir(repo)
    monkeypatch.setattr(RealPaths, "LIST_AFTER", 2)
    paths = [Path(n) for n in named]
    shared, plain = Scope.of(paths, repo, RealPaths()), Scope.of(paths, repo)
    asked: list[Path | str] = [*CASES, *(str(repo / c) for c in CASES), *(f"m/t{i}.csv" for i in range(40))]
    asked += [Path(a) for a in asked] + ["../outside/secret.csv", str(tmp_path / "outside" / "secret.csv")]
    for file in asked:
        assert shared.holds(file) == plain.holds(file), file


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "..", ".", "w.yaml", "", "/"]), min_size=1, max_size=5), max_size=8))
def test_a_declaring_files_folder_made_once_per_folder_equals_abspaths(paths: list[list[str]]) -> None:
    refs = References(Path("."), RealPaths())
    for parts in paths:
        source = "/".join(parts)
        if "/" not in parts[0] and not source.strip("/"):
            continue
        assert refs.base_of(source) == os.path.dirname(os.path.abspath(source)), source
