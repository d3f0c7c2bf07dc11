"""Start-up and shell completion: what the entry point imports, and the scripts it prints.

``--version`` and ``--help`` must not import command modules they do not run
(measured by ``benchmarks/bench_startup.py``; here only the imports are checked,
never a duration).
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from conftest import run_cli
from realtools import require
from policylint.cli import COMMANDS


def imported_after(args: list[str]) -> set[str]:
    code = (
        "import contextlib, io, sys\n"
        "from policylint.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    try:\n"
        f"        main({args!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(done.stdout.split())


@pytest.mark.parametrize("args", [["--version"], ["--help"], []], ids=["version", "help", "nothing"])
def test_top_level_imports_no_command(args: list[str]) -> None:
    modules = imported_after(args)
    assert not {m for m in modules if m.startswith("policylint.commands.")}
    assert not modules & {"numpy", "rich", "yaml", "jsonschema", "cerberus", "git"}


def test_a_command_imports_only_itself() -> None:
    modules = imported_after(["rule", "--help"])
    assert {m for m in modules if m.startswith("policylint.commands.")} == {"policylint.commands.rule"}


def test_help_lists_every_command_with_its_own_help() -> None:
    code, out, _ = run_cli(["--help"])
    assert code == 0
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(f"policylint.commands.{module_name}")
        assert module.HELP == help_text, name  # the table in cli.py mirrors each module
        assert name in out


def test_version() -> None:
    from policylint import __version__

    assert run_cli(["--version"]) == (0, f"policylint {__version__}\n", "")


def test_unknown_command_is_a_usage_error() -> None:
    code, _, err = run_cli(["chek"])
    assert code == 2 and "invalid choice: 'chek'" in err


def test_report_formats_agree() -> None:
    from policylint.commands.check import FORMATS as CLI_FORMATS
    from policylint.report import FORMATS

    assert CLI_FORMATS == FORMATS
    for fmt in FORMATS:
        importlib.import_module(f"policylint.report.{fmt}_report")


# --- completion -------------------------------------------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_names_every_command_and_check_option(shell: str) -> None:
    code, out, err = run_cli(["completion", shell])
    assert (code, err) == (0, "")
    for name in COMMANDS:
        assert name in out
    for option in ("--format", "--output-format", "--show-source", "--statistics", "gitlab", "concise"):
        assert option.lstrip("-") in out


def bash_complete(script: str, *words: str) -> list[str]:
    program = (
        f"{script}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        "_policylint; printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    done = subprocess.run(["bash", "-c", program], check=True, capture_output=True, text=True, cwd="/")
    return done.stdout.split()


def test_bash_completion_works() -> None:
    script = run_cli(["completion", "bash"])[1]
    subprocess.run(["bash", "-n"], input=script, check=True, text=True)
    assert bash_complete(script, "policylint", "ch") == ["check"]
    assert bash_complete(script, "policylint", "check", "--format", "gi") == ["github", "gitlab"]
    assert bash_complete(script, "policylint", "rules", "--format", "") == ["text", "json", "markdown"]
    assert bash_complete(script, "policylint", "check", "--no-show") == ["--no-show-source"]
    assert bash_complete(script, "policylint", "completion", "z")[0] == "zsh"


@pytest.mark.realtool
@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_other_shells_parse(shell: str) -> None:
    program = require(shell)
    script = run_cli(["completion", shell])[1]
    flag = "-n" if shell == "zsh" else "--no-execute"
    subprocess.run([program, flag], input=script, check=True, text=True)


def test_unknown_shell_is_a_usage_error() -> None:
    code, _, err = run_cli(["completion", "tcsh"])
    assert code == 2 and "invalid choice: 'tcsh'" in err


def test_rule_links_point_at_the_rule_reference_sections() -> None:
    """help URIs (SARIF, markdown, `rules --format json`) open the rule's section of docs/rules.md."""
    from conftest import REPO
    from policylint.resources import rules_dir
    from policylint.engine.ruleset import load_rules

    reference = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    for rule in load_rules([rules_dir()]).rules.values():
        page, _, anchor = rule.help_uri.partition("#")
        assert page == "https://github.com/policylint/policylint/blob/main/docs/rules.md"
        assert f"\n## {rule.code} {rule.name}\n" in reference and anchor == f"{rule.code.lower()}-{rule.name}"


def _blas_threads_seen(env_value: str | None) -> str:
    """OPENBLAS_NUM_THREADS as the process running ``policylint check`` had it when numpy came in."""
    import os

    code = (
        "import os, sys\n"
        "from policylint import cli\n"
        "seen = []\n"
        "real_main = cli.main\n"
        "def main(argv=None):\n"
        "    import numpy  # noqa: F401 - what a check imports; the setting must be in place by now\n"
        "    seen.append(os.environ.get('OPENBLAS_NUM_THREADS', '<unset>'))\n"
        "    print(seen[0])  # the entry flushes it as it ends the process (cli.leave)\n"
        "    return 0\n"
        "cli.main = main\n"
        "cli.console_main()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
    return done.stdout.strip()


def test_entry_point_starts_blas_with_one_thread() -> None:
    # policylint runs no matrix products; OpenBLAS threads only cost start-up CPU
    assert _blas_threads_seen(None) == "1"


def test_entry_point_keeps_the_users_blas_thread_count() -> None:
    assert _blas_threads_seen("3") == "3"


def test_blas_setting_left_alone_once_numpy_is_in() -> None:
    import os

    code = (
        "import numpy, os\n"
        "from policylint.cli import quiet_blas\n"
        "quiet_blas()\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS', '<unset>'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "<unset>"  # too late to matter, so not pretended
