"""The resident server: a process that has imported policylint once, and forks a fresh run for each command.

A one-file pre-commit run in a repository of 1,000 workloads spends about 0.3 s
starting Python and importing numpy, PyYAML and policylint's own modules, as much
as the run itself. ``policylint server start`` leaves a process behind that has
done those imports; a ``policylint`` command started while it runs hands it its
arguments, working folder, environment, umask and its standard streams (the
file descriptors themselves, over a Unix socket), and the server forks a child
that runs the command exactly as the command would have run, writing to the
caller's streams, and hands back its exit code.

What makes a forked run the same run:

* **The same code and interpreter.** The socket is named by a fingerprint of
  everything that decides what the imports gave: the interpreter and its version,
  ``sys.path``, ``sys.flags``, the warning and ``-X`` options, the environment
  variables Python and numpy read at start-up (``PYTHON*``, locale,
  ``OPENBLAS_NUM_THREADS``), the size and modification time of every file of the
  installed package, and the modification time of every ``sys.path`` folder (an
  install or upgrade changes its folder). A command whose fingerprint differs finds
  no socket of that name and runs on its own.
* **A fresh state per run.** The server only imports modules (no run ever happens
  in it, so no in-process table holds anything of a run); each command runs in a
  child forked from it, which ends with the command.
* **The caller's process settings.** The child takes the caller's working folder,
  environment, umask, arguments and streams (encodings and buffering included)
  before the command starts.

Only the user who started a server can use it: its socket lies in a folder of
theirs that nobody else can enter (``$XDG_RUNTIME_DIR/policylint``, else
``<temp>/policylint-<uid>``, checked for its owner and mode), and each caller's
user id is checked (``SO_PEERCRED``). It stops after ``--idle-minutes`` without a
command, on ``policylint server stop``, or when killed. ``POLICYLINT_SERVER=off``
keeps a command from using one; ``POLICYLINT_SERVER=auto`` starts one in the
background when none answers (that command runs on its own). POSIX only.

This module is the caller's side, imported by every command; the server's side is
:mod:`policylint.resident_server`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

#: the protocol and layout of this module; part of the fingerprint
FORMAT = 1
#: the environment variable choosing how commands use a server: unset (use a running one), off, auto
ENV_VAR = "POLICYLINT_SERVER"
#: default minutes without a command after which a server stops
IDLE_MINUTES = 30.0
#: environment variables read at interpreter or numpy start-up: a caller must have the server's values
START_VARS = ("LANG", "LC_ALL", "LC_CTYPE", "OPENBLAS_NUM_THREADS")


def mode() -> str:
    """How this command uses a server: ``"use"`` (a running one), ``"off"`` or ``"auto"``."""
    value = os.environ.get(ENV_VAR, "").strip().lower()
    return value if value in ("off", "auto") else "use"


def folder() -> str | None:
    """Where this user's sockets go (None off POSIX); :func:`private_folder` checks that it is theirs alone."""
    if os.name != "posix" or not hasattr(os, "getuid"):
        return None
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(base, "policylint" if os.environ.get("XDG_RUNTIME_DIR") else f"policylint-{os.getuid()}")


def private_folder(create: bool) -> str | None:
    """:func:`folder`, created when asked (mode 0700); None unless it is a real folder of this user, closed to others."""
    import stat

    path = folder()
    if path is None:
        return None
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return path


def fingerprint() -> str:
    """What decides what the server's imports gave (see the module text), hashed."""
    import hashlib
    import json

    package = os.path.dirname(os.path.abspath(__file__))
    files = []
    for top, dirs, names in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            try:
                info = os.stat(os.path.join(top, name))
            except OSError:
                continue
            files.append([os.path.relpath(os.path.join(top, name), package), info.st_size, info.st_mtime_ns])
    folders = []
    # the script's folder or the working folder that ``python`` puts first is left out (the server
    # runs with -P, without it): where policylint itself comes from is fingerprinted by its files
    for entry in sys.path if sys.flags.safe_path else sys.path[1:]:
        try:
            folders.append([entry, os.stat(entry or ".").st_mtime_ns])
        except OSError:
            folders.append([entry, None])
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith("PYTHON") or k in START_VARS}
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # what every command starts numpy with unless told (cli.quiet_blas)
    state = {
        "format": FORMAT,
        "executable": sys.executable,
        "version": sys.version,
        "path": folders,
        "flags": {name: getattr(sys.flags, name) for name in dir(sys.flags)
                  if not name.startswith("_") and name not in ("safe_path", "count", "index", "n_fields",
                                                               "n_sequence_fields", "n_unnamed_fields")},
        "warnoptions": list(sys.warnoptions),
        "xoptions": sorted(map(str, sys._xoptions.items())),
        "env": env,
        "package": package,
        "files": files,
    }
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode("utf-8", "surrogateescape")).hexdigest()


