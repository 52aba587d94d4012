"""The HTML report of `eval DIR`: a row per strategy over the folder, a row per transcript,
the folder's row last; built from the --json object, readable on a phone and a desktop."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke
from test_report import browser
from test_report_phone import measured_layout

from chatmem.evaluation.scoring import lower_recall
from chatmem.render.cells import number, recall_cell
from chatmem.render.corpus_report import corpus_report

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
STRATEGIES = ("window:k=2", "retrieval")
pytestmark = pytest.mark.usefixtures("hash_embedder")  # about the page, not ranking


class Rows(HTMLParser):
    """Each table's rows: the row header's text, then each cell's (data-label, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[tuple[str, list[tuple[str | None, str]]]]] = []
        self.h2: list[str] = []
        self.items: list[str] = []
        self._where: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self.tables.append([])
        elif tag == "th" and found.get("scope") == "row":
            self.tables[-1].append(("", []))
            self._where = "row"
        elif tag == "td" and self.tables and self.tables[-1]:
            self.tables[-1][-1][1].append((found.get("data-label"), ""))
            self._where = "cell"
        elif tag in ("h2", "li"):
            (self.h2 if tag == "h2" else self.items).append("")
            self._where = tag

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "td", "h2", "li"):
            self._where = None

    def handle_data(self, data: str) -> None:
        if self._where == "row":
            label, cells = self.tables[-1][-1]
            self.tables[-1][-1] = (label + data, cells)
        elif self._where == "cell":
            label, text = self.tables[-1][-1][1][-1]
            self.tables[-1][-1][1][-1] = (label, text + data)
        elif self._where == "h2":
            self.h2[-1] += data
        elif self._where == "li":
            self.items[-1] += data


