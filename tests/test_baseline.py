"""Baselines through the real CLI: record the findings of today, fail only on new ones.

The repository is a copy of the small shared one (tests/data/minirepo; ``now``
pinned, only PL0 and PL101 selected) whose ``serving`` pool reserves 80 GPUs
against its baseline band: one PL101 finding, which each test records in a
baseline first.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import copy_minirepo, replace_once, run_cli
from fixture_helpers import document_counts, mini_bands

CONFIG = 'now: "2026-12-01"\nselect: [PL0, PL101]\nrules: {PL977: {accept: "select=PL0,PL101"}}\n'
CLUSTER = Path("clusters/prod-east.yaml")

BASELINE = mini_bands("serving")[0]
SERVING_MESSAGE = (
    f"pool prod-east/serving reserves 80 GPUs, but its pooled baseline is {BASELINE} GPUs (sum of workload baselines {BASELINE}:"
    " pooling saves nothing; allowed headroom 15%): sized by peak, not baseline"
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small repository with one PL101 finding, recorded in ``baseline.json`` (built once)."""
    repo = tmp_path_factory.mktemp("recorded") / "repo"
    copy_minirepo(repo)
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    replace_once(repo / CLUSTER, "reservedGpus: 48", "reservedGpus: 80")
    code, out, err = run_cli(["baseline", "-o", "baseline.json"], cwd=repo)
    assert (code, out, err) == (
        0,
        "",
        "policylint: wrote 1 finding(s) to baseline.json\n"
        # check reads a baseline only when told: the command says how
        "policylint: check hides them only when told: add 'baseline: baseline.json' to .policylint.yaml,"
        " or pass --baseline baseline.json\n",
    )
    return repo


@pytest.fixture
def repo(recorded: Path, tmp_path: Path) -> Path:
    """A private copy of the recorded repository, free to edit."""
    return Path(shutil.copytree(recorded, tmp_path / "repo"))


def check(repo: Path, *args: str, cwd: Path | None = None) -> tuple[int, dict]:
    code, out, err = run_cli(["check", "--format", "json", *args], cwd=cwd or repo)
    assert err == ""
    report: dict = json.loads(out)
    return code, report


def sarif_results(repo: Path, *args: str) -> list[dict]:
    code, out, err = run_cli(["check", "--format", "sarif", *args], cwd=repo)
    assert err == ""
    results: list[dict] = json.loads(out)["runs"][0]["results"]
    return results


def test_baseline_file_records_findings_without_line_numbers(repo: Path) -> None:
    data = json.loads((repo / "baseline.json").read_text(encoding="utf-8"))
    assert data == {
        "version": 1,
        "findings": [
            {
                "code": "PL101",
                "file": "clusters/prod-east.yaml",
                "subject": "pool prod-east/serving",
                "path": "spec/pools/0/reservedGpus",
                "message": SERVING_MESSAGE,
                # the figures it accepted: 80 reserved against 53 pooled baseline GPUs + 15 %
                "measured": 80,
                "allowed": 53 * 1.15,
            }
        ],
    }


def test_baseline_to_stdout(repo: Path) -> None:
    code, out, err = run_cli(["baseline", "-o", "-"], cwd=repo)
    assert (code, err) == (0, "")
    assert out == (repo / "baseline.json").read_text(encoding="utf-8")


def test_baseline_creates_the_output_folder(repo: Path) -> None:
    code, _, err = run_cli(["baseline", "-o", "reports/ci/baseline.json"], cwd=repo)
    assert (code, err.splitlines()[0]) == (0, "policylint: wrote 1 finding(s) to reports/ci/baseline.json")
    assert (repo / "reports/ci/baseline.json").read_text() == (repo / "baseline.json").read_text()


