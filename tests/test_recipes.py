"""The recipes in the README, in docs/ and in docs/ci/ actually work.

* Every fenced command block (``sh``, ``shell``, ``bash``, ``console``, or a
  transcript whose lines start with ``$ ``) in README.md and docs/**/*.md that runs
  policylint is executed against a scratch copy of ``examples/``. Installing
  (``pip install``) and running the test suite are left to the environment. The
  expected exit code is 0 unless the line ends with a ``# exit N`` comment.
* Every report a command writes (``--format FORMAT=PATH``, ``--output-format
  FORMAT:PATH``, the report on stdout) must parse as its format: SARIF against
  the official schema, GitLab Code Quality against its required fields, JUnit
  as XML, JSON as JSON.
* The policylint steps of the complete CI files in docs/ci/ and of the composite
  action (action.yml) are run with bash the way the CI runner would run them,
  on a clean and on a failing repository, and what they hand to the next step
  (SARIF upload, job summary, merge-request reports) is checked.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from conftest import REPO, git, run_cli
from test_gitlab import CODE_QUALITY

DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
SARIF_SCHEMA = json.loads((REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
COMMAND_LANGS = {"sh", "shell", "bash", "console"}
#: Data files the docs name by their bare file name, copied beside examples/ in the scratch folder.
DATA_FILES = [REPO / "tests" / "data" / "helios_vc3sl_2020-05.csv"]
#: Parts of a command line the environment has already done (install) or that are not recipes.
NOT_RUN = re.compile(r"^(python -m pip install|pip install|python -m pytest|bash \.ci/run)\b")


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]  # after "policylint"
    exit_code: int

    def __str__(self) -> str:
        return f"policylint {shlex.join(self.argv)}"


@dataclass(frozen=True)
class Recipe:
    """The policylint commands of one block, run in order in one folder (init, then check)."""

    source: str  # "README.md:123"
    commands: tuple[Command, ...]

    def __str__(self) -> str:
        return f"{self.source}: {' && '.join(map(str, self.commands))}"


def _logical_lines(body: str, transcript: bool) -> list[str]:
    """Command lines of a block: continuations joined, prompts stripped, transcript output dropped."""
    lines: list[str] = []
    pending = ""
    for raw in body.splitlines():
        if pending:
            line = pending + " " + raw.strip()
        elif transcript:
            if not raw.startswith("$ "):
                continue  # output shown in a transcript
            line = raw[2:]
        else:
            line = raw.strip()
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        pending = ""
        lines.append(line)
    return lines


def recipes() -> list[Recipe]:
    """Every policylint command in a command block of the README and docs."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
            lang, body = m.group(1), m.group(2)
            transcript = body.startswith("$ ")
            if lang not in COMMAND_LANGS and not transcript:
                continue
            line_no = text.count("\n", 0, m.start()) + 2
            commands = []
            for line in _logical_lines(body, transcript):
                expected = re.search(r"#\s*exit\s+(\d+)\s*$", line)
                for part in line.split("&&"):
                    words = shlex.split(part, comments=True)
                    if not words or NOT_RUN.match(part.strip()):
                        continue
                    assert words[0] == "policylint", f"{doc.name}:{line_no}: a command block runs {words[0]!r}"
                    commands.append(Command(tuple(words[1:]), int(expected.group(1)) if expected else 0))
            if commands:
                found.append(Recipe(f"{doc.relative_to(REPO).as_posix()}:{line_no}", tuple(commands)))
    return found


def parse_check(argv: tuple[str, ...]) -> tuple[list[tuple[str, str | None]], bool]:
    """(format, file or None for stdout) of every report a ``check`` command writes, and whether it names PATHs."""
    from policylint.cli import build_parser
    from policylint.commands.check import report_plan

    args = build_parser("check").parse_args(list(argv))
    return report_plan(args.reports, args.output), bool(args.paths)


