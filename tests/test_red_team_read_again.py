"""One file read twice in one pool with other read options is counted twice (red team, 2026-12-07).

PL111 recognised a repeated measurement by the fingerprint of the series as read, and PL972
left one file cited by one path in one pool to PL111. A second workload reading the same file
with a filter that drops one job (``where: {job_id: {ne: ft-00001}}``) or another step
(``stepSeconds: 299`` on a 300 s trace) read another series, so neither rule compared them: the
training pool rose 392 -> 464 and the serving pool 48 -> 69, and ``check``, the hook and
(for the filter) ``--diff`` all passed. Reads of one file now count twice unless their columns
or their row selections cannot meet (one long table holding several workloads' rows).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, committed_example, git, run_cli

from policylint.measure.reading import reads_may_overlap
from policylint.readers.filters import disjoint, parse_where

FINE_TUNING = """      path: ../measurements/traces/fine-tuning.csv
      format: csv
      timestampColumn: timestamp
      columns: [running_jobs]
"""
FROM_JOBS = """      path: ../measurements/jobs/fine-tuning.csv
      format: jobs
      startColumn: start
      endColumn: end
      stepSeconds: 300
"""


def _phantom(name: str, trace: str, pool: str = "training", cluster: str = "train-central") -> str:
    return f"""---
apiVersion: policylint/v1
kind: Workload
metadata:
  name: {name}
  team: research
  owner: applied-ml@example.com
spec:
  class: training
  cluster: {cluster}
  pool: {pool}
  gpusPerReplica: 8
  concurrency:
    trace:
{trace}  perGpuConcurrency: {{value: 1, measuredIn: production, source: one job per 8-GPU node}}
  coldStartSeconds: 900
  tolerance:
    maxQueueSeconds: 1800
    evidence:
      document: ../evidence/fine-tuning-contract-v3.md
  vram: {{residentGiB: 560, residencySeconds: 86400, activeComputeSeconds: 78000}}
  durations: {{p50Seconds: 21755, p90Seconds: 47402, p99Seconds: 85002}}
"""


def _game(repo: Path, where: str) -> None:
    """fine-tuning read from its job list, and a second workload reading that list again through ``where``."""
    research = repo / "workloads" / "research.yaml"
    text = research.read_text(encoding="utf-8")
    assert FINE_TUNING in text
    text = text.replace(FINE_TUNING, FROM_JOBS) + _phantom("sft-customer", FROM_JOBS + f"      where: {where}\n")
    research.write_text(text, encoding="utf-8")
    cluster = repo / "clusters" / "train-central.yaml"
    raised = cluster.read_text(encoding="utf-8").replace("reservedGpus: 392", "reservedGpus: 464")
    cluster.write_text(raised.replace("maxGpus: 40", "maxGpus: 48"), encoding="utf-8")


def _committed(tmp_path: Path) -> Path:
    """examples/good in a git repository, committed: the base of the hook's runs."""
    return committed_example(tmp_path, folder="good")


def _chat_eu(repo: Path, step: int) -> None:
    """A second serving workload, chat-assistant's declarations citing chat-assistant-eu.csv read at ``step``, staged."""
    doc = repo / "workloads" / "product-ai.yaml"
    text = doc.read_text(encoding="utf-8")
    first = "apiVersion:" + text.split("---\n", 1)[0].split("apiVersion:", 1)[1]
    assert "name: chat-assistant\n" in first and "path: ../measurements/traces/chat-assistant.csv\n" in first
    eu = first.replace("name: chat-assistant\n", "name: chat-assistant-eu\n", 1).replace(
        "path: ../measurements/traces/chat-assistant.csv\n",
        f"path: ../measurements/traces/chat-assistant-eu.csv\n      stepSeconds: {step}\n", 1)
    doc.write_text(text + "---\n" + eu, encoding="utf-8")
    git(repo, "add", "-A")


def _findings(repo: Path, *args: str) -> tuple[int, list[tuple[str, str]]]:
    code, out, err = run_cli(["check", "--format", "json", "--no-cache", *args], cwd=repo)
    assert code in (0, 1) and "Traceback" not in err, err
    return code, sorted((f["code"], f["message"]) for f in json.loads(out)["findings"])


def test_a_second_workload_reading_a_job_list_without_its_first_job_fails_every_run(tmp_path: Path) -> None:
    repo = _committed(tmp_path)
    _game(repo, "{job_id: {ne: ft-00001}}")
    git(repo, "add", "-A")
    hook = _findings(repo, "--changed-files", "workloads/research.yaml", "clusters/train-central.yaml")
    whole = _findings(repo, ".")
    for code, found in (hook, whole):
        assert code == 1
        assert ("PL111", "workload sft-customer cites the same concurrency measurement as fine-tuning in pool "
                "train-central/training (the same file ../measurements/jobs/fine-tuning.csv, read again with other "
                "options): the pool counts that demand twice") in found, found
    git(repo, "commit", "-qm", "the game")
    code, found = _findings(repo, "--diff", "HEAD~1")
    assert code == 1 and any(c == "PL111" for c, _ in found), found


