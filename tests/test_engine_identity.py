"""Engine integrity: one finding identity, built-in rules as data, and the filter's order.

Each test reproduces a problem seen through the installed CLI and proves it
stays fixed: findings that differ only in their message are all reported; a
severity override on a built-in rule reaches the text and SARIF reports alike;
the README's rule table is the rule files' table; a baselined finding that got
worse is reported again; a typo inside a rule condition stops the run; and
``--ignore`` does not turn a used suppression into an unused one; a cluster
made from Kueue or Volcano manifests keeps its key (baseline, SARIF,
``--changed-files``) when the name it is shown under changes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, replace_once, run_cli
from policylint.finding import Finding, Severity, Subject, sort_findings

WORKLOADS = """\
apiVersion: policylint/v1
kind: Workload
metadata:
  name: chat
  team: platform
spec:
  class: inference
  cluster: nowhere
  pool: serving
  gpusPerReplica: 1
  concurrency: {declared: 10}
---
apiVersion: policylint/v1
kind: Workload
metadata:
  name: empty
spec: {}
"""


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """A two-workload repository: one references an unknown cluster (PL020), one has ``spec: {}``."""
    (tmp_path / "workloads.yaml").write_text(WORKLOADS, encoding="utf-8")
    (tmp_path / ".policylint.yaml").write_text('now: "2026-12-01"\n', encoding="utf-8")
    return tmp_path


def check_json(repo: Path, *args: str) -> tuple[int, list[dict]]:
    code, out, err = run_cli(["check", "--format", "json", *args], cwd=repo)
    assert err == ""
    findings: list[dict] = json.loads(out)["findings"]
    return code, findings


# -- one identity ---------------------------------------------------------------------------


def test_two_schema_errors_at_one_place_are_both_reported(small: Path) -> None:
    code, findings = check_json(small, "--select", "PL010")
    assert code == 1
    assert [(f["code"], f["line"], f["message"]) for f in findings] == [
        ("PL010", 17, "Workload: 'class' is required in 'spec'"),
        ("PL010", 17, "Workload: 'gpusPerReplica' is required in 'spec'"),
    ]


def _finding(**changes: object) -> Finding:
    base = Finding(
        file="clusters/c.yaml", line=3, column=5, code="PL101", name="reserved-above-baseline",
        severity=Severity.ERROR, message="too many", doc_index=0, doc_path="spec/pools/0/reservedGpus",
        subject="pool kueue-prod/serving", target=Subject("pool", "prod/serving"),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_findings_compare_on_every_field() -> None:
    a = _finding()
    assert a == _finding()
    for changes in ({"message": "other"}, {"hint": "h"}, {"severity": Severity.INFO}, {"figures": (1.0, 2.0)},
                    {"target": Subject("pool", "prod/other")}, {"doc_path": "spec"}):
        assert a != _finding(**changes), changes
    assert len(sort_findings([a, _finding(), _finding(message="other")])) == 2


def test_key_ignores_line_message_and_display_label() -> None:
    a = _finding()
    moved = _finding(line=30, message="far too many", subject="pool prod/serving (Kueue ClusterQueue)")
    assert a.key() == moved.key()
    assert a.key().subject == "pool prod/serving"
    assert a.key() != _finding(target=Subject("pool", "prod/batch")).key()


# -- built-in rules are data ------------------------------------------------------------------


def test_severity_override_of_a_builtin_rule_reaches_every_report(small: Path) -> None:
    (small / ".policylint.yaml").write_text(
        'now: "2026-12-01"\nrules:\n  PL020: {severity: info}\n', encoding="utf-8"
    )
    code, findings = check_json(small, "--select", "PL020")
    assert [(f["code"], f["severity"]) for f in findings] == [("PL020", "info")]
    code, out, err = run_cli(["check", "--format", "sarif", "--select", "PL020"], cwd=small)
    run = json.loads(out)["runs"][0]
    [result] = run["results"]
    rule = run["tool"]["driver"]["rules"][result["ruleIndex"]]
    assert (rule["id"], rule["defaultConfiguration"]["level"], result["level"]) == ("PL020", "note", "note")


def test_select_and_ignore_treat_builtin_rules_like_the_others(small: Path) -> None:
    _, findings = check_json(small, "--select", "PL0", "--ignore", "PL010")
    assert sorted({f["code"] for f in findings}) == ["PL020"]


def test_call_sites_write_the_code_only_and_the_name_comes_from_the_rule_files(small: Path) -> None:
    # A name written beside a code could drift from the rule files; the steps give the code alone.
    pair = re.compile(r'"(PL\d{3})",\s*"([a-z0-9]+(?:-[a-z0-9]+)+)"')
    written = [(path.name, m.group(0)) for path in sorted((REPO / "policylint").rglob("*.py"))
               for m in pair.finditer(path.read_text(encoding="utf-8"))]
    assert written == []
    from policylint.catalogue import catalogue

    _, findings = check_json(small, "--select", "PL0")
    assert {f["code"] for f in findings} == {"PL010", "PL020"}
    assert [(f["code"], f["name"], f["severity"]) for f in findings] == [
        (f["code"], catalogue()[f["code"]][0], catalogue()[f["code"]][1].label) for f in findings
    ]


def test_rule_file_templates_are_used_or_absent(cohort_repo: Path) -> None:
    # Built-in rules carry no message or hint template (the step that finds the problem
    # writes the text); every evaluated rule's templates are what its findings say.
    import yaml

    from policylint.resources import rules_dir
    from policylint.engine.ruleset import load_rules

    raw = {str(r["code"]): r for path in sorted(rules_dir().glob("*.y*ml"))
           for r in yaml.safe_load(path.read_text(encoding="utf-8"))["rules"]}
    loaded = load_rules([rules_dir()]).rules
    assert sorted(raw) == sorted(loaded)
    dead = [(code, key) for code, r in raw.items() if r.get("builtin") for key in ("message", "hint") if key in r]
    assert dead == []
    assert [code for code, r in raw.items() if not r.get("builtin") and loaded[code].message != r["message"]] == []
    assert [code for code, r in raw.items() if not r.get("builtin") and loaded[code].hint != r.get("hint", "")] == []
    # ... and a finding's text is its rule's templates filled in.
    _, [finding] = check_json(cohort_repo)
    template = re.escape(raw["PL302"]["message"])
    pattern = re.sub(r"\\\{[^}]*\\\}", ".+?", template)
    assert re.fullmatch(pattern, finding["message"]), (pattern, finding["message"])
    assert finding["hint"] == raw["PL302"]["hint"]


def test_every_builtin_code_the_package_emits_is_in_the_rule_files() -> None:
    from policylint.catalogue import catalogue

    emitted = set()
    for path in sorted((REPO / "policylint").rglob("*.py")):
        emitted |= set(re.findall(r'(?:finding|_meta)\(\s*(?:[\w.]+,\s*){0,3}"(PL\d{3})"', path.read_text(encoding="utf-8")))
    assert emitted, "the pattern found no call site"
    assert sorted(emitted - set(catalogue())) == []


def test_readme_rule_table_is_the_rule_files_table() -> None:
    code, out, _ = run_cli(["rules", "--format", "json"])
    assert code == 0
    rows = [
        f"| {r['code']} | `{r['name']}` | {r['severity']} | {r['subject']} | {r['summary']} |"
        for r in json.loads(out)
        if not r["code"].startswith("PL0")
    ]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Rules\n", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if re.match(r"\| PL\d{3} \|", line)]
    assert table == rows


# -- baseline figures -------------------------------------------------------------------------


def test_baselined_finding_that_got_worse_is_reported_again(tmp_path: Path) -> None:
    repo = tmp_path / "bad"
    shutil.copytree(EXAMPLES / "bad", repo)
    args = ["--now", "2026-12-01"]
    code, out, err = run_cli(["baseline", "-o", "baseline.json", *args], cwd=repo)
    assert code == 0, err
    code, findings = check_json(repo, "--baseline", "baseline.json", *args)
    assert (code, findings) == (0, [])
    replace_once(repo / "clusters" / "prod-east.yaml", "reservedGpus: 123", "reservedGpus: 124")
    code, findings = check_json(repo, "--baseline", "baseline.json", *args)
    assert code == 1
    # Every finding whose numbers moved the wrong way comes back, reserved-above-baseline first.
    assert {f["subject"] for f in findings} == {"pool prod-east/shared"}
    [pl101] = [f for f in findings if f["code"] == "PL101"]
    assert re.search(r"\[worse than the baseline accepted: measured 124 against allowed [\d.]+, accepted 123 against", pl101["message"])
    # Accepting the new state is explicit: re-record the baseline.
    assert run_cli(["baseline", "-o", "baseline.json", *args], cwd=repo)[0] == 0
    assert check_json(repo, "--baseline", "baseline.json", *args) == (0, [])


# -- rule loading -----------------------------------------------------------------------------


def test_typo_in_a_nested_condition_argument_stops_the_run(tmp_path: Path, small: Path) -> None:
    folder = tmp_path / "acme"
    folder.mkdir()
    (folder / "acme.yaml").write_text(textwrap.dedent("""\
        rules:
          - code: ACME001
            name: reserved-over-baseline
            severity: warning
            section: bands
            subject: pool
            summary: Reserved GPUs above the pool's baseline GPUs.
            message: "{subject} reserves too much"
            require:
              reserved_gpus: {max_over: {field: baseline_gpu}}
            docs:
              what: Compares reserved and baseline GPUs.
              why: Reserved GPUs above the baseline idle most of the day.
              example: "reservedGpus: 80"
              use_instead: "reservedGpus: 48"
              references: ["ACME handbook"]
        """), encoding="utf-8")
    code, out, err = run_cli(["check", "--rule-dir", str(folder)], cwd=small)
    assert (code, out) == (2, "")
    assert err == (
        f"policylint: error: {os.path.relpath(folder / 'acme.yaml', small)}:10:34 at key 'rules[ACME001].require.reserved_gpus.max_over.field': "
        "unknown fact 'baseline_gpu' for subject pool\n"
    )


# -- suppressions before selection ----------------------------------------------------------------


def test_ignoring_a_rule_does_not_make_its_used_suppression_unused(small: Path) -> None:
    replace_once(
        small / "workloads.yaml",
        "spec:\n  class: inference\n",
        "spec:  # policylint: disable=PL202 -- cold start measured next sprint\n  class: inference\n",
    )
    # Without --ignore the suppression hides PL202; with it, it is still used (no PL032).
    _, findings = check_json(small, "--select", "PL0,PL202")
    assert "PL202" not in {f["code"] for f in findings} and "PL032" not in {f["code"] for f in findings}
    _, findings = check_json(small, "--select", "PL0,PL202", "--ignore", "PL202")
    assert [f["code"] for f in findings if f["code"].startswith("PL03")] == []


#: A policylint Cluster that takes the name a scheduler-made cluster had ("shared").
POLICYLINT_SHARED = """\
apiVersion: policylint/v1
kind: Cluster
metadata: {name: shared}
spec:
  pools:
    - {name: other, gpu: {model: H100-80GB, memoryGiB: 80}, reservedGpus: 0, serves: [batch], overflow: queue}
