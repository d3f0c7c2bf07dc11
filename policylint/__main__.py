"""Allow ``python -m policylint``: the same entry point as the ``policylint`` command."""

from __future__ import annotations

from policylint.cli import console_main

console_main()
