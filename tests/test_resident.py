"""The resident server (:mod:`policylint.resident`): a command run in it is the command run on its own.

Every test starts a real server in a private socket folder of its own (its
``XDG_RUNTIME_DIR``), runs the installed console entry with and without it
(``POLICYLINT_SERVER=off``) and compares what a caller sees: exit code, every
byte of both streams, the files written and their modes. That a command was
served is read from the server's own count of forked runs (its ``ping``).
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES
from test_exit import COMPARED

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the resident server needs Unix sockets and fork")

ENTRY = [sys.executable, "-c", "from policylint.cli import console_main\nconsole_main()\n"]


class Server:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def policylint(self, *args: str, cwd: Path, served: bool = True, **env: str) -> subprocess.CompletedProcess[bytes]:
        full = {**self.env, **env}
        if not served:
            full["POLICYLINT_SERVER"] = "off"
        return subprocess.run([*ENTRY, *args], cwd=cwd, env=full, capture_output=True, timeout=300)

    def ping(self) -> list[str] | None:
        done = subprocess.run(
            [sys.executable, "-c", "from policylint import resident\nprint(resident.control('ping') or '')"],
            env=self.env, capture_output=True, text=True, timeout=60,
        )
        words = done.stdout.split()
        return words or None

    def served(self) -> int:
        answer = self.ping()
        assert answer is not None, "the server does not answer"
        return int(answer[3])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    run_dir = tempfile.mkdtemp(prefix="plr")  # short: a socket's path is limited to about 100 bytes
    os.chmod(run_dir, 0o700)
    env = {k: v for k, v in os.environ.items() if k not in ("POLICYLINT_SERVER", "NO_COLOR", "FORCE_COLOR")}
    env.update(XDG_RUNTIME_DIR=run_dir, POLICYLINT_CACHE_DIR=str(tmp_path / "cache"))
    srv = Server(env)
    started = subprocess.run([*ENTRY, "server", "start", "--idle-minutes", "5"], env=env, capture_output=True,
                             text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    assert "started a resident server" in started.stdout
    try:
        yield srv
    finally:
        subprocess.run([*ENTRY, "server", "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(run_dir, ignore_errors=True)


def _same(a: subprocess.CompletedProcess[bytes], b: subprocess.CompletedProcess[bytes]) -> None:
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


@pytest.mark.parametrize("args", list(COMPARED.values()), ids=list(COMPARED))
def test_a_served_command_is_the_command(server: Server, args: list[str]) -> None:
    before = server.served()
    served = server.policylint(*args, cwd=EXAMPLES)
    assert server.served() == before + 1
    alone = server.policylint(*args, cwd=EXAMPLES, served=False)
    assert server.served() == before + 1  # POLICYLINT_SERVER=off: run on its own
    _same(served, alone)


def test_the_callers_folder_environment_and_colour_are_the_runs(server: Server, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "bad", repo)
    inner = next(p for p in sorted(repo.rglob("*")) if p.is_dir())
    for where in (repo, inner):
        for env in ({"NO_COLOR": "1"}, {"FORCE_COLOR": "1"}, {"COLUMNS": "60", "FORCE_COLOR": "1"}):
            _same(server.policylint("check", str(repo), cwd=where, **env),
                  server.policylint("check", str(repo), cwd=where, served=False, **env))
    # a configuration given by the environment: the run's, not the server's
    cache = tmp_path / "other-cache"
    done = server.policylint("check", ".", cwd=repo, POLICYLINT_CACHE_DIR=str(cache))
    assert done.returncode == 1 and cache.is_dir()


def _kept(server: Server, at_least: int) -> tuple[int, int]:
    """The server's count of cache entries it keeps decoded, and their bytes, once it has ``at_least`` (5 s at most)."""
    for _ in range(100):
        answer = server.ping()
        assert answer is not None and len(answer) == 6
        if int(answer[4]) >= at_least:
            break
        time.sleep(0.05)
    return int(answer[4]), int(answer[5])


