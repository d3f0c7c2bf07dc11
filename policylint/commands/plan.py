"""``policylint plan [PATH]``: the capacity plan the measurements justify.

Reads the repository at PATH the way ``check`` does, measures its workloads, derives
pools and sizes them from their pooled series (:mod:`policylint.plan`), then applies
the plan to a scratch copy of the repository and runs the same engine on it: the
queue depths come from that run's views, and the plan is reported with the sizing
findings ``check`` still has on it (none, when the plan is sound). Prints the plan
(text, JSON or Markdown) beside today's pools and proposals; writes the planned
Cluster YAML (``--output``), the planned repository (``--repository``) and the
Kueue/Volcano manifests of the plan (``--kueue``, ``--volcano``).

Exit codes: 0 ``check`` on the planned repository has no finding the plan answers for, 1 it
has one (or the repository has load, validation or reference errors), 2 usage or setup error.
Heavy imports stay inside :func:`run`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.engine.result import LintResult
    from policylint.plan import Plan, Unplaced, WhatIf

NAME = "plan"
HELP = "derive pools from the measurements and size them from their pooled bands, with the savings against today"
DESCRIPTION = (
    "Read the capacity repository at PATH, group its workloads into pools by the framework (class, GPU, tolerance "
    "tier; pooled where pooling saves GPUs, gang jobs with the rest), size each pool from its pooled series (reserved = "
    "baseline band, elastic up to the daily band, queue limits from tolerances and spike heights), check the "
    "planned repository with the same rules and print the plan beside today's pools and proposals. "
    "Exit 0 when check on the planned repository has no finding the plan answers for (its pools, placements and "
    "the inputs it set), 1 when it has (or the repository has errors), 2 on usage errors."
)


def _seconds(value: str) -> float:
    import math

    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return x


def _tolerance(value: str) -> tuple[str, float]:
    import math

    name, sep, seconds = value.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected WORKLOAD=SECONDS, got {value!r}")
    try:
        x = float(seconds)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WORKLOAD=SECONDS with a number of seconds, got {value!r}") from None
    if not math.isfinite(x) or x < 0:
        raise argparse.ArgumentTypeError(f"expected a tolerance of at least 0 seconds, got {value!r}")
    return name.strip(), x


def _gpu(value: str) -> tuple[str, float]:
    import math

    model, sep, memory = value.partition("=")
    if not sep or not model.strip():
        raise argparse.ArgumentTypeError(f"expected MODEL=GIB (e.g. H100-SXM-80GB=80), got {value!r}")
    try:
        gib = float(memory)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MODEL=GIB with the memory of one GPU in GiB, got {value!r}") from None
    if not math.isfinite(gib) or gib <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive memory in GiB, got {value!r}")
    return model.strip(), gib


def _cluster_name(value: str) -> str:
    import re

    if not re.fullmatch(r"[a-z0-9]([-a-z0-9_.]*[a-z0-9])?", value):
        raise argparse.ArgumentTypeError(f"expected a cluster name (lower-case letters, digits, '-', '_', '.'), got {value!r}")
    return value


def _fraction(value: str) -> float:
    import math

    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.1, got {value!r}") from None
    if not math.isfinite(x) or x < 0:
        raise argparse.ArgumentTypeError(f"expected a fraction of at least 0, got {value!r}")
    return x


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", type=Path, default=Path("."), metavar="PATH", help="capacity repository (default: .)")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text", help="how to print the plan (default: text)")
    parser.add_argument("--output", "-o", type=Path, metavar="FILE", help="write the planned clusters as policylint Cluster YAML to FILE")
    parser.add_argument(
        "--repository", type=Path, metavar="DIR",
        help="write a copy of the repository with the plan applied into DIR (new or empty): planned clusters, "
        "workloads placed in them, no proposals or scheduler manifests",
    )
    parser.add_argument("--kueue", type=Path, metavar="FILE", help="write the plan as Kueue manifests (policylint export kueue) to FILE")
    parser.add_argument("--volcano", type=Path, metavar="FILE", help="write the plan as Volcano manifests (policylint export volcano) to FILE")
    parser.add_argument(
        "--cold-start", type=_seconds, metavar="SECONDS",
        help="what-if: every workload (and elastic capacity) starts in SECONDS - what faster model loading is worth",
    )
    parser.add_argument(
        "--tolerance", type=_tolerance, action="append", metavar="WORKLOAD=SECONDS",
        help="what-if: WORKLOAD tolerates SECONDS of queueing - what a relaxed objective is worth; repeatable",
    )
    parser.add_argument(
        "--headroom", type=_fraction, default=0.0, metavar="FRACTION",
        help="plan FRACTION above the bands (default 0; at most the headroom the sizing rules accept, 0.15 by default)",
    )
    parser.add_argument(
        "--size-queues-by-tolerance", action="store_true",
        help="size a pool that queues its overflow to the least capacity at which its daily-band demand waits no longer "
        "than its tightest tolerance, when that is below the daily band (default: elastic = daily band minus baseline, "
        "the framework's definition; the plan shows what queueing would save)",
    )
    parser.add_argument(
        "--gpu", type=_gpu, metavar="MODEL=GIB",
        help="plan workloads placed in no pool (or in a cluster not declared) on this GPU type, e.g. H100-SXM-80GB=80",
    )
    parser.add_argument(
        "--cluster", type=_cluster_name, default="planned", metavar="NAME",
        help="the cluster for workloads that name none (default: planned)",
    )
    parser.add_argument("--config", type=Path, metavar="FILE", help="configuration file (default: discovered)")
    parser.add_argument("--isolated", action="store_true", help="ignore configuration files")
    parser.add_argument("--root", type=Path, metavar="DIR", help="repository root file references must stay in")
    parser.add_argument("--now", metavar="DATE", help="reference date (YYYY-MM-DD) for reproducible runs")


def _refuse_inside(target: Path, path: Path) -> None:
    """Refuse writing the planned copy where a check of ``path`` would read it.

    Inside the repository, every planned workload, cluster and proposal would be found
    beside its original: the next run reports each twice (PL021) and plans nothing.
    """
    import os

    from policylint.errors import PolicylintError
    from policylint.model.config import load_config

    real = os.path.realpath(target)
    folders = {os.path.realpath(path if path.is_dir() else path.parent), os.path.realpath(load_config([path]).root)}
    for folder in sorted(folders):
        if real == folder or real.startswith(folder.rstrip(os.sep) + os.sep):
            raise PolicylintError(
                f"--repository {target}: lies inside the repository it plans ({folder}); its copies of every"
                " document would be read beside the originals - write it outside"
            )


def run(args: argparse.Namespace) -> int:
    import json
    import shutil

    from policylint.errors import PolicylintError
    from policylint.plan import Unplaced, WhatIf
    from policylint.plan.pipeline import Refused, planned

    if not args.path.exists():
        raise PolicylintError(f"path not found: {args.path}")
    for opt, target in (("--output", args.output), ("--kueue", args.kueue), ("--volcano", args.volcano)):
        if target is not None and target.is_dir():
            raise PolicylintError(f"{opt} {target}: is a folder; name a file")
    if args.repository is not None and args.repository.exists() and (
        not args.repository.is_dir() or any(args.repository.iterdir())
    ):
        raise PolicylintError(f"--repository {args.repository}: exists and is not an empty folder")
    if args.repository is not None:
        _refuse_inside(args.repository, args.path)
    if args.cold_start is not None:
        from policylint.calc.settings import MIN_WINDOW_DAYS

        if args.cold_start >= MIN_WINDOW_DAYS * 86400:
            # no trace of the measured window holds a level that long: every workload would become
            # unmeasured and the plan would claim all of today's GPUs as saved
            raise PolicylintError(
                f"--cold-start {args.cold_start:g}: not shorter than the {MIN_WINDOW_DAYS:g}-day measurement window;"
                " no sustained demand can be computed over a window that long"
            )
    whatif = WhatIf(
        cold_start_seconds=args.cold_start,
        tolerances=tuple(sorted(dict(args.tolerance or []).items())),
        headroom=args.headroom,
        size_queues_by_tolerance=args.size_queues_by_tolerance,
    )
    gpu_model, gpu_memory = args.gpu if args.gpu is not None else (None, None)
    hint = "" if args.gpu is not None else " (give the GPU type of workloads placed in no pool with --gpu MODEL=GIB)"
    try:
        with planned(args.path, args, whatif=whatif, unplaced=Unplaced(args.cluster, gpu_model, gpu_memory), hint=hint) as made:
            manifests = _manifests(args, made.checked, made.plan)
            _write_outputs(args, made.root, made.clusters_text, manifests)
            if args.repository is not None:
                shutil.copytree(made.planned_root, args.repository, symlinks=True, dirs_exist_ok=True)
                sys.stderr.write(f"wrote the planned repository to {args.repository}\n")
    except Refused:
        return 1
    document, remaining = made.document, made.remaining
    if args.format == "json":
        sys.stdout.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(markdown(document))
    else:
        sys.stdout.write(text(document))
    return 1 if remaining else 0


def _manifests(args: argparse.Namespace, checked: LintResult, plan: Plan) -> dict[str, str]:
    """The Kueue/Volcano manifests of the planned pools, by the existing exporter.

    The exporter guarantees the baseline band and lends up to the daily band; where the
    plan sized a pool otherwise (headroom, or a capacity its tolerance allows below the
    daily band) the planned numbers are exported, with the plan's reason as their comment.
    """
    from policylint.export import kueue as export_kueue, plans as export, volcano as export_volcano

    if args.kueue is None and args.volcano is None:
        return {}
    model = checked.model
    assert model is not None
    plans = export.plan(model, checked.views)
    planned = {p.qualified: p for p in plan.pools}
    for p in plans:
        target = planned.get(f"{p.cluster}/{p.pool}")
        if target is None or not target.measured:
            continue
        if p.guaranteed != target.reserved:
            p.guaranteed = target.reserved
            p.guaranteed_note = f"planned reserved GPUs: {target.derivation['reservedGpus']['rule']}"
        if p.borrow != target.elastic:
            p.borrow = target.elastic
            p.borrow_note = f"planned elastic GPUs: {target.derivation['elastic.maxGpus']['rule']}"
    out: dict[str, str] = {}
    if args.kueue is not None:
        out["kueue"] = export.render(export_kueue.kueue(plans))
    if args.volcano is not None:
        out["volcano"] = export.render(export_volcano.volcano(plans))
    return out


def _write_outputs(args: argparse.Namespace, root: Path, clusters: str, manifests: dict[str, str]) -> None:
    from policylint.writer import write_file

    if args.output is not None:
        write_file(args.output, clusters, root=root, explicit=True, parents=True, what="the planned clusters")
        sys.stderr.write(f"wrote the planned clusters to {args.output}\n")
    for scheduler, target in (("kueue", args.kueue), ("volcano", args.volcano)):
        if target is not None:
            write_file(target, manifests[scheduler], root=root, explicit=True, parents=True, what=f"the {scheduler} manifests")
            sys.stderr.write(f"wrote the {scheduler.capitalize()} manifests of the plan to {target}\n")


# --------------------------------------------------------------------------- rendering


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:g}"
    return str(x)


def _pool_rows(pool: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(quantity, value, derivation) rows of one planned pool."""
    d = pool["derivation"]
    rows = [
        ("reserved GPUs", _fmt(pool["reserved_gpus"]), d["reservedGpus"]["rule"]),
        ("elastic GPUs", _fmt(pool["elastic_gpus"]), d["elastic.maxGpus"]["rule"] if "elastic.maxGpus" in d else ""),
    ]
    if "elastic.coldStartSeconds" in d:
        rows.append(("cold-start window", f"{_fmt(pool['cold_start_seconds'])} s", d["elastic.coldStartSeconds"]["rule"]))
    rows.append(("overflow", pool["overflow"], d["overflow"]["rule"] if "overflow" in d else ""))
    rows.append(("queue depth", _fmt(pool["queue"]["max_depth"]), d.get("queue.maxDepth", {}).get("rule", "")))
    rows.append(("queue wait", f"{_fmt(pool['queue']['max_wait_seconds'])} s", d["queue.maxWaitSeconds"]["rule"]))
    if "scheduling.gang" in d:
        rows.append(("gang", _fmt(pool["scheduling"]["gang"]).lower(), d["scheduling.gang"]["rule"]))
        rows.append(("preemption", _fmt(pool["scheduling"]["preemption"]).lower(), d["scheduling.preemption"]["rule"]))
    return rows


