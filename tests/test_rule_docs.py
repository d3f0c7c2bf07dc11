"""Every rule documents itself in the fixed sections, and its docs match its options.

Modelled on ruff's rule-doc tests: a missing section, an option named in the
docs that the rule does not have, or an example that is not YAML fails here
rather than in a reader's browser. The last tests prove that parameters are
live: changing one threshold in the configuration flips a fixture's verdict.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from conftest import git, minirepo_path, run_cli
from fixture_helpers import session_cache
from policylint.engine.history import changed_since
from policylint.engine.linter import LintOptions, lint
from policylint.model.load import API_VERSION
from policylint.resources import rules_dir, schemas_dir
from policylint.engine.rule import DOC_SECTIONS, Rule
from policylint.engine.rule import RuleSet
from policylint.engine.ruleset import configure_rules, load_rules

RULES_DIR = rules_dir()
RULESET = load_rules([RULES_DIR])
ALL = RULESET.sorted()
CHECKED = [r for r in ALL if not r.builtin]
FIXTURES = Path(__file__).parent / "rules"
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
REQUIRED = ("what", "why", "example", "use_instead", "references")
_BACKTICKED = re.compile(r"`([^`]+)`")


def _config_keys() -> set[str]:
    """Every key the configuration file accepts (options may name these too)."""
    schema = json.loads((schemas_dir() / "config.schema.json").read_text(encoding="utf-8"))
    keys: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    keys.update(value)
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return keys


def _options_section(rule: Rule) -> str:
    text = rule.markdown()
    match = re.search(r"^## Options\n(?P<body>.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    return match.group("body") if match else ""


@pytest.mark.parametrize("rule", ALL, ids=lambda r: r.code)
def test_rule_has_every_doc_section(rule: Rule) -> None:
    missing = [key for key in REQUIRED if not rule.docs.get(key)]
    assert missing == [], f"{rule.code} lacks docs: {missing}"
    markdown = rule.markdown()
    for key in REQUIRED:
        assert f"## {DOC_SECTIONS[key]}" in markdown


@pytest.mark.parametrize("rule", ALL, ids=lambda r: r.code)
def test_options_text_names_only_real_options(rule: Rule) -> None:
    allowed = set(rule.params) | _config_keys()
    named = set(_BACKTICKED.findall(str(rule.docs.get("options", ""))))
    assert sorted(named - allowed) == [], f"{rule.code} docs name options it does not have"


@pytest.mark.parametrize("rule", [r for r in ALL if r.params], ids=lambda r: r.code)
def test_rendered_options_list_every_parameter(rule: Rule) -> None:
    options = _options_section(rule)
    for name, param in rule.params.items():
        assert f"`{name}`" in options, f"{rule.code}: option {name} is not documented"
        assert str(param.default) in options


@pytest.mark.parametrize("rule", CHECKED, ids=lambda r: r.code)
def test_examples_are_yaml(rule: Rule) -> None:
    """Both examples parse to YAML structure (any text parses as a YAML string; that proves nothing)."""
    for key in ("example", "use_instead"):
        loaded = yaml.safe_load(rule.docs[key])
        assert isinstance(loaded, (dict, list)) and loaded, f"{rule.code} {key} is not a YAML mapping or list"


@pytest.mark.parametrize("rule", CHECKED, ids=lambda r: r.code)
def test_rule_text_has_no_machine_paths(rule: Rule) -> None:
    text = json.dumps([rule.summary, rule.message, rule.hint, rule.docs])
    # Folders that only exist on someone's machine; rule texts speak of the repository.
    for top in ("home", "Users", "root", "tmp", "work"):
        assert f"/{top}/" not in text


def test_codes_and_names_are_unique_across_files() -> None:
    codes: Counter[str] = Counter()
    names: Counter[str] = Counter()
    for path in sorted(RULES_DIR.glob("*.y*ml")):
        for raw in yaml.safe_load(path.read_text(encoding="utf-8"))["rules"]:
            codes[raw["code"]] += 1
            names[raw["name"]] += 1
    assert [c for c, n in codes.items() if n > 1] == []
    assert [c for c, n in names.items() if n > 1] == []


def _codes(folder: Path, ruleset: RuleSet) -> list[str]:
    # the fixture is its own repository (as in tests/test_rule_fixtures.py), not one among all the others
    options = LintOptions(root=FIXTURES, now=NOW, ruleset=ruleset, repository=folder, cache_dir=session_cache())
    return [f.code for f in lint([folder], options).findings]


def test_loosening_a_threshold_clears_a_failing_fixture() -> None:
    folder = FIXTURES / "PL101" / "fail"
    assert "PL101" in _codes(folder, load_rules([RULES_DIR]))
    # 64 reserved against a 14-GPU baseline passes once 5x the baseline is accepted.
    loose = configure_rules(load_rules([RULES_DIR]), {"PL101": {"headroom": 4.0}}, "test")
    assert "PL101" not in _codes(folder, loose)


def test_tightening_a_threshold_fails_a_passing_fixture() -> None:
    folder = FIXTURES / "PL106" / "pass"
    assert "PL106" not in _codes(folder, load_rules([RULES_DIR]))
    strict = configure_rules(load_rules([RULES_DIR]), {"measurement-window-short": {"min_window_days": 120}}, "test")
    assert "PL106" in _codes(folder, strict)


# --- the doc examples run through the engine ------------------------------------------------
#
# A doc example is usually a fragment: the few lines that matter, not a whole repository.
# Each fragment is run two ways: as a file of its own (how the document rules see a
# broken file), and laid over the rule's passing fixture (the fragment's keys replace the
# fixture's, lists of named items are matched by name), so that the fragment meets the
# workloads, traces and pools it speaks of (an example that is a whole document, with its
# apiVersion, is only placed beside the fixture). The example must make its rule fire in one of
# them; the suggested fix must not make it fire where it applies.
#
# The document rules (section ``document``) judge a file as a whole - its bytes, its
# comments, its separators - so their examples are complete files. Each is written as it
# stands into the small shared repository's ``workloads/`` folder (where its relative
# paths point) and the repository is linted; it is never parsed and re-dumped, which
# would drop the comments the suppression rules read (and expand PL005's aliases).

_ROOT_KEYS = {"apiVersion", "kind", "metadata", "spec"}


def _overlay(base: object, over: object) -> object:
    """``base`` with ``over``'s keys replacing its own; named list items merge by name."""
    if isinstance(base, dict) and isinstance(over, dict):
        merged = dict(base)
        for key, value in over.items():
            merged[key] = _overlay(base[key], value) if key in base else value
        return merged
    named = (
        isinstance(base, list)
        and isinstance(over, list)
        and all(isinstance(x, dict) and "name" in x for x in [*base, *over])
    )
    if named:
        assert isinstance(base, list) and isinstance(over, list)
        merged_list = list(base)
        index = {x["name"]: i for i, x in enumerate(merged_list)}
        for item in over:
            if item["name"] in index:
                merged_list[index[item["name"]]] = _overlay(merged_list[index[item["name"]]], item)
            else:
                merged_list.append(item)
        return merged_list
    return over