def rows_of(html: str) -> Rows:
    parsed = Rows()
    parsed.feed(html)
    return parsed


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two transcripts, one with a Chinese name, and a file that is not a transcript."""
    path = tmp_path_factory.mktemp("corpus")
    shutil.copy(SESSIONS / "support.jsonl", path / "support.jsonl")
    shutil.copy(SESSIONS / "travel-zh.jsonl", path / "旅行.jsonl")
    (path / "zz-broken.jsonl").write_text('{"role": "user"\n', encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run(folder: Path, tmp_path_factory: pytest.TempPathFactory,
        hash_embedder: Path) -> tuple[dict[str, Any], str, int]:
    """`eval DIR --json --report`: the JSON, the page written, the exit code."""
    page = tmp_path_factory.mktemp("report") / "corpus.html"
    args = ["eval", str(folder), "--jobs", "1", "--provider", "scripted", "--json",
            "--report", str(page)]
    for spec in STRATEGIES:
        args += ["-s", spec]
    result = invoke(*args)
    assert f"wrote {page}" in result.stderr.replace("\n", "")
    return json.loads(result.stdout), page.read_text(encoding="utf-8"), result.exit_code


def recall_text(value: float | None) -> str:
    return "—" if value is None else recall_cell(value)[0]


def test_the_page_is_the_json_and_the_broken_file_is_named(
        run: tuple[dict[str, Any], str, int]) -> None:
    data, html, code = run
    assert code == 2  # one file could not be evaluated: the others are still reported
    assert html == corpus_report(data)
    parsed = rows_of(html)
    assert parsed.h2 == ["Every transcript together", "Recall against cost", "Each transcript",
                         "Not evaluated (1)"]
    [error] = data["errors"]
    assert parsed.items[-1] == f"zz-broken.jsonl: {error['error']}"


def test_a_row_per_strategy_over_the_folder(run: tuple[dict[str, Any], str, int]) -> None:
    data, html, _ = run
    totals = rows_of(html).tables[0]
    assert [label.strip() for label, _ in totals] == ["window k=2", "retrieval"]
    for (_, cells), row in zip(totals, data["aggregate"], strict=True):
        assert dict(cells) == {
            "files": "2", "probes": number(row["probes"]),
            "id recall": recall_text(row["id_recall"]),
            "text recall": recall_text(row["text_recall"]),
            "mean recall": recall_text(row["mean_recall"]),
            "context mean": number(row["context_tokens"]["mean"], 1),
            "context max": number(row["context_tokens"]["max"]),
            "turn mean": number(row["prompt_tokens_mean"], 1)}
    assert sum(t["probes"] for t in data["transcripts"]) == data["aggregate"][0]["probes"]


def test_a_row_per_transcript_then_the_folders(run: tuple[dict[str, Any], str, int]) -> None:
    data, html, _ = run
    each = rows_of(html).tables[1]
    assert [label for label, _ in each] == ["support.jsonl · support", "旅行.jsonl · travel-zh",
                                            "all 2"]
    for (_, cells), transcript in zip(each[:-1], data["transcripts"], strict=True):
        expected = {"turns": number(transcript["turns"]),
                    "probes": number(transcript["probes"])}
        for strategy in transcript["strategies"]:
            result = strategy["eval"]
            expected[strategy["strategy"]["label"]] = (
                f"{recall_text(lower_recall(result['id_recall'], result['text_recall']))}"
                f" · {number(result['context_tokens']['mean'], 1)}")
        assert dict(cells) == expected
    _, folder_row = each[-1]
    assert dict(folder_row) == {
        "turns": number(sum(t["turns"] for t in data["transcripts"])),
        "probes": number(data["aggregate"][0]["probes"]),
        **{row["label"]: f"{recall_text(lower_recall(row['id_recall'], row['text_recall']))}"
                         f" · {number(row['context_tokens']['mean'], 1)}"
           for row in data["aggregate"]}}


def test_an_interrupted_run_says_so_and_markup_in_names_is_text() -> None:
    data = {"command": "eval", "source": "<b>dir</b>", "files": 3, "complete": False,
            "transcripts": [], "errors": [], "aggregate": []}
    html = corpus_report(data)
    assert "0 of 3 transcripts evaluated" in html and "stopped before the end" in html
    assert "&lt;b&gt;dir&lt;/b&gt;" in html and "<b>dir</b>" not in html
    assert rows_of(html).tables == []


@pytest.mark.skipif(browser() is None, reason="no headless Chromium here (/usr/bin/chromium)")
@pytest.mark.parametrize("width", [390, 1280])
def test_the_folder_report_reads_at_a_phone_and_a_desktop_width(
        run: tuple[dict[str, Any], str, int], tmp_path: Path, width: int) -> None:
    _, html, _ = run
    measured = measured_layout(html, width, tmp_path, "corpus")
    assert measured["charts"] == 1
    assert measured["smallest"] >= 10
    assert len(measured["captions"]) == 3
    for caption in measured["captions"]:
        assert caption["lines"] * 3 <= max(caption["words"], 3), caption
        assert caption["left"] >= 0 and caption["right"] <= width, caption


def test_a_bidi_override_in_a_title_a_probe_or_a_file_name_is_shown_not_obeyed(
        tmp_path: Path, hash_embedder: Path) -> None:
    # U+202E would make the browser draw what follows it reversed: "lmth.jsonl" as
    # "lnosj.html". Every human output shows it as the terminal does, \u202e.
    folder = tmp_path / "corpus"
    folder.mkdir()
    lines = [{"chatmem": 1, "title": "标题 \u202eRLO"},
             {"role": "user", "content": "我的会员号是VIP-1001。", "id": "u1"},
             {"role": "assistant", "content": "记下了。", "id": "a1"},
             {"probe": "会员号是多少？\u202e<i>反</i>", "expect_text": ["VIP-1001"]}]
    transcript = folder / "\u202elmth.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                          encoding="utf-8")
    one, every = tmp_path / "one.html", tmp_path / "every.html"
    invoke("eval", str(transcript), "-s", "buffer", "--report", str(one), code=0)
    invoke("eval", str(folder), "-s", "buffer", "--jobs", "1", "--report", str(every), code=0)
    for page in (one.read_text(encoding="utf-8"), every.read_text(encoding="utf-8")):
        assert "\u202e" not in page
        assert "标题 \\u202eRLO" in page
    assert "会员号是多少？\\u202e&lt;i&gt;反&lt;/i&gt;" in one.read_text(encoding="utf-8")
    assert "\\u202elmth.jsonl" in every.read_text(encoding="utf-8")
