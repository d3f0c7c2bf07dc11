"""``policylint server``: start, stop or look at the resident server (see :mod:`policylint.resident`)."""

from __future__ import annotations

import argparse
import sys
import time

NAME = "server"
HELP = "start, stop or show the resident server that runs commands without their start-up cost"
DESCRIPTION = (
    "A resident server has imported policylint once and forks a fresh run for each command of this "
    "installation, in the caller's folder, environment and streams: the same output and exit code, "
    "without the interpreter's start-up and imports. It stops after --idle-minutes without a command. "
    "Commands use a running server unless POLICYLINT_SERVER=off; POLICYLINT_SERVER=auto starts one "
    "when none runs."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("start", "stop", "status"), help="what to do")
    parser.add_argument("--idle-minutes", type=float, default=None, metavar="N",
                        help="with start: stop after N minutes without a command (default: 30)")


def run(args: argparse.Namespace) -> int:
    from policylint import resident
    from policylint.errors import PolicylintError

    if resident.folder() is None:
        raise PolicylintError("the resident server needs a POSIX system (Unix sockets and fork)")
    answer = resident.control("ping")
    if args.action == "status":
        if answer is None:
            print("no resident server runs for this installation")
            return 1
        print(f"a resident server runs for this installation (process {_pid(answer)})")
        parts = answer.split()
        if len(parts) >= 6 and all(p.isdigit() for p in parts[3:6]):
            served, kept, size = (int(p) for p in parts[3:6])
            print(f"it has run {served} command{'s' if served != 1 else ''} and keeps {kept} cache "
                  f"entr{'ies' if kept != 1 else 'y'} decoded ({size / (1 << 20):.1f} MB)")
        return 0
    if args.action == "stop":
        if answer is None:
            print("no resident server runs for this installation")
            return 0
        resident.control("stop")
        for _ in range(100):
            if resident.control("ping", timeout=0.5) is None:
                break
            time.sleep(0.05)
        print(f"stopped the resident server (process {_pid(answer)})")
        return 0
    if answer is not None:
        print(f"a resident server runs already (process {_pid(answer)})")
        return 0
    idle = resident.IDLE_MINUTES if args.idle_minutes is None else args.idle_minutes
    if not idle > 0:
        raise PolicylintError("--idle-minutes must be above 0")
    if resident.start_detached(idle) is None:
        raise PolicylintError(f"cannot start the resident server (its folder {resident.folder()} is not private to you)")
    for _ in range(300):  # up to 15 s: the server imports the pipeline before it answers
        answer = resident.control("ping", timeout=0.5)
        if answer is not None:
            print(f"started a resident server (process {_pid(answer)}); it stops after {idle:g} idle minutes")
            return 0
        time.sleep(0.05)
    sys.stderr.write("policylint: error: the resident server did not answer within 15 s\n")
    return 2


def _pid(answer: str) -> str:
    parts = answer.split()
    return parts[1] if len(parts) > 1 else "?"
