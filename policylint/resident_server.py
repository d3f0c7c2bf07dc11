"""The resident server's side (see :mod:`policylint.resident`): import the pipeline, then fork a run per caller.

Besides its imports, the server keeps a few large cache entries decoded for the runs it
forks (a :class:`Keeper`, :class:`policylint.cache.decoded.DecodedKeeper`): after its caller
has the exit code, a run's child names the entries it decoded on a pipe the server watches
beside its socket; the server decodes them between commands, and a later child takes a
value only for an entry whose bytes it read and checked itself and found equal.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, Protocol

from policylint.resident import LIMITS, control, fingerprint, finish, folder, private_folder, socket_path

#: the largest request read (arguments and environment)
MAX_REQUEST = 1 << 20
#: the longest wait for a request once a caller has connected
REQUEST_SECONDS = 3.0


class Keeper(Protocol):
    """What the server keeps decoded for its runs (:class:`policylint.cache.decoded.DecodedKeeper`).

    ``names()`` - in a run's child: lines naming the entries the run decoded; ``keep(lines)`` -
    in the server: decode them for the runs forked next; ``kept()`` - how many are kept, and their bytes.
    """

    def names(self) -> list[bytes]: ...

    def keep(self, lines: list[bytes]) -> None: ...

    def kept(self) -> tuple[int, int]: ...


class _KeepNothing:
    def names(self) -> list[bytes]:
        return []

    def keep(self, lines: list[bytes]) -> None:
        return None

    def kept(self) -> tuple[int, int]:
        return 0, 0


#: the write end of the pipe on which a run's child names the entries it decoded (see _report_decoded)
_FEED = -1
#: what the server keeps decoded (set by serve)
_KEEPER: Keeper = _KeepNothing()

#: the pipeline's modules, imported by the server before it serves (a check imports them all;
#: tests/test_resident.py holds this list to what a check imports)
PRELOAD = (
    "numpy",
    "numpy.ma",
    "numpy.random",
    "yaml",
    "jsonschema",
    "cerberus",
    "shutil",
    "subprocess",
    "locale",
    "importlib.util",
    "policylint.cli",
    "policylint.model.load.compose",  # the YAML composer: a run alone imports it with the first file it parses
    "policylint.engine.ruleset",
    "policylint.measure.sources.declared",
    "policylint.model.schedulers.kueue",
    "policylint.model.schedulers.volcano",
    "policylint.report.paths",
    "policylint.report.progress",
    "policylint.report.sarif_report",
    "policylint.model.config_cache",
    "policylint.measure.sources.templates",
    "policylint.readers.timeseries",
    "policylint.readers.jobs",
    "policylint.readers.prometheus",
    "policylint.commands.check",
    "policylint.session",
    "policylint.engine.linter",
    "policylint.engine.repo_index",
    "policylint.engine.index_run",
    "policylint.engine.views",
    "policylint.engine.verdicts",
    "policylint.engine.evaluate",
    "policylint.engine.filter",
    "policylint.engine.scope",
    "policylint.engine.widen",
    "policylint.engine.change_history",
    "policylint.engine.history",
    "policylint.engine.lite_sheet",
    "policylint.engine.rule_cache",
    "policylint.model.resolve",
    "policylint.model.validate",
    "policylint.model.quick_schema",
    "policylint.model.load.document_pack_cache",
    "policylint.model.load.manifests",
    "policylint.measure.run",
    "policylint.measure.pools",
    "policylint.measure.parallel",
    "policylint.measure.kept_reads",
    "policylint.measure.workload",
    "policylint.measure.integrity.copies",
    "policylint.measure.integrity.plausibility",
    "policylint.readers",
    "policylint.report",
    "policylint.report.text_report",
    "policylint.edit.fixes",
)


def _can_take(limits: dict[str, Any]) -> bool:
    """Whether a child of this process can set ``limits`` (a limit is only lowered, never raised)."""
    import resource

    def above(wanted: int, have: int) -> bool:
        return have != resource.RLIM_INFINITY and (wanted == resource.RLIM_INFINITY or wanted > have)

    for name, (soft, hard) in limits.items():
        if name not in LIMITS or not hasattr(resource, name):
            return False
        _, own_hard = resource.getrlimit(getattr(resource, name))
        if above(hard, own_hard) or above(soft, own_hard):
            return False
    return True


def serve(main: Callable[[list[str]], int], idle_minutes: float, keeper: Keeper | None = None) -> int:
    """Import the pipeline, then serve commands until idle for ``idle_minutes`` or stopped; the exit code."""
    import gc
    import importlib
    import select
    import signal
    import socket

    # the process settings (collector, one BLAS thread) are the caller's to make first: policylint.serve
    place = private_folder(create=True)
    if place is None:
        sys.stderr.write(f"policylint: error: no private folder for the server's socket ({folder()})\n")
        return 2
    print_ = fingerprint()
    path = socket_path(place, print_)
    if os.path.exists(path):
        if control("ping", timeout=2.0) is not None:
            sys.stderr.write("policylint: error: a server for this installation is running already\n")
            return 2
        os.unlink(path)  # left by a server that was killed
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    gc.collect()
    gc.freeze()  # the imported modules' objects: never scanned by a child's collector (nor copied by it)
    gc.enable()  # the server lives on: it collects (policylint.cli.prepare_process turned that off for a run)
    if _threads() != 1:  # a fork copies only the thread that forks: another one's state would be lost
        sys.stderr.write("policylint: error: the preloaded modules started a thread: the server cannot fork safely\n")
        return 2
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(path)
    except OSError as exc:
        sys.stderr.write(f"policylint: error: cannot open the server's socket {path}: {exc.strerror or exc}\n")
        return 2
    finally:
        os.umask(old)
    mine = os.stat(path).st_ino  # removed at the end only if it is still this server's socket
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the system
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    served = 0  # commands forked so far (told by ping)
    global _FEED, _KEEPER
    _KEEPER = keeper if keeper is not None else _KeepNothing()
    feed, _FEED = os.pipe()
    os.set_blocking(feed, False)
    os.set_blocking(_FEED, False)  # a child never waits on a full pipe: it drops its report instead
    pending = b""
    try:
        while True:
            ready, _, _ = select.select([listener.fileno(), feed], [], [], idle_minutes * 60)
            if not ready:
                return 0
            if feed in ready:
                *lines, pending = (pending + _drain(feed)).split(b"\n")
                _KEEPER.keep(lines[-64:])
                pending = pending[-8192:]  # the unfinished line of a child still writing
                gc.collect()
                gc.freeze()  # the values kept: never scanned by a child's collector
                continue
            conn, _ = listener.accept()
            try:
                answer = _serve_one(conn, listener, main, print_, served)
                if answer == "stop":
                    return 0
                if answer == "forked":
                    served += 1
            except Exception:  # noqa: BLE001 - a bad request ends that request, not the server
                pass
            finally:
                conn.close()
    finally:
        listener.close()
        try:
            if os.stat(path).st_ino == mine:
                os.unlink(path)
        except OSError:
            pass


def _peer_is_us(conn: Any) -> bool:
    import socket
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True  # the socket's folder is closed to other users
    creds = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _receive(conn: Any) -> tuple[dict[str, Any], list[int]]:
    import json
    import socket

    # A caller sends its request as soon as it connects; one that does not holds the server's loop
    # only this long (and a caller cut off so runs its command alone)
    conn.settimeout(REQUEST_SECONDS)
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    try:
        if len(data) < 4:
            raise ValueError("short request")
        size = int.from_bytes(data[:4], "big")
        if size > MAX_REQUEST:
            raise ValueError("request too large")
        body = bytearray(data[4:])
        while len(body) < size:
            chunk = conn.recv(min(65536, size - len(body)))
            if not chunk:
                raise ValueError("request cut short")
            body += chunk
        request = json.loads(bytes(body).decode("utf-8", "surrogateescape"))
        if not isinstance(request, dict):
            raise ValueError("request")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    conn.settimeout(None)
    return request, fds


def _threads() -> int:
    """The process's threads (1 where the system does not say)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _serve_one(conn: Any, listener: Any, main: Callable[[list[str]], int], print_: str, served: int) -> str | None:
    """Answer one connection: ``"stop"``, ``"forked"`` (a command runs in a child) or None."""
    if not _peer_is_us(conn):
        return None
    request, fds = _receive(conn)
    try:
        op = request.get("op")
        if op == "ping":
            kept, size = _KEEPER.kept()
            conn.sendall(f"pong {os.getpid()} {print_[:32]} {served} {kept} {size}\n".encode())
            return None
        if op == "stop":
            conn.sendall(b"stopping\n")
            return "stop"
        if op != "run" or len(fds) != 3 or not _valid_run(request):
            conn.sendall(b"no request\n")
            return None
        if not _can_take(request["limits"]):  # the caller may use more than a child of this server could
            conn.sendall(b"no limits\n")
            return None
        if os.fork() == 0:
            try:
                import gc

                gc.disable()  # a run, as policylint.cli.prepare_process sets one up
                listener.close()
                _child(conn, request, fds, main)
            finally:
                os._exit(0)  # the run's own code went to the caller (none: it ended without one)
        return "forked"
    finally:
        for fd in fds:  # this process's copies of the caller's streams (a child has its own)
            os.close(fd)


