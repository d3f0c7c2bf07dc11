"""``report --html FILE --plan``: the section "Planned vs today" of the review page.

Every figure of the section is compared with ``policylint plan --format json`` run on
the same repository, figure by figure (totals, clusters, today's pools with the
findings each difference resolves, planned pools and each planned number's
derivation); the exit codes are those of the page without ``--plan``; a repository
the plan command refuses gets a section that says why; user text is escaped; and in
headless Chromium the section fits a 400- and a 1280-pixel-wide window.
"""

from __future__ import annotations

import copy
import json
import shutil
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLES, run_cli
from realtools import require


class _Data(HTMLParser):
    """Every element's data-* attributes, in document order, with its tag."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        data = {k[5:]: v or "" for k, v in attrs if k.startswith("data-")}
        if data:
            self.items.append((tag, data))


def _items(page: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Data()
    parser.feed(page)
    return parser.items


def _attr(value: Any) -> str:
    """A JSON value as the page writes it in a data attribute."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return escape(str(value), quote=True)


def _text(value: Any) -> str:
    return escape(str(value), quote=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any], int, str, int]]:
    """Per example: (its copy, ``plan --format json``, plan's exit code, the page with --plan, report's exit code)."""
    out: dict[str, tuple[Path, dict[str, Any], int, str, int]] = {}
    for example in ("bad", "good"):
        repo = Path(shutil.copytree(EXAMPLES / example, tmp_path_factory.mktemp(example) / "repo"))
        code, text, err = run_cli(["plan", ".", "--format", "json"], cwd=repo)
        assert code in (0, 1), err
        target = repo.parent / "review.html"
        report_code, _, err = run_cli(["report", "--html", str(target), "--plan", "."], cwd=repo)
        assert report_code in (0, 1), err
        out[example] = (repo, json.loads(text), code, target.read_text(encoding="utf-8"), report_code)
    return out


@pytest.mark.parametrize("example", ["bad", "good"])
def test_totals_and_clusters_equal_plan_json(runs: dict[str, Any], example: str) -> None:
    _, doc, plan_code, page, _ = runs[example]
    items = _items(page)
    (section,) = [d for tag, d in items if tag == "section" and d.get("plan")]
    comparison, check = doc["comparison"], doc["check"]
    assert section["plan"] == "made"
    assert section["passes"] == _attr(check["passes"]) and (plan_code == 0) == check["passes"]
    assert int(section["sizing-findings"]) == len(check["sizing_findings"])
    total = comparison["total"]
    for state in ("today", "planned"):
        for key, value in total[state].items():
            assert section[f"{state}-{key.replace('_', '-')}"] == _attr(value), (state, key)
    rows = {d["plan-total"]: d for tag, d in items if tag == "tr" and "plan-total" in d}
    assert sorted(rows) == sorted(total["today"])
    for key, row in rows.items():
        assert (row["today"], row["planned"]) == (_attr(total["today"][key]), _attr(total["planned"][key]))
    (saves,) = [d for tag, d in items if "saves-total-gpus" in d]
    assert saves == {"saves-reserved-gpus": _attr(total["saves"]["reserved_gpus"]), "saves-total-gpus": _attr(total["saves"]["total_gpus"])}
    clusters = {d["plan-cluster"]: d for tag, d in items if tag == "tr" and "plan-cluster" in d}
    assert list(clusters) == list(comparison["clusters"])
    for name, figures in comparison["clusters"].items():
        assert {k: clusters[name][k.replace("_", "-")] for k in figures} == {k: _attr(v) for k, v in figures.items()}


@pytest.mark.parametrize("example", ["bad", "good"])
def test_todays_pools_and_what_each_difference_resolves(runs: dict[str, Any], example: str) -> None:
    _, doc, _, page, _ = runs[example]
    items = _items(page)
    current = doc["comparison"]["current_pools"]
    rows = [d for tag, d in items if tag == "tr" and "today-pool" in d]
    assert [r["today-pool"] for r in rows] == [c["pool"] for c in current]
    resolved: dict[str, list[tuple[str, str]]] = {}
    owner = None
    for tag, d in items:
        if tag == "details" and "resolved-by" in d:
            owner = d["resolved-by"]
        elif tag == "li" and "resolves-code" in d:
            assert owner is not None
            resolved.setdefault(owner, []).append((d["resolves-code"], d["resolves-subject"]))
    for row, c in zip(rows, current):
        assert (row["reserved-gpus"], row["elastic-gpus"], row["proposed-gpus"]) == (
            _attr(c["reserved_gpus"]), _attr(c["elastic_gpus"]), _attr(c["proposed_gpus"]),
        )
        assert row["planned-in"] == _attr(",".join(c["planned_in"]))
        assert int(row["resolves"]) == len(c["resolves"])
        assert resolved.get(c["pool"], []) == [(f["code"], _text(f["subject"])) for f in c["resolves"]]
        for f in c["resolves"]:
            # file and line as the page writes every place: relative to the repository root (here the copy)
            assert f"{_text(f['file'])}:{f['line']}" in page and _text(f["message"]) in page
    if example == "bad":
        assert sum(len(v) for v in resolved.values()) > 20
    planned = {d["planned-row"]: d for tag, d in items if tag == "tr" and "planned-row" in d}
    assert list(planned) == [p["pool"] for p in doc["comparison"]["planned_pools"]]
    for p in doc["comparison"]["planned_pools"]:
        assert (planned[p["pool"]]["reserved-gpus"], planned[p["pool"]]["elastic-gpus"]) == (
            _attr(p["reserved_gpus"]), _attr(p["elastic_gpus"]),
        )


