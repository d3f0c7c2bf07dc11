"""Real programs the suite drives (Prometheus, promtool, Chromium, zsh, fish): found, never installed.

Tests that talk to a server, a browser or a shell use the real program, never a
stand-in. The suite never changes the machine: ``.ci/tools`` installs the programs
from the distribution's packages before pytest starts (``.ci/run`` runs it, as
the README's test command does). Inside the suite a missing program is:

* a **failure** when ``CI`` is set - a gate that skips what it cannot run is no gate;
* a **skip with its reason** on a developer's machine without it, naming the
  package that brings it and the script that installs it.
"""

from __future__ import annotations

import os
import shutil

import pytest

#: The Debian packages that bring each program (what ``.ci/tools`` installs).
PACKAGES = {
    "chromium": "chromium",
    "chromedriver": "chromium-driver",
    "prometheus": "prometheus",
    "promtool": "prometheus",
    "zsh": "zsh",
    "fish": "fish",
}


def in_ci() -> bool:
    """True when the suite runs as a CI gate (``CI`` set to anything but empty/false/0)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(command: str) -> str:
    """Return the path of the program ``command``; fail in CI, skip elsewhere, when it is missing."""
    found = shutil.which(command)
    if found:
        return found
    package = PACKAGES.get(command, command)
    reason = f"{command} is not installed (Debian package {package}; `bash .ci/tools` installs it)"
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
    raise AssertionError("unreachable")
