"""``--diff`` reads the base revision's measurements as a checkout would: through links, and through Git LFS.

Third red team, 2026-12-07: PL950 wrote the base's files from raw git blobs. A traces folder
that is a symbolic link to a dated snapshot was read as the link's own text, and a trace kept in
Git LFS as its pointer file; the base's pooled baseline was then unknown, and an unknown base let
PL950 pass "on the changed evidence alone" - serving 53 -> 74 and training 392 -> 450 with one
sample edited. The base is now read following links inside the repository and through git's
configured filters, and a base that still cannot be read backs no growth.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, git, run_cli

RAISES = (("clusters/prod-east.yaml", "reservedGpus: 48", "reservedGpus: 74"),
          ("clusters/prod-east.yaml", "maxGpus: 10", "maxGpus: 5"),
          ("workloads/product-ai.yaml", "    value: 14\n", "    value: 7\n"))

# A stand-in for git-lfs (not installed on the test machines): the clean filter keeps the file in the
# repository's git folder and gives git a pointer; the smudge filter gives the file back.
FILTER = """\
import hashlib, os, subprocess, sys
store = os.path.join(subprocess.run(["git", "rev-parse", "--git-dir"], capture_output=True, text=True).stdout.strip(),
                     "lfs-test")
os.makedirs(store, exist_ok=True)
data = sys.stdin.buffer.read()
if sys.argv[1] == "clean":
    oid = hashlib.sha256(data).hexdigest()
    with open(os.path.join(store, oid), "wb") as f:
        f.write(data)
    sys.stdout.buffer.write(b"version https://git-lfs.github.com/spec/v1\\noid sha256:" + oid.encode()
                            + b"\\nsize " + str(len(data)).encode() + b"\\n")
else:
    oid = data.split(b"oid sha256:", 1)[1].split(b"\\n", 1)[0].decode()
    with open(os.path.join(store, oid), "rb") as f:
        sys.stdout.buffer.write(f.read())
"""


def _commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def _bump_last_sample(path: Path) -> None:
    rows = path.read_text(encoding="utf-8").splitlines()
    stamp, value = rows[-1].rsplit(",", 1)
    rows[-1] = f"{stamp},{int(value) + 1}"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def _raise_serving(repo: Path) -> None:
    for name, old, new in RAISES:
        path = repo / name
        text = path.read_text(encoding="utf-8")
        assert old in text, old
        path.write_text(text.replace(old, new), encoding="utf-8")
    (repo / "proposals" / "2027-q1-serving.yaml").unlink()


def _serving_pl950(repo: Path) -> str:
    code, out, err = run_cli(["check", "--format", "json", "--diff", "HEAD~1"], cwd=repo)
    assert code == 1 and err == "", (code, err, out)
    found = [f["message"] for f in json.loads(out)["findings"]
             if f["code"] == "PL950" and f["subject"] == "pool prod-east/serving"]
    assert len(found) == 1, out
    return found[0]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    git(repo, "init", "-q")
    _commit(repo, "the honest plan")
    return repo


#: what PL950 says once the base's files were read: the bound they give
READ = "(the base's files read with today's declarations; 53 as the base declared them), which backs at most 53"


def test_a_trace_folder_linked_to_a_dated_snapshot_is_read_at_the_base(repo: Path) -> None:
    snapshots = repo / "measurements" / "snapshots"
    snapshots.mkdir()
    git(repo, "mv", "measurements/traces", "measurements/snapshots/2026-11-30")
    (repo / "measurements" / "traces").symlink_to("snapshots/2026-11-30")
    _commit(repo, "keep dated snapshots; traces is the latest")
    shutil.copytree(snapshots / "2026-11-30", snapshots / "2026-12-01")
    _bump_last_sample(snapshots / "2026-12-01" / "chat-assistant.csv")
    (repo / "measurements" / "traces").unlink()
    (repo / "measurements" / "traces").symlink_to("snapshots/2026-12-01")
    _raise_serving(repo)
    _commit(repo, "the next snapshot; serving resized")
    assert READ in _serving_pl950(repo)


def _lfs(repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "lfs-filter.py"
    script.write_text(FILTER, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    for kind in ("clean", "smudge"):
        git(repo, "config", f"filter.lfs.{kind}", f"{sys.executable} {script} {kind}")
    git(repo, "config", "filter.lfs.required", "true")
    (repo / ".gitattributes").write_text("measurements/traces/*.csv filter=lfs -text\n", encoding="utf-8")
    git(repo, "rm", "-q", "--cached", "-r", "measurements/traces")
    _commit(repo, "traces in LFS")
    assert git(repo, "cat-file", "-p", "HEAD:measurements/traces/chat-assistant.csv").startswith("version https://")
    _bump_last_sample(repo / "measurements" / "traces" / "chat-assistant.csv")
    _raise_serving(repo)
    _commit(repo, "chat re-measured; serving resized")


def test_a_trace_kept_in_git_lfs_is_read_through_the_configured_filter(repo: Path, tmp_path: Path) -> None:
    _lfs(repo, tmp_path)
    assert READ in _serving_pl950(repo)


def test_a_base_that_cannot_be_read_backs_no_growth(repo: Path, tmp_path: Path) -> None:
    """The same, in a clone without the LFS filter: the base holds pointers only, so nothing backs the raise."""
    _lfs(repo, tmp_path)
    for kind in ("clean", "smudge", "required"):
        git(repo, "config", "--unset", f"filter.lfs.{kind}")
    message = _serving_pl950(repo)
    assert "the base revision's measurements cannot be read whole" in message and "reserves 74 GPUs" in message


def test_blobs_follow_links_inside_the_repository_and_skip_the_others(tmp_path: Path) -> None:
    from policylint.engine.base_files import blobs

    repo = tmp_path / "r"
    (repo / "snap").mkdir(parents=True)
    (repo / "snap" / "t.csv").write_text("t,v\n1,2\n", encoding="utf-8")
    os.symlink("snap", repo / "latest")
    os.symlink("/etc/hostname", repo / "outside")
    os.symlink("nowhere", repo / "dangling")
    git(repo, "init", "-q")
    _commit(repo, "links")
    specs = ["HEAD:latest/t.csv", "HEAD:outside", "HEAD:dangling", "HEAD:missing", "HEAD:snap/t.csv"]
    assert list(blobs(repo, specs)) == [b"t,v\n1,2\n", None, None, None, b"t,v\n1,2\n"]
