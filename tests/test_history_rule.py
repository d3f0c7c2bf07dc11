"""PL950 capacity-without-new-evidence: judged on a real two-commit git repository.

The repository is the small shared one (tests/data/minirepo): its batch pool
reserves 20 GPUs for the offline-scoring workload alone.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLES, copy_minirepo, git, replace_once, run_cli
from fixture_helpers import MINI_STEP

CLUSTER = "clusters/prod-east.yaml"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = copy_minirepo(tmp_path / "capacity")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def raise_batch_reserved(repo: Path, gpus: int) -> int:
    """Set the batch pool's reservedGpus; return the line it is on."""
    path = repo / CLUSTER
    lines = path.read_text().splitlines()
    in_batch = False
    for i, line in enumerate(lines):
        if "- name: batch" in line:
            in_batch = True
        if in_batch and line.strip().startswith("reservedGpus:"):
            lines[i] = line.split("reservedGpus:")[0] + f"reservedGpus: {gpus}"
            path.write_text("\n".join(lines) + "\n")
            return i + 1
    raise AssertionError("batch pool not found")


def findings(repo: Path, *extra: str) -> tuple[int, list[dict[str, object]]]:
    code, out, err = run_cli(["check", ".", "--diff", "HEAD", "--select", "PL950", "--format", "json", *extra], cwd=repo)
    assert "Traceback" not in err
    return code, json.loads(out)["findings"] if out else []


def test_increase_without_new_measurement_is_flagged(repo: Path) -> None:
    line = raise_batch_reserved(repo, 22)  # base has 20; 22 stays within PL101's headroom
    code, found = findings(repo)
    assert code == 1
    assert [(f["code"], f["file"], f["line"]) for f in found] == [("PL950", CLUSTER, line)]
    assert "up from 20" in str(found[0]["message"])


def test_increase_backed_by_new_demand_passes(repo: Path) -> None:
    """The trace measured again shows a quarter more running jobs: the pooled baseline grows, and with it the raise."""
    raise_batch_reserved(repo, 22)
    trace = repo / "measurements" / "traces" / "offline-scoring.csv"
    header, *rows = trace.read_text().splitlines()
    stamped = [row.split(",") for row in rows]
    trace.write_text("\n".join([header, *(f"{t},{round(float(v) * 1.25)}" for t, v in stamped)]) + "\n")
    code, found = findings(repo)
    assert found == []
    assert code == 0


def test_a_new_measurement_that_moves_no_demand_backs_no_raise(repo: Path) -> None:
    """Red team, 2026-12-06, round 11: one sample changed was "new evidence" for any raise PL101's headroom allowed."""
    line = raise_batch_reserved(repo, 22)
    trace = repo / "measurements" / "traces" / "offline-scoring.csv"
    last = trace.read_text().splitlines()[-1].split(",")
    with trace.open("a") as fh:  # one more sample at the trace's step: the measurement changed, its bands did not
        fh.write(f"{int(last[0]) + MINI_STEP},{last[1]}\n")
    code, found = findings(repo)
    assert code == 1
    assert [(f["code"], f["file"], f["line"]) for f in found] == [("PL950", CLUSTER, line)]
    assert found[0]["message"] == (
        "pool prod-east/batch reserves 22 GPUs, up from 20 at the base revision, but its new measurements move its"
        " pooled baseline from 20 to 20 GPUs, which backs at most 20: capacity grew beyond its new evidence")


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text + "\n",  # a blank line appended
        lambda text: text.replace("\n", "\r\n"),  # another line ending
    ],
    ids=["blank-line", "crlf"],
)
def test_a_trace_whose_bytes_changed_but_not_its_series_is_no_new_evidence(repo: Path, edit: object) -> None:
    """Red team: one blank line appended to a trace made a 48 -> 60 GPU reservation pass as 'new evidence'."""
    line = raise_batch_reserved(repo, 22)
    trace = repo / "measurements" / "traces" / "offline-scoring.csv"
    trace.write_bytes(edit(trace.read_text()).encode())  # type: ignore[operator]
    code, found = findings(repo)
    assert code == 1
    assert [(f["code"], f["file"], f["line"]) for f in found] == [("PL950", CLUSTER, line)]


def test_no_diff_means_rule_does_not_apply(repo: Path) -> None:
    raise_batch_reserved(repo, 22)
    code, out, _ = run_cli(["check", ".", "--select", "PL950", "--format", "json"], cwd=repo)
    assert code == 0
    assert json.loads(out)["findings"] == []


def test_decrease_is_fine(repo: Path) -> None:
    raise_batch_reserved(repo, 19)
    code, found = findings(repo)
    assert (code, found) == (0, [])


