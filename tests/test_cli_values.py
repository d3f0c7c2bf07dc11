"""Option values the parser must refuse itself, for every option of every command.

The options are read from the parser (``build_parser(every=True)``), not from a
list kept by hand, so an option added later is covered the day it is added.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from conftest import run_cli

from policylint import cli


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser(every=True)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("the parser has no subcommands")


def _value_options() -> list[tuple[str, str]]:
    """(command, long option) for every option that takes a value."""
    found = []
    for command, sub in _subcommands().items():
        for action in sub._actions:
            if not action.option_strings or action.nargs == 0:
                continue
            found.append((command, max(action.option_strings, key=len)))
    return found


OPTIONS = _value_options()


def _shown(command: str, option: str) -> str:
    """How argparse names the option in its messages: every spelling, as declared (``--jobs/-j``)."""
    for action in _subcommands()[command]._actions:
        if option in action.option_strings:
            return "/".join(action.option_strings)
    raise AssertionError(option)


def test_the_enumeration_sees_the_options_of_every_command() -> None:
    commands = {command for command, _ in OPTIONS}
    # every command the issue named, read from the parser rather than listed by hand
    assert {"check", "report", "baseline", "pull", "export", "schema"} <= commands
    assert ("check", "--config") in OPTIONS
    assert len(OPTIONS) >= 17


@pytest.mark.parametrize(("command", "option"), OPTIONS, ids=[f"{c} {o}" for c, o in OPTIONS])
def test_double_dash_as_an_option_value_is_a_usage_error(command: str, option: str, tmp_path: Path) -> None:
    code, out, err = run_cli([command, f"{option}=--"], cwd=tmp_path)
    assert code == 2
    assert out == ""
    assert err.startswith(f"usage: policylint {command} ")
    assert err.endswith(f"policylint {command}: error: argument {_shown(command, option)}: expected one argument\n")
    assert "internal error" not in err
    assert list(tmp_path.iterdir()) == []  # refused before anything ran


@pytest.mark.parametrize(("command", "option"), OPTIONS[:: max(1, len(OPTIONS) // 8)])
def test_double_dash_after_the_option_is_also_refused(command: str, option: str, tmp_path: Path) -> None:
    code, _, err = run_cli([command, option, "--"], cwd=tmp_path)
    assert code == 2
    assert err.endswith(f"policylint {command}: error: argument {_shown(command, option)}: expected one argument\n")


def test_a_value_that_is_not_double_dash_still_reaches_the_command(tmp_path: Path) -> None:
    # the guard only catches the swallowed "--"; "--config=-x" is a file name like any other
    code, out, err = run_cli(["config", "--config=-x"], cwd=tmp_path)
    assert code == 2
    assert "internal error" not in err
    assert err.startswith("policylint: error: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(("command", "option"), OPTIONS[:: max(1, len(OPTIONS) // 8)])
def test_a_nul_in_an_option_value_is_a_usage_error(command: str, option: str, tmp_path: Path) -> None:
    # no shell can pass one, but main() can be called with it, and path functions raise on it
    code, out, err = run_cli([command, f"{option}=a\x00b"], cwd=tmp_path)
    assert code == 2
    assert out == ""
    assert err.endswith(f"policylint {command}: error: argument {_shown(command, option)}: a value cannot contain a NUL character\n")
    assert "\x00" not in err


def test_a_nul_in_a_path_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run_cli(["check", "a\x00b"], cwd=tmp_path)
    assert code == 2
    assert err.endswith("policylint check: error: argument PATH: a value cannot contain a NUL character\n")


def test_argparse_messages_echo_control_characters_escaped(tmp_path: Path) -> None:
    code, out, err = run_cli(["check", "--no-such-option=x\x1b[2Jy"], cwd=tmp_path)
    assert code == 2
    assert out == ""
    assert "\x1b" not in err
    assert err.endswith("policylint: error: unrecognized arguments: --no-such-option=x\\x1b[2Jy\n")
