"""Before publishing a release: is the tag every install pin names really there?

    python tools/release_check.py [REPOSITORY]

The README, ``docs/ci/`` and ``policylint init`` pin ``v<version>`` (the version in
``pyproject.toml``). A pin to a tag that was never pushed fails for every user, and a
clone CI makes may hold no tags at all, so the suite cannot be the check: this is the
release step's. It exits 0 when ``v<version>`` exists, names a commit whose
``pyproject.toml`` carries that version, and that commit is HEAD or an ancestor of it;
otherwise 1, with one line saying what to do. Not shipped: a development tool of the checkout.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)


def _version(text: str) -> str | None:
    try:
        value = tomllib.loads(text).get("project", {}).get("version")
    except tomllib.TOMLDecodeError:
        return None
    return value if isinstance(value, str) else None


def problems(repo: Path) -> list[str]:
    """What stops ``repo`` from being released as it stands (empty: nothing)."""
    try:
        version = _version((repo / "pyproject.toml").read_text(encoding="utf-8"))
    except OSError as exc:
        return [f"pyproject.toml: cannot be read ({exc.strerror})"]
    if version is None:
        return ["pyproject.toml: no [project] version"]
    tag = f"v{version}"
    found = _git(repo, "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}")
    if found.returncode != 0:
        return [f"no tag {tag}: tag the commit that sets version {version} (git tag -a {tag}) and push it"]
    commit = found.stdout.strip()
    tagged = _git(repo, "show", f"{commit}:pyproject.toml")
    if tagged.returncode != 0 or _version(tagged.stdout) != version:
        return [f"tag {tag} names {commit[:12]}, whose pyproject.toml does not set version {version}"]
    if _git(repo, "merge-base", "--is-ancestor", commit, "HEAD").returncode != 0:
        return [f"tag {tag} names {commit[:12]}, which is not HEAD or an ancestor of it"]
    return []


def main(argv: list[str]) -> int:
    repo = Path(argv[0] if argv else ".")
    found = problems(repo)
    for line in found:
        print(f"release_check: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
