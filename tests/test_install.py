"""A built wheel carries the rules and schemas and finds them once installed.

The wheel is built from a copy of the source tree (so the build leaves nothing
behind in the checkout), installed into a plain folder, and used from a working
directory where the checkout is not importable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

#: What the build needs from the checkout.
SOURCES = ("pyproject.toml", "README.md", "policylint", "rules", "schemas")


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _build_wheel(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        item = REPO / name
        if item.is_dir():
            shutil.copytree(item, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(item, src / name)
    dist = tmp_path / "dist"
    build = [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(src)]
    proc = _run(build, tmp_path)
    if proc.returncode != 0:
        # no package index reachable: build with the backend installed here
        proc = _run([*build, "--no-isolation"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (wheel,) = dist.glob("policylint-*.whl")
    return wheel


def _clean_env(site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(site)
    env["NO_COLOR"] = "1"
    return env


@pytest.mark.realtool
def test_installed_wheel_finds_its_data(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)

    names = set(zipfile.ZipFile(wheel).namelist())
    for kind in ("workload", "cluster", "proposal", "rule", "config"):
        assert f"policylint/_data/schemas/{kind}.schema.json" in names
    assert {n for n in names if n.startswith("policylint/_data/rules/") and n.endswith(".yaml")}

    site = tmp_path / "site"
    proc = _run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]

    work = tmp_path / "elsewhere"
    work.mkdir()
    probe = (
        "import sys; sys.path.insert(0, {site!r})\n"
        "import policylint\n"
        "from policylint.resources import rules_dir, schemas_dir\n"
        "print(policylint.__file__); print(rules_dir()); print(schemas_dir())\n"
    ).format(site=str(site))
    proc = _run([sys.executable, "-c", probe], work, _clean_env(site))
    assert proc.returncode == 0, proc.stderr
    package_file, rules, schemas = (Path(line) for line in proc.stdout.splitlines())

    data = (site / "policylint" / "_data").resolve()
    assert package_file.resolve().is_relative_to(site.resolve()), "imported the checkout, not the wheel"
    assert rules.resolve() == data / "rules"
    assert schemas.resolve() == data / "schemas"
    assert sorted(p.name for p in rules.glob("*.yaml")) == sorted(p.name for p in (REPO / "rules").glob("*.yaml"))
    assert sorted(p.name for p in schemas.glob("*.json")) == sorted(
        p.name for p in (REPO / "schemas").glob("*.json")
    )

    proc = _run([sys.executable, "-m", "policylint", "schema", "cluster"], work, _clean_env(site))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    expected = json.loads((REPO / "schemas" / "cluster.schema.json").read_text(encoding="utf-8"))
    assert json.loads(proc.stdout) == expected

    proc = _run([sys.executable, "-m", "policylint", "rules"], work, _clean_env(site))
    assert proc.returncode == 0, proc.stderr
    assert "PL101" in proc.stdout