def _block(page: str, name: str) -> str:
    start = page.index(f'id="plan-pool-{_text(name)}"')
    ends = [i for i in (page.find('class="pool plan-pool"', start), page.find("</section>", start)) if i > 0]
    return page[start : min(ends)]


@pytest.mark.parametrize("example", ["bad", "good"])
def test_every_planned_number_and_its_derivation(runs: dict[str, Any], example: str) -> None:
    _, doc, _, page, _ = runs[example]
    items = _items(page)
    pools = doc["plan"]["pools"]
    origins = {p["pool"]: p["from"] for p in doc["comparison"]["planned_pools"]}
    shown = [(i, d) for i, (tag, d) in enumerate(items) if tag == "div" and "planned-pool" in d]
    assert [d["planned-pool"] for _, d in shown] == [f"{p['cluster']}/{p['pool']}" for p in pools]
    bounds = [i for i, _ in shown] + [len(items)]
    for k, pool in enumerate(pools):
        name = f"{pool['cluster']}/{pool['pool']}"
        head = shown[k][1]
        expected = {
            "measured": pool["measured"],
            "reserved-gpus": pool["reserved_gpus"],
            "elastic-gpus": pool["elastic_gpus"],
            "capacity-gpus": pool["capacity_gpus"],
            "cold-start-seconds": pool["cold_start_seconds"],
            "overflow": pool["overflow"],
            "max-depth": pool["queue"]["max_depth"],
            "max-wait-seconds": pool["queue"]["max_wait_seconds"],
            "gang": pool["scheduling"]["gang"],
            "preemption": pool["scheduling"]["preemption"],
            "pooling-saves-gpus": pool["pooling_saves_gpus"],
            "workloads": ",".join(pool["workloads"]),
            "from": ",".join(origins[name]),
        }
        assert {key: head[key] for key in expected} == {key: _attr(v) for key, v in expected.items()}, name
        inside = [d for _, d in items[bounds[k] + 1 : bounds[k + 1]]]
        rows = {d["derivation"]: d for d in inside if "derivation" in d}
        assert sorted(rows) == sorted(pool["derivation"]), name
        block = _block(page, name)
        for key, entry in pool["derivation"].items():
            row = rows[key]
            assert row["value"] == _attr(entry["value"]), (name, key)
            assert row["band"] == _attr(entry.get("band")) and row["band-gpus"] == _attr(entry.get("band_gpus"))
            # the measurement and the rule, word for word
            assert _text(entry["rule"]) in block, (name, key)
            if entry.get("measurement"):
                assert _text(entry["measurement"]) in block, (name, key)
        if pool["pooled"] is not None:
            (bands,) = [d for d in inside if "pooled-baseline-gpus" in d]
            assert (bands["pooled-baseline-gpus"], bands["pooled-daily-gpus"], bands["pooled-peak-gpus"]) == tuple(
                _attr(pool["pooled"][b]) for b in ("baseline_gpus", "daily_gpus", "peak_gpus")
            )
        reasons = [d["reason"] for d in inside if "reason" in d]
        assert reasons == list(pool["reasons"])
        for why in pool["reasons"].values():
            assert _text(why) in block


def test_exit_codes_are_unchanged(runs: dict[str, Any], tmp_path: Path) -> None:
    for example, expected in (("bad", 1), ("good", 0)):
        repo, _, _, _, with_plan = runs[example]
        without, _, _ = run_cli(["report", "--html", str(tmp_path / f"{example}.html"), "."], cwd=repo)
        assert with_plan == without == expected
    repo = runs["bad"][0]
    code, _, _ = run_cli(["report", "--html", str(tmp_path / "zero.html"), "--plan", "--exit-zero", "."], cwd=repo)
    assert code == 0


def test_without_plan_the_page_has_no_section(runs: dict[str, Any], tmp_path: Path) -> None:
    repo = runs["good"][0]
    run_cli(["report", "--html", str(tmp_path / "plain.html"), "."], cwd=repo)
    page = (tmp_path / "plain.html").read_text(encoding="utf-8")
    assert "Planned vs today" not in page and 'id="plan"' not in page
    planned = runs["good"][3]
    # the section sits between the summary and the rest of the page
    assert planned.index("<h2>Summary</h2>") < planned.index("<h2>Planned vs today</h2>") < planned.index('id="cluster-')