def _valid_run(request: dict[str, Any]) -> bool:
    argv, env, streams = request.get("argv"), request.get("env"), request.get("streams")
    return (
        isinstance(argv, list) and all(isinstance(a, str) for a in argv)
        and isinstance(request.get("cwd"), str)
        and isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        and type(request.get("umask")) is int
        and isinstance(streams, list) and len(streams) == 3
        and all(isinstance(s, list) and len(s) == 4 and isinstance(s[0], str) and isinstance(s[1], str) for s in streams)
        and isinstance(request.get("limits"), dict)
        and all(isinstance(k, str) and isinstance(v, list) and len(v) == 2 and all(type(x) is int for x in v)
                for k, v in request["limits"].items())
    )


def _child(conn: Any, request: dict[str, Any], fds: list[int], main: Callable[[list[str]], int]) -> None:
    """Become the caller's command: its streams, folder, environment and umask; run it; report its exit code."""
    import io
    import resource
    import signal
    import time

    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    made = []
    for target, (encoding, errors, line_buffering, write_through) in enumerate(request["streams"]):
        raw = io.FileIO(target, "rb" if target == 0 else "wb", closefd=False)
        buffered: Any = io.BufferedReader(raw) if target == 0 else io.BufferedWriter(raw)
        made.append(io.TextIOWrapper(buffered, encoding=encoding, errors=errors,
                                     line_buffering=bool(line_buffering), write_through=bool(write_through)))
    sys.stdin, sys.stdout, sys.stderr = made
    conn.sendall(f"ok {os.getpid()}\n".encode())
    env = request["env"]
    os.environ.clear()
    os.environ.update(env)  # OPENBLAS_NUM_THREADS included: the caller set it as every command does
    time.tzset()  # local time as the caller's TZ has it
    os.umask(request["umask"])
    for name, (soft, hard) in request["limits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    code: Any = 2
    try:
        os.chdir(request["cwd"])
        sys.argv = ["policylint", *request["argv"]]
        code = main(list(request["argv"]))
    except SystemExit as exc:
        code = exc.code
    except OSError as exc:
        sys.stderr.write(f"policylint: error: {exc.strerror or exc}\n")
        code = 2
    if code is None:
        code = 0
    elif not isinstance(code, int):
        sys.stderr.write(f"{code}\n")
        code = 1
    if not finish():
        code = 120  # the code the interpreter gives a failed flush at exit
    conn.sendall(f"exit {code}\n".encode())
    _report_decoded()


def _report_decoded() -> None:
    """Name to the server the large cache entries this run decoded, one line each (after the caller has its code)."""
    for line in _KEEPER.names():
        if len(line) > 4096:  # written whole or not at all: a pipe keeps writes of up to 4 KiB apart
            continue
        try:
            os.write(_FEED, line)
        except OSError:
            return  # the pipe is full (the server is busy decoding): this run's names are dropped


def _drain(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)
