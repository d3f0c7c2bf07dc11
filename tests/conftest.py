"""Shared test helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


@pytest.fixture(autouse=True)
def _no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic plain output in every test."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("POLICYLINT_DEBUG", raising=False)


def run_cli(args: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
    """Run the real entry point in-process; return (exit code, stdout, stderr)."""
    import contextlib
    import io

    from policylint.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:  # argparse usage errors
                code = int(exc.code or 0)
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()
