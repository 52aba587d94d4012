"""The HTML report reads on a 390 px phone and on a 1,280 px screen (issue 21, Build 9).

Headless Chromium lays a window out no narrower than 500 px, so the report is put in an
iframe of the width under test: its media queries and layout are the phone's. The
browser screenshots the page and measures, after layout, that captions do not wrap one
word per line or run past the edge, and that chart labels are at least 10 px tall.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
from html import escape
from pathlib import Path
from typing import Any

import pytest
from test_report import BROWSER_FLAGS, browser, eval_data  # noqa: F401  (the fixture)

from chatmem.render.report import html_report

pytestmark = [
    pytest.mark.usefixtures("hash_embedder"),
    pytest.mark.skipif(browser() is None, reason="no headless Chromium here (/usr/bin/chromium; "
                                                 "Debian's chromium package)"),
]

MEASURE = """<script>addEventListener("load", () => {
  const root = document.documentElement;
  const px = v => parseFloat(v) || 0;
  const captions = [...document.querySelectorAll("caption, figcaption")].map(c => {
    const style = getComputedStyle(c), box = c.getBoundingClientRect();
    const height = box.height - px(style.paddingTop) - px(style.paddingBottom);
    return {text: c.innerText.trim(), words: c.innerText.trim().split(/\\s+/).length,
            lines: Math.round(height / px(style.lineHeight)), left: box.left,
            right: box.right, width: box.width};
  });
  const shown = [...document.querySelectorAll("figure svg[role=img]")]
    .filter(s => getComputedStyle(s).display !== "none");
  const labels = shown.flatMap(s => [...s.querySelectorAll("text")].map(
    t => px(getComputedStyle(t).fontSize) * s.getScreenCTM().a));
  parent.document.body.setAttribute("data-measured", JSON.stringify({
    scroll: root.scrollWidth, client: root.clientWidth, captions, charts: shown.length,
    labels, smallest: Math.min(...labels)}));
});</script>"""


def framed(html: str, width: int) -> str:
    """`html` in an iframe `width` px wide (srcdoc: same origin, so it can report out)."""
    inner = html.replace("</body>", MEASURE + "</body>")
    return (f'<!DOCTYPE html><html><body style="margin:0"><iframe style="border:0;'
            f'width:{width}px;height:30000px" scrolling="no" '
            f'srcdoc="{escape(inner, quote=True)}"></iframe>'
            "</body></html>")


def chromium(page: Path, width: int, profile: Path, *args: str) -> str:
    binary = browser()
    assert binary is not None
    done = subprocess.run([binary, *BROWSER_FLAGS, f"--user-data-dir={profile}",
                           f"--window-size={width},1200", "--virtual-time-budget=5000", *args,
                           page.as_uri()], capture_output=True, text=True, timeout=120,
                          check=False)
    return done.stdout + done.stderr


def measured_layout(html: str, width: int, folder: Path, name: str) -> dict[str, Any]:
    """Lay `html` out in Chromium at `width` px and read back what MEASURE found."""
    page = folder / f"{name}-{width}.html"
    page.write_text(framed(html, width), encoding="utf-8")
    output = chromium(page, width, folder / f"profile-{name}", "--dump-dom")
    found = re.search(r'data-measured="([^"]*)"', output)
    assert found, f"the browser printed no measurement: {output[-500:]}"
    measured: dict[str, Any] = json.loads(found.group(1).replace("&quot;", '"'))
    assert measured["client"] == width
    assert measured["scroll"] <= measured["client"], measured["scroll"]
    return measured


@pytest.mark.parametrize("width", [390, 1280])
def test_the_report_reads_at_a_phone_and_a_desktop_width(
        eval_data: dict[str, Any], tmp_path: Path, width: int) -> None:  # noqa: F811
    page = tmp_path / f"report-{width}.html"
    page.write_text(framed(html_report(eval_data), width), encoding="utf-8")
    shot = tmp_path / f"report-{width}.png"
    chromium(page, width, tmp_path / "profile-shot", f"--screenshot={shot}")
    header = shot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">I", header[16:20])[0] == width
    measured = measured_layout(html_report(eval_data), width, tmp_path, "dom")
    assert measured["charts"] == 2
    assert measured["smallest"] >= 10, sorted(measured["labels"])[:5]
    assert len(measured["captions"]) == 5
    for caption in measured["captions"]:
        # Not one word per line, and not cut at either edge.
        assert caption["lines"] * 3 <= max(caption["words"], 3), caption
        assert caption["left"] >= 0 and caption["right"] <= width, caption
