"""Nights re-timed inside a window are no new evidence under ``--diff`` (PL950).

Red team, 2026-12-07, round 8: in ``examples/good``, offline-scoring's samples between 21:00 and
05:00 UTC rotated by three hours within each night (times kept, values moved), so its busy block
(21:00-02:00) lands on nightly-eval's (00:00-05:00). 8 484 of the 26 496 samples change; the batch
pool's pooled bands go from baseline 20, daily 26, peak 42 GPUs to baseline 27, daily 34, peak 46,
and the pool raised from 20 reserved + 6 elastic to 27 + 7 passed ``check``, the hook and
``--diff``: the trace read as another series, and no one time shift explained it, so it was new
evidence. The same values per night, reordered, are now the base's samples
(``policylint.measure.integrity.retiming.reordered``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, committed_example, git, run_cli

TRACE = Path("measurements") / "traces" / "offline-scoring.csv"
CLUSTER = Path("clusters") / "prod-east.yaml"


def _rewrite_nights(repo: Path, night: object) -> int:
    """Apply ``night`` to each full night's samples (21:00 to 05:00 UTC, 96 of them); return how many changed."""
    header, *rows = (repo / TRACE).read_text(encoding="utf-8").splitlines()
    stamps = np.array([int(row.split(",")[0]) for row in rows])
    values = [row.split(",")[1] for row in rows]
    out = list(values)
    for lo in np.flatnonzero(stamps % 86_400 == 21 * 3600):
        if lo + 96 <= len(rows):
            out[lo : lo + 96] = night(values[lo : lo + 96])  # type: ignore[operator]
    (repo / TRACE).write_text("\n".join([header, *(f"{t},{v}" for t, v in zip(stamps, out))]) + "\n", encoding="utf-8")
    return sum(a != b for a, b in zip(values, out))


def _raise_batch(repo: Path) -> None:
    text = (repo / CLUSTER).read_text(encoding="utf-8")
    assert text.count("reservedGpus: 20\n") == 1 and text.count("maxGpus: 6\n") == 1
    (repo / CLUSTER).write_text(text.replace("reservedGpus: 20\n", "reservedGpus: 27\n")
                                .replace("maxGpus: 6\n", "maxGpus: 7\n"), encoding="utf-8")


def _bands(repo: Path) -> dict[str, int]:
    code, out, err = run_cli(["bands", "--pool", "prod-east/batch", "--format", "json", "."], cwd=repo)
    assert code == 0, err
    bands: dict[str, int] = json.loads(out)["pooled"]["bands_gpus"]
    return bands


def _check(repo: Path, *extra: str) -> tuple[int, list[dict[str, object]]]:
    code, out, err = run_cli(["check", ".", "--format", "json", "--no-cache", *extra], cwd=repo)
    assert "Traceback" not in err, err
    return code, json.loads(out)["findings"] if out else []


def test_nights_rotated_inside_their_window_are_no_new_evidence(tmp_path: Path) -> None:
    repo = committed_example(tmp_path)
    assert _bands(repo) == {"baseline": 20, "daily": 26, "peak": 42}
    assert _rewrite_nights(repo, lambda night: night[-36:] + night[:-36]) == 8484  # three hours later, wrapped
    assert _bands(repo) == {"baseline": 27, "daily": 34, "peak": 46}
    _raise_batch(repo)
    git(repo, "commit", "-qam", "batch: 27 + 7 on the new trace")
    code, found = _check(repo, "--diff", "HEAD~1")
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", "clusters/prod-east.yaml")]
    # the message names the trace and what it holds (it said "no measurement of its workloads changed")
    assert "prod-east/batch reserves 27 GPUs, up from 20 at the base revision, but" \
        " ../measurements/traces/offline-scoring.csv holds the base revision's samples moved in time (re-timed, or reordered within the day), which is no evidence: capacity grew without new evidence" \
        in str(found[0]["message"])
    # without --diff nothing knows what the trace held before (check and the hook pass it)
    assert _check(repo) == (0, [])


def test_nights_measured_again_are_new_evidence(tmp_path: Path) -> None:
    """The honest neighbour: each night measured again, a job more in every other sample - new values,
    not the base's reordered, so they are new evidence (which backs only the demand it shows)."""
    repo = committed_example(tmp_path)
    changed = _rewrite_nights(repo, lambda night: [str(int(v) + (k % 2)) for k, v in enumerate(night)])
    assert changed > 4000
    _raise_batch(repo)
    git(repo, "commit", "-qam", "batch: 27 + 7, nights measured again")
    _, found = _check(repo, "--diff", "HEAD~1", "--select", "PL950")
    assert "but no measurement of its workloads changed" not in str(found) and "moved in time" not in str(found)
    # read as new evidence, it backs only what it moves the pooled baseline by (here nothing)
    assert "but its new measurements move its pooled baseline from 20 to 20 GPUs" in str(found[0]["message"])


