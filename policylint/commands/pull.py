"""``policylint pull [PATH]``: refresh committed traces from Prometheus.

For every measurement block with a ``prometheus`` source, run its range query
over the declared lookback and write the answer to the declared path, with its
provenance beside it (:mod:`policylint.measure.sources.provenance`). This is the only
command that opens a network connection and the only one that writes traces;
the lint judges what it committed.

Importing this module must stay cheap: the client and the linter are imported
inside :func:`run`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.measure.sources.declared import PullTarget

NAME = "pull"
HELP = "refresh the traces whose measurement declares a Prometheus source (the only command that uses the network)"
DESCRIPTION = (
    "For every measurement under PATH that declares a `prometheus` source (a PromQL query or a named template, "
    "step and lookback), run the range query against the server (prometheus.url in the configuration, "
    "$POLICYLINT_PROMETHEUS_URL or --url), in chunks of at most 11,000 points per series, and write the answer "
    "to the declared .json path with a <path>.provenance.json record beside it. Credentials come from "
    "$POLICYLINT_PROMETHEUS_TOKEN (bearer) or $POLICYLINT_PROMETHEUS_USER and _PASSWORD (basic auth); "
    "prometheus.headers adds headers to every request (a tenant's X-Scope-OrgID, say), each value given or read from "
    "an environment variable. Credentials and header values are never written or printed. "
    "Each request must be answered in full within prometheus.timeout-seconds and the whole pull "
    "within --deadline; an answer larger than a trace may be, or one check would refuse, leaves the committed trace "
    "as it was (exit 2)."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", type=Path, default=Path("."), metavar="PATH", help="capacity repository (default: .)")
    parser.add_argument("--dry-run", action="store_true", help="list what would be pulled (query, range, requests) and write nothing")
    parser.add_argument("--url", metavar="URL", help="Prometheus base URL (overrides $POLICYLINT_PROMETHEUS_URL and prometheus.url)")
    parser.add_argument("--end", metavar="TIME", help="end of the pulled range, ISO-8601 or unix seconds (default: now)")
    parser.add_argument("--workload", action="append", metavar="NAME", help="pull only this workload's traces (repeatable)")
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    parser.add_argument("--config", type=Path, metavar="FILE", help="configuration file (default: discovered)")
    parser.add_argument("--isolated", action="store_true", help="ignore configuration files")
    parser.add_argument("--root", type=Path, metavar="DIR", help="repository root; pull writes only inside it")
    parser.add_argument(
        "--deadline", type=_deadline, default=DEFAULT_DEADLINE, metavar="DURATION",
        help="longest the whole pull may take, e.g. 90s, 30m, 2h (default 1h); each request is bounded "
        "by prometheus.timeout-seconds",
    )


#: how long a whole pull may take unless --deadline says otherwise, seconds
DEFAULT_DEADLINE = 3600


def _deadline(text: str) -> int:
    """``--deadline``: a duration such as ``90s`` or ``2h``, or whole seconds."""
    from policylint.errors import PolicylintError
    from policylint.measure.sources.declared import parse_duration

    try:
        return parse_duration(int(text) if text.isdigit() else text)
    except (PolicylintError, ValueError):
        raise argparse.ArgumentTypeError(f"expected a duration such as 90s, 30m or 2h, got {text!r}") from None


def _end_time(text: str | None) -> int:
    """The range end in whole unix seconds."""
    import datetime as dt

    from policylint.model.config import parse_when
    from policylint.errors import PolicylintError

    if text is None:
        return int(dt.datetime.now(dt.timezone.utc).timestamp())
    try:
        value = float(text)
    except ValueError:
        if not text[:4].isdigit():
            raise PolicylintError(f"--end: expected ISO-8601 or unix seconds, got {text!r}") from None
        value = parse_when(text, source="--end").timestamp()
    # The same years the trace readers accept: the written trace must be readable.
    if not 0 <= value < _LATEST_END:
        raise PolicylintError(f"--end: {text!r} is not a time between 1970 and 2200")
    return int(value)


#: 2200-01-01T00:00:00Z, the latest time the trace readers accept
_LATEST_END = 7_258_118_400


class _Progress:
    """Progress of the pull: a rich bar on a terminal, plain lines elsewhere, nothing when quiet."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.bar: Any = None
        self.task: Any = None
        if not quiet and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=Console(file=sys.stderr), transient=True,
            )
            self.bar.start()

    def begin(self, label: str, total: int) -> None:
        if self.bar is not None:
            self.task = self.bar.add_task(label, total=total)
        elif not self.quiet:
            sys.stderr.write(f"pulling {label} ({total} request{'s' if total != 1 else ''})\n")

    def advance(self, done: int, total: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done)

    def end(self, line: str) -> None:
        if self.bar is not None:
            self.bar.remove_task(self.task)
        if not self.quiet:
            if self.bar is not None:
                self.bar.console.print(line, markup=False, highlight=False)
            else:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _shown(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _duration(seconds: int) -> str:
    for unit, size in (("w", 604_800), ("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _window(target: PullTarget, end: int) -> tuple[int, int]:
    """(start, end) of the pull, on multiples of the step so that repeated pulls share sample times."""
    stop = end - end % target.step_seconds
    return stop - target.lookback_seconds, stop


def _check_sizes(targets: list[PullTarget], end: int, max_points: int) -> None:
    """Refuse a declaration whose range holds more points per series than a trace may have,
    before any request: the file could not be read back, and the pull would be thousands of requests."""
    from policylint.errors import PolicylintError

    for t in targets:
        start, stop = _window(t, end)
        points = (stop - start) // t.step_seconds + 1
        if points > max_points:
            raise PolicylintError(
                f"lookback {_duration(t.lookback_seconds)} at step {_duration(t.step_seconds)} is {points:,} points "
                f"per series, more than the {max_points:,} a trace may hold (limits.max-trace-rows); "
                "use a coarser step or a shorter lookback",
                source=t.document,
                key=t.key,
            )


def run(args: argparse.Namespace) -> int:
    import datetime as dt
    import os

    from policylint.model.config import load_config
    from policylint.errors import PolicylintError
    from policylint.engine.linter import LintOptions, lint
    from policylint.measure.sources.declared import pull_targets
    from policylint.measure.sources.prometheus import chunks

    if args.url is not None:
        from policylint.model.prometheus_settings import check_url

        check_url(args.url, "--url")  # a bad URL is one clear error before anything else is done
    config = load_config([args.path], config_file=args.config, root=args.root, isolated=args.isolated)
    result = lint(
        [args.path],
        LintOptions(root=config.root, exclude=config.exclude, gpu_resources=tuple(config.gpu_resources)),
    )
    assert result.model is not None
    root = Path(os.path.realpath(config.root))
    problems = [f for f in result.findings if f.code != "PL022"]  # PL022: the trace may not exist before its first pull
    if problems:
        first = problems[0]
        sys.stderr.write(
            f"policylint: warning: {len(problems)} problem{'s' if len(problems) != 1 else ''} in the documents "
            f"(run `policylint check`); a document the schema refuses is not pulled. First: "
            f"{first.file}:{first.line}:{first.column}: {first.code} {first.message}\n"
        )
    targets = pull_targets(result.model, config.root)
    if args.workload:
        unknown = sorted(set(args.workload) - set(result.model.workloads))
        if unknown:
            raise PolicylintError(f"--workload {unknown[0]}: no such workload in {args.path}")
        targets = [t for t in targets if t.workload in args.workload]
    if not targets:
        raise PolicylintError(
            f"nothing to pull: no measurement in {args.path} declares a prometheus source (see docs/measurements.md)"
        )
    end = _end_time(args.end)
    _check_sizes(targets, end, config.trace_limits().max_rows)
    if args.dry_run:
        for t in targets:
            start, stop = _window(t, end)
            n = len(chunks(start, stop, t.step_seconds))
            when = f"{dt.datetime.fromtimestamp(start, dt.timezone.utc):%Y-%m-%dT%H:%M:%SZ}"
            until = f"{dt.datetime.fromtimestamp(stop, dt.timezone.utc):%Y-%m-%dT%H:%M:%SZ}"
            sys.stdout.write(
                f"{t.workload} {t.role} -> {_shown(t.path, root)}: {t.query}\n"
                f"    {when} .. {until}, step {_duration(t.step_seconds)}, "
                f"{(stop - start) // t.step_seconds + 1:,} points per series in {n} request{'s' if n != 1 else ''}\n"
            )
        return 0
    return _pull(targets, config, args, end, root)


def _pull(targets: list[PullTarget], config: Any, args: argparse.Namespace, end: int, root: Path) -> int:
    import os

    from policylint.measure.sources.prometheus import Client, DeadlineExceeded
    from policylint.model.prometheus_settings import settings_from

    if args.url:
        url, origin = args.url, "--url"
    else:
        url = os.environ.get("POLICYLINT_PROMETHEUS_URL") or config.prometheus_url
        origin = "$POLICYLINT_PROMETHEUS_URL" if os.environ.get("POLICYLINT_PROMETHEUS_URL") else (
            f"prometheus.url in {config.path}" if config.path else "prometheus.url"
        )
    settings = settings_from(
        os.environ,
        url=url,
        ca_file=str(config.prometheus_ca_file) if config.prometheus_ca_file else None,
        source=str(config.path) if config.path else "configuration",
        origin=origin,
        headers=config.prometheus_headers,
    )
    limits = config.trace_limits()
    settings.timeout_seconds = config.prometheus_timeout_seconds
    settings.max_attempts = config.prometheus_max_attempts
    settings.deadline_seconds = float(args.deadline)
    # Nothing is fetched that check would refuse to read: the answers of one trace may be
    # as large, and hold as many samples, as a Prometheus trace file may.
    settings.max_answer_bytes = limits.max_json_bytes
    settings.max_samples = limits.max_rows
    client = Client(settings)
    progress = _Progress(args.quiet)
    failed = 0
    try:
        for number, t in enumerate(targets):
            try:
                failed += not _pull_one(t, client, progress, limits, end, root)
            except DeadlineExceeded as exc:
                left = len(targets) - number
                progress.end(f"failed {t.workload} {t.role}: {exc}")
                sys.stderr.write(
                    f"policylint: error: {t.document} at key '{t.key}': {exc}; "
                    f"{left} trace{'s' if left != 1 else ''} not pulled, left as {'they were' if left != 1 else 'it was'}\n"
                )
                failed += left
                break
    finally:
        progress.close()
    return 2 if failed else 0


def _pull_one(t: PullTarget, client: Any, progress: _Progress, limits: Any, end: int, root: Path) -> bool:
    """Pull one trace; True when it was written. A failure is reported here (the committed
    trace and its provenance are left as they were); the run's deadline is raised."""
    import datetime as dt
    import hashlib

    from policylint.errors import PolicylintError
    from policylint.readers.prometheus import answer_series
    from policylint.measure.sources import provenance
    from policylint.measure.sources.prometheus import DeadlineExceeded, chunks

    settings = client.settings
    start, stop = _window(t, end)
    label = f"{t.workload} {t.role}"

    def fail(why: str) -> bool:
        why = settings.scrub(why)  # no secret, server text escaped, whatever produced the message
        progress.end(f"failed {label}: {why}")
        sys.stderr.write(f"policylint: error: {t.document} at key '{t.key}': {why}; {t.display} left as it was\n")
        return False

    progress.begin(label, len(chunks(start, stop, t.step_seconds)))
    try:
        series = client.query_range(t.query, start, stop, t.step_seconds, progress=progress.advance)
    except DeadlineExceeded:
        raise
    except PolicylintError as exc:
        return fail(str(exc))
    if not any(s["values"] for s in series):
        return fail(
            f"the query returned no {'samples' if series else 'series'} between "
            f"{provenance.iso(dt.datetime.fromtimestamp(start, dt.timezone.utc))} "
            f"and {provenance.iso(dt.datetime.fromtimestamp(stop, dt.timezone.utc))}"
        )
    # The answer replaces the committed trace only when the trace readers take it as it is.
    try:
        answer_series({"status": "success", "data": {"resultType": "matrix", "result": series}}, None, limits, t.display)
    except PolicylintError as exc:
        return fail(f"{settings.name}: the answer is not a usable trace: {exc}")
    text = provenance.render_trace(series)
    if len(text.encode("utf-8")) > limits.max_json_bytes:
        return fail(
            f"{settings.name}: the trace would be larger than {limits.max_json_bytes:,} bytes, the most check reads "
            "(limits.max-trace-bytes)"
        )
    samples = sum(len(s["values"]) for s in series)
    record = {
        "query": t.query,
        "template": t.template,
        "params": t.params or None,
        "server": settings.name,
        "start": provenance.iso(dt.datetime.fromtimestamp(start, dt.timezone.utc)),
        "end": provenance.iso(dt.datetime.fromtimestamp(stop, dt.timezone.utc)),
        "step_seconds": t.step_seconds,
        "lookback_seconds": t.lookback_seconds,
        "pulled_at": provenance.iso(dt.datetime.now(dt.timezone.utc)),
        "series": len(series),
        "samples": samples,
        # the bytes written, so an edit of the pulled values is seen (PL978)
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }
    try:
        provenance.write(t.path, text, root=root, what="the trace")
        provenance.write(provenance.sidecar(t.path), provenance.render_record(record), root=root, what="the provenance record")
    except PolicylintError as exc:
        return fail(str(exc))
    progress.end(f"pulled {label}: {len(series)} series, {samples:,} samples -> {_shown(t.path, root)}")
    return True
