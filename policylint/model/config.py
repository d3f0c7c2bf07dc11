"""Configuration: discovery, validation and the effective settings.

Sources, highest precedence first: command-line flags, the file named by
``--config``, the nearest ``.policylint.yaml`` or ``pyproject.toml`` with a
``[tool.policylint]`` table (searched upwards from the checked path, then from
the working directory), built-in defaults. The file's folder is also the
repository root that document file references must stay inside.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.errors import PolicylintError

if TYPE_CHECKING:
    from policylint.readers.limits import TraceLimits

CONFIG_NAMES = (".policylint.yaml", ".policylint.yml")

#: Deepest nesting of lists and mappings a configuration may use (the schema needs 4).
MAX_CONFIG_DEPTH = 20
#: Largest magnitude of a number in the configuration: beyond it a number is no
#: longer exact as a float, and every option is compared with floats.
MAX_CONFIG_NUMBER = 10**15
#: Largest pyproject.toml read.
MAX_PYPROJECT_BYTES = 5 * 1024 * 1024


@dataclass
class Config:
    """The effective configuration (after merging file and flags)."""

    path: Path | None = None
    root: Path = field(default_factory=Path.cwd)
    select: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=list)
    fail_on: str = "warning"
    rule_dirs: list[Path] = field(default_factory=list)
    now: dt.datetime | None = None
    baseline: Path | None = None
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    max_file_bytes: int | None = None
    max_nodes: int | None = None
    max_documents: int | None = None
    gpu_resources: list[str] = field(default_factory=list)  # empty: the built-in default
    #: trace reader limits (``limits.max-trace-bytes`` ...); None: the reader's default
    max_trace_bytes: int | None = None
    max_trace_rows: int | None = None
    max_grid_samples: int | None = None
    #: ``prometheus`` section, for ``policylint pull`` (the CA file resolved against the config's folder)
    prometheus_url: str | None = None
    prometheus_ca_file: Path | None = None
    prometheus_timeout_seconds: float = 60.0
    prometheus_max_attempts: int = 5
    #: ``prometheus.headers``: extra request headers, name -> a literal value or ``{"env": VARIABLE}``
    #: (checked by :func:`policylint.measure.sources.headers.check_header_settings`; resolved by ``pull``)
    prometheus_headers: dict[str, str | dict[str, str]] = field(default_factory=dict)
    #: ``report.source-url``: where the review page links a file:line (see :func:`check_source_url`); None:
    #: relative links from the page to the files
    report_source_url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The effective configuration as plain data (``policylint config``)."""
        return {
            "config-file": str(self.path) if self.path else None,
            "root": str(self.root),
            "select": self.select,
            "extend-select": self.extend_select,
            "ignore": self.ignore,
            "per-file-ignores": self.per_file_ignores,
            "exclude": self.exclude,
            "fail-on": self.fail_on,
            "rule-dirs": [str(p) for p in self.rule_dirs],
            "now": self.now.isoformat() if self.now else None,
            "baseline": str(self.baseline) if self.baseline else None,
            "rules": self.rules,
            "gpu-resources": self.gpu_resources or None,
            "limits": self._limits_dict(),
            "prometheus": {
                "url": self.prometheus_url,
                "ca-file": str(self.prometheus_ca_file) if self.prometheus_ca_file else None,
                "timeout-seconds": self.prometheus_timeout_seconds,
                "max-attempts": self.prometheus_max_attempts,
                # values may be secrets: only where each comes from is shown
                "headers": {
                    name: (f"${value['env']}" if isinstance(value, dict) else "(set)")
                    for name, value in self.prometheus_headers.items()
                }
                or None,
            },
            "report": {"source-url": self.report_source_url},
        }

    def _limits_dict(self) -> dict[str, int]:
        """Every limit with its effective value (the default where none is set)."""
        from policylint.model.load import LoadLimits

        trace = self.trace_limits()
        return {
            "max-file-bytes": self.max_file_bytes or LoadLimits.max_file_bytes,
            "max-nodes": self.max_nodes or LoadLimits.max_nodes,
            "max-trace-bytes": trace.max_file_bytes,
            "max-trace-rows": trace.max_rows,
            "max-grid-samples": trace.max_grid_samples,
        }

    def trace_limits(self) -> TraceLimits:
        """The limits the trace readers get: configured values over the readers' defaults.

        A lower ``max-trace-bytes`` also lowers the limit on Prometheus answers;
        a higher one leaves it (parsed JSON takes about ten times its size).
        """
        from policylint.readers.limits import DEFAULT_LIMITS, TraceLimits

        size = self.max_trace_bytes or DEFAULT_LIMITS.max_file_bytes
        return TraceLimits(
            max_file_bytes=size,
            max_json_bytes=min(size, DEFAULT_LIMITS.max_json_bytes),
            max_rows=self.max_trace_rows or DEFAULT_LIMITS.max_rows,
            max_grid_samples=self.max_grid_samples or DEFAULT_LIMITS.max_grid_samples,
        )


