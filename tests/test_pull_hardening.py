"""``policylint pull`` against a server that misbehaves on purpose.

Each test starts a small HTTP server in this process, on a loopback port, and
scripts its answer: one that echoes the credentials in an error (retried or
not), trickles a byte a second, is far larger than a trace may be, holds
numbers the readers refuse, or carries terminal escape sequences. ``pull`` runs
through the CLI and must end with one clear error per trace, print no secret
and no raw control character, finish within its deadlines, and leave the
committed trace and its provenance exactly as they were. The server's loops are
bounded and stop when the test ends.
"""

from __future__ import annotations

import base64
import datetime as dt
import http.server
import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import test_pull
from conftest import run_cli

T0 = int(dt.datetime(2026, 9, 1, tzinfo=dt.timezone.utc).timestamp())
STEP = 60
#: the pulled range: one hour at one-minute steps, 61 points, one request
END = T0 + 3600
TOKEN = "tok-9d2e61c4a7f04b18"
USER, PASSWORD = "capacity", 'pw/"q\\7%e0+s p'

# The repository of the real-Prometheus tests: its concurrency trace only, pulled for one hour.
CLUSTER = test_pull.CLUSTER
WORKLOAD = test_pull.WORKLOAD.split("  vram:\n")[0].replace("lookback: 21d", "lookback: 1h")

Behaviour = Callable[["_Handler", dict[str, int]], None]


class _Handler(http.server.BaseHTTPRequestHandler):
    """Reads the range query's form, then does whatever the test scripted."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - the handler API's name
        server: _Server = self.server  # type: ignore[assignment]
        length = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        server.seen.append(self.headers.get("Authorization", ""))
        window = {k: int(form[k][0]) for k in ("start", "end", "step")}
        try:
            server.behaviour(self, window)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up: what the deadline and size tests want

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the server's log
        return

    # -- answers a behaviour is made of --

    def answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def json(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        self.answer(status, json.dumps(doc).encode(), headers)

    @property
    def authorization(self) -> str:
        return self.headers.get("Authorization", "")

    @property
    def stopping(self) -> threading.Event:
        server: _Server = self.server  # type: ignore[assignment]
        return server.stopping


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    behaviour: Behaviour
    seen: list[str]
    stopping: threading.Event


def matrix(window: dict[str, int], value: str = "1", metric: dict[str, str] | None = None) -> dict[str, Any]:
    """A well-formed answer: one series, ``value`` at every requested time."""
    values = [[t, value] for t in range(window["start"], window["end"] + 1, window["step"])]
    return {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": metric or {}, "values": values}]}}


def good(handler: _Handler, window: dict[str, int]) -> None:
    handler.json(200, matrix(window))


class Fake:
    """The running server: its base URL, and what it does next (``behaviour``)."""

    def __init__(self, server: _Server) -> None:
        self.server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"

    @property
    def seen(self) -> list[str]:
        return self.server.seen

    def does(self, behaviour: Behaviour) -> None:
        self.server.behaviour = behaviour


@pytest.fixture
def fake() -> Iterator[Fake]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.behaviour = good
    server.seen = []
    server.stopping = threading.Event()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield Fake(server)
    finally:
        server.stopping.set()  # ends any trickle still going
        server.shutdown()
        server.server_close()


def make_repo(tmp_path: Path, url: str | None, settings: str = "") -> Path:
    repo = tmp_path / "capacity"
    (repo / "clusters").mkdir(parents=True)
    (repo / "workloads").mkdir()
    text = (f"prometheus:\n  url: {url}\n" if url else "") + settings
    (repo / ".policylint.yaml").write_text(text, encoding="utf-8")
    (repo / "clusters" / "prod.yaml").write_text(CLUSTER, encoding="utf-8")
    (repo / "workloads" / "chat.yaml").write_text(WORKLOAD, encoding="utf-8")
    return repo


def pull(repo: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(["pull", str(repo), "--end", str(END), *extra])


def committed(repo: Path) -> dict[str, bytes]:
    """Every file of the repository's measurement folder, by name."""
    folder = repo / "measurements"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.exists() else {}


def all_text(repo: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(repo.rglob("*")) if p.is_file())


