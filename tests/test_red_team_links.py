"""Red team, 2026-12-05: one trace cited twice, openly or through a link.

A workload in another pool citing ``measurements/mirror/chat-assistant.csv``, a
symlink to chat-assistant's own trace, passed: the near-copy check (PL972) took
the pair for an open citation of one file. Only one file cited by one path is
open; the same file under another name is judged as a copy. Two citations of one
trace in one pool without a share stay PL111's plain double count.

(Two workloads of one pool that each declare ``share: {fraction: 1.0}`` of one trace
are not flagged: the schema defines a share as the part of the traced concurrency
that is the workload's, 1 meaning one call per traced request - a reranker called
once per chat request has the chat's shape and its own GPUs. The share's mandatory
reason is the reviewed claim.)
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import REPO, run_cli

NOW = ["--now", "2026-12-01"]
CHAT = "    exclude:\n      - start: \"2026-10-14T09:00:00Z\""


def _copy(tmp_path: Path) -> Path:
    repo = tmp_path / "good"
    shutil.copytree(REPO / "examples" / "good", repo)
    return repo


def _second_chat(repo: Path, share_first: str | None, share_second: str | None, *, path: str | None = None) -> None:
    """Give chat-assistant a share (or none) and add chat-assistant-api citing the same trace, in the same pool."""
    doc = repo / "workloads" / "product-ai.yaml"
    text = doc.read_text()
    head, sep, rest = text.partition("---\n")
    first = head
    if share_first is not None:
        assert CHAT in first
        first = first.replace(CHAT, f"    share: {{fraction: {share_first}, reason: one call per chat request}}\n{CHAT}", 1)
    second = head.split("apiVersion:", 1)[1]
    second = "apiVersion:" + second.replace("name: chat-assistant", "name: chat-assistant-api", 1)
    if path is not None:
        second = second.replace("../measurements/traces/chat-assistant.csv", path, 1)
    if share_second is not None:
        second = second.replace(CHAT, f"    share: {{fraction: {share_second}, reason: one call per chat request}}\n{CHAT}", 1)
    doc.write_text(first + sep + rest + ("" if rest.endswith("\n") else "\n") + "---\n" + second)


def _pl111(repo: Path) -> list[tuple[str, str]]:  # (workload, message) of each PL111
    rc, out, err = run_cli(["check", *NOW, "--format", "json", "--select", "PL111", "."], cwd=repo)
    assert rc in (0, 1) and err == "", err
    return sorted((f["message"].split(" ")[1], f["message"]) for f in json.loads(out)["findings"])


def test_two_undeclared_citations_in_one_pool_are_the_plain_double_count(tmp_path: Path) -> None:
    repo = _copy(tmp_path)
    _second_chat(repo, None, None)
    [(name, message)] = _pl111(repo)
    assert name == "chat-assistant-api" and "(the same file ../measurements/traces/chat-assistant.csv)" in message


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_trace_cited_through_a_link_in_another_pool_is_a_copy(tmp_path: Path) -> None:
    repo = _copy(tmp_path)
    mirror = repo / "measurements" / "mirror"
    mirror.mkdir()
    (mirror / "chat-assistant.csv").symlink_to(Path("..") / "traces" / "chat-assistant.csv")
    cluster = (repo / "clusters" / "prod-east.yaml").read_text()
    assert "  pools:\n" in cluster
    (repo / "clusters" / "prod-east.yaml").write_text(cluster.replace(
        "  pools:\n",
        "  pools:\n    - name: failover\n      serves: [inference]\n      reservedGpus: 0\n"
        "      gpu: {model: H100-80GB, memoryGiB: 80}\n      elastic: {maxGpus: 24}\n", 1))
    doc = (repo / "workloads" / "product-ai.yaml").read_text()
    first = doc.split("---\n", 1)[0]
    copy = "apiVersion:" + first.split("apiVersion:", 1)[1]
    copy = copy.replace("name: chat-assistant", "name: chat-failover", 1).replace("pool: serving", "pool: failover", 1)
    copy = copy.replace("../measurements/traces/chat-assistant.csv", "../measurements/mirror/chat-assistant.csv", 1)
    (repo / "workloads" / "failover.yaml").write_text(copy)
    rc, out, err = run_cli(["check", *NOW, "--format", "json", "--select", "PL972", "."], cwd=repo)
    assert err == ""
    found = [(f["code"], f["file"]) for f in json.loads(out)["findings"]]
    assert ("PL972", "workloads/failover.yaml") in found
    # the same file cited by the same path from the other pool, without a share, is judged too: each pool
    # buys that demand. (This once passed under --select PL972 alone: the pool fact the exemption compared
    # was not computed for the selected rule, so both pools read as None and the pair as one pool's.)
    (repo / "workloads" / "failover.yaml").write_text(
        copy.replace("../measurements/mirror/chat-assistant.csv", "../measurements/traces/chat-assistant.csv", 1))
    for selected in (["--select", "PL972"], []):
        rc, out, err = run_cli(["check", *NOW, "--format", "json", *selected, "."], cwd=repo)
        assert err == ""
        assert ("PL972", "workloads/failover.yaml") in [(f["code"], f["file"]) for f in json.loads(out)["findings"]]
