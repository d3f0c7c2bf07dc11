"""A small client of Prometheus' ``/api/v1/query_range``, for ``policylint pull``.

Standard library only (``urllib``, ``ssl``, ``json``): the lint never imports it,
and ``pull`` needs nothing a plain Python lacks. What it takes care of:

- **Chunks.** Prometheus refuses a range query that would return more than
  11,000 points per series; a long lookback at a fine step is cut into windows of
  at most :data:`MAX_POINTS` steps, and the windows' series are joined by their
  label sets.
- **Politeness.** A 429, a 5xx answer, a refused or dropped connection or a
  timeout is retried after a growing pause (or the server's ``Retry-After``),
  at most ``max_attempts`` times in all; any other error stops at once with the
  server's own explanation.
- **Secrets.** A bearer token or a user and password come from environment
  variables only and travel in the ``Authorization`` header; they are never part
  of a message, and redirects are refused so the header cannot follow one to
  another host. The server is named by scheme, host, port and path only.
- **TLS.** A custom certificate authority (``ca_file``) for servers behind a
  private CA.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policylint.errors import PolicylintError

#: Prometheus' own limit on points per series in one range query.
MAX_POINTS = 11_000
#: Largest answer read from the server for one chunk (a chunk of 11,000 points of many
#: series stays far below; more is a misdirected query).
MAX_ANSWER_BYTES = 512 * 1024 * 1024
#: Longest pause between attempts, seconds, whatever the server asks for.
MAX_PAUSE_SECONDS = 60.0

ENV_URL = "POLICYLINT_PROMETHEUS_URL"
ENV_TOKEN = "POLICYLINT_PROMETHEUS_TOKEN"
ENV_USER = "POLICYLINT_PROMETHEUS_USER"
ENV_PASSWORD = "POLICYLINT_PROMETHEUS_PASSWORD"
ENV_CA = "POLICYLINT_PROMETHEUS_CA_FILE"

Series = dict[str, Any]


@dataclass
class ServerSettings:
    """Where and how to reach the server. ``repr`` never shows the secrets."""

    url: str
    token: str | None = field(default=None, repr=False)
    user: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    timeout_seconds: float = 60.0
    max_attempts: int = 5
    #: first pause between attempts, seconds; doubled after each failure
    backoff_seconds: float = 1.0

    @property
    def name(self) -> str:
        """The server as recorded in provenance and messages: no credentials, no query string."""
        return server_name(self.url)

    def secrets(self) -> list[str]:
        """Every secret value in use (for tests and for scrubbing messages)."""
        return [s for s in (self.token, self.password) if s]


def server_name(url: str) -> str:
    """``url`` without user information, query or fragment (``https://host:9090/prom``)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def settings_from(
    env: Mapping[str, str], *, url: str | None = None, ca_file: str | None = None, source: str = "environment"
) -> ServerSettings:
    """Settings from an explicit ``url`` (flag or configuration) over ``$POLICYLINT_PROMETHEUS_URL``,
    with the credentials and CA file from the environment."""
    chosen = url or env.get(ENV_URL) or ""
    if not chosen:
        raise PolicylintError(
            f"no Prometheus server: set prometheus.url in the configuration, ${ENV_URL}, or --url"
        )
    parts = urllib.parse.urlsplit(chosen)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PolicylintError(f"the Prometheus URL must be http:// or https:// with a host, got {server_name(chosen)!r}")
    if parts.username or parts.password:
        # A password in a URL ends up in shell history and configuration files.
        raise PolicylintError(
            f"the Prometheus URL {server_name(chosen)} carries credentials; use ${ENV_USER} and ${ENV_PASSWORD} instead"
        )
    token = env.get(ENV_TOKEN) or None
    user = env.get(ENV_USER) or None
    password = env.get(ENV_PASSWORD) or None
    if token and (user or password):
        raise PolicylintError(f"set either ${ENV_TOKEN} or ${ENV_USER}/${ENV_PASSWORD}, not both")
    if (user is None) != (password is None):
        raise PolicylintError(f"basic auth needs both ${ENV_USER} and ${ENV_PASSWORD}")
    ca = env.get(ENV_CA) or ca_file
    if ca is not None and not os.path.isfile(ca):
        raise PolicylintError(f"CA file {ca} does not exist or is not a file", source=source)
    return ServerSettings(url=chosen.rstrip("/"), token=token, user=user, password=password, ca_file=ca)


def chunks(start: int, end: int, step: int, max_points: int = MAX_POINTS) -> list[tuple[int, int]]:
    """Windows ``(start, end)`` covering ``start..end`` at ``step`` with at most ``max_points``
    evaluation times each, consecutive and without overlap."""
    out = []
    span = (max_points - 1) * step
    at = start
    while at <= end:
        stop = min(end, at + span)
        out.append((at, stop))
        at = stop + step
    return out


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would send the Authorization header to wherever they point."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        raise urllib.error.HTTPError(req.full_url, code, f"redirected ({code}); refusing to follow", headers, fp)


def _scrub(text: str, settings: ServerSettings) -> str:
    for secret in settings.secrets():
        text = text.replace(secret, "***")
    return text