"""


def test_a_scheduler_pool_keeps_its_key_when_its_display_name_changes(tmp_path: Path) -> None:
    # A Kueue cohort is shown as a cluster named after it, or "kueue-<cohort>" once a
    # policylint Cluster takes that name: the label moves, the baseline key must not.
    shutil.copytree(REPO / "tests" / "rules" / "PL904", tmp_path / "rules" / "PL904")
    shutil.copytree(REPO / "tests" / "rules" / "_traces", tmp_path / "rules" / "_traces")
    root = tmp_path / "rules"  # the traces sit beside the fixture, inside the root
    (root / ".policylint.yaml").write_text('now: "2026-12-01"\nselect: [PL904]\nrules: {PL977: {accept: "select=PL904"}}\n', encoding="utf-8")
    repo = root / "PL904" / "fail"
    assert run_cli(["baseline", "-o", "baseline.json", "PL904/fail"], cwd=root)[0] == 0
    entries = json.loads((root / "baseline.json").read_text(encoding="utf-8"))["findings"]
    assert [(e["code"], e["subject"]) for e in entries] == [("PL904", "pool kueue:chat")]
    (repo / "shared.yaml").write_text(POLICYLINT_SHARED, encoding="utf-8")
    code, findings = check_json(root, "PL904/fail")
    assert [(f["code"], f["subject"]) for f in findings] == [("PL904", "pool kueue-shared/chat")]
    assert check_json(root, "PL904/fail", "--baseline", "baseline.json") == (0, [])


# -- scheduler-made clusters ------------------------------------------------------------------

KUEUE_QUEUES = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: chat
spec:
  cohortName: shared
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: h100
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: 8
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: assistants
  name: chat
spec:
  clusterQueue: chat
"""