def test_entries_the_server_keeps_decoded_give_the_runs_of_an_unkept_cache(server: Server, tmp_path: Path) -> None:
    """The document pack and repository index a run decoded are decoded once more by the server, for its next runs.

    A run takes a kept value only for an entry whose bytes equal those it was decoded from; an
    entry rewritten since (an edit, the pack written again) is decoded by the run, as alone.
    """
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "bad", repo)
    one = sorted(p.relative_to(repo).as_posix() for p in (repo / "workloads").glob("*.yaml"))[0]
    args = ["check", "--changed-files", one, "--now", "2026-12-01T00:00:00Z"]
    time.sleep(2.1)  # a file changed within two seconds is not packed (its status-change time cannot be set back)
    first = server.policylint(*args, cwd=repo, served=False)  # fills the cache
    assert first.returncode == 1, first.stderr
    assert server.policylint(*args, cwd=repo).stdout == first.stdout  # served: names the entries it decoded
    kept, size = _kept(server, 1)  # the document pack (the index of so few workloads is small)
    assert kept >= 1 and size > 32 << 10
    status = server.policylint("server", "status", cwd=repo).stdout.decode()
    assert f"keeps {kept} cache entr" in status and f"({size / (1 << 20):.1f} MB)" in status
    before = server.served()
    for _ in range(2):
        _same(server.policylint(*args, cwd=repo), server.policylint(*args, cwd=repo, served=False))
    assert server.served() == before + 2
    # every entry rewritten: an edited workload, a new cache folder's secret
    path = repo / one
    path.write_text(path.read_text(encoding="utf-8").replace("\n", "\n# edited\n", 1), encoding="utf-8")
    edited = server.policylint(*args, cwd=repo, served=False)
    _same(server.policylint(*args, cwd=repo), edited)
    shutil.rmtree(tmp_path / "cache")
    _same(server.policylint(*args, cwd=repo), server.policylint(*args, cwd=repo, served=False))
    _same(server.policylint(*args, cwd=repo), server.policylint(*args, cwd=repo, served=False))


def test_files_written_by_a_served_run_are_the_same_with_the_callers_umask(server: Server, tmp_path: Path) -> None:
    results = []
    for served in (True, False):
        repo = tmp_path / ("served" if served else "alone")
        shutil.copytree(EXAMPLES / "bad", repo)
        before = server.served()
        done = subprocess.run(
            ["sh", "-c", 'umask 077 && exec "$@"', "sh", *ENTRY, "baseline", "--output", "baseline.json", "."],
            cwd=repo, env={**server.env, **({} if served else {"POLICYLINT_SERVER": "off"})},
            capture_output=True, timeout=300,
        )
        assert server.served() == before + (1 if served else 0)
        written = repo / "baseline.json"
        results.append((done.returncode, done.stdout, done.stderr, written.read_bytes(), stat.S_IMODE(written.stat().st_mode)))
    assert results[0] == results[1]
    assert results[0][4] == 0o600  # the caller's umask, not the server's


