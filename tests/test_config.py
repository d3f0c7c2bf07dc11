"""Configuration through the real CLI: discovery, precedence, selection, rule
settings and the one-line errors a bad configuration stops the run with.

Every test works on a copy of the small shared repository (tests/data/minirepo)
in ``tmp_path``. Its
configuration pins ``now`` and selects only the document rules (PL0) and
PL101, so a rule added later cannot change these exit codes. A finding is made
by raising the reserved GPUs of the ``serving`` pool above its baseline band.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import copy_minirepo, run_cli
from fixture_helpers import mini_bands

BASE_CONFIG = 'now: "2026-12-01"\nselect: [PL0, PL101]\n'
CLUSTER = Path("clusters/prod-east.yaml")


def make_repo(tmp_path: Path, config: str | None = BASE_CONFIG) -> Path:
    """A clean copy of the small repository with ``config`` as its .policylint.yaml (None: no file)."""
    repo = copy_minirepo(tmp_path / "repo")
    target = repo / ".policylint.yaml"
    if config is None:
        target.unlink(missing_ok=True)
    else:
        target.write_text(config, encoding="utf-8")
    return repo


def over_reserve(repo: Path, *, serving: int = 80) -> None:
    """Reserve more GPUs in prod-east/serving than its baseline band allows."""
    # 80 against the baseline: over its 15 % headroom, under 200 %
    assert mini_bands("serving")[0] * 1.15 < serving < mini_bands("serving")[0] * 3
    path = repo / CLUSTER
    text = path.read_text(encoding="utf-8")
    assert "      reservedGpus: 48\n" in text
    path.write_text(text.replace("      reservedGpus: 48\n", f"      reservedGpus: {serving}\n"), encoding="utf-8")


def set_config(repo: Path, extra: str, base: str = BASE_CONFIG) -> Path:
    path = repo / ".policylint.yaml"
    path.write_text(base + extra, encoding="utf-8")
    return path


def check_json(repo: Path, *args: str, cwd: Path | None = None, gate: bool = False) -> tuple[int, dict, str]:
    """``check --format json``; unless ``gate``, PL977 is ignored on the command line (as a CI job may):
    these tests' configurations select a few rules, which PL977 would report in every run."""
    code, out, err = run_cli(["check", *args, *([] if gate else ["--ignore", "PL977"]), "--format", "json"], cwd=cwd or repo)
    return code, (json.loads(out) if out else {}), err


def codes(report: dict) -> list[str]:
    return [f["code"] for f in report["findings"]]


def effective(args: list[str], cwd: Path) -> dict:
    code, out, err = run_cli(["config", *args], cwd=cwd)
    assert (code, err) == (0, "")
    data: dict = json.loads(out)
    return data


# --- discovery -------------------------------------------------------------------------


