"""Step 3, resolution: broken references are findings at the referencing line.

File references must stay inside the repository root, and a reference that
leaves it is refused before anything is opened.
"""

from __future__ import annotations

import builtins
import io
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli

from policylint.finding import Finding
from policylint.model.load import Document, display_path, load_file
from policylint.model import Model
from policylint.model.resolve import resolve
from policylint.model.validate import validate_document

CLUSTERS = """\
apiVersion: policylint/v1
kind: Cluster
metadata:
  name: prod
spec:
  pools:
    - name: serving
      gpu: {model: H100, memoryGiB: 80}
      reservedGpus: 8
      serves: [inference]
    - name: batch
      gpu: {model: H100, memoryGiB: 80}
      reservedGpus: 4
      serves: [batch]
---
apiVersion: policylint/v1
kind: Cluster
metadata:
  name: staging
spec:
  pools:
    - name: serving
      gpu: {model: L4, memoryGiB: 24}
      reservedGpus: 2
      serves: [inference]
"""


def workload(name: str = "chat", *, pool: str | None = "batch", cluster: str | None = None, trace: str | None = None) -> str:
    lines = [
        "apiVersion: policylint/v1",
        "kind: Workload",
        "metadata:",
        f"  name: {name}",
        "spec:",
        "  class: batch",
        "  gpusPerReplica: 1",
    ]
    if cluster is not None:
        lines.append(f"  cluster: {cluster}")
    if pool is not None:
        lines.append(f"  pool: {pool}")
    if trace is not None:
        lines += ["  concurrency:", "    trace:", f"      path: {trace}"]
    return "\n".join(lines) + "\n"


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def run(root: Path, files: dict[str, str]) -> tuple[Model, list[Finding]]:
    """Write ``files`` under ``root``, load and validate them, then resolve."""
    write(root, files)
    documents: list[Document] = []
    for rel in sorted(files):
        if not rel.endswith(".yaml"):
            continue
        source = load_file(root / rel, rel)
        assert source.findings == []
        for doc in source.documents:
            assert validate_document(doc) == [], rel
            documents.append(doc)
    return resolve(documents, root)


def where(findings: list[Finding]) -> list[tuple[str, str, int, int, str]]:
    return [(f.code, f.file, f.line, f.column, f.message) for f in findings]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    return root


# -- names ------------------------------------------------------------------------------


def test_a_clean_repository_links_workload_to_pool(repo: Path) -> None:
    model, findings = run(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(pool="batch")})
    assert findings == []
    w = model.workloads["chat"]
    assert w.pool is not None and w.pool.qualified == "prod/batch"
    assert model.clusters["prod"].pools["batch"].workloads == [w]


def test_unknown_pool(repo: Path) -> None:
    _, findings = run(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(pool="gpu-farm")})
    assert where(findings) == [
        ("PL020", "w.yaml", 8, 3, "unknown pool 'gpu-farm' (known: batch, serving)"),
    ]
    assert findings[0].name == "unresolved-reference"


def test_unknown_cluster(repo: Path) -> None:
    _, findings = run(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(cluster="dev", pool="batch")})
    assert where(findings) == [("PL020", "w.yaml", 8, 3, "unknown cluster 'dev' (known: prod, staging)")]


def test_pool_missing_in_the_named_cluster(repo: Path) -> None:
    _, findings = run(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(cluster="staging", pool="batch")})
    assert where(findings) == [("PL020", "w.yaml", 9, 3, "cluster 'staging' has no pool 'batch' (known: serving)")]


def test_ambiguous_pool(repo: Path) -> None:
    _, findings = run(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(pool="serving")})
    assert where(findings) == [
        (
            "PL020",
            "w.yaml",
            8,
            3,
            "pool 'serving' exists in several clusters (prod, staging); say which with spec.cluster",
        )
    ]


def test_naming_the_cluster_resolves_the_ambiguity(repo: Path) -> None:
    model, findings = run(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(cluster="staging", pool="serving")})
    assert findings == []
    pool = model.workloads["chat"].pool
    assert pool is not None and pool.qualified == "staging/serving"