# --- round 12 (2026-12-08): the same game past the exact screen ---------------------------------------------


def _rewrite_trace(repo: Path, mode: str) -> None:
    """The round-12 evasions on the trace: the nightly rotation plus a far swap, an edit, the oldest day
    dropped (mid-night), or the rotation over 32-hour windows (21:00 day k to 05:00 day k + 2)."""
    header, *rows = (repo / TRACE).read_text(encoding="utf-8").splitlines()
    stamps = [int(row.split(",")[0]) for row in rows]
    values = [row.split(",")[1] for row in rows]
    out = list(values)
    starts = [i for i, t in enumerate(stamps) if t % 86_400 == 21 * 3600]
    width = 384 if mode == "rot2" else 96
    for lo in starts[::2] if mode == "rot2" else starts:
        if lo + width <= len(rows):
            out[lo : lo + width] = values[lo + width - 36 : lo + width] + values[lo : lo + width - 36]
    if mode == "swap":  # two unequal samples 90 days apart
        j = next(k for k in range(len(out) - 300, 0, -1) if out[k] != out[300])
        out[300], out[j] = out[j], out[300]
    if mode == "edit":
        out[5000] = str(int(out[5000]) + 1)
    if mode == "rottrim":
        stamps, out = stamps[288:], out[288:]
    (repo / TRACE).write_text("\n".join([header, *(f"{t},{v}" for t, v in zip(stamps, out))]) + "\n",
                              encoding="utf-8")


@pytest.mark.parametrize("mode", ["swap", "rot2", "rottrim", "edit"])
def test_nights_rotated_with_a_far_swap_an_edit_a_trim_or_in_32_hour_windows_are_no_new_evidence(
        tmp_path: Path, mode: str) -> None:
    """Red team round 12: each raised batch 20 + 6 -> 27 + 7 with check, the hook and --diff all passing."""
    repo = committed_example(tmp_path)
    _rewrite_trace(repo, mode)
    assert _bands(repo) == {"baseline": 27, "daily": 34, "peak": 46}
    _raise_batch(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"batch: 27 + 7 on the new trace ({mode})")
    code, found = _check(repo, "--diff", "HEAD~1", "--select", "PL950")
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", "clusters/prod-east.yaml")]
    assert "offline-scoring.csv holds the base revision's samples moved in time (re-timed, or reordered within the day), which is no evidence" in str(found[0]["message"])


def test_nights_rotated_beside_a_job_list_edited_by_a_second_back_no_raise(tmp_path: Path) -> None:
    """Red team round 13: the same rotation with one job in offline-scoring's job list a second longer. The
    job list reads otherwise, so the pool had new evidence, and the ratio of pooled baselines - today's read from the
    rotated trace - backed 27 + 7. A trace holding the base's samples moved in time backs nothing: only the pooled
    baseline the base declared does."""
    repo = committed_example(tmp_path)
    _rewrite_nights(repo, lambda night: night[-36:] + night[:-36])
    jobs = repo / "measurements" / "jobs" / "offline-scoring.csv"
    header, first, *rest = jobs.read_text(encoding="utf-8").splitlines()
    cells = first.split(",")
    at = header.split(",").index("duration_seconds")
    cells[at] = str(int(cells[at]) + 1)
    jobs.write_text("\n".join([header, ",".join(cells), *rest]) + "\n", encoding="utf-8")
    _raise_batch(repo)
    git(repo, "commit", "-qam", "batch: 27 + 7 on the new trace and a job list read again")
    code, found = _check(repo, "--diff", "HEAD~1", "--select", "PL950")
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", "clusters/prod-east.yaml")]
    message = str(found[0]["message"])
    assert "offline-scoring.csv holds the base revision's samples moved in time" in message, message
    assert "so only the pooled baseline the base declared (20) backs it, at most 20" in message, message


