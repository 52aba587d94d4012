"""The HTML report of replay and eval: self-contained, reflowing, every strategy shown.

With a headless Chromium on the machine (Debian's `chromium`; .ci/run installs it
when it can) the page is laid out by a real browser at 1,000 px and at a phone's
width and must not scroll sideways. Without one, the same promises are checked
on the DOM the report builds.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke

from chatmem.render.report import html_report
from chatmem.render.report_charts import nice_top

ROOT = Path(__file__).resolve().parents[2]
TRAVEL = str(ROOT / "sessions" / "travel-zh.jsonl")
STRATEGIES = ["buffer", "window:k=2", "tokens:max_tokens=600", "summary-buffer:max_tokens=800",
              "entity", "retrieval", "summary-buffer+retrieval", "window+entity"]
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


pytestmark = pytest.mark.usefixtures("hash_embedder")  # about the page, not ranking


@pytest.fixture(scope="module")
def eval_data(hash_embedder: Path) -> dict[str, Any]:
    args = ["eval", TRAVEL, "--json"]
    for spec in STRATEGIES:
        args += ["-s", spec]
    result = invoke(*args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


class Page(HTMLParser):
    """The parts of a page the assertions look at."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.row_labels: list[str] = []
        self.text: list[str] = []
        self._in_row_header = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "th" and dict(attrs).get("scope") == "row":
            self._in_row_header = True
            self.row_labels.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "th":
            self._in_row_header = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_row_header:
            self.row_labels[-1] += data


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def labels(data: dict[str, Any]) -> list[str]:
    return [s["strategy"]["label"] for s in data["strategies"]]


def test_the_page_is_self_contained_and_names_its_tokenizer(eval_data: dict[str, Any]) -> None:
    html = html_report(eval_data)
    page = parse(html)
    assert html.startswith("<!DOCTYPE html>")
    names = {tag for tag, _ in page.tags}
    assert {"script", "link", "img", "iframe", "pre"}.isdisjoint(names)
    assert not any(k in ("src", "href") for _, attrs in page.tags for k in attrs)
    assert "url(" not in html and "@import" not in html
    assert "Counted with tokenizer <b>cl100k_base</b> (exact)" in html
    assert "<title>chatmem eval of " in html


def test_every_strategy_is_in_every_table_and_both_charts(eval_data: dict[str, Any]) -> None:
    page = parse(html_report(eval_data))
    names = labels(eval_data)
    # the recall table and the cost table each have one row per strategy, in order
    assert page.row_labels == names + names
    svgs = [attrs for tag, attrs in page.tags if tag == "svg" and attrs.get("role") == "img"]
    # recall against cost, tokens per turn: each drawn for a wide screen and for a phone
    assert [(a["class"], a["viewbox"]) for a in svgs] == [
        ("wide", "0 0 760 300"), ("narrow", "0 0 400 300")] * 2
    polylines = [attrs for tag, attrs in page.tags if tag == "polyline"]
    assert len(polylines) == 2 * len(names)
    # each line has as many points as the strategy has turns
    for line, data in zip(polylines, eval_data["strategies"] * 2, strict=True):
        assert len((line["points"] or "").split()) == data["turns"] == 60


def test_chinese_text_and_markup_in_values_are_escaped_not_interpreted() -> None:
    run = {"strategy": {"name": "window", "params": {}, "label": "窗口 <b>"}, "turns": 1,
           "prompt_tokens": {"total": 5, "mean": 5.0, "max": 5, "per_turn": [5]},
           "strategy_model_calls": 0, "summary_versions": 0, "facts": 0, "pinned": 0,
           "notices": ["摘要 </li><script>"],
           "eval": {"probes": 1, "id_recall": None, "text_recall": 1.0, "answer_recall": None,
                    "context_tokens": {"mean": 5.0, "max": 5},
                    "per_probe": [{"question": "我们的预算是多少？<i>", "after_turn": 1,
                                   "expect_ids": [], "found_ids": [],
                                   "expect_text": ["两万元"], "found_text": ["两万元"],
                                   "tokens": 5}]}}
    data = {"command": "eval", "source": "a<b>.jsonl", "title": "旅行", "turns": 1, "probes": 1,
            "keep_replies": True, "strategies": [run],
            "tokenizer": {"name": "cl100k_base", "exact": False, "recorded": None,
                          "note": "no tokenizer was recorded: counts use cl100k_base"}}
    html = html_report(data)
    assert "<script" not in html and "<i>" not in html and "<b>.jsonl" not in html
    assert "窗口 &lt;b&gt;" in html and "我们的预算是多少？&lt;i&gt;" in html and "旅行" in html
    assert "(approximate): no tokenizer was recorded" in html