def _headline(pool: dict[str, Any]) -> str:
    gpu = pool["gpu"]
    head = f"{pool['cluster']}/{pool['pool']}: {pool['class']} on {gpu['model']}, {pool['tier']}, {len(pool['workloads'])} workload(s)"
    p = pool["pooled"]
    if p is not None:
        head += (
            f"; pooled bands baseline {p['baseline_gpus']} / daily {p['daily_gpus']} / peak {p['peak_gpus']} GPUs"
            f" over {p['window_days']:g} days"
        )
    return head


def _saving_line(pool: dict[str, Any]) -> str | None:
    apart, saves = pool["apart"], pool["pooling_saves_gpus"]
    if apart is None or len(pool["workloads"]) < 2:
        return None
    return (
        f"pooling saves {saves} GPUs in all and {apart['reserved'] - pool['reserved_gpus']} reserved: planned apart"
        f" these workloads would need {apart['capacity']} (reserved {apart['reserved']}), together"
        f" {pool['capacity_gpus']} (reserved {pool['reserved_gpus']})"
    )


def _table(rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    """Rows as aligned columns (``right``: the columns aligned right); the first row is the header.

    A table wider than :data:`WIDTH` has its widest left-aligned columns (never the first,
    which names the row) narrowed until it fits, each to no fewer than :data:`_MIN_COLUMN`,
    and their cells folded at spaces onto lines of their own under the column: a derivation
    is a sentence, and a 345-column line is read in no terminal, pull request comment or CI log.
    """
    import textwrap

    count = len(rows[0])
    widths = [max(len(r[i]) for r in rows) for i in range(count)]
    foldable = [i for i in range(1, count) if i not in right]
    while 2 + sum(widths) + 2 * (count - 1) > WIDTH:
        widest = max(foldable, key=lambda i: widths[i], default=None)
        if widest is None or widths[widest] <= _MIN_COLUMN:
            break
        over = 2 + sum(widths) + 2 * (count - 1) - WIDTH
        widths[widest] = max(_MIN_COLUMN, widths[widest] - over)
    out = []
    for r in rows:
        cells = [
            [c] if i in right or len(c) <= widths[i]
            else textwrap.wrap(c, widths[i], break_long_words=False, break_on_hyphens=False) or [c]
            for i, c in enumerate(r)
        ]
        for k in range(max(map(len, cells))):
            parts = [(cell[k] if k < len(cell) else "") for cell in cells]
            text = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(parts)]
            out.append("  " + "  ".join(text).rstrip())
    return out