def parse_when(text: str, *, source: str | None = None, key: str | None = None) -> dt.datetime:
    """Parse an ISO date or date-time into an aware UTC datetime."""
    value = str(text).strip()
    try:
        if len(value) == 10:
            parsed = dt.datetime.fromisoformat(value + "T00:00:00")
        else:
            parsed = dt.datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise PolicylintError(f"'{value}' is not an ISO date (YYYY-MM-DD[THH:MM:SS])", source=source, key=key) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.timezone.utc)
    return parsed.astimezone(dt.timezone.utc)


def _read_pyproject(path: Path) -> dict[str, Any] | None:
    import tomllib

    from policylint.safeio import read_text

    text = read_text(path, limit=MAX_PYPROJECT_BYTES, what="pyproject.toml")
    too_deep = _toml_too_deep(text, MAX_CONFIG_DEPTH)
    if too_deep is not None:
        line, key = too_deep
        raise PolicylintError(
            f"line {line}: lists or tables nest deeper than {MAX_CONFIG_DEPTH} levels", source=str(path), key=key
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicylintError(f"invalid TOML: {exc}", source=str(path)) from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4,300 digits
        raise PolicylintError(f"invalid TOML: {' '.join(str(exc).split())}", source=str(path)) from None
    tool = data.get("tool", {})
    section = tool.get("policylint") if isinstance(tool, dict) else None
    if section is None:
        return None
    if not isinstance(section, dict):
        raise PolicylintError("[tool.policylint] must be a table", source=str(path), key="tool.policylint")
    return _dates_as_text(section)


def _dates_as_text(data: dict[Any, Any]) -> dict[Any, Any]:
    """Unquoted dates (YAML ``now: 2026-12-01``, TOML ``now = 2026-12-01``) arrive as
    date objects; keep them as the text the schema expects."""
    return {k: (v.isoformat() if isinstance(v, (dt.date, dt.datetime, dt.time)) else v) for k, v in data.items()}


def _toml_row(row: str) -> tuple[str | None, str | None]:
    """(table header, assigned key) of one TOML line, by plain string operations.

    (Regular expressions with a lazy group here backtracked quadratically on
    long indented lines.)
    """
    stripped = row.strip()
    eq = stripped.find("=")
    head = stripped[:eq] if eq >= 0 else ""
    if eq > 0 and not any(c in head for c in "#[{\"'") or (eq > 0 and head[:1] in "\"'"):
        return None, head.strip()
    if stripped.startswith("["):
        end = stripped.find("]")
        if end > 0:
            return stripped[:end].strip("[] \t"), None
    return None, None


def _toml_too_deep(text: str, limit: int) -> tuple[int, str] | None:
    """(line, key) where arrays or inline tables first nest deeper than ``limit``, else None.

    Python's TOML parser recurses once per level and fails with RecursionError
    near a thousand; this linear scan (strings and comments skipped) finds the
    place first, so the error can name the key.
    """
    depth = line = 0
    table = key = ""
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        if at_line_start:
            line += 1
            at_line_start = False
            if depth == 0:
                end = text.find("\n", i)
                row = text[i : end if end >= 0 else n]
                header, assigned = _toml_row(row)
                if header is not None:
                    table, key = header.replace('"', "").replace(" ", ""), ""
                elif assigned is not None:
                    key = assigned.replace('"', "").replace("'", "").replace(" ", "")
        c = text[i]
        if c == "\n":
            at_line_start = True
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c in "\"'":
            quote = c * 3 if text.startswith(c * 3, i) else c
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                if c == '"' and text[j] == "\\":
                    j += 1
                elif text[j] == "\n":
                    if len(quote) == 1:
                        break  # an unterminated string: the parser will say so
                    line += 1
                j += 1
            i = j + len(quote)
            continue
        elif c in "[{":
            depth += 1
            if depth > limit:
                return line, ".".join(p for p in (table, key) if p)
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return None


def check_plain(data: Any, source: str, prefix: str = "") -> None:
    """Refuse what no setting can mean before the schema looks at it.

    Keys must be text (``1: [PL101]`` is a number in YAML), numbers finite and
    at most 10**15 in magnitude (a 401-digit option cannot be compared with a
    float threshold), nesting at most :data:`MAX_CONFIG_DEPTH` deep. Iterative,
    so no input can exhaust the stack; the error names the key.
    """
    stack: list[tuple[Any, str, int]] = [(data, prefix, 0)]
    while stack:
        value, key, depth = stack.pop()
        where = key or "(top level)"
        if depth > MAX_CONFIG_DEPTH:
            raise PolicylintError(f"nested deeper than {MAX_CONFIG_DEPTH} levels", source=source, key=where)
        if isinstance(value, str):
            if "\x00" in value:
                raise PolicylintError("must not contain a NUL character", source=source, key=where)
            continue
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            if abs(value) > MAX_CONFIG_NUMBER:
                digits = len(str(abs(value)))  # at most 4,300: longer numbers are refused when read
                shown = str(value) if digits <= 40 else f"a number of {digits} digits"
                raise PolicylintError(f"must be at most {MAX_CONFIG_NUMBER:.0e} in magnitude, got {shown}", source=source, key=where)
        elif isinstance(value, float):
            if not math.isfinite(value) or abs(value) > MAX_CONFIG_NUMBER:
                raise PolicylintError(f"must be a finite number of at most {MAX_CONFIG_NUMBER:.0e} in magnitude, got {value!r}", source=source, key=where)
        elif isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str) and key:  # at the top level the schema names the allowed keys
                    raise PolicylintError(
                        f"key {k!r} must be text (quote it: \"{k}\")", source=source, key=f"{key}.{k}" if key else str(k)
                    )
                stack.append((v, f"{key}.{k}" if key else str(k), depth + 1))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                stack.append((v, f"{key}[{i}]", depth + 1))


