"""``policylint bands --pool CLUSTER/POOL [PATH]`` through the real entry point."""

from __future__ import annotations

import json

from conftest import EXAMPLES, REPO, run_cli


def test_pool_bands_text_shows_pooled_and_summed_figures_and_a_chart() -> None:
    code, out, err = run_cli(["bands", "--pool", "prod-east/batch", "examples/good"], cwd=REPO)
    assert (code, err) == (0, "")
    assert out.startswith("Pooled demand of pool prod-east/batch (2 workloads)\n")
    # nightly-eval starts in 600 s, longer than the pool's 420 s elastic cold start: its window decides
    assert "cold start 600 s (workload nightly-eval's coldStartSeconds, the slowest of the pool)" in out
    lines = [line.split() for line in out.splitlines()]
    assert ["baseline", "20", "26", "6"] in lines
    assert ["daily", "26", "38", "12"] in lines
    assert "- baseline 20  = daily 26  ~ peak 42  ┃ pooled GPUs (column range)" in out


def test_pool_bands_json_is_stable() -> None:
    code, out, _ = run_cli(["bands", "--pool", "prod-east/serving", str(EXAMPLES / "good"), "--format", "json"])
    assert code == 0
    doc = json.loads(out)
    assert doc["pool"] == "prod-east/serving"
    assert doc["pooled"]["bands_gpus"] == {"baseline": 53, "daily": 56, "peak": 82}
    assert doc["sum_of_workload_bands_gpus"] == {"baseline": 53, "daily": 58, "peak": 103, "sustained_max": 73}
    assert doc["capacity"] == {"elastic_gpus": 10, "reserved_gpus": 48, "total_gpus": 58}
    assert doc["pooled"]["members"] == ["chat-assistant", "code-completion", "embeddings-search", "reranker"]
    assert doc["pooled"]["daily_queue"]["max_wait_seconds"] == 0.0


def test_unknown_pool_is_a_usage_error_naming_the_pools() -> None:
    code, out, err = run_cli(["bands", "--pool", "prod-east/nope", "examples/good"], cwd=REPO)
    assert (code, out) == (2, "")
    assert err == (
        "policylint: error: no pool 'prod-east/nope' in the repository"
        " (pools: prod-east/batch, prod-east/serving, train-central/training)\n"
    )


def test_pool_with_unmeasured_workloads_says_which() -> None:
    code, _, err = run_cli(["bands", "--pool", "prod-east/serving", "examples/bad"], cwd=REPO)
    assert code == 2
    assert "no measured GPU demand" in err and "code-completion" in err and "safety-filter" in err


def test_empty_pool_and_missing_trace() -> None:
    code, _, err = run_cli(["bands", "--pool", "prod-west/standby", "examples/bad"], cwd=REPO)
    assert code == 2 and "has no workloads" in err
    code, _, err = run_cli(["bands"])
    assert (code, err) == (2, "policylint: error: bands needs a TRACE (or --pool CLUSTER/POOL [PATH])\n")
    code, _, err = run_cli(["bands", "--pool", "nopool", "examples/good"], cwd=REPO)
    assert (code, err) == (2, "policylint: error: --pool expects CLUSTER/POOL, got 'nopool'\n")
