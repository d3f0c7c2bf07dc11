"""Manifests that ``kubectl apply`` reads otherwise than YAML does are reported (red team, 2026-12-07).

Both games added 64 GPUs of owned H100 quota to ``examples/kueue`` past ``check``, the hook and
``--diff``: a merge key below ``nominalQuota: 104`` that supplies 168 (YAML keeps 104, Kubernetes'
decoder applies the merge), and a ConfigMap whose key line ``---#:`` holds a second ``training``
ClusterQueue (kubectl splits the file there, YAML does not).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import EXAMPLES, run_cli

QUEUES = "kueue/cluster-queues.yaml"


def _kueue(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))


def _findings(repo: Path) -> tuple[int, list[tuple[str, str, int]]]:
    code, out, err = run_cli(["check", "--format", "json", "."], cwd=repo)
    assert err == "", err
    return code, [(f["code"], f["file"], f["line"]) for f in json.loads(out)["findings"]]


def test_the_honest_example_is_clean(tmp_path: Path) -> None:
    assert _findings(_kueue(tmp_path)) == (0, [])


def test_a_merge_key_that_raises_a_written_quota_fails_the_check(tmp_path: Path) -> None:
    repo = _kueue(tmp_path)
    path = repo / QUEUES
    text = path.read_text(encoding="utf-8")
    assert text.count("nominalQuota: 104\n") == 1
    path.write_text(text.replace("nominalQuota: 104\n", "nominalQuota: 104\n        <<: {nominalQuota: 168}\n"),
                    encoding="utf-8")
    code, found = _findings(repo)
    line = text[: text.index("nominalQuota: 104")].count("\n") + 2
    assert code == 1 and ("PL002", QUEUES, line) in found, found


def test_a_queue_behind_a_kubectl_only_separator_fails_the_check(tmp_path: Path) -> None:
    repo = _kueue(tmp_path)
    (repo / "kueue" / "queue-notes.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: queue-notes\ndata:\n  changelog: quotas re-measured\n"
        "---#: # training quota as applied\n"
        '  {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "training"},\n'
        '   "spec": {"cohortName": "east", "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors":\n'
        '   [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 168}]}]}]}}\n',
        encoding="utf-8")
    code, found = _findings(repo)
    assert code == 1 and found == [("PL026", "kueue/queue-notes.yaml", 7)], found
