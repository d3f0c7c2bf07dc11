"""``policylint bands``: JSON document, text view, errors, chart and plot."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from policylint.commands import bands as command
from policylint.errors import MeasurementError, PolicylintError

HELIOS = Path(__file__).parent / "data" / "helios_vc3sl_2020-05.csv"
DEMAND = ["--column", "running_gpu_num", "--column", "pending_gpu_num"]


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="policylint bands")
    command.configure(parser)
    return command.run(parser.parse_args(argv))


def test_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    assert run([str(HELIOS), *DEMAND, "--format", "json", "--tolerance", "900", "--per-gpu", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["bands"] == {"baseline": 63.0, "daily": 67.0, "peak": 75.0}
    assert data["bands_gpus"] == {"baseline": 63, "daily": 67, "peak": 75}
    # Two Sundays of the real trace never change (38 GPUs all day, then 0 all day): flat
    # days, left out of the window like exclusions.
    assert data["flat_days"] == ["2020-05-03T00:00:00Z", "2020-05-10T00:00:00Z"]
    assert data["window_days"] == 29.0
    assert data["meets_window"] is False
    assert data["step_seconds"] == 60.0
    assert data["gaps"] == [] and data["excluded_samples"] == 2 * 1440
    assert data["capacity_for_tolerance"] == 67
    assert data["first"] == "2020-05-01T00:00:00Z"
    spike = data["spikes"][0]
    assert set(spike) == {"start", "width_seconds", "height", "volume", "noise"}
    assert spike["start"].endswith("Z")
    assert data["spike_counts"]["noise"] + data["spike_counts"]["real"] == len(data["spikes"])


def test_json_is_sorted_and_stable(capsys: pytest.CaptureFixture[str]) -> None:
    run([str(HELIOS), *DEMAND, "--format", "json"])
    first = capsys.readouterr().out
    run([str(HELIOS), *DEMAND, "--format", "json"])
    assert capsys.readouterr().out == first
    keys = list(json.loads(first))
    assert keys == sorted(keys)
    assert "capacity_for_tolerance" not in json.loads(first)
    assert "bands_gpus" not in json.loads(first)


def test_exclusion_and_cold_start_options(capsys: pytest.CaptureFixture[str]) -> None:
    run([str(HELIOS), *DEMAND, "--format", "json", "--exclude", "2020-05-10/2020-05-11",
         "--cold-start", "900", "--min-window-days", "28"])
    data = json.loads(capsys.readouterr().out)
    assert data["excluded_samples"] == 3 * 1440  # May 10-11 declared, May 3 flat
    assert data["window_days"] == 28.0 and data["meets_window"] is True
    assert data["cold_start_seconds"] == 900.0 and data["window_samples"] == 15


def test_text_view(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert run([str(HELIOS), *DEMAND, "--tolerance", "900", "--per-gpu", "2", "--gpus-per-replica", "2"]) == 0
    out = capsys.readouterr().out
    assert "\x1b[" not in out  # no colour codes into a pipe
    lines = out.splitlines()
    assert any(line.split()[:4] == ["baseline", "63", "64", "p95"] for line in lines if line.strip())
    assert any(line.split()[:4] == ["daily", "67", "68", "p99"] for line in lines if line.strip())
    assert any(line.split()[:4] == ["peak", "75", "76", "max"] for line in lines if line.strip())
    assert "SHORTER THAN the 90-day minimum" in out
    assert "least capacity with max wait <= 15.0 min: 67" in out
    assert "6 real bursts" in out and "... and 24 more" in out
    # The chart: axis labels at the band rows and a legend naming each line.
    assert "- baseline 63  = daily 67  ~ peak 75" in out
    assert any(line.strip().startswith("63 ┤") and "-" in line for line in lines)


def test_a_cold_start_not_longer_than_the_step_is_said(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """PL121's condition, in the command that shows bands: a 5-minute trace under the default
    300 s window cannot tell noise from bursts, and the output says so and says why."""
    monkeypatch.setenv("NO_COLOR", "1")
    trace = Path(__file__).parents[1] / "examples" / "good" / "measurements" / "traces" / "chat-assistant.csv"
    assert run([str(trace)]) == 0
    text = capsys.readouterr().out
    [note] = [line for line in text.splitlines() if line.strip().startswith("note:")]
    assert "cold-start window (300 s, the default: give --cold-start with the measured one)" in note
    assert "not longer than the trace's 300 s step" in note and "PL121" in note
    assert " 0 noise narrower than the 300 s cold start" in text
    assert run([str(trace), "--cold-start", "300", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["spike_counts"]["noise"] == 0
    assert data["notes"] == [
        (
            "the cold-start window (300 s) is not longer than the trace's 300 s step: every sample counts as"
            " sustained, so no spike can be noise and the bands are percentiles of the raw samples (check reports"
            " this as PL121)"
        )
    ]
    # a window longer than the step: nothing to say, and noise is found
    assert run([str(trace), "--cold-start", "900", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "notes" not in data and data["spike_counts"]["noise"] > 0
    assert run([str(trace), "--cold-start", "900"]) == 0
    assert "note:" not in capsys.readouterr().out


def test_bad_trace_is_a_measurement_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("time,busy\n2020-05-01 00:00:00,1\n2020-05-01 00:01:00,many\n")
    with pytest.raises(MeasurementError, match=r"bad.csv:3: column 'busy': 'many' is not a number"):
        run([str(bad)])


def test_bad_options_are_policylint_errors(tmp_path: Path) -> None:
    with pytest.raises(PolicylintError, match="--exclude"):
        run([str(HELIOS), *DEMAND, "--exclude", "yesterday"])
    with pytest.raises(PolicylintError, match="LABEL=VALUE"):
        run([str(HELIOS), *DEMAND, "--match", "model"])
    with pytest.raises(PolicylintError, match=r"\.png or \.svg"):
        run([str(HELIOS), *DEMAND, "--plot", str(tmp_path / "chart.pdf")])


def test_plot_writes_svg(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "bands.svg"
    run([str(HELIOS), *DEMAND, "--plot", str(target), "--format", "json"])
    assert target.read_text().lstrip().startswith("<?xml")
    json.loads(capsys.readouterr().out)


def test_plot_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes the import fail
    with pytest.raises(PolicylintError, match=r"--plot needs matplotlib: pip install 'policylint\[plot\]'"):
        run([str(HELIOS), *DEMAND, "--plot", str(tmp_path / "x.png")])


def test_module_is_cheap_to_import() -> None:
    code = (
        "import sys, policylint.commands.bands as m; "
        "heavy = [n for n in ('numpy', 'rich', 'policylint.bands', 'policylint.traces') if n in sys.modules]; "
        "print(m.NAME, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.strip() == "bands []"


def test_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from policylint.cli import main

    assert main(["bands", str(HELIOS), *DEMAND, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["bands"]["peak"] == 75.0
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert main(["bands", str(empty)]) == 2
    err = capsys.readouterr().err
    assert err == f"policylint: error: {empty}:1: empty file: no header row\n"