@pytest.fixture
def pulled(fake: Fake, tmp_path: Path) -> Path:
    """A repository whose trace was pulled once from a well-behaved server (one attempt per
    request, a one-second request timeout)."""
    repo = make_repo(tmp_path, fake.url, "  timeout-seconds: 1\n  max-attempts: 1\n")
    code, out, err = pull(repo, "--quiet")
    assert (code, out, err) == (0, "", "")
    assert set(committed(repo)) == {"chat.json", "chat.json.provenance.json"}
    return repo


def assert_one_failure(code: int, out: str, err: str, *needles: str) -> None:
    """Exit 2, the failure on standard error once, naming the trace left alone; no traceback."""
    assert code == 2, err
    assert "internal error" not in err and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("policylint: error: ")]
    assert len(lines) == 1, err
    assert lines[0].endswith("../measurements/chat.json left as it was"), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]


# -- secrets ---------------------------------------------------------------------------------------


def echo(status: int, *, headers: dict[str, str] | None = None, field: str = "error") -> Behaviour:
    """An error answer whose explanation repeats the request's Authorization header, decoded too."""

    def behaviour(handler: _Handler, window: dict[str, int]) -> None:
        auth = handler.authorization
        decoded = ""
        if auth.startswith("Basic "):
            decoded = base64.b64decode(auth[6:]).decode()
        text = f"denied for {auth} ({decoded}) quoted {urllib.parse.quote(decoded)} json {json.dumps(decoded)}"
        handler.json(status, {"status": "error", "errorType": "bad_data", field: text}, headers)

    return behaviour


@pytest.mark.parametrize(
    ("status", "headers", "needle"),
    [
        (503, {"Retry-After": "0"}, "gave up after 3 attempts; last: HTTP 503: denied for Bearer ***"),  # retried
        (429, {"Retry-After": "0"}, "gave up after 3 attempts; last: HTTP 429: denied for Bearer ***"),  # retried
        (200, None, "query failed: denied for Bearer ***"),  # HTTP 200 with status "error"
        (400, None, "HTTP 400: denied for Bearer ***"),
    ],
)
def test_an_answer_echoing_the_bearer_token_never_prints_it(
    fake: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, headers: dict[str, str] | None, needle: str
) -> None:
    monkeypatch.setenv("POLICYLINT_PROMETHEUS_TOKEN", TOKEN)
    repo = make_repo(tmp_path, fake.url, "  max-attempts: 3\n")
    fake.does(echo(status, headers=headers))
    code, out, err = pull(repo)
    assert_one_failure(code, out, err, needle)
    assert TOKEN not in out + err + all_text(repo)
    assert set(fake.seen) == {f"Bearer {TOKEN}"}  # it was sent, and only in the header


