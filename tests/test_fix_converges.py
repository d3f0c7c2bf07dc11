"""Fixes converge: ``check --fix --unsafe-fixes`` then ``check`` leaves none of the sizing findings it fixed, and adds none.

Run through the CLI on examples/bad, examples/good, the Kueue examples, the repository ``policylint init``
writes (as written, and with ``reservedGpus: 30`` against a pending 1-GPU proposal) and
small generated repositories. A finding counts as addressed when ``--fix`` did not name
it in a "no fix" note; the sizing findings are those a plan answers for
(:data:`policylint.plan.SIZING_RULES`).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES, REPO, replace_once, run_cli
from test_plans_inputs import day_samples, diurnal, write_trace

from policylint.commands.export import QUOTA_RULES
from policylint.catalogue import fixes
from policylint.plan import SIZING_RULES

Key = tuple[str, str]  # (code, subject)
NOTE = re.compile(r"^\s+(\S+):(\d+):(\d+): (PL\d{3}): no fix")


def _sizing(root: Path, *extra: str) -> tuple[list[dict[str, object]], str]:
    """The sizing findings of ``check`` at ``root`` (after ``extra`` flags such as --fix), and stderr."""
    code, out, err = run_cli(["check", "--format", "json", *extra], cwd=root)
    assert code in (0, 1), err
    return [f for f in json.loads(out)["findings"] if f["code"] in SIZING_RULES], err


def _key(f: dict[str, object]) -> Key:
    return (str(f["code"]), str(f["subject"]))


def assert_fixes_converge(root: Path) -> tuple[set[Key], set[Key]]:
    """Fix ``root`` in place; return (sizing findings before, after). Asserts convergence."""
    before, _ = _sizing(root)
    _, err = _sizing(root, "--fix", "--unsafe-fixes")
    unfixed = {(m.group(4), f"{m.group(1)}:{m.group(2)}:{m.group(3)}") for m in map(NOTE.match, err.splitlines()) if m}
    addressed = {
        _key(f) for f in before if f["code"] in fixes() and (f["code"], f"{f['file']}:{f['line']}:{f['column']}") not in unfixed
    }
    after, _ = _sizing(root)
    left = {_key(f) for f in after}
    assert sorted(addressed & left) == [], f"fixed, yet still reported:\n{err}"
    assert sorted(left - {_key(f) for f in before}) == [], f"new sizing findings after --fix:\n{err}"
    return {_key(f) for f in before}, left


def _copy(src: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(src, tmp_path / src.name))


def test_bad_example_converges(tmp_path: Path) -> None:
    before, after = assert_fixes_converge(_copy(EXAMPLES / "bad", tmp_path))
    # the sizing of the shared pool (PL101, PL102, PL201) is fixed; the rerank pool gets its baseline
    # (PL104) but, without elastic capacity, stays short of its daily band
    assert {("PL101", "pool prod-east/shared"), ("PL102", "pool prod-east/shared"), ("PL201", "pool prod-east/shared")} <= before
    assert ("PL801", "proposal 2027-q1-everything") in before
    assert not {k for k in after if k[0] in {"PL101", "PL102", "PL104", "PL201"}}
    text = (tmp_path / "bad" / "clusters" / "prod-east.yaml").read_text(encoding="utf-8")
    # 57-GPU baseline: the 57 owned GPUs stay reserved (the hint's figure) and capacity is the daily band;
    # the proposal, which the pool no longer needs, is left for the user to withdraw (PL801 stays), never
    # lowered to a one-GPU purchase the pool does not need
    assert "reservedGpus: 57  #" in text and "maxGpus: 12\n" in text
    assert ("PL801", "proposal 2027-q1-everything") in after
    assert "gpus: 128  #" in (tmp_path / "bad" / "proposals" / "2027-q1-everything.yaml").read_text(encoding="utf-8")


def test_good_example_has_nothing_to_fix(tmp_path: Path) -> None:
    root = _copy(EXAMPLES / "good", tmp_path)
    snapshot = {p: p.read_bytes() for p in root.rglob("*.yaml")}
    before, after = assert_fixes_converge(root)
    assert before == after == set()
    assert {p: p.read_bytes() for p in root.rglob("*.yaml")} == snapshot


@pytest.mark.parametrize("name", ["kueue", "kueue-bad"])
def test_scheduler_examples_converge(tmp_path: Path, name: str) -> None:
    assert_fixes_converge(_copy(EXAMPLES / name, tmp_path))


@pytest.fixture
def init_repo(tmp_path: Path) -> Path:
    root = tmp_path / "init"
    code, _, err = run_cli(["init", str(root)])
    assert code == 0, err
    return root


def test_init_repository_converges(init_repo: Path) -> None:
    before, after = assert_fixes_converge(init_repo)
    assert before == after == set()


def test_reservation_fix_keeps_owned_gpus_before_a_request(init_repo: Path) -> None:
    """reservedGpus 30 against an 8-GPU baseline and a 1-GPU request the pool no longer needs: the fix
    reserves 8 and leaves the request to be withdrawn (it used to reserve 7 and keep the purchase)."""
    replace_once(init_repo / "clusters" / "example.yaml", "reservedGpus: 7", "reservedGpus: 30")
    before, after = assert_fixes_converge(init_repo)
    assert {("PL101", "pool example/serving"), ("PL801", "proposal example-request")} <= before
    assert after == {("PL801", "proposal example-request")}
    assert "reservedGpus: 8" in (init_repo / "clusters" / "example.yaml").read_text(encoding="utf-8")
    assert "gpus: 1\n" in (init_repo / "proposals" / "example-request.yaml").read_text(encoding="utf-8")


def test_a_request_above_the_shortfall_is_lowered_to_it(init_repo: Path) -> None:
    """With the reservation left as it is, a request asking more than the pool lacks gets what it lacks."""
    replace_once(init_repo / "clusters" / "example.yaml", "reservedGpus: 7", "reservedGpus: 5")
    replace_once(init_repo / "proposals" / "example-request.yaml", "gpus: 1\n", "gpus: 40\n")
    before, after = assert_fixes_converge(init_repo)
    assert ("PL801", "proposal example-request") in before and after == set()
    assert "reservedGpus: 5" in (init_repo / "clusters" / "example.yaml").read_text(encoding="utf-8")
    assert "gpus: 3\n" in (init_repo / "proposals" / "example-request.yaml").read_text(encoding="utf-8")


def test_safe_fixes_alone_never_move_a_reservation_without_its_capacity(init_repo: Path) -> None:
    """Lowering a reservation is safe, raising the elastic part that keeps capacity is not: both wait for --unsafe-fixes."""
    replace_once(init_repo / "clusters" / "example.yaml", "reservedGpus: 7", "reservedGpus: 10")
    replace_once(init_repo / "clusters" / "example.yaml", "maxGpus: 2", "maxGpus: 0")
    before, _ = _sizing(init_repo)
    assert ("PL101", "pool example/serving") in {_key(f) for f in before}
    text = (init_repo / "clusters" / "example.yaml").read_text(encoding="utf-8")
    _, err = _sizing(init_repo, "--fix")
    assert "withheld" in err
    assert (init_repo / "clusters" / "example.yaml").read_text(encoding="utf-8") == text
    assert_fixes_converge(init_repo)
    text = (init_repo / "clusters" / "example.yaml").read_text(encoding="utf-8")
    # capacity stays 10 GPUs: the 8-GPU baseline reserved (owned GPUs kept before the 1-GPU request) and 2 elastic
    assert "reservedGpus: 8" in text and "maxGpus: 2" in text


# -- generated repositories ------------------------------------------------------------------------

def _trace(path: Path, seed: int) -> None:
    """92 days at 5 minutes: a diurnal curve (60..140 in flight) plus a few hour-long bursts a week."""
    rng = np.random.default_rng(seed)
    times = day_samples(92)
    values = diurnal(times) + rng.integers(0, 4, size=times.size)  # no two days alike
    for start in rng.choice(values.size - 24, size=40, replace=False):
        values[start : start + int(rng.integers(3, 24))] += int(rng.integers(20, 80))
    write_trace(path, values)

CLUSTER = """apiVersion: policylint/v1
kind: Cluster
metadata: {{name: gen}}
spec:
  pools:
    - name: serving
      gpu: {{model: H100-80GB, memoryGiB: 80}}
      reservedGpus: {reserved}
{elastic}      serves: [inference]
      overflow: {overflow}
      queue: {{maxDepth: 1000, maxWaitSeconds: 60}}
