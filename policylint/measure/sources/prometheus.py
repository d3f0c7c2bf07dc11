"""A small client of Prometheus' ``/api/v1/query_range``, for ``policylint pull``.

Standard library only (``urllib``, ``ssl``, ``json``): the lint never imports it,
and ``pull`` needs nothing a plain Python lacks. What it takes care of:

- **Chunks.** Prometheus refuses a range query that would return more than
  11,000 points per series; a long lookback at a fine step is cut into windows of
  at most :data:`MAX_POINTS` steps (:func:`chunks`), and the windows' series are
  joined by their label sets.
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
- **Strict answers**, checked by :mod:`policylint.measure.sources.prometheus_answer`.
- **Secrets.** The settings (:mod:`policylint.model.prometheus_settings`)
  say what is secret; every message the client makes is scrubbed of them on
  every path, retried errors included. Redirects are refused so the
  ``Authorization`` header cannot follow one to another host.
- **TLS.** A custom certificate authority (``ca_file``) for servers behind a
  private CA.
"""

from __future__ import annotations

import base64
import http.client
import json
import math
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from policylint import __version__
from policylint.errors import PolicylintError
from policylint.measure.sources.prometheus_answer import Series, decode_answer, error_text, label_text, matrix_series
from policylint.model.prometheus_settings import ENV_CA, ServerSettings

#: Prometheus' own limit on points per series in one range query.
MAX_POINTS = 11_000
#: Longest pause between attempts, seconds, whatever the server asks for.
MAX_PAUSE_SECONDS = 60.0
#: Most bytes of an error answer read for its explanation.
MAX_ERROR_BYTES = 65_536
#: Bytes read from the connection at a time.
_PIECE = 1 << 20


class DeadlineExceeded(PolicylintError):
    """The run's deadline passed: the pull stops asking the server anything."""


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
                detail = error_text(answer.body)
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

        Every answer is checked (:func:`~policylint.measure.sources.prometheus_answer.matrix_series`)
        before it is kept; the answers of one trace together may hold at most
        ``max_answer_bytes`` bytes and ``max_samples`` samples.
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
            doc = decode_answer(raw, s.name)
            del raw
            try:
                found = matrix_series(doc, (a, b, step), s.secrets())
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
                        raise self._error(f"{s.name}: the series {label_text(series['metric'])} appears twice in one answer")
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
