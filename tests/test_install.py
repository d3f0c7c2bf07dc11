"""What ships is what is tested: the wheel holds the source tree, and the suite imports the wheel.

The wheel under test is the one ``.ci/run`` built and installed (its path is in
``POLICYLINT_TEST_WHEEL``); without it (a developer's run) the wheel is built
here from a copy of the source tree, so the build leaves nothing behind in the
checkout. It must hold exactly the package's files and the bundled rules and
schemas, byte for byte, and find its data once installed into a plain folder
and used from a working directory where the checkout is not importable.
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
from realtools import in_ci

#: What the build needs from the checkout.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "policylint", "rules", "schemas")


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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel under test: the one .ci/run installed, else one built from the checkout."""
    given = os.environ.get("POLICYLINT_TEST_WHEEL")
    if given:
        return Path(given)
    return _build_wheel(tmp_path_factory.mktemp("wheel"))


def _tree_files() -> dict[str, bytes]:
    """What the wheel must hold: the package folder, and rules/ and schemas/ as its _data."""
    files: dict[str, bytes] = {}
    for path in sorted((REPO / "policylint").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files[path.relative_to(REPO).as_posix()] = path.read_bytes()
    for folder in ("rules", "schemas"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file():
                files[f"policylint/_data/{path.relative_to(REPO).as_posix()}"] = path.read_bytes()
    return files


@pytest.mark.realtool
def test_wheel_holds_exactly_the_source_tree(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        shipped = {
            name: archive.read(name)
            for name in archive.namelist()
            if not name.endswith("/") and ".dist-info/" not in name
        }
        metadata = {name for name in archive.namelist() if ".dist-info/" in name}
    expected = _tree_files()
    assert sorted(shipped) == sorted(expected)
    assert [name for name in expected if shipped[name] != expected[name]] == []
    assert any(name.startswith("policylint/edit/") for name in shipped)  # the module the old list forgot
    entry_points = next(name for name in metadata if name.endswith("entry_points.txt"))
    with zipfile.ZipFile(wheel) as archive:
        assert "policylint = policylint.cli:console_main" in archive.read(entry_points).decode()


def test_suite_imports_the_installed_copy() -> None:
    """In CI (and under .ci/run) `import policylint` is the installed wheel, never ./policylint."""
    import policylint

    location = Path(policylint.__file__).resolve().parent
    if not (os.environ.get("POLICYLINT_TEST_WHEEL") or in_ci()):
        # A developer's run may test an editable install; the files must still be the checkout's.
        assert (location / "cli.py").read_bytes() == (REPO / "policylint" / "cli.py").read_bytes()
        return
    assert not location.is_relative_to(REPO.resolve()), f"the suite imported the checkout: {location}"
    assert location.is_relative_to(Path(sys.prefix).resolve()), f"{location} is not in {sys.prefix}"
    for name, data in _tree_files().items():
        installed = location.parent / name
        assert installed.read_bytes() == data, f"{name} differs from the checkout"


def _clean_env(site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(site)
    env["NO_COLOR"] = "1"
    return env


@pytest.mark.realtool
def test_installed_wheel_finds_its_data(tmp_path: Path, wheel: Path) -> None:
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
