"""How the ``policylint`` command ends (:func:`policylint.cli.leave`): as ``sys.exit(main())`` would, without the teardown.

Each case runs the console entry in a fresh interpreter beside the same
command ended by ``sys.exit(main())``, the way it ended before, and compares
what a caller sees: the exit code and every byte written.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES

#: the console entry (what the installed ``policylint`` script runs)
ENTRY = "from policylint.cli import console_main\nconsole_main()\n"
#: the same command ended by the interpreter's own exit
PLAIN_EXIT = "import sys\nfrom policylint.cli import main, quiet_blas\nquiet_blas()\nsys.exit(main())\n"


def _run(code: str, args: list[str], cwd: Path, **kw: object) -> subprocess.CompletedProcess[bytes]:
    prelude = f"import sys\nsys.argv = ['policylint', *{args!r}]\n"
    return subprocess.run([sys.executable, "-c", prelude + code], cwd=cwd, capture_output=True, timeout=300, **kw)  # type: ignore[call-overload,no-any-return]


#: commands run in ``examples/`` whose every outcome a caller sees is compared (here and in test_resident)
COMPARED = {
    "clean": ["check", "good"],
    "findings": ["check", "bad"],
    "json": ["check", "bad", "--format", "json"],
    "sarif": ["check", "bad", "--format", "sarif"],
    "github": ["check", "bad", "--no-cache", "--format", "github"],
    "missing-path": ["check", "no-such-folder"],
    "usage": ["check", "--no-such-option"],
    "rules": ["rules"],
    "version": ["--version"],
}


@pytest.mark.parametrize("args", list(COMPARED.values()), ids=list(COMPARED))
def test_the_entry_ends_as_sys_exit_did(args: list[str], tmp_path: Path) -> None:
    fast = _run(ENTRY, args, EXAMPLES)
    plain = _run(PLAIN_EXIT, args, EXAMPLES)
    assert (fast.returncode, fast.stdout, fast.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert fast.returncode in (0, 1, 2)
    if "json" in args:
        assert fast.stdout.rstrip().endswith(b"}")  # the whole report, flushed before the end


def test_exit_handlers_run_once_before_the_end(tmp_path: Path) -> None:
    handler = "import atexit\natexit.register(lambda: print('handler ran', flush=True))\n"
    done = _run(handler + ENTRY, ["check", "good"], EXAMPLES)
    assert done.returncode == 0
    assert done.stdout.count(b"handler ran") == 1
    assert done.stdout.index(b"All checks passed") < done.stdout.index(b"handler ran")


def test_a_running_thread_is_waited_for(tmp_path: Path) -> None:
    """The interpreter waits for a thread that is not a daemon: so does the command."""
    thread = (
        "import threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(1.0), print('thread done', flush=True))).start()\n"
    )
    done = _run(thread + ENTRY, ["--version"], EXAMPLES)
    assert done.returncode == 0
    assert b"thread done" in done.stdout


def test_a_closed_output_pipe_ends_as_it_did(tmp_path: Path) -> None:
    """Output to a pipe nobody reads any more: the same code and message as the interpreter's exit."""
    outcomes = []
    for code in (ENTRY, PLAIN_EXIT):
        prelude = "import sys\nsys.argv = ['policylint', 'check', 'bad', '--format', 'json']\n"
        with subprocess.Popen(
            [sys.executable, "-c", prelude + code], cwd=EXAMPLES, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.close()  # before the command writes: its first write meets a closed pipe
            err = proc.stderr.read()
            outcomes.append((proc.wait(timeout=300), err))
    assert outcomes[0] == outcomes[1]


def test_the_module_entry_ends_alike(tmp_path: Path) -> None:
    fast = subprocess.run([sys.executable, "-m", "policylint", "check", "bad"], cwd=EXAMPLES, capture_output=True, timeout=300)
    plain = _run(PLAIN_EXIT, ["check", "bad"], EXAMPLES)
    assert (fast.returncode, fast.stdout, fast.stderr) == (plain.returncode, plain.stdout, plain.stderr) and fast.returncode == 1