def assert_parses(fmt: str, text: str, where: str) -> None:
    """``text`` is a valid report in ``fmt``."""
    if fmt == "sarif":
        jsonschema.Draft4Validator(SARIF_SCHEMA).validate(json.loads(text))
    elif fmt == "gitlab":
        jsonschema.validate(json.loads(text), CODE_QUALITY)
    elif fmt == "json":
        assert isinstance(json.loads(text), dict), where
    elif fmt == "junit":
        assert ET.fromstring(text.encode("utf-8")).tag == "testsuites", where
    elif fmt == "markdown":
        assert text.startswith("## policylint\n"), where
    elif fmt == "github":
        assert all(line.startswith("::") or line.startswith("policylint: ") for line in text.splitlines()), where
    else:
        assert text.strip(), where


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A folder holding a copy of examples/ (as examples/) and the data files the docs name."""
    shutil.copytree(REPO / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    for data in DATA_FILES:
        shutil.copy(data, tmp_path / data.name)
    # docs/measurements.md runs its examples on the real traces the test suite ships
    shutil.copytree(REPO / "tests" / "data", tmp_path / "tests" / "data")
    return tmp_path


def test_docs_have_recipes() -> None:
    sources = {r.source.split(":")[0] for r in recipes()}
    assert {"README.md", "docs/bands.md"} <= sources
    commands = [c for r in recipes() for c in r.commands]
    assert any(c.argv[:1] == ("init",) for c in commands)
    assert any("--format" in c.argv for c in commands)


@pytest.mark.parametrize("recipe", recipes(), ids=str)
def test_recipe_runs(recipe: Recipe, scratch: Path) -> None:
    for command in recipe.commands:
        is_check = command.argv[:1] == ("check",)
        plan, has_paths = parse_check(command.argv) if is_check else ([], True)
        # A check without PATH is a CI step: it runs at the root of a capacity repository.
        cwd = scratch if has_paths else scratch / "examples" / "good"
        code, out, err = run_cli(list(command.argv), cwd=cwd)
        assert code == command.exit_code, f"{recipe.source}: {command}\n{out}\n{err}"
        assert "Traceback" not in err
        for fmt, path in plan:
            where = f"{recipe.source}: {command}: {path or 'stdout'}"
            if path is None:
                assert_parses(fmt, out, where)
            else:
                assert (cwd / path).is_file(), f"{where} was not written"
                assert_parses(fmt, (cwd / path).read_text(encoding="utf-8"), where)


# --- complete CI files ----------------------------------------------------------------------


def repository(tmp_path: Path, example: str) -> Path:
    """A git repository holding one example capacity repository at its root."""
    repo = tmp_path / example
    shutil.copytree(REPO / "examples" / example, repo)
    git(repo, "init", "-q")
    return repo


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a step the way GitHub's and GitLab's runners run bash steps (-e, pipefail)."""
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    full_env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, "PATH": path, **env}
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def installs(script: str) -> bool:
    return bool(NOT_RUN.match(script.strip()))


GITHUB_WORKFLOW = yaml.safe_load((REPO / "docs" / "ci" / "github-actions.yml").read_text(encoding="utf-8"))


def test_github_workflow_is_complete() -> None:
    (job,) = GITHUB_WORKFLOW["jobs"].values()
    uses = [step.get("uses", "").split("@")[0] for step in job["steps"]]
    assert uses[:2] == ["actions/checkout", "actions/setup-python"]
    assert "github/codeql-action/upload-sarif" in uses
    assert job["permissions"]["security-events"] == "write"
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert any(installs(r) for r in runs)
    assert any("GITHUB_STEP_SUMMARY" in r for r in runs)


@pytest.mark.realtool
@pytest.mark.parametrize(("example", "expected"), [("good", 0), ("bad", 1)])
def test_github_workflow_steps(tmp_path: Path, example: str, expected: int) -> None:
    repo = repository(tmp_path, example)
    summary = tmp_path / "step-summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"}
    (job,) = GITHUB_WORKFLOW["jobs"].values()
    failed = False
    for step in job["steps"]:
        if "uses" in step or installs(step["run"]):
            if step.get("uses", "").startswith("github/codeql-action/upload-sarif"):
                sarif = repo / step["with"]["sarif_file"]
                assert_parses("sarif", sarif.read_text(encoding="utf-8"), "upload-sarif input")
            continue
        if failed and "always()" not in step.get("if", ""):
            continue
        done = bash(step["run"], repo, env)
        assert "Traceback" not in done.stderr
        if "policylint check" in step["run"]:
            assert done.returncode == expected, done.stdout + done.stderr
            assert_parses("github", done.stdout, "annotations")
            failed = done.returncode != 0
        else:
            assert done.returncode == 0, done.stderr
    assert summary.read_text(encoding="utf-8").startswith("## policylint\n")


