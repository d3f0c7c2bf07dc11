"""Fuzz target for the command line (issue 22).

* ``cli`` - ``policylint.cli.main`` on random argument vectors: a command (or a
  word that is none), then options of that command read from the parser itself
  (so a new option is fuzzed the day it exists), each written ``--opt=VALUE`` or
  ``--opt VALUE``, with values drawn from the ones that broke parsers before
  (``--``, ``-``, the empty string, a NUL, a newline, an escape sequence, a
  number far out of range, a path outside the folder, a long word), mixed with
  stray words and ``--``. Runs in a small copy of ``examples/good``.

The contract: exit 0, 1 or 2, never an internal error or a traceback, and no
raw control character in what is printed (a value is echoed escaped). Commands
that would reach the network (``pull``) or write outside the scratch folder are
run with ``--dry-run`` or left out.
"""

from __future__ import annotations

import argparse
import json
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from targets import EXAMPLES, ContractViolation, Target, _cli, _workdir

#: Values that broke (or could break) option parsing and the commands behind it.
VALUES = (
    "--", "-", "", "-1", "0", "1", "2", "999999999999999999999", "1e309", "nan", "-inf", "0.5",
    "\x00", "a\x00b", "a\nb", "\r", "\x1b[31m", "\x1b]0;x\x07", "\u202e", "\udcff",
    "..", "../../outside", "~", "x" * 300, "*", "[", "=", ",", ":", "/etc/passwd",
    "PL101", "PL9999", "ALL", "error", "warning", "info", "json", "sarif", "github", "json=out.json",
    "text=out.txt", "2026-12-01", "2026-13-45", "HEAD", "HEAD~999", "kueue", "volcano", "bash",
    "workload", "cluster", "prod-east", "prod-east/serving", "clusters/prod-east.yaml", ".",
)
#: Commands whose run would reach the network or write manifests are given these first.
SAFE_FIRST = {"pull": ["--dry-run"], "export": ["--dry-run"]}
#: Left out: ``init`` writes a repository (the writers' fuzz target covers it).
SKIPPED_COMMANDS = {"init"}
#: Options never drawn: a server to reach, and fixes that would change the copy for later inputs.
NEVER = {"--url", "--fix", "--unsafe-fixes"}
#: Absolute paths are made relative (see ``_contained``): ``schema --write /x`` or
#: ``--output /dev/zero`` must not touch the machine the fuzzer runs on.


@lru_cache(maxsize=1)
def _options() -> dict[str, list[tuple[str, bool]]]:
    """command -> [(option, takes a value)] read from the parser."""
    from policylint import cli

    parser = cli.build_parser(every=True)
    found: dict[str, list[tuple[str, bool]]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                if command in SKIPPED_COMMANDS:
                    continue
                opts = []
                for a in sub._actions:
                    if not a.option_strings or isinstance(a, argparse._HelpAction):
                        continue
                    name = max(a.option_strings, key=len)
                    if name not in NEVER:
                        opts.append((name, a.nargs != 0))
                found[command] = opts
    return found


def _repo() -> Path:
    # five levels down: no drawn value climbs out of the scratch folder ("../" four times
    # is the longest a 12-character text can say)
    folder = _workdir() / "cli" / "1" / "2" / "3" / "4" / "repo"
    if not folder.exists():
        shutil.copytree(EXAMPLES / "good", folder)
    return folder


def _contained(value: str) -> str:
    """``value``, made relative when it is an absolute path (also after ``FORMAT=``)."""
    if value.startswith(("/", "\\", "~")):
        return "./" + value.lstrip("/\\")
    if "=" in value:
        head, _, tail = value.partition("=")
        return f"{head}={_contained(tail)}" if tail else value
    return value


def _encoded(words: list[str]) -> tuple[str, bytes]:
    """An argument vector as the runner stores a failing input: JSON (lone surrogates escaped)."""
    return ("argv", json.dumps(words).encode())


def _seeds() -> list[tuple[str, bytes]]:
    return [_encoded(words) for words in _SEED_WORDS]


_SEED_WORDS: list[list[str]] = [
        ["check", "--now", "2026-12-01", "."],
        ["check", "--format", "json", "--select", "PL101", "."],
        ["bands", "measurements/traces/reranker.csv"],
        ["rules"],
        ["rule", "PL101"],
        ["config"],
        ["schema", "workload"],
        ["baseline", "--output", "baseline.json", "."],
        ["erlang", "--help"],
        ["--version"],
]


def _strategy(seeds: list[tuple[str, bytes]]) -> st.SearchStrategy[tuple[str, bytes]]:
    options = _options()
    commands = sorted(options)

    @st.composite
    def argv(draw: Any) -> list[str]:
        if draw(st.integers(0, 9)) == 0:
            return list(draw(st.sampled_from(_SEED_WORDS)))
        command = draw(st.sampled_from([*commands, "nonsense", "--help", "-"]))
        words = [command, *SAFE_FIRST.get(command, [])]
        value = st.one_of(st.sampled_from(VALUES), st.text(max_size=12)).map(_contained)
        for _ in range(draw(st.integers(0, 5))):
            choice = draw(st.integers(0, 9))
            if choice <= 6 and options.get(command):
                name, takes = draw(st.sampled_from(options[command]))
                if not takes:
                    words.append(name)
                elif draw(st.booleans()):
                    words.append(f"{name}={draw(value)}")
                else:
                    words += [name, draw(value)]
            elif choice == 7:
                words.append("--")
            else:
                words.append(draw(value))
        return words if command not in SKIPPED_COMMANDS else ["rules"]

    return argv().map(_encoded)


def run_cli(item: tuple[str, bytes]) -> None:
    words = json.loads(item[1])
    repo = _repo()
    code, out, err = _cli(words, cwd=repo)
    if code not in (0, 1, 2):
        raise ContractViolation(f"exit code {code} for {words!r}; stderr: {err[:500]!r}")
    if "internal error" in err or "Traceback" in err:
        raise ContractViolation(f"internal error for {words!r}: {err[:1000]!r}")
    for stream, text in (("stdout", out), ("stderr", err)):
        for bad in ("\x1b", "\x00", "\x07", "\u202e"):
            if bad in text:
                raise ContractViolation(f"raw {bad!r} on {stream} for {words!r}: {text[:300]!r}")


TARGETS: dict[str, Target] = {
    "cli": Target("cli", _seeds, _strategy, run_cli),
}