@pytest.mark.parametrize("status", [503, 200, 401])
def test_basic_auth_is_scrubbed_in_every_spelling(
    fake: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    monkeypatch.setenv("POLICYLINT_PROMETHEUS_USER", USER)
    monkeypatch.setenv("POLICYLINT_PROMETHEUS_PASSWORD", PASSWORD)
    repo = make_repo(tmp_path, fake.url, "  max-attempts: 2\n")
    fake.does(echo(status, headers={"Retry-After": "0"}))
    code, out, err = pull(repo)
    assert_one_failure(code, out, err, "denied for Basic ***")
    pair = f"{USER}:{PASSWORD}"
    for spelling in (
        PASSWORD,
        pair,
        base64.b64encode(pair.encode()).decode(),
        urllib.parse.quote(pair),
        json.dumps(pair)[1:-1],
        json.dumps(PASSWORD)[1:-1],
    ):
        assert spelling not in out + err, spelling
    assert PASSWORD not in all_text(repo)


def test_a_label_holding_the_token_is_refused_and_not_written(
    fake: Fake, pulled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POLICYLINT_PROMETHEUS_TOKEN", TOKEN)
    before = committed(pulled)
    fake.does(lambda h, w: h.json(200, matrix(w, metric={"auth": h.authorization})))
    code, out, err = pull(pulled)
    assert_one_failure(code, out, err, "has a label holding the credential sent to the server")
    assert TOKEN not in out + err + all_text(pulled)
    assert committed(pulled) == before


@pytest.mark.parametrize(
    ("variable", "value", "needle"),
    [
        ("POLICYLINT_PROMETHEUS_TOKEN", "tok-\r\nX-Injected: 1", "holds a space, a control character or a character outside ASCII"),
        ("POLICYLINT_PROMETHEUS_TOKEN", "tok-\u00e9t\u00e9", "its value is not shown"),
        ("POLICYLINT_PROMETHEUS_USER", "ad:min", "holds a ':' or a control character"),
    ],
)
def test_a_credential_no_header_can_carry_is_one_error_that_does_not_show_it(
    fake: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, needle: str
) -> None:
    monkeypatch.setenv(variable, value)
    if variable == "POLICYLINT_PROMETHEUS_USER":
        monkeypatch.setenv("POLICYLINT_PROMETHEUS_PASSWORD", PASSWORD)
    repo = make_repo(tmp_path, fake.url)
    code, out, err = pull(repo)
    assert (code, out) == (2, "")
    assert err.startswith("policylint: error: ") and err.count("\n") == 1 and needle in err
    assert value not in err and PASSWORD not in err
    assert fake.seen == []  # refused before any request


# -- deadlines -------------------------------------------------------------------------------------


def trickle_body(handler: _Handler, window: dict[str, int]) -> None:
    """Headers at once, then the body one byte a second (at most 30 s, or until the test ends)."""
    body = json.dumps(matrix(window)).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    for byte in body[:30]:
        if handler.stopping.wait(1.0):
            return
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()


def trickle_headers(handler: _Handler, window: dict[str, int]) -> None:
    """The status line itself, one byte a second (at most 30 s, or until the test ends)."""
    for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"[:30]:
        if handler.stopping.wait(1.0):
            return
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()


@pytest.mark.parametrize("behaviour", [trickle_body, trickle_headers], ids=["body", "headers"])
def test_a_trickling_server_is_cut_off_at_the_request_deadline(
    fake: Fake, pulled: Path, behaviour: Behaviour
) -> None:
    before = committed(pulled)
    fake.does(behaviour)
    began = time.monotonic()
    code, out, err = pull(pulled)
    took = time.monotonic() - began
    # timeout-seconds: 1 bounds the whole request, not each read; one attempt
    assert_one_failure(code, out, err, "gave up after 1 attempts; last: no complete answer within 1 s")
    assert took < 8, took  # the old client never ended: each byte came within the per-read timeout
    assert committed(pulled) == before


def test_the_run_deadline_stops_retries_and_the_remaining_traces(fake: Fake, tmp_path: Path) -> None:
    repo = make_repo(tmp_path, fake.url, "  timeout-seconds: 30\n  max-attempts: 5\n")
    second = WORKLOAD.replace("name: chat", "name: chat2").replace("chat.json", "chat2.json")
    (repo / "workloads" / "chat2.yaml").write_text(second, encoding="utf-8")
    fake.does(trickle_body)
    began = time.monotonic()
    code, out, err = pull(repo, "--deadline", "2s")
    took = time.monotonic() - began
    assert code == 2 and "internal error" not in err
    assert took < 7, took
    [line] = [x for x in err.splitlines() if x.startswith("policylint: error: ")]
    assert "the pull's deadline of 2 s passed; stopped asking" in line
    assert line.endswith("2 traces not pulled, left as they were")
    assert committed(repo) == {}
    # a pause the server asks for that would end after the deadline is not slept
    fake.does(lambda h, w: h.json(503, {"status": "error", "error": "busy"}, {"Retry-After": "30"}))
    began = time.monotonic()
    code, _, err = pull(repo, "--deadline", "3s", "--workload", "chat")
    assert code == 2 and time.monotonic() - began < 10  # not the 30 s the server asked for
    assert "the pull's deadline of 3 s passed; stopped asking; last: HTTP 503: busy" in err


@pytest.mark.parametrize("value", ["0", "-5", "soon", "--", "1.5h"])
def test_a_bad_deadline_is_a_usage_error(tmp_path: Path, value: str) -> None:
    repo = make_repo(tmp_path, None)
    code, out, err = run_cli(["pull", str(repo), "--dry-run", f"--deadline={value}"])
    assert (code, out) == (2, "")
    assert "argument --deadline" in err and "internal error" not in err


# -- size ------------------------------------------------------------------------------------------


def test_an_answer_declared_larger_than_a_trace_may_be_is_refused_unread(fake: Fake, pulled: Path) -> None:
    before = committed(pulled)
    sent: list[int] = []

    def huge(handler: _Handler, window: dict[str, int]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(500_000_000))
        handler.end_headers()
        piece = b" " * 65_536
        for _ in range(8):  # a few pieces, then wait for the client to hang up (bounded)
            handler.wfile.write(piece)
            sent.append(len(piece))
        handler.stopping.wait(5)

    fake.does(huge)
    code, out, err = pull(pulled)
    # the default limit on a Prometheus trace: 64 MiB
    assert_one_failure(code, out, err, "the answer is larger than 67,108,864 bytes, the most a trace may hold")
    assert committed(pulled) == before


def test_an_answer_streamed_past_the_limit_is_cut_while_it_is_read(fake: Fake, tmp_path: Path) -> None:
    repo = make_repo(tmp_path, fake.url, "  max-attempts: 1\nlimits:\n  max-trace-bytes: 100000\n")
    sent = [0]

    def endless(handler: _Handler, window: dict[str, int]) -> None:
        handler.protocol_version = "HTTP/1.0"  # no length: the body ends when the connection closes
        handler.send_response(200)
        handler.end_headers()
        handler.wfile.write(b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[')
        piece = b"[1,\"1\"]," * 8192
        while sent[0] < 200_000_000 and not handler.stopping.is_set():
            handler.wfile.write(piece)
            sent[0] += len(piece)

    fake.does(endless)
    code, out, err = pull(repo)
    assert_one_failure(code, out, err, "the answer is larger than 100,000 bytes")
    assert sent[0] < 50_000_000  # the client hung up long before the end
    assert committed(repo) == {}


def test_answers_of_one_trace_together_past_the_limit_are_refused(fake: Fake, tmp_path: Path) -> None:
    # 30 days at one minute: 43,201 points, four requests of about 210 KB each
    repo = make_repo(tmp_path, fake.url, "  max-attempts: 1\nlimits:\n  max-trace-bytes: 300000\n")
    workload = repo / "workloads" / "chat.yaml"
    workload.write_text(WORKLOAD.replace("lookback: 1h", "lookback: 30d"), encoding="utf-8")
    code, out, err = pull(repo)
    assert_one_failure(code, out, err, "the answers for this trace come to more than 300,000 bytes")
    assert committed(repo) == {}


# -- strict answers --------------------------------------------------------------------------------


def samples(values: list[Any]) -> Behaviour:
    """A matrix whose one series holds ``values`` as given (times are relative to the window)."""

    def behaviour(handler: _Handler, window: dict[str, int]) -> None:
        shifted = [[window["start"] + v[0], v[1]] if isinstance(v, list) and len(v) == 2 and type(v[0]) is int else v for v in values]
        doc = {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": shifted}]}}
        handler.answer(200, json.dumps(doc).encode())

    return behaviour


def raw_answer(text: str) -> Behaviour:
    """Exactly ``text`` (``START`` replaced by the window's start)."""
    return lambda h, w: h.answer(200, text.replace("START", str(w["start"])).encode())


BAD_ANSWERS: dict[str, tuple[Behaviour, str]] = {
    "bare Infinity value": (raw_answer('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[START,Infinity]]}]}}'), "holds a bare Infinity"),
    "bare NaN time": (raw_answer('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[NaN,"1"]]}]}}'), "holds a bare NaN"),
    "+Inf value": (samples([[0, "1"], [60, "+Inf"]]), "sample 2 has the value '+Inf', not a finite number"),
    "Infinity value": (samples([[0, "Infinity"]]), "sample 1 has the value 'Infinity', not a finite number"),
    "overflowing value": (samples([[0, "1e999"]]), "not a finite number"),
    "time beyond float": (raw_answer('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1e999,"1"]]}]}}'), "has a time that is not a finite number"),
    "unsorted": (samples([[120, "1"], [60, "1"]]), "sample 2 has the time"),
    "duplicate time": (samples([[60, "1"], [60, "1"]]), "not after the sample before it"),
    "time off the step": (samples([[30, "1"]]), "not one of the requested"),
    "time outside the window": (samples([[7200, "1"]]), "not one of the requested"),
    "three items": (samples([[0, "1", "2"]]), 'is not a [time, "value"] pair'),
    "number value": (samples([[0, 1]]), 'is not a [time, "value"] pair'),
    "text time": (raw_answer('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[["START","1"]]}]}}'), "has a time that is not a finite number"),
    "value with spaces": (samples([[0, " 1"]]), "not a finite number"),
    "negative value": (samples([[0, "-3"]]), "the answer is not a usable trace"),
    "label not text": (lambda h, w: h.json(200, matrix(w, metric={"pod": 3})), "labels that are not text"),  # type: ignore[dict-item]
    "series twice": (lambda h, w: h.json(200, {"status": "success", "data": {"resultType": "matrix", "result": matrix(w)["data"]["result"] * 2}}), "appears twice in one answer"),
    "no values": (lambda h, w: h.json(200, {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}}]}}), "has no values list"),
    "only empty series": (lambda h, w: h.json(200, {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": []}]}}), "the query returned no samples between 2026-09-01T00:00:00Z and 2026-09-01T01:00:00Z"),
    "lone surrogate in a label": (raw_answer('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"\\ud800"},"values":[[START,"1"]]}]}}'), "has a label that is not valid Unicode"),
    "vector": (lambda h, w: h.json(200, {"status": "success", "data": {"resultType": "vector", "result": []}}), "expected a range (matrix) answer"),
    "not JSON": (raw_answer("<html>proxy error</html>"), "the answer is not JSON"),
    "deep nesting": (raw_answer("[" * 100_000), "the answer is not JSON"),
    "integer time beyond float": (raw_answer('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[' + "9" * 400 + ',"1"]]}]}}'), "not one of the requested"),  # found by the pull fuzz target
    "long integer": (raw_answer('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[' + "9" * 5000 + ',"1"]]}]}}'), "the answer is not JSON"),
    "top-level list": (raw_answer("[]"), "not a Prometheus answer"),
}


@pytest.mark.parametrize("case", list(BAD_ANSWERS))
def test_an_invalid_answer_never_replaces_the_committed_trace(fake: Fake, pulled: Path, case: str) -> None:
    before = committed(pulled)
    behaviour, needle = BAD_ANSWERS[case]
    fake.does(behaviour)
    code, out, err = pull(pulled)
    assert_one_failure(code, out, err, needle)
    assert committed(pulled) == before
    assert [p.name for p in (pulled / "measurements").iterdir() if p.name.startswith(".")] == []  # no temporary left
    # and the committed trace is still one check reads
    assert run_cli(["check", str(pulled), "--select", "PL022,PL023"])[0] == 0


def test_nan_samples_are_missing_samples_and_kept(fake: Fake, pulled: Path) -> None:
    fake.does(samples([[0, "1"], [60, "NaN"], [120, "2.5"]]))
    code, _, err = pull(pulled, "--quiet")
    assert code == 0, err
    [series] = json.loads((pulled / "measurements" / "chat.json").read_text())["data"]["result"]
    assert series["values"] == [[END - 3600, "1"], [END - 3540, "NaN"], [END - 3480, "2.5"]]


# -- server text -----------------------------------------------------------------------------------

ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x9b1m\u202eevil\r\nforged"


@pytest.mark.parametrize(
    "behaviour",
    [
        lambda h, w: h.json(400, {"status": "error", "error": ESCAPES}),
        lambda h, w: h.json(200, {"status": "error", "error": ESCAPES}),
        lambda h, w: h.json(503, {"status": "error", "error": ESCAPES}, {"Retry-After": "0"}),
        lambda h, w: h.json(200, matrix(w, value="-1", metric={"pod": ESCAPES})),  # the label shows in the reader's message
        lambda h, w: h.json(200, {**matrix(w), "data": {"resultType": "matrix", "result": [{"metric": {"pod": ESCAPES}, "values": [[w["start"], "x"]]}]}}),
    ],
    ids=["4xx", "200-error", "5xx-retried", "label-in-reader-message", "label-in-client-message"],
)
def test_server_text_is_printed_with_its_control_characters_escaped(fake: Fake, pulled: Path, behaviour: Behaviour) -> None:
    repo = pulled
    (repo / ".policylint.yaml").write_text(f"prometheus:\n  url: {fake.url}\n  max-attempts: 2\n", encoding="utf-8")
    fake.does(behaviour)
    code, out, err = pull(repo)
    assert code == 2 and "internal error" not in err
    for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\r"):
        assert raw not in out + err, repr(raw)
    assert "\\x1b]0;owned\\x07" in err and "\\r\\nforged" in err
    assert not [line for line in (out + err).splitlines() if line.startswith("forged")]  # no line of the server's making


# -- URLs ------------------------------------------------------------------------------------------

BAD_URLS = {
    "bad port": ("http://127.0.0.1:99999", "'http://127.0.0.1:99999' has a bad port: it must be a number from 1 to 65535"),
    "port not a number": ("http://127.0.0.1:ab", "has a bad port"),
    "port zero": ("http://127.0.0.1:0", "has a bad port"),
    "space": ("http://127.0.0.1:9/pro metheus", "holds a space or a control character; a URL may hold neither"),
    "CR/LF": ("http://127.0.0.1:9\r\nX-Injected: 1", "'http://127.0.0.1:9\\r\\nX-Injected: 1' holds a space or a control character"),
    "broken IPv6": ("http://[::1:9090", "is not a valid URL: Invalid IPv6 URL (an IPv6 address is written whole in brackets"),
    "not IPv6 in brackets": ("http://[127.0.0.1]:9", "is not a valid URL"),
    "query": ("http://127.0.0.1:9/?token=abc", "has a query (?...) or fragment (#...)"),
    "no host": ("http://:9090", "has no valid host name"),
    "scheme": ("ftp://127.0.0.1", "must be http:// or https:// with a host"),
    "non-ASCII": ("http://127.0.0.1:9/pr\u00f6m", "holds characters outside ASCII"),
}


@pytest.mark.parametrize("case", list(BAD_URLS))
def test_a_bad_url_flag_is_one_clear_error(tmp_path: Path, case: str) -> None:
    url, needle = BAD_URLS[case]
    repo = make_repo(tmp_path, None)
    for extra in ([], ["--dry-run"]):
        code, out, err = run_cli(["pull", str(repo), "--url", url, *extra])
        assert (code, out) == (2, "")
        assert err.startswith("policylint: error: --url ") and err.count("\n") == 1, err
        assert needle in err
        assert "token=abc" not in err and "\r" not in err
    assert not (repo / "measurements").exists()


@pytest.mark.parametrize("case", ["bad port", "broken IPv6", "CR/LF"])
def test_a_bad_url_in_the_environment_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    url, needle = BAD_URLS[case]
    monkeypatch.setenv("POLICYLINT_PROMETHEUS_URL", url)
    repo = make_repo(tmp_path, None)
    code, out, err = pull(repo)
    assert (code, out) == (2, "")
    assert err.startswith("policylint: error: $POLICYLINT_PROMETHEUS_URL ") and err.count("\n") == 1, err
    assert needle.split("'")[-1] in err


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999", "http://[::1:9090 x"])
def test_a_bad_url_in_the_configuration_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.delenv("POLICYLINT_PROMETHEUS_URL", raising=False)
    repo = make_repo(tmp_path, None, f"prometheus:\n  url: '{url}'\n")
    code, out, err = pull(repo)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "internal error" not in err, err
    assert "prometheus.url" in err


# -- the happy path, for contrast ------------------------------------------------------------------


def test_a_good_answer_replaces_the_trace_through_the_safe_writer(fake: Fake, pulled: Path) -> None:
    fake.does(lambda h, w: h.json(200, matrix(w, value="7")))
    trace = pulled / "measurements" / "chat.json"
    trace.chmod(0o640)
    code, out, err = pull(pulled)
    assert (code, err) == (0, "pulling chat concurrency (1 request)\n")
    assert out == "pulled chat concurrency: 1 series, 61 samples -> measurements/chat.json\n"
    [series] = json.loads(trace.read_text())["data"]["result"]
    assert {v for _, v in series["values"]} == {"7"}
    assert trace.stat().st_mode & 0o777 == 0o640  # the writer keeps the mode of the file it replaces


def test_a_trace_linked_out_of_the_repository_is_not_written_through(fake: Fake, pulled: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("keep\n", encoding="utf-8")
    trace = pulled / "measurements" / "chat.json"
    trace.unlink()
    trace.symlink_to(outside)
    code, out, err = pull(pulled)
    assert code == 2 and "leaves the repository root; pull does not write there" in err
    assert outside.read_text(encoding="utf-8") == "keep\n"
