"""``policylint erlang``: Erlang C figures from the command line."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


def erlang(*args: str) -> dict[str, object]:
    code, out, err = run_cli(["erlang", *args, "--format", "json"])
    assert (code, err) == (0, "")
    data: dict[str, object] = json.loads(out)
    return data


def test_textbook_value() -> None:
    # C(c=3, a=2) = 4/9; mean wait = C / (c*mu - lambda) = (4/9) / (3 - 2)
    data = erlang("--arrival-rate", "2", "--service-time", "1", "--servers", "3")
    assert data["probability_wait"] == pytest.approx(4 / 9)
    assert data["mean_wait_seconds"] == pytest.approx(4 / 9)
    assert data["stable"] is True


def test_least_servers_is_least() -> None:
    data = erlang("--arrival-rate", "50", "--service-time", "0.4", "--max-wait", "0.05")
    servers = int(str(data["servers"]))
    assert float(str(data["mean_wait_seconds"])) <= 0.05
    fewer = erlang("--arrival-rate", "50", "--service-time", "0.4", "--servers", str(servers - 1))
    assert fewer["mean_wait_seconds"] is None or float(str(fewer["mean_wait_seconds"])) > 0.05


def test_unstable_system_is_said_plainly() -> None:
    data = erlang("--arrival-rate", "5", "--service-time", "1", "--servers", "3")
    assert (data["stable"], data["probability_wait"], data["mean_wait_seconds"]) == (False, 1.0, None)
    code, out, _ = run_cli(["erlang", "--arrival-rate", "5", "--service-time", "1", "--servers", "3"])
    assert code == 0
    assert "unstable" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--arrival-rate", "-1", "--service-time", "1", "--servers", "2"], "--arrival-rate must be a finite number >= 0"),
        (["--arrival-rate", "1", "--service-time", "0", "--servers", "2"], "--service-time must be a finite number > 0"),
        (["--arrival-rate", "1", "--service-time", "1", "--servers", "0"], "--servers must be at least 1"),
    ],
)
def test_bad_numbers_are_usage_errors(args: list[str], message: str) -> None:
    code, out, err = run_cli(["erlang", *args])
    assert (code, out, err) == (2, "", f"policylint: error: {message}\n")


def test_servers_or_max_wait_is_required() -> None:
    code, _, err = run_cli(["erlang", "--arrival-rate", "1", "--service-time", "1"])
    assert code == 2
    assert "one of the arguments --servers --max-wait is required" in err
