"""Fuzz target for the resident server's requests (:mod:`policylint.resident`).

* ``resident`` - mutated request bytes (from well-formed ``run``, ``ping`` and
  ``stop`` requests, length prefix included) are written to one end of a Unix
  socket pair and the server's handler reads the other end, as it reads a
  caller. The contract: the handler answers or refuses in bounded time and
  raises nothing but an ``Exception`` (the server's loop ends that connection
  on one and serves on); it never forks for a request that does not carry the
  caller's three streams, so no input here starts a run; and a ``ping`` or
  ``stop`` is answered only when it is one.
* ``resident-feed`` - mutated lines of the pipe on which a run's child names the
  cache entries it decoded are handed to the server's reader of that pipe. The
  contract: it raises nothing and keeps decoded only sealed entries that lie in
  their cache folder (here: none, since the folder holds no secret and nothing seals).
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

from hypothesis import strategies as st

from mutate import mutated
from targets import ContractViolation, Target


def _request(body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    return len(data).to_bytes(4, "big") + data


def _seeds() -> list[bytes]:
    run = {"op": "run", "argv": ["check", "."], "cwd": "/", "env": {"PATH": "/usr/bin"}, "umask": 18,
           "streams": [["utf-8", "strict", False, False]] * 3, "limits": {"RLIMIT_NOFILE": [1024, 4096]}}
    # a request larger than a socket's buffer (a 272 KB mutant once hung the harness, not the server)
    padded = json.dumps({"op": "ping"}).encode() + b" " * 300_000
    return [_request(run), _request({"op": "ping"}), _request({"op": "stop"}), _request({"op": "run"}),
            len(padded).to_bytes(4, "big") + padded]


def _strategy(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    return mutated(seeds, max_edits=6)


def _never_main(argv: list[str]) -> int:
    raise ContractViolation(f"a request without the caller's streams started a run: {argv!r}")


def run_resident(data: bytes) -> None:
    from policylint import resident_server

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)

    def send() -> None:
        # from a thread: a request larger than the socket's buffer blocks until the server reads it
        # (a 272 KB input hung the harness itself, not the server, in the same thread)
        try:
            ours.sendall(data)
            ours.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server stopped reading (a request over its limit) and closed its end

    sender = threading.Thread(target=send, daemon=True)
    try:
        theirs.settimeout(5.0)
        sender.start()
        try:
            answer = resident_server._serve_one(theirs, None, _never_main, "0" * 64, 0)
        except ContractViolation:
            raise
        except Exception:  # noqa: BLE001 - the server's loop closes that connection and serves on
            return
        theirs.shutdown(socket.SHUT_WR)
        ours.settimeout(5.0)
        said = ours.recv(4096)
        if answer == "forked":
            raise ContractViolation("a request without the caller's streams was forked")
        if said.startswith(b"pong") or answer == "stop":
            body = json.loads(data[4:].decode("utf-8", "surrogateescape"))
            op = "stop" if answer == "stop" else "ping"
            if not (isinstance(body, dict) and body.get("op") == op):
                raise ContractViolation(f"answered {said!r} to {data[:200]!r}")
    finally:
        theirs.close()  # a sender still blocked on a full buffer fails and ends
        sender.join(10.0)
        ours.close()


def _feed_seeds() -> list[bytes]:
    line = json.dumps(["/nonexistent/cache/docpack-v4/ab/x.json", "/nonexistent/cache", "docpack", 1 << 20])
    return [(line + "\n").encode(), (line + "\n" + line).encode(), b'["a", "b", "verdicts", 1]\n', b"\n\n"]


def run_resident_feed(data: bytes) -> None:
    from policylint.cache import decoded as store

    saved = dict(store.KEPT_DECODED)
    store.KEPT_DECODED.clear()
    try:
        store.DecodedKeeper().keep(data.split(b"\n"))
        if store.KEPT_DECODED:
            raise ContractViolation(f"kept entries no run could have read: {sorted(store.KEPT_DECODED)[:3]}")
    finally:
        store.KEPT_DECODED.clear()
        store.KEPT_DECODED.update(saved)


TARGETS: dict[str, Target] = {
    "resident": Target("resident", _seeds, _strategy, run_resident),
    "resident-feed": Target("resident-feed", _feed_seeds, _strategy, run_resident_feed),
}