#: the width prose lines and table rows of the text output are folded to (a word longer than the
#: room left, such as a long pool name, stays whole)
WIDTH = 100
#: the fewest characters a folded column keeps, however wide the table
_MIN_COLUMN = 24


def _wrapped(line: str) -> list[str]:
    """``line`` (indented by two) folded at spaces to :data:`WIDTH`, its later lines indented by four."""
    import re
    import textwrap

    # a rule's count stays with its code ("PL107 x15"): joined by a character wrap does not break at
    glued = re.sub(r" (x\d+\b)", "\0\\1", line)
    folded = textwrap.wrap(glued, WIDTH, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)
    return [piece.replace("\0", " ") for piece in folded] or [line]


def text(doc: dict[str, Any]) -> str:
    """The plan as text: a table per pool with each number's derivation, then today vs planned."""
    from policylint.plan.pipeline import savings_words

    from policylint.errors import escape_controls

    def safe(value: Any) -> str:
        return escape_controls(str(value))

    plan, comparison, check = doc["plan"], doc["comparison"], doc["check"]
    lines = [f"Capacity plan for {safe(doc['repository'])}: {len(plan['pools'])} pools"]
    for pool in plan["pools"]:
        lines += ["", *_wrapped(safe(_headline(pool)))]
        table: list[tuple[str, ...]] = [("quantity", "planned", "derivation")]
        table += [(q, safe(v), safe(why)) for q, v, why in _pool_rows(pool)]
        lines += _table(table, {1})
        for name, reason in pool["reasons"].items():
            lines += _wrapped(f"  {safe(name)}: {safe(reason)}")
        saving = _saving_line(pool)
        if saving:
            lines += _wrapped(f"  {safe(saving)}")
    for name, why in plan["unplaced"].items():
        lines += _wrapped(f"not planned: {safe(name)}: {safe(why)}")
    lines += ["", "Today vs planned (GPUs)"]
    # the planned pools last: a list of pool names, folded when long
    rows: list[tuple[str, ...]] = [("today's pool", "reserved", "elastic", "proposed", "resolves", "planned in")]
    for c in comparison["current_pools"]:
        codes = ", ".join(sorted({finding["code"] for finding in c["resolves"]})) or "-"
        rows.append((safe(c["pool"]), str(c["reserved_gpus"]), str(c["elastic_gpus"]), str(c["proposed_gpus"]), codes,
                     safe(", ".join(c["planned_in"]) or "-")))
    lines += _table(rows, {1, 2, 3})
    lines.append("")
    rows = [("planned pool", "reserved", "elastic", "from")]
    for p in comparison["planned_pools"]:
        rows.append((safe(p["pool"]), str(p["reserved_gpus"]), str(p["elastic_gpus"]), safe(", ".join(p["from"]) or "-")))
    lines += _table(rows, {1, 2})
    lines.append("")
    rows = [("cluster", "reserved today", "elastic today", "proposed", "planned reserved", "planned elastic")]
    for name, c in comparison["clusters"].items():
        rows.append((safe(name), str(c["today_reserved"]), str(c["today_elastic"]), str(c["today_proposed"]),
                     str(c["planned_reserved"]), str(c["planned_elastic"])))
    lines += _table(rows, {1, 2, 3, 4, 5})
    t = comparison["total"]
    today, new, saves = t["today"], t["planned"], t["saves"]
    lines.append("")
    # one line whatever its width: the plan's totals, for a reader (or a CI job) to find whole
    lines.append(
        f"total today: reserved {today['reserved_gpus']} + elastic {today['elastic_gpus']} + proposed"
        f" {today['proposed_gpus']} = {today['total_gpus']} GPUs; planned: reserved {new['reserved_gpus']} + elastic"
        f" {new['elastic_gpus']} = {new['total_gpus']} GPUs"
    )
    lines += _wrapped(savings_words(saves))
    queueing = queueing_line(plan)
    if queueing:
        lines += _wrapped(queueing)
    if comparison["unmeasured_workloads"]:
        lines += _wrapped(
            "not counted: the GPUs of " + ", ".join(safe(n) for n in comparison["unmeasured_workloads"])
            + " (no measured GPU demand; measure them before buying for them)"
        )
    lines.append("")
    lines.append(f"check on the planned repository: {verdict_words(check)}")
    for finding in check["sizing_findings"]:
        lines += _wrapped(f"  {safe(finding_words(finding))}")
    other = other_findings_line(check)
    if other:
        lines += _wrapped(other)
    return "\n".join(lines) + "\n"


