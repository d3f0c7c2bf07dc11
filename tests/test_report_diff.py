"""``report --html FILE --diff BASE``: the review page of a change.

One git repository from ``examples/good``: on ``main`` two pools are oversized
(``train-central/training`` reserves 900 GPUs, ``prod-east/serving`` may grow to
108); the branch ``change`` commits a pull request that

- raises ``prod-east/batch`` from 20 to 22 reserved GPUs (PL950: no new evidence),
- sets ``train-central/training`` back to 392 (three findings fixed),
- deletes the job file of ``offline-scoring`` (PL022 and PL602 new),
- replaces the reranker's trace by a new file and edits a sample of another.

The serving pool's two findings stay: unchanged.
"""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLES, git, replace_once, run_cli
from realtools import require


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("report-diff") / "repo"
    shutil.copytree(EXAMPLES / "good", repo)
    replace_once(repo / "clusters" / "train-central.yaml", "reservedGpus: 392", "reservedGpus: 900")
    replace_once(repo / "clusters" / "prod-east.yaml", "        maxGpus: 10\n", "        maxGpus: 60\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "capacity as of November")
    git(repo, "checkout", "-q", "-b", "change")
    replace_once(repo / "clusters" / "train-central.yaml", "reservedGpus: 900", "reservedGpus: 392")
    replace_once(repo / "clusters" / "prod-east.yaml", "reservedGpus: 20", "reservedGpus: 22")
    git(repo, "rm", "-q", "measurements/jobs/offline-scoring.csv")
    git(repo, "mv", "measurements/traces/reranker.csv", "measurements/traces/reranker-v2.csv")
    replace_once(repo / "workloads" / "search.yaml", "traces/reranker.csv", "traces/reranker-v2.csv")
    replace_once(repo / "measurements" / "traces" / "code-completion.csv", "1788134400,29\n", "1788134400,30\n")
    git(repo, "commit", "-q", "-am", "the pull request")
    return repo


@pytest.fixture
def repo(history: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(history, tmp_path / "repo"))


class _Data(HTMLParser):
    """Every element's data-* attributes, in document order, with its tag."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[tuple[str, dict[str, str]]] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        data = {k[5:]: v or "" for k, v in attrs if k.startswith("data-")}
        if data:
            self.items.append((tag, data))


def _items(page: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Data()
    parser.feed(page)
    return parser.items


def _report(repo: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    code, _, err = run_cli(["report", "--html", str(out), *extra], cwd=repo)
    page = out.read_text(encoding="utf-8") if out.exists() else ""
    return code, page, err


@pytest.fixture(scope="module")
def page(history: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("page") / "review.html"
    code, text, err = _report(history, out, "--diff", "main")
    assert code == 1, err
    return text


def test_the_page_leads_with_the_change(page: str) -> None:
    assert page.index('<section class="change"') < page.index("<h2>Summary</h2>")
    items = _items(page)
    (section,) = [d for tag, d in items if tag == "section" and "base" in d]
    assert section["base"] == "main" and re.fullmatch(r"[0-9a-f]{40}", section["base-commit"])
    cards = {d["change-summary"]: int(d["value"]) for _, d in items if "change-summary" in d}
    assert cards == {
        "pools-changed": 2,
        "evidence-added": 1,
        "evidence-removed": 2,
        "evidence-changed": 1,
        "findings-new": 3,
        "findings-fixed": 3,
        "findings-unchanged": 3,
    }


def test_capacity_and_justified_gpus_before_and_after(page: str) -> None:
    rows = {d["change-pool"]: d for tag, d in _items(page) if tag == "tr" and "change-pool" in d}
    assert sorted(rows) == ["prod-east/batch", "prod-east/serving", "train-central/training"]
    batch, serving, training = rows["prod-east/batch"], rows["prod-east/serving"], rows["train-central/training"]
    assert (batch["status"], batch["reserved-before"], batch["reserved-after"]) == ("changed", "20", "22")
    assert (batch["elastic-before"], batch["elastic-after"]) == ("6", "6")
    # the justification did not move: the same measurements give the same pooled bands
    assert (batch["baseline-before"], batch["baseline-after"], batch["daily-before"], batch["daily-after"]) == (
        "20", "20", "26", "26",
    )
    assert (training["status"], training["reserved-before"], training["reserved-after"]) == ("changed", "900", "392")
    assert (training["baseline-before"], training["baseline-after"]) == ("392", "392")
    assert (training["new"], training["fixed"]) == ("0", "3")
    # PL950 about the pool, PL602 about its workload (PL022, the missing file, is about the document)
    assert (batch["new"], batch["fixed"]) == ("2", "0")
    assert (serving["status"], serving["reserved-before"], serving["reserved-after"]) == ("unchanged", "48", "48")
    assert (serving["elastic-before"], serving["elastic-after"]) == ("60", "60")
    assert "20 → <b>22</b> (+2)" in page and "900 → <b>392</b> (−508)" in page


def test_demand_evidence_added_removed_and_changed(page: str) -> None:
    evidence = {d["evidence"]: d["status"] for tag, d in _items(page) if tag == "tr" and "evidence" in d}
    assert evidence == {
        "measurements/jobs/offline-scoring.csv": "removed",
        "measurements/traces/reranker.csv": "removed",
        "measurements/traces/reranker-v2.csv": "added",
        "measurements/traces/code-completion.csv": "changed",
    }
    assert "added (new file)" in page and "removed (deleted)" in page and "changed (content changed)" in page
    assert "reranker (concurrency)" in page and "offline-scoring (durations)" in page


def test_findings_new_fixed_and_unchanged(page: str) -> None:
    items = _items(page)
    by = {kind: sorted(d["change-code"] for tag, d in items if d.get("change") == kind) for kind in ("new", "fixed", "unchanged")}
    assert by == {"new": ["PL022", "PL602", "PL950"], "fixed": ["PL101", "PL102", "PL201"], "unchanged": ["PL102", "PL109", "PL201"]}
    assert "<summary>Unchanged (3)</summary>" in page
    assert "New <span class=\"muted\">(3)</span>" in page and "Fixed <span class=\"muted\">(3)</span>" in page


def test_charts_of_both_states(page: str) -> None:
    charted = [d["chart-pool"] for tag, d in _items(page) if "chart-pool" in d]
    # every pool the change touches: two by capacity, the serving pool by its evidence
    assert charted == ["prod-east/batch", "prod-east/serving", "train-central/training"]
    for name in charted:
        start = page.index(f'data-chart-pool="{name}"')
        ends = [i for i in (page.find("data-chart-pool", start + 1), page.index("</section>", start)) if i > 0]
        block = page[start : min(ends)]
        assert block.count("<svg") == 2, name
        assert f"pooled GPU demand of pool {name}, before the change" in block
        assert f"pooled GPU demand of pool {name}, after the change" in block


def test_exit_codes_are_those_of_report(repo: Path, tmp_path: Path) -> None:
    plain, _, _ = _report(repo, tmp_path / "plain.html")
    diffed, _, _ = _report(repo, tmp_path / "diff.html", "--diff", "main")
    assert plain == diffed == 1
    assert _report(repo, tmp_path / "zero.html", "--diff", "main", "--exit-zero")[0] == 0
    # against the branch's own commit: nothing changed, the state's findings still decide
    code, page, _ = _report(repo, tmp_path / "head.html", "--diff", "HEAD")
    assert code == 1
    cards = {d["change-summary"]: int(d["value"]) for _, d in _items(page) if "change-summary" in d}
    assert cards["findings-new"] == cards["findings-fixed"] == cards["pools-changed"] == 0
    assert cards["findings-unchanged"] == 5


@pytest.mark.parametrize(
    ("base", "message"),
    [
        ("no-such-branch", "policylint: error: git revision 'no-such-branch' not found.\n"),
        ("", "policylint: error: --diff needs a git revision, got an empty string\n"),
    ],
)
def test_a_bad_base_is_exit_2_with_one_message(repo: Path, tmp_path: Path, base: str, message: str) -> None:
    out = tmp_path / "review.html"
    code, _, err = run_cli(["report", "--html", str(out), "--diff", base], cwd=repo)
    assert (code, err) == (2, message)
    assert not out.exists()


def test_outside_git_is_exit_2(tmp_path: Path) -> None:
    plain = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "plain"))
    code, _, err = run_cli(["report", "--html", str(tmp_path / "x.html"), "--diff", "HEAD"], cwd=plain)
    assert code == 2 and err.count("\n") == 1 and "is not inside one" in err
    assert not (tmp_path / "x.html").exists()


def test_the_base_tree_is_removed_and_nothing_else_touched(repo: Path, tmp_path: Path) -> None:
    status = git(repo, "status", "--porcelain")
    assert _report(repo, tmp_path / "review.html", "--diff", "main")[0] == 1
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(repo, "status", "--porcelain") == status
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "change"


def test_same_inputs_same_bytes(repo: Path, tmp_path: Path) -> None:
    first = _report(repo, tmp_path / "one.html", "--diff", "main", "--no-cache")[1]
    second = _report(repo, tmp_path / "two.html", "--diff", "main")[1]
    assert first == second


def test_links_relative_to_the_page_without_a_template(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "pages" / "review.html"
    _, page, _ = _report(repo, out, "--diff", "main")
    files = [h for h in re.findall(r'<a href="([^"#][^"]*)"', page)]
    assert files and all(not re.match(r"[a-z]+:", h) for h in files)
    for href in files:
        assert (out.parent / href).resolve().is_file(), href
    assert '<a href="../repo/clusters/prod-east.yaml">clusters/prod-east.yaml:' in page


def test_links_follow_the_configured_template(repo: Path, tmp_path: Path) -> None:
    config = repo / ".policylint.yaml"
    config.write_text(
        config.read_text(encoding="utf-8")
        + 'report:\n  source-url: "https://git.example.com/org/capacity/blob/{rev}/{path}#L{line}"\n',
        encoding="utf-8",
    )
    head, base = git(repo, "rev-parse", "HEAD").strip(), git(repo, "rev-parse", "main").strip()
    code, page, err = _report(repo, tmp_path / "review.html", "--diff", "main")
    assert code == 1, err
    items = re.findall(r'<li data-change="(\w+)" data-change-code="(\w+)">.*?<a href="([^"]+)">([^<]+)</a>', page)
    links = {(kind, rule): (href, text) for kind, rule, href, text in items}
    href, text = links[("new", "PL950")]
    line = text.split(":")[1]
    assert href == f"https://git.example.com/org/capacity/blob/{head}/clusters/prod-east.yaml#L{line}"
    href, text = links[("fixed", "PL101")]
    assert href.startswith(f"https://git.example.com/org/capacity/blob/{base}/clusters/train-central.yaml#L")
    # the evidence a change deleted links to the base revision, the one it added to the new one
    assert f'href="https://git.example.com/org/capacity/blob/{base}/measurements/jobs/offline-scoring.csv#L1"' in page
    assert f'href="https://git.example.com/org/capacity/blob/{head}/measurements/traces/reranker-v2.csv#L1"' in page
    # without --diff the template is used with the commit checked out
    _, plain, _ = _report(repo, tmp_path / "plain.html")
    assert f"https://git.example.com/org/capacity/blob/{head}/clusters/prod-east.yaml#L" in plain


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"https://x.example/{rev}/{file}"', "unknown placeholder {file} (allowed: {rev}, {path}, {line})"),
        ('"https://x.example/{rev}"', "must hold {path}, where the file's repository path goes"),
        ('"ftp://x.example/{path}"', "does not match"),
    ],
)
def test_a_bad_template_is_a_configuration_error(repo: Path, tmp_path: Path, value: str, message: str) -> None:
    (repo / ".policylint.yaml").write_text(f'now: "2026-12-01"\nreport:\n  source-url: {value}\n', encoding="utf-8")
    code, _, err = run_cli(["report", "--html", str(tmp_path / "x.html")], cwd=repo)
    assert code == 2 and err.count("\n") == 1 and "report.source-url" in err and message in err, err


def test_file_names_in_the_change_are_escaped(repo: Path, tmp_path: Path) -> None:
    git(repo, "mv", "measurements/traces/reranker-v2.csv", "measurements/traces/reranker-<i>v2.csv")
    replace_once(repo / "workloads" / "search.yaml", "traces/reranker-v2.csv", "traces/reranker-<i>v2.csv")
    _, page, _ = _report(repo, tmp_path / "review.html", "--diff", "main")
    assert "<i>" not in page
    assert 'data-evidence="measurements/traces/reranker-&lt;i&gt;v2.csv"' in page
    assert 'href="repo/measurements/traces/reranker-%3Ci%3Ev2.csv"' in page


def test_a_file_name_never_becomes_a_scheme() -> None:
    from policylint.report.html_parts import SourceLinks

    links = SourceLinks(top=Path("/repo"), page_dir=Path("/repo"))
    assert links.href("javascript:alert(1).yaml", 3) == "javascript%3Aalert%281%29.yaml"
    templated = SourceLinks(template="https://h.example/{rev}/{path}#L{line}", rev="abc")
    assert templated.href("a b/c.yaml", 0) == "https://h.example/abc/a%20b/c.yaml#L1"
    # a template that needs a commit, without one: relative links instead
    assert SourceLinks(template="https://h.example/{rev}/{path}", top=Path("/r"), page_dir=Path("/r")).href("x.yaml") == "x.yaml"


# ---------------------------------------------------------------- a real browser


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Any:
    browser = require("chromium")
    driver_path = require("chromedriver")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(flag)
    options.binary_location = browser
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.mark.realtool
@pytest.mark.parametrize("width", [400, 1280])
@pytest.mark.parametrize("kind", ["change", "state"])
def test_the_page_fits_the_screen(chromium: Any, history: Path, tmp_path: Path, width: int, kind: str) -> None:
    """The page of a change (and, without --diff, of examples/bad, the longest one) at a phone's and a laptop's width.

    The screenshots stay in the test's folder, for a person to look at.
    """
    out = tmp_path / "review.html"
    if kind == "change":
        assert _report(history, out, "--diff", "main")[0] == 1
    else:
        assert run_cli(["report", "--html", str(out), str(EXAMPLES / "bad")])[0] == 1
    chromium.set_window_size(width, 900)
    chromium.get(out.resolve().as_uri())
    inner = chromium.execute_script("return window.innerWidth")
    assert inner == width
    scroll = chromium.execute_script("return document.documentElement.scrollWidth")
    assert scroll <= inner, (scroll, inner)
    # tables, charts and cards are laid out within the screen (a wide table scrolls inside its own box)
    boxes = chromium.execute_script(
        "return Array.from(document.querySelectorAll('table, .chart-box, .cards, li'))"
        ".map(e => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.height]; })"
    )
    shown = [(left, right) for left, right, height in boxes if height > 0]  # not those in a closed <details>
    assert shown and all(left >= 0 and right <= inner + 0.5 for left, right in shown)
    first = chromium.execute_script("return document.querySelector('h2').textContent")
    assert first == ("What the change does" if kind == "change" else "Summary")
    height = chromium.execute_script("return document.documentElement.scrollHeight")
    chromium.set_window_size(width, min(height, 16000))
    assert chromium.execute_script("return document.documentElement.scrollWidth") <= width
    shot = tmp_path / f"review-{kind}-{width}px.png"
    assert chromium.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
