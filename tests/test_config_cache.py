"""Configurations that passed the schema are not checked again; anything else is, every time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import run_cli, run_fresh

from policylint.model import config_cache

WHEN = ["--now", "2026-12-01"]


@pytest.fixture
def schema_checks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """One item per configuration checked against the schema (a validator made)."""
    made: list[object] = []
    real = jsonschema.Draft202012Validator

    def counting(schema: object, *args: object, **kwargs: object) -> object:
        if isinstance(schema, dict) and schema.get("$id") == "./config.schema.json":
            made.append(schema)
        return real(schema, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(jsonschema, "Draft202012Validator", counting)
    return made


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("config-v*/*/*.json"))


def repo_with(tmp_path: Path, minirepo: Path, settings: str) -> Path:
    (minirepo / ".policylint.yaml").write_text(settings)
    return minirepo


def test_a_valid_configuration_is_checked_once(tmp_path: Path, minirepo: Path, cache_dir: Path,
                                               schema_checks: list[object]) -> None:
    repo = repo_with(tmp_path, minirepo, "ignore: [PL105]\nfail-on: warning\n")
    first = run_cli(["check", str(repo), *WHEN])
    assert len(schema_checks) == 1 and len(entries(cache_dir)) == 1
    assert run_cli(["check", str(repo), *WHEN]) == first
    assert len(schema_checks) == 1  # the second run took the remembered pass
    # an edited setting is another key: checked again, and remembered beside the first
    (repo / ".policylint.yaml").write_text("ignore: [PL105, PL106]\nfail-on: warning\n")
    run_cli(["check", str(repo), *WHEN])
    assert len(schema_checks) == 2 and len(entries(cache_dir)) == 2


def test_an_invalid_configuration_is_never_remembered(tmp_path: Path, minirepo: Path, cache_dir: Path,
                                                      schema_checks: list[object]) -> None:
    repo = repo_with(tmp_path, minirepo, "ignore: PL105\n")
    first = run_cli(["check", str(repo), *WHEN])
    assert first[0] == 2 and "ignore" in first[2]
    assert run_cli(["check", str(repo), *WHEN]) == first
    assert len(schema_checks) == 2 and entries(cache_dir) == []


def test_no_cache_writes_nothing_and_checks_every_time(tmp_path: Path, minirepo: Path, cache_dir: Path,
                                                       schema_checks: list[object]) -> None:
    repo = repo_with(tmp_path, minirepo, "ignore: [PL105]\n")
    run_cli(["check", str(repo), "--no-cache", *WHEN])
    run_cli(["check", str(repo), "--no-cache", *WHEN])
    assert len(schema_checks) == 2 and not cache_dir.exists()


def test_a_damaged_or_foreign_entry_is_a_miss(tmp_path: Path, minirepo: Path, cache_dir: Path,
                                              schema_checks: list[object]) -> None:
    repo = repo_with(tmp_path, minirepo, "ignore: [PL105]\n")
    first = run_cli(["check", str(repo), *WHEN])
    (entry,) = entries(cache_dir)
    data = entry.read_bytes()
    entry.write_bytes(data.replace(b'"valid": true', b'"valid": truE'))
    assert run_cli(["check", str(repo), *WHEN]) == first
    assert len(schema_checks) == 2
    # an entry copied under another configuration's name names its own key: a miss
    (repo / ".policylint.yaml").write_text("ignore: [PL106]\n")
    other = config_cache.config_key({"ignore": ["PL106"]})
    assert other is not None
    entry.write_bytes(data)
    forged = entry.parent.parent / other[:2] / f"{other}.json"
    forged.parent.mkdir(parents=True, exist_ok=True)
    forged.write_bytes(data)
    run_cli(["check", str(repo), *WHEN])
    assert len(schema_checks) == 3


@pytest.mark.parametrize(
    "settings",
    [
        {"ignore": ["PL105"], "when": __import__("datetime").date(2026, 1, 1)},  # a YAML date
        {"per-file-ignores": {1: ["PL105"]}},  # a key that is not text
        {"ignore": ["PL105"], "weight": float("nan")},
    ],
)
def test_settings_json_cannot_spell_exactly_have_no_key(settings: dict[str, object]) -> None:
    assert config_cache.config_key(settings) is None


def test_keys_tell_apart_what_json_could_confuse() -> None:
    keys = {config_cache.config_key(s) for s in ({"x": 1}, {"x": 1.0}, {"x": True}, {"x": "1"}, {"x": [1]})}
    assert None not in keys and len(keys) == 5


def test_a_warm_run_does_not_import_jsonschema(tmp_path: Path, minirepo: Path) -> None:
    repo = repo_with(tmp_path, minirepo, "ignore: [PL105]\n")
    runs = [run_fresh(["check", str(repo), "--now", "2026-12-01"], tmp_path, tmp_path / "cache") for _ in range(2)]
    assert ["jsonschema" in modules for _, modules in runs] == [True, False]
    assert runs[0][0] == runs[1][0]


def test_a_library_is_known_by_its_installed_file_without_importing_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from policylint.cache import store
    from policylint.engine import rule_cache
    from policylint.resources import rules_dir

    probe = "import sys\nfrom policylint.cache.store import library_identity\n" \
            "print(library_identity('cerberus') is not None, 'cerberus' in sys.modules)\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True", "False"]
    assert store.library_identity("no_such_library_here") is None
    # another installed copy of a checker (another file, size or time) is another key
    settings = {"ignore": ["PL105"]}
    before = (config_cache.config_key(settings), rule_cache.rules_key([rules_dir()], {}, "cfg"))
    real = store.library_identity
    monkeypatch.setattr(config_cache, "library_identity", lambda name: f"{real(name)}-upgraded")
    monkeypatch.setattr(rule_cache, "library_identity", lambda name: f"{real(name)}-upgraded")
    after = (config_cache.config_key(settings), rule_cache.rules_key([rules_dir()], {}, "cfg"))
    assert None not in before and before[0] != after[0] and before[1] != after[1]


def test_a_pass_mark_planted_for_a_bad_configuration_changes_nothing(tmp_path: Path, minirepo: Path, cache_dir: Path,
                                                                    schema_checks: list[object]) -> None:
    """A real pass mark copied to the name a bad configuration's key gives: the run is still refused as with --no-cache."""
    repo = repo_with(tmp_path, minirepo, "ignore: [PL105]\n")
    run_cli(["check", str(repo), *WHEN])
    (mark,) = entries(cache_dir)
    (repo / ".policylint.yaml").write_text("ignore: PL105\n")
    bad = config_cache.config_key({"ignore": "PL105"})
    assert bad is not None
    planted = mark.parent.parent / bad[:2] / f"{bad}.json"
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_bytes(mark.read_bytes())
    refused = run_cli(["check", str(repo), *WHEN])
    assert refused == run_cli(["check", str(repo), "--no-cache", *WHEN])
    assert refused[0] == 2 and "ignore" in refused[2]
