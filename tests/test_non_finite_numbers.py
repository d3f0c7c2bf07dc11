"""YAML's .inf and .nan in a policylint document are PL010 findings at their place, never an internal error.

Red team, 2026-12-07: ``perGpuConcurrency: {value: .inf}`` passed the schema's ``exclusiveMinimum: 0`` (JSON
has no infinity, so no keyword refuses it) and stopped the run with "internal error: ValueError: cannot
convert float NaN to integer"; ``.nan`` stopped it with exit 2 and no file or line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLES, run_cli


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", ".NaN", "+.Inf"])
def test_a_non_finite_figure_is_a_finding_at_its_place(tmp_path: Path, value: str) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    path = repo / "workloads" / "search.yaml"
    text = path.read_text(encoding="utf-8")
    assert "value: 52" in text
    path.write_text(text.replace("value: 52", f"value: {value}", 1), encoding="utf-8")
    line = text[: text.index("value: 52")].count("\n") + 1
    code, out, err = run_cli(["check", "--format", "json", "."], cwd=repo)
    assert err == "" and code == 1, err
    found = [(f["code"], f["file"], f["line"]) for f in json.loads(out)["findings"] if f["code"] == "PL010"]
    assert found == [("PL010", "workloads/search.yaml", line)], found
    assert "is not a finite number" in json.loads(out)["findings"][0]["message"] or any(
        "is not a finite number" in f["message"] for f in json.loads(out)["findings"])