def test_workload_without_pool_or_queue(repo: Path) -> None:
    _, findings = run(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(pool=None)})
    assert where(findings) == [
        ("PL020", "w.yaml", 5, 1, "workload 'chat' names no pool (spec.pool) and no scheduler queue (spec.queue)")
    ]


def test_duplicate_document_names(repo: Path) -> None:
    _, findings = run(repo, {"a.yaml": CLUSTERS, "b.yaml": CLUSTERS.split("---\n")[1], "w.yaml": workload()})
    assert where(findings) == [("PL021", "b.yaml", 4, 3, "Cluster 'staging' is already defined at a.yaml:19")]
    assert findings[0].hint == "give each Cluster a unique metadata.name"


def test_duplicate_workload_names_across_files(repo: Path) -> None:
    _, findings = run(repo, {"c.yaml": CLUSTERS, "w1.yaml": workload(), "w2.yaml": workload()})
    assert where(findings) == [("PL021", "w2.yaml", 4, 3, "Workload 'chat' is already defined at w1.yaml:4")]


def test_duplicate_pool_in_one_cluster(repo: Path) -> None:
    cluster = CLUSTERS.split("---\n")[0].replace("- name: batch", "- name: serving")
    _, findings = run(repo, {"c.yaml": cluster})
    assert where(findings) == [("PL021", "c.yaml", 11, 7, "pool 'serving' is defined twice in cluster 'prod'")]


def test_proposal_references(repo: Path) -> None:
    proposal = """\
apiVersion: policylint/v1
kind: Proposal
metadata:
  name: more
spec:
  cluster: prod
  date: "2026-11-20"
  requests:
    - {pool: serving, gpus: 2}
    - {pool: training, gpus: 2}
  workloads: [chat, ghost]
"""
    model, findings = run(repo, {"c.yaml": CLUSTERS, "p.yaml": proposal, "w.yaml": workload()})
    assert sorted(where(findings)) == [
        ("PL020", "p.yaml", 10, 8, "cluster 'prod' has no pool 'training' (known: batch, serving)"),
        ("PL020", "p.yaml", 11, 21, "unknown workload 'ghost'"),
    ]
    p = model.proposals["more"]
    assert list(p.pools) == ["serving"]
    assert [w.name for w in p.workloads] == ["chat"]


def test_references_to_invalid_documents_are_not_reported_twice(repo: Path) -> None:
    write(repo, {"w.yaml": workload(cluster="prod"), "c.yaml": CLUSTERS})
    doc = load_file(repo / "w.yaml", "w.yaml").documents[0]
    cluster = load_file(repo / "c.yaml", "c.yaml").documents[0]  # handed over as one that failed validation
    _, findings = resolve([doc], repo, [cluster])
    assert findings == []


def test_a_broken_cluster_silences_only_references_to_its_own_pools(repo: Path) -> None:
    """A typo in a pool name is still unknown while some cluster fails validation."""
    write(repo, {"w.yaml": workload(pool="servng"), "c.yaml": CLUSTERS})
    doc = load_file(repo / "w.yaml", "w.yaml").documents[0]
    cluster = load_file(repo / "c.yaml", "c.yaml").documents[0]
    _, findings = resolve([doc], repo, [cluster])
    assert [(f.code, f.message) for f in findings] == [("PL020", "unknown pool 'servng'")]
    write(repo, {"w.yaml": workload()})
    _, findings = resolve([load_file(repo / "w.yaml", "w.yaml").documents[0]], repo, [cluster])
    assert findings == []


# -- measurement files ------------------------------------------------------------------


def test_measurement_inside_the_repository_is_resolved(repo: Path) -> None:
    files = {"c.yaml": CLUSTERS, "w/w.yaml": workload(trace="../m/chat.csv"), "m/chat.csv": "t,v\n"}
    model, findings = run(repo, files)
    assert findings == []
    ref = model.workloads["chat"].measurements["concurrency"]
    assert ref.path is not None and ref.path.resolve() == (repo / "m" / "chat.csv").resolve()
    assert ref.display == "../m/chat.csv"


