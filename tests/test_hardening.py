"""One regression test per class of hostile input: a finding at file:line:col, or one line and exit 2.

Each test feeds the smallest input that used to end in an internal error, a
hang or unbounded memory, and asserts what the user sees now. Trace readers
have their own tests beside them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, copy_minirepo, git, minirepo_path, replace_once, run_cli
from fixture_helpers import line_of
import policylint.model.load.compose as compose
from policylint.model.load import LoadLimits, SourceFile, load_file, parse_text

CONFIG = 'now: "2026-12-01"\nselect: [PL0]\nrules: {PL977: {accept: "select=PL0"}}\n'


def parsed(text: str, limits: LoadLimits = LoadLimits()) -> SourceFile:
    source = SourceFile(path=Path("x.yaml"), display="x.yaml", text=text)
    parse_text(source, limits)
    return source


def found(source: SourceFile) -> list[tuple[str, int, int, str]]:
    return [(f.code, f.line, f.column, f.message) for f in source.findings]


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = copy_minirepo(tmp_path_factory.mktemp("good") / "repo")
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    return repo


@pytest.fixture
def repo(good: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(good, tmp_path / "repo"))


def one_line_error(code: int, out: str, err: str) -> str:
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "internal error" not in err and "Traceback" not in err
    return err


# -- YAML reading --------------------------------------------------------------------------


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\ufffe"])
def test_control_character_is_a_finding_at_its_place(char: str) -> None:
    source = parsed(f"a: 1\nname: x{char}y\n")
    assert found(source) == [
        ("PL001", 2, 8, f"YAML syntax error: non-printable character U+{ord(char):04X} is not allowed in YAML")
    ]


@pytest.mark.parametrize(
    ("value", "tag"),
    [("!!float abc", "!!float"), ("!!bool maybe", "!!bool"), ("!!int abc", "!!int"), ("!!int 0x", "!!int"), ("!!int ''", "!!int")],
)
def test_explicit_tag_with_a_bad_value_is_a_finding(value: str, tag: str) -> None:
    source = parsed(f"spec:\n  gpus: {value}\n")
    text = value.split(" ", 1)[1].strip("'")
    assert found(source) == [("PL001", 2, 9, f"YAML syntax error: '{text}' is not a valid {tag} value")]


def test_integer_of_5000_digits_is_refused() -> None:
    source = parsed("a: " + "9" * 5000 + "\n")
    assert found(source) == [("PL005", 1, 4, "number of 5000 characters is longer than the 4300-character limit; refused")]


def test_long_sexagesimal_number_is_refused_before_conversion() -> None:
    # YAML 1.1 reads 1:30:00 as an integer; converting 100,000 parts is quadratic
    source = parsed("a: 1" + ":59" * 100_000 + "\n")
    assert [(f.code, f.line, f.column) for f in source.findings] == [("PL005", 1, 4)]


def test_millions_of_nodes_are_refused_while_parsing() -> None:
    # 2 million nodes under the size limit: refused after the budget, not after composition
    text = "[" + "0," * 2_000_000 + "0]\n"
    source = parsed(text)
    assert found(source) == [("PL005", 1, 200_000, "file holds more than 100000 YAML nodes; refused")]
    assert source.documents == []


def test_tens_of_thousands_of_documents_are_refused_while_parsing() -> None:
    source = parsed("---\na: 1\n" * 70_000)
    assert found(source)[-1] == ("PL005", 2001, 1, "file holds more than 1000 documents; refused")
    assert len(source.documents) == 1000


def test_document_limit_is_configurable() -> None:
    source = parsed("---\na: 1\n" * 5, LoadLimits(max_documents=3))
    assert found(source) == [("PL005", 7, 1, "file holds more than 3 documents; refused")]


def test_alias_expansion_is_budgeted_across_the_documents_of_a_file() -> None:
    doc = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    source = parsed(("---\n" + doc) * 3, LoadLimits(max_nodes=200))
    assert [f.message for f in source.findings] == ["file expands to more than 200 nodes (alias expansion); refused"]
    assert len(source.documents) == 2


def test_control_character_in_the_configuration_is_one_line_naming_the_file(repo: Path) -> None:
    (repo / ".policylint.yaml").write_text("select: [PL1\x00]\n", encoding="utf-8")
    err = one_line_error(*run_cli(["config"], cwd=repo))
    assert err == (
        f"policylint: error: .policylint.yaml: invalid YAML at line 1, column 13: "
        "non-printable character U+0000 is not allowed in YAML\n"
    )


REPO = Path(__file__).resolve().parents[1]
def _snapshot(source: SourceFile) -> tuple[object, ...]:
    docs = [(d.index, d.data, d.positions._values, d.positions._keys) for d in source.documents]
    return docs, [(f.code, f.line, f.column, f.message) for f in source.findings]


CORPUS = sorted(REPO.glob("examples/**/*.yaml")) + sorted(REPO.glob("tests/**/*.yaml")) + sorted(REPO.glob("fuzz/corpus/**/*.yaml"))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_both_parsers_agree_on_every_yaml_file_of_the_repository(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not compose.LIBYAML:
        pytest.skip("libyaml is not installed")
    with_c = _snapshot(load_file(path, "x"))
    monkeypatch.setattr(compose, "LIBYAML", False)
    assert _snapshot(load_file(path, "x")) == with_c


# -- documents that look like ours ----------------------------------------------------------


WORKLOAD = Path("workloads/product-ai.yaml")


@pytest.mark.parametrize(
    ("old", "new", "column", "message"),
    [
        ("apiVersion: policylint/v1", "apiVersion: policylint/v2", 1,
         "apiVersion 'policylint/v2' is not policylint/v1, so the document is not read"),
        ("apiVersion: policylint/v1", "apiVersion: policylint.dev/v1", 1,
         "apiVersion 'policylint.dev/v1' is not policylint/v1, so the document is not read"),
        ("apiVersion: policylint/v1", "apiversion: policylint/v1", 1,
         "key 'apiversion' is not 'apiVersion' (keys are case-sensitive), so the document is not read"),
        ("apiVersion: policylint/v1\n", "", 1,
         "a Workload without apiVersion is not read; policylint reads policylint/v1"),
        ("apiVersion: policylint/v1", "apiVersion: policylnt/v1", 1,
         "apiVersion 'policylnt/v1' is not policylint/v1, so the document is not read"),
        ("apiVersion: policylint/v1", "apiVersion: polciylint/v1", 1,
         "apiVersion 'polciylint/v1' is not policylint/v1, so the document is not read"),
        ("apiVersion: policylint/v1", "apiVersion: plcylnt/v1", 1,
         "a Workload with policylint's fields has apiVersion 'plcylnt/v1', so it is not read"),
    ],
    ids=["v2", "other-group", "lowercase-key", "missing", "letter-dropped", "letters-swapped", "far-typo-our-fields"],
)
def test_near_miss_api_version_is_a_finding(repo: Path, old: str, new: str, column: int, message: str) -> None:
    text = (repo / WORKLOAD).read_text(encoding="utf-8")
    (repo / WORKLOAD).write_text(text.replace(old, new, 1), encoding="utf-8")
    code, out, err = run_cli(["check", "--format", "json", "--select", "PL007"], cwd=repo)
    assert (code, err) == (1, "")
    (finding,) = json.loads(out)["findings"]
    assert (finding["code"], finding["file"], finding["line"], finding["column"], finding["message"]) == (
        "PL007", WORKLOAD.as_posix(), line_of(minirepo_path() / WORKLOAD, old.strip() or "apiVersion"), column, message
    )


def test_spec_with_our_fields_but_no_header_is_a_finding() -> None:
    source = parsed("metadata: {name: x}\nspec:\n  gpusPerReplica: 1\n")
    assert [(f.code, f.line) for f in source.findings] == [("PL007", 1)]


def test_near_miss_distance_is_small() -> None:
    from policylint.model.load.documents import _nearly_policylint

    assert all(map(_nearly_policylint, ["policylnt", "polycylint", "policylitn", "plicylint", "opolicylint"]))
    assert not any(map(_nearly_policylint, ["policy", "policylint", "apps", "batch", "kueue.xk8s.io", "plcylnt",
                                            "networking.k8s.io", "monitoring.coreos.com", "schedulingvolcano.sh"]))


def test_a_kueue_workload_with_its_own_fields_stays_silent() -> None:
    source = parsed("apiVersion: kueue.x-k8s.io/v1beta1\nkind: Workload\nmetadata: {name: w}\n"
                    "spec: {queueName: q, podSets: [{name: main, count: 1}]}\n---\n"
                    "apiVersion: example.com/v1\nkind: Workload\nspec: {replicas: 2}\n")
    assert source.findings == []


def test_unrelated_yaml_stays_silent() -> None:
    source = parsed("apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: 2}\n---\nkind: Cluster\napiVersion: cluster.x-k8s.io/v1\n")
    assert source.findings == []


def test_oversized_file_found_by_walking_is_reported_like_a_named_one(repo: Path) -> None:
    (repo / ".policylint.yaml").write_text(CONFIG + "limits: {max-file-bytes: 150000}\n", encoding="utf-8")
    (repo / "dump.yaml").write_text("a: " + "x" * 200_000 + "\n", encoding="utf-8")
    walked = run_cli(["check", "--format", "json"], cwd=repo)
    named = run_cli(["check", "--format", "json", "dump.yaml"], cwd=repo)
    for code, out, err in (walked, named):
        assert (code, err) == (1, "")
        findings = [(f["code"], f["file"], f["message"]) for f in json.loads(out)["findings"] if f["file"] == "dump.yaml"]
        assert findings == [("PL005", "dump.yaml", "file is 200004 bytes, more than the 150000-byte limit; refused")]


def test_an_emptied_file_beside_policylint_documents_is_reported_when_walked(repo: Path) -> None:
    """An emptied workload file would take its workload out of its pool unreported; an empty YAML file elsewhere is not ours."""
    (repo / "workloads" / "emptied.yaml").write_text("", encoding="utf-8")
    (repo / "workloads" / "separators.yaml").write_text("# merged badly\n---\n", encoding="utf-8")
    (repo / "elsewhere").mkdir()
    (repo / "elsewhere" / "empty.yaml").write_text("", encoding="utf-8")
    code, out, err = run_cli(["check", "--format", "json"], cwd=repo)
    assert (code, err) == (1, "")
    found = sorted((f["code"], f["file"]) for f in json.loads(out)["findings"] if f["code"] == "PL004")
    assert found == [("PL004", "workloads/emptied.yaml"), ("PL004", "workloads/separators.yaml")]
    # the hook, given the emptied file, reports it too
    code, out, err = run_cli(["check", "--format", "json", "--changed-files", "workloads/emptied.yaml"], cwd=repo)
    assert ("PL004", "workloads/emptied.yaml") in {(f["code"], f["file"]) for f in json.loads(out)["findings"]}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_named_pipe_found_by_walking_is_reported(repo: Path) -> None:
    os.mkfifo(repo / "pipe.yaml")
    code, out, err = run_cli(["check", "--format", "json"], cwd=repo)
    assert (code, err) == (1, "")
    assert [(f["file"], f["message"]) for f in json.loads(out)["findings"]] == [
        ("pipe.yaml", "not a regular file (pipe, device or socket); refused")
    ]


# -- paths -----------------------------------------------------------------------------------


def test_measurement_path_component_too_long_is_a_finding(repo: Path) -> None:
    long = "a" * 300
    replace_once(repo / WORKLOAD, "path: ../measurements/traces/chat-assistant.csv", f"path: ../measurements/{long}.csv")
    code, out, err = run_cli(["check", "--format", "json"], cwd=repo)
    assert (code, err) == (1, "")
    (finding,) = json.loads(out)["findings"]
    assert (finding["code"], finding["line"]) == ("PL022", line_of(minirepo_path() / WORKLOAD, "path: ../measurements/traces/chat-assistant.csv"))
    assert finding["message"].endswith("cannot be opened: File name too long")


# -- Kubernetes quantities -------------------------------------------------------------------


@pytest.fixture
def kueue(tmp_path: Path) -> Path:
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "kueue"))
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    return repo


@pytest.mark.parametrize(
    ("quota", "message"),
    [
        (".nan", "nan is not a Kubernetes quantity (a number is needed)"),
        (".inf", "inf is not a Kubernetes quantity (a number is needed)"),
        ('"1e999999999"', "'1e999999999' is out of range for a Kubernetes quantity"),
    ],
)
def test_kueue_quota_that_is_not_a_number_is_a_finding(kueue: Path, quota: str, message: str) -> None:
    replace_once(kueue / "kueue/cluster-queues.yaml", "nominalQuota: 22", f"nominalQuota: {quota}")
    code, out, err = run_cli(["check", "--format", "json", "--select", "PL010"], cwd=kueue)
    assert (code, err) == (1, "")
    assert [(f["file"], f["line"], f["column"], f["message"]) for f in json.loads(out)["findings"]] == [
        ("kueue/cluster-queues.yaml", 29, 9, message)
    ]


VOLCANO_JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: train, namespace: research}}
spec:
  minAvailable: {min_available}
  queue: research
  tasks:
    - name: worker
      replicas: {replicas}
      template:
        spec:
          containers:
            - name: main
              resources:
                limits: {{nvidia.com/gpu: {gpus}}}
"""