def test_config_is_found_by_walking_up_from_the_checked_path(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    data = effective([str(repo / "clusters")], cwd=tmp_path)
    assert data["config-file"] == str((repo / ".policylint.yaml").resolve())
    assert data["root"] == str(repo.resolve())
    assert data["now"] == "2026-12-01T00:00:00+00:00"


def test_check_applies_the_config_above_the_checked_path(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    over_reserve(repo)
    set_config(repo, "ignore: [PL101]\n")
    code, out, err = run_cli(["check", "-q", "repo", "--ignore", "PL977"], cwd=tmp_path)
    assert (code, err) == (0, "")
    assert out.startswith("All checks passed")
    # the configuration's ignore is its own loosening: PL977 says so unless the command line ignores it
    code, out, err = run_cli(["check", "--format", "concise", "repo"], cwd=tmp_path)
    assert code == 1 and "PL977" in out and "PL101 (reserved-above-baseline) is ignored" in out, out


def test_config_is_found_from_the_working_directory_when_the_path_has_none(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    data = effective([str(elsewhere)], cwd=repo / "workloads")
    assert data["config-file"] == str((repo / ".policylint.yaml").resolve())


def test_pyproject_tool_policylint_table(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, config=None)
    # An unquoted TOML date arrives as a date object; it must be accepted like the text form.
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "capacity"\n\n[tool.policylint]\nnow = 2026-12-01\nselect = ["PL0", "PL101"]\n'
        'ignore = ["reserved-above-baseline"]\n',
        encoding="utf-8",
    )
    over_reserve(repo)
    data = effective([], cwd=repo)
    assert data["config-file"] == str((repo / "pyproject.toml").resolve())
    assert data["now"] == "2026-12-01T00:00:00+00:00"
    code, report, err = check_json(repo)
    assert (code, err, codes(report)) == (0, "", [])


def test_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "clusters" / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n", encoding="utf-8")
    data = effective([str(repo / "clusters")], cwd=tmp_path)
    assert data["config-file"] == str((repo / ".policylint.yaml").resolve())


def test_isolated_ignores_every_config_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    data = effective(["--isolated"], cwd=repo)
    assert data["config-file"] is None
    assert (data["now"], data["select"], data["fail-on"]) == (None, [], "warning")


# --- precedence: flags > --config > discovered > defaults ---------------------------------


def test_explicit_config_file_replaces_the_discovered_one(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    over_reserve(repo)
    set_config(repo, "ignore: [PL101]\n")  # proven to hide the finding in the discovery tests
    strict = tmp_path / "strict.yaml"
    strict.write_text(BASE_CONFIG, encoding="utf-8")
    code, report, _ = check_json(repo, "--config", str(strict))
    assert (code, codes(report)) == (1, ["PL101"])


def test_missing_explicit_config_file_is_a_usage_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    code, out, err = run_cli(["check", "--config", "nope.yaml"], cwd=repo)
    assert (code, out, err) == (2, "", "policylint: error: config file not found: nope.yaml\n")


def test_explicit_pyproject_without_the_table_is_a_usage_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "pyproject.toml").write_text("[tool.black]\n", encoding="utf-8")
    code, _, err = run_cli(["check", "--config", "pyproject.toml"], cwd=repo)
    assert (code, err) == (2, "policylint: error: pyproject.toml: no [tool.policylint] table\n")


def test_select_flag_overrides_config_select(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    over_reserve(repo)
    code, report, _ = check_json(repo, "--select", "PL0")
    assert (code, codes(report)) == (0, [])


def test_flags_extend_the_config_ignore_list(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    over_reserve(repo)
    code, report, _ = check_json(repo, "--ignore", "reserved-above-baseline")
    assert (code, codes(report)) == (0, [])


@pytest.mark.parametrize(("flags", "expected"), [([], 0), (["--fail-on", "warning"], 1)])
def test_fail_on_flag_overrides_config(tmp_path: Path, flags: list[str], expected: int) -> None:
    repo = make_repo(tmp_path)
    set_config(repo, "fail-on: error\n")
    # An unused suppression is a warning (PL032): below the configured fail level.
    path = repo / CLUSTER
    path.write_text(path.read_text().replace("reservedGpus: 48", "reservedGpus: 48  # policylint: disable=PL101 -- x"))
    code, report, _ = check_json(repo, *flags)
    assert (code, codes(report)) == (expected, ["PL032"])


def test_defaults_apply_without_any_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, config=None)
    data = effective([], cwd=repo)
    assert data["config-file"] is None
    assert data["fail-on"] == "warning"
    assert data["select"] == data["ignore"] == data["extend-select"] == []
    assert "PL101" in data["selected-rules"]


# --- selection ---------------------------------------------------------------------------


@pytest.mark.parametrize("selector", ["PL101", "pl101", "PL1", "reserved-above-baseline"])
def test_select_by_code_prefix_and_name(tmp_path: Path, selector: str) -> None:
    repo = make_repo(tmp_path)
    set_config(repo, f"select: [{selector}]\n", base='now: "2026-12-01"\n')
    data = effective([], cwd=repo)
    assert "PL101" in data["selected-rules"]
    # PL981 joins any selection of plan rules: it names the pools they could not judge
    assert all(code.startswith("PL1") or code == "PL981" for code in data["selected-rules"])
    if selector != "PL1":
        assert data["selected-rules"] == ["PL101", "PL981"]


@pytest.mark.parametrize("selector", ["PL101", "PL1", "reserved-above-baseline"])
def test_ignore_by_code_prefix_and_name(tmp_path: Path, selector: str) -> None:
    repo = make_repo(tmp_path)
    over_reserve(repo)
    set_config(repo, f"ignore: [{selector}]\n")
    code, report, _ = check_json(repo)
    assert (code, codes(report)) == (0, [])


@pytest.mark.parametrize("selector", ["PL101", "reserved-above-baseline"])
def test_extend_select_adds_to_the_selection(tmp_path: Path, selector: str) -> None:
    repo = make_repo(tmp_path)
    over_reserve(repo)
    set_config(repo, f"select: [PL0]\nextend-select: [{selector}]\n", base='now: "2026-12-01"\n')
    code, report, _ = check_json(repo)
    assert (code, codes(report)) == (1, ["PL101"])


def test_extend_select_flag_adds_to_config_select(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    over_reserve(repo)
    code, report, _ = check_json(repo, "--select", "PL0", "--extend-select", "PL101")
    assert (code, codes(report)) == (1, ["PL101"])


# --- rule settings -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("severity", "flags", "expected"),
    [("warning", ["--fail-on", "error"], 0), ("error", ["--fail-on", "error"], 1), ("warning", [], 1)],
)
def test_severity_override_changes_the_exit_code(tmp_path: Path, severity: str, flags: list[str], expected: int) -> None:
    repo = make_repo(tmp_path)
    over_reserve(repo)
    set_config(repo, f"rules: {{PL101: {{severity: {severity}}}}}\n")
    code, report, _ = check_json(repo, *flags)
    assert code == expected
    assert [(f["code"], f["severity"]) for f in report["findings"]] == [("PL101", severity)]


def test_rule_option_flips_the_verdict(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    over_reserve(repo)  # 80 reserved against the baseline: over 15 %, under 200 %
    set_config(repo, "rules: {reserved-above-baseline: {headroom: 2.0}}\n")
    code, report, _ = check_json(repo)
    assert (code, codes(report)) == (0, [])
    data = effective([], cwd=repo)
    assert data["rule-options"]["PL101"] == {"headroom": 2.0}


@pytest.mark.parametrize(
    ("glob", "selector", "reported"),
    [("clusters/*.yaml", "PL1", []), ("clusters/prod-*", "PL101", []), ("workloads/*.yaml", "PL101", ["PL101"])],
)
def test_per_file_ignores_by_glob(tmp_path: Path, glob: str, selector: str, reported: list[str]) -> None:
    repo = make_repo(tmp_path)
    over_reserve(repo)
    set_config(repo, f'per-file-ignores: {{"{glob}": [{selector}]}}\n')
    code, report, _ = check_json(repo)
    assert (code, codes(report)) == (1 if reported else 0, reported)


@pytest.mark.parametrize(("exclude", "reported"), [("[]", ["PL001"]), ('["scratch/*"]', [])])
def test_exclude_globs_skip_files(tmp_path: Path, exclude: str, reported: list[str]) -> None:
    repo = make_repo(tmp_path)
    (repo / "scratch").mkdir()
    (repo / "scratch" / "draft.yaml").write_text(
        "apiVersion: policylint/v1\nkind: Cluster\nmetadata: {name: draft\n", encoding="utf-8"
    )
    set_config(repo, f"exclude: {exclude}\n")
    code, report, _ = check_json(repo)
    assert (code, codes(report)) == (1 if reported else 0, reported)


@pytest.mark.parametrize(("flags", "reported"), [([], []), (["--now", "2027-01-01"], ["PL101", "PL031"])])
def test_now_flag_overrides_config_now(tmp_path: Path, flags: list[str], reported: list[str]) -> None:
    repo = make_repo(tmp_path)  # config now: 2026-12-01
    over_reserve(repo)
    path = repo / CLUSTER
    path.write_text(
        path.read_text().replace("reservedGpus: 80", "reservedGpus: 80  # policylint: disable=PL101 until=2026-12-15 -- launch")
    )
    code, report, _ = check_json(repo, *flags)
    assert (code, codes(report)) == (1 if reported else 0, reported)


def test_config_command_prints_the_effective_settings_as_json(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    set_config(
        repo,
        "extend-select: [PL1]\nignore: [PL033]\nfail-on: error\nexclude: [drafts/*]\nbaseline: bl.json\n"
        "per-file-ignores: {clusters/*: [PL101]}\nrules: {PL101: {severity: warning, headroom: 0.5}}\n",
    )
    data = effective([], cwd=repo)
    assert data["select"] == ["PL0", "PL101"]
    assert data["extend-select"] == ["PL1"]
    assert data["ignore"] == ["PL033"]
    assert data["fail-on"] == "error"
    assert data["exclude"] == ["drafts/*"]
    assert data["baseline"] == str((repo / "bl.json").resolve())
    assert data["per-file-ignores"] == {"clusters/*": ["PL101"]}
    assert data["rules"] == {"PL101": {"severity": "warning", "headroom": 0.5}}
    assert data["severities"]["PL101"] == "warning"
    assert "PL033" not in data["selected-rules"]
    assert "PL032" in data["selected-rules"]


def test_config_shows_every_limit_with_its_default(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    assert effective([], repo)["limits"] == {
        "max-file-bytes": 5 * 1024 * 1024,
        "max-nodes": 100_000,
        "max-documents": 1_000,
        "max-trace-bytes": 256 * 1024 * 1024,
        "max-trace-rows": 10_000_000,
        "max-grid-samples": 10_000_000,
        "max-walked-entries": 2_000_000,
    }
    set_config(repo, "limits: {max-trace-rows: 5000, max-grid-samples: 20000000, max-documents: 7}\n")
    shown = effective([], repo)["limits"]
    assert (shown["max-trace-rows"], shown["max-grid-samples"], shown["max-trace-bytes"]) == (5000, 20_000_000, 256 * 1024 * 1024)
    assert shown["max-documents"] == 7  # every limit the configuration accepts is shown (newcomer trial)


# --- errors: exit 2 and one line naming the file and the key -------------------------------

ALLOWED = "baseline, exclude, extend-select, fail-on, gpu-resources, ignore, limits, now, per-file-ignores, prometheus, report, rule-dirs, rules, select"

CONFIG_ERRORS = [
    pytest.param("bogus: 1\n", f"at key 'bogus': unknown key (allowed: {ALLOWED})", id="unknown-key"),
    pytest.param("limits: {max-file: 3}\n", "at key 'limits.max-file': unknown key (allowed: max-documents, max-file-bytes, max-grid-samples, max-nodes, max-trace-bytes, max-trace-rows, max-walked-entries)", id="unknown-nested-key"),
    pytest.param("1: x\n", f"at key '1': unknown key (allowed: {ALLOWED})", id="numeric-key"),
    pytest.param("ignore: PL101\n", "at key 'ignore': must be a list of rule codes, prefixes or names, got 'PL101'", id="selector-not-a-list"),
    pytest.param("exclude: [1]\n", "at key 'exclude.0': must be a string, got 1", id="bad-item-type"),
    pytest.param("rules: {PL101: 3}\n", "at key 'rules.PL101': must be a mapping, got 3", id="rule-settings-not-a-mapping"),
    pytest.param("limits: {max-nodes: 0}\n", "at key 'limits.max-nodes': must be >= 1, got 0", id="below-minimum"),
    pytest.param("limits: {max-trace-rows: 0}\n", "at key 'limits.max-trace-rows': must be >= 1, got 0", id="trace-rows-below-minimum"),
    pytest.param("limits: {max-trace-bytes: 5000000000}\n", "at key 'limits.max-trace-bytes': must be <= 4294967296, got 5000000000", id="trace-bytes-above-maximum"),
    pytest.param("limits: {max-grid-samples: 1.5}\n", "at key 'limits.max-grid-samples': must be a whole number, got 1.5", id="grid-samples-not-whole"),
    pytest.param("ignore: ['']\n", "at key 'ignore.0': must not be empty", id="empty-selector"),
    pytest.param("fail-on: fatal\n", "at key 'fail-on': must be one of error, warning, info, got 'fatal'", id="bad-enum"),
    pytest.param("rules: {PL101: {severity: fatal}}\n", "at key 'rules.PL101.severity': must be one of error, warning, info, got 'fatal'", id="bad-severity"),
    pytest.param("rules: {PL000: {severity: info}}\n", "at key 'rules.PL000': unknown rule 'PL000'", id="unknown-rule"),
    pytest.param(
        "rules: {reserved-above-baseline: {head-room: 1}}\n",
        "at key 'rules.reserved-above-baseline.head-room': rule PL101 (reserved-above-baseline) has no option 'head-room' (options: headroom)",
        id="unknown-option",
    ),
    pytest.param("rules: {PL101: {headroom: lots}}\n", "at key 'rules.PL101.headroom': must be of type number, got 'lots'", id="option-type"),
    pytest.param("rules: {PL101: {headroom: -1}}\n", "at key 'rules.PL101.headroom': must be >= 0, got -1", id="option-minimum"),
    pytest.param("ignore: [PLX]\n", "at key 'ignore.0': 'PLX' matches no rule", id="unknown-selector"),
    pytest.param("extend-select: [no-such-rule]\n", "at key 'extend-select.0': 'no-such-rule' matches no rule", id="unknown-name"),
]


#: the column (on the line after BASE_CONFIG) where each case's key, or the item it names, is written
CONFIG_ERROR_COLUMNS = {
    "unknown-key": 1, "unknown-nested-key": 10, "numeric-key": 1, "selector-not-a-list": 1, "bad-item-type": 11,
    "rule-settings-not-a-mapping": 9, "below-minimum": 10, "trace-rows-below-minimum": 10,
    "trace-bytes-above-maximum": 10, "grid-samples-not-whole": 10, "empty-selector": 10, "bad-enum": 1,
    "bad-severity": 17, "unknown-rule": 9, "unknown-option": 35, "option-type": 17, "option-minimum": 17,
    # a selector is placed at its own item in the list
    "unknown-selector": 10, "unknown-name": 17,
}


@pytest.mark.parametrize(("extra", "expected"), CONFIG_ERRORS)
def test_config_error_is_one_line_naming_file_and_key(
    tmp_path: Path, extra: str, expected: str, request: pytest.FixtureRequest
) -> None:
    repo = make_repo(tmp_path)
    path = set_config(repo, extra).resolve()
    # placed as a finding is: file:line:col of the key (or of the list item it names)
    where = f"{path.name}:{BASE_CONFIG.count(chr(10)) + 1}:{CONFIG_ERROR_COLUMNS[request.node.callspec.id]}"
    for command in ("check", "config"):
        code, out, err = run_cli([command], cwd=repo)
        assert (code, out, err) == (2, "", f"policylint: error: {where} {expected}\n")


def test_unreadable_now_names_the_key(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    path = set_config(repo, "", base='now: "yesterday"\n').resolve()
    code, _, err = run_cli(["check"], cwd=repo)
    assert (code, err) == (
        2,
        f"policylint: error: {path.name}:1:1 at key 'now': must be an ISO date (YYYY-MM-DD[THH:MM:SS]), got 'yesterday'\n",
    )
    set_config(repo, "", base='now: "2026-13-45"\n')
    code, _, err = run_cli(["check"], cwd=repo)
    assert (code, err) == (
        2,
        f"policylint: error: {path.name}:1:1 at key 'now': '2026-13-45' is not an ISO date (YYYY-MM-DD[THH:MM:SS])\n",
    )


def test_config_that_is_not_a_mapping(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    path = set_config(repo, "", base="- select\n").resolve()
    code, _, err = run_cli(["check"], cwd=repo)
    assert (code, err) == (2, f"policylint: error: {path.name}: the configuration must be a mapping\n")


def test_config_with_invalid_yaml(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    path = set_config(repo, "select: [PL1\n").resolve()
    code, _, err = run_cli(["check"], cwd=repo)
    assert code == 2
    assert err.startswith(f"policylint: error: {path.name}: invalid YAML at line ")
    assert err.count("\n") == 1


def test_bad_pyproject_table_names_the_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, config=None)
    path = repo / "pyproject.toml"
    path.write_text('[tool.policylint]\nfail-on = "never"\n', encoding="utf-8")
    code, _, err = run_cli(["check"], cwd=repo)
    assert (code, err) == (
        2,
        f"policylint: error: {path.name} at key 'fail-on': must be one of error, warning, info, got 'never'\n",
    )


def test_unknown_selector_in_per_file_ignores_names_that_key(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    path = set_config(repo, 'per-file-ignores: {"clusters/*": [PLX]}\n').resolve()
    code, _, err = run_cli(["check"], cwd=repo)
    assert (code, err) == (2, f"policylint: error: {path.name}:3:35 at key 'per-file-ignores.clusters/*.0': 'PLX' matches no rule\n")


def test_unknown_selector_on_the_command_line_names_the_flag(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    code, out, err = run_cli(["check", "--select", "PLX"], cwd=repo)
    assert (code, out, err) == (2, "", "policylint: error: --select PLX: matches no rule (see `policylint rules`)\n")


def test_config_duplicate_key_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    path = set_config(repo, "fail-on: error\nfail-on: info\n").resolve()
    code, _, err = run_cli(["check"], cwd=repo)
    assert code == 2
    assert err.startswith(f"policylint: error: {path.name}: invalid YAML at line 4, column 1: duplicate key 'fail-on' (first defined on line 3)")


def test_a_control_character_in_a_key_stays_on_one_line() -> None:
    """A newline inside a config key is shown escaped, so the error is still one line."""
    from policylint.model.config_checks import check_plain, validate_settings
    from policylint.errors import PolicylintError

    with pytest.raises(PolicylintError) as info:
        raw: dict[str, object] = {"per-file-ignores": {"\n": None}}
        check_plain(raw, "cfg.yaml")
        validate_settings(raw, "cfg.yaml")
    assert str(info.value) == "cfg.yaml at key 'per-file-ignores.\\n': must be a list of rule codes, prefixes or names, got null (an empty value)"


def test_no_settings_at_all_are_valid_settings() -> None:
    """Empty settings skip the schema check (no jsonschema import on a run without a config file).

    Skipping is only sound because the schema itself accepts no settings at all.
    """
    import subprocess
    import sys

    import jsonschema

    from policylint.resources import load_schema

    jsonschema.Draft202012Validator(load_schema("Config")).validate({})
    probe = (
        "import sys\n"
        "from policylint.model.config_checks import validate_settings\n"
        "validate_settings({}, 'cfg.yaml')\n"
        "print('jsonschema' in sys.modules)\n"
        "validate_settings({'now': '2026-12-01'}, 'cfg.yaml')\n"
        "print('jsonschema' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["False", "True"]


@pytest.mark.parametrize(
    ("extra", "key", "column"),
    [
        ("ignore: [gate-loosened]\n", "ignore", 1),
        ("ignore: [PL97]\n", "ignore", 1),
        ('per-file-ignores: {"clusters/*.yaml": [PL977]}\n', "per-file-ignores.clusters/*.yaml", 20),
    ],
    ids=["by-name", "by-prefix", "per-file"],
)
def test_the_configuration_cannot_ignore_the_rule_that_reports_its_loosening(
    tmp_path: Path, extra: str, key: str, column: int
) -> None:
    """Red team: `ignore: [gate-loosened, proposal-exceeds-shortfall]` passed a 60-GPU ask with nothing said."""
    repo = make_repo(tmp_path)
    over_reserve(repo)
    path = set_config(repo, extra)
    code, report, err = check_json(repo, gate=True)
    assert (code, report) == (2, {})
    assert err.startswith(f"policylint: error: {path.name}:3:{column} at key '{key}': PL977 (gate-loosened) cannot be ignored"), err
    assert err.count("\n") == 1
    # the CI job's own command line may still turn it off: written where the job is reviewed
    set_config(repo, "ignore: [reserved-above-baseline]\n", base='now: "2026-12-01"\n')
    code, report, err = check_json(repo, gate=True)
    assert (code, err) == (1, "") and "PL977" in codes(report) and "PL101" not in codes(report)
    code, report, err = check_json(repo, "--ignore", "PL977", gate=True)
    assert err == "" and "PL977" not in codes(report) and "PL101" not in codes(report)


def test_the_configuration_cannot_lower_the_severity_of_the_rule_that_reports_its_loosening(tmp_path: Path) -> None:
    """Red team: `rules: {gate-loosened: {severity: info}}` would report the loosening and pass every run."""
    repo = make_repo(tmp_path)
    over_reserve(repo)
    path = set_config(repo, "rules:\n  gate-loosened: {severity: info}\n")
    code, report, err = check_json(repo, gate=True)
    assert (code, report) == (2, {})
    assert err == (f"policylint: error: {path.name}:4:19 at key 'rules.gate-loosened.severity': PL977 (gate-loosened)"
                   " cannot report below warning: it is how the gate says what the configuration loosened\n")
    # raising it is no loosening
    set_config(repo, "rules:\n  PL977: {severity: error}\n")
    code, report, err = check_json(repo, gate=True)
    assert (code, err) == (1, "") and "PL101" in codes(report)


def test_options_that_switch_a_rule_off_when_raised_are_loosened_when_raised() -> None:
    """Red team, 2026-12-06: `min_finished: 1000` (PL979), `min_gpus` (PL113, PL980), `min_pools` (PL980) and
    `load_gib_per_second: 0` (PL965) turned their rules off and were read as tightened."""
    from policylint.engine.loosened import loosened_options
    from policylint.engine.ruleset import load_rules
    from policylint.resources import rules_dir

    ruleset = load_rules([rules_dir()])
    config = {"rules": {"PL979": {"min_finished": 1000}, "PL113": {"min_gpus": 100000},
                        "PL980": {"min_gpus": 100000, "min_pools": 1000}, "PL965": {"load_gib_per_second": 0}}}
    assert loosened_options(ruleset, config) == [
        "PL113 min_gpus = 100000, looser than its default 4 [accept: PL113.min_gpus=100000]",
        "PL965 load_gib_per_second = 0, looser than its default 2 [accept: PL965.load_gib_per_second=0]",
        "PL979 min_finished = 1000, looser than its default 10 [accept: PL979.min_finished=1000]",
        "PL980 min_gpus = 100000, looser than its default 8 [accept: PL980.min_gpus=100000]",
        "PL980 min_pools = 1000, looser than its default 3 [accept: PL980.min_pools=1000]",
    ]
    lowered = {"rules": {"PL979": {"min_finished": 5}, "PL113": {"min_gpus": 1}, "PL965": {"load_gib_per_second": 1}}}
    assert loosened_options(ruleset, lowered) == []


def test_fail_on_error_in_the_configuration_is_a_loosening_that_still_fails_the_run(tmp_path: Path) -> None:
    """Red team: `fail-on: error` in .policylint.yaml let every warning-only defence (PL905, PL113, ...) pass."""
    repo = make_repo(tmp_path)
    set_config(repo, "fail-on: error\n", base='now: "2026-12-01"\n')
    code, report, err = check_json(repo, gate=True)
    gate = [f for f in report["findings"] if f["code"] == "PL977"]
    assert (code, err) == (1, ""), report
    assert gate and {f["severity"] for f in gate} == {"error"}
    assert all("fail-on: error lets every warning pass the gate (default: warning)" in f["message"] for f in gate)
    assert codes(report) == ["PL977"] * len(gate)
    # the CI job's own flags decide for the job
    code, report, err = check_json(repo, "--ignore", "PL977", gate=True)
    assert (code, codes(report), err) == (0, [], "")
    # fail-on: warning (the default) is no loosening
    set_config(repo, "fail-on: warning\n", base='now: "2026-12-01"\n')
    code, report, err = check_json(repo, gate=True)
    assert (code, codes(report), err) == (0, [], "")


def test_paths_of_two_configurations_are_refused(tmp_path: Path) -> None:
    """Newcomer trial: `check examples/good examples/bad` judged bad with good's configuration and root, silently."""
    first = make_repo(tmp_path / "a")
    second = make_repo(tmp_path / "b")
    code, out, err = run_cli(["check", str(first), str(second)], cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err.startswith("policylint: error: ") and "belong to different configurations" in err and err.count("\n") == 1
    # two folders of one repository are one run, as before
    code, out, err = run_cli(["check", "--format", "json", str(first / "workloads"), str(first / "clusters")], cwd=tmp_path)
    assert code in (0, 1) and err == ""


def test_a_rule_folder_or_baseline_the_configuration_names_is_reported_where_it_is_named(tmp_path: Path) -> None:
    """Newcomer trial, 2026-12-06: the README's `rule-dirs` and `baseline` pasted as they are stopped the run
    with a message naming neither the configuration file nor the key."""
    repo = make_repo(tmp_path)
    set_config(repo, "rule-dirs: [policy/rules]\n")
    code, out, err = run_cli(["check", "."], cwd=repo)
    assert (code, out) == (2, "")
    assert err == f"policylint: error: .policylint.yaml:3:13 at key 'rule-dirs.0': rule folder not found: {repo / 'policy' / 'rules'}\n"
    set_config(repo, "baseline: baseline.json\n")
    code, out, err = run_cli(["check", "."], cwd=repo)
    assert (code, out) == (2, "")
    assert err.startswith("policylint: error: .policylint.yaml:3:1 at key 'baseline': baseline file not found: "), err
    assert "policylint baseline --output baseline.json" in err
    # writing the baseline the message names is not refused for the file it is about to write
    code, _, err = run_cli(["baseline", ".", "--output", "baseline.json", "--ignore", "PL977"], cwd=repo)
    assert code == 0, err
    assert check_json(repo, ".")[0] == 0


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('fail-on = "error"\n', "fail-on: error lets every warning pass the gate"),
        ('ignore = ["reserved-above-baseline"]\n', "PL101"),
        ('select = ["PL0", "PL9"]\n', "select"),
    ],
    ids=["fail-on", "ignore", "select"],
)
def test_a_loosening_written_in_pyproject_is_reported_as_in_the_yaml_file(tmp_path: Path, table: str, said: str) -> None:
    """A newcomer's trial, 2026-12-07: `ignore`, `select` and `fail-on` under [tool.policylint] escaped PL977."""
    repo = make_repo(tmp_path, config=None)
    over_reserve(repo)
    (repo / "pyproject.toml").write_text('[tool.policylint]\nnow = "2026-12-01"\n' + table, encoding="utf-8")
    code, report, err = check_json(repo, gate=True)
    gate = [f for f in report["findings"] if f["code"] == "PL977"]
    assert (code, err) == (1, ""), err
    assert gate and all(said in f["message"] for f in gate), [f["message"] for f in gate]
    # a pyproject.toml beside without policylint's table leaves the YAML file the one judged
    (repo / "pyproject.toml").write_text('[project]\nname = "capacity"\n', encoding="utf-8")
    set_config(repo, "fail-on: error\n", base='now: "2026-12-01"\n')
    code, report, err = check_json(repo, gate=True)
    assert any("fail-on: error" in f["message"] for f in report["findings"] if f["code"] == "PL977"), report


def test_a_configuration_below_the_root_that_the_run_does_not_use_stops_it(tmp_path: Path) -> None:
    """A newcomer's trial, 2026-12-07: `init capacity` in a git repository, then CI's `policylint check` at the
    repository's root found no configuration and judged capacity/ without its baseline, rule folders and
    options; the hook, which finds capacity/.policylint.yaml, passed what CI failed, and nothing said why."""
    top = tmp_path / "monorepo"
    repo = make_repo(top, config=BASE_CONFIG)
    capacity = repo.rename(top / "capacity")
    code, out, err = run_cli(["check", "--format", "json"], cwd=top)
    assert (code, out) == (2, "")
    assert err == (
        "policylint: error: capacity/.policylint.yaml configures the documents in capacity/clusters, but this run"
        " found no configuration: a run judges one repository with its own configuration; run"
        " `policylint check capacity` (or from capacity), pass --config, or exclude that folder\n"
    )
    # run on the folder, from it, or with its configuration named: judged with it
    for args, cwd in ((["capacity"], top), ([], capacity), (["--config", "capacity/.policylint.yaml", "capacity"], top)):
        code, report, err = check_json(top if cwd == top else capacity, *args, cwd=cwd)
        assert code in (0, 1) and err == "", (args, err)
    # a root configuration that excludes the folder reads none of its documents: nothing to refuse
    (top / "other").mkdir()
    shutil.copytree(capacity / "clusters", top / "other" / "clusters")
    (top / ".policylint.yaml").write_text('exclude: ["capacity/**"]\n', encoding="utf-8")
    code, report, err = check_json(top, ".", cwd=top)
    assert code in (0, 1) and err == "", err