def without_header(path: Path) -> str:
    """A CI file without its leading comment block (the README shows the rest)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)
    return "".join(lines)


@pytest.mark.parametrize("path", ["docs/ci/github-actions.yml", "docs/ci/gitlab-ci.yml"])
def test_readme_shows_the_tested_ci_file(path: str) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"```yaml\n{without_header(REPO / path)}```\n" in readme


GITLAB_JOB = yaml.safe_load((REPO / "docs" / "ci" / "gitlab-ci.yml").read_text(encoding="utf-8"))["policylint"]


@pytest.mark.realtool
@pytest.mark.parametrize(("example", "expected"), [("good", 0), ("bad", 1)])
def test_gitlab_job_script(tmp_path: Path, example: str, expected: int) -> None:
    repo = repository(tmp_path, example)
    for line in GITLAB_JOB["script"]:
        if installs(line):
            continue
        done = bash(line, repo, {"GITLAB_CI": "true"})
        assert done.returncode == expected, done.stdout + done.stderr
        assert_parses("text", done.stdout, "job log")
    reports = GITLAB_JOB["artifacts"]["reports"]
    assert GITLAB_JOB["artifacts"]["when"] == "always"
    assert_parses("gitlab", (repo / reports["codequality"]).read_text(encoding="utf-8"), "codequality")
    assert_parses("junit", (repo / reports["junit"]).read_text(encoding="utf-8"), "junit")
    if expected:
        assert json.loads((repo / reports["codequality"]).read_text(encoding="utf-8"))


# --- the composite action ------------------------------------------------------------------

ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(expression: str, context: dict[str, str]) -> str:
    """The few expression forms action.yml uses: context names, quoted strings, ==, != and &&."""
    def value(term: str) -> str:
        term = term.strip()
        if term.startswith("'") and term.endswith("'"):
            return term[1:-1]
        return context.get(term, "")

    results = []
    for clause in expression.split("&&"):
        m = re.fullmatch(r"(.+?)\s*(==|!=)\s*(.+)", clause.strip())
        if m is None:
            return value(clause)
        left, op, right = value(m.group(1)), m.group(2), value(m.group(3))
        results.append((left == right) == (op == "=="))
    return "true" if all(results) else "false"


def run_action(
    repo: Path, tmp_path: Path, inputs: dict[str, str], github: dict[str, str] | None = None
) -> tuple[int, dict[str, str], Path]:
    """Run the action's shell steps in order; return (verdict step's exit code, check outputs, summary).

    ``github`` holds context values such as ``github.base_ref`` (empty when not given).
    """
    context = {f"inputs.{k}": str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    context.update({f"inputs.{k}": v for k, v in inputs.items()})
    context.update(github or {})
    context["runner.temp"] = str(tmp_path / "runner-temp")
    summary = tmp_path / "summary.md"
    verdict = -1
    for step in ACTION["runs"]["steps"]:
        if "if" in step and evaluate(step["if"], context) != "true":
            continue
        if "uses" in step:
            if step["uses"].startswith("github/codeql-action/upload-sarif"):
                sarif = Path(_EXPR.sub(lambda m: evaluate(m.group(1), context), step["with"]["sarif_file"]))
                assert_parses("sarif", sarif.read_text(encoding="utf-8"), "upload-sarif input")
                context["uploaded"] = "true"
            continue
        if step["name"] == "Install policylint":
            continue  # the environment running the tests has installed this checkout
        assert step["shell"] == "bash"
        env = {k: _EXPR.sub(lambda m: evaluate(m.group(1), context), str(v)) for k, v in step.get("env", {}).items()}
        output = tmp_path / f"output-{step['name']}"
        env.update({"GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary)})
        done = bash(step["run"], repo, env)
        assert "Traceback" not in done.stderr
        if step.get("id") == "check":
            assert_parses("github", done.stdout, "annotations")
        if step["name"] == "Verdict":
            verdict = done.returncode
        else:
            assert done.returncode == 0, done.stdout + done.stderr
        if output.exists():
            for line in output.read_text(encoding="utf-8").splitlines():
                key, _, value = line.partition("=")
                context[f"steps.{step['id']}.outputs.{key}"] = value
    outputs = {k.rsplit(".", 1)[1]: v for k, v in context.items() if k.startswith("steps.check.outputs.")}
    outputs["uploaded"] = context.get("uploaded", "false")
    return verdict, outputs, summary


def test_action_has_the_inputs_a_workflow_needs() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert {"paths", "config", "fail-on", "upload-sarif", "base"} <= set(ACTION["inputs"])
    assert ACTION["inputs"]["upload-sarif"]["default"] == "true"


@pytest.mark.realtool
@pytest.mark.parametrize(
    ("example", "inputs", "expected"),
    [
        pytest.param("good", {}, 0, id="clean"),
        pytest.param("bad", {}, 1, id="findings"),
        pytest.param("bad", {"fail-on": "error", "upload-sarif": "false"}, 1, id="fail-on-error-no-upload"),
        pytest.param("bad", {"paths": "proposals", "summary": "false"}, 1, id="one-folder"),
        pytest.param("good", {"config": "missing.yaml"}, 2, id="bad-config"),
    ],
)
def test_action_steps(tmp_path: Path, example: str, inputs: dict[str, str], expected: int) -> None:
    repo = repository(tmp_path, example)
    verdict, outputs, summary = run_action(repo, tmp_path, inputs)
    assert verdict == expected
    assert outputs["exit-code"] == str(expected)
    if expected == 2:
        assert outputs["uploaded"] == "false" and not summary.exists()
        return
    assert outputs["uploaded"] == inputs.get("upload-sarif", "true")
    if inputs.get("summary", "true") == "true":
        assert summary.read_text(encoding="utf-8").startswith("## policylint\n")
    else:
        assert not summary.exists()


def test_readme_action_example_uses_real_inputs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", readme, re.S) if "policylint/policylint@" in b]
    steps = [s for b in blocks if isinstance(b, dict) and "jobs" in b for j in b["jobs"].values() for s in j["steps"]]
    (action,) = [s for s in steps if s.get("uses", "").startswith("policylint/policylint@")]
    assert set(action["with"]) <= set(ACTION["inputs"])


# --- the CI recipes judge the change, not only the state -----------------------------------


def changed_repository(tmp_path: Path, raise_capacity: bool) -> tuple[Path, str]:
    """examples/good on `main` (also known as origin/main), then a branch that raises a pool or not.

    Returns the repository and the base commit. Raising prod-east/batch from 20 to 22
    reserved GPUs without touching a measurement is capacity creep (PL950); the same
    branch editing only a comment is a sound change.
    """
    repo = tmp_path / "capacity"
    shutil.copytree(REPO / "examples" / "good", repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "capacity plans")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "feature")
    cluster = repo / "clusters" / "prod-east.yaml"
    text = cluster.read_text(encoding="utf-8")
    old = "      reservedGpus: 20\n"
    assert text.count(old) == 1
    new = "      reservedGpus: 22\n" if raise_capacity else "      reservedGpus: 20  # reviewed\n"
    cluster.write_text(text.replace(old, new), encoding="utf-8")
    git(repo, "commit", "-q", "-am", "change the batch pool")
    return repo, base


def check_steps(script_lines: list[str], repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the recipe lines that call `policylint check`; return the check's result."""
    (line,) = [s for s in script_lines if "policylint check" in s]
    return bash(line, repo, env)


