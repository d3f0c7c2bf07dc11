"""Every command and every option, once, through the installed ``policylint`` program.

The suite runs against the installed wheel (``.ci/run``); this module drives the
console script that installation put next to the interpreter, as a user's shell
or pre-commit would, in a separate process. Each invocation must end with an exit
code it may have and never with an internal error. ``test_every_option_is_smoked``
walks the real argument parsers, so a new option without a smoke invocation fails.

The last test is a real pre-commit round trip with a hook configured
``args: [--fix]``: pre-commit installs this checkout into its own environment
(a wheel build) and runs it on a staged over-reservation.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, git

#: The console script of the installation under test.
PROGRAM = Path(sys.executable).parent / "policylint"
NOW = ("--now", "2026-12-01")


def _series(path: Path) -> Path:
    """Three days of one-minute samples: a daily wave over a floor of 4."""
    lines = ["timestamp,value"]
    start = 1_788_134_400
    for i in range(3 * 1440):
        lines.append(f"{start + 60 * i},{4 + (i % 1440) // 180}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _long(path: Path) -> Path:
    """Two pods in one long table."""
    lines = ["ts,pod,running"]
    start = 1_788_134_400
    for i in range(600):
        lines.append(f"{start + 60 * i},a,{1 + i % 3}")
        lines.append(f"{start + 60 * i},b,{2 + i % 2}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _jobs(path: Path) -> Path:
    """A job list with relative times in milliseconds, a phase and a GPU count."""
    lines = ["begin,finish,took,phase,ngpu"]
    for i in range(200):
        begin = i * 300_000
        lines.append(f"{begin},{begin + 900_000},{900_000},{'Failed' if i % 17 == 0 else 'Succeeded'},{1 + i % 4}")
    lines.append("60000000,,900000,Running,2")  # incomplete: no end
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _prometheus(path: Path) -> Path:
    """A Prometheus range answer with two series."""
    start = 1_788_134_400
    result = [
        {"metric": {"job": job}, "values": [[start + 60 * i, str(k + i % 5)] for i in range(600)]}
        for k, job in enumerate(("serve", "batch"), start=1)
    ]
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}), encoding="utf-8")
    return path


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder holding a private copy of examples/good and examples/bad, small traces and an empty baseline."""
    root = tmp_path / "work"
    shutil.copytree(EXAMPLES / "good", root / "good")
    shutil.copytree(EXAMPLES / "bad", root / "bad")
    traces = root / "t"
    traces.mkdir()
    _series(traces / "series.csv")
    _long(traces / "long.csv")
    _jobs(traces / "jobs.csv")
    _prometheus(traces / "prom.json")
    (root / "cfg.yaml").write_text('now: "2026-12-01"\n', encoding="utf-8")
    (root / "bad-baseline.json").write_text('{"version": 1, "findings": []}\n', encoding="utf-8")
    (root / "rulesdir").mkdir()
    return root