class Client:
    """Range queries against one server. ``sleep`` is replaceable so retries can be tested quickly."""

    def __init__(self, settings: ServerSettings, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.settings = settings
        self.sleep = sleep
        context = None
        if settings.url.startswith("https://"):
            try:
                context = ssl.create_default_context(cafile=settings.ca_file)
            except (OSError, ssl.SSLError) as exc:
                raise PolicylintError(f"cannot use CA file {settings.ca_file}: {exc}") from None
        self._opener = urllib.request.build_opener(_NoRedirect(), urllib.request.HTTPSHandler(context=context))
        #: attempts that failed and were retried (for the progress line and tests)
        self.retries = 0

    def _headers(self) -> dict[str, str]:
        from policylint import __version__

        headers = {
            "Accept": "application/json",
            "Content-Type": "application/x-www-form-urlencoded",
            "User-Agent": f"policylint/{__version__} (pull)",
        }
        s = self.settings
        if s.token:
            headers["Authorization"] = f"Bearer {s.token}"
        elif s.user is not None and s.password is not None:
            pair = base64.b64encode(f"{s.user}:{s.password}".encode()).decode("ascii")
            headers["Authorization"] = f"Basic {pair}"
        return headers

    def _post(self, path: str, form: Mapping[str, str]) -> Any:
        """POST ``form`` to ``path``; the decoded JSON answer, retried on transient failures."""
        s = self.settings
        body = urllib.parse.urlencode(form).encode("utf-8")
        url = f"{s.url}{path}"
        pause = s.backoff_seconds
        last = ""
        for attempt in range(1, s.max_attempts + 1):
            request = urllib.request.Request(url, data=body, headers=self._headers(), method="POST")
            wait: float | None = None
            try:
                with self._opener.open(request, timeout=s.timeout_seconds) as answer:
                    raw = answer.read(MAX_ANSWER_BYTES + 1)
                if len(raw) > MAX_ANSWER_BYTES:
                    raise PolicylintError(f"{s.name}: answer larger than {MAX_ANSWER_BYTES:,} bytes; refused")
                return _decode(raw, s.name)
            except urllib.error.HTTPError as exc:
                detail = _error_text(exc)
                if exc.code == 429 or 500 <= exc.code < 600:
                    last = f"HTTP {exc.code}{detail}"
                    wait = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
                else:
                    raise PolicylintError(_scrub(f"{s.name}: HTTP {exc.code}{detail}", s)) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, ssl.SSLCertVerificationError):
                    raise PolicylintError(
                        f"{s.name}: TLS certificate not trusted ({reason.verify_message}); "
                        f"name the server's CA with prometheus.ca-file or ${ENV_CA}"
                    ) from None
                last = _scrub(str(reason), s)
            if attempt == s.max_attempts:
                break
            self.retries += 1
            self.sleep(min(MAX_PAUSE_SECONDS, wait if wait is not None else pause))
            pause *= 2
        raise PolicylintError(f"{s.name}: gave up after {s.max_attempts} attempts; last: {last}")

    def query_range(
        self,
        query: str,
        start: int,
        end: int,
        step: int,
        *,
        progress: Callable[[int, int], None] | None = None,
        max_points: int = MAX_POINTS,
    ) -> list[Series]:
        """The series of ``query`` from ``start`` to ``end`` (unix seconds) at ``step`` seconds,
        fetched in windows of at most ``max_points`` points, joined per label set and sorted
        by labels. ``progress(done, total)`` is called after each window."""
        windows = chunks(start, end, step, max_points)
        joined: dict[str, Series] = {}
        for i, (a, b) in enumerate(windows, start=1):
            data = self._post("/api/v1/query_range", {"query": query, "start": str(a), "end": str(b), "step": str(step)})
            for series in _matrix(data, self.settings.name):
                key = json.dumps(series["metric"], sort_keys=True)
                if key in joined:
                    joined[key]["values"].extend(series["values"])
                else:
                    joined[key] = {"metric": series["metric"], "values": list(series["values"])}
            if progress is not None:
                progress(i, len(windows))
        return [joined[k] for k in sorted(joined)]


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: use our own pause
    return max(0.0, seconds)


def _error_text(exc: urllib.error.HTTPError) -> str:
    """``: <Prometheus' error>`` from an error answer's JSON, or ''."""
    try:
        raw = exc.read(65_536)
        doc = json.loads(raw)
    except Exception:  # noqa: BLE001 - an unreadable error body only loses the detail
        return ""
    if isinstance(doc, dict) and isinstance(doc.get("error"), str):
        return f": {doc['error'][:500]}"
    return ""


def _decode(raw: bytes, name: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise PolicylintError(f"{name}: the answer is not JSON; is the URL a Prometheus server?") from None


def _matrix(doc: Any, name: str) -> list[Series]:
    """The series of a query_range answer, checked for the shape the trace reader expects."""
    if not isinstance(doc, dict) or doc.get("status") != "success":
        error = doc.get("error") if isinstance(doc, dict) else None
        raise PolicylintError(f"{name}: query failed: {error or 'not a Prometheus answer'}")
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise PolicylintError(f"{name}: expected a range (matrix) answer")
    out = []
    for series in data["result"]:
        if not isinstance(series, dict) or not isinstance(series.get("values"), list):
            raise PolicylintError(f"{name}: a series of the answer has no values")
        metric = series.get("metric") if isinstance(series.get("metric"), dict) else {}
        out.append({"metric": metric, "values": series["values"]})
    return out