def test_fixes_by_a_served_run_are_the_same(server: Server, tmp_path: Path) -> None:
    trees = []
    for served in (True, False):
        repo = tmp_path / ("served" if served else "alone")
        shutil.copytree(EXAMPLES / "bad", repo)
        done = server.policylint("check", ".", "--fix", "--unsafe-fixes", cwd=repo, served=served)
        trees.append((done.returncode, done.stdout, done.stderr,
                      {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*")) if p.is_file()}))
    assert trees[0] == trees[1]


def test_another_interpreter_setting_is_not_served(server: Server) -> None:
    """A setting read when Python starts (here the locale) is part of the fingerprint: that command runs alone."""
    before = server.served()
    done = server.policylint("check", "bad", cwd=EXAMPLES, LC_ALL="C.UTF-8")
    assert server.served() == before
    _same(done, server.policylint("check", "bad", cwd=EXAMPLES, served=False, LC_ALL="C.UTF-8"))


def test_garbage_on_the_socket_leaves_the_server_serving(server: Server) -> None:
    from policylint import resident_server

    place = os.path.join(server.env["XDG_RUNTIME_DIR"], "policylint")
    (sock_name,) = os.listdir(place)
    path = os.path.join(place, sock_name)
    for payload in (b"", b"\x00\x00\x00\x05{", b"\xff\xff\xff\xff" + b"x" * 64, b"\x00\x00\x00\x02[]",
                    b'\x00\x00\x00\x0f{"op": "run"}', b'\x00\x00\x00\x0e{"op": "what"}'):
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(20)
        conn.connect(path)
        conn.sendall(payload)
        conn.shutdown(socket.SHUT_WR)
        conn.recv(100)  # an answer or the end: never a hang
        conn.close()
    # a caller that connects and says nothing is cut off, and the server serves on
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.settimeout(30)
    silent.connect(path)
    started = time.monotonic()
    assert silent.recv(100) == b""
    assert time.monotonic() - started < resident_server.REQUEST_SECONDS + 10
    silent.close()
    assert server.ping() is not None
    assert resident_server.MAX_REQUEST >= 1 << 16
    _same(server.policylint("check", "good", cwd=EXAMPLES), server.policylint("check", "good", cwd=EXAMPLES, served=False))


def test_stop_and_idle_end_the_server(server: Server) -> None:
    stopped = server.policylint("server", "stop", cwd=EXAMPLES)
    assert stopped.returncode == 0 and b"stopped the resident server" in stopped.stdout
    assert server.ping() is None
    status = server.policylint("server", "status", cwd=EXAMPLES)
    assert status.returncode == 1
    assert os.listdir(os.path.join(server.env["XDG_RUNTIME_DIR"], "policylint")) == []  # its socket went with it
    # a command finds none and runs alone
    assert server.policylint("check", "good", cwd=EXAMPLES).returncode == 0
    started = server.policylint("server", "start", "--idle-minutes", "0.02", cwd=EXAMPLES)
    assert started.returncode == 0
    place = os.path.join(server.env["XDG_RUNTIME_DIR"], "policylint")
    for _ in range(300):  # watched without connecting: a ping would count as a command
        if not os.listdir(place):
            break
        time.sleep(0.1)
    assert os.listdir(place) == []  # gone after 1.2 s without a command
    assert server.ping() is None


def test_a_folder_others_can_enter_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from policylint import resident

    run_dir = tmp_path / "run"
    (run_dir / "policylint").mkdir(parents=True)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run_dir))
    os.chmod(run_dir / "policylint", 0o755)
    assert resident.private_folder(create=False) is None
    assert resident.run_resident(["check"]) is None
    os.chmod(run_dir / "policylint", 0o700)
    assert resident.private_folder(create=False) == str(run_dir / "policylint")
    (run_dir / "policylint").rmdir()
    (run_dir / "policylint").symlink_to(tmp_path)
    assert resident.private_folder(create=False) is None


def test_the_server_preloads_what_a_check_imports(tmp_path: Path) -> None:
    """After the server's imports, a check of the examples (cold, warm, edited) imports nothing more of the pipeline."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "bad", repo)
    code = (
        "import contextlib, importlib, io, os, sys\n"
        "os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')\n"
        "from policylint.resident_server import PRELOAD\n"
        "for name in PRELOAD:\n"
        "    importlib.import_module(name)\n"
        "before = set(sys.modules)\n"
        "from policylint.cli import main\n"
        "for args in (['check', '.'], ['check', '.'], ['check', '.', '--format', 'sarif']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "        main(args)\n"
        "print(' '.join(sorted(set(sys.modules) - before)))\n"
    )
    env = {**os.environ, "POLICYLINT_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    later = {m for m in done.stdout.split() if m.split(".")[0] in ("policylint", "numpy", "yaml", "jsonschema", "cerberus")}
    assert later == set()


def test_auto_starts_a_server_for_the_next_command(tmp_path: Path) -> None:
    run_dir = tempfile.mkdtemp(prefix="plr")
    os.chmod(run_dir, 0o700)
    env = {k: v for k, v in os.environ.items() if k != "POLICYLINT_SERVER"}
    env.update(XDG_RUNTIME_DIR=run_dir, POLICYLINT_CACHE_DIR=str(tmp_path / "cache"), POLICYLINT_SERVER="auto")
    srv = Server(env)
    try:
        first = srv.policylint("check", "good", cwd=EXAMPLES)  # none runs: this one runs alone and starts one
        assert first.returncode == 0
        for _ in range(300):
            if srv.ping() is not None:
                break
            time.sleep(0.05)
        assert srv.served() == 0
        second = srv.policylint("check", "good", cwd=EXAMPLES)
        assert srv.served() == 1
        _same(first, second)
    finally:
        subprocess.run([*ENTRY, "server", "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(run_dir, ignore_errors=True)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)
_FIELDS = st.sampled_from(["op", "argv", "cwd", "env", "umask", "streams", "limits"])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_FIELDS, _JSON, max_size=6))
def test_a_run_request_is_checked_field_by_field(request: dict[str, object]) -> None:
    """Whatever a request holds, the check answers yes or no (never raises), and yes only for the right shapes."""
    from policylint import resident_server

    ok = resident_server._valid_run(request)
    assert isinstance(ok, bool)
    if ok:
        assert all(isinstance(a, str) for a in request["argv"])  # type: ignore[union-attr]
        assert type(request["umask"]) is int and isinstance(request["cwd"], str)
        assert len(request["streams"]) == 3  # type: ignore[arg-type]


def test_a_caller_keeps_its_resource_limits(tmp_path: Path) -> None:
    """A lower limit is the run's (served); a caller allowed more than the server's child could take runs alone."""
    run_dir = tempfile.mkdtemp(prefix="plr")
    os.chmod(run_dir, 0o700)
    env = {k: v for k, v in os.environ.items() if k != "POLICYLINT_SERVER"}
    env.update(XDG_RUNTIME_DIR=run_dir, POLICYLINT_CACHE_DIR=str(tmp_path / "cache"))
    srv = Server(env)
    shell = ["sh", "-c", 'ulimit -n "$1" && shift && exec "$@"', "sh"]
    try:
        started = subprocess.run([*shell, "512", *ENTRY, "server", "start", "--idle-minutes", "5"], env=env,
                                 capture_output=True, timeout=120)
        assert started.returncode == 0, started.stderr
        for limit, served in (("256", 1), ("4096", 0)):
            before = srv.served()
            done = subprocess.run([*shell, limit, *ENTRY, "check", "bad"], cwd=EXAMPLES, env=env,
                                  capture_output=True, timeout=300)
            assert srv.served() == before + served
            alone = subprocess.run([*shell, limit, *ENTRY, "check", "bad"], cwd=EXAMPLES,
                                   env={**env, "POLICYLINT_SERVER": "off"}, capture_output=True, timeout=300)
            _same(done, alone)
    finally:
        subprocess.run([*ENTRY, "server", "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(run_dir, ignore_errors=True)


def test_streams_sent_with_any_request_are_closed_by_the_server(server: Server) -> None:
    """A ping, a stop-free bad request or a refused run that carries descriptors leaves none open in the server."""
    pid = int(server.ping()[1])  # type: ignore[index]
    fds_of = Path(f"/proc/{pid}/fd")
    if not fds_of.is_dir():
        pytest.skip("no /proc here to count the server's descriptors")
    place = os.path.join(server.env["XDG_RUNTIME_DIR"], "policylint")
    (name,) = os.listdir(place)
    before = len(os.listdir(fds_of))
    for body in (b'{"op": "ping"}', b'{"op": "what"}', b'{"op": "run"}'):
        for _ in range(3):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.settimeout(20)
            conn.connect(os.path.join(place, name))
            socket.send_fds(conn, [len(body).to_bytes(4, "big") + body], [0, 1, 2])
            conn.recv(100)
            conn.close()
    assert server.ping() is not None
    assert len(os.listdir(fds_of)) == before
