"""``policylint report --html``: the review page, in-process and in a real headless Chromium.

The fast tests read the page as text (determinism, escaping, self-containment,
exit codes, numbers against the JSON outputs). The ``realtool`` tests open it in
Chromium from the distribution and check what a reviewer would see: no console
error, no request beyond the file itself, charts that are drawn, and the same
numbers as ``check --format json`` and ``bands --pool --format json``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import EXAMPLES, copy_minirepo, run_cli
from realtools import require


def _report(tmp_path: Path, repo: Path, name: str = "report.html", *extra: str) -> tuple[int, Path, str]:
    target = tmp_path / name
    code, _, err = run_cli(["report", "--html", str(target), *extra, str(repo)])
    return code, target, err


class _Data(HTMLParser):
    """Every element's data-* attributes, in document order, with its tag."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        data = {k[5:]: v or "" for k, v in attrs if k.startswith("data-")}
        if data:
            self.items.append((tag, data))


def _data(page: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Data()
    parser.feed(page)
    return parser.items


def _pools_json(repo: Path, names: list[str]) -> dict[str, dict[str, Any] | None]:
    """``bands --pool P --format json`` of each pool; None for a pool without pooled bands (exit 2)."""
    docs: dict[str, dict[str, Any] | None] = {}
    for name in names:
        code, out, err = run_cli(["bands", "--pool", name, "--format", "json", str(repo)])
        assert code in (0, 2), err
        docs[name] = json.loads(out) if code == 0 else None
    return docs


# ---------------------------------------------------------------- the page as text


def test_same_input_gives_the_same_bytes(tmp_path: Path) -> None:
    code1, first, _ = _report(tmp_path, EXAMPLES / "bad", "one.html", "--no-cache", "--now", "2026-12-01")
    code2, second, _ = _report(tmp_path, EXAMPLES / "bad", "two.html", "--now", "2026-12-01")  # warm cache: same bytes too
    assert (code1, code2) == (1, 1)
    assert first.read_bytes() == second.read_bytes()


def test_exit_codes_follow_check(tmp_path: Path) -> None:
    assert _report(tmp_path, EXAMPLES / "good", "good.html")[0] == 0
    code, target, err = _report(tmp_path, EXAMPLES / "bad", "bad.html")
    assert code == 1 and target.is_file()
    assert re.search(r"report written to \S+ \(\d+ findings, [1-9]\d* at warning or above\)", err), err
    assert _report(tmp_path, EXAMPLES / "bad", "zero.html", "--exit-zero")[0] == 0
    # only errors fail: examples/bad has errors, so it still fails; warnings alone would not
    assert _report(tmp_path, EXAMPLES / "bad", "err.html", "--fail-on", "error")[0] == 1


def test_usage_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    code, _, err = run_cli(["report", str(EXAMPLES / "good")])
    assert code == 2 and "--html" in err
    code, _, err = run_cli(["report", "--html", str(tmp_path / "x.html"), str(tmp_path / "missing")])
    assert code == 2 and err.startswith("policylint: error:") and "Traceback" not in err
    assert not (tmp_path / "x.html").exists()


def test_stdout_when_the_file_is_a_dash() -> None:
    code, out, _ = run_cli(["report", "--html", "-", str(EXAMPLES / "good")])
    assert code == 0 and out.startswith("<!DOCTYPE html>") and out.endswith("</html>\n")


def test_the_page_loads_nothing_from_outside(tmp_path: Path) -> None:
    _, target, _ = _report(tmp_path, EXAMPLES / "bad")
    page = target.read_text(encoding="utf-8")
    assert "<script" not in page.lower()
    assert not re.search(r"""\b(src|srcset)\s*=""", page)
    assert not re.search(r"@import|url\(", page)
    # the only <link> is the empty icon; <a> links (anchors, files relative to the page) are followed only on a click
    assert re.findall(r'<link[^>]*href="([^"]*)"', page) == ["data:,"]
    hrefs = re.findall(r'<a href="([^"]*)"', page)
    assert hrefs and all(h.startswith("#") or not re.match(r"[a-z][a-z0-9+.-]*:", h) for h in hrefs), hrefs
    assert any(h.endswith(".yaml") for h in hrefs), "file:line places link to their files"
    # the only absolute URL is the SVG namespace, which is a name, not a request
    assert set(re.findall(r"https?://[^\"'\s<]+", page)) == {"http://www.w3.org/2000/svg"}


def test_user_text_is_escaped(tmp_path: Path) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    proposal = repo / "proposals" / "2027-q1-serving.yaml"
    text = proposal.read_text(encoding="utf-8")
    text = text.replace("justification: >-", 'justification: >-\n    <script>alert("x")</script> & <b>bold</b>', 1)
    proposal.write_text(text, encoding="utf-8")
    # a name that breaks the schema: its finding's message repeats it
    workload = repo / "workloads" / "search.yaml"
    text = workload.read_text(encoding="utf-8")
    assert text.count("name: reranker") == 1
    workload.write_text(text.replace("name: reranker", "name: <script>evil()</script>", 1), encoding="utf-8")
    code, target, _ = _report(tmp_path, repo)
    page = target.read_text(encoding="utf-8")
    assert code == 1
    assert "<script" not in page.lower() and "<b>bold" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in page
    assert "&lt;script&gt;evil()&lt;/script&gt;" in page


def test_numbers_equal_the_json_outputs(tmp_path: Path) -> None:
    """Pools against ``bands --pool --format json``, summary and rules against ``check --format json``."""
    repo = EXAMPLES / "bad"
    _, target, _ = _report(tmp_path, repo)
    items = _data(target.read_text(encoding="utf-8"))
    _assert_numbers(repo, items)


def _assert_numbers(repo: Path, items: list[tuple[str, dict[str, str]]]) -> None:
    code, out, _ = run_cli(["check", "--format", "json", "--exit-zero", str(repo)])
    checked = json.loads(out)
    summary = {d["summary"]: int(d["value"]) for _, d in items if "summary" in d}
    assert summary == {k: checked["summary"][k] for k in summary} and len(summary) == 8
    rules = {d["rule"]: int(d["count"]) for _, d in items if "rule" in d}
    assert rules == dict(Counter(f["code"] for f in checked["findings"]))
    # every finding is listed once: with its pool, its workload's pool, its proposal, or among the others
    listed = Counter(d["code"] for tag, d in items if tag == "li" and "code" in d)
    assert listed == Counter(f["code"] for f in checked["findings"])
    rows = {d["pool"]: d for tag, d in items if tag == "tr" and "pool" in d}
    sections = {d["pool"]: d for tag, d in items if tag == "section" and "pool" in d}
    assert sorted(rows) == sorted(sections) and rows
    pools = _pools_json(repo, sorted(rows))
    assert any(doc is not None for doc in pools.values()), "no pool with pooled bands"
    for name, doc in pools.items():
        if doc is None:  # no pooled demand: the page shows no figure either
            assert rows[name]["baseline-gpus"] == sections[name]["baseline-gpus"] == ""
            continue
        for where in (rows[name], sections[name]):
            assert int(where["reserved-gpus"]) == doc["capacity"]["reserved_gpus"]
            assert int(where["elastic-gpus"]) == doc["capacity"]["elastic_gpus"]
            assert int(where["capacity-gpus"]) == doc["capacity"]["total_gpus"]
            bands = doc["pooled"]["bands_gpus"]
            assert int(where["baseline-gpus"]) == bands["baseline"]
            assert int(where["daily-gpus"]) == bands["daily"]
            assert int(where["peak-gpus"]) == bands["peak"]
        assert int(rows[name]["reserved-delta"]) == doc["capacity"]["reserved_gpus"] - doc["pooled"]["bands_gpus"]["baseline"]
    # The proposal arithmetic: the allowance PL801 printed is the one on the page.
    requests = [d for tag, d in items if tag == "div" and "allowed-gpus" in d]
    for finding in checked["findings"]:
        if finding["code"] != "PL801":
            continue
        m = re.search(r"asks (\d+) GPUs for (\S+); pooled baseline (\d+) .* reserved (\d+) = shortfall (\d+); allowed (\d+)", finding["message"])
        assert m, finding["message"]
        req = next(d for d in requests if d["pool"] == m.group(2))
        assert (req["requested-gpus"], req["baseline-gpus"], req["reserved-gpus"], req["shortfall-gpus"], req["allowed-gpus"]) == m.groups()[
            :1
        ] + m.groups()[2:]
        assert req["verdict"] == "exceeds"


def test_good_example_proposal_is_justified(tmp_path: Path) -> None:
    _, target, _ = _report(tmp_path, EXAMPLES / "good")
    items = _data(target.read_text(encoding="utf-8"))
    (req,) = [d for tag, d in items if tag == "div" and "allowed-gpus" in d]
    assert req == {
        "pool": "prod-east/serving",
        "requested-gpus": "5",
        "reserved-gpus": "48",
        "baseline-gpus": "53",
        "shortfall-gpus": "5",
        "allowed-gpus": "6",
        "headroom": "0.15",
        "verdict": "within",
    }
    assert [d["verdict"] for tag, d in items if tag == "section" and "proposal" in d] == ["pass"]


def test_a_proposal_for_a_pool_that_does_not_exist_shows_its_error(tmp_path: Path) -> None:
    """The reference error sits in the proposal's document without a subject: it is the proposal's finding."""
    import shutil

    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    proposal = repo / "proposals" / "2027-q1-serving.yaml"
    proposal.write_text(proposal.read_text(encoding="utf-8").replace("pool: serving", "pool: servng"), encoding="utf-8")
    _, target, _ = _report(tmp_path, repo)
    page = target.read_text(encoding="utf-8")
    assert [d["verdict"] for tag, d in _data(page) if tag == "section" and "proposal" in d] == ["fail"]
    section = page.split('<section class="proposal"', 1)[1].split("</section>", 1)[0]
    assert "PL020" in section and "No findings" not in section


def test_downsampling_keeps_a_one_sample_spike() -> None:
    from policylint.report.svg_chart import downsample

    values = np.full(132_480, 10.0)
    values[77_777] = 95.0  # one minute in 92 days
    values[1000:1500] = np.nan  # a gap
    down = downsample(values, 700)
    assert down.high.size == 700
    assert float(np.nanmax(down.high)) == 95.0
    assert float(np.nanmin(down.low)) == 10.0
    assert down.samples_per_column == pytest.approx(132_480 / 700)
    # a column wholly inside the gap stays empty, a partly covered one does not
    covered = np.linspace(0, values.size, 701).astype(np.int64)
    inside = [i for i in range(700) if covered[i] >= 1000 and covered[i + 1] <= 1500]
    assert inside and all(np.isnan(down.high[i]) for i in inside)


# ---------------------------------------------------------------- a real browser


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Chromium driven by chromedriver, with browser and network logs on."""
    browser = require("chromium")
    driver_path = require("chromedriver")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(flag)
    options.binary_location = browser
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    try:
        yield driver
    finally:
        driver.quit()


def _requests(driver: Any) -> list[tuple[str, str]]:
    """(document URL, requested URL) of every request in the DevTools network events of the performance log."""
    sent = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            params = message["params"]
            sent.append((params.get("documentURL", ""), params["request"]["url"]))
    return sent


@pytest.mark.realtool
@pytest.mark.parametrize("example", ["good", "bad"])
def test_page_in_chromium(chromium: Any, tmp_path: Path, example: str) -> None:
    from io import BytesIO

    from PIL import Image

    repo = EXAMPLES / example
    _, target, _ = _report(tmp_path, repo)
    url = target.resolve().as_uri()
    chromium.get_log("performance")  # drop what came before this page
    chromium.get_log("browser")
    chromium.get(url)
    assert chromium.execute_script("return document.readyState") == "complete"
    errors = [e for e in chromium.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    sent = _requests(chromium)
    # The page asked for itself and nothing else; the browser's own start page may load
    # its chrome:// resources meanwhile, but nothing at all went to the network.
    assert [asked for document, asked in sent if document == url] == [url]
    assert not [asked for _, asked in sent if not asked.startswith(("file:", "chrome:", "data:", "about:"))]
    # What the page itself fetched, as the browser counts it: the document and nothing else.
    resources = chromium.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources == []
    # The charts render: every pool with pooled bands has an SVG with a drawn series, laid out with a size.
    sizes = chromium.execute_script(
        "return Array.from(document.querySelectorAll('svg.chart')).map(s => {"
        " const r = s.getBoundingClientRect(); const p = s.querySelector('path.series');"
        " return [r.width, r.height, p ? p.getBBox().height : 0]; })"
    )
    assert sizes and all(w > 600 and h > 150 and series > 20 for w, h, series in sizes), sizes
    # A screenshot of the first chart that is not blank: many colours, a good share of ink.
    chart = chromium.find_element("css selector", "svg.chart")
    chromium.execute_script("arguments[0].scrollIntoView()", chart)
    png = np.asarray(Image.open(BytesIO(chart.screenshot_as_png)).convert("RGB"))
    colours = np.unique(png.reshape(-1, 3), axis=0).shape[0]
    ink = float(np.mean(np.any(png < 235, axis=2)))
    assert colours > 20 and ink > 0.15, (colours, ink)
    blue = np.mean((png[:, :, 2] > 150) & (png[:, :, 0] < 90))  # the series' own colour
    assert blue > 0.01
    # The numbers in the page, read by the browser, equal the JSON outputs.
    items = chromium.execute_script(
        "return Array.from(document.querySelectorAll('*')).filter(e => Object.keys(e.dataset).length)"
        ".map(e => [e.tagName.toLowerCase(), Object.fromEntries(Object.entries(e.dataset).map("
        "([k, v]) => [k.replace(/[A-Z]/g, c => '-' + c.toLowerCase()), v]))])"
    )
    _assert_numbers(repo, [(tag, data) for tag, data in items])
