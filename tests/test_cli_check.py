"""`policylint check` through the real entry point: exit codes, messages, formats."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, run_cli

ANSI = "\x1b["

CLUSTER = """\
apiVersion: policylint/v1
kind: Cluster
metadata:
  name: prod
spec:
  pools:
    - name: serving
      gpu: {model: H100, memoryGiB: 80}
      reservedGpus: 8
      serves: [inference]
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
"""


def check(tmp_path: Path, files: dict[str, str], *args: str) -> tuple[int, str, str]:
    """Write ``files`` into a fresh repository and run ``check`` on it in isolation.

    Only the structural rules (PL0xx) run, so the planning rules, which judge
    these deliberately small documents too, do not add findings.
    """
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    code, out, err = run_cli(["check", "--isolated", "--root", ".", "--select", "PL0", *args], cwd=tmp_path)
    assert "Traceback" not in err
    assert "internal error" not in err
    return code, out, err


# -- bad documents are findings (exit 1) ------------------------------------------------


def test_yaml_syntax_error(tmp_path: Path) -> None:
    code, out, err = check(tmp_path, {"c.yaml": CLUSTER.replace("[inference]", "[inference")}, "c.yaml")
    assert code == 1
    assert "c.yaml:11:1: error PL001 [yaml-syntax-error] YAML syntax error: expected ',' or ']'" in out
    assert err == ""


def test_duplicate_key(tmp_path: Path) -> None:
    code, out, _ = check(tmp_path, {"c.yaml": CLUSTER + "  region: a\n  region: b\n"}, "c.yaml")
    assert code == 1
    assert (
        "c.yaml:12:3: error PL002 [duplicate-key] duplicate key 'region' (first defined on line 11);"
        " YAML loaders silently keep the last value"
    ) in out


def test_schema_violation(tmp_path: Path) -> None:
    code, out, _ = check(tmp_path, {"c.yaml": CLUSTER.replace("reservedGpus: 8", "reservedGpus: eight")}, "c.yaml")
    assert code == 1
    assert (
        "c.yaml:9:7: error PL010 [schema-violation] Cluster: 'spec/pools/0/reservedGpus': 'eight' is not of type"
        " 'integer'"
    ) in out
    assert "= help: see `policylint schema cluster` for the allowed fields" in out


def test_broken_policylint_file_in_a_folder_is_reported(tmp_path: Path) -> None:
    broken = "apiVersion: policylint/v1\nkind: Cluster\nmetadata: {name: [x\n"
    code, out, _ = check(tmp_path, {"ok.yaml": CLUSTER, "sub/broken.yaml": broken}, ".")
    assert code == 1
    assert "sub/broken.yaml:4:1: error PL001" in out


def test_a_list_of_policylint_documents_in_a_folder_is_reported(tmp_path: Path) -> None:
    listed = "- apiVersion: policylint/v1\n  kind: Workload\n  metadata: {name: chat}\n"
    code, out, _ = check(tmp_path, {"ok.yaml": CLUSTER, "sub/listed.yaml": listed}, ".")
    assert code == 1
    assert "sub/listed.yaml:1:3: error PL006" in out


def test_a_policylint_file_that_is_not_utf8_in_a_folder_is_reported(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "latin.yaml").write_bytes(
        "apiVersion: policylint/v1\nkind: Workload\nmetadata:\n  name: caf\u00e9\n".encode("latin-1")
    )
    code, out, _ = check(tmp_path, {"ok.yaml": CLUSTER}, ".")
    assert code == 1
    assert "sub/latin.yaml:4:12: error PL003" in out


def test_other_files_are_still_checked_after_a_syntax_error(tmp_path: Path) -> None:
    broken = "apiVersion: policylint/v1\nkind: Cluster\nmetadata: {name: [x\n"
    good_but_wrong = CLUSTER.replace("reservedGpus: 8", "reservedGpus: -1")
    code, out, _ = check(tmp_path, {"a.yaml": broken, "b.yaml": good_but_wrong}, ".")
    assert code == 1
    assert "a.yaml:4:1: error PL001" in out
    assert "b.yaml:9:7: error PL010" in out


def test_deeply_nested_file_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    deep = "apiVersion: policylint/v1\nkind: Cluster\nmetadata: " + "[" * 3000 + "]" * 3000 + "\n"
    code, out, _ = check(tmp_path, {"deep.yaml": deep}, "deep.yaml")
    assert code == 1
    assert "deep.yaml:3:" in out and "PL005" in out


def test_alias_bomb_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    bomb = "apiVersion: policylint/v1\nkind: Cluster\n" + "l0: &l0 [" + ", ".join(['"lol"'] * 10) + "]\n"
    bomb += "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]\n" for i in range(1, 10))
    code, out, _ = check(tmp_path, {"bomb.yaml": bomb}, "bomb.yaml")
    assert code == 1
    assert "PL005 [unsafe-document] document expands to more than 100000 nodes" in out


# -- usage and setup errors (exit 2) ----------------------------------------------------


def test_missing_path(tmp_path: Path) -> None:
    code, out, err = check(tmp_path, {"c.yaml": CLUSTER}, "nope")
    assert code == 2
    assert out == ""
    assert err == "policylint: error: path does not exist: nope\n"


def test_folder_with_no_policylint_documents(tmp_path: Path) -> None:
    code, out, err = check(tmp_path, {"k8s/deploy.yaml": DEPLOYMENT}, "k8s")
    assert code == 2
    assert out == ""
    assert err == (
        "policylint: error: no policylint documents found in k8s"
        " (looked for YAML files with apiVersion: policylint/v1)\n"
    )


def test_unknown_option_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = check(tmp_path, {"c.yaml": CLUSTER}, "--frobnicate")
    assert code == 2
    assert err.splitlines()[-1] == "policylint: error: unrecognized arguments: --frobnicate"


# -- what is skipped ----------------------------------------------------------------------


def test_unrelated_yaml_next_to_policylint_files_is_skipped(tmp_path: Path) -> None:
    files = {
        "clusters/prod.yaml": CLUSTER,
        "clusters/deploy.yaml": DEPLOYMENT,
        "clusters/values.yml": "replicaCount: 1\n",
        "clusters/broken-helm.yaml": "image: {{ .Values.image }}\n",
        "other/empty.yaml": "",
    }
    code, out, err = check(tmp_path, files, ".")
    assert (code, err) == (0, "")
    assert out == "All checks passed: 1 document in 1 file.\n"


def test_an_empty_file_next_to_policylint_files_is_reported(tmp_path: Path) -> None:
    # most likely one of ours, emptied by a bad merge: its documents would vanish unreported
    code, out, err = check(tmp_path, {"clusters/prod.yaml": CLUSTER, "clusters/empty.yaml": ""}, ".")
    assert (code, err) == (1, "")
    assert "clusters/empty.yaml:1:1: error PL004 [empty-document] file is empty" in out


def test_unrelated_yaml_named_explicitly_is_still_refused(tmp_path: Path) -> None:
    code, _, err = check(tmp_path, {"deploy.yaml": DEPLOYMENT}, "deploy.yaml")
    assert code == 2
    assert err.startswith("policylint: error: no policylint documents found in deploy.yaml")


# -- output formats -----------------------------------------------------------------------

DOCUMENTED_KEYS = {"version", "summary", "findings", "suppressed", "baselined", "stale_baseline"}
SUMMARY_KEYS = {"files", "documents", "findings", "error", "warning", "info", "suppressed", "fixable", "unsafe_fixable"}
FINDING_KEYS = {"file", "line", "column", "code", "name", "severity", "message", "hint", "document", "path", "subject", "fix"}


def test_json_report_has_the_documented_shape() -> None:
    code, out, err = run_cli(["check", "examples/bad", "--format", "json", "--now", "2026-12-01"], cwd=REPO)
    assert "Traceback" not in err
    assert code == 1
    report = json.loads(out)
    assert set(report) == DOCUMENTED_KEYS
    assert SUMMARY_KEYS <= set(report["summary"])
    assert report["findings"], "examples/bad must have findings"
    for item in report["findings"]:
        assert set(item) == FINDING_KEYS
        assert item["file"].startswith("examples/bad/")
        assert item["line"] >= 1 and item["column"] >= 1
    assert report["summary"]["findings"] == len(report["findings"])
    assert report["summary"]["files"] >= len({f["file"] for f in report["findings"]})
    keys = [(f["file"], f["line"], f["column"], f["code"]) for f in report["findings"]]
    assert keys == sorted(keys)


def test_json_report_is_byte_identical_across_runs() -> None:
    args = ["check", "examples/bad", "--format", "json", "--now", "2026-12-01"]
    first = run_cli(args, cwd=REPO)
    second = run_cli(args, cwd=REPO)
    assert first[0] == 1
    assert first == second


def test_json_report_does_not_depend_on_hash_seed() -> None:
    """Separate processes with different string hashing still agree byte for byte."""
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "NO_COLOR": "1"}
        proc = subprocess.run(
            [sys.executable, "-m", "policylint", "check", "examples/bad", "--format", "json", "--now", "2026-12-01"],
            cwd=REPO,
            env=env,
            capture_output=True,
            timeout=60,
        )
        assert proc.returncode == 1, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]


def test_json_report_of_a_syntax_error(tmp_path: Path) -> None:
    code, out, _ = check(tmp_path, {"c.yaml": CLUSTER + "  region: a\n  region: b\n"}, "--format", "json", "c.yaml")
    assert code == 1
    (item,) = json.loads(out)["findings"]
    assert (item["file"], item["line"], item["column"], item["code"]) == ("c.yaml", 12, 3, "PL002")


class _Terminal(io.StringIO):
    """A stdout that claims to be a terminal, so colour would be on by default."""

    def isatty(self) -> bool:
        return True


def _run_on_terminal(args: list[str], cwd: Path) -> str:
    from policylint.cli import main

    out = _Terminal()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            main(args)
    finally:
        os.chdir(old)
    return out.getvalue()


def test_colour_on_a_terminal_unless_no_color(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "c.yaml").write_text(CLUSTER.replace("reservedGpus: 8", "reservedGpus: x"), encoding="utf-8")
    args = ["check", "--isolated", "c.yaml"]
    monkeypatch.delenv("NO_COLOR")
    assert ANSI in _run_on_terminal(args, tmp_path)  # so the next assertion means something
    monkeypatch.setenv("NO_COLOR", "1")
    plain = _run_on_terminal(args, tmp_path)
    assert ANSI not in plain
    assert "c.yaml:9:7: error PL010" in plain


def test_no_ansi_escapes_in_captured_output() -> None:
    code, out, err = run_cli(["check", "examples/bad", "--now", "2026-12-01"], cwd=REPO)
    assert code == 1
    assert ANSI not in out and ANSI not in err


# -- the happy paths ------------------------------------------------------------------------


def test_good_examples_pass() -> None:
    code, out, err = run_cli(["check", "examples/good"], cwd=REPO)
    assert (code, err) == (0, "")
    assert re.fullmatch(r"All checks passed: \d+ documents in \d+ files\.\n", out), out


def test_bad_examples_fail_with_findings() -> None:
    code, out, err = run_cli(["check", "examples/bad", "--now", "2026-12-01"], cwd=REPO)
    assert code == 1
    assert err == ""
    located = re.findall(r"^  (examples/bad/\S+\.yaml):(\d+):(\d+): (?:error|warning|info) PL\d{3} ", out, re.M)
    assert located, out
    assert {f for f, _, _ in located} >= {"examples/bad/clusters/prod-east.yaml", "examples/bad/workloads/serving.yaml"}


def test_exit_zero_keeps_the_report(tmp_path: Path) -> None:
    code, out, _ = check(tmp_path, {"c.yaml": CLUSTER.replace("reservedGpus: 8", "reservedGpus: x")}, "--exit-zero")
    assert code == 0
    assert "PL010" in out


@pytest.mark.parametrize("args", [["--help"], ["check", "--help"]])
def test_help(args: list[str]) -> None:
    code, out, err = run_cli(args)
    assert (code, err) == (0, "")
    assert out.startswith("usage: policylint")


def test_check_help_documents_the_exit_codes() -> None:
    _, out, _ = run_cli(["check", "--help"])
    assert "0 clean, 1 findings" in " ".join(out.split())


def test_examples_folders_exist() -> None:
    assert (EXAMPLES / "good").is_dir() and (EXAMPLES / "bad").is_dir()


def test_a_single_file_is_judged_with_the_whole_repository_as_context() -> None:
    """A proposal alone names clusters and workloads it cannot resolve by itself."""
    bad = EXAMPLES / "bad"
    proposal = bad / "proposals" / "2027-q1-everything.yaml"
    code, out, err = run_cli(["check", str(proposal), "--format", "json"])
    assert (code, err) == (1, "")
    alone = json.loads(out)
    code, out, _ = run_cli(["check", str(bad), "--format", "json"])
    whole = json.loads(out)
    expected = [f for f in whole["findings"] if f["file"].endswith("2027-q1-everything.yaml")]
    # The fix differs on purpose: the whole run fixes the proposal together with its pool's
    # reservation; the proposal alone, with the reservation as written, has nothing to fix.
    assert [{**f, "fix": None} for f in alone["findings"]] == [{**f, "fix": None} for f in expected]
    assert {f["code"] for f in expected} == {"PL801", "PL802"}
    assert alone["summary"]["files"] == 1


def test_an_unrelated_file_named_inside_a_repository_is_a_usage_error(tmp_path: Path) -> None:
    from conftest import copy_minirepo

    repo = copy_minirepo(tmp_path / "repo")
    (repo / "deploy.yaml").write_text(DEPLOYMENT)
    code, out, err = run_cli(["check", "deploy.yaml"], cwd=repo)
    assert (code, out) == (2, "")
    assert err.startswith("policylint: error: no policylint documents found in deploy.yaml")


# --- plurals in messages -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1, "1 GPU"), (1.0, "1 GPU"), (1.001, "1 GPU"), (0, "0 GPUs"), (2, "2 GPUs"), (1.5, "1.5 GPUs"), (None, "unknown GPUs")],
)
def test_plural_spec_in_messages(value: object, expected: str) -> None:
    from policylint.engine.messages import render

    assert render("{n:plural:GPU}", {"n": value}) == expected
    assert render("{n:plural:entry:entries}", {"n": 2}) == "2 entries"


@pytest.mark.parametrize(
    ("value", "expected"), [(None, "in no pool"), ("east/serving", "in east/serving"), (3.0, "in 3")]
)
def test_or_spec_names_what_an_absent_value_means(value: object, expected: str) -> None:
    """``{x:or:WORDS}``: the words where the value is absent, the value as any other where it is not."""
    from policylint.engine.messages import render

    assert render("in {pool:or:no pool}", {"pool": value}) == expected
    assert render("in {pool}", {"pool": None}) == "in unknown"  # without it, absent reads "unknown"


def test_one_gpu_is_singular_in_a_real_finding(tmp_path: Path) -> None:
    """A proposal for one GPU where no shortfall is left: "asks 1 GPU", not "1 GPUs"."""
    from conftest import copy_minirepo, replace_once
    from fixture_helpers import mini_bands

    repo = copy_minirepo(tmp_path / "repo")
    (repo / ".policylint.yaml").write_text('now: "2026-12-01"\nselect: [PL801]\nrules: {PL977: {accept: "select=PL801"}}\n', encoding="utf-8")
    # reserve exactly the serving pool's baseline band: no shortfall left for the proposal
    replace_once(repo / "clusters" / "prod-east.yaml", "reservedGpus: 48", f"reservedGpus: {mini_bands('serving')[0]}")
    replace_once(repo / "proposals" / "2027-q1-serving.yaml", "gpus: 5", "gpus: 1")
    code, out, _ = run_cli(["check", "--format", "concise"], cwd=repo)
    assert code == 1
    assert "proposal 2027-q1-serving asks 1 GPU for prod-east/serving;" in out


def test_a_stray_scalar_among_policylint_documents_is_reported(tmp_path: Path) -> None:
    stray = CLUSTER + "---\nreservedGpus 16\n"
    code, out, _ = check(tmp_path, {"prod.yaml": stray}, ".")
    line = stray.count("\n")
    assert code == 1
    assert f"prod.yaml:{line}:1: error PL006" in out and "got str" in out


def test_scalars_and_lists_of_unrelated_yaml_stay_silent(tmp_path: Path) -> None:
    files = {"prod.yaml": CLUSTER, "values.yaml": "---\nplain text\n---\n- a\n- b\n"}
    assert check(tmp_path, files, ".") == (0, "All checks passed: 1 document in 1 file.\n", "")
