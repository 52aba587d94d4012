"""`/summary` in the chat REPL: the summary, its diff, any two versions, and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import chat, invoke

from chatmem.providers.scripted import RULES
from chatmem.providers.scripted_summary import extractive_summary
from chatmem.store import Store


def errors(err: str) -> list[str]:
    """The error lines; stderr also carries the banner, status lines and notices."""
    return [line for line in err.splitlines() if line.startswith("error:")]


def test_summary_shows_the_latest_version_diffed_against_the_previous(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    done = chat(db, "demo", [
        "My order is ORD-7731. It ships Friday.",
        "We fly on 2026-05-01 to Paris.",
        "/summary",
    ], "--strategy", "summary", width=160)
    assert done.exit_code == 0 and errors(done.stderr) == []
    with Store(db) as store:
        session = store.sessions.session("demo")
        ids = [m.id for m in store.history.messages(session.id)]
        assert [(s.version, s.covered_ids) for s in store.memory.summaries(session.id)] == [
            (1, ids[:2]), (2, ids[2:4])]
    panel = done.stderr.split("summary v1 → v2 (summary)", 1)[1]
    # A pipe has no colour: the diff is marked, so an added "- …" line cannot read as removed.
    assert "removed [-…-] · added [+…+] · +6 −0 words" in panel
    assert "│ - My order is ORD-7731." in panel
    assert "│ [+- We fly on 2026-05-01 to Paris.+]" in panel
    # Coverage in turns, as the notices count them, not in stored message ids.
    assert "scripted:scripted · covers turns 1–2 · " in panel


def test_summary_n_m_diffs_two_versions_and_lists_dropped_anchors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(
        RULES, "summary",
        lambda m: extractive_summary(m).replace("ORD-7731", "the order")
        .replace("五千元", "一笔钱"),
    )
    db = tmp_path / "c.db"
    done = chat(db, "demo", [
        "我们的预算是五千元。",
        "My order is ORD-7731.",
        "Thanks, that is all.",
        "/summary 1 3",
    ], "--strategy", "summary", width=160)
    assert done.exit_code == 0 and errors(done.stderr) == []
    pins = json.loads(invoke("facts", "list", "--db", str(db), "--json").stdout)
    assert [(p["kind"], p["value"], p["source"]) for p in pins] == [
        ("pinned", "五千元", "summary v1 (pinned)"), ("pinned", "ORD-7731", "summary v2 (pinned)")]
    panel = done.stderr.split("summary v1 → v3 (summary)", 1)[1]
    assert "- 我们的预算是一笔钱。" in panel
    assert "[+- My order is the order.+]" in panel
    assert "[+- Thanks, that is all.+]" in panel
    assert "removed [-…-] · added [+…+] · +9 −0 words" in panel
    # The panel lists what the newer version dropped (v3 dropped nothing new).
    assert "dropped by the summarizer" not in panel


def test_summary_of_one_version_lists_what_it_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(RULES, "summary",
                        lambda m: extractive_summary(m).replace("ORD-7731", "the order"))
    done = chat(tmp_path / "c.db", "demo", ["Hello.", "My order is ORD-7731.", "/summary 2"],
                "--strategy", "summary", width=160)
    assert done.exit_code == 0 and errors(done.stderr) == []
    assert done.stdout == "echo #1: Hello.\necho #2: My order is ORD-7731.\n"
    panel = done.stderr.split("summary v1 → v2 (summary)", 1)[1]
    assert "dropped by the summarizer (kept verbatim as pinned facts since v2):" in panel
    assert "• ORD-7731" in panel


@pytest.mark.parametrize(("command", "message", "exit_code"), [
    ("/summary x", "error: /summary: version must be a whole number, got 'x'", 2),
    ("/summary 0", "error: /summary: versions start at 1, got '0'", 2),
    ("/summary 1 2 3", "error: /summary: unexpected argument '3'; usage: /summary [N [M]], "
                       "e.g. /summary 2 4", 2),
    ("/summary 9", "error: no summary version 9 in session 'demo' (summary has v1–v1)", 1),
])
def test_bad_versions_are_one_line_errors_and_the_chat_goes_on(
    tmp_path: Path, command: str, message: str, exit_code: int,
) -> None:
    db = tmp_path / "c.db"
    done = chat(db, "demo", ["hello", command, "/summary"], "--strategy", "summary", width=160)
    # Piped lines are a script: the chat goes on, and the exit code reports the error.
    assert done.exit_code == exit_code
    assert errors(done.stderr) == [message]
    with Store(db) as store:
        summary = store.memory.summaries(store.sessions.session("demo").id)[-1].text
    # The next command still ran and showed it.
    assert summary in done.stderr.split(message, 1)[1]
    assert done.stdout == "echo #1: hello\n"


def test_summary_without_a_summary_strategy_says_how_to_get_one(tmp_path: Path) -> None:
    done = chat(tmp_path / "c.db", "demo", ["hello", "/summary"], "--strategy", "window",
                width=160)
    assert done.exit_code == 1
    assert errors(done.stderr) == [
        "error: no summary in session 'demo': the strategy 'window' keeps none"
        " (try /strategy summary-buffer)"
    ]


def test_summary_before_the_first_summary_is_written(tmp_path: Path) -> None:
    done = chat(tmp_path / "c.db", "demo", ["/summary"], "--strategy", "summary-buffer",
                width=160)
    assert done.exit_code == 1
    assert errors(done.stderr) == [
        "error: no summary yet in session 'demo' (summary-buffer); one is written after"
        " the first turn it summarizes"
    ]
