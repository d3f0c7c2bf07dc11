"""Where and how ``policylint pull`` reaches a Prometheus server: URL, credentials, headers, CA file.

- **Secrets.** A bearer token or a user and password come from environment
  variables only and travel in the ``Authorization`` header. Configured extra
  headers (``prometheus.headers``: a tenant's ``X-Scope-OrgID``, a gateway's key)
  are sent with every request, and each of their values counts as a secret like
  the token. :meth:`ServerSettings.scrub` takes every spelling of them out of a
  message - the token, the password, the ``user:password`` pair, its base64
  form, and their JSON- and URL-escaped spellings.
- **The server's name.** The server is named by scheme, host, port and path
  only (:func:`server_name`); a URL carrying credentials, a query or anything
  but a plain host is refused with what is wrong with it (:func:`check_url`).
- **Server text** is shown with its control characters escaped
  (:func:`printable`), so it cannot drive the terminal.

The client that uses these settings is :mod:`policylint.measure.sources.prometheus`.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

from policylint.errors import PolicylintError
from policylint.model.prometheus_headers import HEADERS_KEY, check_header_settings, header_value_problem

#: Largest answer read from the server for one trace when the caller names no limit
#: (``pull`` passes the trace readers' limit on a Prometheus file, so that nothing is
#: fetched that ``check`` would refuse).
MAX_ANSWER_BYTES = 64 * 1024 * 1024
#: Most samples held for one trace when the caller names no limit.
MAX_SAMPLES = 10_000_000

ENV_URL = "POLICYLINT_PROMETHEUS_URL"
ENV_TOKEN = "POLICYLINT_PROMETHEUS_TOKEN"
ENV_USER = "POLICYLINT_PROMETHEUS_USER"
ENV_PASSWORD = "POLICYLINT_PROMETHEUS_PASSWORD"
ENV_CA = "POLICYLINT_PROMETHEUS_CA_FILE"


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
