"""Two workloads that swap trace files in a change are each read at the base with their own series (``--diff``).

Red team round 22, 2026-12-07: in ``examples/good``, one commit swapped the contents of
``chat-assistant.csv`` and ``reranker.csv`` and the paths the two workloads cite (each still cites
its own series, under the other's file name), halved chat-assistant's per-GPU figure (14 -> 7),
doubled the reranker's (19 -> 38), edited one sample and raised serving 48 -> 67. PL950's second
base reading (the base's files under today's declarations) resolved today's paths in the base tree,
so chat's halved figure was applied to the reranker's smaller series there and the reranker's
doubled one to chat's: the base read low, and the ratio backed the +19. Git's rename detection
pairs no swapped contents. A workload the base held by its name is now read from the file its base
placement cited.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import committed_example, git, replace_once, run_cli

TRACES = "measurements/traces"
SERVING = "clusters/prod-east.yaml"
CHAT, SEARCH = "workloads/product-ai.yaml", "workloads/search.yaml"


def _pl950(repo: Path) -> tuple[int, dict[str, str]]:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the change")
    code, out, err = run_cli(["check", "--format", "json", "--diff", "HEAD~1"], cwd=repo)
    assert "Traceback" not in err, err
    return code, {f["subject"]: f["message"] for f in json.loads(out)["findings"] if f["code"] == "PL950"}


def _swap(repo: Path) -> None:
    """Swap the two files' contents and the paths the two workloads cite: each still cites its own series."""
    chat, reranker = repo / TRACES / "chat-assistant.csv", repo / TRACES / "reranker.csv"
    a, b = chat.read_bytes(), reranker.read_bytes()
    chat.write_bytes(b)
    reranker.write_bytes(a)
    replace_once(repo / CHAT, "path: ../measurements/traces/chat-assistant.csv", "path: ../measurements/traces/reranker.csv")
    replace_once(repo / SEARCH, "path: ../measurements/traces/reranker.csv", "path: ../measurements/traces/chat-assistant.csv")


def _edit_last_sample(path: Path, by: int = 1) -> None:
    rows = path.read_text(encoding="utf-8").split("\n")
    stamp, value = rows[-2].split(",")
    rows[-2] = f"{stamp},{int(value) + by}"
    path.write_text("\n".join(rows), encoding="utf-8")


def _figures(repo: Path, chat: int, reranker: int) -> None:
    replace_once(repo / CHAT, "    value: 14\n    measuredIn: production\n", f"    value: {chat}\n    measuredIn: production\n")
    replace_once(repo / SEARCH, "    value: 19\n    measuredIn: production\n", f"    value: {reranker}\n    measuredIn: production\n")


def _reserve(repo: Path, gpus: int) -> None:
    replace_once(repo / SERVING, "reservedGpus: 48\n", f"reservedGpus: {gpus}\n")


def test_swapped_traces_with_swapped_figures_back_no_raise(tmp_path: Path) -> None:
    repo = committed_example(tmp_path, message="the honest plan")
    _swap(repo)
    _figures(repo, 7, 38)
    _edit_last_sample(repo / TRACES / "reranker.csv")  # chat's own series, under its new name
    _reserve(repo, 67)
    code, found = _pl950(repo)
    assert code == 1 and "pool prod-east/serving" in found, found
    assert "backs at most 53" in found["pool prod-east/serving"], found


def test_swapped_traces_without_a_raise_pass(tmp_path: Path) -> None:
    repo = committed_example(tmp_path, message="the honest plan")
    _swap(repo)
    _edit_last_sample(repo / TRACES / "reranker.csv")
    code, found = _pl950(repo)
    assert found == {}, found


def _moved_and_measured_anew(repo: Path) -> None:
    """chat-assistant's trace moved (``git mv``) and measured anew: every sample half as high again."""
    git(repo, "mv", f"{TRACES}/chat-assistant.csv", f"{TRACES}/chat-assistant-2026w48.csv")
    replace_once(repo / CHAT, "traces/chat-assistant.csv", "traces/chat-assistant-2026w48.csv")
    path = repo / TRACES / "chat-assistant-2026w48.csv"
    head, *rows = path.read_text(encoding="utf-8").splitlines()
    grown = [f"{stamp},{int(value) * 3 // 2}" for stamp, value in (r.split(",") for r in rows)]
    path.write_text("\n".join([head, *grown]) + "\n", encoding="utf-8")


def test_a_trace_moved_with_a_new_measurement_backs_its_raise(tmp_path: Path) -> None:
    # the moved trace is read at the base from the file the workload cited there: before round 22 the
    # base's files under today's declarations were not read whole, and only the base's 53 backed a raise
    repo = committed_example(tmp_path, message="the honest plan")
    _moved_and_measured_anew(repo)
    _reserve(repo, 56)
    code, found = _pl950(repo)
    assert "pool prod-east/serving" not in found, found


def test_a_trace_moved_with_a_new_measurement_backs_only_what_it_measures(tmp_path: Path) -> None:
    repo = committed_example(tmp_path, message="the honest plan")
    _moved_and_measured_anew(repo)
    _reserve(repo, 90)
    code, found = _pl950(repo)
    assert code == 1 and "from 53 to 64 GPUs, which backs at most 64" in found["pool prod-east/serving"], found