@pytest.mark.realtool
@pytest.mark.parametrize(("raise_capacity", "expected"), [(True, 1), (False, 0)], ids=["creep", "sound"])
def test_github_workflow_judges_the_pull_request(tmp_path: Path, raise_capacity: bool, expected: int) -> None:
    repo, _ = changed_repository(tmp_path, raise_capacity)
    (job,) = GITHUB_WORKFLOW["jobs"].values()
    done = check_steps([s["run"] for s in job["steps"] if "run" in s], repo, {"GITHUB_BASE_REF": "main"})
    assert done.returncode == expected, done.stdout + done.stderr
    assert ("PL950" in done.stdout) == raise_capacity
    assert (job["steps"][0].get("with") or {}).get("fetch-depth") == 0


@pytest.mark.realtool
def test_github_workflow_says_when_it_cannot_judge_the_change(tmp_path: Path) -> None:
    repo, _ = changed_repository(tmp_path, True)
    git(repo, "update-ref", "-d", "refs/remotes/origin/main")  # a shallow clone: no base in reach
    (job,) = GITHUB_WORKFLOW["jobs"].values()
    done = check_steps([s["run"] for s in job["steps"] if "run" in s], repo, {"GITHUB_BASE_REF": "main"})
    assert "::warning::policylint: no merge base with origin/main" in done.stdout
    assert done.returncode == 0  # the state alone is clean; the warning says the change was not judged