def test_missing_measurement_file(repo: Path) -> None:
    model, findings = run(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(trace="traces/chat.csv")})
    assert where(findings) == [("PL022", "w.yaml", 11, 7, "measurement file 'traces/chat.csv' does not exist")]
    assert findings[0].hint == "check the path; it is relative to the folder of this file"
    assert model.workloads["chat"].measurements["concurrency"].path is None


def test_measurement_path_that_is_a_folder(repo: Path) -> None:
    (repo / "traces").mkdir()
    _, findings = run(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(trace="traces")})
    assert where(findings) == [("PL022", "w.yaml", 11, 7, "measurement path 'traces' is not a file")]


class OpenSpy:
    """Records every path opened through the usual Python entry points."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened: list[str] = []
        real_open = builtins.open
        real_os_open = os.open
        real_path_open = Path.open

        def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            self.opened.append(os.fspath(file) if not isinstance(file, int) else f"fd:{file}")
            return real_open(file, *args, **kwargs)

        def spy_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
            self.opened.append(os.fspath(path))
            return real_os_open(path, *args, **kwargs)

        def spy_path_open(path: Path, *args: Any, **kwargs: Any) -> Any:
            self.opened.append(os.fspath(path))
            return real_path_open(path, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", spy_open)
        monkeypatch.setattr(io, "open", spy_open)
        monkeypatch.setattr(os, "open", spy_os_open)
        monkeypatch.setattr(Path, "open", spy_path_open)

    def touched(self, target: Path) -> list[str]:
        real = os.path.realpath(target)
        return [p for p in self.opened if not p.startswith("fd:") and os.path.realpath(p) == real]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the repository whose content must never be read.

    It is a FIFO where the platform has them: opening it for reading would block,
    so an accidental read hangs the test instead of passing silently.
    """
    target = tmp_path / "secret.csv"
    if hasattr(os, "mkfifo"):
        os.mkfifo(target)
    else:  # pragma: no cover
        target.write_text("t,v\n", encoding="utf-8")
    return target


def test_parent_escape_is_refused_unopened(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo, {"c.yaml": CLUSTERS, "w/w.yaml": workload(trace="../../etc/passwd")})
    spy = OpenSpy(monkeypatch)
    docs = [d for rel in ("c.yaml", "w/w.yaml") for d in load_file(repo / rel, rel).documents]
    opened_before = len(spy.opened)
    model, findings = resolve(docs, repo)
    assert where(findings) == [
        ("PL023", "w/w.yaml", 11, 7, "measurement path '../../etc/passwd' leaves the repository root")
    ]
    assert findings[0].name == "path-outside-repository"
    assert spy.opened[opened_before:] == []
    assert model.workloads["chat"].measurements["concurrency"].path is None


def test_absolute_path_is_refused_unopened(repo: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(trace=outside.as_posix())})
    docs = [d for rel in ("c.yaml", "w.yaml") for d in load_file(repo / rel, rel).documents]
    spy = OpenSpy(monkeypatch)
    _, findings = resolve(docs, repo)
    assert where(findings) == [
        (
            "PL023",
            "w.yaml",
            11,
            7,
            f"measurement path '{outside.as_posix()}' is absolute; paths must be relative to the declaring file",
        )
    ]
    assert spy.touched(outside) == []


