"""The package type-checks under mypy --strict (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO


@pytest.mark.realtool
def test_package_is_strictly_typed() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "policylint"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
