"""What a folder walk reads: every YAML file a reviewer could commit, in any folder a tool does not own.

Red team, 2026-12-06 (round 8): two proposals of 45 GPUs each, one in a hidden folder
(``proposals/.q2/``) and one named ``.YAML``, and a Kueue ClusterQueue of 64 GPUs under
``kueue/.overlays/``, were never read: the gate said "All checks passed", in a full run and
in the pre-commit hook's run naming the staged files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import REPO, run_cli

from policylint.model.load.files import discover, is_yaml_name


def _proposal(name: str, gpus: int) -> str:
    text = (REPO / "examples/good/proposals/2027-q1-serving.yaml").read_text(encoding="utf-8")
    return text.replace("name: 2027-q1-serving", f"name: {name}").replace("gpus: 5", f"gpus: {gpus}")


def _repo(tmp_path: Path) -> Path:
    repo = Path(shutil.copytree(REPO / "examples/good", tmp_path / "repo"))
    return repo


def _pl801(repo: Path, *args: str) -> tuple[int, list[str]]:
    code, out, err = run_cli(["check", *args, "--format", "json"], cwd=repo)
    assert code in (0, 1), err
    return code, sorted(f["file"] for f in json.loads(out)["findings"] if f["code"] == "PL801")


def test_proposals_in_hidden_folders_and_upper_case_suffixes_are_read(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert _pl801(repo, ".") == (0, [])
    (repo / "proposals/.q2").mkdir()
    (repo / "proposals/.q2/2027-q2-serving.yaml").write_text(_proposal("2027-q2-serving", 45), encoding="utf-8")
    (repo / "proposals/2027-q3-serving.YAML").write_text(_proposal("2027-q3-serving", 45), encoding="utf-8")
    code, files = _pl801(repo, ".")
    assert code == 1
    assert files == ["proposals/.q2/2027-q2-serving.yaml", "proposals/2027-q1-serving.yaml", "proposals/2027-q3-serving.YAML"]
    # the pre-commit hook's run, naming the staged files, judges them too, and the pool's first proposal with
    # them: PL801 sums a pool's proposals, so its verdict on that one changed as well
    code, files = _pl801(repo, "--changed-files", "proposals/.q2/2027-q2-serving.yaml", "proposals/2027-q3-serving.YAML")
    assert (code, files) == (1, ["proposals/.q2/2027-q2-serving.yaml", "proposals/2027-q1-serving.yaml",
                                 "proposals/2027-q3-serving.YAML"])


def test_version_control_tool_caches_and_virtual_environments_are_not_walked(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    broken = "apiVersion: policylint/v1\nkind: Proposal\nmetadata: {name: [\n"
    for folder in (".git/refs", "node_modules/pkg", "__pycache__", ".tox/py311", "env/lib", ".venv/share"):
        (repo / folder).mkdir(parents=True)
        (repo / folder / "broken.yaml").write_text(broken, encoding="utf-8")
    for venv in ("env", ".venv"):
        (repo / venv / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
        (repo / venv / "bin").mkdir()
        (repo / venv / "bin" / "python").write_text("", encoding="utf-8")
    (repo / ".github/workflows").mkdir(parents=True)
    (repo / ".github/workflows/ci.yml").write_text("on: push\njobs: {}\n", encoding="utf-8")
    walked = [p.relative_to(repo).as_posix() for p, _ in discover([repo])]
    assert not any("broken" in p for p in walked), walked
    assert ".github/workflows/ci.yml" in walked  # read, and another tool's YAML: nothing to report
    code, out, err = run_cli(["check", ".", "--format", "json"], cwd=repo)
    assert (code, err, json.loads(out)["findings"]) == (0, "", [])
    # a folder of the same name that is not a virtual environment is read
    (repo / "env/pyvenv.cfg").unlink()
    code, out, _ = run_cli(["check", ".", "--format", "json"], cwd=repo)
    assert code == 1 and [f["file"] for f in json.loads(out)["findings"]] == ["env/lib/broken.yaml"]
    # and so is one that only claims to be: an empty pyvenv.cfg, or one without its interpreter (red team,
    # 2026-12-06, round 15: a raised ClusterQueue hidden beside an empty pyvenv.cfg)
    (repo / "env/pyvenv.cfg").write_text("", encoding="utf-8")
    code, out, _ = run_cli(["check", ".", "--format", "json"], cwd=repo)
    assert code == 1 and [f["file"] for f in json.loads(out)["findings"]] == ["env/lib/broken.yaml"]
    (repo / "env/pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    (repo / "env/bin/python").unlink()
    code, out, _ = run_cli(["check", ".", "--format", "json"], cwd=repo)
    assert code == 1 and [f["file"] for f in json.loads(out)["findings"]] == ["env/lib/broken.yaml"]


def test_yaml_names_in_any_case() -> None:
    assert [is_yaml_name(n) for n in ("a.yaml", "a.yml", "A.YAML", "b.Yml", "c.yaml.bak", "yaml", "d.json")] == [
        True, True, True, True, False, False, False]