def test_a_configured_baseline_needs_no_advice(repo: Path) -> None:
    """The note on how check reads a baseline is left out once the configuration names the file."""
    (repo / ".policylint.yaml").write_text(CONFIG + "baseline: baseline.json\n", encoding="utf-8")
    code, out, err = run_cli(["baseline", "-o", "baseline.json"], cwd=repo)
    assert (code, out, err) == (0, "", "policylint: wrote 1 finding(s) to baseline.json\n")
    assert check(repo)[0] == 0  # and check uses it
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    (repo / "pyproject.toml").write_text("[tool.other]\n", encoding="utf-8")
    code, _, err = run_cli(["baseline", "-o", "baseline.json"], cwd=repo)
    assert "add 'baseline: baseline.json' to .policylint.yaml" in err


def test_check_with_the_baseline_passes(repo: Path) -> None:
    code, report = check(repo, "--baseline", "baseline.json")
    assert (code, report["findings"]) == (0, [])


def test_baseline_from_the_config_file_is_relative_to_it(repo: Path, tmp_path: Path) -> None:
    (repo / ".policylint.yaml").write_text(CONFIG + "baseline: baseline.json\n", encoding="utf-8")
    code, report = check(repo, "repo", cwd=tmp_path)
    assert (code, report["findings"]) == (0, [])


def test_baseline_matches_when_checked_from_another_folder(repo: Path, tmp_path: Path) -> None:
    code, report = check(repo, "repo", "--baseline", "repo/baseline.json", cwd=tmp_path)
    assert (code, report["findings"]) == (0, [])


def test_lines_inserted_above_keep_the_finding_baselined(repo: Path) -> None:
    path = repo / CLUSTER
    path.write_text("# reviewed 2026-12-01\n# owner: capacity team\n\n" + path.read_text(), encoding="utf-8")
    code, report = check(repo, "--baseline", "baseline.json")
    assert (code, report["findings"]) == (0, [])


def test_a_new_finding_is_still_reported(repo: Path) -> None:
    replace_once(repo / CLUSTER, "reservedGpus: 20", "reservedGpus: 60")
    code, report = check(repo, "--baseline", "baseline.json")
    assert code == 1
    assert [(f["code"], f["subject"]) for f in report["findings"]] == [("PL101", "pool prod-east/batch")]


def test_a_changed_finding_on_the_same_spot_stays_baselined(repo: Path) -> None:
    # The key is rule + file + subject + document path, not the message: 70 reserved GPUs
    # is still too many, but fewer than the 80 the baseline accepted.
    replace_once(repo / CLUSTER, "reservedGpus: 80", "reservedGpus: 70")
    code, report = check(repo, "--baseline", "baseline.json")
    assert (code, report["findings"]) == (0, [])


def test_a_finding_that_got_worse_is_reported_with_both_figures(repo: Path) -> None:
    replace_once(repo / CLUSTER, "reservedGpus: 80", "reservedGpus: 81")
    code, report = check(repo, "--baseline", "baseline.json")
    assert code == 1
    [finding] = report["findings"]
    assert (finding["code"], finding["subject"]) == ("PL101", "pool prod-east/serving")
    assert finding["message"].endswith(
        "[worse than the baseline accepted: measured 81 against allowed 60.95, accepted 80 against 60.95]"
    )
    # Re-recording accepts the new state explicitly.
    assert run_cli(["baseline", "-o", "baseline.json"], cwd=repo)[0] == 0
    code, report = check(repo, "--baseline", "baseline.json")
    assert (code, report["findings"]) == (0, [])


def test_a_baseline_without_figures_accepts_its_findings_while_their_numbers_hold(repo: Path) -> None:
    # Files written before figures were recorded keep working for the state they recorded; a finding whose
    # message states other numbers is no longer accepted (red team, 2026-12-06: it was, whatever they were)
    data = json.loads((repo / "baseline.json").read_text(encoding="utf-8"))
    for entry in data["findings"]:
        del entry["measured"], entry["allowed"]
    (repo / "baseline.json").write_text(json.dumps(data), encoding="utf-8")
    code, report = check(repo, "--baseline", "baseline.json")
    assert (code, report["findings"]) == (0, [])
    replace_once(repo / CLUSTER, "reservedGpus: 80", "reservedGpus: 90")
    code, report = check(repo, "--baseline", "baseline.json")
    [finding] = report["findings"]
    assert code == 1 and finding["code"] == "PL101"
    assert finding["message"].endswith(f"[changed since the baseline accepted: {SERVING_MESSAGE}]")