@pytest.mark.realtool
@pytest.mark.parametrize(("raise_capacity", "expected"), [(True, 1), (False, 0)], ids=["creep", "sound"])
def test_gitlab_job_judges_the_merge_request(tmp_path: Path, raise_capacity: bool, expected: int) -> None:
    repo, base = changed_repository(tmp_path, raise_capacity)
    assert GITLAB_JOB["variables"]["GIT_DEPTH"] == "0"
    env = {"GITLAB_CI": "true", "CI_MERGE_REQUEST_DIFF_BASE_SHA": base}
    done = check_steps(GITLAB_JOB["script"], repo, env)
    assert done.returncode == expected, done.stdout + done.stderr
    assert ("PL950" in done.stdout) == raise_capacity


@pytest.mark.realtool
@pytest.mark.parametrize("how", ["base-input", "pull-request-base-ref"])
@pytest.mark.parametrize(("raise_capacity", "expected"), [(True, 1), (False, 0)], ids=["creep", "sound"])
def test_action_judges_the_change(tmp_path: Path, how: str, raise_capacity: bool, expected: int) -> None:
    repo, base = changed_repository(tmp_path, raise_capacity)
    inputs = {"base": base} if how == "base-input" else {}
    context_ref = {"github.base_ref": "main"} if how != "base-input" else {}
    verdict, outputs, _ = run_action(repo, tmp_path, inputs, context_ref)
    assert verdict == expected
    assert outputs["exit-code"] == str(expected)


def test_the_github_recipes_keep_the_folder_policylint_uses_as_its_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache step of the workflow and of the action keeps the folder a runner's policylint writes to.

    A runner sets neither ``POLICYLINT_CACHE_DIR`` nor ``XDG_CACHE_HOME``: policylint then
    uses the user cache folder under the home, which is what ``~/.cache/policylint`` must name.
    """
    from policylint.cache.store import default_dir

    home = "/home/runner"
    monkeypatch.setenv("HOME", home)
    for name in ("POLICYLINT_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    (job,) = GITHUB_WORKFLOW["jobs"].values()
    steps = {"workflow": job["steps"], "action": ACTION["runs"]["steps"]}
    for where, listed in steps.items():
        (kept,) = [s for s in listed if s.get("uses", "").startswith("actions/cache@")]
        assert kept["with"]["path"].replace("~", home, 1) == str(default_dir()), where
        assert "github.sha" in kept["with"]["key"] and kept["with"]["restore-keys"], where
    (kept,) = [s for s in ACTION["runs"]["steps"] if s.get("uses", "").startswith("actions/cache@")]
    assert kept["if"] == "inputs.cache == 'true'" and ACTION["inputs"]["cache"]["default"] == "true"