#: (id, arguments, the exit codes it may end with). Paths are relative to the ``work`` folder.
SMOKE: list[tuple[str, list[str], set[int]]] = [
    ("version", ["--version"], {0}),
    ("help", ["--help"], {0}),
    *[(f"{c}-help", [c, "--help"], {0}) for c in (
        "check", "bands", "erlang", "rules", "rule", "baseline", "config", "schema", "export", "report", "pull",
        "init", "completion",
    )],
    ("check-good", ["check", "good", *NOW], {0}),
    ("check-bad", ["check", "bad", *NOW, "--format", "concise", "--statistics", "--no-show-source",
                   "--color", "never", "--fail-on", "warning"], {1}),
    ("check-options", ["check", "good", "--config", "cfg.yaml", "--root", ".", "--select", "PL1", "--extend-select",
                       "PL2", "--ignore", "PL107", "--rule-dir", "good/../rulesdir", "--format", "json",
                       "--output", "out.json", "--show-source", "--jobs", "1", "--no-cache", "--quiet"], {0, 1, 2}),
    ("check-isolated", ["check", "good", "--isolated", *NOW, "--output-format", "sarif", "--exit-zero", "-j", "2",
                        "-q"], {0}),
    ("check-baseline", ["check", "bad", *NOW, "--baseline", "bad-baseline.json"], {0, 1}),
    ("check-diff", ["check", "good", *NOW, "--diff", "HEAD"], {0, 2}),
    ("check-changed", ["check", "--changed-files", "good/clusters/prod-east.yaml", *NOW], {0}),
    ("check-fix-dry-run", ["check", "bad", *NOW, "--fix-dry-run"], {0, 1}),
    ("check-fix", ["check", "bad", *NOW, "--fix"], {0, 1}),
    ("check-unsafe-fixes", ["check", "bad", *NOW, "--fix", "--unsafe-fixes"], {0, 1}),
    ("check-add-noqa", ["check", "bad", *NOW, "--add-noqa", "-q"], {0, 1}),
    ("bands-series", ["bands", "t/series.csv", "--input-format", "csv", "--column", "value", "--timestamp-column",
                      "timestamp", "--timestamp-unit", "s", "--step", "60", "--max-gap-steps", "5", "--exclude",
                      "2026-09-01T10:00:00Z/2026-09-01T11:00:00Z", "--cold-start", "300", "--min-window-days", "1",
                      "--baseline-percentile", "5", "--daily-percentile", "90", "--outlier-mad", "6", "--tolerance",
                      "600", "--queue-statistic", "p99", "--capacity", "8", "--per-gpu", "2", "--gpus-per-replica",
                      "1", "--format", "json"], {0}),
    ("bands-long", ["bands", "t/long.csv", "--key-column", "pod", "--select", "a", "--min-window-days", "0",
                    "--format", "text"], {0}),
    ("bands-aggregate", ["bands", "t/long.csv", "--key-column", "pod", "--aggregate", "sum", "--min-window-days",
                         "0"], {0}),
    ("bands-jobs", ["bands", "t/jobs.csv", "--input-format", "jobs", "--start-column", "begin", "--end-column",
                    "finish", "--time-origin", "2026-09-01T00:00:00Z", "--timestamp-unit", "ms", "--where",
                    "phase!=Failed", "--skip-incomplete", "--unit", "gpus", "--gpus-column", "ngpu", "--step", "60",
                    "--min-window-days", "0"], {0}),
    ("bands-durations", ["bands", "t/jobs.csv", "--input-format", "requests", "--start-column", "begin",
                         "--duration-column", "took", "--duration-unit", "ms", "--time-origin",
                         "2026-09-01T00:00:00Z", "--step", "60", "--min-window-days", "0"], {0}),
    ("bands-prometheus", ["bands", "t/prom.json", "--match", "job=serve", "--min-window-days", "0"], {0}),
    ("bands-pool", ["bands", "--pool", "prod-east/serving", "good", "--min-window-days", "0"], {0, 1}),
    ("bands-plot", ["bands", "t/series.csv", "--min-window-days", "0", "--plot", "chart.svg"], {0}),
    ("erlang-servers", ["erlang", "--arrival-rate", "2", "--service-time", "3", "--servers", "8", "--format",
                        "json"], {0}),
    ("erlang-max-wait", ["erlang", "--arrival-rate", "2", "--service-time", "3", "--max-wait", "5"], {0}),
    ("rules", ["rules", "--format", "json", "--rule-dir", "rulesdir"], {0, 2}),
    ("rule", ["rule", "PL101", "--format", "markdown"], {0}),
    ("rule-dir", ["rule", "PL101", "--rule-dir", "rulesdir"], {0, 2}),
    ("baseline", ["baseline", "bad", *NOW, "--output", "bad-baseline.json"], {0}),
    ("baseline-options", ["baseline", "bad", "--config", "cfg.yaml", "--isolated", "--root", ".", "--select", "PL1",
                          "--extend-select", "PL8", "--ignore", "PL107", "--rule-dir", "rulesdir", "-o",
                          "b2.json"], {0, 2}),
    ("config", ["config", "good", "--config", "cfg.yaml"], {0}),
    ("config-isolated", ["config", "good", "--isolated"], {0}),
    ("schema", ["schema", "cluster"], {0}),
    ("schema-write", ["schema", "--write", "schemas-out"], {0}),
    ("export-kueue", ["export", "kueue", "good", *NOW, "--config", "cfg.yaml", "--root", "good"], {0}),
    ("export-volcano", ["export", "volcano", "good", *NOW, "--isolated", "--output", "volcano-out"], {0}),
    ("export-errors", ["export", "kueue", "bad", *NOW], {1}),
    ("export-update", ["export", "kueue", "good", *NOW, "-o", "kueue-new", "--update", "kueue-existing",
                       "--dry-run"], {0}),
    ("report", ["report", "good", *NOW, "--html", "review.html", "--title", "Review", "--config", "cfg.yaml",
                "--root", ".", "--select", "PL1", "--extend-select", "PL8", "--ignore", "PL107", "--rule-dir",
                "rulesdir", "--fail-on", "error", "--baseline", "bad-baseline.json", "--no-cache", "-j", "1"],
     {0, 1, 2}),
    ("report-isolated", ["report", "bad", *NOW, "--html", "bad.html", "--isolated", "--exit-zero", "--jobs", "1"],
     {0}),
    ("report-diff", ["report", "good", *NOW, "--html", "diff.html", "--diff", "HEAD"], {0, 2}),
    ("report-plan", ["report", "bad", *NOW, "--html", "plan.html", "--plan"], {1}),
    ("pull-dry-run", ["pull", "good", "--dry-run", "--url", "http://127.0.0.1:9", "--end", "2026-12-01",
                      "--workload", "chat-assistant", "--quiet", "--config", "cfg.yaml", "--isolated", "--root",
                      "."], {0, 1, 2}),
    ("pull-quiet", ["pull", "good", "--dry-run", "-q", "--deadline", "1h"], {0, 1, 2}),
    ("init", ["init", "fresh"], {0}),
    ("init-force", ["init", "fresh", "--force"], {0}),
    ("plan-help", ["plan", "--help"], {0}),
    ("plan", ["plan", "bad", *NOW, "--format", "json", "--output", "plan-out/clusters.yaml", "--repository",
              "plan-out/repository", "--kueue", "plan-out/kueue.yaml", "--volcano", "plan-out/volcano.yaml"], {0}),
    ("plan-what-if", ["plan", "good", *NOW, "--cold-start", "600", "--tolerance", "nightly-eval=3600", "--headroom",
                      "0.1", "--format", "markdown", "--config", "cfg.yaml", "--root", "good"], {0}),
    ("plan-isolated", ["plan", "good", "--isolated", "--format", "text"], {0}),
    ("plan-queues-by-tolerance", ["plan", "good", *NOW, "--size-queues-by-tolerance", "--format", "markdown"], {0}),
    ("plan-placement", ["plan", "good", *NOW, "--gpu", "H200-SXM-141GB=141", "--cluster", "planned"], {0}),
    ("completion-bash", ["completion", "bash"], {0}),
    ("completion-zsh", ["completion", "zsh"], {0}),
    ("completion-fish", ["completion", "fish"], {0}),
    ("server-help", ["server", "--help"], {0}),
    ("server-status", ["server", "status"], {0, 1}),
    # refused before anything starts: no server is left behind by the smoke run
    ("server-bad-idle", ["server", "start", "--idle-minutes", "0"], {2}),
]