def test_the_page_reflows_follows_the_colour_scheme_and_prints(eval_data: dict[str, Any]) -> None:
    html = html_report(eval_data)
    page = parse(html)
    tables = [attrs for tag, attrs in page.tags if tag == "table"]
    assert tables and all(attrs.get("class") == "reflow" for attrs in tables)
    # narrow screens turn rows into labelled blocks rather than scrolling sideways
    assert re.search(r"@media \(max-width: [\d.]+rem\) \{\s*table\.reflow thead", html)
    assert all(attrs.get("data-label") for tag, attrs in page.tags if tag == "td")
    assert "@media (prefers-color-scheme: dark)" in html and "@media print" in html
    # nothing has a fixed pixel width that could overflow a window
    assert not re.search(r"width:\s*\d{3,}px", html)
    assert all("width" not in attrs for tag, attrs in page.tags if tag in ("table", "td", "th"))


def test_axis_maxima_are_round_and_cover_the_data() -> None:
    assert nice_top(3493) == (4000, 1000)
    assert nice_top(0.8) == (0.8, 0.2)
    assert nice_top(0) == (1.0, 0.25)
    top, step = nice_top(107_434)
    assert top >= 107_434 and 4 <= top / step <= 6


# -- in a real browser ---------------------------------------------------------------

MEASURE = """<script>addEventListener("load", () => {
  const root = document.documentElement;
  document.body.setAttribute("data-measured", JSON.stringify({
    scroll: root.scrollWidth, client: root.clientWidth,
    rows: [...document.querySelectorAll("th[scope=row]")].map(e => e.innerText.trim()),
    visible: [...document.querySelectorAll("figure > svg")]
      .filter(e => getComputedStyle(e).display !== "none")
      .map(e => e.getBoundingClientRect().width)
  }));
});</script>"""


def browser() -> str | None:
    return next((found for name in ("chromium", "chromium-browser", "google-chrome")
                 if (found := shutil.which(name))), None)


def measure(html: str, width: int, tmp_path: Path) -> dict[str, Any]:
    """Lay the page out in headless Chromium at `width` px and read what the layout gave."""
    binary = browser()
    assert binary is not None
    page = tmp_path / f"report-{width}.html"
    page.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    result = subprocess.run(
        [binary, *BROWSER_FLAGS, f"--user-data-dir={tmp_path / f'profile-{width}'}",
         f"--window-size={width},900", "--virtual-time-budget=5000", "--dump-dom",
         page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r'data-measured="([^"]*)"', result.stdout)
    assert found, f"the browser printed no measurement: {result.stderr[-500:]}"
    return json.loads(found.group(1).replace("&quot;", '"'))  # type: ignore[no-any-return]


@pytest.mark.skipif(browser() is None, reason="no headless Chromium here; the DOM tests above "
                                              "check the same promises")
@pytest.mark.parametrize("width", [1000, 500])
def test_in_a_browser_nothing_overflows_and_every_strategy_shows(
        eval_data: dict[str, Any], tmp_path: Path, width: int) -> None:
    measured = measure(html_report(eval_data), width, tmp_path)
    assert measured["scroll"] <= measured["client"], measured
    assert measured["rows"] == labels(eval_data) * 2
    # the charts fill the column instead of keeping a fixed size
    assert all(0 < w <= measured["client"] for w in measured["visible"])
    assert len(measured["visible"]) == 2