def verdict_words(check: dict[str, Any]) -> str:
    """How many findings of the planned repository the plan answers for, in words."""
    n = len(check["sizing_findings"])
    if not n:
        return "no finding the plan answers for"
    return f"{n} finding{'s' if n != 1 else ''} the plan answers for"


def finding_words(finding: dict[str, Any]) -> str:
    """One finding the plan answers for: code, message and, outside the sizing rules, what makes it the plan's."""
    because = finding.get("because")
    return f"{finding['code']} {finding['message']}" + (f" ({because})" if because else "")


def other_findings_line(check: dict[str, Any]) -> str | None:
    """The findings the planned repository still has that are not the plan's to answer, counted by code.

    Measurement evidence, tolerances and documentation are the teams' to fix; the plan is
    sized from the same measurements, so it must not look as if they were gone.
    """
    other = check["other_findings_by_code"]
    if not other:
        return None
    n = sum(other.values())
    counts = ", ".join(f"{code} x{count}" if count > 1 else code for code, count in other.items())
    return (
        f"not answered by the plan: {n} other finding{'s' if n != 1 else ''} on the planned repository"
        f" ({counts}); the plan is sized from the same measurements - `policylint check` shows them"
    )


def queueing_line(plan: dict[str, Any]) -> str | None:
    """What sizing queued pools by their tolerances would save in all, when the plan does not apply it."""
    if plan["what_if"].get("size_queues_by_tolerance"):
        return None
    saves = sum(
        (p["derivation"].get("elastic.maxGpus") or {}).get("queueing_saves_gpus") or 0 for p in plan["pools"]
    )
    if not saves:
        return None
    return (
        f"queueing to the tolerances would save {saves} GPUs in all (not applied; --size-queues-by-tolerance applies it):"
        " the framework's elastic capacity is the daily band minus the baseline"
    )


