"""Real programs the suite drives (Prometheus, promtool, Chromium): found or installed.

Tests that talk to a server or a browser use the real program, never a stand-in. When
the program is missing, it is installed from the distribution's packages (the suite runs
as root in CI); only when that is impossible does the test skip, and the skip says why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

import pytest

_LOCK = threading.Lock()
_TRIED: dict[str, str] = {}


def _install(packages: tuple[str, ...]) -> str:
    """Install ``packages`` with apt-get; return '' on success, else the reason it failed."""
    if shutil.which("apt-get") is None:
        return "apt-get is not available to install it"
    if os.geteuid() != 0:
        return "installing it needs root (apt-get)"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            return f"`{' '.join(cmd)}` failed: {tail[0]}"
    return ""


def require(command: str, *packages: str) -> str:
    """Return the path of ``command``, installing ``packages`` first when it is missing.

    Skips the calling test with the reason when the program cannot be had.
    """
    found = shutil.which(command)
    if found:
        return found
    key = " ".join(packages)
    with _LOCK:
        if key not in _TRIED:
            _TRIED[key] = _install(packages)
    found = shutil.which(command)
    if found:
        return found
    pytest.skip(f"{command} is not installed and could not be installed: {_TRIED[key] or 'not on PATH after install'}")
    raise AssertionError("unreachable")
