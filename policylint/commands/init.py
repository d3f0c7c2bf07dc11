"""``policylint init [DIR]``: start a capacity repository that passes at once.

Writes, under DIR (default ``.``):

* ``.policylint.yaml`` - the configuration, every setting shown and explained;
* ``.pre-commit-config.yaml`` with the policylint hook - or, when the file
  exists, prints the entry to add (it holds other hooks; it is never rewritten);
* ``schemas/*.json`` and ``.vscode/settings.json`` (``yaml.schemas``) for
  completion and validation in editors; the example files also carry the
  ``yaml-language-server`` modeline, for editors without the settings file;
* one Workload, one Cluster and one Proposal wired together, with a generated
  92-day concurrency trace ending now, so that ``policylint check DIR`` passes
  and every number has something to be compared with.

Existing files are kept unless ``--force`` is given; the command says what it
wrote, kept or left for the user to add.

Nothing below DIR is ever followed: a symbolic link where a folder init writes
into should be (``schemas -> /elsewhere``) stops the command before anything
is written, and so does a named pipe, device or socket where a file goes. A
link where a file goes, dangling or not, is kept like any existing file;
``--force`` replaces the link itself by a regular file and never writes to
what it points to. Every file is written by :func:`policylint.writer.write_file`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import stat
import sys
from pathlib import Path

from policylint import __version__

NAME = "init"
HELP = "start a capacity repository: configuration, pre-commit hook, schemas and a passing example"
DESCRIPTION = (
    "Write a commented .policylint.yaml, the pre-commit hook entry, the JSON Schemas with the editor "
    "association, and one Workload, Cluster and Proposal with a generated trace, so that "
    "`policylint check DIR` passes at once. Existing files are kept unless --force is given; "
    ".pre-commit-config.yaml and .vscode/settings.json are never rewritten (the entry to add is printed)."
)

REPOSITORY = "https://github.com/policylint/policylint"

#: The tag of this release: the pre-commit ``rev`` (releases are tagged v<version>).
RELEASE_TAG = f"v{__version__}"

CONFIG = """\
# policylint configuration. This folder is the repository root: measurement paths in
# the documents below it must stay inside it. Every setting is optional; the values
# shown are the defaults unless a comment says otherwise.
# Reference: {repository}#configuration

# Rules to run: codes (PL101), prefixes (PL1, PL) or names (reserved-above-baseline).
select: [PL]
# extend-select: []             # add rules to the selection (e.g. your own ACME rules)
# ignore: [measurement-stale]   # skip rules everywhere
# per-file-ignores:             # skip rules in some files (globs relative to this folder)
#   "legacy/*.yaml": [PL301]

# Lowest severity that fails `policylint check`: error, warning or info.
fail-on: warning

# Folders and files not to lint (globs relative to this folder).
# exclude: ["vendor/**"]

# Judge measurement staleness as of a fixed date (reproducible runs); default: today.
# (the example is the day this file was written: the example trace ends just before it)
# now: "{today}"

# Your own rule files (rules are data: YAML, no code), and what counts as a GPU in
# Kueue/Volcano manifests.
# rule-dirs: [policy/rules]
# gpu-resources: [nvidia.com/gpu]

# Findings recorded here (`policylint baseline -o FILE`) are hidden; only new ones fail.
# baseline: .policylint-baseline.json

# Per-rule options and severities (`policylint rule CODE` lists a rule's options).
# rules:
#   reserved-above-baseline: {{headroom: 0.25}}
#   PL107: {{severity: info, max_age_days: 45}}
"""

PRE_COMMIT_ENTRY = """\
  - repo: {repository}
    rev: {tag}
    hooks:
      - id: policylint
"""

#: Which documents each bundled schema describes, for the editor association.
EDITOR_SCHEMAS = {
    "./schemas/workload.schema.json": ["workloads/**/*.yaml", "workloads/**/*.yml"],
    "./schemas/cluster.schema.json": ["clusters/**/*.yaml", "clusters/**/*.yml"],
    "./schemas/proposal.schema.json": ["proposals/**/*.yaml", "proposals/**/*.yml"],
    "./schemas/config.schema.json": [".policylint.yaml", ".policylint.yml"],
}

# The example: one inference service, one pool sized from its bands, one request
# for the gap. The trace below gives (in requests in flight) baseline 80, daily
# 89, peak 120; at 10 per GPU that is 8 / 9 / 12 GPUs. The pool reserves 7 and
# the proposal asks for the missing 1; 7 reserved + 2 elastic = the daily band.
WORKLOAD = """\
# yaml-language-server: $schema=../schemas/workload.schema.json
#
# An example demand declaration: replace it with one of your services. Every number
# that sizes GPUs comes from a measurement or says where it was measured.
apiVersion: policylint/v1
kind: Workload
metadata:
  name: example-service
  team: platform
  description: An interactive inference service (example written by `policylint init`).
