"""``prometheus.headers``: extra headers on every request of ``policylint pull``, each value a secret.

A Mimir, Cortex or Thanos tenant is chosen with ``X-Scope-OrgID``; a gateway may
want its own key header. The values are given in the configuration or read from
an environment variable named there, sent on every request (retries included),
and scrubbed from every message and written file exactly like the bearer token.
A name or value that cannot be a header is one error naming the file and key.

The tests drive the CLI against the scripted local server of
``test_pull_hardening.py`` and, for contrast, the real Prometheus of ``test_pull.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
from conftest import REPO, run_cli
from test_pull import END as REAL_END
from test_pull import N, Servers, _repo, servers  # noqa: F401 - the session fixture of the real servers
from test_pull_hardening import (
    Behaviour,
    Fake,
    _Handler,
    assert_one_failure,
    committed,
    fake,  # noqa: F401 - the fixture
    good,
    make_repo,
    matrix,
    pull,
    pulled,  # noqa: F401 - the fixture
)

TENANT = "tenant-7f3a91c2"
#: a key with characters that JSON and URLs escape, so every spelling is looked for
KEY = 'k3y/"e+5 9%x'
SETTINGS = "  max-attempts: 3\n  headers:\n    X-Scope-OrgID: tenant-7f3a91c2\n    X-Gateway-Key: {env: GATEWAY_KEY}\n"


def written(repo: Path) -> str:
    """Every file of the repository but its configuration (which holds the literal tenant)."""
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(repo.rglob("*"))
        if p.is_file() and p.name != ".policylint.yaml"
    )


def _spellings(value: str) -> list[str]:
    return [value, json.dumps(value)[1:-1], urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)]


def _recording(into: list[dict[str, str]], then: Behaviour) -> Behaviour:
    """``then``, after noting the configured headers the request carried."""

    def behaviour(handler: _Handler, window: dict[str, int]) -> None:
        into.append({k: handler.headers.get(k, "") for k in ("X-Scope-OrgID", "X-Gateway-Key", "Authorization")})
        then(handler, window)

    return behaviour


def _echo(status: int, headers: dict[str, str] | None = None) -> Behaviour:
    """An error answer repeating both configured headers, raw, URL-quoted and JSON-escaped."""

    def behaviour(handler: _Handler, window: dict[str, int]) -> None:
        tenant, key = handler.headers.get("X-Scope-OrgID", ""), handler.headers.get("X-Gateway-Key", "")
        text = f"denied for {tenant} with {key} quoted {urllib.parse.quote(key, safe='')} json {json.dumps(key)}"
        handler.json(status, {"status": "error", "errorType": "bad_data", "error": text}, headers)

    return behaviour


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("GATEWAY_KEY", KEY)
    return KEY


def test_the_headers_reach_the_server_on_every_request_and_attempt(fake: Fake, tmp_path: Path, key: str) -> None:
    seen: list[dict[str, str]] = []
    attempts = iter([503, 200])

    def flaky(handler: _Handler, window: dict[str, int]) -> None:
        if next(attempts) == 503:
            handler.json(503, {"status": "error", "error": "busy"}, {"Retry-After": "0"})
        else:
            good(handler, window)

    fake.does(_recording(seen, flaky))
    repo = make_repo(tmp_path, fake.url, SETTINGS)
    code, out, err = pull(repo, "--quiet")
    assert (code, out, err) == (0, "", "")
    assert seen == [{"X-Scope-OrgID": TENANT, "X-Gateway-Key": key, "Authorization": ""}] * 2
    assert TENANT not in written(repo) and key not in written(repo)


def test_the_headers_travel_beside_a_bearer_token(fake: Fake, tmp_path: Path, key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLICYLINT_PROMETHEUS_TOKEN", "tok-31c6")
    seen: list[dict[str, str]] = []
    fake.does(_recording(seen, good))
    code, _, err = pull(make_repo(tmp_path, fake.url, SETTINGS), "--quiet")
    assert code == 0, err
    assert seen == [{"X-Scope-OrgID": TENANT, "X-Gateway-Key": key, "Authorization": "Bearer tok-31c6"}]


@pytest.mark.parametrize(
    ("status", "headers", "needle"),
    [
        (503, {"Retry-After": "0"}, "gave up after 3 attempts; last: HTTP 503: denied for *** with *** quoted *** json \"***\""),
        (429, {"Retry-After": "0"}, "gave up after 3 attempts; last: HTTP 429: denied for *** with ***"),
        (200, None, "query failed: denied for *** with *** quoted *** json \"***\""),
        (403, None, "HTTP 403: denied for *** with ***"),
    ],
    ids=["retried-5xx", "retried-429", "200-status-error", "not-retried-403"],
)
def test_an_answer_echoing_the_headers_never_prints_them(
    fake: Fake, tmp_path: Path, key: str, status: int, headers: dict[str, str] | None, needle: str
) -> None:
    seen: list[dict[str, str]] = []
    fake.does(_recording(seen, _echo(status, headers)))
    repo = make_repo(tmp_path, fake.url, SETTINGS)
    code, out, err = pull(repo)
    assert_one_failure(code, out, err, needle)
    for spelling in [*_spellings(TENANT), *_spellings(key)]:
        assert spelling not in out + err + written(repo), spelling
    assert len(seen) == (3 if status in (503, 429) else 1)


def test_a_label_holding_a_header_value_is_refused_and_not_written(fake: Fake, pulled: Path, key: str) -> None:
    before = committed(pulled)
    (pulled / ".policylint.yaml").write_text(
        (pulled / ".policylint.yaml").read_text(encoding="utf-8") + "  headers:\n    X-Gateway-Key: {env: GATEWAY_KEY}\n",
        encoding="utf-8",
    )
    fake.does(lambda h, w: h.json(200, matrix(w, metric={"gateway": h.headers.get("X-Gateway-Key", "")})))
    code, out, err = pull(pulled)
    assert_one_failure(code, out, err, "has a label holding the credential sent to the server")
    assert key not in out + err + written(pulled)
    assert committed(pulled) == before


# -- names and values that cannot be a header: exit 2, one message naming the file and the key ---------

BAD = {
    "space in name": ("    X Bad: v\n", "at key 'prometheus.headers': 'X Bad' is not a header name", None),
    "colon in name": ("    'X-A:b': v\n", "at key 'prometheus.headers': 'X-A:b' is not a header name", None),
    "Host": ("    Host: evil.example\n", "at key 'prometheus.headers.Host': Host is set by policylint itself", "evil.example"),
    "Content-Length": ("    content-length: '0'\n", "at key 'prometheus.headers.content-length': content-length is set by policylint itself", None),
    "CR/LF in value": ('    X-A: "v\\r\\nX-Injected: 1"\n', "at key 'prometheus.headers.X-A': the value holds a line break (CR or LF)", "X-Injected"),
    "LF in value": ('    X-A: "v\\nX-Injected: 1"\n', "at key 'prometheus.headers.X-A': the value holds a line break (CR or LF)", "X-Injected"),
    "non-ASCII value": ("    X-A: t\u00e9nant\n", "at key 'prometheus.headers.X-A': the value holds a control character or a character outside ASCII", "nant"),
    "empty value": ("    X-A: ''\n", "at key 'prometheus.headers.X-A': the value is empty", None),
    "number value": ("    X-A: 58213\n", "at key 'prometheus.headers.X-A': must be a string, or {env: VARIABLE}", "58213"),
    "bad env name": ("    X-A: {env: 'A-B'}\n", "at key 'prometheus.headers.X-A.env': env must name an environment variable", None),
    "same name twice": ("    X-A: v-one-83\n    x-a: v-two-83\n", "at key 'prometheus.headers.x-a': the same header as X-A (header names ignore case)", "v-"),
    "not a mapping": ("    - X-A\n", "at key 'prometheus.headers': must be a mapping of header names to values", None),
}


#: line:col of each case's key in the configuration (prometheus: on line 1, url on 2, headers on 3)
WHERE = {"space in name": "3:3", "colon in name": "3:3", "Host": "4:5", "Content-Length": "4:5", "CR/LF in value": "4:5",
         "LF in value": "4:5", "non-ASCII value": "4:5", "empty value": "4:5", "number value": "4:5",
         "bad env name": "4:11", "same name twice": "5:5", "not a mapping": "3:3"}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_header_setting_is_one_error_naming_file_and_key(fake: Fake, tmp_path: Path, case: str) -> None:
    entry, needle, hidden = BAD[case]
    repo = make_repo(tmp_path, fake.url, "  headers:\n" + entry)
    for extra in ([], ["--dry-run"]):
        code, out, err = pull(repo, *extra)
        assert (code, out) == (2, ""), err
        assert err.startswith(f"policylint: error: {repo / '.policylint.yaml'}:{WHERE[case]} {needle}"), err
        assert err.count("\n") == 1 and "Traceback" not in err
        if hidden is not None:
            assert hidden not in err
    assert fake.seen == []  # refused before any request
    assert not (repo / "measurements").exists()


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (None, "$GATEWAY_KEY is not set or empty"),
        ("", "$GATEWAY_KEY is not set or empty"),
        ("k\r\nX-Injected: 1", "$GATEWAY_KEY holds a line break (CR or LF), which would end the header and start another; its value is not shown"),
        ("k\x1b[2J", "$GATEWAY_KEY holds a control character or a character outside ASCII, which a header cannot carry as it is; its value is not shown"),
    ],
    ids=["unset", "empty", "crlf", "escape"],
)
def test_a_header_variable_that_cannot_be_sent_is_one_error(
    fake: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str | None, needle: str
) -> None:
    if value is None:
        monkeypatch.delenv("GATEWAY_KEY", raising=False)
    else:
        monkeypatch.setenv("GATEWAY_KEY", value)
    repo = make_repo(tmp_path, fake.url, "  headers:\n    X-Gateway-Key: {env: GATEWAY_KEY}\n")
    code, out, err = pull(repo)
    assert (code, out) == (2, "")
    assert err == f"policylint: error: {repo / '.policylint.yaml'}:4:5 at key 'prometheus.headers.X-Gateway-Key': {needle}\n"
    assert "X-Injected" not in err and "\x1b" not in err
    assert fake.seen == []


def test_authorization_cannot_be_configured_beside_a_token(fake: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLICYLINT_PROMETHEUS_TOKEN", "tok-31c6")
    repo = make_repo(tmp_path, fake.url, "  headers:\n    Authorization: ApiKey abc123\n")
    code, out, err = pull(repo)
    assert (code, out) == (2, "")
    assert err == (
        f"policylint: error: {repo / '.policylint.yaml'}:4:5 at key 'prometheus.headers.Authorization': Authorization is "
        "already sent for $POLICYLINT_PROMETHEUS_TOKEN; configure this header or set that variable, not both\n"
    )
    assert "abc123" not in err and "tok-31c6" not in err


def test_a_custom_authorization_header_is_sent_without_a_token(fake: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POLICYLINT_PROMETHEUS_TOKEN", raising=False)
    monkeypatch.setenv("GATEWAY_KEY", "ApiKey abc123")
    seen: list[dict[str, str]] = []
    fake.does(_recording(seen, lambda h, w: h.json(401, {"status": "error", "error": f"bad {h.authorization}"})))
    repo = make_repo(tmp_path, fake.url, "  headers:\n    Authorization: {env: GATEWAY_KEY}\n")
    code, out, err = pull(repo)
    assert_one_failure(code, out, err, "HTTP 401: bad ***")
    assert seen == [{"X-Scope-OrgID": "", "X-Gateway-Key": "", "Authorization": "ApiKey abc123"}]
    assert "abc123" not in out + err


def test_policylint_config_shows_where_a_value_comes_from_not_the_value(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "http://127.0.0.1:9", SETTINGS)
    code, out, err = run_cli(["config", str(repo)])
    assert code == 0, err
    assert TENANT not in out
    assert "$GATEWAY_KEY" in out and "(set)" in out


def test_check_with_headers_configured_never_loads_the_client(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "http://127.0.0.1:9", SETTINGS)
    script = (
        "import sys\n"
        "from policylint.cli import main\n"
        f"main(['check', {str(repo)!r}, '--no-cache'])\n"
        "sys.stderr.write(str('policylint.measure.sources.prometheus' in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.stderr.strip().splitlines()[-1] == "False", done.stderr[-2000:]


# -- a real Prometheus takes the request with the headers --------------------------------------------------


@pytest.mark.realtool
def test_a_real_prometheus_answers_a_pull_carrying_the_headers(
    servers: Servers, tmp_path: Path, key: str  # noqa: F811 - the imported fixture
) -> None:
    repo = _repo(tmp_path, servers.plain, SETTINGS)
    code, out, err = run_cli(["pull", str(repo), "--end", str(REAL_END)])
    assert code == 0, err
    assert f"pulled chat concurrency: 1 series, {N:,} samples -> measurements/chat.json" in out
    for spelling in [*_spellings(TENANT), *_spellings(key)]:
        assert spelling not in out + err + written(repo)
