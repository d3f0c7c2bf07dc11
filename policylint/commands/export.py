"""``policylint export kueue|volcano [PATH]``: write the scheduler quotas the demand model justifies.

Importing this module must stay cheap: the linter and the exporter are imported
inside :func:`run`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "export"
HELP = "write Kueue or Volcano quotas sized from the measured bands (baseline guaranteed, daily borrowed)"
DESCRIPTION = (
    "Read the capacity repository at PATH, compute every pool's bands and write, per pool, a Kueue "
    "ClusterQueue (with LocalQueues per team) or a Volcano Queue: guaranteed quota = baseline band, "
    "borrowing up to the daily band, nothing for the peak band. Comments explain every number."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scheduler", choices=("kueue", "volcano"), help="which scheduler's manifests to write")
    parser.add_argument("path", nargs="?", type=Path, default=Path("."), metavar="PATH", help="capacity repository (default: .)")
    parser.add_argument("--output", "-o", type=Path, metavar="DIR", help="write one file per object group into DIR (default: stdout)")
    parser.add_argument("--config", type=Path, metavar="FILE", help="configuration file (default: discovered)")
    parser.add_argument("--isolated", action="store_true", help="ignore configuration files")
    parser.add_argument("--root", type=Path, metavar="DIR", help="repository root file references must stay in")
    parser.add_argument("--now", metavar="DATE", help="reference date (YYYY-MM-DD)")


def run(args: argparse.Namespace) -> int:
    import datetime as dt

    from policylint.config import load_config, parse_when
    from policylint.errors import PolicylintError
    from policylint.linter import LintOptions, lint, require_sound_model
    from policylint.measure import measure
    from policylint.schedulers import export
    from policylint.views import build_views

    config = load_config([args.path], config_file=args.config, root=args.root, isolated=args.isolated)
    now = parse_when(args.now, source="--now") if args.now else config.now or dt.datetime.now(dt.timezone.utc)
    result = lint(
        [args.path],
        LintOptions(
            root=config.root,
            exclude=config.exclude,
            now=now,
            gpu_resources=tuple(config.gpu_resources),
            trace_limits=config.trace_limits(),
        ),
    )
    # A workload that failed validation drops out of its pool: its quota would be written too small.
    model = require_sound_model(result, f"export {args.scheduler}")
    facts, _ = measure(model, now, limits=config.trace_limits())
    plans = export.plan(model, build_views(model, facts, now))
    if not plans:
        raise PolicylintError(f"nothing to export: no pool in {args.path} has workloads placed in it")
    files = export.kueue(plans) if args.scheduler == "kueue" else export.volcano(plans)
    for p in plans:
        if not p.measured:
            sys.stderr.write(f"policylint: warning: pool {p.cluster}/{p.pool} has unmeasured workloads; its declared numbers were exported\n")
    if args.output is None:
        sys.stdout.write(export.render(files))
        return 0
    try:
        args.output.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (args.output / name).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise PolicylintError(f"cannot write to {args.output}: {exc.strerror or exc}") from None
    sys.stderr.write(f"wrote {len(files)} files to {args.output}\n")
    return 0
