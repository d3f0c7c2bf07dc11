"""Another workload's series summed in as one more pod of a long table, or one more series of a Prometheus answer.

Red team, 2026-12-07, round 16: the part prints behind PL111 and PL972 were taken for the columns of a
wide table only. chat-assistant's series added as a series of embeddings-search's Prometheus answer
(picked by ``match``) raised serving 53 -> 59, and as pod ``cc-1`` of code-completion's trace read as a
long table (``key: {column: pod, aggregate: sum}``) 53 -> 72, past every gate. Each summed series (up to
64) is now printed, sketched and shaped as it would read alone (:mod:`policylint.readers.part_prints`).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from conftest import EXAMPLES, run_cli

TRACES = "measurements/traces"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))


def _rows(repo: Path, name: str) -> list[tuple[int, int]]:
    with (repo / TRACES / f"{name}.csv").open(encoding="utf-8") as f:
        return [(int(t), int(v)) for t, v in list(csv.reader(f))[1:]]


def _pl111(repo: Path) -> dict[str, str]:
    code, out, err = run_cli(["check", "--format", "json", "."], cwd=repo)
    assert code in (0, 1), err
    return {f["subject"]: f["message"] for f in json.loads(out)["findings"] if f["code"] == "PL111"}


def _long_table(repo: Path, pods: dict[str, list[tuple[int, int]]]) -> None:
    lines = ["timestamp,pod,in_flight"] + [f"{t},{pod},{v}" for pod, rows in pods.items() for t, v in rows]
    (repo / TRACES / "code-completion.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = repo / "workloads" / "product-ai.yaml"
    text = path.read_text(encoding="utf-8")
    old = "path: ../measurements/traces/code-completion.csv\n      format: csv\n      timestampColumn: timestamp\n      columns: [in_flight]"
    assert old in text
    path.write_text(text.replace(old, old + "\n      key: {column: pod, aggregate: sum}"), encoding="utf-8")


def test_a_pod_of_a_long_table_holding_another_members_series_is_that_member_counted_twice(repo: Path) -> None:
    _long_table(repo, {"cc-0": _rows(repo, "code-completion"), "cc-1": _rows(repo, "chat-assistant")})
    found = _pl111(repo)
    assert "workload code-completion" in found
    assert "sums series cc-1, which holds the series chat-assistant cites" in found["workload code-completion"]


def test_pods_of_its_own_are_no_copy(repo: Path) -> None:
    own = _rows(repo, "code-completion")
    half = [(t, v // 2) for t, v in own]
    rest = [(t, v - v // 2) for t, v in own]
    _long_table(repo, {"cc-0": half, "cc-1": rest})
    assert "workload code-completion" not in _pl111(repo)


def test_a_series_of_a_prometheus_answer_holding_another_members_series_is_found(repo: Path) -> None:
    path = repo / TRACES / "embeddings-search.json"
    answer = json.loads(path.read_text(encoding="utf-8"))
    answer["data"]["result"].append({
        "metric": {"__name__": "vllm:num_requests_running", "model_name": "bge-m3-embed", "pod": "embed-7"},
        "values": [[t, str(v)] for t, v in _rows(repo, "chat-assistant")],
    })
    path.write_text(json.dumps(answer), encoding="utf-8")
    found = _pl111(repo)
    assert "workload embeddings-search" in found
    assert 'pod="embed-7"' in found["workload embeddings-search"]


def test_the_examples_own_answers_and_tables_stay_clean() -> None:
    code, out, err = run_cli(["check", "--format", "json", str(EXAMPLES / "good")])
    assert code == 0, out
