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
- **Deadlines.** ``timeout_seconds`` bounds a whole request - connecting,
  waiting, and reading the complete answer - not each read: a server that
  trickles one byte a second is cut off when the time is up. ``deadline_seconds``
  bounds the whole run the same way; once it has passed nothing more is asked.
  The request runs in a worker thread the caller stops waiting for at the
  deadline, and its connection is shut down then, whatever it was doing.
- **Size.** An answer is read in pieces and counted; past ``max_answer_bytes``
  (for one answer, and for all the answers of one trace together) it is
  dropped unparsed.
- **Strict answers.** The answer must be a range (matrix) answer with string
  labels, ``[time, "value"]`` pairs, times on the requested step inside the
  requested window and increasing, values decimal numbers (``"NaN"``, a
  missing sample, allowed), no bare ``NaN``/``Infinity`` anywhere.
- **Secrets.** A bearer token or a user and password come from environment
  variables only and travel in the ``Authorization`` header. Configured extra
  headers (``prometheus.headers``: a tenant's ``X-Scope-OrgID``, a gateway's key)
  are sent with every request, and each of their values counts as a secret like
  the token. Every message the client makes is scrubbed of them - the token, the password, the
  ``user:password`` pair, its base64 form, and their JSON- and URL-escaped
  spellings - on every path, retried errors included; an answer whose labels
  carry one is refused. Redirects are refused so the header cannot follow one
  to another host. The server is named by scheme, host, port and path only.
- **Server text** (error explanations, labels in messages) is shown with its
  control characters escaped (``\\x1b``), so an answer cannot drive the terminal.
- **TLS.** A custom certificate authority (``ca_file``) for servers behind a
  private CA.
"""

from __future__ import annotations

import base64
import http.client
import ipaddress
import json
import math
import os
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policylint.errors import PolicylintError
from policylint.measure.sources.headers import HEADERS_KEY, check_header_settings, header_value_problem

#: Prometheus' own limit on points per series in one range query.
MAX_POINTS = 11_000
#: Largest answer read from the server for one trace when the caller names no limit
#: (``pull`` passes the trace readers' limit on a Prometheus file, so that nothing is
#: fetched that ``check`` would refuse).
MAX_ANSWER_BYTES = 64 * 1024 * 1024
#: Most samples held for one trace when the caller names no limit.
MAX_SAMPLES = 10_000_000
#: Longest pause between attempts, seconds, whatever the server asks for.
MAX_PAUSE_SECONDS = 60.0
#: Most bytes of an error answer read for its explanation, and most characters shown of it.
MAX_ERROR_BYTES = 65_536
MAX_DETAIL_CHARS = 500
#: Bytes read from the connection at a time.
_PIECE = 1 << 20

ENV_URL = "POLICYLINT_PROMETHEUS_URL"
ENV_TOKEN = "POLICYLINT_PROMETHEUS_TOKEN"
ENV_USER = "POLICYLINT_PROMETHEUS_USER"
ENV_PASSWORD = "POLICYLINT_PROMETHEUS_PASSWORD"
ENV_CA = "POLICYLINT_PROMETHEUS_CA_FILE"

Series = dict[str, Any]


class DeadlineExceeded(PolicylintError):
    """The run's deadline passed: the pull stops asking the server anything."""


