"""GPU quota kept under a resource name policylint does not count, made real by Kueue's transformations.

The game (red team round 22, 2026-12-07): in ``examples/kueue`` every ClusterQueue and the Cohort
also cover ``acme.com/accelerator`` with the same quotas, except training, which gets 168 there, and
a ``kueue-manager-config`` ConfigMap holds a Kueue Configuration whose resource transformation
replaces ``nvidia.com/gpu`` with ``acme.com/accelerator: 1``. Kueue then charges GPU pods against
the accelerator quota, and the ``nvidia.com/gpu`` quota of 104 policylint judged was a dead letter:
64 owned GPUs more past ``check``, the hook and ``--diff``. ``acme.com/accelerator`` does not look
like a GPU, so PL905 said nothing. Now PL905 names an extended resource covered beside a counted GPU
resource (unless it is a standard resource or allowed), and a Kueue Configuration that transforms or
excludes a counted GPU resource.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import committed_example, git, replace_once, run_cli

QUEUES, COHORT, CONFIG = "kueue/cluster-queues.yaml", "kueue/cohort.yaml", "kueue/kueue-config.yaml"

TRANSFORM = """apiVersion: v1
kind: ConfigMap
metadata:
  name: kueue-manager-config
  namespace: kueue-system
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta1
    kind: Configuration
    resources:
      transformations:
      - input: nvidia.com/gpu
        strategy: Replace
        outputs:
          acme.com/accelerator: "1"
"""


def _cover_in_training(repo: Path, *quotas: tuple[str, int | str]) -> None:
    """Training's resource group also covers each resource of ``quotas``, with that quota of it in its h100 flavor."""
    text = (repo / QUEUES).read_text(encoding="utf-8")
    head, mark, rest = text.partition("  name: training\n")
    covered = "".join(f', "{name}"' for name, _ in quotas)
    rest = rest.replace('coveredResources: ["nvidia.com/gpu"]', f'coveredResources: ["nvidia.com/gpu"{covered}]', 1)
    listed = "".join(f'      - name: "{name}"\n        nominalQuota: {quota}\n' for name, quota in quotas)
    rest = rest.replace("        borrowingLimit: 24\n", f"        borrowingLimit: 24\n{listed}", 1)
    (repo / QUEUES).write_text(head + mark + rest, encoding="utf-8")


def _check(repo: Path, *args: str) -> tuple[int, list[dict[str, object]]]:
    code, out, err = run_cli(["check", "--format", "json", *args], cwd=repo)
    assert "Traceback" not in err, err
    return code, json.loads(out)["findings"]


def _pl905(found: list[dict[str, object]]) -> list[str]:
    return [str(f["message"]) for f in found if f["code"] == "PL905"]


def test_a_resource_covered_beside_gpus_in_a_cluster_queue_is_reported(tmp_path: Path) -> None:
    repo = committed_example(tmp_path, "kueue")
    _cover_in_training(repo, ("acme.com/accelerator", 168))
    code, found = _check(repo, ".")
    messages = _pl905(found)
    assert code != 0
    assert any("ClusterQueue 'training'" in m and "acme.com/accelerator" in m for m in messages), messages


def test_a_resource_covered_beside_gpus_in_a_cohort_is_reported(tmp_path: Path) -> None:
    repo = committed_example(tmp_path, "kueue")
    replace_once(repo / COHORT, 'coveredResources: ["nvidia.com/gpu"]',
                 'coveredResources: ["nvidia.com/gpu", "acme.com/accelerator"]')
    replace_once(repo / COHORT, "        nominalQuota: 32\n",
                 '        nominalQuota: 32\n      - name: "acme.com/accelerator"\n        nominalQuota: 32\n')
    code, found = _check(repo, ".")
    assert code != 0
    assert any("Cohort 'east'" in m and "acme.com/accelerator" in m for m in _pl905(found)), _pl905(found)


def test_a_kueue_configuration_transforming_gpus_is_reported(tmp_path: Path) -> None:
    repo = committed_example(tmp_path, "kueue")
    (repo / CONFIG).write_text(TRANSFORM, encoding="utf-8")
    code, found = _check(repo, ".")
    assert code != 0
    assert any("transforms nvidia.com/gpu" in m for m in _pl905(found)), _pl905(found)


def test_a_kueue_configuration_excluding_gpus_is_reported(tmp_path: Path) -> None:
    repo = committed_example(tmp_path, "kueue")
    (repo / CONFIG).write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nresources:\n"
        "  excludeResourcePrefixes: [\"nvidia.com/\"]\n", encoding="utf-8")
    code, found = _check(repo, ".")
    assert code != 0
    assert any("excludes resources starting with 'nvidia.com/'" in m for m in _pl905(found)), _pl905(found)


def test_the_game_fails_check_hook_and_diff(tmp_path: Path) -> None:
    repo = committed_example(tmp_path, "kueue")
    _cover_in_training(repo, ("acme.com/accelerator", 168))
    (repo / CONFIG).write_text(TRANSFORM, encoding="utf-8")
    git(repo, "add", "-A")
    code, out, err = run_cli(["check", "--changed-files", QUEUES, CONFIG], cwd=repo)
    assert code != 0 and "PL905" in out, out + err
    git(repo, "commit", "-qm", "gamed")
    code, found = _check(repo, "--diff", "HEAD~1", ".")
    assert code != 0
    assert len(_pl905(found)) >= 2, _pl905(found)


def test_honest_setups_stay_clean(tmp_path: Path) -> None:
    """cpu and memory beside GPUs, an RDMA device (allowed by default), a Configuration transforming cpu."""
    repo = committed_example(tmp_path, "kueue")
    _cover_in_training(repo, ("cpu", 512), ("memory", '"2Ti"'), ("rdma/hca_shared_devices_a", 64))
    (repo / CONFIG).write_text(TRANSFORM.replace("input: nvidia.com/gpu", "input: cpu"), encoding="utf-8")
    code, found = _check(repo, ".")
    assert _pl905(found) == [] and code == 0, found


def test_the_allow_option_lets_a_network_device_pass(tmp_path: Path) -> None:
    repo = committed_example(tmp_path, "kueue")
    _cover_in_training(repo, ("example.com/roce-nic", 64))
    _, found = _check(repo, ".")
    assert any("example.com/roce-nic" in m for m in _pl905(found)), found
    (repo / ".policylint.yaml").write_text('rules: {PL905: {allow: ["example.com/roce-nic"]}}\n', encoding="utf-8")
    _, found = _check(repo, ".")
    assert _pl905(found) == [], found
    # the allow-list silences a defence, so the gate says it was loosened (PL977) until accepted
    assert any(f["code"] == "PL977" and "PL905 allow" in str(f["message"]) for f in found), found


def test_a_configuration_embedded_in_a_config_map_is_read_within_the_loader_limits(tmp_path: Path) -> None:
    """The embedded text is the user's like any file, so policylint's own loader reads it, with its depth,
    node and alias limits: read by yaml.safe_load, 5,000 nested lists ended the run with a RecursionError."""
    repo = committed_example(tmp_path, "kueue")
    (repo / CONFIG).write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kueue-manager-config\ndata:\n"
        f"  controller_manager_config.yaml: |\n    a: {'[' * 5000}{']' * 5000}\n", encoding="utf-8")
    code, found = _check(repo, ".")
    assert code in (0, 1) and _pl905(found) == []
    (repo / CONFIG).write_text(TRANSFORM, encoding="utf-8")
    code, found = _check(repo, ".")
    assert any("transforms nvidia.com/gpu" in m for m in _pl905(found)), _pl905(found)