def socket_path(place: str, print_: str) -> str:
    return os.path.join(place, f"{print_[:32]}.sock")


def finish() -> bool:
    """What an exit does that a run's output needs: the exit handlers (each once), then the standard streams flushed.

    False when a flush failed (a closed pipe). Callers end the process themselves
    afterwards (:func:`policylint.cli.leave`, a served run's child).
    """
    import atexit

    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_handlers is not None:
        run_handlers()  # an error in one is printed as at exit; the list is emptied
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except Exception:  # noqa: BLE001 - reported by the interpreter's own exit, where the caller falls back to it
        return False
    return True


# --------------------------------------------------------------------------- the caller's side


def _streams() -> list[list[Any]] | None:
    """(encoding, errors, line buffering, write-through) of stdin, stdout and stderr; None when one is missing."""
    out = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        if stream is None or not hasattr(stream, "encoding"):
            return None
        out.append([stream.encoding, stream.errors, bool(getattr(stream, "line_buffering", False)),
                    bool(getattr(stream, "write_through", False))])
    return out


#: the resource limits a caller's run keeps (``ulimit``): applied in the child, which can lower them only
LIMITS = ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_STACK", "RLIMIT_CORE")


def _limits() -> dict[str, list[int]]:
    """This process's resource limits of :data:`LIMITS` (soft, hard) by name."""
    import resource

    return {name: list(resource.getrlimit(getattr(resource, name))) for name in LIMITS if hasattr(resource, name)}


def run_resident(argv: list[str]) -> int | None:
    """Run this command in a matching server; its exit code, or None when no server takes it (run it here)."""
    chosen = mode()
    if chosen == "off":
        return None
    place = private_folder(create=False)
    if place is None or not os.listdir(place):
        if chosen == "auto":
            start_detached()
        return None
    path = socket_path(place, fingerprint())
    if not os.path.exists(path):
        if chosen == "auto":
            start_detached()
        return None
    return _ask(path, argv)


def _ask(path: str, argv: list[str]) -> int | None:
    import json
    import signal
    import socket

    streams = _streams()
    if streams is None:
        return None
    try:
        fds = [sys.stdin.fileno(), sys.stdout.fileno(), sys.stderr.fileno()]
        sys.stdout.flush()
        sys.stderr.flush()
        cwd = os.getcwd()  # a folder that is gone: the command says so on its own
    except (OSError, ValueError, AttributeError):
        return None
    umask = os.umask(0o022)
    os.umask(umask)
    request = json.dumps({"op": "run", "argv": argv, "cwd": cwd, "env": dict(os.environ), "umask": umask,
                          "streams": streams, "limits": _limits()}).encode("utf-8", "surrogateescape")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        socket.send_fds(conn, [len(request).to_bytes(4, "big") + request], fds)
        reader = conn.makefile("rb")
        first = reader.readline()
    except OSError:
        conn.close()
        return None  # a server that is gone or busy: this command runs here
    try:
        child = int(first[3:]) if first.startswith(b"ok ") else 0
    except ValueError:
        child = 0
    if child <= 0:
        conn.close()
        return None  # refused before anything ran

    def forward(signum: int, _frame: Any) -> None:
        try:
            os.kill(child, signum)
        except OSError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    try:
        last = reader.readline()
    finally:
        conn.close()
    if last.startswith(b"exit "):
        return int(last[5:])
    sys.stderr.write("policylint: error: the resident server's run ended without an exit code\n")
    return 2


def start_detached(idle_minutes: float = IDLE_MINUTES) -> int | None:
    """Start a server in the background (its own session, no terminal); its process id, or None when it cannot."""
    import subprocess

    if private_folder(create=True) is None:
        return None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "policylint.serve", "--idle-minutes", str(idle_minutes)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )
    except OSError:
        return None
    return proc.pid


def control(op: str, timeout: float = 5.0) -> str | None:
    """Send ``op`` (``ping`` or ``stop``) to this interpreter's server; its answer, or None when none answers."""
    import socket

    place = private_folder(create=False)
    if place is None:
        return None
    path = socket_path(place, fingerprint())
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(path)
        body = ('{"op": "%s"}' % op).encode()
        socket.send_fds(conn, [len(body).to_bytes(4, "big") + body], [])
        return conn.makefile("rb").readline().decode("utf-8", "replace").strip() or None
    except OSError:
        return None
    finally:
        conn.close()
