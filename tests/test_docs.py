"""Generated documentation stays in sync with the rules."""

from __future__ import annotations

from conftest import REPO, run_cli


def test_rule_reference_is_up_to_date() -> None:
    code, out, err = run_cli(["rules", "--format", "markdown"])
    assert (code, err) == (0, "")
    committed = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    assert out == committed, "docs/rules.md is stale: run `policylint rules --format markdown > docs/rules.md`"


def test_rule_reference_has_every_rule_and_section() -> None:
    _, out, _ = run_cli(["rules", "--format", "markdown"])
    _, listing, _ = run_cli(["rules", "--format", "json"])
    import json

    for rule in json.loads(listing):
        assert f"\n## {rule['code']} {rule['name']}\n" in out
    assert out.count("### What it does") == out.count("\n## PL")


# --- the README says what is true -----------------------------------------------------------


def _readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def _block_after(text: str, marker: str) -> list[str]:
    """The lines of the fenced block that follows ``marker``."""
    import re

    match = re.search(re.escape(marker) + r"\s*```\w*\n(.*?)```", text, re.S)
    assert match, f"no fenced block after {marker!r}"
    return match.group(1).splitlines()


def test_readme_findings_excerpt_is_the_real_output() -> None:
    """Each excerpt line is a line of `policylint check examples/bad`, in order; '...' elides."""
    excerpt = _block_after(_readme(), "`policylint check examples/bad` (excerpt):")
    code, out, err = run_cli(["check", "examples/bad"], cwd=REPO)
    assert (code, err) == (1, "")
    lines = out.splitlines()
    position = 0
    for line in excerpt:
        if line.strip() == "...":
            continue
        assert line in lines[position:], f"README excerpt line is not in the output (in order): {line!r}"
        position = lines.index(line, position) + 1
    assert excerpt[-1] == lines[-1], "the excerpt must end with the real summary line"


def _tags() -> list[str]:
    import subprocess

    done = subprocess.run(["git", "tag", "-l"], cwd=REPO, capture_output=True, text=True, check=False)
    return done.stdout.split() if done.returncode == 0 else []


def test_every_named_release_exists_and_is_this_version() -> None:
    """Pins in README, docs/ci and action.yml name v<version>; once tags exist, only existing ones."""
    import re

    from policylint import __version__

    texts = {"README.md": _readme()}
    for path in ("docs/ci/github-actions.yml", "docs/ci/gitlab-ci.yml", "action.yml"):
        texts[path] = (REPO / path).read_text(encoding="utf-8")
    named = {
        (path, tag)
        for path, text in texts.items()
        for tag in re.findall(r"policylint/policylint@(v[\w.]+)|^\s+rev: (v[\w.]+)$", text, re.M)
        for tag in tag
        if tag
    }
    assert named, "no release is named anywhere"
    assert {tag for _, tag in named} == {f"v{__version__}"}
    tags = _tags()
    if tags:  # a clone without tags (a shallow CI checkout) cannot say which exist
        assert sorted({tag for _, tag in named} - set(tags)) == []
        assert f"v{__version__}" in tags


def test_version_is_the_same_everywhere() -> None:
    import tomllib

    from policylint import __version__

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == __version__
    code, out, _ = run_cli(["--version"])
    assert (code, out) == (0, f"policylint {__version__}\n")


def test_readme_plan_totals_are_the_real_ones() -> None:
    """'`policylint plan examples/bad` plans 231 GPUs where 553 are ...' is what plan prints (it said
    211 and 531 for two releases after the figures moved)."""
    import re

    claims = re.findall(r"`policylint plan (examples/[\w-]+)` plans (\d+) GPUs where (\d+) are", _readme())
    assert claims, "the README states no plan total"
    for folder, planned, today in claims:
        code, out, _ = run_cli(["plan", folder], cwd=REPO)
        [(got_today, got_planned)] = re.findall(r"^total today: .* = (\d+) GPUs; planned: .* = (\d+) GPUs$", out, re.M)
        assert (code, got_planned, got_today) == (0, planned, today), folder


def test_readme_finding_counts_are_the_real_ones() -> None:
    """Sentences like "`policylint check examples/X` exits 1 with seven findings" are run and counted."""
    import json
    import re

    words = {w: i for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split())}
    claims = re.findall(r"`policylint check (examples/[\w-]+)` exits (\d) with (\w+) findings?", _readme())
    assert claims, "the README states no finding count"
    for folder, code, count in claims:
        got, out, _ = run_cli(["check", folder, "--format", "json"], cwd=REPO)
        findings = json.loads(out)["findings"]
        assert (got, len(findings)) == (int(code), words.get(count, -1) if not count.isdigit() else int(count)), folder