def _fixture_copy(rule: Rule, tmp_path: Path) -> tuple[Path, Path]:
    """(root, folder): a private copy of the rule's pass fixture beside the shared traces."""
    root = tmp_path / "rules"
    (root / rule.code).mkdir(parents=True)
    # A copy, not a symlink: the engine refuses measurement paths that leave the repository
    # through a link (PL023), and then no trace-based rule could fire at all.
    shutil.copytree(FIXTURES / "_traces", root / "_traces")
    folder = root / rule.code / "pass"
    source = FIXTURES / rule.code / "pass"
    # Rules without a pass fixture (the document rules) meet the small shared repository.
    shutil.copytree(source if source.is_dir() else minirepo_path(), folder)
    if rule.code in _JUDGES_A_CHANGE:
        # The copy as it stands is the base revision; the example laid over it is the change.
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "base")
    return root, folder


#: Rules that judge a change against a base revision (``--diff HEAD``), not files alone.
_JUDGES_A_CHANGE = frozenset({"PL950", "PL951", "PL952"})


def _fires(rule: Rule, root: Path, folder: Path) -> bool:
    change = changed_since(root, "HEAD") if rule.code in _JUDGES_A_CHANGE else None
    result = lint([folder], LintOptions(root=root, now=NOW, ruleset=RULESET, change=change, cache_dir=session_cache()))
    return rule.code in {f.code for f in result.findings}