spec:
  class: inference              # training | inference | batch
  cluster: example
  pool: serving
  gpusPerReplica: 1
  concurrency:
    # 92 days of requests in flight, one sample every 5 minutes (generated by `policylint init`;
    # export yours from your metrics system: CSV, or a Prometheus query_range JSON).
    trace:
      path: ../measurements/example-service.csv
      format: csv
      timestampColumn: timestamp
      columns: [in_flight]
  perGpuConcurrency:
    value: 10                   # requests one GPU sustains, measured in production
    measuredIn: production
    source: load test replayed on a production replica (example)
  coldStartSeconds: 600         # node + image + model load: shorter spikes are noise
  tolerance:
    maxQueueSeconds: 30
    evidence:
      # the service answers within 32 s at p99 (SLO) and a request takes 2 s to serve,
      # so it may queue for 30 s; link the SLO document or commit it beside this file
      objectiveSeconds: 32
      serviceSeconds: 2
      url: https://example.com/slo/example-service
  vram: {residentGiB: 20, residencySeconds: 86400, activeComputeSeconds: 64800}
  durations: {p50Seconds: 2, p90Seconds: 4, p99Seconds: 8}
"""

CLUSTER = """\
# yaml-language-server: $schema=../schemas/cluster.schema.json
#
# An example cluster with one pool, sized from the bands of the workloads in it:
# reserved GPUs carry the baseline band, elastic GPUs the daily band, and the peak
# band waits in the queue.
apiVersion: policylint/v1
kind: Cluster
metadata:
  name: example
  description: Example cluster written by `policylint init`.
spec:
  pools:
    - name: serving
      gpu: {model: H100-SXM-80GB, memoryGiB: 80}
      # The baseline band of example-service needs 8 GPUs; 7 are reserved today and
      # proposals/example-request.yaml asks for the missing one.
      reservedGpus: 7
      elastic:
        # 7 + 2 = 9 GPUs = the daily band, not the 12-GPU peak.
        maxGpus: 2
        kind: autoscale
        coldStartSeconds: 600
      serves: [inference]
      overflow: queue           # demand above the daily band waits (queue) or is refused (reject)
      queue: {maxDepth: 200, maxWaitSeconds: 30}
"""

PROPOSAL = """\
# yaml-language-server: $schema=../schemas/proposal.schema.json
#
# An example procurement request: it asks for the gap between the measured baseline
# band and the reserved GPUs, and names the measured workloads that justify it.
apiVersion: policylint/v1
kind: Proposal
metadata:
  name: example-request
  description: Example proposal written by `policylint init`.
spec:
  cluster: example
  date: "{date}"
  requests:
    - pool: serving
      gpus: 1
      gpuModel: H100-SXM-80GB
  workloads: [example-service]
  justification: >-
    The baseline band of example-service needs 8 GPUs and the pool reserves 7.
