"""Fuzz target for ``policylint pull`` (issue 22): mutated Prometheus answers from a local fake server.

* ``pull`` - ``policylint pull --quiet`` on a small repository whose one trace
  declares a Prometheus source and is already committed, against an HTTP server
  this process runs on a loopback port. The server answers the range query with
  a mutated answer (a good matrix for the requested window, Prometheus' error
  answers, the corpus' answers), under a chosen status (200, 4xx, 429, 5xx, a
  redirect), delivered whole, without a length, or trickled (headers or body)
  slower than the request's deadline; ``@AUTH@`` and ``@SECRET@`` in an answer become the
  request's Authorization header and the raw credential, and ``@HEADER@`` the
  configured extra header (``prometheus.headers``, its value from the
  environment), as a server echoing them would send. The contract: a clean exit
  (0, or 2 with one error line) in bounded time; no secret (token, password,
  the basic-auth pair or its base64 form, the header's value in its plain, JSON-
  and URL-escaped spellings) in the output or any file; no raw control character in the output; on
  failure the committed trace and its provenance are byte for byte as they were,
  and on success the new trace is one the trace reader accepts.
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import re
import shutil
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from mutate import mutated
from targets import CORPUS, ContractViolation, Target, _cli, _expect_clean_exit, _workdir

#: the pulled window: one hour at one-minute steps ending where the corpus answers' samples are
WINDOW_START = 1_764_547_200
END = WINDOW_START + 3600
STEP = 60
TOKEN = "fuzz-tok-5b0c3e91d2a74f68"
USER, PASSWORD = "fuzzer", "fuzz-pw-8e4d\"/%x"
#: a configured header whose value, read from the environment, is a secret like the token
HEADER, HEADER_VARIABLE, HEADER_VALUE = "X-Gateway-Key", "POLICYLINT_FUZZ_GATEWAY_KEY", 'fuzz-hdr-3c9e"/%k 1+q'
#: the request deadline the repository configures; a trickled answer takes longer than this
TIMEOUT_SECONDS = 0.5
#: the longest one input may take: two attempts at the deadline, the lint, and slack for a loaded machine
BOUND_SECONDS = 20.0

STATUSES = (200, 200, 200, 200, 400, 401, 422, 429, 500, 503, 302)
AUTHS = ("token", "basic")
MODES = ("whole", "whole", "whole", "no-length", "trickle", "slow-head")

CLUSTER = """\
apiVersion: policylint/v1
kind: Cluster
metadata:
  name: prod
spec:
  pools:
    - name: serving
      gpu: {model: H100-80GB, memoryGiB: 80}
      reservedGpus: 14
      serves: [inference]
      overflow: queue
      queue: {maxDepth: 100, maxWaitSeconds: 2}
"""

WORKLOAD = """\
apiVersion: policylint/v1
kind: Workload
metadata:
  name: chat
  team: platform
spec:
  class: inference
  cluster: prod
  pool: serving
  gpusPerReplica: 1
  concurrency:
    trace:
      path: ../measurements/chat.json
      prometheus:
        template: vllm-running
        params: {model: chat}
        step: 1m
        lookback: 1h
  perGpuConcurrency: {value: 10, measuredIn: production, source: "grafana: latency board, 2026-11"}
  coldStartSeconds: 600
  tolerance:
    maxQueueSeconds: 2
    evidence: "p99 time-to-first-token SLO of 2 s, product SLO document 2026-Q3"