def _fires_as_a_file(rule: Rule, text: str, tmp_path: Path) -> bool:
    """Whether ``rule`` fires when ``text`` is a file of its own beside the pass fixture."""
    root, folder = _fixture_copy(rule, tmp_path)
    (folder / "example.yaml").write_text(text, encoding="utf-8")
    return _fires(rule, root, folder)


#: How a whole-file example is saved when UTF-8 would not show its rule (its fix is saved as UTF-8).
_ENCODINGS = {"PL003": "latin-1"}


def _pod_exports(folder: Path) -> None:
    """PL025's measurements: a pod export with pending pods (no start), and the same without them."""
    jobs = folder / "measurements" / "jobs"
    jobs.mkdir(parents=True)
    start = int((NOW - dt.timedelta(days=80)).timestamp())
    rows = ["job_id,status,start,end"]
    for i in range(400):
        begin = start + i * 15_000
        pending = i % 10 == 0
        rows.append(f"job-{i},{'Pending' if pending else 'Succeeded'},{'' if pending else begin},{begin + 40_000}")
    (jobs / "pods.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    ran = [row for row in rows if ",Pending," not in row]
    (jobs / "pods-ran.csv").write_text("\n".join(ran) + "\n", encoding="utf-8")


#: Measurements a whole-file example cites that the shared repository does not hold.
_SETUP = {"PL025": _pod_exports}


def _fires_as_a_whole_file(rule: Rule, text: str, tmp_path: Path, encoding: str = "utf-8") -> bool:
    """Whether ``rule`` fires when ``text`` is a file of the shared repository, byte for byte."""
    root, folder = _fixture_copy(rule, tmp_path)
    if rule.code in _SETUP:
        _SETUP[rule.code](folder)
    (folder / "workloads" / "example.yaml").write_bytes(text.encode(encoding))
    return _fires(rule, root, folder)


#: Rules whose example is a layout of symbolic links (``links: {path: target}``), not a file.
_LINK_EXAMPLES = frozenset({"PL008"})


def _fires_with_links(rule: Rule, text: str, tmp_path: Path, checked_out: bool) -> bool:
    """Whether ``rule`` fires with the example's links made in the shared repository; with ``checked_out``,
    the folders they lead to exist (empty)."""
    root, folder = _fixture_copy(rule, tmp_path)
    for link, target in yaml.safe_load(text)["links"].items():
        path = folder / link
        path.parent.mkdir(parents=True, exist_ok=True)
        if checked_out:
            (path.parent / target).mkdir(parents=True)
        path.symlink_to(target, target_is_directory=True)
    return _fires(rule, root, folder)


def _fires_in_fixture(rule: Rule, text: str, tmp_path: Path) -> bool | None:
    """Whether ``rule`` fires with ``text`` laid over its pass fixture (None: it fits nowhere)."""
    try:
        over = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(over, dict) or over.get("apiVersion") == API_VERSION:
        return None  # a whole policylint document is placed beside the fixture, not laid over every one
    root, folder = _fixture_copy(rule, tmp_path)
    at_root = bool(set(over) & _ROOT_KEYS)
    changed = False
    for path in sorted(folder.rglob("*.y*ml")):  # the shared repository keeps its files in folders
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        for i, doc in enumerate(docs):
            target = doc if at_root else doc.get("spec") if isinstance(doc, dict) else None
            if isinstance(target, dict) and set(over) & set(target):
                laid = _overlay(target, over)
                docs[i] = laid if at_root else {**doc, "spec": laid}
                changed = True
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return _fires(rule, root, folder) if changed else None


#: Rules whose example is a `.policylint.yaml` (the configuration of the run), not a plan.
_CONFIG_EXAMPLES = frozenset({"PL977"})


def _fires_as_config(rule: Rule, text: str, tmp_path: Path) -> bool:
    """Whether ``rule`` fires when ``text`` is the repository's `.policylint.yaml` beside the pass fixture."""
    root, folder = _fixture_copy(rule, tmp_path)
    for old in folder.glob(".policylint.y*ml"):
        old.unlink()
    (root / ".policylint.yaml").write_text(text, encoding="utf-8")
    return _fires(rule, root, folder)


#: Rules whose example is a baseline file staged in a change (the hook's run), not a plan.
_BASELINE_EXAMPLES = frozenset({"PL034"})


def _fires_as_staged_baseline(rule: Rule, text: str | None, tmp_path: Path) -> bool:
    """Whether ``rule`` fires in the hook's run when ``text`` is staged as the configured baseline file
    (None: the file as ``policylint baseline`` writes it), over a committed repository and baseline."""
    repo = tmp_path / "repo"
    shutil.copytree(minirepo_path(), repo)
    (repo / ".policylint.yaml").write_text("baseline: .policylint-baseline.json\n", encoding="utf-8")
    assert run_cli(["baseline", ".", "--now", NOW.date().isoformat()], cwd=repo)[0] == 0
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    if text is not None:
        (repo / ".policylint-baseline.json").write_text(text, encoding="utf-8")
    else:
        assert run_cli(["baseline", ".", "--now", NOW.date().isoformat()], cwd=repo)[0] == 0
    git(repo, "add", "-A")
    code, out, err = run_cli(["check", "--format", "json", "--now", NOW.date().isoformat(), "--changed-files",
                              ".policylint-baseline.json"], cwd=repo)
    assert code in (0, 1), err
    return rule.code in {f["code"] for f in json.loads(out)["findings"]}


@pytest.mark.parametrize("rule", ALL, ids=lambda r: r.code)
def test_doc_example_fires_and_its_fix_does_not(rule: Rule, tmp_path: Path) -> None:
    example, fix = str(rule.docs["example"]), str(rule.docs["use_instead"])
    if rule.code in _BASELINE_EXAMPLES:  # the example is a baseline file; its fix, the file the command writes
        assert _fires_as_staged_baseline(rule, example, tmp_path / "example"), f"{rule.code}: its example does not fire"
        assert not _fires_as_staged_baseline(rule, None, tmp_path / "fix"), f"{rule.code}: its use_instead still fires"
        return
    if rule.code in _LINK_EXAMPLES:  # the example is a layout of symbolic links, not a file
        assert _fires_with_links(rule, example, tmp_path / "example", checked_out=False), f"{rule.code}: its example does not fire"
        assert not _fires_with_links(rule, fix, tmp_path / "fix", checked_out=True), f"{rule.code}: its use_instead still fires"
        return
    if rule.section == "document":
        saved_as = _ENCODINGS.get(rule.code, "utf-8")  # the fix is the same text saved as UTF-8
        assert _fires_as_a_whole_file(rule, example, tmp_path / "example", saved_as), f"{rule.code}: its example does not fire"
        assert not _fires_as_a_whole_file(rule, fix, tmp_path / "fix"), f"{rule.code}: its use_instead still fires"
        return
    if rule.code in _CONFIG_EXAMPLES:  # the example is the repository's configuration, not a plan
        assert _fires_as_config(rule, example, tmp_path / "example"), f"{rule.code}: its example does not fire"
        assert not _fires_as_config(rule, fix, tmp_path / "fix"), f"{rule.code}: its use_instead still fires"
        return
    fired = _fires_in_fixture(rule, example, tmp_path / "example")
    assert fired or _fires_as_a_file(rule, example, tmp_path / "alone"), f"{rule.code}: its example does not fire"
    fixed = _fires_in_fixture(rule, fix, tmp_path / "fix")
    if fixed is None:
        fixed = _fires_as_a_file(rule, fix, tmp_path / "fix-alone")
    assert not fixed, f"{rule.code}: its use_instead still fires"


def _extremes(param: object, looser_up: bool) -> tuple[float, float]:
    """A looser and a tighter value of a numeric option than its default, within its bounds."""
    from policylint.engine.rule import Param

    assert isinstance(param, Param)
    default = float(param.default)
    high = default * 10 + 100
    low = param.minimum if param.minimum is not None else 0.0
    if param.name == "load_gib_per_second":
        low = default / 10  # 0 switches it off: that end is looser, not tighter
    if param.maximum is not None:
        high = min(high, param.maximum)
    if param.type == "integer":
        high, low = int(high), int(low)
    return (high, low) if looser_up else (low, high)


# (the rules that judge a change have no fixtures: tests/test_history_rule.py moves their options)
NUMERIC = [(r, name) for r in CHECKED for name, p in r.params.items()
           if p.type in ("number", "integer") and r.code != "PL977" and r.code not in _JUDGES_A_CHANGE]


@pytest.mark.parametrize(("rule", "name"), NUMERIC, ids=lambda x: x.code if isinstance(x, Rule) else x)
def test_what_pl977_calls_looser_reports_no_more(rule: Rule, name: str) -> None:
    """Red team, 2026-12-06: raising min_finished (PL979), min_gpus (PL113, PL980) or min_pools switched the rule
    off, while PL977 read every min_* option as loosened only downward. Each bundled numeric option is moved both
    ways on its rule's fixtures: the value PL977 calls looser never reports more, the tighter one never fewer."""
    from policylint.engine.loosened import _looser

    param = rule.params[name]
    up = _looser(name, param.default, float(param.default) * 2 + 1, rule.code)
    assert up is not None, f"{rule.code} {name}: PL977 knows no direction for it"
    loose, tight = _extremes(param, up)
    # a bound at the default leaves that side out
    moved = [(label, v) for label, v in (("loose", loose), ("tight", tight)) if v != param.default]
    assert moved
    assert all(_looser(name, param.default, v, rule.code) == (label == "loose") for label, v in moved)
    for kind in ("fail", "pass"):
        folder = FIXTURES / rule.code / kind
        counts = {"loose": 0, "tight": 10**9}
        for label, value in (("default", param.default), *moved):
            ruleset = configure_rules(load_rules([RULES_DIR]), {rule.code: {name: value}}, "test")
            counts[label] = _codes(folder, ruleset).count(rule.code)
        assert counts["loose"] <= counts["default"] <= counts["tight"], (kind, counts)


_CITED_TRACE = re.compile(r"_traces/([\w.-]+)\s*#([^\n]*)")


def test_a_trace_the_docs_call_measured_passes_pl990() -> None:
    """A use_instead that cites a fixture trace as measured days cites one PL990 does not report.

    The shared fixture traces are mostly written by formula (diurnal-100.csv repeats one cycle
    every day) and PL990 reports those; the docs may cite them, but never as measurements.
    """
    from policylint import traces
    from policylint.calc.runs import run_figures

    pl990 = RULESET.rules["PL990"]
    max_share, min_runs = float(pl990.params["max_share"].default), int(pl990.params["min_runs"].default)
    cited = {(r.code, name) for r in CHECKED
             for name, comment in _CITED_TRACE.findall(str(r.docs["use_instead"])) if "measured" in comment}
    assert cited, "no use_instead cites a measured trace"
    for code, name in sorted(cited):
        path = FIXTURES / "_traces" / name
        assert path.is_file(), f"{code}'s use_instead cites {name}, which tests/rules/_traces does not hold"
        series = traces.read_series(path)
        _, share, judged = run_figures(series.values, series.valid)
        assert share is None or judged is None or judged < min_runs or share <= max_share, (
            f"{code}'s use_instead calls {name} measured, but {share:.0%} of its varied runs repeat (PL990)")
