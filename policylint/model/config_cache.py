"""Configurations known to pass the schema, so a warm run need not import jsonschema.

Checking a configuration file against ``config.schema.json`` imports jsonschema,
about a tenth of a second of every run (more than checking takes), for an
answer that is the same each time the same settings meet the same schema. A
configuration that passed is remembered here, and a later run with the same
settings skips the check.

Only a pass is remembered: a configuration with a problem is checked (and its
error worded) every time. The key is a SHA-256 over the settings as canonical
JSON, the bundled schemas, the policylint code and the installed jsonschema's
identity (its module file's path, size and modification time), so an edited
setting, schema, policylint or jsonschema is checked again. Settings JSON
cannot spell exactly (a key that is not text, a YAML date, a value that is not
a plain number) are never remembered. The entry is sealed as every cache entry
is (:mod:`policylint.cache.store`); a missing, damaged or foreign one is a miss.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from policylint.cache.store import FORMAT_VERSION, code_fingerprint, library_identity, read_sealed, write_sealed
from policylint.model.load.document_cache import schemas_fingerprint

KIND = "config"
CONFIG_FORMAT = 1
MAX_BYTES = 4 << 10


def _plain(value: Any) -> bool:
    """True when JSON holds ``value`` exactly: text keys, and str, bool, int, float or None leaves."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                return False
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif item is not None and not isinstance(item, (str, bool, int, float)):
            return False
    return True


def config_key(raw: dict[str, Any]) -> str | None:
    """The key under which ``raw`` is remembered as valid; None when it cannot be remembered."""
    if not _plain(raw):
        return None
    try:
        text = json.dumps(raw, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    checker = library_identity("jsonschema")
    if checker is None:
        return None
    digest = hashlib.sha256(f"{KIND}/{CONFIG_FORMAT}/{FORMAT_VERSION}/{code_fingerprint()}/{schemas_fingerprint()}".encode())
    digest.update(b"\0" + checker.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _entry(folder: Path, key: str) -> Path:
    return folder / f"{KIND}-v{CONFIG_FORMAT}" / key[:2] / f"{key}.json"


def known_valid(folder: Path, key: str) -> bool:
    """True when settings with ``key`` passed the schema before (and the entry is intact)."""
    body = read_sealed(_entry(folder, key), folder, KIND, MAX_BYTES)
    if body is None:
        return False
    try:
        entry = json.loads(body)
    except ValueError:
        return False
    return isinstance(entry, dict) and entry.get("key") == key and entry.get("valid") is True


def remember_valid(folder: Path, key: str) -> None:
    """Record that settings with ``key`` passed the schema; a folder that refuses is skipped."""
    body = json.dumps({"format": CONFIG_FORMAT, "key": key, "valid": True}, sort_keys=True).encode()
    write_sealed(_entry(folder, key), folder, KIND, body, MAX_BYTES)