def _md(text: Any) -> str:
    from policylint.errors import escape_controls

    return escape_controls(str(text)).replace("|", "\\|")


def markdown(doc: dict[str, Any]) -> str:
    """The plan as Markdown for a pull-request comment."""
    from policylint.plan.pipeline import savings_words

    plan, comparison, check = doc["plan"], doc["comparison"], doc["check"]
    t = comparison["total"]
    lines = ["## policylint plan", ""]
    n = len(check["sizing_findings"])
    verdict = (
        "passes `check`: none of its findings on the planned repository is the plan's to answer for" if check["passes"]
        else f"fails `check`: {n} finding{'s' if n != 1 else ''} on the planned repository {'are' if n != 1 else 'is'} the plan's to answer for"
    )
    lines.append(
        f"{len(plan['pools'])} pools; reserved {t['planned']['reserved_gpus']} + elastic {t['planned']['elastic_gpus']}"
        f" = {t['planned']['total_gpus']} GPUs (today {t['today']['total_gpus']} including {t['today']['proposed_gpus']}"
        f" proposed): {savings_words(t['saves'])}. The plan {verdict}."
    )
    if check["sizing_findings"]:
        lines.append("")
        lines += [f"- {_md(finding_words(finding))}" for finding in check["sizing_findings"]]
    queueing = queueing_line(plan)
    if queueing:
        lines += ["", _md(queueing[0].upper() + queueing[1:]) + "."]
    lines += ["", "| planned pool | class | GPU | workloads | reserved | elastic | overflow | queue depth | queue wait (s) |",
              "|---|---|---|---|---:|---:|---|---:|---:|"]
    for p in plan["pools"]:
        lines.append(
            f"| {_md(p['cluster'] + '/' + p['pool'])} | {p['class']} | {_md(p['gpu']['model'])} | {_md(', '.join(p['workloads']))}"
            f" | {p['reserved_gpus']} | {p['elastic_gpus']} | {p['overflow']} | {p['queue']['max_depth']}"
            f" | {_fmt(p['queue']['max_wait_seconds'])} |"
        )
    lines += ["", "| today's pool | reserved | elastic | proposed | planned in | resolves |", "|---|---:|---:|---:|---|---|"]
    for c in comparison["current_pools"]:
        codes = ", ".join(sorted({finding["code"] for finding in c["resolves"]})) or "-"
        lines.append(
            f"| {_md(c['pool'])} | {c['reserved_gpus']} | {c['elastic_gpus']} | {c['proposed_gpus']}"
            f" | {_md(', '.join(c['planned_in']) or '-')} | {codes} |"
        )
    lines += ["", "| cluster | reserved today | elastic today | proposed | planned reserved | planned elastic |",
              "|---|---:|---:|---:|---:|---:|"]
    for name, c in comparison["clusters"].items():
        lines.append(
            f"| {_md(name)} | {c['today_reserved']} | {c['today_elastic']} | {c['today_proposed']}"
            f" | {c['planned_reserved']} | {c['planned_elastic']} |"
        )
    lines += ["", "<details><summary>How each number is derived</summary>", ""]
    for p in plan["pools"]:
        lines.append(f"**{_md(_headline(p))}**")
        lines.append("")
        for q, v, why in _pool_rows(p):
            lines.append(f"- {q}: {_md(v)} - {_md(why)}")
        saving = _saving_line(p)
        if saving:
            lines.append(f"- {_md(saving)}")
        lines.append("")
    lines.append("</details>")
    if plan["unplaced"]:
        lines += ["", "Not planned: " + "; ".join(f"{_md(n)} ({_md(w)})" for n, w in plan["unplaced"].items())]
    other = other_findings_line(check)
    if other:
        lines += ["", _md(other[0].upper() + other[1:]) + "."]
    return "\n".join(lines) + "\n"