@pytest.mark.parametrize(
    ("values", "line", "message"),
    [
        ({"replicas": ".inf"}, 9, "replicas must be a whole number, got inf"),
        ({"gpus": ".nan"}, 15, "nan is not a Kubernetes quantity (a number is needed)"),
        ({"min_available": ".nan"}, 5, "minAvailable must be a whole number, got nan"),
        ({"replicas": "1.0e+300"}, 9, "replicas must be between 0 and 1000000000, got 1e+300"),
    ],
)
def test_volcano_job_numbers_that_are_not_counts_are_findings(tmp_path: Path, values: dict[str, str], line: int, message: str) -> None:
    fields = {"min_available": "4", "replicas": "4", "gpus": "8", **values}
    (tmp_path / "job.yaml").write_text(VOLCANO_JOB.format(**fields), encoding="utf-8")
    code, out, err = run_cli(["check", "--isolated", "--format", "json", "job.yaml"], cwd=tmp_path)
    assert (code, err) == (1, "")
    assert [(f["code"], f["line"], f["message"]) for f in json.loads(out)["findings"]] == [("PL010", line, message)]


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        (f"limits:\n  max-file-bytes: {2**63 - 1}\n", "limits.max-file-bytes",
         "must be at most 1e+15 in magnitude, got 9223372036854775807"),
        ("limits:\n  max-file-bytes: 4000000000\n", "limits.max-file-bytes", "must be <= 1073741824, got 4000000000"),
        ("rules:\n  PL101: {headroom: " + "9" * 401 + "}\n", "rules.PL101.headroom",
         "must be at most 1e+15 in magnitude, got a number of 401 digits"),
        ("rules:\n  PL101: {headroom: .nan}\n", "rules.PL101.headroom",
         "must be a finite number of at most 1e+15 in magnitude, got nan"),
        ("per-file-ignores:\n  1: [PL101]\n", "per-file-ignores.1", 'key 1 must be text (quote it: "1")'),
        ("exclude: " + "[" * 30 + "]" * 30 + "\n", "exclude[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]",
         "nested deeper than 20 levels"),
    ],
    ids=["2**63-1", "above-maximum", "401-digits", "nan", "integer-key", "deep"],
)
def test_unusable_configuration_value_is_one_line_naming_file_and_key(
    repo: Path, text: str, key: str, message: str, request: pytest.FixtureRequest
) -> None:
    (repo / ".policylint.yaml").write_text(text, encoding="utf-8")
    err = one_line_error(*run_cli(["config"], cwd=repo))
    # line:col of the key, or of the list item it names (the twentieth bracket of the deep one)
    where = {"2**63-1": "2:3", "above-maximum": "2:3", "401-digits": "2:11", "nan": "2:11", "integer-key": "2:3",
             "deep": "1:30"}[request.node.callspec.id]
    assert err == f"policylint: error: .policylint.yaml:{where} at key '{key}': {message}\n"