def _run(work: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["NO_COLOR"] = "1"
    return subprocess.run([str(PROGRAM), *args], cwd=work, env=env, capture_output=True, text=True, timeout=300)


def test_the_program_is_the_installed_one() -> None:
    assert PROGRAM.is_file(), f"no console script next to {sys.executable}"
    first = PROGRAM.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    assert first.startswith("#!") and Path(first[2:].strip()).parent == Path(sys.executable).parent


@pytest.mark.realtool
@pytest.mark.parametrize(("args", "codes"), [pytest.param(a, c, id=i) for i, a, c in SMOKE])
def test_smoke(work: Path, args: list[str], codes: set[int]) -> None:
    if "--update" in args:  # manifests to update: the ones export writes today
        made = _run(work, ["export", "kueue", "good", *NOW, "--output", "kueue-existing"])
        assert made.returncode == 0, made.stderr
    done = _run(work, args)
    assert done.returncode in codes, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def _options(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    """Every long option of every subcommand, from the real parsers."""
    found: dict[str, set[str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = {
                    opt for a in sub._actions for opt in a.option_strings if opt.startswith("--") and opt != "--help"
                }
    return found


def test_every_option_is_smoked() -> None:
    from policylint.cli import build_parser

    used: dict[str, set[str]] = {}
    for _, args, _codes in SMOKE:
        if args and not args[0].startswith("-"):
            used.setdefault(args[0], set()).update(a for a in args[1:] if a.startswith("--"))
    missing = {
        command: sorted(options - used.get(command, set()))
        for command, options in _options(build_parser(every=True)).items()
        if options - used.get(command, set())
    }
    assert missing == {}


@pytest.mark.realtool
def test_fix_through_the_installed_program_converges(tmp_path: Path) -> None:
    """`check --fix` from the wheel rewrites the numbers, and the next check is clean for them."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "good", repo)
    cluster = repo / "clusters" / "prod-east.yaml"
    cluster.write_text(cluster.read_text(encoding="utf-8").replace("reservedGpus: 48", "reservedGpus: 80"), "utf-8")
    args = ["check", ".", *NOW, "--select", "PL101,PL102"]
    before = _run(repo, args)
    assert before.returncode == 1 and "PL101" in before.stdout, before.stdout + before.stderr
    fixed = _run(repo, [*args, "--fix"])
    assert "internal error" not in fixed.stderr, fixed.stderr
    # pooled baseline 53 less the 5 GPUs proposals/2027-q1-serving.yaml already asks for
    assert "reservedGpus: 48" in cluster.read_text(encoding="utf-8")
    after = _run(repo, args)
    assert after.returncode == 0, after.stdout + after.stderr


def _hook_repository(where: Path) -> Path:
    """This checkout's tree as a one-commit git repository pre-commit can install (uncommitted edits included)."""
    source = where / "policylint-src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", ".pre-commit-hooks.yaml", "policylint", "rules", "schemas"):
        item = REPO / name
        if item.is_dir():
            shutil.copytree(item, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(item, source / name)
    git(source, "init", "-q")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "policylint under test")
    return source


@pytest.mark.realtool
def test_pre_commit_round_trip_with_fix(tmp_path: Path) -> None:
    """A hook with ``args: [--fix]``: the staged over-reservation is fixed, and the next commit passes."""
    source = _hook_repository(tmp_path)
    rev = git(source, "rev-parse", "HEAD").strip()
    repo = tmp_path / "capacity"
    shutil.copytree(EXAMPLES / "good", repo)
    # PL101 and PL102 together: the reservation and the capacity above it are fixed as one (safe) group
    (repo / ".policylint.yaml").write_text('now: "2026-12-01"\nselect: [PL0, PL101, PL102]\nrules: {PL977: {accept: "select=PL0,PL101,PL102"}}\n', encoding="utf-8")
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {source}\n    rev: {rev}\n    hooks:\n      - id: policylint\n        args: [--fix]\n",
        encoding="utf-8",
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "capacity plans")
    cluster = repo / "clusters" / "prod-east.yaml"
    cluster.write_text(cluster.read_text(encoding="utf-8").replace("reservedGpus: 48", "reservedGpus: 80"), "utf-8")
    git(repo, "add", "clusters/prod-east.yaml")

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    command = [sys.executable, "-m", "pre_commit", "run", "--color", "never"]
    first = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "internal error" not in first.stdout, first.stdout
    assert "files were modified by this hook" in first.stdout, first.stdout
    assert "reservedGpus: 48" in cluster.read_text(encoding="utf-8")  # 53 less the 5 proposed

    git(repo, "add", "clusters/prod-east.yaml")
    second = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Passed" in second.stdout