def test_absolute_path_inside_the_repository_is_refused_too(repo: Path) -> None:
    files = {"c.yaml": CLUSTERS, "m.csv": "t,v\n", "w.yaml": workload(trace=(repo / "m.csv").as_posix())}
    _, findings = run(repo, files)
    assert [f.code for f in findings] == ["PL023"]


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs symlinks")
def test_symlink_to_outside_is_refused_unopened(repo: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "m").mkdir()
    (repo / "m" / "chat.csv").symlink_to(outside)
    write(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(trace="m/chat.csv")})
    docs = [d for rel in ("c.yaml", "w.yaml") for d in load_file(repo / rel, rel).documents]
    spy = OpenSpy(monkeypatch)
    _, findings = resolve(docs, repo)
    assert where(findings) == [
        ("PL023", "w.yaml", 11, 7, "measurement path 'm/chat.csv' is a symlink pointing outside the repository")
    ]
    assert findings[0].hint == "copy the file into the repository instead of linking to it"
    assert spy.touched(outside) == []


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs symlinks")
def test_symlinked_folder_to_outside_is_refused(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "chat.csv").write_text("t,v\n", encoding="utf-8")
    (repo / "m").symlink_to(elsewhere, target_is_directory=True)
    _, findings = run(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(trace="m/chat.csv")})
    assert [(f.code, f.line) for f in findings] == [("PL023", 11)]


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs symlinks")
def test_symlink_inside_the_repository_is_followed(repo: Path) -> None:
    write(repo, {"m/real.csv": "t,v\n"})
    (repo / "m" / "chat.csv").symlink_to(repo / "m" / "real.csv")
    model, findings = run(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(trace="m/chat.csv")})
    assert findings == []
    assert model.workloads["chat"].measurements["concurrency"].path is not None


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs symlinks")
def test_broken_symlink(repo: Path, tmp_path: Path) -> None:
    (repo / "m").mkdir()
    (repo / "m" / "chat.csv").symlink_to(tmp_path / "gone.csv")
    _, findings = run(repo, {"c.yaml": CLUSTERS, "w.yaml": workload(trace="m/chat.csv")})
    assert where(findings) == [("PL023", "w.yaml", 11, 7, "measurement path 'm/chat.csv' is a broken symlink")]


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs symlinks")
def test_the_whole_run_never_reads_outside_files(
    repo: Path, outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the CLI: escapes are findings and the trace readers never see them."""
    from policylint import traces

    (repo / "m").mkdir()
    (repo / "m" / "link.csv").symlink_to(outside)
    write(
        repo,
        {
            "c.yaml": CLUSTERS,
            "w1.yaml": workload("a", trace="m/link.csv"),
            "w2.yaml": workload("b", trace="../secret.csv"),
            "w3.yaml": workload("c", trace=outside.as_posix()),
        },
    )
    calls: list[Path] = []

    def never(path: Path, *args: Any, **kwargs: Any) -> Any:
        calls.append(Path(path))
        raise AssertionError(f"trace reader called with {path}")

    monkeypatch.setattr(traces, "read_series", never)
    monkeypatch.setattr(traces, "read_jobs", never)
    code, out, err = run_cli(["check", "--isolated", "--root", ".", "--now", "2026-12-01", "."], cwd=repo)
    assert "Traceback" not in err and "internal error" not in err
    assert code == 1
    assert "w1.yaml:11:7: error PL023" in out
    assert "w2.yaml:11:7: error PL023" in out
    assert "w3.yaml:11:7: error PL023" in out
    assert calls == []


def test_display_path_outside_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert display_path(tmp_path / "a" / "b.yaml") == "a/b.yaml"
    assert display_path(Path("/definitely/elsewhere.yaml")) == "/definitely/elsewhere.yaml"


def test_proposal_workloads_are_linked_when_its_cluster_is_broken(tmp_path: Path) -> None:
    """A broken cluster must not make a proposal look like it cites no measured workload."""
    from policylint.engine.linter import LintOptions, lint
    from policylint.resources import rules_dir
    from policylint.engine.ruleset import load_rules

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "c.yaml").write_text(CLUSTERS.replace("reservedGpus", "reservedGPUs", 1))
    (repo / "p.yaml").write_text(
        "apiVersion: policylint/v1\nkind: Proposal\nmetadata: {name: more}\n"
        "spec:\n  cluster: prod\n  date: '2026-11-20'\n  requests: [{pool: serving, gpus: 2}]\n  workloads: [chat]\n"
    )
    (repo / "w.yaml").write_text(workload())
    result = lint([repo], LintOptions(root=repo, ruleset=load_rules([rules_dir()])))
    assert result.model is not None
    assert [w.name for w in result.model.proposals["more"].workloads] == ["chat"]
    assert "PL020" not in {f.code for f in result.findings if f.file.endswith("p.yaml")}