KUEUE_QUEUE = "{scheduler: kueue, name: assistants/chat}"
VOLCANO_QUEUE_REF = "{scheduler: volcano, name: chat}"

TIGHT_WORKLOAD = """\
apiVersion: policylint/v1
kind: Workload
metadata:
  name: {name}
  team: assistants
spec:
  class: inference
  queue: {queue}
  gpusPerReplica: 1
  concurrency: {{declared: 10}}
  tolerance:
    maxQueueSeconds: 0.5
    evidence: "product SLO document 2026-Q3"
"""

def _scheduler_repo(root: Path, cohort: str, queues: str, queue: str) -> Path:
    """Three workloads with sub-second tolerances behind one scheduler queue: PL302 on its cluster.

    The cluster has a document of its own (``cohort.yaml``), which the cluster-level
    finding is placed on; the queues and workloads sit in other files.
    """
    (root / "cohort.yaml").write_text(cohort, encoding="utf-8")
    (root / "queues.yaml").write_text(queues, encoding="utf-8")
    (root / "workloads.yaml").write_text(
        "---\n".join(TIGHT_WORKLOAD.format(name=n, queue=queue) for n in ("chat", "search", "voice")),
        encoding="utf-8",
    )
    (root / ".policylint.yaml").write_text('now: "2026-12-01"\nselect: [PL302]\nrules: {PL977: {accept: "select=PL302"}}\n', encoding="utf-8")
    return root


