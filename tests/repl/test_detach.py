"""/detach: a file attached by mistake (the wrong one, one holding secrets) is dropped before
it is sent. Without it the only way out was to leave the chat: the next message, whatever
it was, took the file to the model and into the history."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import chat

from chatmem.store import Store


def sent_files(db: Path, session: str) -> list[list[str]]:
    """Each turn's attached files, as the context sent them (their quoted text)."""
    with Store(db) as store:
        turns = store.turns.turns(store.sessions.session(session).id)
    return [[m["content"] for p in turn.context["parts"] if p["kind"] == "files"
             for m in p["messages"]] for turn in turns]


def test_a_file_detached_is_not_sent_and_the_others_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "secret.env").write_text("DB_PASSWORD=hunter2-机密\n", encoding="utf-8")
    (tmp_path / "笔记.md").write_text("杭州：西湖、灵隐寺\n", encoding="utf-8")
    db = tmp_path / "h.db"
    result = chat(db, "t", ["/attach secret.env", "/attach 笔记.md", "/detach ./secret.env",
                            "去哪里？", "/attach secret.env", "/detach", "还有呢？",
                            "/detach"])
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert "detached secret.env; still attached: 笔记.md" in lines
    assert "detached secret.env; nothing is attached now" in lines
    assert lines[-1] == "nothing attached (/file PATH attaches a file to your next message)"
    first, second = sent_files(db, "t")
    assert len(first) == 1 and "西湖" in first[0] and "hunter2" not in first[0]
    assert second == []


def test_chat_f_files_can_be_detached_and_an_unknown_one_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spec.md").write_text("规格：第一版\n", encoding="utf-8")
    db = tmp_path / "h.db"
    result = chat(db, "t", ["/detach 规格.md", "/detach spec.md", "你好"], "-f", "spec.md")
    assert result.exit_code == 2
    assert ("error: /detach: 规格.md is not attached; attached to your next message: spec.md"
            in result.stderr.splitlines())
    assert "detached spec.md; nothing is attached now" in result.stderr.splitlines()
    assert sent_files(db, "t") == [[]]


def test_detach_completes_the_attached_files_not_the_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document
    from registered import open_session

    from chatmem.config.settings import Settings
    from chatmem.providers.scripted import ScriptedProvider
    from chatmem.render import make_console
    from chatmem.repl.completion import SlashCompleter
    from chatmem.repl.loop import Repl

    monkeypatch.chdir(tmp_path)
    for name in ("笔记.md", "会议 纪要.md", "not-attached.md"):
        (tmp_path / name).write_text("杭州\n", encoding="utf-8")
    with Store(tmp_path / "h.db") as store:
        repl = Repl(open_session(store, Settings(), ScriptedProvider(), "t"), make_console(),
                    make_console(stderr=True))
        repl.command("/attach 笔记.md")
        repl.command("/attach '会议 纪要.md'")

        def offered(text: str) -> list[str]:
            return [c.text for c in SlashCompleter(repl).get_completions(Document(text),
                                                                         CompleteEvent())]

        assert offered("/detach ") == ["笔记.md", "'会议 纪要.md'"]
        assert offered("/detach 笔") == ["笔记.md"]
        # A name Enter would split is read as typed, opening quote or none, as /attach's PATH.
        assert offered("/detach 会") == offered("/detach '会") == ["'会议 纪要.md'"]
        repl.command("/detach '会议 纪要.md'")  # as the menu puts it in
        assert [a.name for a in repl.attached] == ["笔记.md"]


def test_a_file_over_the_budget_on_its_own_is_refused_when_attached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It was attached, the message typed, then refused at the send and the file dropped."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "big.md").write_text("杭州西湖的游记，第一天。\n" * 300, encoding="utf-8")
    (tmp_path / "笔记.md").write_text("杭州：西湖、灵隐寺\n", encoding="utf-8")
    db = tmp_path / "h.db"
    result = chat(db, "t", ["/budget 1000", "/attach big.md", "/attach 笔记.md", "/attach",
                            "去哪里？"], "-s", "window")
    assert result.exit_code == 2, result.stderr
    lines = result.stderr.splitlines()
    refused = next(line for line in lines if line.startswith("error: big.md"))
    assert "context budget of 1,000" in refused and "not attached" in refused
    assert "/budget N" in refused
    assert "attached to your next message: 笔记.md" in lines
    [sent] = sent_files(db, "t")
    assert len(sent) == 1 and "灵隐寺" in sent[0]
    allowed = chat(db, "u", ["/budget 1000", "/attach big.md", "/detach"], "-s", "window",
                   "--allow-over-budget")
    assert allowed.exit_code == 0, allowed.stderr
    assert "detached big.md; nothing is attached now" in allowed.stderr.splitlines()