"""

WORKLOAD = """---
apiVersion: policylint/v1
kind: Workload
metadata: {name: chat, team: platform}
spec:
  class: inference
  cluster: gen
  pool: serving
  gpusPerReplica: 1
  concurrency:
    trace: {path: traces/chat.csv}
  perGpuConcurrency: {value: 10, measuredIn: production, source: "grafana: latency board, 2026-11"}
  coldStartSeconds: 600
  tolerance:
    maxQueueSeconds: 60
    evidence: {url: "https://slo.acme-ai.dev/product/chat#ttft"}
  vram: {residentGiB: 20, residencySeconds: 86400, activeComputeSeconds: 60000}
"""

PROPOSAL = """apiVersion: policylint/v1
kind: Proposal
metadata: {{name: more}}
spec:
  cluster: gen
  date: "2026-11-20"
  requests:
{requests}  workloads: [chat]
  justification: Measured chat traffic.
"""


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reserved=st.integers(0, 40),
    elastic=st.none() | st.integers(0, 30),
    overflow=st.sampled_from(["queue", "reject"]),
    asks=st.lists(st.integers(1, 20), max_size=2),
    seed=st.integers(0, 2**16),
)
def test_generated_repositories_converge(reserved: int, elastic: int | None, overflow: str, asks: list[int], seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _trace(root / "traces" / "chat.csv", seed)
        (root / ".policylint.yaml").write_text('now: "2026-12-01"\n', encoding="utf-8")
        block = "" if elastic is None else f"      elastic: {{maxGpus: {elastic}, kind: autoscale, coldStartSeconds: 600}}\n"
        (root / "plan.yaml").write_text(CLUSTER.format(reserved=reserved, elastic=block, overflow=overflow) + WORKLOAD, encoding="utf-8")
        if asks:
            requests = "".join(f"    - {{pool: serving, gpus: {n}}}\n" for n in asks)
            (root / "more.yaml").write_text(PROPOSAL.format(requests=requests), encoding="utf-8")
        assert_fixes_converge(root)


def test_a_pools_fixes_are_written_together_or_not_at_all(init_repo: Path) -> None:
    """A reservation and the capacity that follows it are one group: when the file cannot be written,
    neither moves; a request the pool no longer needs is never lowered to make room."""
    cluster, proposal = init_repo / "clusters" / "example.yaml", init_repo / "proposals" / "example-request.yaml"
    replace_once(cluster, "reservedGpus: 7", "reservedGpus: 30")
    replace_once(proposal, "gpus: 1\n", "gpus: 3\n")
    before = proposal.read_bytes(), cluster.read_bytes()
    cluster.chmod(0o444)
    _, err = _sizing(init_repo, "--fix", "--unsafe-fixes")
    assert "clusters/example.yaml: not fixed (read-only file" in err
    assert "proposals/example-request.yaml:15:7: PL801: no fix (the pool needs no more GPUs: drop this request)" in err
    assert err.startswith("fixed 0 numbers")
    assert (proposal.read_bytes(), cluster.read_bytes()) == before


# -- export --update --------------------------------------------------------------------------------

PROVISIONING = REPO / "tests" / "data" / "kueue-provisioning" / "provisioning-setup.yaml"


@pytest.fixture
def provisioning_repo(init_repo: Path) -> Path:
    """The init repository's service admitted through the upstream provisioning-setup ClusterQueue (no cohort, 9 GPUs)."""
    shutil.rmtree(init_repo / "clusters")
    shutil.rmtree(init_repo / "proposals")
    (init_repo / "kueue").mkdir()
    shutil.copy(PROVISIONING, init_repo / "kueue" / "provisioning-setup.yaml")
    replace_once(
        init_repo / "workloads" / "example-service.yaml",
        "  cluster: example\n  pool: serving\n",
        "  queue: {scheduler: kueue, name: default/user-queue}\n",
    )
    return init_repo


