"""ruff's habits through the command line: fix markers and counts, fix applicability declared in
the rule files, ``check --add-noqa``, FORCE_COLOR / NO_COLOR, rule completion in three shells,
the progress bar of ``check`` on a terminal only, and the modes and links of the files it writes.

The fixable findings are those of ``examples/bad`` (``now`` pinned): PL101 and PL102 of the
``prod-east/shared`` pool and PL603 of ``prod-east/serving`` (its buffer) are fixed by ``--fix``; PL104 of ``prod-east/rerank`` raises the
reservation, so only ``--fix --unsafe-fixes`` fixes it. PL801 on the pool's proposal has no fix
there: the pool needs no GPUs bought, and a request cannot ask for 0 (the user withdraws it).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, copy_minirepo, run_cli
from realtools import require

EXAMPLES = REPO / "examples"
NOW = ["--now", "2026-12-01"]
PROGRAM = Path(sys.executable).with_name("policylint")

PL101 = (
    "clusters/prod-east.yaml:15:7: error PL101 [*] [reserved-above-baseline] pool prod-east/shared reserves 123 GPUs,"
    " but its pooled baseline is 57 GPUs (sum of workload baselines 62: pooling saves 5; allowed headroom 15%):"
    " sized by peak, not baseline"
)
PL104_START = "clusters/prod-east.yaml:38:7: error PL104 [~] [reserved-below-baseline] "
PL801_START = "proposals/2027-q1-everything.yaml:15:7: error PL801 [*] [proposal-exceeds-shortfall] "
FIXABLE = "[*] 3 fixable with --fix (1 more with --unsafe-fixes)."


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLES / "bad", tmp_path / "bad"))


def _marked(out: str) -> list[str]:
    return [line for line in out.splitlines() if " [*] " in line or " [~] " in line]


# --- markers, counts, statistics ---------------------------------------------------------------


def test_concise_marks_fixable_findings_and_counts_them(bad: Path) -> None:
    code, out, err = run_cli(["check", "--format", "concise", *NOW], cwd=bad)
    assert (code, err) == (1, "")
    marked = _marked(out)
    assert marked[0] == PL101
    assert [line.split(" [", 1)[0].rsplit(" ", 1)[1] for line in marked] == ["PL101", "PL102", "PL603", "PL104"]
    assert marked[3].startswith(PL104_START)
    # a rule with a fix, on a finding it cannot fix: no marker
    assert [line for line in out.splitlines() if line.startswith(PL801_START.replace(" [*]", ""))]
    assert out.splitlines()[-2].startswith("Found 70 findings ")
    assert out.splitlines()[-1] == FIXABLE


def test_text_marks_the_headline_and_quiet_keeps_the_count(bad: Path) -> None:
    code, out, _ = run_cli(["check", "--no-show-source", *NOW], cwd=bad)
    assert code == 1
    assert f"  {PL101}" in out.splitlines()
    assert out.splitlines()[-1] == FIXABLE
    code, out, _ = run_cli(["check", "-q", *NOW], cwd=bad)
    assert out.splitlines()[1:] == [FIXABLE]


def test_unsafe_fixes_count_as_fixable_when_given(bad: Path) -> None:
    code, out, _ = run_cli(["check", "--format", "concise", "--unsafe-fixes", *NOW], cwd=bad)
    assert code == 1
    assert len([line for line in out.splitlines() if " [*] " in line]) == 4 and " [~] " not in out
    assert out.splitlines()[-1] == "[*] 4 fixable with --fix."


def test_only_unsafe_fixes_left(bad: Path) -> None:
    code, out, _ = run_cli(["check", "--format", "concise", "--select", "PL104", *NOW], cwd=bad)
    assert code == 1
    assert out.splitlines()[-1] == "[~] 1 fixable with --fix --unsafe-fixes (none with --fix alone)."


def test_nothing_fixable_prints_no_count(bad: Path) -> None:
    code, out, _ = run_cli(["check", "--format", "concise", "--select", "PL3", *NOW], cwd=bad)
    assert code == 1
    assert "fixable" not in out and not _marked(out)


def test_after_fix_the_markers_left_are_the_unsafe_ones(bad: Path) -> None:
    code, out, err = run_cli(["check", "--fix", "--format", "concise", *NOW], cwd=bad)
    assert code == 1
    assert err.startswith("fixed 3 numbers in 1 file; 1 unsafe fix withheld")
    assert [line.split(" [~] ")[0].rsplit(" ", 1)[1] for line in _marked(out)] == ["PL104"]


def test_statistics_has_a_fix_column(bad: Path) -> None:
    for fmt in ("text", "concise"):
        code, out, _ = run_cli(["check", "--statistics", "--format", fmt, *NOW], cwd=bad)
        assert code == 1
        rows = out.splitlines()
        assert "    7  PL304   [ ] tolerance-evidence-uncheckable" in rows
        assert [row for row in rows if "[ ]" not in row] == [
            "    1  PL101   [*] reserved-above-baseline",
            "    1  PL102   [*] peak-capacity-dedicated",
            "    1  PL104   [~] reserved-below-baseline",
            "    1  PL603   [*] buffer-oversized",
        ]
        assert "    1  PL801   [ ] proposal-exceeds-shortfall" in rows


def test_json_and_sarif_say_how_each_finding_is_fixed(bad: Path) -> None:
    code, out, _ = run_cli(["check", "--format", "json", *NOW], cwd=bad)
    report = json.loads(out)
    fixes = {f["code"]: f["fix"] for f in report["findings"] if f["fix"] is not None}
    assert fixes == {"PL101": "safe", "PL102": "safe", "PL104": "unsafe", "PL603": "safe"}
    assert (report["summary"]["fixable"], report["summary"]["unsafe_fixable"]) == (3, 1)
    code, out, _ = run_cli(["check", "--format", "sarif", *NOW], cwd=bad)
    run = json.loads(out)["runs"][0]
    marked = {r["ruleId"]: r["properties"]["fix"] for r in run["results"] if "fix" in r["properties"]}
    assert marked == fixes
    declared = {r["id"]: r["properties"]["fix"] for r in run["tool"]["driver"]["rules"] if "fix" in r["properties"]}
    assert declared == {"PL101": "safe", "PL102": "safe", "PL104": "unsafe", "PL603": "safe", "PL801": "safe"}


# --- applicability lives in the rule files -----------------------------------------------------


def test_fixable_rules_are_the_rules_that_declare_a_fix() -> None:
    # Every fix policylint implements (edit/rewrites.py) is named by a rule file, and
    # every rule file's fix names one of them: neither exists without the other.
    from policylint.catalogue import fix_applicability, fixes
    from policylint.edit.rewrites import REWRITES
    from policylint.resources import load_schema

    declared = {d.rewrites for d in fixes().values()}
    assert declared == set(REWRITES)
    assert set(load_schema("Rule")["$defs"]["rule"]["properties"]["fix"]["properties"]["rewrites"]["enum"]) == set(REWRITES)
    assert set(fix_applicability().values()) <= {"safe", "unsafe", "display-only"}
    assert fix_applicability() == {"PL101": "safe", "PL102": "safe", "PL104": "unsafe", "PL603": "safe", "PL801": "safe"}
    # of the two rules that rewrite a pool's reservation, PL101 (lowering it) goes first
    assert [c for c, d in fixes().items() if d.rewrites == "reserved"] == ["PL101", "PL104"]


def test_every_fix_function_is_registered() -> None:
    """A public function of edit/rewrites.py is a fix a rule file can name, or it is not there."""
    import inspect

    import policylint.edit.rewrites as rewrites

    public = {
        name for name, f in inspect.getmembers(rewrites, inspect.isfunction)
        if f.__module__ == rewrites.__name__ and not name.startswith("_")
    }
    assert public == {f.__name__ for f in rewrites.REWRITES.values()}


def test_rules_and_rule_show_the_fix() -> None:
    code, out, _ = run_cli(["rules"])
    rows = {line.split()[0]: line.split() for line in out.splitlines()}
    assert rows["PL101"][4] == "safe" and rows["PL104"][4] == "unsafe" and rows["PL103"][4] == "-"
    code, out, _ = run_cli(["rules", "--format", "json"])
    assert {r["code"]: r["fix"] for r in json.loads(out) if r["fix"]} == {
        "PL101": "safe", "PL102": "safe", "PL104": "unsafe", "PL603": "safe", "PL801": "safe",
    }
    code, out, _ = run_cli(["rule", "PL104", "--format", "markdown"])
    assert "Fix: unsafe (it raises capacity; applied only with `check --fix --unsafe-fixes`)." in out.splitlines()
    assert "Fix:" not in run_cli(["rule", "PL103", "--format", "markdown"])[1]


def test_a_rule_file_may_not_declare_a_fix_policylint_does_not_have(tmp_path: Path) -> None:
    raw = (REPO / "rules" / "bands.yaml").read_text(encoding="utf-8").split("\n  - code: PL102")[0]
    text = raw.replace("code: PL101", "code: PL901").replace("name: reserved-above-baseline", "name: my-own-rule")
    (tmp_path / "mine.yaml").write_text(text, encoding="utf-8")
    code, _, err = run_cli(["rules", "--rule-dir", str(tmp_path)])
    assert code == 2
    assert "rules[PL901].fix" in err and "policylint has no fix for PL901" in err


def test_the_schema_knows_the_applicabilities(tmp_path: Path) -> None:
    raw = (REPO / "rules" / "bands.yaml").read_text(encoding="utf-8").split("\n  - code: PL102")[0]
    text = raw.replace("code: PL101", "code: PL901").replace("applicability: safe", "applicability: sometimes")
    (tmp_path / "mine.yaml").write_text(text.replace("name: reserved-above-baseline", "name: my-own-rule"), "utf-8")
    code, _, err = run_cli(["rules", "--rule-dir", str(tmp_path)])
    assert code == 2 and "rules[PL901].fix" in err


def test_a_display_only_fix_is_shown_never_written(bad: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import policylint.edit.fix

    declared = {**policylint.edit.fix.fix_applicability(), "PL104": "display-only"}
    monkeypatch.setattr(policylint.edit.fix, "fix_applicability", lambda: declared)
    cluster = bad / "clusters" / "prod-east.yaml"
    code, diff, err = run_cli(["check", "--fix-dry-run", "--unsafe-fixes", *NOW], cwd=bad)
    assert code == 1 and any(line.startswith("+      reservedGpus: 17  # expect: PL104") for line in diff.splitlines())
    code, out, err = run_cli(["check", "--fix", "--unsafe-fixes", "--format", "concise", *NOW], cwd=bad)
    assert "1 display-only fix not written (see --fix-dry-run)" in err.splitlines()[0]
    assert "      reservedGpus: 8  # expect: PL104, PL205" in cluster.read_text()
    assert not _marked(out)  # display-only is not fixable: no marker, no count


# --- --add-noqa --------------------------------------------------------------------------------


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    repo = copy_minirepo(tmp_path / "repo")
    (repo / ".policylint.yaml").write_text('now: "2026-12-01"\nselect: [PL0, PL101]\nrules: {PL977: {accept: "select=PL0,PL101"}}\n', encoding="utf-8")
    path = repo / "clusters" / "prod-east.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("reservedGpus: 48", "reservedGpus: 80"), encoding="utf-8")
    return repo


def test_add_noqa_round_trip(mini: Path) -> None:
    cluster = mini / "clusters" / "prod-east.yaml"
    code, out, err = run_cli(["check", "--add-noqa", "--format", "concise"], cwd=mini)
    assert err == (
        "added 1 suppression in 1 file; each gives the reason 'TODO: reason', reported as PL030 until you write why"
        " the finding is acceptable\n"
    )
    assert "      reservedGpus: 80  # policylint: disable=PL101 -- TODO: reason" in cluster.read_text().splitlines()
    # the placeholder is no reason: PL030 says so, and the finding is still reported
    assert code == 1
    codes = [line.split(": ", 1)[1].split()[1] for line in out.splitlines() if line.startswith("clusters/")]
    assert codes == ["PL101", "PL030"]
    assert "suppression of PL101 gives the placeholder reason 'TODO: reason', so it is not applied" in out
    cluster.write_text(cluster.read_text().replace("TODO: reason", "launch buffer agreed in CAP-123"))
    code, out, err = run_cli(["check", "-q"], cwd=mini)
    assert (code, err) == (0, "")
    assert out.startswith("All checks passed: ") and ", 1 suppressed." in out


def test_add_noqa_leaves_a_line_that_has_a_suppression(mini: Path) -> None:
    cluster = mini / "clusters" / "prod-east.yaml"
    cluster.write_text(cluster.read_text().replace("reservedGpus: 80", "reservedGpus: 80  # policylint: disable=PL102 -- x"))
    before = cluster.read_text()
    code, _, err = run_cli(["check", "--add-noqa", "-q"], cwd=mini)
    assert code == 1 and cluster.read_text() == before
    assert err.splitlines()[0] == "added 0 suppressions in 0 files"
    assert "PL101 not suppressed (the line already has a suppression comment: add the code to it)" in err


def test_add_noqa_and_fix_are_one_at_a_time(mini: Path) -> None:
    code, _, err = run_cli(["check", "--add-noqa", "--fix"], cwd=mini)
    assert (code, err) == (2, "policylint: error: --add-noqa and --fix both edit the files; run one, then the other\n")


def test_add_noqa_refuses_a_comment_that_would_change_a_value(tmp_path: Path) -> None:
    from policylint.edit.noqa import _covers, _documents, _edit

    text = "a: |\n  one\n  two\nb: 1\n"
    edited = _edit(text, 2, ["PL101"])
    assert _documents(edited) != _documents(text)  # inside a block scalar the comment is text
    alone = "# a comment\nb: 1\n"
    assert not _covers(_edit(alone, 1, ["PL101"]), 1, tmp_path / "x.yaml")  # it would cover line 2
    assert _covers(_edit(text, 4, ["PL101"]), 4, tmp_path / "x.yaml")


def test_add_noqa_on_examples_bad_then_filled_is_clean(bad: Path) -> None:
    code, _, err = run_cli(["check", "--add-noqa", "-q", *NOW], cwd=bad)
    assert code == 1 and err.startswith("added 59 suppressions in 11 files;")
    for path in bad.rglob("*.yaml"):
        path.write_text(path.read_text(encoding="utf-8").replace("TODO: reason", "accepted in CAP-1"), encoding="utf-8")
    code, out, _ = run_cli(["check", "-q", *NOW], cwd=bad)
    assert (code, out) == (0, "All checks passed: 24 documents in 11 files, 70 suppressed.\n")


# --- colour --------------------------------------------------------------------------------------

ANSI = "\x1b["


@pytest.mark.parametrize(
    ("env", "args", "coloured"),
    [
        pytest.param({"FORCE_COLOR": "1"}, [], True, id="force"),
        pytest.param({"FORCE_COLOR": "0"}, [], True, id="force-any-value"),
        pytest.param({"FORCE_COLOR": ""}, [], False, id="force-empty"),
        pytest.param({"NO_COLOR": "1", "FORCE_COLOR": "1"}, [], False, id="no-color-wins"),
        pytest.param({"NO_COLOR": "", "FORCE_COLOR": "1"}, [], True, id="no-color-empty"),
        pytest.param({"FORCE_COLOR": "1"}, ["--color", "never"], False, id="flag-never"),
        pytest.param({"NO_COLOR": "1"}, ["--color", "always"], True, id="flag-always"),
        pytest.param({}, [], False, id="not-a-terminal"),
    ],
)
def test_force_color_and_no_color(
    mini: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], args: list[str], coloured: bool
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code, out, _ = run_cli(["check", *args], cwd=mini)
    assert code == 1
    assert (ANSI in out) is coloured


def test_force_color_never_colours_machine_formats(mini: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    for fmt in ("concise", "json", "sarif", "github", "markdown"):
        assert ANSI not in run_cli(["check", "--format", fmt], cwd=mini)[1]


# --- completion of rule codes ------------------------------------------------------------------


def test_bash_completes_rule_codes_and_names() -> None:
    from test_cli_startup import bash_complete

    script = run_cli(["completion", "bash"])[1]
    assert bash_complete(script, "policylint", "check", "--select", "PL10") == [f"PL10{i}" for i in range(1, 10)]
    assert bash_complete(script, "policylint", "check", "--ignore", "PL101,PL80") == ["PL101,PL801", "PL101,PL802", "PL101,PL803", "PL101,PL804"]
    assert bash_complete(script, "policylint", "baseline", "--extend-select", "reserved-") == [
        "reserved-above-baseline", "reserved-below-baseline",
    ]
    assert bash_complete(script, "policylint", "report", "--select", "PL96")[:2] == ["PL960", "PL961"]
    assert bash_complete(script, "policylint", "rule", "PL10")[0] == "PL101"
    assert bash_complete(script, "policylint", "rules", "--format", "") == ["text", "json", "markdown"]


@pytest.mark.realtool
def test_zsh_completes_rule_codes(tmp_path: Path) -> None:
    zsh = require("zsh")
    (tmp_path / "_policylint").write_text(run_cli(["completion", "zsh"])[1], encoding="utf-8")
    # the completion system's builtins are stand-ins that print what they are given
    program = (
        "compdef() { }\n"
        "_describe() { local arr=${@[-1]}; print -l -- ${(P)arr} }\n"
        "compset() { }\n"
        "compadd() { [[ $1 == -- ]] && shift; print -l -- \"$@\" }\n"
        "_files() { }\n"
        f"source {tmp_path / '_policylint'}\n"
        "words=(policylint check --select PL10); CURRENT=4; _policylint\n"
        "print -r -- ---\n"
        "words=(policylint rule PL); CURRENT=3; _policylint\n"
    )
    subprocess.run([zsh, "-n"], input=run_cli(["completion", "zsh"])[1], check=True, text=True)
    done = subprocess.run([zsh, "-f", "-c", program], check=True, capture_output=True, text=True)
    select, _, rule = done.stdout.partition("---\n")
    assert "PL101:reserved-above-baseline" in select.split() and "reserved-above-baseline:PL101" in select.split()
    assert "PL104:reserved-below-baseline" in rule.split()


@pytest.mark.realtool
def test_fish_completes_rule_codes(tmp_path: Path) -> None:
    fish = require("fish")
    script = tmp_path / "policylint.fish"
    script.write_text(run_cli(["completion", "fish"])[1], encoding="utf-8")
    subprocess.run([fish, "--no-execute", str(script)], check=True)

    def complete(line: str) -> list[str]:
        done = subprocess.run(
            [fish, "--no-config", "-c", f"source {script}; complete -C '{line}'"], check=True, capture_output=True, text=True
        )
        return done.stdout.splitlines()

    assert complete("policylint check --select PL10")[:2] == ["PL101\treserved-above-baseline", "PL102\tpeak-capacity-dedicated"]
    assert complete("policylint check --ignore PL101,reserved-") == [
        "PL101,reserved-above-baseline\tPL101", "PL101,reserved-below-baseline\tPL104",
    ]
    assert complete("policylint rule PL80") == [
        "PL801\tproposal-exceeds-shortfall", "PL802\tproposal-without-evidence", "PL803\tproposal-for-unmeasured-pool",
        "PL804\tproposal-gpu-model-differs",
    ]


# --- progress on a terminal only ---------------------------------------------------------------


def _on_a_pty(args: list[str], cwd: Path, env: dict[str, str], *, stderr_tty: bool = True) -> tuple[int, bytes, bytes]:
    """Run the installed program with standard error on a pseudo-terminal: (exit code, stdout, stderr)."""
    import tempfile

    master, slave = os.openpty()
    full = {k: v for k, v in os.environ.items() if k not in ("CI", "FORCE_COLOR", "TTY_COMPATIBLE")}
    full.update({"POLICYLINT_PROGRESS_DELAY": "0", **env})
    # standard output and a piped standard error go to files: a pipe nobody reads while the
    # terminal is drained would fill up and stop the program
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as piped:
        proc = subprocess.Popen(
            [str(PROGRAM), *args], cwd=cwd, env=full, stdin=subprocess.DEVNULL, stdout=out,
            stderr=slave if stderr_tty else piped,
        )
        os.close(slave)
        chunks: list[bytes] = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the other side closed (Linux reports EIO)
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=300)
        os.close(master)
        out.seek(0)
        piped.seek(0)
        return proc.returncode, out.read(), b"".join(chunks) if stderr_tty else piped.read()


def test_progress_shown_on_a_terminal(mini: Path) -> None:
    code, out, err = _on_a_pty(["check", "-q"], mini, {})
    assert code == 1
    assert b"checking" in err  # the bar, drawn on standard error
    assert out.decode().startswith("Found 1 finding")  # the report is untouched


@pytest.mark.parametrize(
    ("args", "env", "tty"),
    [
        pytest.param(["-q"], {"CI": "true"}, True, id="ci"),
        pytest.param(["--format", "json"], {}, True, id="json"),
        pytest.param(["--format", "sarif"], {}, True, id="sarif"),
        pytest.param(["-q"], {}, False, id="not-a-terminal"),
    ],
)
def test_no_progress_in_ci_machine_formats_or_pipes(mini: Path, args: list[str], env: dict[str, str], tty: bool) -> None:
    code, _, err = _on_a_pty(["check", *args], mini, env, stderr_tty=tty)
    assert code == 1
    assert err == b""


def test_progress_waits_for_its_delay(mini: Path) -> None:
    code, _, err = _on_a_pty(["check", "-q"], mini, {"POLICYLINT_PROGRESS_DELAY": "60"})
    assert (code, err) == (1, b"")


# --- files written: modes kept, links written through --------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_fix_keeps_the_mode_of_the_file(bad: Path) -> None:
    cluster = bad / "clusters" / "prod-east.yaml"
    cluster.chmod(0o640)
    code, _, err = run_cli(["check", "--fix", "-q", *NOW], cwd=bad)
    assert err.startswith("fixed 3 numbers")
    assert "reservedGpus: 123" not in cluster.read_text()
    assert _mode(cluster) == 0o640


def test_fix_writes_through_a_link_inside_the_repository(bad: Path) -> None:
    real = bad / "shared" / "prod-east.yaml"
    real.parent.mkdir()
    cluster = bad / "clusters" / "prod-east.yaml"
    cluster.replace(real)
    real.chmod(0o600)
    cluster.symlink_to(Path("..") / "shared" / "prod-east.yaml")
    code, _, err = run_cli(["check", "--fix", "-q", *NOW], cwd=bad)
    assert err.startswith("fixed 3 numbers"), err
    assert cluster.is_symlink() and os.readlink(cluster) == str(Path("..") / "shared" / "prod-east.yaml")
    assert "reservedGpus: 123" not in real.read_text()
    assert _mode(real) == 0o600


def test_add_noqa_keeps_the_mode_and_the_link(mini: Path) -> None:
    cluster = mini / "clusters" / "prod-east.yaml"
    real = mini / "prod-east.real.yaml"
    cluster.replace(real)
    real.chmod(0o664)
    cluster.symlink_to(real)
    code, _, err = run_cli(["check", "--add-noqa", "-q"], cwd=mini)
    assert err.startswith("added 1 suppression in 1 file"), err
    assert cluster.is_symlink() and "disable=PL101 -- TODO: reason" in real.read_text()
    assert _mode(real) == 0o664


def test_fix_refuses_a_link_that_leaves_the_repository(bad: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    cluster = bad / "clusters" / "prod-east.yaml"
    cluster.replace(outside)
    cluster.symlink_to(outside)
    before = outside.read_text()
    code, _, err = run_cli(["check", "--fix", "-q", *NOW], cwd=bad)
    assert outside.read_text() == before and cluster.is_symlink()
    assert "clusters/prod-east.yaml: not fixed (" in err


def test_pull_writes_new_files_with_the_umask_and_keeps_modes(tmp_path: Path, flaky: str) -> None:
    from test_pull import _repo

    repo = _repo(tmp_path, flaky)
    trace = repo / "measurements" / "chat.json"
    old = os.umask(0o027)
    try:
        code, _, err = run_cli(["pull", str(repo), "--end", "2026-09-22", "-q"])
        assert code == 0, err
        assert _mode(trace) == 0o640  # 0666 less the umask, as any new file
        assert _mode(trace.with_name("chat.json.provenance.json")) == 0o640
        trace.chmod(0o644)
        code, _, err = run_cli(["pull", str(repo), "--end", "2026-09-22", "-q"])
        assert code == 0, err
        assert _mode(trace) == 0o644  # a file replaced keeps its mode
    finally:
        os.umask(old)


from test_pull import flaky  # noqa: E402,F401 - the small local Prometheus stand-in, as a fixture