@pytest.mark.parametrize(
    ("entry", "key", "message"),
    [
        ({"measured": "80", "allowed": 60}, "findings[0].measured", "must be a number, got str"),
        ({"measured": 80}, "findings[0].allowed", "measured and allowed go together"),
    ],
)
def test_bad_baseline_figures_stop_the_run(repo: Path, entry: dict, key: str, message: str) -> None:
    data = json.loads((repo / "baseline.json").read_text(encoding="utf-8"))
    for name in ("measured", "allowed"):
        data["findings"][0].pop(name)
    data["findings"][0].update(entry)
    (repo / "baseline.json").write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run_cli(["check", "--baseline", "baseline.json"], cwd=repo)
    assert code == 2
    assert key in err and message in err


def test_an_entry_stripped_of_its_message_and_figures_stops_the_run(repo: Path) -> None:
    """Red team, 2026-12-06: deleting `message`, `measured` and `allowed` from every entry made each one accept
    any later state of its finding (reserved 70 -> 700, a proposal of 500 GPUs). Every file policylint writes
    has a message; an entry without one is no entry of it."""
    data = json.loads((repo / "baseline.json").read_text(encoding="utf-8"))
    for entry in data["findings"]:
        del entry["message"], entry["measured"], entry["allowed"]
    (repo / "baseline.json").write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run_cli(["check", "--format", "json", "--baseline", "baseline.json"], cwd=repo)
    assert (code, out) == (2, "")
    assert "findings[0].message" in err and "not a policylint baseline file (must be text, got nothing)" in err


def test_sarif_marks_baselined_and_new_findings(repo: Path) -> None:
    replace_once(repo / CLUSTER, "reservedGpus: 20", "reservedGpus: 60")
    results = sarif_results(repo, "--baseline", "baseline.json")
    states = sorted((r["baselineState"], r["properties"]["subject"]) for r in results)
    assert states == [("new", "pool prod-east/batch"), ("unchanged", "pool prod-east/serving")]
    unchanged = next(r for r in results if r["baselineState"] == "unchanged")
    assert unchanged["suppressions"] == [{"kind": "external", "justification": "recorded in the baseline"}]


def test_fixed_finding_makes_the_entry_stale_in_sarif(repo: Path) -> None:
    replace_once(repo / CLUSTER, "reservedGpus: 80", "reservedGpus: 48")
    results = sarif_results(repo, "--baseline", "baseline.json")
    assert [(r["ruleId"], r["baselineState"], r["level"]) for r in results] == [("PL101", "absent", "note")]
    assert results[0]["message"]["text"] == (
        "Baseline entry no longer matches any finding: PL101 pool prod-east/serving at spec/pools/0/reservedGpus"
    )


def test_fixed_finding_makes_the_entry_stale_in_the_github_summary(repo: Path) -> None:
    replace_once(repo / CLUSTER, "reservedGpus: 80", "reservedGpus: 48")
    code, out, err = run_cli(["check", "--format", "github", "--baseline", "baseline.json"], cwd=repo)
    files = document_counts(repo)[1]
    assert (code, out, err) == (0, f"policylint: no findings in {files} files; 1 stale baseline entry\n", "")