def _export_update(root: Path) -> tuple[int, str]:
    code, out, err = run_cli(["export", "kueue", ".", "--update", "kueue"], cwd=root)
    assert out == "", err
    return code, err


def test_update_of_a_queue_without_cohort_keeps_its_daily_band(provisioning_repo: Path) -> None:
    """Its baseline is 8 and its daily band 9: without a cohort nothing can be borrowed, so 9 stay nominal (not 8)."""
    manifest = provisioning_repo / "kueue" / "provisioning-setup.yaml"
    before, _ = _sizing(provisioning_repo)
    assert not {f["code"] for f in before} & QUOTA_RULES
    code, err = _export_update(provisioning_repo)
    assert code == 0, err
    assert manifest.read_bytes() == PROVISIONING.read_bytes()  # 9 was right: nothing to change
    assert err == (
        "set 0 quota numbers in 0 files\n"
        "  note: kueue/provisioning-setup.yaml: ClusterQueue cluster-queue: belongs to no cohort, so its nominalQuota"
        " of 9 holds the whole daily band; to guarantee only the baseline of 8 and borrow the other 1, give it a cohort"
        " and a borrowingLimit\n"
    )
    after, _ = _sizing(provisioning_repo)
    assert sorted(map(_key, after)) == sorted(map(_key, before))


def test_update_output_checks_clean_or_says_why(provisioning_repo: Path) -> None:
    """From 12 GPUs the update writes the daily band; with a 5% headroom that is PL101, and the command exits 1."""
    manifest = provisioning_repo / "kueue" / "provisioning-setup.yaml"
    replace_once(manifest, '- name: "nvidia.com/gpu"\n        nominalQuota: 9\n', '- name: "nvidia.com/gpu"\n        nominalQuota: 12\n')
    code, err = _export_update(provisioning_repo)
    assert code == 0, err
    assert "cluster-queue nominalQuota 12 -> 9 (pooled baseline band of cluster-queue/cluster-queue 8 + 1 of the daily band: no cohort to borrow them from)" in err
    assert "reads back" not in err  # the read-back agrees with the no-cohort note
    assert not {f["code"] for f in _sizing(provisioning_repo)[0]} & QUOTA_RULES

    replace_once(manifest, '- name: "nvidia.com/gpu"\n        nominalQuota: 9\n', '- name: "nvidia.com/gpu"\n        nominalQuota: 12\n')
    with (provisioning_repo / ".policylint.yaml").open("a", encoding="utf-8") as config:
        config.write("rules: {PL101: {headroom: 0.05}}\n")
    code, err = _export_update(provisioning_repo)
    assert code == 1
    assert "kueue/provisioning-setup.yaml:22:9: error PL101 pool cluster-queue/cluster-queue reserves 9 GPUs" in err
    assert err.endswith("policylint: the updated quotas do not pass the sizing rules (1 finding above); see the notes of the update\n")
    assert "cohort cannot lend" not in err