def test_one_job_list_split_between_two_workloads_by_their_own_jobs_is_not_a_double_count(tmp_path: Path) -> None:
    """The honest use: one export of the pool's jobs, each workload reading the jobs whose identifiers are its own."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "good"))
    _game(repo, "{job_id: {in: [ft-00001, ft-00002]}}")
    research = repo / "workloads" / "research.yaml"
    text = research.read_text(encoding="utf-8")
    research.write_text(text.replace(FROM_JOBS, FROM_JOBS + "      where: {job_id: {notIn: [ft-00001, ft-00002]}}\n", 1),
                        encoding="utf-8")
    _, found = _findings(repo, ".")
    assert not [m for c, m in found if c in ("PL111", "PL972")], found


def test_the_same_trace_read_at_another_step_is_a_double_count(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "good"))
    research = repo / "workloads" / "research.yaml"
    again = FINE_TUNING + "      stepSeconds: 299\n"
    research.write_text(research.read_text(encoding="utf-8") + _phantom("fine-tuning-again", again),
                        encoding="utf-8")
    code, found = _findings(repo, ".")
    assert code == 1
    assert any(c == "PL111" and m.startswith("workload fine-tuning-again cites the same concurrency measurement as "
                                             "fine-tuning") for c, m in found), found


@pytest.mark.parametrize(
    ("a", "b", "apart"),
    [
        ({"model": "chat"}, {"model": "search"}, True),
        ({"model": "chat"}, {"model": {"ne": "chat"}}, True),
        ({"model": {"in": ["a", "b"]}}, {"model": {"notIn": ["a", "b", "c"]}}, True),
        ({"gpus": {"le": 1}}, {"gpus": {"gt": 1}}, True),
        ({"gpus": {"lt": 1}}, {"gpus": {"ge": 1}}, True),
        ({"gpus": {"ge": 1}}, {"gpus": {"le": 1}}, False),  # gpus == 1 passes both
        ({"gpus": [1, 2]}, {"gpus": {"gt": 2}}, True),
        ({"gpus": 1}, {"gpus": "1"}, False),  # a number and its text are one value
        ({"model": "chat"}, {"team": "search"}, False),  # other columns: a row may pass both
        ({"model": {"ne": "a"}}, {"model": {"ne": "b"}}, False),
        ({}, {"model": "chat"}, False),  # the whole file and any part of it
    ],
)
def test_row_selections_are_apart_only_when_their_conditions_cannot_meet(a: dict, b: dict, apart: bool) -> None:
    assert disjoint(parse_where(a), parse_where(b)) is apart
    assert disjoint(parse_where(b), parse_where(a)) is apart


def test_reads_of_one_file_overlap_unless_columns_or_selections_are_apart() -> None:
    base = {"path": "x.csv", "columns": ["in_flight"]}
    assert reads_may_overlap(base, {**base, "stepSeconds": 299})
    assert reads_may_overlap(base, {**base, "timeOrigin": "2026-01-01T00:00:00Z"})
    assert not reads_may_overlap(base, {**base, "columns": ["retried"]})
    assert reads_may_overlap({**base, "columns": ["a", "b"]}, {**base, "columns": ["b"]})
    keyed = {**base, "key": {"column": "model", "select": "chat"}}
    assert not reads_may_overlap(keyed, {**base, "key": {"column": "model", "select": "search"}})
    assert not reads_may_overlap({**base, "match": {"model": "a"}}, {**base, "match": {"model": "b"}})
    assert reads_may_overlap({**base, "match": {"model": "a"}}, {**base, "match": {"pod": "b"}})
    # a filter that cannot be read is refused when measured (PL024), not compared
    assert not reads_may_overlap({**base, "where": {"gpus": {"gt": "many"}}}, base)


def test_columns_that_the_reader_does_not_read_do_not_tell_two_reads_apart() -> None:
    """Red team, 2026-12-07, second round: disjoint ``columns`` on a Prometheus answer (+10 GPUs) and on a job
    list (+312) - readers that read no value columns - passed as one file holding two workloads' data."""
    for path, fmt in (("x.json", "auto"), ("x.json", "prometheus"), ("jobs.csv", "jobs"), ("log.csv", "requests")):
        base = {"path": path, "format": fmt, "match": {"model_name": "bge"}}
        assert reads_may_overlap({**base, "columns": ["query"]}, {**base, "columns": ["ingest"], "stepSeconds": 290})
    for path, fmt in (("x.csv", "auto"), ("x.parquet", "auto"), ("x.bin", "arrow")):
        base = {"path": path, "format": fmt}
        assert not reads_may_overlap({**base, "columns": ["query"]}, {**base, "columns": ["ingest"]})


