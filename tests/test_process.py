"""The process settings a run makes (policylint.cli.prepare_process)."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap


def test_a_run_has_no_automatic_collector_and_the_same_output() -> None:
    """A run does without the cyclic collector (it frees almost nothing before it ends)."""
    script = textwrap.dedent(
        """
        import gc
        from policylint.cli import prepare_process
        assert gc.isenabled()
        prepare_process()
        print(gc.isenabled(), gc.get_threshold())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[0] == "False (100000, 50, 1000)"


def test_the_collector_is_restored_for_the_suite() -> None:
    # the suite's own process keeps its collector: prepare_process is a run's, never an import's
    assert gc.isenabled()
