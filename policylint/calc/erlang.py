"""Erlang B and C: the M/M/c queue's blocking and waiting probabilities, and its mean wait."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from policylint.errors import PolicylintError


def erlang_b(servers: int, load: np.ndarray | float) -> np.ndarray:
    """Erlang B blocking probability by the stable recursion (vectorised over load).

    B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)). The loop runs over servers.
    """
    if servers < 0:
        raise PolicylintError("servers must be >= 0")
    a = np.asarray(load, dtype=np.float64)
    b = np.ones_like(a)
    for k in range(1, servers + 1):
        b = a * b / (k + a * b)
    return b


def erlang_c(servers: int, load: np.ndarray | float) -> np.ndarray:
    """Probability an arrival waits in an M/M/c queue (1 when load >= servers)."""
    if servers < 1:
        raise PolicylintError("servers must be >= 1")
    a = np.asarray(load, dtype=np.float64)
    b = erlang_b(servers, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = servers * b / (servers - a * (1.0 - b))
    return np.where(a >= servers, 1.0, c)


@dataclass(frozen=True)
class ErlangResult:
    """Erlang C answer: probability of waiting and mean wait (seconds)."""

    servers: int
    load: float
    probability_wait: float
    mean_wait: float


def erlang_c_wait(servers: int, arrival_rate: float, service_time: float) -> ErlangResult:
    """Erlang C for arrivals per second and mean service seconds.

    a = lambda x service time; W = C / (c mu - lambda). An unstable system
    (a >= c) waits with probability 1 and forever.
    """
    if arrival_rate < 0 or service_time <= 0:
        raise PolicylintError("arrival rate must be >= 0 and service time > 0")
    load = arrival_rate * service_time
    if load >= servers:
        return ErlangResult(servers, load, 1.0, math.inf)
    prob = float(erlang_c(servers, load))
    mu = 1.0 / service_time
    return ErlangResult(servers, load, prob, prob / (servers * mu - arrival_rate))