"""

TRACE_DAYS = 92
TRACE_STEP = dt.timedelta(minutes=5)
SAMPLES_PER_HOUR = 12


def trace_csv(end: dt.datetime) -> str:
    """A 92-day trace of requests in flight at 5-minute steps, ending at ``end`` (UTC).

    The level depends only on the hour of the day (a daytime hump over a night
    floor, busiest at 15:00) and on the sample's place in the trace (one burst
    half-way through), never on the calendar, so the bands are the same
    whatever day ``init`` runs: baseline 80, daily 89, peak 120. Like a real
    export it is not a copy of one day: every other sample carries a small
    ripple of 0-2 requests drawn from its index, which leaves the bands as they
    are (the sustained series takes the minimum over the 10-minute cold start,
    and every such pair holds one sample without ripple).
    """
    samples = TRACE_DAYS * 24 * SAMPLES_PER_HOUR
    start = end - TRACE_STEP * (samples - 1)
    rows = ["timestamp,in_flight"]
    burst = (samples // 2) // (24 * SAMPLES_PER_HOUR) * 24 + 15  # 15:00 on the middle day
    for i in range(samples):
        hour_index = i // SAMPLES_PER_HOUR
        hour = hour_index % 24
        daytime = math.sin(math.pi * (hour - 7) / 14) if 7 <= hour <= 21 else 0.0
        level = 40 + round(40 * daytime) + (10 if hour == 15 else 0)
        if hour_index == burst:
            level = 120  # the one burst of the window, an hour long: the peak band
        elif i % 2:
            # a ripple drawn from the index alone: the same whenever init runs, different every day
            level += hashlib.blake2b(i.to_bytes(4, "little"), digest_size=1).digest()[0] % 3
        when = start + TRACE_STEP * i
        rows.append(f"{when.strftime('%Y-%m-%dT%H:%M:%SZ')},{level}")
    return "\n".join(rows) + "\n"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", nargs="?", type=Path, default=Path("."), metavar="DIR", help="folder to set up (default: .)")
    parser.add_argument("--force", action="store_true", help="overwrite files policylint init writes when they exist")


def _planned(folder: Path, now: dt.datetime) -> dict[str, str | bytes]:
    """Every file init writes (relative path -> content), in the order reported."""
    from policylint.resources import SCHEMA_FILES, schemas_dir

    # The trace ends at the last step of the day before, so it starts at midnight and a
    # sample's hour of the day follows from its index alone; and it is fresh.
    end = now.replace(hour=0, minute=0, second=0, microsecond=0) - TRACE_STEP
    files: dict[str, str | bytes] = {".policylint.yaml": CONFIG.format(repository=REPOSITORY, today=now.date().isoformat())}
    for filename in SCHEMA_FILES.values():
        files[f"schemas/{filename}"] = (schemas_dir() / filename).read_bytes()
    files["workloads/example-service.yaml"] = WORKLOAD
    files["clusters/example.yaml"] = CLUSTER
    files["proposals/example-request.yaml"] = PROPOSAL.format(date=now.date().isoformat())
    files["measurements/example-service.csv"] = trace_csv(end)
    return files


#: The most of an existing .pre-commit-config.yaml or .vscode/settings.json init reads to see what it holds.
_READ_LIMIT = 1024 * 1024


def _examine(folder: Path, rel: str, shown: str, force: bool) -> str:
    """What is at ``folder/rel`` without following any link: "missing", "file" or "link".

    Raises a usage error, before anything is written, for a link or a non-folder
    where a folder on the way should be, for a pipe, device, socket or folder
    where the file goes, and (``force``: it would be replaced) for a read-only
    or hard-linked file there.
    """
    from policylint.errors import PolicylintError

    parts = rel.split("/")
    here = folder
    for depth, part in enumerate(parts):
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return "missing"
        except OSError as exc:
            raise PolicylintError(f"cannot examine: {exc.strerror or exc}", source=shown + "/".join(parts[: depth + 1])) from None
        where = shown + "/".join(parts[: depth + 1])
        last = depth == len(parts) - 1
        if stat.S_ISLNK(mode):
            if last:
                return "link"
            raise PolicylintError("a symbolic link where init writes a folder; init never follows links (remove it, or init another folder)", source=where)
        if not last and not stat.S_ISDIR(mode):
            raise PolicylintError("not a folder, but init writes files in it", source=where)
        if last and not stat.S_ISREG(mode):
            what = "a folder" if stat.S_ISDIR(mode) else "a named pipe, device or socket"
            raise PolicylintError(f"{what} where init writes a file; refused (remove it, or init another folder)", source=where)
    if force:
        # what the writer would refuse, refused before anything is written
        info = os.lstat(here)
        if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
            raise PolicylintError(f"read-only file (mode {stat.S_IMODE(info.st_mode):04o}): {rel} not written; make it writable first", source=where)
        if info.st_nlink > 1:
            raise PolicylintError(f"has {info.st_nlink} hard links: {rel} not written; copy it to a file of its own first", source=where)
    return "file"


def _read_existing(path: Path) -> str:
    from policylint.safeio import read_bytes

    return read_bytes(path, limit=_READ_LIMIT, what="file").decode("utf-8", errors="replace")


def _editor_settings(inner: str = "") -> str:
    """The editor association; ``inner`` is DIR's path from the folder the editor opens (monorepo)."""
    if not inner:
        return json.dumps({"yaml.schemas": EDITOR_SCHEMAS}, indent=2) + "\n"
    moved = {
        f"./{inner}/{schema[2:]}": [f"{inner}/{glob}" for glob in globs] for schema, globs in EDITOR_SCHEMAS.items()
    }
    return json.dumps({"yaml.schemas": moved}, indent=2) + "\n"