def test_3000_deep_array_in_pyproject_names_file_and_key(repo: Path) -> None:
    (repo / ".policylint.yaml").unlink()
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.policylint]\nselect = ["PL0"]\nignore = ' + "[" * 3000 + "]" * 3000 + "\n",
        encoding="utf-8",
    )
    err = one_line_error(*run_cli(["config"], cwd=repo))
    assert err == (
        f"policylint: error: pyproject.toml at key 'tool.policylint.ignore': "
        "line 6: lists or tables nest deeper than 20 levels\n"
    )


def test_brackets_inside_toml_strings_are_not_nesting(repo: Path) -> None:
    (repo / ".policylint.yaml").unlink()
    (repo / "pyproject.toml").write_text(
        '[tool.policylint]\nexclude = ["' + "[" * 50 + '", \'' + "{" * 50 + "'] # " + "[" * 50 + "\n",
        encoding="utf-8",
    )
    code, out, err = run_cli(["config"], cwd=repo)
    assert (code, err) == (0, "")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize("args", [["--config", "pipe.yaml"], []], ids=["--config", "discovered"])
def test_configuration_that_is_a_pipe_is_refused_without_blocking(repo: Path, args: list[str]) -> None:
    name = "pipe.yaml" if args else ".policylint.yaml"
    (repo / ".policylint.yaml").unlink()
    os.mkfifo(repo / name)
    err = one_line_error(*run_cli(["config", *args], cwd=repo))
    assert err.endswith(f"{name}: not a regular file (pipe, device or socket); refused\n")