@pytest.mark.parametrize(
    "deselect",
    [
        pytest.param(["--ignore", "PL101"], id="ignored"),
        pytest.param(["--select", "PL0"], id="not-selected"),
    ],
)
def test_an_entry_of_a_rule_the_run_leaves_out_is_not_stale(repo: Path, deselect: list[str]) -> None:
    """Newcomer trial: with --ignore, accepted entries were called 'no longer found (fixed?
    regenerate the baseline)'; they were not looked for, and regenerating would drop them."""
    code, report = check(repo, "--baseline", "baseline.json", *deselect)
    assert (code, report["findings"], report["stale_baseline"]) == (0, [], [])
    # a per-file ignore of the rule on that file leaves it out too
    # (a second loosening of the gate, accepted by name as the select is)
    (repo / ".policylint.yaml").write_text(CONFIG.replace('accept: "select=PL0,PL101"', 'accept: "select=PL0,PL101 PL101.per-file-ignores=clusters/*.yaml"')
                                           + 'per-file-ignores:\n  "clusters/*.yaml": [PL101]\n', encoding="utf-8")
    code, report = check(repo, "--baseline", "baseline.json")
    assert (code, report["findings"], report["stale_baseline"]) == (0, [], [])
    # selected and fixed, it is stale as before
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    replace_once(repo / CLUSTER, "reservedGpus: 80", "reservedGpus: 48")
    code, report = check(repo, "--baseline", "baseline.json")
    assert [entry["code"] for entry in report["stale_baseline"]] == ["PL101"]


def test_missing_baseline_file_is_a_usage_error(repo: Path) -> None:
    code, out, err = run_cli(["check", "--baseline", "missing.json"], cwd=repo)
    assert (code, out, err) == (2, "", "policylint: error: baseline file not found: missing.json\n")


@pytest.mark.parametrize("content", ["not json", "{}", '{"findings": [{"code": "PL101"}]}'])
def test_unreadable_baseline_file_is_a_usage_error(repo: Path, content: str) -> None:
    (repo / "broken.json").write_text(content, encoding="utf-8")
    code, out, err = run_cli(["check", "--baseline", "broken.json"], cwd=repo)
    assert (code, out) == (2, "")
    assert err.startswith("policylint: error: broken.json")
    assert "not a policylint baseline file (" in err
    assert err.count("\n") == 1


def test_baseline_command_records_everything_despite_a_configured_baseline(repo: Path) -> None:
    (repo / ".policylint.yaml").write_text(CONFIG + "baseline: baseline.json\n", encoding="utf-8")
    code, out, err = run_cli(["baseline", "-o", "-"], cwd=repo)
    assert (code, err) == (0, "")
    assert [e["subject"] for e in json.loads(out)["findings"]] == ["pool prod-east/serving"]


def test_the_summary_tells_a_fixed_entry_from_a_foreign_baseline(repo: Path) -> None:
    """A fixed finding leaves a stale entry; a baseline none of whose entries matches while findings
    remain is more likely another repository's (newcomer trial), and the summary says which."""
    replace_once(repo / CLUSTER, "reservedGpus: 80", "reservedGpus: 48")
    code, out, _ = run_cli(["check", "--baseline", "baseline.json", "-q"], cwd=repo)
    assert code == 0 and out.endswith(", 1 baseline entry no longer found (fixed? regenerate the baseline).\n")
    foreign = json.loads((repo / "baseline.json").read_text(encoding="utf-8"))
    for entry in foreign["findings"]:
        entry["file"] = "elsewhere/" + entry["file"]
    (repo / "baseline.json").write_text(json.dumps(foreign), encoding="utf-8")
    replace_once(repo / CLUSTER, "reservedGpus: 48", "reservedGpus: 80")
    code, out, _ = run_cli(["check", "--baseline", "baseline.json", "-q"], cwd=repo)
    assert code == 1 and out.splitlines()[0].endswith(
        ", 1 baseline entry and none matches a finding here (is the baseline this repository's, recorded from its root?)."
    )