def _git_top(folder: Path) -> Path | None:
    """The top of the git work tree holding ``folder`` (or where it will be), if any."""
    here = Path(os.path.realpath(folder))
    for candidate in (here, *here.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None


def _has_policylint_hook(text: str) -> bool:
    return "id: policylint" in text or REPOSITORY in text


def _configured_now(folder: Path) -> dt.datetime | None:
    """The ``now:`` of a configuration ``init`` keeps, when it names one: the example's trace ends there, so the
    check passes at once in a repository that judges staleness as of a fixed date (a newcomer, 2026-12-07: the
    example ran to today, six days past the kept ``now``, and PL960 failed the first check)."""
    from policylint.model.config import parse_when
    from policylint.model.config_files import CONFIG_NAMES, read_config_file

    for name in CONFIG_NAMES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            raw = read_config_file(path)
            value = raw.get("now") if isinstance(raw, dict) else None
            return parse_when(str(value)) if value is not None else None
        except Exception:  # noqa: BLE001 - a configuration init cannot read is reported by check, not here
            return None
    return None


def run(args: argparse.Namespace) -> int:
    from policylint.errors import PolicylintError
    from policylint.writer import Links, write_file

    folder: Path = args.dir
    if folder.is_symlink() and not folder.exists():
        raise PolicylintError(f"a dangling symbolic link, not a folder: {folder}")
    if folder.exists() and not folder.is_dir():
        raise PolicylintError(f"not a folder: {folder}")
    out = sys.stdout
    shown = folder.as_posix().rstrip("/") or "."
    prefix = "" if shown == "." else f"{shown}/"
    # DIR itself was named by the user: a link there is followed; nothing below it is.
    root = Path(os.path.realpath(folder))
    planned = _planned(folder, _configured_now(folder) or dt.datetime.now(dt.timezone.utc))
    settings_rel, hooks_rel = ".vscode/settings.json", ".pre-commit-config.yaml"
    # pre-commit reads its configuration, and an editor its settings, at the top of the git
    # work tree: in a monorepo (DIR below that top) both go there, pointed at DIR.
    top = _git_top(folder)
    inner = root.relative_to(top).as_posix() if top is not None and top != root else ""
    shared = top if inner and top is not None else folder
    shared_root = Path(os.path.realpath(shared))
    shared_shown = os.path.relpath(shared).replace(os.sep, "/") if inner else shown
    shared_prefix = "" if shared_shown == "." else f"{shared_shown}/"
    # Look at every target before writing any, so a refusal leaves the folder as it was.
    state = {rel: _examine(folder, rel, prefix, args.force and rel in planned) for rel in planned}
    for rel in (settings_rel, hooks_rel):
        state[rel] = _examine(shared, rel, shared_prefix, False)
    written: list[str] = []
    kept: list[str] = []

    links: Links = "replace" if args.force else "refuse"

    def write(rel: str, content: str | bytes) -> None:
        write_file(folder / rel, content, root=root, links=links, overwrite=args.force, parents=True, what=rel)
        written.append(f"{prefix}{rel}")

    def write_shared(rel: str, content: str) -> None:
        # never over an existing file, never through a link: these files are the user's
        write_file(shared / rel, content, root=shared_root, links="refuse", overwrite=False, parents=True, what=rel)
        written.append(f"{shared_prefix}{rel}")

    for rel, content in planned.items():
        if state[rel] != "missing" and not args.force:
            link = " (a symbolic link; --force replaces the link, never what it points to)" if state[rel] == "link" else ""
            kept.append(f"{prefix}{rel} (exists; --force overwrites it){link}")
            continue
        write(rel, content)
    settings_snippet = hook_snippet = None
    entry = PRE_COMMIT_ENTRY.format(repository=REPOSITORY, tag=RELEASE_TAG)
    if inner:
        # the hook sees the whole git repository: only changes below DIR are this repository's
        entry += f"        files: ^{inner}/\n"
    settings = _editor_settings(inner)
    # These two are never rewritten: the entry to add is printed. A link there is not read.
    if state[settings_rel] == "missing":
        write_shared(settings_rel, settings)
    elif state[settings_rel] == "file" and "yaml.schemas" in _read_existing(shared / settings_rel):
        kept.append(f"{shared_prefix}{settings_rel} (already has yaml.schemas)")
    else:
        settings_snippet = settings
    if state[hooks_rel] == "missing":
        write_shared(hooks_rel, "repos:\n" + entry)
    elif state[hooks_rel] == "file" and _has_policylint_hook(_read_existing(shared / hooks_rel)):
        kept.append(f"{shared_prefix}{hooks_rel} (already runs policylint)")
    else:
        hook_snippet = entry

    for rel in written:
        out.write(f"wrote {rel}\n")
    for rel in kept:
        out.write(f"kept {rel}\n")
    if inner:
        out.write(
            f"\n{shown} is inside the git repository at {shared_shown}: the pre-commit hook and the editor"
            f" settings belong at its top, limited to {inner}/\n"
        )
    if hook_snippet is not None:
        out.write(f"\n{shared_prefix}{hooks_rel} exists; add this entry under `repos:`:\n\n{hook_snippet}")
    if settings_snippet is not None:
        out.write(f"\n{shared_prefix}{settings_rel} exists; add this setting to it:\n\n{settings_snippet}")
    out.write(f"\nNext: policylint check {shown}\n")
    return 0