# -- baselines -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "b.json: not a policylint baseline file (JSON nested too deeply)"),
        (
            json.dumps({"version": 1, "findings": [
                {"code": "PL101", "file": "a.yaml", "subject": "pool a/b", "path": "", "message": "m"},
                {"code": "PL101", "file": 7, "subject": None, "path": ""},
            ]}),
            "b.json:1:135 at key 'findings[1].file': not a policylint baseline file (must be text, got int)",
        ),
    ],
    ids=["deep", "mixed-types"],
)
def test_unusable_baseline_is_one_line(repo: Path, content: str, message: str) -> None:
    (repo / "b.json").write_text(content, encoding="utf-8")
    err = one_line_error(*run_cli(["check", "--baseline", "b.json"], cwd=repo))
    assert err == f"policylint: error: {message}\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="needs a FIFO and /dev/zero")
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_baseline_that_is_not_a_regular_file_is_refused_without_reading(repo: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(repo / "b.json")
    else:
        (repo / "b.json").symlink_to("/dev/zero")
    err = one_line_error(*run_cli(["check", "--baseline", "b.json"], cwd=repo))
    assert err == "policylint: error: b.json: not a regular file (pipe, device or socket); refused\n"


# -- git ---------------------------------------------------------------------------------------


@pytest.fixture
def history(repo: Path) -> Path:
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    return repo


@pytest.mark.parametrize("base", ["@{-1}", "HEAD@{1}", "no-such-branch", "HEAD~5"])
def test_revision_git_cannot_resolve_is_one_line(history: Path, base: str) -> None:
    err = one_line_error(*run_cli(["check", "--diff", base], cwd=history))
    assert err == f"policylint: error: git revision '{base}' not found.\n"


def test_revision_forms_only_git_understands_are_accepted(history: Path) -> None:
    code, out, err = run_cli(["check", "--diff", "HEAD@{yesterday}"], cwd=history)
    assert (code, err) == (0, "")


@pytest.mark.parametrize("base", ["", "  ", "--output=x"])
def test_empty_or_option_like_revision_is_a_usage_error(history: Path, base: str) -> None:
    err = one_line_error(*run_cli(["check", f"--diff={base}"], cwd=history))
    assert err.startswith("policylint: error: --diff needs a git revision, got ")


def test_diff_sees_files_with_non_ascii_names(history: Path) -> None:
    source = history / "clusters" / "prod-east.yaml"
    renamed = history / "clusters" / "prod-östra ☃.yaml"
    source.rename(renamed)
    git(history, "add", "-A")
    git(history, "commit", "-q", "-m", "rename")
    replace_once(renamed, "reservedGpus: 48", "reservedGpus: 80")
    code, out, err = run_cli(["check", "--format", "json", "--select", "PL101", "--diff", "HEAD"], cwd=history)
    assert (code, err) == (1, "")
    assert [(f["code"], f["file"]) for f in json.loads(out)["findings"]] == [("PL101", "clusters/prod-östra ☃.yaml")]


# -- suppression comments -------------------------------------------------------------------


def test_suppression_comment_with_100k_spaces_is_read_in_linear_time() -> None:
    """The old pattern backtracked (4,000 spaces: over 100 s); this runs in a subprocess with a timeout."""
    script = (
        "from policylint.engine.filter import find_comment, parse_directive\n"
        "for n in (100_000, 200_000):\n"
        "    line = 'x: 1  # policylint: disable=' + ' ' * n + '#'\n"
        "    hash_at, body = find_comment(line)\n"
        "    assert parse_directive(body) is None\n"
        "    line = 'x: 1  # policylint: disable=PL101' + ' ' * n + 'until=2027-01-01' + ' ' * n + '-- why'\n"
        "    d = parse_directive(find_comment(line)[1])\n"
        "    assert (d.rules, d.until, d.reason) == ('PL101', '2027-01-01', 'why'), d\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")


# -- command line ----------------------------------------------------------------------------


def test_changed_file_outside_the_repository_is_no_change_of_it(repo: Path, tmp_path: Path) -> None:
    """A monorepo hook passes every staged file: one outside the capacity repository is not its change."""
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("a: 1\n", encoding="utf-8")
    code, out, err = run_cli(["check", "--changed-files", "--format", "json", str(outside)], cwd=repo)
    assert (code, err) == (0, "")
    assert json.loads(out)["findings"] == []


def test_erlang_zero_wait_needs_infinitely_many_servers() -> None:
    err = one_line_error(*run_cli(["erlang", "--arrival-rate", "10", "--service-time", "1", "--max-wait", "0"]))
    assert "a mean wait of 0 needs infinitely many servers" in err


def test_erlang_zero_wait_without_arrivals_needs_one_server() -> None:
    code, out, err = run_cli(["erlang", "--arrival-rate", "0", "--service-time", "1", "--max-wait", "0", "--format", "json"])
    assert (code, err, json.loads(out)["servers"]) == (0, "", 1)


def test_erlang_search_agrees_with_the_calculator() -> None:
    from policylint.bands import erlang_c_wait
    from policylint.commands.erlang import _least_servers

    for rate, service, wait in [(10.0, 1.0, 0.5), (3.7, 2.2, 0.01), (120.0, 0.3, 0.001), (0.5, 40.0, 5.0)]:
        n = _least_servers(rate, service, wait)
        assert erlang_c_wait(n, rate, service).mean_wait <= wait
        assert n == 1 or erlang_c_wait(n - 1, rate, service).mean_wait > wait


def test_erlang_refuses_sizes_it_cannot_compute_quickly() -> None:
    err = one_line_error(*run_cli(["erlang", "--arrival-rate", "1", "--service-time", "1", "--servers", "10000000000"]))
    assert err == "policylint: error: --servers must be at most 100000\n"


def test_no_report_is_half_written_when_a_later_one_fails(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import policylint.report as report

    real = report.render

    def failing(fmt, result, context):  # type: ignore[no-untyped-def]
        if fmt == "json":
            raise RuntimeError("renderer failed")
        return real(fmt, result, context)

    monkeypatch.setattr(report, "render", failing)
    code, out, err = run_cli(["check", "--format", "text", "--format", "json=report.json"], cwd=repo)
    assert (code, out) == (2, "")
    assert not (repo / "report.json").exists()
    assert err == (
        "policylint: internal error: RuntimeError: renderer failed (a bug in policylint: rerun with "
        "POLICYLINT_DEBUG=1 for the traceback and report it)\n"
    )


def test_internal_error_with_a_multi_line_message_is_one_line(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import policylint.session as session

    def broken(args):  # type: ignore[no-untyped-def]
        raise ValueError("first line\n  second line")

    monkeypatch.setattr(session.Session, "from_args", broken)
    code, out, err = run_cli(["check"], cwd=repo)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "ValueError: first line second line (a bug in policylint" in err


def test_debug_variable_keeps_the_traceback(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import policylint.session as session

    def broken(args):  # type: ignore[no-untyped-def]
        raise ValueError("boom")

    monkeypatch.setattr(session.Session, "from_args", broken)
    monkeypatch.setenv("POLICYLINT_DEBUG", "1")
    with pytest.raises(ValueError, match="boom"):
        run_cli(["check"], cwd=repo)


@pytest.mark.parametrize("option", [[], ["--config"], ["--baseline"], ["--rule-dir"], ["--changed-files"]])
def test_path_argument_the_system_cannot_use_is_one_line(repo: Path, option: list[str]) -> None:
    long = "a" * 300
    err = one_line_error(*run_cli(["check", *option, long], cwd=repo))
    assert err == f"policylint: error: {long}: File name too long\n"


def test_root_that_is_not_a_folder_is_a_usage_error(repo: Path) -> None:
    err = one_line_error(*run_cli(["check", "--root", "clusters/prod-east.yaml"], cwd=repo))
    assert err == "policylint: error: --root clusters/prod-east.yaml: not a folder\n"


def test_long_indented_lines_in_pyproject_are_scanned_in_linear_time(tmp_path: Path) -> None:
    """A lazy pattern in the nesting scan backtracked on indented lines (200 lines: 27 s); 1,000 would take minutes."""
    (tmp_path / "pyproject.toml").write_text("[project]\n" + "".join("  " * k + "- \n" for k in range(1000)), encoding="utf-8")
    script = "from policylint.cli import main; raise SystemExit(main(['config', '--config', 'pyproject.toml']))"
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("policylint: error: pyproject.toml: invalid TOML: ")
    assert done.stderr.count("\n") == 1


def test_prometheus_answer_with_a_5000_digit_number_is_a_measurement_error(tmp_path: Path) -> None:
    from policylint.errors import MeasurementError
    from policylint.traces import read_series

    path = tmp_path / "answer.json"
    path.write_text('{"status": "success", "data": {"resultType": "matrix", "result": [' + "9" * 5000 + "]}}", encoding="utf-8")
    with pytest.raises(MeasurementError, match="a number too long to read"):
        read_series(path, format="prometheus")


def test_one_very_long_timestamp_cell_is_an_error_not_gigabytes(tmp_path: Path) -> None:
    """numpy pads text to the longest cell: 30,000 rows and one 4,000-character cell used to need over 1 GiB."""
    from policylint.errors import MeasurementError
    from policylint.traces import read_series

    rows = [f"2026-11-01T{h:02d}:{m:02d}:00+01:00,{m}" for h in range(24) for m in range(60)] * 21
    rows[50] = "{a: " * 1000 + "1,1"
    path = tmp_path / "trace.csv"
    path.write_text("timestamp,in_flight\n" + "\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(MeasurementError) as caught:
        read_series(path)
    assert caught.value.row == 52


def test_a_cell_over_the_csv_module_field_limit_is_located_not_an_internal_error(tmp_path: Path) -> None:
    """Found by the fuzz target: locating the bad row went through ``csv``, which refuses cells over 128 KiB."""
    from policylint.errors import MeasurementError
    from policylint.traces import read_series

    rows = [f"{1_764_547_200 + 300 * i},{i % 7}" for i in range(40)]
    rows[4] = f"{1_764_547_200 + 1200}," + "9" * 200_000 + "x"
    path = tmp_path / "trace.csv"
    path.write_text("timestamp,in_flight\n\n" + "\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(MeasurementError) as caught:
        read_series(path)
    assert caught.value.row == 7  # header, a blank line, then the fifth data row