def test_a_finding_without_figures_is_accepted_only_with_the_numbers_it_gave(repo: Path) -> None:
    """Red team, 2026-12-06: a baselined finding without figures accepted any later state of it; a 4-GPU ask for
    an unmeasured pool grew to 400 while the baseline still accepted it. Such an entry now accepts the numbers
    its message gave: other numbers are reported, a reworded message (a new release) is not."""
    data = json.loads((repo / "baseline.json").read_text(encoding="utf-8"))
    [entry] = data["findings"]
    del entry["measured"], entry["allowed"]
    (repo / "baseline.json").write_text(json.dumps(data), encoding="utf-8")
    from policylint.engine.filter import worse

    assert not worse(None, entry["message"], entry["message"])
    assert not worse(None, entry["message"], entry["message"].replace("sized by peak", "sized for the peak"))
    assert worse(None, entry["message"], entry["message"].replace("reserves 80 GPUs", "reserves 90 GPUs"))
    assert not worse(None, None, "anything at all")  # an entry recording neither accepts any state
    assert worse((90.0, 60.95), entry["message"], entry["message"].replace("reserves 80 GPUs", "reserves 90 GPUs"))
    # through the CLI: the figure-less entry still accepts the finding while its numbers hold
    code, report = check(repo, "--baseline", "baseline.json")
    assert (code, report["findings"]) == (0, [])


def test_a_baselined_unjudged_pool_is_reported_again_when_its_gpus_grow(tmp_path: Path) -> None:
    """Red team, 2026-12-06: PL983 (a pool not judged because a workload is unmeasured) was baselined, then the
    pool's reserved GPUs and its proposal grew tenfold while the finding's figures (one unmeasured workload)
    stayed the same. PL983 records the GPUs nothing judges, so the larger pool is worse than the baseline."""
    from policylint.engine.filter import worse

    assert worse((480.0, 0.0), (48.0, 0.0)) and not worse((48.0, 0.0), (48.0, 0.0))
    repo = tmp_path / "repo"
    shutil.copytree(Path(__file__).parent / "rules" / "PL983" / "fail", repo)
    (repo / "traces").mkdir()
    for name in ("diurnal-100.csv",):
        shutil.copyfile(Path(__file__).parent / "rules" / "_traces" / name, repo / "traces" / name)
    replace_once(repo / "repo.yaml", "../../_traces/diurnal-100.csv", "traces/diurnal-100.csv")
    (repo / ".policylint.yaml").write_text('now: "2026-12-01"\nselect: [PL0, PL983]\n', encoding="utf-8")
    code, out, err = run_cli(["baseline", "-o", "baseline.json", "--select", "PL983"], cwd=repo)
    assert code == 0, err
    [entry] = [e for e in json.loads((repo / "baseline.json").read_text(encoding="utf-8"))["findings"]
               if e["code"] == "PL983"]
    assert (entry["measured"], entry["allowed"]) == (400, 0)
    code, out, err = run_cli(["check", "--format", "json", "--select", "PL983", "--ignore", "PL977",
                              "--baseline", "baseline.json"], cwd=repo)
    assert (code, json.loads(out)["findings"]) == (0, []), err
    replace_once(repo / "repo.yaml", "reservedGpus: 400", "reservedGpus: 4000")
    code, out, err = run_cli(["check", "--format", "json", "--select", "PL983", "--ignore", "PL977",
                              "--baseline", "baseline.json"], cwd=repo)
    [finding] = json.loads(out)["findings"]
    assert code == 1 and finding["code"] == "PL983"
    assert finding["message"].endswith("[worse than the baseline accepted: measured 4000 against allowed 0,"
                                       " accepted 400 against 0]")


OUTSIDE = ("the configured baseline must lie inside the repository, where every change to it is reviewed and seen by the"
           " pre-commit hook (move it inside, or pass a file kept elsewhere with --baseline)")


