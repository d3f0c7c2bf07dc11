"""``python -P -m policylint.serve``: the resident server's process, as ``policylint server start`` starts it."""

from __future__ import annotations

import argparse
import sys

from policylint.cli import main, prepare_process
from policylint.resident import IDLE_MINUTES
from policylint.resident_server import serve


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -P -m policylint.serve", description=__doc__)
    parser.add_argument("--idle-minutes", type=float, default=IDLE_MINUTES, metavar="N",
                        help=f"stop after N minutes without a command (default: {IDLE_MINUTES:g})")
    args = parser.parse_args(argv)
    prepare_process()  # the process settings a command gives itself, inherited by every run forked from here
    from policylint.cache.decoded import DecodedKeeper

    return serve(main, args.idle_minutes, DecodedKeeper())


if __name__ == "__main__":
    sys.exit(run())
