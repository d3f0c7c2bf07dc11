"""The measure step: facts computed from a workload's declared measurements."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from conftest import EXAMPLES, copy_minirepo
from fixture_helpers import MINI_POOLS

from policylint.engine.linter import LintOptions, lint
from policylint.measure.run import measure
from policylint.resources import rules_dir
from policylint.engine.ruleset import load_rules

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)


def lint_copy(tmp_path: Path, edit: tuple[str, str] | None = None, *, mini: bool = False):  # type: ignore[no-untyped-def]
    """Lint a copy of examples/good (or of the small shared repository), edited first."""
    repo = tmp_path / "repo"
    if mini:
        copy_minirepo(repo)
    else:
        shutil.copytree(EXAMPLES / "good", repo)
    if edit is not None:
        path = repo / "workloads" / "product-ai.yaml"
        text = path.read_text()
        assert edit[0] in text
        path.write_text(text.replace(edit[0], edit[1], 1))
    return lint([repo], LintOptions(root=repo, now=NOW, ruleset=load_rules([rules_dir()])))


def test_outlier_days_are_excluded_when_asked(tmp_path: Path) -> None:
    plain = lint_copy(tmp_path / "a")
    assert plain.model is not None
    before = measure(plain.model, NOW)[0]["chat-assistant"].report
    assert before is not None and before.outlier_days == ()

    # 2 MADs is strict enough to drop the weekend dips of this trace.
    edited = lint_copy(tmp_path / "b", ("    exclude:\n", "    excludeOutlierDays: 2.0\n    exclude:\n"))
    assert edited.model is not None
    after = measure(edited.model, NOW)[0]["chat-assistant"].report
    assert after is not None
    assert len(after.outlier_days) > 0
    assert after.window_days < before.window_days
    assert ("PL106", "workload chat-assistant") in {(f.code, f.subject) for f in edited.findings}


def test_facts_are_computed_once_per_workload(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Traces are read once per run, however many rules use them."""
    from policylint import traces

    calls: list[str] = []
    real = traces.read_series

    def counting(path, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(str(path))
        return real(path, **kwargs)

    monkeypatch.setattr(traces, "read_series", counting)
    result = lint_copy(tmp_path, mini=True)
    assert result.findings == []
    workloads = sum(len(pool) for pool in MINI_POOLS.values())
    assert len(calls) == len(set(calls)) == workloads  # one trace each