"""

#: what policylint prints must not hold these (a newline ends a line and is fine)
_RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _matrix(series: list[tuple[dict[str, str], list[str]]]) -> bytes:
    result = [
        {"metric": metric, "values": [[WINDOW_START + i * STEP, v] for i, v in enumerate(values)]}
        for metric, values in series
    ]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}, separators=(",", ":")).encode()


def _answers() -> list[bytes]:
    ramp = [str(i % 7) for i in range(61)]
    return [
        _matrix([({}, ramp)]),
        _matrix([({"__name__": "vllm:num_requests_running", "model_name": "chat", "pod": "chat-0"}, ["1", "2.5", "NaN", "4"]),
                 ({"model_name": "chat", "pod": "chat-1"}, ["0", "1e3", "2"])]),
        _matrix([({"pod": "@AUTH@"}, ["1", "2"])]),
        _matrix([({"pod": "chat-0", "gateway": "@HEADER@"}, ["1", "2"])]),
        json.dumps({"status": "error", "errorType": "bad_data", "error": "tenant key @HEADER@ refused"}).encode(),
        json.dumps({"status": "error", "errorType": "bad_data", "error": "denied: @AUTH@ (@SECRET@) \x1b]0;owned\x07\x1b[31m"}).encode(),
        json.dumps({"status": "error", "errorType": "timeout", "error": "query timed out in expression evaluation"}).encode(),
        json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode(),
        *(p.read_bytes() for p in sorted((CORPUS / "traces").glob("prometheus*.json"))),
    ]


def _seeds() -> list[tuple[int, str, str, bytes]]:
    answers = _answers()
    seeds = [(200, AUTHS[i % 2], "whole", body) for i, body in enumerate(answers)]
    seeds += [(503, "token", "whole", answers[3]), (200, "basic", "no-length", answers[0]), (200, "token", "trickle", answers[0])]
    return seeds


def _strategy(seeds: list[tuple[int, str, str, bytes]]) -> st.SearchStrategy[tuple[int, str, str, bytes]]:
    bodies = [body for *_, body in seeds]
    return st.tuples(st.sampled_from(STATUSES), st.sampled_from(AUTHS), st.sampled_from(MODES), mutated(bodies, max_edits=4))


# -- the fake server ---------------------------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - the handler API's name
        self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
        status, mode, body = _SERVER.current
        auth = self.headers.get("Authorization", "")
        secret = TOKEN if auth.startswith("Bearer ") else f"{USER}:{PASSWORD}"
        body = body.replace(b"@AUTH@", auth.encode()).replace(b"@SECRET@", json.dumps(secret)[1:-1].encode())
        body = body.replace(b"@HEADER@", json.dumps(self.headers.get(HEADER, ""))[1:-1].encode())
        try:
            if mode == "slow-head":
                # the status line in three pieces, longer in all than the request's deadline
                for piece in (b"HTTP/1.1 ", b"200 ", b"OK\r\n"):
                    self.wfile.write(piece)
                    self.wfile.flush()
                    if _SERVER.stopping.wait(TIMEOUT_SECONDS * 0.4):
                        return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            if mode == "no-length":
                self.protocol_version = "HTTP/1.0"
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if status in (429, 500, 503):
                self.send_header("Retry-After", "0")
            if status == 302:
                self.send_header("Location", "http://127.0.0.1:1/elsewhere")
            if mode != "no-length":
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if mode == "trickle":
                # three pieces, the whole longer than the request's deadline (bounded: about a second)
                third = max(1, len(body) // 3)
                for at in range(0, len(body), third):
                    self.wfile.write(body[at : at + third])
                    self.wfile.flush()
                    if _SERVER.stopping.wait(TIMEOUT_SECONDS * 0.7):
                        return
            else:
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up: its deadline or size cap at work

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the server's log
        return


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    current: tuple[int, str, bytes] = (200, "whole", b"")
    stopping = threading.Event()


_SERVER: _Server = None  # type: ignore[assignment]


def _server() -> _Server:
    global _SERVER
    if _SERVER is None:
        _SERVER = _Server(("127.0.0.1", 0), _Handler)
        threading.Thread(target=_SERVER.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return _SERVER


# -- the repository ----------------------------------------------------------------------------------


def _repo() -> tuple[Path, dict[str, bytes]]:
    """A fresh repository with a committed trace and its provenance; (folder, committed files)."""
    server = _server()
    repo = _workdir() / "pull-repo"
    if repo.exists():
        shutil.rmtree(repo)
    (repo / "clusters").mkdir(parents=True)
    (repo / "workloads").mkdir()
    (repo / "measurements").mkdir()
    (repo / ".policylint.yaml").write_text(
        f"prometheus:\n  url: http://127.0.0.1:{server.server_address[1]}\n"
        f"  timeout-seconds: {TIMEOUT_SECONDS}\n  max-attempts: 2\n"
        f"  headers:\n    {HEADER}: {{env: {HEADER_VARIABLE}}}\n"
        "limits:\n  max-trace-bytes: 2000000\n",
        encoding="utf-8",
    )
    (repo / "clusters" / "prod.yaml").write_text(CLUSTER, encoding="utf-8")
    (repo / "workloads" / "chat.yaml").write_text(WORKLOAD, encoding="utf-8")
    trace = _matrix([({}, ["3"] * 61)]).decode() + "\n"
    record = json.dumps({"format": "policylint-provenance/1", "query": "committed before the fuzzing"}) + "\n"
    files = {"chat.json": trace.encode(), "chat.json.provenance.json": record.encode()}
    for name, data in files.items():
        (repo / "measurements" / name).write_bytes(data)
    return repo, files


def _set_credentials(auth: str) -> list[str]:
    """Put the credentials of ``auth`` in the environment; the spellings that must never show."""
    for name in ("POLICYLINT_PROMETHEUS_TOKEN", "POLICYLINT_PROMETHEUS_USER", "POLICYLINT_PROMETHEUS_PASSWORD"):
        os.environ.pop(name, None)
    os.environ.pop("POLICYLINT_PROMETHEUS_URL", None)
    os.environ[HEADER_VARIABLE] = HEADER_VALUE
    header = [HEADER_VALUE, json.dumps(HEADER_VALUE)[1:-1], urllib.parse.quote(HEADER_VALUE, safe="")]
    if auth == "token":
        os.environ["POLICYLINT_PROMETHEUS_TOKEN"] = TOKEN
        return [TOKEN, *header]
    os.environ["POLICYLINT_PROMETHEUS_USER"] = USER
    os.environ["POLICYLINT_PROMETHEUS_PASSWORD"] = PASSWORD
    pair = f"{USER}:{PASSWORD}"
    return [PASSWORD, pair, base64.b64encode(pair.encode()).decode(), json.dumps(PASSWORD)[1:-1], *header]


def run_pull(item: tuple[int, str, str, bytes]) -> None:
    from policylint.errors import PolicylintError
    from policylint.traces import read_series

    status, auth, mode, body = item
    secrets = _set_credentials(auth)
    repo, before = _repo()
    _server().current = (status, mode, body)
    began = time.monotonic()
    code, out, err = _cli(["pull", ".", "--end", str(END), "--quiet"], cwd=repo)
    took = time.monotonic() - began
    if took > BOUND_SECONDS:
        raise ContractViolation(f"pull took {took:.1f} s against a {TIMEOUT_SECONDS} s request deadline")
    _expect_clean_exit(code, out, err, (0, 2), json_out=False)
    files = {p.name: p.read_bytes() for p in sorted((repo / "measurements").iterdir())}
    everything = out + err + "".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(repo.rglob("*"))
        if p.is_file() and p.name != ".policylint.yaml"  # names the header's variable, not its value
    )
    for secret in secrets:
        if secret in everything:
            raise ContractViolation(f"the credential {secret[:4]}... shows in the output or a file: {err[:500]!r}")
    raw = _RAW_CONTROL.search(out + err)
    if raw:
        raise ContractViolation(f"a raw control character {raw.group()!r} in the output: {(out + err)[:500]!r}")
    if code != 0:
        if files != before:
            raise ContractViolation(f"a failed pull changed the committed files: {sorted(files)}; {err[:500]!r}")
        return
    if set(files) != set(before):
        raise ContractViolation(f"a pull left other files behind: {sorted(files)}")
    try:
        read_series(repo / "measurements" / "chat.json")
    except PolicylintError as exc:
        raise ContractViolation(f"pull replaced the trace with one the reader refuses: {exc}") from None


TARGETS: dict[str, Target] = {
    "pull": Target("pull", _seeds, _strategy, run_pull),
}
