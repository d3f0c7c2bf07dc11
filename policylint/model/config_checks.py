"""Raw settings checked before they are used: plain values, the schema, the link template.

:func:`check_plain` refuses what no setting can mean (keys that are not text,
numbers too large to compare, nesting too deep); :func:`validate_settings`
checks the settings against the configuration schema and says what is wrong in
the words of a YAML or TOML author; :func:`check_source_url` checks the review
page's link template. Every problem is one :class:`~policylint.errors.PolicylintError`
naming the file and the key.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from policylint.errors import PolicylintError, did_you_mean

#: Deepest nesting of lists and mappings a configuration may use (the schema needs 4).
MAX_CONFIG_DEPTH = 20
#: Largest magnitude of a number in the configuration: beyond it a number is no
#: longer exact as a float, and every option is compared with floats.
MAX_CONFIG_NUMBER = 10**15


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


def validate_settings(raw: dict[str, Any], source: str, cache: Path | None = None) -> None:
    """Check raw settings against the config schema; one clear error on the first problem.

    With ``cache`` (the cache folder), settings that passed before with the same
    schema, code and jsonschema are not checked again
    (:mod:`policylint.model.config_cache`); only a pass is remembered.
    """
    if isinstance(raw, dict) and not raw:
        return  # no settings: the defaults (the schema requires no key; a test holds it to that)
    key: str | None = None
    if cache is not None and isinstance(raw, dict):
        from policylint.model import config_cache

        key = config_cache.config_key(raw)
        if key is not None and config_cache.known_valid(cache, key):
            return
    import jsonschema

    from policylint.resources import load_schema

    schema = load_schema("Config")
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(raw), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if not errors:
        if key is not None and cache is not None:
            config_cache.remember_valid(cache, key)
        return
    err = errors[0]
    path = [str(p) for p in err.absolute_path]
    if err.validator == "additionalProperties":
        # Keys may be numbers or null in YAML (``1: x``); compare and show them as text.
        extra = sorted({str(k) for k in err.instance} - set(err.schema.get("properties", {})))
        key = ".".join([*path, extra[0]]) if extra else ".".join(path)
        allowed = ", ".join(sorted(err.schema.get("properties", {})))
        hint = did_you_mean(extra[0], err.schema.get("properties", {})) if extra else ""
        raise PolicylintError(f"unknown key (allowed: {allowed}){hint}", source=source, key=key)
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
    from policylint.model.validate import shown

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
        return f"must be one of {', '.join(map(str, err.validator_value))}, got {shown(got)}"
    if err.validator == "type":
        expected: list[str] = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        words = " or ".join(_TYPE_WORDS.get(t, t) for t in expected)
        if path and path[0] in ("select", "extend-select", "ignore", "per-file-ignores") and "array" in expected:
            words = "a list of rule codes, prefixes or names"
        return f"must be {words}, got {shown(got, wanted_number=bool({'number', 'integer'} & set(expected)))}"
    if err.validator == "pattern" and path == ["prometheus", "url"]:
        from policylint.model.prometheus_settings import server_name

        # Shown without its user information: a password written here must not be echoed.
        return f"must be an http:// or https:// URL without a user or password, got {server_name(str(got))!r}"
    if err.validator == "pattern" and path == ["now"]:
        return f"must be an ISO date (YYYY-MM-DD[THH:MM:SS]), got {got!r}"
    if err.validator == "minimum":
        return f"must be >= {err.validator_value}, got {shown(got)}"
    if err.validator == "maximum":
        return f"must be <= {err.validator_value}, got {shown(got)}"
    if err.validator == "minLength":
        return "must not be empty"
    message: str = err.message
    return message


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