def test_a_prometheus_answer_read_twice_under_disjoint_columns_is_a_double_count(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "good"))
    search = repo / "workloads" / "search.yaml"
    text = search.read_text(encoding="utf-8")
    marker = "      match: {model_name: bge-m3-embed}\n"
    assert text.count(marker) == 1
    text = text.replace(marker, marker + "      columns: [query]\n")
    first = text[: text.index("---")]
    second = "apiVersion" + first.split("apiVersion", 1)[1]
    second = second.replace("name: embeddings-search", "name: embeddings-ingest").replace(
        "columns: [query]", "columns: [ingest]\n      stepSeconds: 290")
    search.write_text(text + "---\n" + second, encoding="utf-8")
    code, found = _findings(repo, ".")
    assert code == 1
    assert [m for c, m in found if c == "PL111" and "embeddings-" in m and "read again with other options" in m], found


@pytest.mark.parametrize("how", ["copy", "link"])
def test_a_copy_of_a_trace_or_a_link_to_it_read_at_another_step_is_a_double_count(tmp_path: Path, how: str) -> None:
    """Second red team, 2026-12-07: a byte copy of chat-assistant.csv read at 290 s (its samples are 300 s apart)
    raised the serving pool 48 -> 69 past check, the hook and --diff: every print was taken after the grid,
    which repeats one sample in 29. The samples' own print (before the grid) is the same evidence."""
    repo = _committed(tmp_path)
    traces = repo / "measurements" / "traces"
    if how == "copy":
        shutil.copyfile(traces / "chat-assistant.csv", traces / "chat-assistant-eu.csv")
    else:
        (traces / "chat-assistant-eu.csv").symlink_to("chat-assistant.csv")
    _chat_eu(repo, 290)
    for args in ([".", "--no-cache"], ["--changed-files", "workloads/product-ai.yaml", "measurements/traces/chat-assistant-eu.csv"]):
        code, out, err = run_cli(["check", "--format", "json", *args], cwd=repo)
        assert code == 1 and "Traceback" not in err, err
        found = [f["message"] for f in json.loads(out)["findings"] if f["code"] == "PL111"]
        assert any("workload chat-assistant-eu cites the same concurrency measurement as chat-assistant" in m
                   and "a copy read another way: ../measurements/traces/chat-assistant-eu.csv holds the samples "
                   "../measurements/traces/chat-assistant.csv holds" in m for m in found), (args, found)


@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_a_link_to_a_job_list_read_without_its_first_job_is_a_double_count(tmp_path: Path, how: str) -> None:
    """The first game above through another name for the same file: a symbolic link (or a hard link) to
    fine-tuning's job list, read without one job. The samples differ by that job, so only the file's identity
    tells the two reads are one measurement; files are compared by what they are, not by how they are named."""
    repo = _committed(tmp_path)
    jobs = repo / "measurements" / "jobs"
    if how == "symlink":
        (jobs / "sft-customer.csv").symlink_to("fine-tuning.csv")
    else:
        (jobs / "sft-customer.csv").hardlink_to(jobs / "fine-tuning.csv")
    research = repo / "workloads" / "research.yaml"
    text = research.read_text(encoding="utf-8")
    linked = FROM_JOBS.replace("fine-tuning.csv", "sft-customer.csv") + "      where: {job_id: {ne: ft-00001}}\n"
    research.write_text(text.replace(FINE_TUNING, FROM_JOBS) + _phantom("sft-customer", linked), encoding="utf-8")
    git(repo, "add", "-A")
    for args in ((".",), ("--changed-files", "workloads/research.yaml", "measurements/jobs/sft-customer.csv")):
        code, found = _findings(repo, *args)
        assert code == 1
        assert [m for c, m in found if c == "PL111" and m.startswith(
            "workload sft-customer cites the same concurrency measurement as fine-tuning")], (args, found)


@pytest.mark.parametrize("step", [290, 600])
def test_a_copy_with_samples_edited_read_at_another_step_is_a_near_copy(tmp_path: Path, step: int) -> None:
    """Second red team, 2026-12-07, left open then: chat-assistant.csv copied with a few samples edited (so no
    print of the samples is equal) and read at another step than its 300 s samples. The run sketch PL972
    compares was taken from the grid, and a 290 s grid repeats one sample in 29 (a 600 s grid keeps one in
    two): no gridded run was shared. The sketch that identifies a trace is now of its samples as read."""
    repo = _committed(tmp_path)
    traces = repo / "measurements" / "traces"
    rows = (traces / "chat-assistant.csv").read_text(encoding="utf-8").splitlines()
    for k in range(500, len(rows), 2500):  # ten samples or so, each raised by one
        stamp, value = rows[k].rsplit(",", 1)
        rows[k] = f"{stamp},{int(value) + 1}"
    (traces / "chat-assistant-eu.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    _chat_eu(repo, step)
    for args in ([".", "--no-cache"], ["--changed-files", "workloads/product-ai.yaml",
                                       "measurements/traces/chat-assistant-eu.csv"]):
        code, out, err = run_cli(["check", "--format", "json", *args], cwd=repo)
        assert code == 1 and "Traceback" not in err, err
        found = [f["message"] for f in json.loads(out)["findings"] if f["code"] in ("PL111", "PL972")]
        assert any("chat-assistant-eu" in m and "chat-assistant.csv" in m for m in found), (args, found)