# C0, DEL, C1, the Unicode line and paragraph separators and the bidirectional controls:
# anything that moves the cursor, starts a terminal sequence or reorders a line.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with control characters written as escapes (``\\x1b``, ``\\n``, ``\\u202e``).

    Backslashes are left alone, so escaping twice changes nothing.
    """
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)


@dataclass
class ServerSettings:
    """Where and how to reach the server. ``repr`` never shows the secrets."""

    url: str
    token: str | None = field(default=None, repr=False)
    user: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    #: extra headers sent with every request (``prometheus.headers``); every value is a secret
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    #: longest one request may take in all (connect, wait, read the whole answer), seconds
    timeout_seconds: float = 60.0
    max_attempts: int = 5
    #: first pause between attempts, seconds; doubled after each failure
    backoff_seconds: float = 1.0
    #: longest the whole run may take, seconds (None: no bound beyond the requests' own)
    deadline_seconds: float | None = None
    #: most bytes of one answer, and of all the answers of one trace together
    max_answer_bytes: int = MAX_ANSWER_BYTES
    #: most samples of one trace (all its series together)
    max_samples: int = MAX_SAMPLES

    @property
    def name(self) -> str:
        """The server as recorded in provenance and messages: no credentials, no query string."""
        return server_name(self.url)

    def secrets(self) -> list[str]:
        """Every secret in use, in every spelling a message could carry it, longest first."""
        plain = [s for s in (self.token, self.password, *self.headers.values()) if s]
        if self.user is not None and self.password:
            pair = f"{self.user}:{self.password}"
            plain += [pair, base64.b64encode(pair.encode()).decode("ascii")]
        forms: set[str] = set()
        for secret in plain:
            forms.update(
                (
                    secret,
                    json.dumps(secret)[1:-1],
                    json.dumps(secret, ensure_ascii=False)[1:-1],
                    urllib.parse.quote(secret, safe=""),
                    urllib.parse.quote(secret),
                    urllib.parse.quote_plus(secret, safe=""),
                    urllib.parse.quote_plus(secret),
                    printable(secret),
                    repr(secret)[1:-1],
                )
            )
        return sorted((f for f in forms if f), key=lambda f: (-len(f), f))

    def scrub(self, text: str) -> str:
        """``text`` without any secret, its control characters escaped: fit to print."""
        secrets = self.secrets()
        for secret in secrets:
            text = text.replace(secret, "***")
        text = printable(text)
        for secret in secrets:  # a secret holding a control character is now spelled escaped
            text = text.replace(secret, "***")
        return text


def server_name(url: str) -> str:
    """``url`` without user information, query or fragment (``https://host:9090/prom``).

    Never fails, whatever ``url`` holds: it names the server in error messages,
    also those about a malformed URL. Control characters are shown escaped.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        # a broken IPv6 literal or port: cut the text by hand, dropping anything before an '@'
        scheme, sep, rest = url.partition("://")
        if not sep:
            scheme, rest = "", url
        rest = re.split(r"[?#]", rest, maxsplit=1)[0]
        netloc, slash, path = rest.partition("/")
        netloc = netloc.rpartition("@")[2]
        shown = f"{scheme}://{netloc}{slash}{path}".rstrip("/") if sep else f"{netloc}{slash}{path}".rstrip("/")
        return printable(shown)
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return printable(urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", "")))


_HOST = re.compile(r"^[A-Za-z0-9._-]+$")


def check_url(url: str, origin: str = "the Prometheus URL") -> str:
    """``url`` as the base of the API (no final ``/``), or a :class:`PolicylintError` saying what
    is wrong with it. ``origin`` names where the URL came from (``--url``, a variable, a key)."""
    shown = server_name(url)
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise PolicylintError(f"{origin} '{shown}' holds a space or a control character; a URL may hold neither")
    if not url.isascii():
        raise PolicylintError(
            f"{origin} '{shown}' holds characters outside ASCII; write an international host name in its xn-- form "
            "and escape the path with %XX"
        )
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as exc:
        hint = " (an IPv6 address is written whole in brackets, as in http://[2001:db8::1]:9090)" if "IPv6" in str(exc) else ""
        raise PolicylintError(f"{origin} '{shown}' is not a valid URL: {exc}{hint}") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PolicylintError(f"{origin} must be http:// or https:// with a host, got '{shown}'")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        # A password in a URL ends up in shell history and configuration files.
        raise PolicylintError(
            f"the Prometheus URL {shown} carries credentials; use ${ENV_USER} and ${ENV_PASSWORD} instead"
        )
    try:
        port = parts.port
    except ValueError:
        port = 0
    port_text = parts.netloc.rpartition("]")[2] if parts.netloc.startswith("[") else parts.netloc
    if port == 0 and ":" in port_text:
        where = printable(f"{parts.scheme}://{parts.netloc}")  # no user information: refused above
        raise PolicylintError(f"{origin} '{where}' has a bad port: it must be a number from 1 to 65535")
    host = parts.hostname or ""
    if parts.netloc.startswith("["):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise PolicylintError(f"{origin} '{shown}': {host!r} in brackets is not an IPv6 address") from None
    elif not host or not _HOST.match(host) or host.startswith((".", "-")) or ".." in host:
        raise PolicylintError(f"{origin} '{shown}' has no valid host name")
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise PolicylintError(
            f"{origin} '{shown}' has a query (?...) or fragment (#...); give the server's base URL only"
        )
    return url.rstrip("/")


def resolve_headers(
    configured: Mapping[str, str | Mapping[str, str]], env: Mapping[str, str], *, source: str
) -> dict[str, str]:
    """The headers of ``prometheus.headers`` with every ``{env: VARIABLE}`` replaced by the variable's value.

    Everything is checked again (the settings may come from code, not a file).
    """
    headers: dict[str, str] = {}
    for name, checked in check_header_settings(configured, source=source).items():
        key = f"{HEADERS_KEY}.{name}"
        if isinstance(checked, dict):
            variable = checked["env"]
            found = env.get(variable)
            if not found:
                raise PolicylintError(f"${variable} is not set or empty", source=source, key=key)
            problem = header_value_problem(found)
            if problem is not None:
                raise PolicylintError(f"${variable} {problem}; its value is not shown", source=source, key=key)
            headers[name] = found
        else:
            headers[name] = checked
    return headers


def settings_from(
    env: Mapping[str, str],
    *,
    url: str | None = None,
    ca_file: str | None = None,
    source: str = "environment",
    origin: str = "the Prometheus URL",
    headers: Mapping[str, str | Mapping[str, str]] | None = None,
) -> ServerSettings:
    """Settings from an explicit ``url`` (flag or configuration) over ``$POLICYLINT_PROMETHEUS_URL``,
    with the credentials and CA file from the environment. ``origin`` names where ``url`` came from;
    ``headers`` are ``prometheus.headers`` of the configuration file ``source``."""
    chosen = url or env.get(ENV_URL) or ""
    if not url and chosen:
        origin = f"${ENV_URL}"
    if not chosen:
        raise PolicylintError(
            f"no Prometheus server: set prometheus.url in the configuration, ${ENV_URL}, or --url"
        )
    base = check_url(chosen, origin)
    token = env.get(ENV_TOKEN) or None
    user = env.get(ENV_USER) or None
    password = env.get(ENV_PASSWORD) or None
    if token and (user or password):
        raise PolicylintError(f"set either ${ENV_TOKEN} or ${ENV_USER}/${ENV_PASSWORD}, not both")
    if (user is None) != (password is None):
        raise PolicylintError(f"basic auth needs both ${ENV_USER} and ${ENV_PASSWORD}")
    # Checked here, never shown: a header cannot carry these, and http.client would fail deep inside.
    if token is not None and not all("!" <= ch <= "~" for ch in token):
        raise PolicylintError(
            f"${ENV_TOKEN} holds a space, a control character or a character outside ASCII, "
            "which a bearer token cannot; its value is not shown"
        )
    if user is not None and (":" in user or not user.isprintable()):
        raise PolicylintError(f"${ENV_USER} holds a ':' or a control character, which basic auth cannot carry")
    extra = resolve_headers(headers or {}, env, source=source)
    for name in extra:
        if name.lower() == "authorization" and (token or user):
            raise PolicylintError(
                f"Authorization is already sent for ${ENV_TOKEN if token else ENV_USER}; "
                "configure this header or set that variable, not both",
                source=source,
                key=f"{HEADERS_KEY}.{name}",
            )
    ca = env.get(ENV_CA) or ca_file
    if ca is not None and not os.path.isfile(ca):
        raise PolicylintError(f"CA file {printable(ca)} does not exist or is not a file", source=source)
    return ServerSettings(url=base, token=token, user=user, password=password, ca_file=ca, headers=extra)


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


class _Watch:
    """The sockets of one attempt, shut down when its time is up (from the waiting thread).

    A socket is tracked as soon as it is connected (urllib drops the connection's own
    reference once the headers are in, while the body is still being read from it).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.cut = False

    def track(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            cut = self.cut
        if cut:
            _shut(sock)

    def stop(self) -> None:
        with self._lock:
            self.cut = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        # the plain socket's shutdown, also for a TLS socket: ends a read blocked in another thread
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


class _HTTPConnection(http.client.HTTPConnection):
    watch: _Watch

    def connect(self) -> None:
        super().connect()
        self.watch.track(self.sock)


class _HTTPSConnection(http.client.HTTPSConnection):
    watch: _Watch

    def connect(self) -> None:
        super().connect()
        self.watch.track(self.sock)


class _WatchedHTTP(urllib.request.HTTPHandler):
    def __init__(self, watch: _Watch) -> None:
        super().__init__()
        self._watch = watch

    def http_open(self, req: Any) -> Any:
        def connect(host: str, **kwargs: Any) -> http.client.HTTPConnection:
            connection = _HTTPConnection(host, **kwargs)
            connection.watch = self._watch
            return connection

        return self.do_open(connect, req)


class _WatchedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, watch: _Watch, context: ssl.SSLContext | None) -> None:
        super().__init__(context=context)
        self._watch = watch
        self._tls = context

    def https_open(self, req: Any) -> Any:
        def connect(host: str, **kwargs: Any) -> http.client.HTTPConnection:
            connection = _HTTPSConnection(host, context=self._tls, **kwargs)
            connection.watch = self._watch
            return connection

        return self.do_open(connect, req)


@dataclass
class _Answer:
    """What one attempt got: the status, the body read (bounded), the server's Retry-After."""

    status: int
    body: bytes
    retry_after: str | None = None


class _TooLarge(Exception):
    pass


class _CutOff(Exception):
    """The attempt's time was up (the connection was shut down under it)."""


class Client:
    """Range queries against one server. ``sleep`` is replaceable so retries can be tested quickly."""

    def __init__(
        self,
        settings: ServerSettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.sleep = sleep
        self.clock = clock
        self._context: ssl.SSLContext | None = None
        if settings.url.startswith("https://"):
            try:
                self._context = ssl.create_default_context(cafile=settings.ca_file)
            except (OSError, ssl.SSLError) as exc:
                raise PolicylintError(self.settings.scrub(f"cannot use CA file {settings.ca_file}: {exc}")) from None
        #: when the run must end (monotonic clock), or None
        self.run_end = None if settings.deadline_seconds is None else clock() + settings.deadline_seconds
        #: attempts that failed and were retried (for the progress line and tests)
        self.retries = 0

    def _error(self, text: str, kind: type[PolicylintError] = PolicylintError) -> PolicylintError:
        """An error whose message is scrubbed of every secret and shows server text escaped."""
        return kind(self.settings.scrub(text))

    def _headers(self) -> dict[str, str]:
        from policylint import __version__

        headers = {
            "Accept": "application/json",
            "Content-Type": "application/x-www-form-urlencoded",
            "User-Agent": f"policylint/{__version__} (pull)",
        }
        s = self.settings
        # configured headers replace a default of the same name (names ignore case)
        for name, value in s.headers.items():
            for default in [d for d in headers if d.lower() == name.lower()]:
                del headers[default]
            headers[name] = value
        if s.token:
            headers["Authorization"] = f"Bearer {s.token}"
        elif s.user is not None and s.password is not None:
            pair = base64.b64encode(f"{s.user}:{s.password}".encode()).decode("ascii")
            headers["Authorization"] = f"Basic {pair}"
        return headers

    def _exchange(self, request: urllib.request.Request, watch: _Watch, seconds: float) -> _Answer:
        """One request and its answer, read in counted pieces (runs in a worker thread)."""
        handlers: list[Any] = [_NoRedirect(), _WatchedHTTP(watch), _WatchedHTTPS(watch, self._context)]
        opener = urllib.request.build_opener(*handlers)
        cap = self.settings.max_answer_bytes
        try:
            answer = opener.open(request, timeout=seconds)
        except urllib.error.HTTPError as exc:
            try:
                body = exc.read(MAX_ERROR_BYTES) if exc.fp is not None else b""
            except (OSError, http.client.HTTPException, ValueError):
                body = b""
            finally:
                exc.close()
            retry_after = exc.headers.get("Retry-After") if exc.headers else None
            return _Answer(exc.code, body, retry_after)
        with answer:
            declared = answer.headers.get("Content-Length")
            if declared is not None and declared.strip().isdigit() and int(declared) > cap:
                raise _TooLarge
            received = bytearray()
            while True:
                if watch.cut:
                    raise _CutOff
                piece = answer.read(min(_PIECE, cap + 1 - len(received)))
                if not piece:
                    break
                received += piece
                if len(received) > cap:
                    raise _TooLarge
            if watch.cut:
                raise _CutOff
            return _Answer(answer.status, bytes(received))

    def _attempt(self, request: urllib.request.Request, seconds: float) -> _Answer:
        """:meth:`_exchange` in a worker thread, waited for ``seconds`` at most: raises
        :class:`_CutOff` when the time is up, or whatever the exchange raised."""
        watch = _Watch()
        outcome: list[Any] = []

        def work() -> None:
            try:
                outcome.append(self._exchange(request, watch, seconds))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                outcome.append(exc)

        worker = threading.Thread(target=work, name="policylint-pull-request", daemon=True)
        worker.start()
        worker.join(seconds)
        if worker.is_alive():
            watch.stop()
            worker.join(1.0)  # it ends at once once its connection is shut; never waited for longer
            raise _CutOff
        result = outcome[0]
        if isinstance(result, BaseException):
            if watch.cut:
                raise _CutOff
            raise result
        assert isinstance(result, _Answer)
        return result

    def _remaining(self) -> float | None:
        return None if self.run_end is None else self.run_end - self.clock()

    def _deadline_error(self, last: str) -> PolicylintError:
        s = self.settings
        tail = f"; last: {last}" if last else ""
        return self._error(
            f"{s.name}: the pull's deadline of {s.deadline_seconds:g} s passed; stopped asking{tail}", DeadlineExceeded
        )

    def _post(self, path: str, form: Mapping[str, str]) -> bytes:
        """POST ``form`` to ``path``; the raw answer, retried on transient failures."""
        s = self.settings
        body = urllib.parse.urlencode(form).encode("utf-8")
        url = f"{s.url}{path}"
        pause = s.backoff_seconds
        last = ""
        for attempt in range(1, s.max_attempts + 1):
            remaining = self._remaining()
            if remaining is not None and remaining <= 0:
                raise self._deadline_error(last)
            seconds = s.timeout_seconds if remaining is None else min(s.timeout_seconds, remaining)
            request = urllib.request.Request(url, data=body, headers=self._headers(), method="POST")
            wait: float | None = None
            try:
                answer = self._attempt(request, seconds)
            except _CutOff:
                if seconds < s.timeout_seconds:  # the run's deadline, not the request's, cut it
                    raise self._deadline_error(last or "no complete answer before the deadline") from None
                last = f"no complete answer within {s.timeout_seconds:g} s"
            except _TooLarge:
                raise self._error(
                    f"{s.name}: the answer is larger than {s.max_answer_bytes:,} bytes, the most a trace may hold "
                    "(limits.max-trace-bytes); refused unread"
                ) from None
            except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, ssl.SSLCertVerificationError):
                    raise self._error(
                        f"{s.name}: TLS certificate not trusted ({reason.verify_message}); "
                        f"name the server's CA with prometheus.ca-file or ${ENV_CA}"
                    ) from None
                if isinstance(reason, TimeoutError):
                    # one read waited out the whole time, just before the cut: the same outcome
                    if seconds < s.timeout_seconds:
                        raise self._deadline_error(last or "no complete answer before the deadline") from None
                    last = f"no complete answer within {s.timeout_seconds:g} s"
                else:
                    last = str(reason) or type(reason).__name__
            else:
                if answer.status == 200:
                    return answer.body
                detail = _error_text(answer.body)
                if answer.status == 429 or 500 <= answer.status < 600:
                    last = f"HTTP {answer.status}{detail}"
                    wait = _retry_after(answer.retry_after)
                else:
                    raise self._error(f"{s.name}: HTTP {answer.status}{detail}")
            if attempt == s.max_attempts:
                break
            self.retries += 1
            delay = min(MAX_PAUSE_SECONDS, wait if wait is not None else pause)
            remaining = self._remaining()
            if remaining is not None and delay >= remaining:
                raise self._deadline_error(last)
            self.sleep(delay)
            pause *= 2
        raise self._error(f"{s.name}: gave up after {s.max_attempts} attempts; last: {last}")

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
        by labels. ``progress(done, total)`` is called after each window.

        Every answer is checked (:func:`_matrix`) before it is kept; the answers of one
        trace together may hold at most ``max_answer_bytes`` bytes and ``max_samples`` samples.
        """
        s = self.settings
        windows = chunks(start, end, step, max_points)
        joined: dict[str, Series] = {}
        total_bytes = 0
        samples = 0
        for i, (a, b) in enumerate(windows, start=1):
            raw = self._post("/api/v1/query_range", {"query": query, "start": str(a), "end": str(b), "step": str(step)})
            total_bytes += len(raw)
            if total_bytes > s.max_answer_bytes:
                raise self._error(
                    f"{s.name}: the answers for this trace come to more than {s.max_answer_bytes:,} bytes, "
                    "the most a trace may hold (limits.max-trace-bytes); refused"
                )
            doc = _decode(raw, s.name)
            del raw
            try:
                found = _matrix(doc, (a, b, step), s.secrets())
            except PolicylintError as exc:
                raise self._error(f"{s.name}: {exc.message}") from None
            for series in found:
                samples += len(series["values"])
                if samples > s.max_samples:
                    raise self._error(
                        f"{s.name}: the answers hold more than {s.max_samples:,} samples, the most a trace may "
                        "hold (limits.max-trace-rows); refused"
                    )
                key = json.dumps(series["metric"], sort_keys=True)
                if key in joined:
                    if i in joined[key]["windows"]:
                        raise self._error(f"{s.name}: the series {_label_text(series['metric'])} appears twice in one answer")
                    joined[key]["values"].extend(series["values"])
                    joined[key]["windows"].add(i)
                else:
                    joined[key] = {"metric": series["metric"], "values": list(series["values"]), "windows": {i}}
            if progress is not None:
                progress(i, len(windows))
        return [{"metric": joined[k]["metric"], "values": joined[k]["values"]} for k in sorted(joined)]


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: use our own pause
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _error_text(raw: bytes) -> str:
    """``: <Prometheus' error>`` from an error answer's JSON, or '' (not yet scrubbed)."""
    try:
        doc = json.loads(raw, parse_constant=_no_constant)
    except Exception:  # noqa: BLE001 - an unreadable error body only loses the detail
        return ""
    if isinstance(doc, dict) and isinstance(doc.get("error"), str):
        return f": {doc['error'][:MAX_DETAIL_CHARS]}"
    return ""


class _BareConstant(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _BareConstant(name)


def _decode(raw: bytes, name: str) -> Any:
    try:
        return json.loads(raw, parse_constant=_no_constant)
    except _BareConstant as exc:
        raise PolicylintError(f"{name}: the answer holds a bare {exc}, which JSON does not allow; refused") from None
    except (ValueError, RecursionError):
        raise PolicylintError(f"{name}: the answer is not JSON; is the URL a Prometheus server?") from None


def _label_text(metric: Mapping[str, Any]) -> str:
    text = "{" + ",".join(f'{k}="{v}"' for k, v in sorted(metric.items())) + "}"
    return text if len(text) <= 200 else text[:197] + "...}"


def _cut(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: a sample value as Prometheus writes it: a decimal number, or NaN for a missing sample
_VALUE = re.compile(r"^-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")


def _matrix(doc: Any, window: tuple[int, int, int], secrets: list[str]) -> list[Series]:
    """The series of one ``query_range`` answer for ``window`` (start, end, step), checked strictly:
    the shape, string labels free of any secret, ``[time, "value"]`` pairs whose times are on
    the step inside the window and increase, and values that are finite numbers or ``"NaN"``."""
    if not isinstance(doc, dict):
        raise PolicylintError("not a Prometheus answer (the top level is not an object)")
    if doc.get("status") != "success":
        error = doc.get("error")
        if doc.get("status") == "error" and isinstance(error, str):
            raise PolicylintError(f"query failed: {error[:MAX_DETAIL_CHARS]}")
        raise PolicylintError("not a Prometheus answer (no status 'success')")
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise PolicylintError("expected a range (matrix) answer")
    start, end, step = window
    out = []
    for number, series in enumerate(data["result"], start=1):
        if not isinstance(series, dict) or not isinstance(series.get("values"), list):
            raise PolicylintError(f"series {number} of the answer has no values list")
        metric = series.get("metric", {})
        if not isinstance(metric, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metric.items()):
            raise PolicylintError(f"series {number} of the answer has labels that are not text")
        try:
            "".join(k + v for k, v in metric.items()).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (JSON "\ud800"): no file can hold it as UTF-8
            raise PolicylintError(f"series {number} of the answer has a label that is not valid Unicode") from None
        if any(secret in text for secret in secrets for item in metric.items() for text in item):
            raise PolicylintError(f"series {number} of the answer has a label holding the credential sent to the server; refused")
        label = _label_text(metric)
        previous = -math.inf
        for i, pair in enumerate(series["values"], start=1):
            where = f"series {label} sample {i}"
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)):
                raise PolicylintError(f'{where} is not a [time, "value"] pair')
            moment = pair[0]
            # (an integer too large for a float is not a time either; isfinite would overflow on it)
            if isinstance(moment, bool) or not isinstance(moment, (int, float)) or (
                isinstance(moment, float) and not math.isfinite(moment)
            ):
                raise PolicylintError(f"{where} has a time that is not a finite number")
            if not start <= moment <= end or (moment - start) % step != 0:
                raise PolicylintError(
                    f"{where} has the time {_cut(repr(moment))}, not one of the requested {start}..{end} at step {step}"
                )
            if moment <= previous:
                raise PolicylintError(f"{where} has the time {_cut(repr(moment))}, not after the sample before it")
            previous = moment
            value = pair[1]
            if value != "NaN" and not (_VALUE.match(value) and math.isfinite(float(value))):
                raise PolicylintError(f"{where} has the value {_cut(repr(value))}, not a finite number (or NaN)")
        out.append({"metric": metric, "values": series["values"]})
    return out