def _committed(tmp_path: Path, example: str) -> Path:
    """A copy of ``examples/<example>`` in a git repository of its own, committed as the base."""
    root = tmp_path / example
    shutil.copytree(EXAMPLES / example, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def test_raising_a_kueue_nominal_quota_is_flagged_like_reserved_gpus(tmp_path: Path) -> None:
    """History used to re-read only `kind: Cluster`: a ClusterQueue's pool never had a base figure."""
    root = _committed(tmp_path, "kueue")
    queues = root / "kueue" / "cluster-queues.yaml"
    text = queues.read_text()
    assert text.count("nominalQuota: 22") == 1
    queues.write_text(text.replace("nominalQuota: 22", "nominalQuota: 23"))
    line = 1 + text.splitlines().index("        nominalQuota: 22")
    code, found = findings(root)
    assert code == 1
    assert [(f["code"], f["file"], f["line"]) for f in found] == [("PL950", "kueue/cluster-queues.yaml", line)]
    assert "reserves 23 GPUs, up from 22" in str(found[0]["message"])
    # the same figure again is no increase; lowering it is fine
    queues.write_text(text.replace("nominalQuota: 22", "nominalQuota: 21"))
    assert findings(root) == (0, [])


def _good_repo(tmp_path: Path) -> Path:
    root = _committed(tmp_path, "good")
    cluster = root / "clusters" / "train-central.yaml"
    cluster.write_text(cluster.read_text().replace("reservedGpus: 392", "reservedGpus: 450"))
    return root


def _resort(path: Path) -> None:
    """The same rows under the header, in another order (by their last column, then the rest)."""
    header, *rows = path.read_text().splitlines()
    path.write_text("\n".join([header, *sorted(rows, key=lambda r: (r.split(",")[-1], r), reverse=True)]) + "\n")


def test_a_job_list_sorted_again_is_no_new_evidence(tmp_path: Path) -> None:
    """Red team, 2026-12-06 (round 8): only a concurrency trace was read at the base; a job list sorted
    again by another column, or given a blank line, was new evidence for 58 more reserved GPUs."""
    root = _good_repo(tmp_path)
    jobs = root / "measurements" / "jobs" / "fine-tuning.csv"
    before = jobs.read_text()
    _resort(jobs)
    assert jobs.read_text() != before
    code, found = findings(root)
    assert code == 1 and [f["message"] for f in found] == [
        "pool train-central/training reserves 450 GPUs, up from 392 at the base revision, but no measurement of its"
        " workloads changed: capacity grew without new evidence"]
    jobs.write_text(before + "\n")  # a blank line
    assert findings(root)[0] == 1
    # one job that ran a second longer: the list holds other jobs, and that is new evidence
    header, first, *rest = before.splitlines()
    job, start, end, gpus = first.split(",")
    jobs.write_text("\n".join([header, f"{job},{start},{int(end) + 1},{gpus}", *rest]) + "\n")
    code, found = findings(root)
    # ... but it moves no demand, so it backs no raise (round 11)
    assert code == 1 and "move its pooled baseline from 392 to 392 GPUs, which backs at most 392" in str(
        found[0]["message"])


def test_a_sample_edited_inside_a_declared_exclusion_is_no_new_evidence(tmp_path: Path) -> None:
    """Red team, 2026-12-06 (round 9): one sample of chat-assistant edited inside its own declared incident
    (which the calculator leaves out) was new evidence for 12 more reserved GPUs on bands equal to the base's."""
    root = _committed(tmp_path, "good")
    cluster = root / "clusters" / "prod-east.yaml"
    cluster.write_text(cluster.read_text().replace("reservedGpus: 48", "reservedGpus: 55"))
    trace = root / "measurements" / "traces" / "chat-assistant.csv"
    text = trace.read_text()
    assert "\n1791968400,356\n" in text  # 2026-10-14T09:00Z: inside the exclusion 09:00-15:00
    trace.write_text(text.replace("\n1791968400,356\n", "\n1791968400,357\n"))
    code, found = findings(root)
    assert code == 1 and [f["message"] for f in found] == [
        "pool prod-east/serving reserves 55 GPUs and its proposals ask 5 more, 60 in all, up from 53 at the base"
        " revision (48 owned and 5 proposed), but no measurement of its workloads changed: capacity grew without new"
        " evidence"]
    # the same edit one step before the incident is a sample the bands read: new evidence
    assert "\n1791968100," in text
    before = text.split("\n1791968100,", 1)[1].split("\n", 1)[0]
    trace.write_text(text.replace(f"\n1791968100,{before}\n", f"\n1791968100,{int(before) + 1}\n"))
    code, found = findings(root)
    # ... which moves no demand, so it backs no raise (round 11)
    assert code == 1 and "which backs at most 53: capacity grew beyond its new evidence" in str(found[0]["message"])


# --- the figure and the bound moved together (red team, 2026-12-06, round 10) ---------------------------------


def _serving(root: Path, reserved: int, elastic: int, model: str | None = None) -> None:
    cluster = root / "clusters" / "prod-east.yaml"
    text = cluster.read_text()
    text = text.replace("reservedGpus: 48", f"reservedGpus: {reserved}").replace("maxGpus: 10", f"maxGpus: {elastic}")
    if model is not None:
        text = text.replace("gpu: {model: H200-SXM-141GB, memoryGiB: 141}", f"gpu: {{model: {model}, memoryGiB: 180}}")
    cluster.write_text(text)


def _reranker_per_gpu(root: Path, value: float) -> None:
    workloads = root / "workloads" / "search.yaml"
    figure = re.compile(r"(perGpuConcurrency:\n    value: )[0-9.]+(\n    measuredIn: production\n    source: Grafana)")
    text, count = figure.subn(rf"\g<1>{value}\g<2>", workloads.read_text())
    assert count == 1
    workloads.write_text(text)


def _refresh_reranker(root: Path) -> None:
    """A rolling-window refresh: the trace's first day dropped, so PL950 sees new evidence."""
    trace = root / "measurements" / "traces" / "reranker.csv"
    header, *rows = trace.read_text().splitlines()
    day = 24 * 12  # five-minute samples
    trace.write_text("\n".join([header, *rows[day:]]) + "\n")


def _select(root: Path, codes: str, *extra: str) -> tuple[int, list[dict[str, object]]]:
    code, out, err = run_cli(["check", ".", "--select", codes, "--format", "json", "--no-cache", *extra], cwd=root)
    assert "Traceback" not in err, err
    return code, json.loads(out)["findings"] if out else []


def test_a_per_gpu_figure_lowered_with_the_pool_raised_is_judged_on_the_pool_that_ran(tmp_path: Path) -> None:
    """19 -> 1 in flight per GPU and the serving pool 58 -> 199 GPUs: +133 reserved, passed every rule."""
    root = _committed(tmp_path, "good")
    _reranker_per_gpu(root, 1)
    _serving(root, 181, 18)
    _refresh_reranker(root)
    # without --diff the only capacity known is the plan's own, which moved with the figure
    assert _select(root, "PL950,PL951,PL973") == (0, [])
    code, found = _select(root, "PL950,PL951,PL973", "--diff", "HEAD")
    assert code == 1
    assert sorted((f["code"], f["file"]) for f in found) == [("PL950", "clusters/prod-east.yaml"),
                                                             ("PL951", "clusters/prod-east.yaml")]
    message = str(next(f for f in found if f["code"] == "PL951")["message"])
    assert "pooled baseline is 186 GPUs" in message and "on 58 GPUs at the base revision" in message
    # the refreshed day backs no raise: read with today's per-GPU figure, the base's files need what today's do
    # (red team, 2026-12-06, round 12: the figure's own change had counted as new demand)
    assert "(the base's files read with today's declarations; 53 as the base declared them)" in str(
        next(f for f in found if f["code"] == "PL950")["message"])


def test_the_honest_raise_with_new_evidence_passes_pl951(tmp_path: Path) -> None:
    root = _committed(tmp_path, "good")
    _serving(root, 60, 18)
    _refresh_reranker(root)
    assert _select(root, "PL951,PL973", "--diff", "HEAD") == (0, [])


def test_pl973_bounds_one_workload_by_the_base_capacity(tmp_path: Path) -> None:
    """Lowered far enough for one workload alone: PL973 names the base capacity and today's."""
    root = _committed(tmp_path, "good")
    _reranker_per_gpu(root, 0.5)  # baseline 146 in flight -> 292 GPUs: above 3 x 58, below 3 x 199
    _serving(root, 181, 18)
    assert _select(root, "PL973") == (0, [])
    code, found = _select(root, "PL973", "--diff", "HEAD")
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL973", "workloads/search.yaml")]
    assert "on 58 GPUs (its capacity at the base revision; 199 in this change)" in str(found[0]["message"])


def test_pl951_allows_for_workloads_placed_elsewhere_at_the_base(tmp_path: Path) -> None:
    """A workload moved in brought demand another pool carried: its baseline is added to what ran."""
    root = _committed(tmp_path, "good")
    search = root / "workloads" / "search.yaml"
    text = search.read_text()
    assert text.count("pool: batch") == 1
    # offline-scoring moves from batch to serving, which is raised to take it
    search.write_text(text.replace("pool: batch", "pool: serving"))
    _serving(root, 58, 40)
    assert _select(root, "PL951", "--diff", "HEAD") == (0, [])
    # 186 GPUs pooled: within three times the 58 that ran plus offline-scoring's 10 (it ran in batch)
    _reranker_per_gpu(root, 1)
    assert _select(root, "PL951", "--diff", "HEAD") == (0, [])
    _reranker_per_gpu(root, 0.8)  # 223 GPUs pooled
    code, found = _select(root, "PL951", "--diff", "HEAD")
    assert code == 1, found
    message = str(found[0]["message"])
    assert "for the baselines of offline-scoring, placed elsewhere then" in message, message


def test_a_pool_whose_gpu_model_is_swapped_with_its_proposal_is_reported(tmp_path: Path) -> None:
    """H200 -> B200 in the pool and in the proposal together: PL804 had nothing left to compare."""
    root = _committed(tmp_path, "good")
    _serving(root, 48, 10, model="B200-SXM-192GB")
    proposal = root / "proposals" / "2027-q1-serving.yaml"
    text = proposal.read_text()
    assert "gpuModel: H200-SXM-141GB" in text
    proposal.write_text(text.replace("gpuModel: H200-SXM-141GB", "gpuModel: B200-SXM-192GB"))
    assert _select(root, "PL804,PL952") == (0, [])
    code, found = _select(root, "PL804,PL952", "--diff", "HEAD")
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [
        ("PL952", "clusters/prod-east.yaml"), ("PL804", "proposals/2027-q1-serving.yaml")]
    assert "which runs H200-SXM-141GB at the base revision (B200-SXM-192GB in this change)" in str(found[1]["message"])
    # the model written in another case is the same model
    _serving(root, 48, 10)
    cluster = root / "clusters" / "prod-east.yaml"
    cluster.write_text(cluster.read_text().replace("B200-SXM-192GB", "h200-sxm-141gb").replace("memoryGiB: 180", "memoryGiB: 141"))
    proposal.write_text(text)
    assert _select(root, "PL804,PL952", "--diff", "HEAD") == (0, [])


def test_pl951_margin_is_the_share_above_what_ran(tmp_path: Path) -> None:
    """186 GPUs pooled on 58 that ran: 3.2 times, so a margin of 2.1 still reports it and 2.25 does not."""
    root = _committed(tmp_path, "good")
    _reranker_per_gpu(root, 1)
    _serving(root, 181, 18)
    _refresh_reranker(root)
    for margin, fires in ((2.1, True), (2.25, False)):
        (root / ".policylint.yaml").write_text(f"rules:\n  PL951:\n    margin: {margin}\n")
        code, found = _select(root, "PL951", "--diff", "HEAD")
        assert ([f["code"] for f in found] == ["PL951"]) is fires, (margin, found)


def test_a_pool_renamed_in_the_change_is_found_by_its_workloads(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 11: `training` renamed `training-h100` and raised 392 -> 450 passed PL950."""
    root = _committed(tmp_path, "good")
    cluster = root / "clusters" / "train-central.yaml"
    cluster.write_text(cluster.read_text().replace("- name: training", "- name: training-h100")
                       .replace("reservedGpus: 392", "reservedGpus: 450"))
    research = root / "workloads" / "research.yaml"
    text = research.read_text()
    assert text.count("pool: training\n") == 2
    research.write_text(text.replace("pool: training\n", "pool: training-h100\n"))
    code, found = findings(root)
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", "clusters/train-central.yaml")]
    assert "pool train-central/training-h100 reserves 450 GPUs, up from 392" in str(found[0]["message"])
    # the rename alone is no raise
    cluster.write_text(cluster.read_text().replace("reservedGpus: 450", "reservedGpus: 392"))
    assert findings(root) == (0, [])


def test_a_kueue_quota_raised_as_lendable_is_still_owned(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 11: nominalQuota 104 -> 123 with lendingLimit 19 read as 104 reserved."""
    root = _committed(tmp_path, "kueue")
    queues = root / "kueue" / "cluster-queues.yaml"
    text = queues.read_text()
    assert text.count("        nominalQuota: 104\n") == 1
    queues.write_text(text.replace("        nominalQuota: 104\n", "        nominalQuota: 123\n        lendingLimit: 19\n"))
    code, found = findings(root)
    assert code == 1
    assert [(f["code"], f["file"], f["line"]) for f in found] == [("PL950", "kueue/cluster-queues.yaml", 56)]
    assert "owns 123 GPUs of nominal quota (19 of them lendable, so 104 read as reserved), up from 104" in str(
        found[0]["message"])
    # lending part of the same quota is no raise
    queues.write_text(text.replace("        nominalQuota: 104\n", "        nominalQuota: 104\n        lendingLimit: 19\n"))
    assert findings(root) == (0, [])


def test_a_trace_moved_in_time_is_no_new_evidence(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 11: offline-scoring's night moved three hours onto nightly-eval's (its last
    three hours dropped so no sample lies after `now`), and the batch pool raised from 20 to 27 GPUs."""
    root = _committed(tmp_path, "good")
    cluster = root / "clusters" / "prod-east.yaml"
    cluster.write_text(cluster.read_text().replace("reservedGpus: 20", "reservedGpus: 27"))
    trace = root / "measurements" / "traces" / "offline-scoring.csv"
    header, *rows = trace.read_text().splitlines()
    moved = [f"{int(t) + 3 * 3600},{v}" for t, v in (row.split(",") for row in rows[:-36])]
    trace.write_text("\n".join([header, *moved]) + "\n")
    code, found = findings(root)
    assert code == 1
    assert [f["code"] for f in found] == ["PL950"]
    assert "reserves 27 GPUs, up from 20 at the base revision, but" in str(found[0]["message"])
    assert "moved in time (re-timed, or reordered within the day), which is no evidence" in str(found[0]["message"])
    # the same trace refreshed over a rolling window (a day dropped at its start) keeps its times: new evidence
    trace.write_text("\n".join([header, *rows[288:]]) + "\n")
    code, found = findings(root)
    assert "but no measurement" not in str(found) and "moved in time" not in str(found)


# --- red team, 2026-12-06, round 12 ------------------------------------------------------------------------


def test_a_cluster_file_moved_in_the_change_keeps_its_base(tmp_path: Path) -> None:
    """`git mv` of the cluster file left every history rule without a base: +353 reserved GPUs passed."""
    root = _committed(tmp_path, "good")
    git(root, "mv", "clusters/prod-east.yaml", "clusters/east.yaml")
    cluster = root / "clusters" / "east.yaml"
    cluster.write_text(cluster.read_text().replace("reservedGpus: 48", "reservedGpus: 60"))
    code, found = findings(root)
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", "clusters/east.yaml")]
    assert "reserves 60 GPUs and its proposals ask 5 more, 65 in all, up from 53 at the base revision" in str(
        found[0]["message"])


def test_an_honest_merge_of_two_pools_is_no_raise(tmp_path: Path) -> None:
    """The pool that takes another's workloads takes the GPUs that carried them: the merge PL988 asks for passes."""
    root = _committed(tmp_path, "good")
    search = root / "workloads" / "search.yaml"
    text = search.read_text()
    search.write_text(text.replace("pool: batch", "pool: serving"))  # offline-scoring: baseline 10 GPUs in batch
    _serving(root, 58, 10)
    code, found = findings(root)
    assert (code, found) == (0, [])
    git(root, "checkout", "-q", "--", "clusters/prod-east.yaml")
    _serving(root, 64, 10)  # one more than what carried them and what the base's proposal asked for (5)
    code, found = findings(root)
    assert code == 1
    assert "reserves 64 GPUs and its proposals ask 5 more, 69 in all, up from 53 at the base revision (48 owned and 5" \
        " proposed), but no measurement of its workloads changed, with 10 for the workloads it took in" in str(
            found[0]["message"])


def test_a_trace_rotated_with_its_times_kept_is_no_new_evidence(tmp_path: Path) -> None:
    """Values rotated by 27 hours (1.2% of the samples), times kept: past the first re-timing screen's 99%."""
    root = _committed(tmp_path, "good")
    cluster = root / "clusters" / "prod-east.yaml"
    cluster.write_text(cluster.read_text().replace("reservedGpus: 20", "reservedGpus: 27"))
    trace = root / "measurements" / "traces" / "offline-scoring.csv"
    header, *rows = trace.read_text().splitlines()
    stamps, values = zip(*(row.split(",") for row in rows), strict=True)
    turned = values[-324:] + values[:-324]
    trace.write_text("\n".join([header, *(f"{t},{v}" for t, v in zip(stamps, turned, strict=True))]) + "\n")
    code, found = findings(root)
    assert code == 1
    assert "reserves 27 GPUs, up from 20 at the base revision, but" in str(found[0]["message"])
    assert "moved in time (re-timed, or reordered within the day), which is no evidence" in str(found[0]["message"])


def test_columns_the_base_cannot_read_back_only_the_base_demand(tmp_path: Path) -> None:
    """A column added to a trace: today's declaration does not read the base's file, so no growth is backed."""
    root = _committed(tmp_path, "good")
    trace = root / "measurements" / "traces" / "chat-assistant.csv"
    header, *rows = trace.read_text().splitlines()
    trace.write_text("\n".join([f"{header},retries", *(f"{row},{i % 7}" for i, row in enumerate(rows))]) + "\n")
    workloads = root / "workloads" / "product-ai.yaml"
    text = workloads.read_text()
    assert text.index("columns: [in_flight]") > text.index("chat-assistant.csv")  # chat-assistant's comes first
    workloads.write_text(text.replace("columns: [in_flight]", "columns: [in_flight, retries]", 1))
    _serving(root, 60, 10)
    code, found = _select(root, "PL950", "--diff", "HEAD")
    assert code == 1
    assert "cannot be read with today's declarations, so only the pooled baseline the base declared (53) backs it," \
        " at most 53" in str(found[0]["message"])


def test_a_cluster_queue_renamed_with_its_local_queue_repointed_keeps_its_base(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 12: ClusterQueue `training` renamed `training-h100`, its LocalQueue
    repointed and its nominalQuota raised from 104 to 119. No workload file changed, so nothing placed
    the queue's workloads at the base: the base's LocalQueue now leads them to the pool they ran in."""
    root = _committed(tmp_path, "kueue")
    queues, local = root / "kueue" / "cluster-queues.yaml", root / "kueue" / "local-queues.yaml"
    text, lq = queues.read_text(), local.read_text()
    assert text.count("  name: training\n") == 1 and lq.count("  clusterQueue: training\n") == 1
    renamed = text.replace("  name: training\n", "  name: training-h100\n")
    local.write_text(lq.replace("  clusterQueue: training\n", "  clusterQueue: training-h100\n"))
    queues.write_text(renamed.replace("        nominalQuota: 104\n", "        nominalQuota: 119\n"))
    code, found = findings(root)
    assert code == 1
    assert [(f["code"], f["file"], f["line"]) for f in found] == [("PL950", "kueue/cluster-queues.yaml", 56)]
    assert "training-h100 reserves 119 GPUs, up from 104" in str(found[0]["message"])
    # the rename alone is no raise
    queues.write_text(renamed)
    assert findings(root) == (0, [])


VOLCANO_REPO = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: {queue}
spec:
  weight: 1
  reclaimable: true
  guarantee:
    resource:
      nvidia.com/gpu: {gpus}
  capability:
    nvidia.com/gpu: {gpus}
"""
VOLCANO_WORKLOAD = """\
apiVersion: policylint/v1
kind: Workload
metadata:
  name: chat-on-volcano
  team: platform
spec:
  class: inference
  queue: {{scheduler: volcano, name: {queue}}}
  gpusPerReplica: 1
  concurrency:
    trace:
      path: diurnal-100.csv
  perGpuConcurrency: {{value: 10, measuredIn: production, source: "grafana: latency board, 2026-11"}}
  coldStartSeconds: 600
  tolerance:
    maxQueueSeconds: 2
    evidence: "p99 time-to-first-token SLO of 2 s, product SLO document 2026-Q3"
"""


def test_a_volcano_queue_renamed_with_its_workload_keeps_its_base(tmp_path: Path) -> None:
    """The same game on Volcano: the queue renamed, the workload repointed, the guarantee raised."""
    root = tmp_path / "volcano"
    root.mkdir()
    shutil.copy(Path(__file__).parent / "rules" / "_traces" / "diurnal-100.csv", root / "diurnal-100.csv")
    (root / "queues.yaml").write_text(VOLCANO_REPO.format(queue="chat-volcano", gpus=14))
    (root / "chat.yaml").write_text(VOLCANO_WORKLOAD.format(queue="chat-volcano"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    assert findings(root) == (0, [])
    (root / "chat.yaml").write_text(VOLCANO_WORKLOAD.format(queue="chat-h100"))
    (root / "queues.yaml").write_text(VOLCANO_REPO.format(queue="chat-h100", gpus=16))
    code, found = findings(root)
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", "queues.yaml")]
    assert "up from 14" in str(found[0]["message"])
    (root / "queues.yaml").write_text(VOLCANO_REPO.format(queue="chat-h100", gpus=14))
    assert findings(root) == (0, [])


def test_two_cluster_queues_that_swap_names_keep_their_own_bases(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 14: `training` and `batch` swapped names with both LocalQueues repointed.

    No quota any workload sees changed, but each pool was matched to its namesake at the base:
    PL950 read "east/batch reserves 104 GPUs, up from 16" (a false positive). Each pool is now the
    pool its workloads ran in; the same swap with a raise is judged against 104, not 16.
    """
    root = _committed(tmp_path, "kueue")
    queues, local = root / "kueue" / "cluster-queues.yaml", root / "kueue" / "local-queues.yaml"
    text, lq = queues.read_text(), local.read_text()
    assert text.count("  name: training\n") == 1 and text.count("  name: batch\n") == 1
    swapped = text.replace("  name: training\n", "  name: @T\n").replace("  name: batch\n", "  name: training\n")
    swapped = swapped.replace("  name: @T\n", "  name: batch\n")
    assert lq.count("  clusterQueue: training\n") == 1 and lq.count("  clusterQueue: batch\n") == 1
    local.write_text(lq.replace("  clusterQueue: training\n", "  clusterQueue: @T\n")
                     .replace("  clusterQueue: batch\n", "  clusterQueue: training\n").replace("@T", "batch"))
    queues.write_text(swapped)
    code, out, err = run_cli(["check", ".", "--diff", "HEAD", "--format", "json"], cwd=root)
    assert "Traceback" not in err
    assert (code, [f["code"] for f in json.loads(out)["findings"]]) == (0, [])
    queues.write_text(swapped.replace("        nominalQuota: 104\n", "        nominalQuota: 119\n"))
    code, found = findings(root)
    assert code == 1
    assert [(f["code"], f["file"], f["line"]) for f in found] == [("PL950", "kueue/cluster-queues.yaml", 56)]
    assert "pool east/batch reserves 119 GPUs, up from 104" in str(found[0]["message"])


def test_two_cluster_queues_merged_under_a_new_name_are_judged_as_a_merge(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 14: `batch` deleted, `training` renamed `research` and both LocalQueues
    pointed at it, owning 128 GPUs where the two owned 104 + 16. A pool of a new name whose workloads ran
    in two had no base: it is now the pool most of them ran in, the other's workload its newcomer."""
    root = _committed(tmp_path, "kueue")
    queues, local, cohort = (root / "kueue" / n for n in ("cluster-queues.yaml", "local-queues.yaml", "cohort.yaml"))
    text = queues.read_text()
    docs = text.split("\n---\n")
    batch = next(d for d in docs if "  name: batch\n" in d)
    merged = "\n---\n".join(d for d in docs if d is not batch)
    if not merged.endswith("\n"):
        merged += "\n"
    merged = merged.replace("  name: training\n", "  name: research\n").replace("        borrowingLimit: 24\n", "        borrowingLimit: 23\n")
    local.write_text(local.read_text().replace("clusterQueue: training\n", "clusterQueue: research\n")
                     .replace("clusterQueue: batch\n", "clusterQueue: research\n"))
    cohort.write_text(cohort.read_text().replace("        nominalQuota: 32\n", "        nominalQuota: 23\n"))
    queues.write_text(merged.replace("        nominalQuota: 104\n", "        nominalQuota: 128\n"))
    code, found = findings(root)
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", "kueue/cluster-queues.yaml")]
    assert "pool east/research reserves 128 GPUs, up from 104" in str(found[0]["message"])
    assert "with 16 for the workloads it took in" in str(found[0]["message"])
    # the two queues' GPUs together: an honest merge
    queues.write_text(merged.replace("        nominalQuota: 104\n", "        nominalQuota: 120\n"))
    assert findings(root) == (0, [])


def test_a_workload_file_moved_in_the_change_keeps_its_base(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 16: `git mv` of search.yaml, the reranker's per-GPU figure 19 -> 1 and serving
    48 -> 197 passed every gate run: the moved file's workloads had no base placement, so they counted as newcomers
    and their baselines were added to what PL950 and PL951 allow."""
    root = _committed(tmp_path, "good")
    _reranker_per_gpu(root, 1)
    _serving(root, 197, 10)
    git(root, "mv", "workloads/search.yaml", "workloads/search-team.yaml")
    code, found = _select(root, "PL950,PL951", "--diff", "HEAD")
    assert code == 1
    assert sorted((f["code"], f["file"]) for f in found) == [("PL950", "clusters/prod-east.yaml"),
                                                             ("PL951", "clusters/prod-east.yaml")]
    assert "reserves 197 GPUs and its proposals ask 5 more, 202 in all, up from 53" in str(next(f for f in found if f["code"] == "PL950")["message"])


def test_a_workload_renamed_with_its_pool_keeps_its_base(tmp_path: Path) -> None:
    """Round 16: `training` renamed `training-h100`, `fine-tuning` renamed `fine-tuning-v3` in its shared file, and
    the pool raised 392 -> 450: a renamed workload has no base placement by its name, so the pool had no base. It is
    found by the trace it cites."""
    root = _committed(tmp_path, "good")
    cluster = root / "clusters" / "train-central.yaml"
    cluster.write_text(cluster.read_text().replace("- name: training", "- name: training-h100")
                       .replace("reservedGpus: 392", "reservedGpus: 450"))
    research = root / "workloads" / "research.yaml"
    research.write_text(research.read_text().replace("pool: training\n", "pool: training-h100\n")
                        .replace("  name: fine-tuning\n", "  name: fine-tuning-v3\n"))
    code, found = findings(root)
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", "clusters/train-central.yaml")]
    assert "pool train-central/training-h100 reserves 450 GPUs, up from 392" in str(found[0]["message"])
    cluster.write_text(cluster.read_text().replace("reservedGpus: 450", "reservedGpus: 392"))
    assert findings(root) == (0, [])  # the renames alone are no raise


def test_taking_delivery_of_what_the_base_proposed_is_no_raise(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 16 (a false positive): serving raised 48 -> 53 with the fulfilled 5-GPU proposal
    deleted was PL950 under --diff. The GPUs the base's proposals asked for the pool back an owned raise."""
    root = _committed(tmp_path, "good")
    _serving(root, 53, 10)
    git(root, "rm", "-q", "proposals/2027-q1-serving.yaml")
    assert findings(root) == (0, [])
    replace_once(root / "clusters" / "prod-east.yaml", "reservedGpus: 53", "reservedGpus: 54")  # one more than delivered
    code, found = findings(root)
    assert code == 1 and "reserves 54 GPUs, up from 53 at the base revision (48 owned and 5 proposed)" in str(
        found[0]["message"])


def test_a_pool_split_into_another_cluster_is_judged_whole(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 16: fine-tuning moved to a new cluster's pool of 119 reserved GPUs, training kept
    368 for pre-training: 487 where one pool owned 392 (+95), and each piece owned less than the base. PL988 pairs
    pools of one cluster only; the pool that keeps the name now answers for what the pieces own together."""
    root = _committed(tmp_path, "good")
    central = root / "clusters" / "train-central.yaml"
    text = central.read_text()
    (root / "clusters" / "train-central-ft.yaml").write_text(
        text.replace("name: train-central\n", "name: train-central-ft\n").replace("reservedGpus: 392", "reservedGpus: 119"))
    central.write_text(text.replace("reservedGpus: 392", "reservedGpus: 368"))
    research = root / "workloads" / "research.yaml"
    body = research.read_text()
    at = body.index("name: fine-tuning")
    research.write_text(body[:at] + body[at:].replace("cluster: train-central\n", "cluster: train-central-ft\n", 1))
    code, found = findings(root)
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", "clusters/train-central.yaml")]
    assert ("reserves 368 GPUs, 487 with train-central-ft/training (split from the same pool at the base revision),"
            " up from 392") in str(found[0]["message"])
    # the honest split: the pieces own what the one pool did
    central.write_text(text.replace("reservedGpus: 392", "reservedGpus: 273"))
    assert findings(root) == (0, [])


# --- a raise written as a proposal (red team, 2026-12-06, round 13; docs/red-team.md, PL950) ---------------------


def _propose(root: Path, name: str, asks: dict[str, int], cluster: str = "prod-east") -> Path:
    """A new proposal ``name`` asking ``asks`` (pool -> GPUs), written like the base's serving proposal."""
    base = git(root, "show", "HEAD:proposals/2027-q1-serving.yaml")
    head, _, tail = base.partition("  requests:\n")
    _, _, tail = tail.partition("  workloads:")
    requests = "".join(f"    - pool: {pool}\n      gpus: {gpus}\n" for pool, gpus in asks.items())
    path = root / "proposals" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(head.replace("name: 2027-q1-serving", f"name: {name}").replace("cluster: prod-east", f"cluster: {cluster}")
                    + "  requests:\n" + requests + "  workloads:" + tail)
    return path


def test_a_proposal_for_a_shortfall_that_only_declarations_made_is_a_raise(tmp_path: Path) -> None:
    """Round 13: a change that moves the computed demand by declarations alone (here the reranker's per-GPU figure,
    19 -> 15 in flight) and proposes the "shortfall" it made passed --diff, where the same GPUs written as
    reservedGpus were PL950: the GPUs a pool will own once its proposals are delivered are judged as owned."""
    root = _committed(tmp_path, "good")
    _reranker_per_gpu(root, 15)
    _propose(root, "2027-q2-serving", {"serving": 16})
    # without --diff the rule does not apply, and nothing else of PL950's kind judges a change
    assert _select(root, "PL950") == (0, [])
    code, found = findings(root)
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", "clusters/prod-east.yaml")]
    assert found[0]["message"] == (
        "pool prod-east/serving reserves 48 GPUs and its proposals ask 21 more, 69 in all, up from 53 at the base"
        " revision (48 owned and 5 proposed), but no measurement of its workloads changed: capacity grew without new"
        " evidence")
    # the same 16 GPUs written as reserved ones: the same verdict, on the same figure
    (root / "proposals" / "2027-q2-serving.yaml").unlink()
    _serving(root, 64, 10)
    code, found = findings(root)
    assert code == 1 and "reserves 64 GPUs and its proposals ask 5 more, 69 in all" in str(found[0]["message"])


def test_a_proposal_raised_with_new_demand_measured_passes(repo: Path) -> None:
    """The batch trace measured again shows a quarter more running jobs (baseline 20 -> 25 GPUs): a proposal for the
    five GPUs it backs passes, and one GPU more does not."""
    trace = repo / "measurements" / "traces" / "offline-scoring.csv"
    header, *rows = trace.read_text().splitlines()
    stamped = [row.split(",") for row in rows]
    trace.write_text("\n".join([header, *(f"{t},{round(float(v) * 1.25)}" for t, v in stamped)]) + "\n")
    proposal = _propose(repo, "2027-q2-batch", {"batch": 5})
    assert findings(repo) == (0, [])
    proposal.write_text(proposal.read_text().replace("gpus: 5", "gpus: 6"))
    code, found = findings(repo)
    assert code == 1 and [f["code"] for f in found] == ["PL950"]
    assert "pool prod-east/batch reserves 20 GPUs and its proposals ask 6 more, 26 in all, up from 20 at the base" \
        " revision, but its new measurements move its pooled baseline from 20 to 25 GPUs, which backs at most 25" \
        in str(found[0]["message"])


def test_a_proposal_the_base_held_lowered_or_removed_is_no_raise(repo: Path) -> None:
    """The serving proposal the base holds: reworded and moved to another file, asking less, or gone - no raise."""
    old = repo / "proposals" / "2027-q1-serving.yaml"
    text = old.read_text()
    git(repo, "mv", "proposals/2027-q1-serving.yaml", "proposals/serving-h200.yaml")
    moved = repo / "proposals" / "serving-h200.yaml"
    moved.write_text(text.replace("Five GPUs close exactly that gap", "Five GPUs close the gap"))
    assert findings(repo) == (0, [])
    moved.write_text(text.replace("gpus: 5", "gpus: 3"))
    assert findings(repo) == (0, [])
    git(repo, "rm", "-q", "-f", "proposals/serving-h200.yaml")
    assert findings(repo) == (0, [])
    # the control: moved and raised by one
    moved.parent.mkdir(exist_ok=True)
    moved.write_text(text.replace("gpus: 5", "gpus: 6"))
    code, found = findings(repo)
    assert code == 1 and "reserves 48 GPUs and its proposals ask 6 more, 54 in all, up from 53" in str(
        found[0]["message"])


def test_a_proposal_raise_split_over_pools_or_proposals_is_still_judged(repo: Path) -> None:
    """Red team of the fix: four GPUs asked in two proposals, two each for serving and batch, neither pool's
    measurements changed - each pool answers for its own share."""
    _propose(repo, "2027-q2-a", {"serving": 1, "batch": 1})
    _propose(repo, "2027-q2-b", {"serving": 1, "batch": 1})
    code, found = findings(repo)
    assert code == 1
    assert sorted(str(f["message"]).split(" reserves")[0] for f in found) == ["pool prod-east/batch",
                                                                             "pool prod-east/serving"]


def test_a_delivered_proposal_asked_again_is_a_raise(repo: Path) -> None:
    """Red team of the fix: the base's 5 GPUs taken delivery of (48 -> 53, the proposal removed) and asked again
    under another name."""
    cluster = repo / CLUSTER
    replace_once(cluster, "reservedGpus: 48", "reservedGpus: 53")
    git(repo, "rm", "-q", "proposals/2027-q1-serving.yaml")
    assert findings(repo) == (0, [])
    _propose(repo, "2027-q2-serving", {"serving": 5})
    code, found = findings(repo)
    assert code == 1 and "reserves 53 GPUs and its proposals ask 5 more, 58 in all, up from 53" in str(
        found[0]["message"])


def test_a_proposal_for_a_pool_renamed_in_the_change_is_judged_at_its_base(repo: Path) -> None:
    """Red team of the fix: serving renamed serving-h200 with its workloads and proposal following, the proposal
    raised from 5 to 9: the renamed pool is found at the base by its workloads, and so is what it asked."""
    cluster = repo / CLUSTER
    replace_once(cluster, "- name: serving\n", "- name: serving-h200\n")
    for name in ("product-ai.yaml", "search.yaml"):
        path = repo / "workloads" / name
        path.write_text(path.read_text().replace("pool: serving\n", "pool: serving-h200\n"))
    proposal = repo / "proposals" / "2027-q1-serving.yaml"
    text = proposal.read_text().replace("- pool: serving\n", "- pool: serving-h200\n")
    proposal.write_text(text)
    assert findings(repo) == (0, [])  # renamed, asking what it asked
    proposal.write_text(text.replace("gpus: 5", "gpus: 9"))
    code, found = findings(repo)
    assert code == 1 and "pool prod-east/serving-h200 reserves 48 GPUs and its proposals ask 9 more, 57 in all," \
        " up from 53" in str(found[0]["message"])


def test_a_proposal_for_a_pool_split_off_in_the_change_counts_for_the_whole(repo: Path) -> None:
    """Red team of the fix: the reranker moved to a new pool carved from serving (28 + 20 reserved, the 48 the
    base had), and the new pool given a proposal of its own: the pool that keeps the name answers for both."""
    cluster = repo / CLUSTER
    text = cluster.read_text()
    start = text.index("    - name: serving\n")
    end = text.index("    - name: batch\n")
    serving = text[start:end]
    carved = serving.replace("- name: serving\n", "- name: serving-rerank\n").replace("reservedGpus: 48", "reservedGpus: 20")
    cluster.write_text(text[:start] + serving.replace("reservedGpus: 48", "reservedGpus: 28") + carved + text[end:])
    search = repo / "workloads" / "search.yaml"
    body = search.read_text()
    assert body.count("pool: serving\n") == 1  # the reranker's
    search.write_text(body.replace("pool: serving\n", "pool: serving-rerank\n"))
    assert findings(repo) == (0, [])  # the honest split, the base's proposal kept
    _propose(repo, "2027-q2-rerank", {"serving-rerank": 4})
    code, found = findings(repo)
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", CLUSTER)]
    assert ("reserves 28 GPUs, 48 with prod-east/serving-rerank (split from the same pool at the base revision),"
            " and their proposals ask 9 more, 57 in all, up from 53") in str(found[0]["message"])


# --- a workload moved into a pool brings the demand the base gave it (docs/red-team.md, PL950) ------------------


def _move_offline_scoring_into_serving(repo: Path, per_gpu: str | None = None) -> None:
    """offline-scoring moved from batch to serving, and the batch pool it left removed."""
    search = repo / "workloads" / "search.yaml"
    replace_once(search, "  pool: batch\n", "  pool: serving\n")
    if per_gpu is not None:
        replace_once(search, "  perGpuConcurrency:\n    value: 1\n", f"  perGpuConcurrency:\n    value: {per_gpu}\n")
    cluster = repo / CLUSTER
    text = cluster.read_text()
    cluster.write_text(text[:text.index("    - name: batch\n")])


def _serving_proposal(repo: Path, gpus: int) -> None:
    """The base's serving proposal asking ``gpus`` (5 at the base)."""
    path = repo / "proposals" / "2027-q1-serving.yaml"
    text, count = re.subn(r"\n      gpus: [0-9]+\n", f"\n      gpus: {gpus}\n", path.read_text())
    assert count == 1
    path.write_text(text)


def test_a_workload_moved_in_brings_the_baseline_the_base_declared_for_it(repo: Path) -> None:
    """Found while closing round 13: offline-scoring moved into serving with its per-GPU figure cut from 1 to 0.8
    (baseline 20 -> 25 GPUs), batch removed and the serving proposal raised from 5 to 30 drew no PL950: a newcomer
    brought the baseline today's declarations give it. It brings the 20 the base's files gave as the base declared."""
    _move_offline_scoring_into_serving(repo, per_gpu="0.8")
    _serving_proposal(repo, 30)
    code, found = findings(repo)
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", CLUSTER)]
    assert found[0]["message"] == (
        "pool prod-east/serving reserves 48 GPUs and its proposals ask 30 more, 78 in all, up from 53 at the base"
        " revision (48 owned and 5 proposed), but no measurement of its workloads changed, with 20 for the workloads"
        " it took in: capacity grew without new evidence")
    _serving_proposal(repo, 25)  # what carried it at the base: passes
    assert findings(repo) == (0, [])


def test_an_honest_move_with_the_pool_it_left_removed_is_no_raise(repo: Path) -> None:
    """The same move without the cut: serving raised by exactly the 20 GPUs offline-scoring needed at the base."""
    _move_offline_scoring_into_serving(repo)
    _serving_proposal(repo, 25)
    assert findings(repo) == (0, [])
    _serving_proposal(repo, 26)  # one more than what carried them at the base
    code, found = findings(repo)
    assert code == 1 and "ask 26 more, 74 in all, up from 53" in str(found[0]["message"])
    assert "with 20 for the workloads it took in" in str(found[0]["message"])


def test_a_new_workload_with_a_new_trace_brings_its_own_baseline(repo: Path) -> None:
    """A workload absent at the base, with a trace of its own, added to batch with a matching raise: as before."""
    search = repo / "workloads" / "search.yaml"
    body = search.read_text()
    start = body.index("apiVersion:", body.index("name: offline-scoring") - 200)
    copy = body[start:].replace("name: offline-scoring", "name: offline-ranking").replace(
        "traces/offline-scoring.csv", "traces/offline-ranking.csv")
    (repo / "workloads" / "ranking.yaml").write_text(copy)
    traces = repo / "measurements" / "traces"
    header, *rows = (traces / "offline-scoring.csv").read_text().splitlines()
    (traces / "offline-ranking.csv").write_text(
        "\n".join([header, *(f"{t},{round(int(v) / 4)}" for t, v in (row.split(",") for row in rows))]) + "\n")
    raise_batch_reserved(repo, 25)  # its baseline today: 5 GPUs
    assert findings(repo) == (0, [])
    line = raise_batch_reserved(repo, 26)
    code, found = findings(repo)
    assert code == 1 and [(f["code"], f["file"], f["line"]) for f in found] == [("PL950", CLUSTER, line)]
    assert "only the pooled baseline the base declared (20, with 5 for the workloads it took in) backs it, at most 25" \
        in str(found[0]["message"])