def _read_yaml(path: Path) -> dict[str, Any]:
    from policylint.model.load import read_settings_yaml

    data = read_settings_yaml(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PolicylintError("the configuration must be a mapping", source=str(path))
    return _dates_as_text(data)


def read_config_file(path: Path) -> dict[str, Any] | None:
    """Raw settings from a config file (None: a pyproject.toml without our table)."""
    if path.name == "pyproject.toml":
        return _read_pyproject(path)
    return _read_yaml(path)


def find_config(start: Path) -> Path | None:
    """The nearest config file at or above ``start``."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        for name in CONFIG_NAMES:
            candidate = folder / name
            # a pipe or device under a config name is refused when read, never skipped
            if candidate.exists() and not candidate.is_dir():
                return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.exists() and not pyproject.is_dir() and _read_pyproject(pyproject) is not None:
            return pyproject
    return None


def _existing(path: Path) -> Path | None:
    """``path``, or its nearest existing folder (a deleted file is found from where it was)."""
    for candidate in (path, *path.absolute().parents):
        if candidate.exists():
            return candidate
    return None


def _config_of_changes(paths: list[Path]) -> Path | None:
    """The one configuration the changed files lead to, whatever their order.

    In a monorepo the hook receives every staged file of the git repository; the
    capacity repository is the folder of the configuration found from them. Files
    that lead to no configuration are outside it. Files leading to two different
    configurations are two capacity repositories, which one run cannot judge
    together: that stops the run with a message saying how to split the hook.
    Without any, the configuration is looked for from the working folder.
    """
    found: set[Path] = set()
    for p in paths:
        start = _existing(p)
        if start is not None:
            config = find_config(start)
            if config is not None:
                found.add(Path(os.path.abspath(config)))
    if len(found) > 1:
        names = ", ".join(sorted(str(os.path.relpath(f)) for f in found))
        raise PolicylintError(
            f"--changed-files: the changed files belong to {len(found)} capacity repositories ({names}); "
            "run one hook per repository, each limited with `files: ^FOLDER/`"
        )
    if found:
        return found.pop()
    return find_config(Path.cwd())


def _find_git_root(start: Path) -> Path | None:
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def validate_settings(raw: dict[str, Any], source: str) -> None:
    """Check raw settings against the config schema; one clear error on the first problem."""
    if isinstance(raw, dict) and not raw:
        return  # no settings: the defaults (the schema requires no key; a test holds it to that)
    import jsonschema

    from policylint.resources import load_schema

    schema = load_schema("Config")
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(raw), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if not errors:
        return
    err = errors[0]
    path = [str(p) for p in err.absolute_path]
    if err.validator == "additionalProperties":
        # Keys may be numbers or null in YAML (``1: x``); compare and show them as text.
        extra = sorted({str(k) for k in err.instance} - set(err.schema.get("properties", {})))
        key = ".".join([*path, extra[0]]) if extra else ".".join(path)
        allowed = ", ".join(sorted(err.schema.get("properties", {})))
        raise PolicylintError(f"unknown key (allowed: {allowed})", source=source, key=key)
    key = ".".join(path) or "(top level)"
    raise PolicylintError(_explain(err, path), source=source, key=key)


#: JSON Schema type names in the words a YAML or TOML author uses.
_TYPE_WORDS = {
    "array": "a list",
    "object": "a mapping",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
}


def _explain(err: Any, path: list[str]) -> str:
    """The message for one schema error, phrased for the config author (jsonschema's own
    wording shows regular expressions and Python type names)."""
    got = err.instance
    if path[:2] == ["prometheus", "headers"]:
        # a header's value may be a secret: say what it must be, never what it is
        if len(path) > 2:
            return "must be a string, or {env: VARIABLE} naming the environment variable that holds the value"
        if err.validator == "maxProperties":
            return f"at most {err.validator_value} headers"
        if err.validator in ("minLength", "maxLength"):
            return "a header name must be 1 to 256 characters"
        return "must be a mapping of header names to values"
    if err.validator == "enum":
        return f"must be one of {', '.join(map(str, err.validator_value))}, got {got!r}"
    if err.validator == "type":
        expected: list[str] = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        words = " or ".join(_TYPE_WORDS.get(t, t) for t in expected)
        if path and path[0] in ("select", "extend-select", "ignore", "per-file-ignores") and "array" in expected:
            words = "a list of rule codes, prefixes or names"
        return f"must be {words}, got {got!r}"
    if err.validator == "pattern" and path == ["prometheus", "url"]:
        from policylint.measure.sources.prometheus import server_name

        # Shown without its user information: a password written here must not be echoed.
        return f"must be an http:// or https:// URL without a user or password, got {server_name(str(got))!r}"
    if err.validator == "pattern" and path == ["now"]:
        return f"must be an ISO date (YYYY-MM-DD[THH:MM:SS]), got {got!r}"
    if err.validator == "minimum":
        return f"must be >= {err.validator_value}, got {got!r}"
    if err.validator == "maximum":
        return f"must be <= {err.validator_value}, got {got!r}"
    if err.validator == "minLength":
        return "must not be empty"
    message: str = err.message
    return message


def load_config(
    paths: list[Path],
    *,
    config_file: Path | None = None,
    root: Path | None = None,
    isolated: bool = False,
    changed_files: bool = False,
) -> Config:
    """Discover, read and validate the configuration for a run over ``paths``.

    With ``changed_files`` (the pre-commit hook) the paths are the changed files of
    a whole git repository, in no particular order: the configuration is the one
    they lead to (see :func:`_config_of_changes`), never the first file's alone.
    """
    path: Path | None = None
    raw: dict[str, Any] = {}
    if config_file is not None:
        if not config_file.exists():
            raise PolicylintError(f"config file not found: {config_file}")
        path = config_file
        read = read_config_file(config_file)
        if read is None:
            raise PolicylintError("no [tool.policylint] table", source=str(config_file))
        raw = read
    elif not isolated and changed_files:
        path = _config_of_changes(paths)
        if path is not None:
            raw = read_config_file(path) or {}
    elif not isolated:
        starts = [paths[0]] if paths else []
        starts.append(Path.cwd())
        for start in starts:
            if start.exists():
                path = find_config(start)
                if path is not None:
                    raw = read_config_file(path) or {}
                    break
    source = str(path) if path else "<defaults>"
    check_plain(raw, source)
    validate_settings(raw, source)
    base = path.parent if path else Path.cwd()
    config = Config(path=path)
    if root is not None:
        if not root.is_dir():
            raise PolicylintError(f"--root {root}: not a folder")
        config.root = root
    elif path is not None:
        config.root = path.parent
    else:
        first = paths[0] if paths else Path.cwd()
        git_root = _find_git_root(first)
        config.root = git_root or (first if first.is_dir() else first.parent)
    config.root = Path(os.path.abspath(config.root))
    config.select = list(raw.get("select", []))
    config.extend_select = list(raw.get("extend-select", []))
    config.ignore = list(raw.get("ignore", []))
    config.per_file_ignores = {k: list(v) for k, v in raw.get("per-file-ignores", {}).items()}
    config.exclude = list(raw.get("exclude", []))
    config.fail_on = raw.get("fail-on", "warning")
    config.rule_dirs = [base / d for d in raw.get("rule-dirs", [])]
    if "now" in raw:
        config.now = parse_when(raw["now"], source=source, key="now")
    if "baseline" in raw:
        config.baseline = base / raw["baseline"]
    config.rules = {k: dict(v) for k, v in raw.get("rules", {}).items()}
    config.gpu_resources = list(raw.get("gpu-resources", []))
    trace = raw.get("limits", {})
    config.max_trace_bytes, config.max_trace_rows = trace.get("max-trace-bytes"), trace.get("max-trace-rows")
    config.max_grid_samples = trace.get("max-grid-samples")
    limits = raw.get("limits", {})
    config.max_file_bytes = limits.get("max-file-bytes")
    config.max_nodes = limits.get("max-nodes")
    config.max_documents = limits.get("max-documents")
    prom = raw.get("prometheus", {})
    config.prometheus_url = prom.get("url")
    if "ca-file" in prom:
        config.prometheus_ca_file = base / prom["ca-file"]
    config.prometheus_timeout_seconds = float(prom.get("timeout-seconds", 60.0))
    config.prometheus_max_attempts = int(prom.get("max-attempts", 5))
    if "headers" in prom:
        from policylint.measure.sources.headers import check_header_settings

        config.prometheus_headers = check_header_settings(prom["headers"], source=source)
    report = raw.get("report", {})
    if "source-url" in report:
        config.report_source_url = check_source_url(report["source-url"], source)
    return config


#: The placeholders ``report.source-url`` may hold.
SOURCE_URL_FIELDS = ("rev", "path", "line")


def check_source_url(template: str, source: str) -> str:
    """``template`` when it is a usable link template for the review page, else a configuration error.

    The schema has checked that it is an http(s) URL; here its placeholders are:
    ``{path}`` is required, ``{rev}`` and ``{line}`` are optional, anything else in
    braces is refused (``{{`` and ``}}`` stand for literal braces).
    """
    import string

    try:
        parsed = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise PolicylintError(f"not a link template ({exc})", source=source, key="report.source-url") from None
    fields = [name for name, _, _ in parsed]
    unknown = sorted({name for name in fields if name not in SOURCE_URL_FIELDS})
    if unknown:
        shown = ", ".join(f"{{{name}}}" for name in unknown)
        raise PolicylintError(
            f"unknown placeholder {shown} (allowed: {{rev}}, {{path}}, {{line}})", source=source, key="report.source-url"
        )
    if any(spec or conv for _, spec, conv in parsed):
        raise PolicylintError(
            "placeholders take no format or conversion (write {rev}, {path}, {line})", source=source, key="report.source-url"
        )
    if "path" not in fields:
        raise PolicylintError("must hold {path}, where the file's repository path goes", source=source, key="report.source-url")
    return template
