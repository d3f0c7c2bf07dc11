"""Configuration files: where they are found and how they are read.

A configuration is ``.policylint.yaml`` (or ``.yml``), or the ``[tool.policylint]``
table of a ``pyproject.toml``, found by looking upwards from a starting folder
(:func:`find_config`); the pre-commit hook finds the one its changed files lead
to (:func:`config_of_changes`). Reading a file gives its raw settings as plain
data (:func:`read_config_file`), checked afterwards by
:mod:`policylint.model.config_checks`.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from policylint.errors import PolicylintError
from policylint.model.config_checks import MAX_CONFIG_DEPTH

CONFIG_NAMES = (".policylint.yaml", ".policylint.yml")

#: Largest pyproject.toml read.
MAX_PYPROJECT_BYTES = 5 * 1024 * 1024


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


def _read_yaml(path: Path, cache: Path | None = None) -> dict[str, Any]:
    from policylint.model.load import read_settings_yaml

    data = read_settings_yaml(path, cache=cache)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PolicylintError("the configuration must be a mapping", source=str(path))
    return _dates_as_text(data)


def read_config_file(path: Path, cache: Path | None = None) -> dict[str, Any] | None:
    """Raw settings from a config file (None: a pyproject.toml without our table).

    With the cache folder ``cache``, a YAML file's parse is kept by its bytes (see
    :func:`policylint.model.load.read_settings_yaml`).
    """
    if path.name == "pyproject.toml":
        return _read_pyproject(path)
    return _read_yaml(path, cache)


def find_config(start: Path) -> Path | None:
    """The nearest config file at or above ``start``."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        found = configuration_in(folder)
        if found is not None:
            return found
    return None


def _existing(path: Path) -> Path | None:
    """``path``, or its nearest existing folder (a deleted file is found from where it was)."""
    for candidate in (path, *path.absolute().parents):
        if candidate.exists():
            return candidate
    return None


def config_of_changes(paths: list[Path]) -> Path | None:
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


def find_git_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding ``.git``."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def configuration_in(folder: Path) -> Path | None:
    """The configuration file of ``folder`` itself (not above it), or None: a YAML name first, else a
    ``pyproject.toml`` holding a ``[tool.policylint]`` table (one that cannot be parsed raises, as reading it would)."""
    for name in CONFIG_NAMES:
        candidate = folder / name
        # a pipe or device under a config name is refused when read, never skipped
        if candidate.exists() and not candidate.is_dir():
            return candidate
    pyproject = folder / "pyproject.toml"
    if pyproject.exists() and not pyproject.is_dir() and _read_pyproject(pyproject) is not None:
        return pyproject
    return None


def unused_configurations(folders: Iterable[Path], root: Path, used: Path | None) -> list[tuple[Path, Path]]:
    """(configuration file, a folder of documents below it) for each configuration other than ``used`` found in a
    folder of the run's documents or a folder between it and ``root``: what configures documents the run reads
    without configuring the run."""
    top = os.path.realpath(root)
    chosen = os.path.realpath(used) if used is not None else None
    asked: dict[str, str | None] = {}
    found: dict[str, tuple[Path, Path]] = {}
    for folder in sorted(set(folders)):
        here = os.path.realpath(folder)
        while here not in asked and (here == top or here.startswith(top.rstrip(os.sep) + os.sep)):
            try:
                config = configuration_in(Path(here))
            except Exception:  # noqa: BLE001 - another project's unreadable pyproject.toml configures nothing here
                config = None
            asked[here] = os.path.realpath(config) if config is not None else None
            if config is not None and asked[here] != chosen:
                found.setdefault(here, (config, folder))
            if here == top:
                break
            here = os.path.dirname(here)
    return [found[k] for k in sorted(found)]