@pytest.fixture
def cohort_repo(tmp_path: Path) -> Path:
    """The three workloads in one Kueue cohort (``cohort.yaml``)."""
    cohort = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: shared\nspec: {}\n"
    return _scheduler_repo(tmp_path, cohort, KUEUE_QUEUES, KUEUE_QUEUE)


VOLCANO_QUEUE = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: chat
spec:
  parent: shared
  guarantee:
    resource:
      nvidia.com/gpu: "8"
  capability:
    nvidia.com/gpu: "8"
"""


@pytest.fixture
def parent_queue_repo(tmp_path: Path) -> Path:
    """The same three workloads in a Volcano leaf queue: PL302 on the parent queue's cluster (``cohort.yaml``)."""
    parent = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: shared\nspec:\n  weight: 1\n"
    return _scheduler_repo(tmp_path, parent, VOLCANO_QUEUE, VOLCANO_QUEUE_REF)


#: (fixture, key of the cluster, name it is shown under once a policylint Cluster takes "shared")
SCHEDULER_CLUSTERS = [
    ("cohort_repo", "cluster kueue:Cohort/shared", "cluster kueue-shared"),
    ("parent_queue_repo", "cluster volcano:Queue/shared", "cluster volcano-shared"),
]


def _sarif_fingerprints(repo: Path, *args: str) -> list[dict[str, str]]:
    code, out, err = run_cli(["check", "--format", "sarif", *args], cwd=repo)
    assert err == ""
    return [r["partialFingerprints"] for r in json.loads(out)["runs"][0]["results"]]


