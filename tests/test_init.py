"""``policylint init``: a new capacity repository that passes at once, and ``schema --write``.

The round trip is the one a new user makes: ``init`` in an empty folder, ``check``
(exit 0), then the pre-commit hook on it (``pre-commit try-repo`` against this
checkout, like tests/test_precommit.py; it needs PyPI or a warm pip cache).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urljoin

import jsonschema
import pytest
import yaml

from conftest import git, run_cli
from policylint import __version__
from policylint.resources import SCHEMA_FILES, schemas_dir
from test_precommit import pre_commit_home, try_repo  # noqa: F401 - fixture

WRITTEN = [
    ".policylint.yaml",
    "schemas/workload.schema.json",
    "schemas/cluster.schema.json",
    "schemas/proposal.schema.json",
    "schemas/rule.schema.json",
    "schemas/config.schema.json",
    "workloads/example-service.yaml",
    "clusters/example.yaml",
    "proposals/example-request.yaml",
    "measurements/example-service.csv",
    ".vscode/settings.json",
    ".pre-commit-config.yaml",
]


def init(folder: Path, *args: str) -> tuple[int, str, str]:
    return run_cli(["init", str(folder), *args])


def test_init_then_check_passes(tmp_path: Path) -> None:
    repo = tmp_path / "capacity"
    code, out, err = init(repo)
    assert (code, err) == (0, "")
    assert out == "".join(f"wrote {repo.as_posix()}/{rel}\n" for rel in WRITTEN) + f"\nNext: policylint check {repo.as_posix()}\n"
    assert sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if p.is_file()) == sorted(WRITTEN)
    assert run_cli(["check", str(repo), "--format", "concise"]) == (0, "All checks passed: 3 documents in 3 files.\n", "")
    # Every rule ran: nothing was deselected, and no date pinned, to make the example pass.
    code, out, _ = run_cli(["config"], cwd=repo)
    effective = json.loads(out)
    assert code == 0
    assert (effective["select"], effective["ignore"], effective["per-file-ignores"], effective["now"]) == (["PL"], [], {}, None)


def test_init_beside_a_kept_configuration_with_a_fixed_now_still_passes(tmp_path: Path) -> None:
    # a newcomer, 2026-12-07: the example's trace ran to today, past the kept configuration's now (PL960)
    repo = tmp_path / "capacity"
    repo.mkdir()
    (repo / ".policylint.yaml").write_text('now: "2026-01-15"\n', encoding="utf-8")
    code, out, err = init(repo)
    assert (code, err) == (0, "")
    assert run_cli(["check", str(repo), "--format", "concise"])[0] == 0
    last = (repo / "measurements" / "example-service.csv").read_text(encoding="utf-8").splitlines()[-1]
    assert last.split(",")[0] < "2026-01-16"


def test_init_in_the_working_directory_names_relative_paths(tmp_path: Path) -> None:
    code, out, _ = run_cli(["init"], cwd=tmp_path)
    assert code == 0
    assert out.splitlines()[0] == "wrote .policylint.yaml"
    assert out.endswith("\nNext: policylint check .\n")
    assert run_cli(["check", "-q"], cwd=tmp_path)[0] == 0


def test_the_example_is_wired_together(tmp_path: Path) -> None:
    init(tmp_path)
    workload = yaml.safe_load((tmp_path / "workloads" / "example-service.yaml").read_text())
    cluster = yaml.safe_load((tmp_path / "clusters" / "example.yaml").read_text())
    proposal = yaml.safe_load((tmp_path / "proposals" / "example-request.yaml").read_text())
    assert (workload["spec"]["cluster"], workload["spec"]["pool"]) == (cluster["metadata"]["name"], "serving")
    assert proposal["spec"]["cluster"] == cluster["metadata"]["name"]
    assert proposal["spec"]["workloads"] == [workload["metadata"]["name"]]
    assert (tmp_path / "workloads" / workload["spec"]["concurrency"]["trace"]["path"]).resolve().is_file()
    # Each example validates against the schema its modeline names.
    for kind, path in (("workload", "workloads/example-service.yaml"), ("cluster", "clusters/example.yaml"),
                       ("proposal", "proposals/example-request.yaml")):
        text = (tmp_path / path).read_text()
        assert text.splitlines()[0] == f"# yaml-language-server: $schema=../schemas/{kind}.schema.json"
        schema = json.loads((tmp_path / "schemas" / f"{kind}.schema.json").read_text())
        jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(text))


def test_the_configuration_is_commented_and_valid(tmp_path: Path) -> None:
    init(tmp_path)
    text = (tmp_path / ".policylint.yaml").read_text()
    assert sum(line.lstrip().startswith("#") for line in text.splitlines()) > 20
    schema = json.loads((tmp_path / "schemas" / "config.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(text))
    # Every commented-out setting is valid too once uncommented: the examples are real.
    import re

    uncommented = "\n".join(re.sub(r"^# (?=[a-z-]+:|  )", "", line) for line in text.splitlines()) + "\n"
    settings = yaml.safe_load(uncommented)
    assert {"ignore", "per-file-ignores", "exclude", "now", "rule-dirs", "baseline", "rules"} <= set(settings)
    jsonschema.Draft202012Validator(schema).validate(settings)
    (tmp_path / ".policylint.yaml").write_text(uncommented)
    (tmp_path / "policy" / "rules").mkdir(parents=True)
    assert run_cli(["config"], cwd=tmp_path)[0] == 0


def test_editor_association_and_pre_commit_entry(tmp_path: Path) -> None:
    init(tmp_path)
    settings = json.loads((tmp_path / ".vscode" / "settings.json").read_text())
    mapping = settings["yaml.schemas"]
    for schema in mapping:
        assert (tmp_path / schema).is_file()
    assert mapping["./schemas/workload.schema.json"][0] == "workloads/**/*.yaml"
    hooks = yaml.safe_load((tmp_path / ".pre-commit-config.yaml").read_text())
    assert hooks == {
        "repos": [
            {"repo": "https://github.com/policylint/policylint", "rev": f"v{__version__}", "hooks": [{"id": "policylint"}]}
        ]
    }


def test_never_overwrites_without_force(tmp_path: Path) -> None:
    init(tmp_path)
    (tmp_path / ".policylint.yaml").write_text("fail-on: error\n")
    code, out, _ = init(tmp_path)
    assert code == 0
    assert f"kept {tmp_path.as_posix()}/.policylint.yaml (exists; --force overwrites it)\n" in out
    assert "wrote" not in out
    assert (tmp_path / ".policylint.yaml").read_text() == "fail-on: error\n"
    code, out, _ = init(tmp_path, "--force")
    assert f"wrote {tmp_path.as_posix()}/.policylint.yaml\n" in out
    assert (tmp_path / ".policylint.yaml").read_text().startswith("# policylint configuration.")


def test_existing_pre_commit_config_and_settings_get_the_entry_printed(tmp_path: Path) -> None:
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "settings.json").write_text('{"editor.tabSize": 2}\n')
    (tmp_path / ".pre-commit-config.yaml").write_text("repos: []\n")
    for args in ((), ("--force",)):
        code, out, _ = init(tmp_path, *args)
        assert code == 0
        assert ".pre-commit-config.yaml exists; add this entry under `repos:`:" in out
        assert f"    rev: v{__version__}\n" in out
        assert ".vscode/settings.json exists; add this setting to it:" in out
        assert (tmp_path / ".pre-commit-config.yaml").read_text() == "repos: []\n"
        assert (tmp_path / ".vscode" / "settings.json").read_text() == '{"editor.tabSize": 2}\n'


def test_init_on_a_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    assert init(tmp_path / "f") == (2, "", f"policylint: error: not a folder: {tmp_path / 'f'}\n")


def test_trace_is_fresh_and_long_enough(tmp_path: Path) -> None:
    init(tmp_path)
    rows = (tmp_path / "measurements" / "example-service.csv").read_text().splitlines()
    assert rows[0] == "timestamp,in_flight" and len(rows) == 92 * 24 * 12 + 1
    assert rows[-1].split(",")[0].endswith("T23:55:00Z")


@pytest.mark.realtool
def test_init_then_pre_commit_hook_passes(tmp_path: Path, pre_commit_home: Path) -> None:
    repo = tmp_path / "capacity"
    assert init(repo)[0] == 0
    assert run_cli(["check", str(repo)])[0] == 0
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    done = try_repo(repo, pre_commit_home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "policylint" in done.stdout and "Passed" in done.stdout


# --- schema --write ---------------------------------------------------------------------------


def test_schema_write_copies_every_schema(tmp_path: Path) -> None:
    code, out, err = run_cli(["schema", "--write", str(tmp_path / "s")])
    assert (code, err) == (0, "")
    assert out == "".join(f"wrote {(tmp_path / 's' / name).as_posix()}\n" for name in SCHEMA_FILES.values())
    for name in SCHEMA_FILES.values():
        assert (tmp_path / "s" / name).read_bytes() == (schemas_dir() / name).read_bytes()
    code, out, _ = run_cli(["schema", "--write", str(tmp_path / "s")])
    assert out.startswith("unchanged ")


def test_schema_write_shows_a_control_character_in_its_folder_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the cli fuzz target: ``schema --write $'\\x07'`` rang the terminal's bell once per schema."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["schema", "--write", "\x07"])
    assert (code, err) == (0, "")
    assert "\x07" not in out
    assert out == "".join(f"wrote \\x07/{name}\n" for name in SCHEMA_FILES.values())
    assert sorted(p.name for p in (tmp_path / "\x07").iterdir()) == sorted(SCHEMA_FILES.values())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "name a KIND (workload, cluster, proposal, rule, config) or give --write DIR"),
        (["workload", "--write", "x"], "give either KIND (print one schema) or --write DIR (write them all), not both"),
    ],
)
def test_schema_usage_errors(args: list[str], message: str) -> None:
    assert run_cli(["schema", *args]) == (2, "", f"policylint: error: {message}\n")


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES.values()))
def test_schema_id_resolves_to_the_file_it_is_read_from(tmp_path: Path, name: str) -> None:
    """A relative $id: wherever the schemas are copied, the id names that copy (no network)."""
    run_cli(["schema", "--write", str(tmp_path)])
    path = tmp_path / name
    schema = json.loads(path.read_text())
    assert urljoin(path.as_uri(), schema["$id"]) == path.as_uri()
    assert "://" not in schema["$id"]
    # Internal references resolve against that base without fetching anything.
    jsonschema.Draft202012Validator.check_schema(schema)
