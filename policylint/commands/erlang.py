"""``policylint erlang``: queueing figures when only a rate and a service time are known.

For a workload without a concurrency trace yet, the Erlang C model (Poisson
arrivals, exponential service, c identical servers) estimates how often a
request waits and for how long. It is a planning aid, not a demand model: the
linter still asks for a measured trace.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from policylint.errors import PolicylintError

NAME = "erlang"
HELP = "Erlang C waits for an arrival rate and service time (servers = replicas)"
DESCRIPTION = (
    "Estimate the probability of waiting and the mean wait with the Erlang C model. "
    "Give --servers to evaluate one size, or --max-wait to find the fewest servers whose mean wait meets it."
)

MAX_SERVERS = 100_000


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arrival-rate", type=float, required=True, metavar="PER_SECOND", help="requests per second")
    parser.add_argument("--service-time", type=float, required=True, metavar="SECONDS", help="mean seconds one request occupies a server")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--servers", type=int, metavar="N", help="number of servers (replicas) to evaluate")
    group.add_argument("--max-wait", type=float, metavar="SECONDS", help="find the fewest servers whose mean wait is at most this")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")


def _least_servers(rate: float, service: float, max_wait: float) -> int:
    """The fewest servers whose Erlang C mean wait is at most ``max_wait``.

    Erlang B is carried from one size to the next (the same recursion and
    formulas as :func:`policylint.bands.erlang_c_wait`), so the search costs one
    step per size instead of a fresh recursion for every size it tries.
    """
    load = rate * service
    if max_wait == 0 and load > 0:
        # P(wait) > 0 at every finite size: the mean wait only tends to zero
        raise PolicylintError(
            "--max-wait 0: with random arrivals some request always waits, so a mean wait of 0 needs "
            "infinitely many servers; give the longest mean wait you accept (e.g. --max-wait 0.01)"
        )
    least_stable = max(1, math.floor(load) + 1)
    if least_stable > MAX_SERVERS:
        raise PolicylintError(f"the offered load of {load:g} erlangs needs more than {MAX_SERVERS} servers")
    b = 1.0
    for servers in range(1, MAX_SERVERS + 1):
        b = load * b / (servers + load * b)
        if servers < least_stable:
            continue
        c = servers * b / (servers - load * (1.0 - b))
        if c / (servers / service - rate) <= max_wait:
            return servers
    raise PolicylintError(f"no size up to {MAX_SERVERS} servers meets a mean wait of {max_wait:g} s")


def run(args: argparse.Namespace) -> int:
    from policylint.bands import erlang_c_wait

    if args.arrival_rate < 0 or not math.isfinite(args.arrival_rate):
        raise PolicylintError("--arrival-rate must be a finite number >= 0")
    if args.service_time <= 0 or not math.isfinite(args.service_time):
        raise PolicylintError("--service-time must be a finite number > 0")
    if args.servers is not None and args.servers < 1:
        raise PolicylintError("--servers must be at least 1")
    if args.servers is not None and args.servers > MAX_SERVERS:
        raise PolicylintError(f"--servers must be at most {MAX_SERVERS}")
    if args.max_wait is not None and (args.max_wait < 0 or math.isnan(args.max_wait)):
        raise PolicylintError("--max-wait must be a number >= 0")
    servers = args.servers if args.servers is not None else _least_servers(args.arrival_rate, args.service_time, args.max_wait)
    result = erlang_c_wait(servers, args.arrival_rate, args.service_time)
    stable = result.load < servers
    payload = {
        "servers": servers,
        "offered_load": result.load,
        "utilisation": result.load / servers,
        "stable": stable,
        "probability_wait": result.probability_wait,
        "mean_wait_seconds": result.mean_wait if stable else None,
    }
    if args.format == "json":
        print(json.dumps(payload, indent=2, sort_keys=True))
        return 0
    out = sys.stdout
    out.write(f"offered load   {result.load:.4g} erlangs ({args.arrival_rate:g}/s x {args.service_time:g} s)\n")
    out.write(f"servers        {servers}{' (fewest meeting the mean wait)' if args.servers is None else ''}\n")
    out.write(f"utilisation    {result.load / servers:.1%}\n")
    if not stable:
        out.write("unstable: the load reaches the number of servers, so the queue grows without bound\n")
        return 0
    out.write(f"P(wait)        {result.probability_wait:.4f}\n")
    out.write(f"mean wait      {result.mean_wait:.4g} s\n")
    return 0