@pytest.mark.parametrize("how", ["beside", "linked", "absolute"])
def test_a_configured_baseline_outside_the_root_is_a_configuration_error(repo: Path, tmp_path: Path, how: str) -> None:
    """Red team, 2026-12-07, round 16: `baseline: ../policy/capacity-baseline.json` - the hook is given only the
    staged files under the root, so entries planted there ahead of a raise passed check and the hook. A baseline
    the configuration names resolves, links followed, inside the root, or the run stops naming the key."""
    outside = tmp_path / "policy" / "capacity-baseline.json"
    outside.parent.mkdir()
    shutil.move(str(repo / "baseline.json"), outside)
    named = {"beside": "../policy/capacity-baseline.json", "linked": "baseline.json", "absolute": str(outside)}[how]
    if how == "linked":
        (repo / "baseline.json").symlink_to(outside)
    (repo / ".policylint.yaml").write_text(CONFIG + f"baseline: {named}\n", encoding="utf-8")
    real, root = os.path.realpath(outside), os.path.realpath(repo)
    expected = (f"policylint: error: .policylint.yaml:4:1 at key 'baseline': '{named}' resolves to {real}, outside the"
                f" repository root {root}: {OUTSIDE}\n")
    assert run_cli(["check"], cwd=repo) == (2, "", expected)
    assert run_cli(["check", "--diff", "HEAD"], cwd=repo) == (2, "", expected)
    # `policylint baseline` writes the configured file: it refuses the same way, and writes nothing outside
    before = outside.read_bytes()
    outside.unlink()
    assert run_cli(["baseline"], cwd=repo) == (2, "", expected)
    assert not outside.exists()
    outside.write_bytes(before)


def test_a_baseline_outside_the_root_given_on_the_command_line_is_the_callers_choice(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "policy" / "capacity-baseline.json"
    outside.parent.mkdir()
    shutil.move(str(repo / "baseline.json"), outside)
    code, report = check(repo, "--baseline", str(outside))
    assert (code, report["findings"]) == (0, [])
    code, out, err = run_cli(["baseline", "-o", str(outside)], cwd=repo)
    assert (code, err.splitlines()[0]) == (0, f"policylint: wrote 1 finding(s) to {outside}")


def test_a_configured_baseline_in_a_folder_of_the_root_or_linked_within_it_works(repo: Path) -> None:
    (repo / "policy").mkdir()
    shutil.move(str(repo / "baseline.json"), repo / "policy" / "baseline.json")
    (repo / ".policylint.yaml").write_text(CONFIG + "baseline: policy/baseline.json\n", encoding="utf-8")
    assert check(repo)[0] == 0
    code, out, err = run_cli(["baseline"], cwd=repo)
    assert (code, out, err) == (0, "", f"policylint: wrote 1 finding(s) to {repo / 'policy' / 'baseline.json'}\n")
    (repo / "baseline.json").symlink_to(Path("policy") / "baseline.json")
    (repo / ".policylint.yaml").write_text(CONFIG + "baseline: baseline.json\n", encoding="utf-8")
    assert check(repo)[0] == 0


def test_an_entry_left_unmatched_while_an_input_cannot_be_read_is_not_called_fixed(repo: Path) -> None:
    """A newcomer's trial, 2026-12-07: a typo in one workload's trace path made the serving pool's finding go
    away with its measurement, and the summary said 'fixed? regenerate the baseline' - regenerating then would
    have dropped the entry the repository still needs."""
    replace_once(repo / "workloads/search.yaml", "path: ../measurements/traces/reranker.csv",
                 "path: ../measurements/traces/reranker-typo.csv")
    code, report = check(repo, "--baseline", "baseline.json")
    assert (code, [f["code"] for f in report["findings"]], len(report["stale_baseline"])) == (1, ["PL022"], 1)
    code, out, _ = run_cli(["check", "--baseline", "baseline.json", "-q"], cwd=repo)
    last = out.splitlines()[-1]
    assert code == 1 and last.endswith(", 1 baseline entry no longer found (fixed, or not judged while 1 input cannot be read"
                         " (the errors above))."), last