@pytest.mark.parametrize(("repo_fixture", "key", "renamed"), SCHEDULER_CLUSTERS)
def test_a_scheduler_cluster_keeps_its_key_when_its_display_name_changes(
    repo_fixture: str, key: str, renamed: str, request: pytest.FixtureRequest
) -> None:
    cohort_repo: Path = request.getfixturevalue(repo_fixture)
    code, findings = check_json(cohort_repo)
    assert [(f["code"], f["file"], f["subject"]) for f in findings] == [("PL302", "cohort.yaml", "cluster shared")]
    fingerprints = _sarif_fingerprints(cohort_repo)
    assert run_cli(["baseline", "-o", "baseline.json"], cwd=cohort_repo)[0] == 0
    entries = json.loads((cohort_repo / "baseline.json").read_text(encoding="utf-8"))["findings"]
    # The key names the cohort (parent queue), not the name the cluster is shown under.
    assert [(e["code"], e["subject"]) for e in entries] == [("PL302", key)]
    # A policylint Cluster called "shared" renames the scheduler's cluster ("kueue-shared").
    (cohort_repo / "shared.yaml").write_text(POLICYLINT_SHARED, encoding="utf-8")
    code, findings = check_json(cohort_repo)
    assert [(f["code"], f["file"], f["subject"]) for f in findings] == [("PL302", "cohort.yaml", renamed)]
    assert renamed in findings[0]["message"]
    assert _sarif_fingerprints(cohort_repo) == fingerprints
    code, out, err = run_cli(["check", "--format", "json", "--baseline", "baseline.json"], cwd=cohort_repo)
    report = json.loads(out)
    assert (code, report["findings"], report["stale_baseline"], report["summary"]["baselined"]) == (0, [], [], 1)


def test_a_baseline_keyed_by_the_cluster_label_still_matches(cohort_repo: Path) -> None:
    # Baselines written before clusters had a typed subject recorded the display label.
    _, findings = check_json(cohort_repo)
    [f] = findings
    entry = {"code": "PL302", "file": "cohort.yaml", "subject": "cluster shared", "path": "metadata/name",
             "message": f["message"], "measured": 1.0, "allowed": 0.5}
    (cohort_repo / "old-baseline.json").write_text(json.dumps({"version": 1, "findings": [entry]}), encoding="utf-8")
    code, out, err = run_cli(["check", "--format", "json", "--baseline", "old-baseline.json"], cwd=cohort_repo)
    report = json.loads(out)
    assert (code, report["findings"], report["stale_baseline"], report["summary"]["baselined"]) == (0, [], [], 1)


@pytest.mark.parametrize("renamed", [False, True])
@pytest.mark.parametrize("changed", ["queues.yaml", "workloads.yaml"])
@pytest.mark.parametrize("repo_fixture", ["cohort_repo", "parent_queue_repo"])
def test_changed_files_keep_the_scheduler_cluster_finding(
    repo_fixture: str, changed: str, renamed: bool, request: pytest.FixtureRequest
) -> None:
    # The finding sits on cohort.yaml; a change to the queue manifest or to a workload
    # placed in the cohort (parent queue) still reports it, whatever name the cluster is shown under.
    cohort_repo: Path = request.getfixturevalue(repo_fixture)
    if renamed:
        (cohort_repo / "shared.yaml").write_text(POLICYLINT_SHARED, encoding="utf-8")
    code, findings = check_json(cohort_repo, "--changed-files", changed)
    assert code == 1
    assert [(f["code"], f["file"]) for f in findings] == [("PL302", "cohort.yaml")]
    # A file that has nothing to do with the cohort narrows it away.
    (cohort_repo / "unrelated.yaml").write_text(POLICYLINT_SHARED.replace("shared", "elsewhere"), encoding="utf-8")
    assert check_json(cohort_repo, "--changed-files", "unrelated.yaml") == (0, [])


def test_every_code_literal_in_the_package_is_a_declared_rule() -> None:
    """Any "PLnnn" written in the package names a rule of the rule files (the one registry)."""
    from policylint.catalogue import catalogue

    written: dict[str, set[str]] = {}
    for path in sorted((REPO / "policylint").rglob("*.py")):
        for code in re.findall(r'"(PL\d{3})"', path.read_text(encoding="utf-8")):
            written.setdefault(code, set()).add(path.relative_to(REPO).as_posix())
    assert written
    assert {c: sorted(p) for c, p in written.items() if c not in catalogue()} == {}


def test_an_undeclared_code_is_refused_loudly() -> None:
    from policylint.catalogue import UnknownRuleCode, builtin

    assert builtin("PL001")[0]
    with pytest.raises(UnknownRuleCode, match="PL999 is not declared"):
        builtin("PL999")