def test_nights_rotated_in_one_column_of_a_shared_file_back_no_raise(tmp_path: Path) -> None:
    """Red team round 14: offline-scoring and nightly-eval read two columns of one CSV file; offline-scoring's column
    rotated as above and one nightly-eval sample raised by 1. The file read otherwise for one citation, so it was
    changed evidence and never "moved in time", and the rotation backed 27 + 7. Each citation is judged on its own."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    traces = repo / "measurements" / "traces"
    _, *offline = (traces / "offline-scoring.csv").read_text(encoding="utf-8").splitlines()
    _, *nightly = (traces / "nightly-eval.csv").read_text(encoding="utf-8").splitlines()
    assert [r.split(",")[0] for r in offline] == [r.split(",")[0] for r in nightly]
    rows = [f"{a},{b.split(',')[1]}" for a, b in zip(offline, nightly)]
    (traces / "batch.csv").write_text("\n".join(["timestamp,scoring,eval", *rows]) + "\n", encoding="utf-8")
    for workload, trace, column in (("search.yaml", "offline-scoring.csv", "scoring"),
                                     ("research.yaml", "nightly-eval.csv", "eval")):
        path = repo / "workloads" / workload
        text = path.read_text(encoding="utf-8")
        old = f"      path: ../measurements/traces/{trace}\n      format: csv\n      timestampColumn: timestamp\n" \
              "      columns: [running_jobs]\n"
        assert text.count(old) == 1
        path.write_text(text.replace(old, old.replace(trace, "batch.csv").replace("running_jobs", column)),
                        encoding="utf-8")
    (traces / "offline-scoring.csv").unlink()
    (traces / "nightly-eval.csv").unlink()
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base: one file for the batch traces")
    assert _check(repo)[0] == 0
    body = (traces / "batch.csv").read_text(encoding="utf-8").splitlines()
    stamps = np.array([int(r.split(",")[0]) for r in body[1:]])
    scoring = [r.split(",")[1] for r in body[1:]]
    evals = [r.split(",")[2] for r in body[1:]]
    for lo in np.flatnonzero(stamps % 86_400 == 21 * 3600):
        if lo + 96 <= len(scoring):
            scoring[lo : lo + 96] = scoring[lo + 60 : lo + 96] + scoring[lo : lo + 60]
    evals[0] = str(int(evals[0]) + 1)
    (traces / "batch.csv").write_text("\n".join([body[0], *(f"{t},{s},{e}" for t, s, e in zip(stamps, scoring, evals))])
                                      + "\n", encoding="utf-8")
    _raise_batch(repo)
    git(repo, "commit", "-qam", "batch: 27 + 7")
    code, found = _check(repo, "--diff", "HEAD~1", "--select", "PL950")
    assert code == 1, found
    assert "batch.csv holds the base revision's samples moved in time" in str(found[0]["message"]), found


# --- item 7 (rounds 8 and 12, 2026-12-07): the rotation with noise on top -------------------------------------


def _rewrite_samples(repo: Path, change: object) -> None:
    """Apply ``change`` to the whole trace's values (as floats), written back as integers."""
    header, *rows = (repo / TRACE).read_text(encoding="utf-8").splitlines()
    stamps = [row.split(",")[0] for row in rows]
    values = change(np.array([float(row.split(",")[1]) for row in rows]))  # type: ignore[operator]
    (repo / TRACE).write_text("\n".join([header, *(f"{t},{int(v)}" for t, v in zip(stamps, values))]) + "\n",
                              encoding="utf-8")


def _plus_minus_one(values: np.ndarray, edits: int = 4000) -> np.ndarray:
    rng = np.random.default_rng(3)
    at = rng.choice(len(values), edits, replace=False)
    out = values.copy()
    out[at] = np.maximum(0, out[at] + rng.choice([-1, 1], edits))
    return out


def test_nights_rotated_then_noised_are_no_new_evidence(tmp_path: Path) -> None:
    """Item 7: the rotation, then +-1 on 4 000 of the 26 496 samples (bands 27/34/45): 83% of the changes matched
    as multisets, so it read as a measurement taken again and backed batch 20 + 6 -> 27 + 7. The changes larger
    than the noise hold the base's values at the night's shift."""
    repo = committed_example(tmp_path)
    _rewrite_nights(repo, lambda night: night[-36:] + night[:-36])
    _rewrite_samples(repo, _plus_minus_one)
    assert _bands(repo) == {"baseline": 27, "daily": 34, "peak": 45}
    _raise_batch(repo)
    git(repo, "commit", "-qam", "batch: 27 + 7 on the new trace")
    code, found = _check(repo, "--diff", "HEAD~1", "--select", "PL950")
    assert code == 1
    assert [(f["code"], f["file"]) for f in found] == [("PL950", "clusters/prod-east.yaml")]
    assert "offline-scoring.csv holds the base revision's samples moved in time (re-timed, or reordered within the day), which is no evidence" in str(found[0]["message"])


def test_nights_measured_again_as_fresh_counts_are_new_evidence(tmp_path: Path) -> None:
    """The honest neighbour: each night's samples measured again (a Poisson count around each), nothing moved."""
    repo = committed_example(tmp_path)
    rng = np.random.default_rng(21)

    def again(values: np.ndarray) -> np.ndarray:
        hours = (np.arange(len(values)) * 300 % 86_400) / 3600  # the trace starts at midnight UTC
        night = (hours >= 21) | (hours < 5)
        return np.where(night, rng.poisson(np.maximum(values, 0.3)), values)

    _rewrite_samples(repo, again)
    _raise_batch(repo)
    git(repo, "commit", "-qam", "batch: 27 + 7, nights measured again")
    _, found = _check(repo, "--diff", "HEAD~1", "--select", "PL950")
    assert "moved in time" not in str(found) and "no measurement of its workloads changed" not in str(found)