def test_same_input_same_bytes(runs: dict[str, Any]) -> None:
    repo, _, _, first, _ = runs["bad"]
    again = repo.parent / "again.html"  # beside the first page: its links are relative to its folder
    run_cli(["report", "--html", str(again), "--plan", "--no-cache", "."], cwd=repo)
    assert again.read_text(encoding="utf-8") == first


def test_a_repository_without_a_plan_says_why(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    shutil.rmtree(repo / "clusters")
    shutil.rmtree(repo / "proposals")
    out = tmp_path / "review.html"
    code, _, err = run_cli(["report", "--html", str(out), "--plan", "."], cwd=repo)
    without, _, _ = run_cli(["report", "--html", str(tmp_path / "plain.html"), "."], cwd=repo)
    assert code == without, err
    plan_code, _, plan_err = run_cli(["plan", "."], cwd=repo)
    assert plan_code == 2 and "nothing to plan" in plan_err
    page = out.read_text(encoding="utf-8")
    (section,) = [d for tag, d in _items(page) if tag == "section" and d.get("plan")]
    assert section == {"plan": "none"}
    assert "no plan</span> nothing to plan: no workload of . has a GPU type" in page


def test_a_model_with_errors_gets_no_plan(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    with (repo / "workloads" / "search.yaml").open("a", encoding="utf-8") as f:
        f.write("spec: [broken\n")
    out = tmp_path / "review.html"
    code, _, err = run_cli(["report", "--html", str(out), "--plan", "workloads/search.yaml"], cwd=repo)
    assert code == 1, err
    page = out.read_text(encoding="utf-8")
    assert 'data-plan="none"' in page
    assert "no plan</span> the capacity model has 1 error; no plan (fix them, `policylint check` shows them)" in page
    # a file as PATH: the plan is of the repository root, named as the user would type it
    assert "<code>policylint plan . --format json</code>" in page


def test_user_text_in_the_plan_is_escaped(runs: dict[str, Any]) -> None:
    from policylint.report.html_parts import SourceLinks
    from policylint.report.plan_section import PlanOutcome, plan_section

    doc = copy.deepcopy(runs["bad"][1])
    evil = "<script>alert(1)</script>\u202e"
    pool = doc["plan"]["pools"][0]
    pool["reasons"] = {evil: evil}
    pool["derivation"]["reservedGpus"]["measurement"] = evil
    pool["derivation"]["reservedGpus"]["rule"] = evil
    pool["derivation"]["queue.maxWaitSeconds"]["per_workload"] = {evil: 1.0}
    pool["pool"] = evil
    first = next(c for c in doc["comparison"]["current_pools"] if c["resolves"])
    first["resolves"][0]["message"] = evil
    first["resolves"][0]["file"] = "clusters/<b>.yaml"
    first["pool"] = evil
    html = plan_section(PlanOutcome(doc, None, evil), set(), SourceLinks())
    assert "<script>" not in html and "\u202e" not in html and "<b>.yaml" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\u202e" in html


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
def test_the_section_fits_the_screen(chromium: Any, runs: dict[str, Any], tmp_path: Path, width: int) -> None:
    """The page of examples/bad with its plan, at a phone's and a laptop's width; a screenshot stays in the test's folder."""
    repo = runs["bad"][0]
    out = tmp_path / "review.html"
    out.write_text(runs["bad"][3], encoding="utf-8")
    chromium.set_window_size(width, 900)
    chromium.get(out.resolve().as_uri())
    inner = chromium.execute_script("return window.innerWidth")
    assert inner == width
    assert chromium.execute_script("return document.documentElement.scrollWidth") <= inner
    # open every list of resolved findings, so that they are laid out too
    chromium.execute_script("document.querySelectorAll('#plan details').forEach(d => d.open = true)")
    boxes = chromium.execute_script(
        "return Array.from(document.querySelectorAll('#plan table, #plan .plan-pool, #plan li, #plan p'))"
        ".map(e => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.height]; })"
    )
    shown = [(left, right) for left, right, height in boxes if height > 0]
    assert len(shown) > 100 and all(left >= 0 and right <= inner + 0.5 for left, right in shown)
    # a table wider than its box would scroll inside it: none of the section's does
    wide = chromium.execute_script(
        "return Array.from(document.querySelectorAll('#plan table')).filter(t => t.scrollWidth > t.clientWidth + 1).length"
    )
    assert wide == 0
    assert chromium.execute_script("return document.documentElement.scrollWidth") <= inner
    section = chromium.find_element("css selector", "section#plan")
    height = chromium.execute_script("return arguments[0].getBoundingClientRect().height", section)
    chromium.set_window_size(width, int(min(height + 200, 16000)))
    shot = tmp_path / f"plan-{width}px.png"
    assert chromium.find_element("css selector", "section#plan").screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    assert repo.is_dir()
