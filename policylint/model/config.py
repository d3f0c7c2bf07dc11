"""Configuration: the effective settings of a run, from the file found and the defaults.

Sources, highest precedence first: command-line flags, the file named by
``--config``, the nearest ``.policylint.yaml`` or ``pyproject.toml`` with a
``[tool.policylint]`` table (searched upwards from the checked path, then from
the working directory), built-in defaults. The file's folder is also the
repository root that document file references must stay inside.

Finding and reading the file is :mod:`policylint.model.config_files`, checking
its settings :mod:`policylint.model.config_checks`; :func:`load_config` puts
the three together into one :class:`Config`.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.errors import PolicylintError
from policylint.model.config_checks import check_plain, check_source_url, validate_settings
from policylint.model.config_files import config_of_changes, find_config, find_git_root, read_config_file

if TYPE_CHECKING:
    from policylint.readers.limits import TraceLimits


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
    max_walked_entries: int | None = None
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
    #: (checked by :func:`policylint.model.prometheus_headers.check_header_settings`; resolved by ``pull``)
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
            "max-documents": self.max_documents or LoadLimits.max_documents,
            "max-walked-entries": self.max_walked_entries or LoadLimits.max_walked_entries,
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


def _one_configuration(paths: list[Path], chosen: Path | None) -> None:
    """Refuse paths that lead to different configurations: a run judges one repository with one.

    ``check examples/good examples/bad`` read good's configuration only, judged bad's
    traces as outside the root and merged the two models (names clashed): every verdict
    of the second repository was wrong, with no word about why.
    """
    if len(paths) < 2:
        return
    first = os.path.realpath(chosen) if chosen is not None else None
    for p in paths[1:]:
        if not p.exists():
            continue
        found = find_config(p)
        other = os.path.realpath(found) if found is not None else None
        if other != first:
            raise PolicylintError(
                f"{paths[0]} and {p} belong to different configurations ({chosen or 'none'} and {found or 'none'}):"
                " a run judges one repository; check them one at a time"
            )


def _baseline_inside(named: str, baseline: Path, root: Path, source: str) -> None:
    """Refuse a configured baseline that resolves (links followed) outside the repository root.

    The pre-commit hook is given only the staged files under the root, so it never saw a baseline
    kept elsewhere change, and entries planted there ahead of a raise passed it (red team,
    2026-12-07, round 16: ``baseline: ../policy/capacity-baseline.json``). File references stay
    inside the root; a baseline given with ``--baseline`` is the caller's choice and may lie anywhere.
    """
    from policylint.model.load.files import within

    real, top = os.path.realpath(baseline), os.path.realpath(root)
    if not within(real, top):
        raise PolicylintError(
            f"'{named}' resolves to {real}, outside the repository root {top}: the configured"
            " baseline must lie inside the repository, where every change to it is reviewed and seen by the"
            " pre-commit hook (move it inside, or pass a file kept elsewhere with --baseline)",
            source=source, key="baseline",
        )


def load_config(
    paths: list[Path],
    *,
    config_file: Path | None = None,
    root: Path | None = None,
    isolated: bool = False,
    changed_files: bool = False,
    cache: Path | None = None,
) -> Config:
    """Discover, read and validate the configuration for a run over ``paths``.

    With ``changed_files`` (the pre-commit hook) the paths are the changed files of
    a whole git repository, in no particular order: the configuration is the one
    they lead to (see :func:`config_of_changes`), never the first file's alone.
    With ``cache`` (the cache folder), settings that passed the schema before are
    not checked again (:func:`~policylint.model.config_checks.validate_settings`).
    """
    path: Path | None = None
    raw: dict[str, Any] = {}
    if config_file is not None:
        if not config_file.exists():
            raise PolicylintError(f"config file not found: {config_file}")
        path = config_file
        read = read_config_file(config_file, cache)
        if read is None:
            raise PolicylintError("no [tool.policylint] table", source=str(config_file))
        raw = read
    elif not isolated and changed_files:
        path = config_of_changes(paths)
        if path is not None:
            raw = read_config_file(path, cache) or {}
    elif not isolated:
        starts = [paths[0]] if paths else []
        starts.append(Path.cwd())
        for start in starts:
            if start.exists():
                path = find_config(start)
                if path is not None:
                    raw = read_config_file(path, cache) or {}
                    break
        _one_configuration(paths, path)
    source = str(path) if path else "<defaults>"
    check_plain(raw, source)
    validate_settings(raw, source, cache)
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
        git_root = find_git_root(first)
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
        _baseline_inside(str(raw["baseline"]), config.baseline, config.root, source)
    config.rules = {k: dict(v) for k, v in raw.get("rules", {}).items()}
    config.gpu_resources = list(raw.get("gpu-resources", []))
    trace = raw.get("limits", {})
    config.max_trace_bytes, config.max_trace_rows = trace.get("max-trace-bytes"), trace.get("max-trace-rows")
    config.max_grid_samples = trace.get("max-grid-samples")
    limits = raw.get("limits", {})
    config.max_file_bytes = limits.get("max-file-bytes")
    config.max_nodes = limits.get("max-nodes")
    config.max_documents = limits.get("max-documents")
    config.max_walked_entries = limits.get("max-walked-entries")
    prom = raw.get("prometheus", {})
    config.prometheus_url = prom.get("url")
    if "ca-file" in prom:
        config.prometheus_ca_file = base / prom["ca-file"]
    config.prometheus_timeout_seconds = float(prom.get("timeout-seconds", 60.0))
    config.prometheus_max_attempts = int(prom.get("max-attempts", 5))
    if "headers" in prom:
        from policylint.model.prometheus_headers import check_header_settings

        config.prometheus_headers = check_header_settings(prom["headers"], source=source)
    report = raw.get("report", {})
    if "source-url" in report:
        config.report_source_url = check_source_url(report["source-url"], source)
    return config
