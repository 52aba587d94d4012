"""REPL rough edges a daily user met: what the toolbar claims, replies of forked and imported
sessions, repeated attachments, /remember's halves, /sessions at 40 columns, a strategy
switch that makes the next context huge, and counts worded as counts."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_runner import chat, invoke
from registered import open_session
from rich.cells import cell_len

from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render import make_console
from chatmem.repl.loop import Repl
from chatmem.repl.prompt import toolbar_text
from chatmem.store import Store
from chatmem.tokens import counter_for_model


class UnknownTokenizer(ScriptedProvider):
    """A model chatmem has no tokenizer for: its counts are cl100k_base's, approximately."""

    def __init__(self) -> None:
        super().__init__(model="some-local-model")
        self._counter = counter_for_model("some-local-model")


def test_the_toolbar_marks_an_approximate_count_as_the_token_line_does(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    settings = Settings(system="简短回答。")
    with Store(db) as store:
        repl = Repl(open_session(store, settings, UnknownTokenizer(), "杭州", strategy="window"),
                    make_console(), make_console(stderr=True))
        repl.turn("我们五月去杭州")
        tokens = repl.last.record.estimated_tokens if repl.last else None
        assert f"last context ≈{tokens:,} / 4,000 tokens" in toolbar_text(repl)
    with Store(db) as store:  # read back from the stored turn, after a restart
        restarted = Repl(open_session(store, settings, UnknownTokenizer(), "杭州"),
                         make_console(), make_console(stderr=True))
        assert f"last context ≈{tokens:,} / 4,000 tokens" in toolbar_text(restarted)
        exact = Repl(open_session(store, settings, ScriptedProvider(), "杭州"),
                     make_console(), make_console(stderr=True))
        exact.turn("住哪里？")
        assert "last context ≈" not in toolbar_text(exact)
        assert "last context " in toolbar_text(exact)


def clipboard_config(tmp_path: Path) -> tuple[Path, Path]:
    """A config whose clipboard_command writes to a file the test reads: (config, clipboard)."""
    clip, tool = tmp_path / "clipboard.txt", tmp_path / "clip.sh"
    tool.write_text(f"#!/bin/sh\ncat > '{clip}'\n", encoding="utf-8")
    tool.chmod(0o755)
    config = tmp_path / "config.toml"
    config.write_text(f'clipboard_command = "{tool}"\n', encoding="utf-8")
    return config, clip


def test_copy_in_a_forked_session_copies_the_reply_its_messages_hold(tmp_path: Path) -> None:
    config, clip = clipboard_config(tmp_path)
    db = tmp_path / "h.db"
    result = chat(db, "u1", ["我们五月去杭州", "住哪里？", "/undo u2", "/copy"],
                  "--config", str(config))
    assert result.exit_code == 0, result.stderr
    assert clip.read_text(encoding="utf-8") == "echo #1: 我们五月去杭州"


def test_an_imported_session_shows_its_turns_and_copies_its_last_reply(tmp_path: Path) -> None:
    config, clip = clipboard_config(tmp_path)
    db, transcript = tmp_path / "h.db", tmp_path / "big.jsonl"
    transcript.write_text("".join(
        json.dumps({"role": role, "content": f"{role} 第{n}轮"}, ensure_ascii=False) + "\n"
        for n in range(1, 1_201) for role in ("user", "assistant")), encoding="utf-8")
    invoke("sessions", "import", str(transcript), "--name", "big", "--db", str(db), code=0)
    result = chat(db, "big", ["/copy"], "--config", str(config))
    assert result.exit_code == 0, result.stderr
    assert clip.read_text(encoding="utf-8") == "assistant 第1200轮"
    with Store(db) as store:
        repl = Repl(open_session(store, Settings(), ScriptedProvider(), "big"),
                    make_console(), make_console(stderr=True))
        assert toolbar_text(repl).endswith(" · 1,200 turns, no context sent yet ")
        repl.turn("还记得吗？")
        assert " · last context " in toolbar_text(repl)
    # A last turn with no reply says so, by its number.
    transcript.write_text(json.dumps({"role": "user", "content": "只有问题"},
                                     ensure_ascii=False) + "\n", encoding="utf-8")
    invoke("sessions", "import", str(transcript), "--name", "ask", "--db", str(db), code=0)
    result = chat(db, "ask", ["/copy"], "--config", str(config))
    assert result.exit_code == 2
    assert "error: /copy: turn 1 has no reply" in result.stderr


def test_a_file_attached_twice_goes_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "笔记.md").write_text("杭州：西湖、灵隐寺\n", encoding="utf-8")
    db = tmp_path / "h.db"
    result = chat(db, "t", ["/file 笔记.md", f"/file {tmp_path / '笔记.md'}", "/attach ./笔记.md",
                            "/file", "去哪里？"])
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert sum(line.startswith("attached 笔记.md (about ") for line in lines) == 1
    assert lines.count("笔记.md is attached already; it goes with your next message once") == 2
    assert "attached to your next message: 笔记.md" in lines
    with Store(db) as store:
        [turn] = store.turns.turns(store.sessions.session("t").id)
        [files] = [p for p in turn.context["parts"] if p["kind"] == "files"]
    assert files["reason"]["count"] == 1 and len(files["messages"]) == 1


def test_remember_refuses_a_key_or_a_value_alone(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    result = chat(db, "t", ["/remember city:", "/remember : value", "/remember 城市：",
                            "/remember =杭州", "/remember 城市： 杭州"])
    assert result.exit_code == 2
    # The app's refusal, the one MCP's remember gives too.
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert errors == [
        "error: nothing to remember: 'city:' has no value; give both, KEY: VALUE",
        "error: nothing to remember: ': value' has no key; give both, KEY: VALUE",
        "error: nothing to remember: '城市：' has no value; give both, KEY: VALUE",
        "error: nothing to remember: '=杭州' has no key; give both, KEY: VALUE"]
    with Store(db) as store:
        facts = store.facts.facts(session_id=store.sessions.session("t").id)
        assert [(f.key, f.value) for f in facts] == [("城市", "杭州")]


def imported_long(tmp_path: Path, name: str, turns: int) -> Path:
    """The history holding session `name` of `turns` turns, imported: counts past a thousand."""
    db, transcript = tmp_path / "h.db", tmp_path / "big.jsonl"
    transcript.write_text("".join(
        json.dumps({"role": role, "content": f"第{n}轮"}, ensure_ascii=False) + "\n"
        for n in range(1, turns + 1) for role in ("user", "assistant")), encoding="utf-8")
    invoke("sessions", "import", str(transcript), "--name", name, "--db", str(db), code=0)
    return db


def test_sessions_fits_a_narrow_terminal_with_counts_grouped(tmp_path: Path) -> None:
    db = imported_long(tmp_path, "杭州之旅", 1_500)
    for width in (40, 60, 100):
        result = chat(db, "杭州之旅", ["/sessions"], width=width)
        assert result.exit_code == 0, result.stderr
        lines = result.stderr.splitlines()[1:]  # after the banner
        assert all(cell_len(line.rstrip()) <= width for line in lines), (width, lines)
        shown = " ".join(lines)
        assert "3,000" in shown and "1,500" in shown and "杭州之旅" in shown
        assert "…" not in shown, (width, lines)
        assert any(line.split()[:2] == ["*", "杭州之旅"] for line in lines), lines


def test_counts_read_as_counts_and_a_pasted_path_is_told_how_to_send(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from chatmem.cli.completion import session_names
    from chatmem.repl.completion import SlashCompleter

    db = imported_long(tmp_path, "大会话", 3_002)
    assert chat(db, "一轮", ["你好"]).exit_code == 0
    with Store(db) as store:
        repl = Repl(open_session(store, Settings(), ScriptedProvider(), "新"),
                    make_console(), make_console(stderr=True))
        offered = {c.text: c.display_meta_text for c in SlashCompleter(repl).get_completions(
            Document("/switch "), CompleteEvent())}
    assert offered == {"大会话": "window · 3,002 turns", "一轮": "window · 1 turn"}
    shell = dict(session_names(SimpleNamespace(params={"db": str(db), "config": None}), ""))
    assert shell == {"大会话": "window · 3,002 turns", "一轮": "window · 1 turn",
                     "新": "window · 0 turns"}
    result = chat(db, "一轮", ["/switch 大会话", "/usr/local/bin 里有什么？", "/strat"])
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert "switched to session 大会话 · window k=5 · 3,002 turns" in result.stderr.splitlines()
    assert errors == [
        "error: unknown command /usr/local/bin; /help lists them, and a message that opens "
        "with / starts with // (//usr/local/bin …)",
        "error: unknown command /strat; did you mean /strategy? /help lists them"]


def test_a_switch_that_puts_the_next_context_over_budget_says_so_before_sending(
        tmp_path: Path) -> None:
    db, transcript = tmp_path / "h.db", tmp_path / "long.jsonl"
    transcript.write_text("".join(
        json.dumps({"role": role, "content": f"第{n}轮：我们讨论了杭州的行程和预算"},
                   ensure_ascii=False) + "\n"
        for n in range(1, 301) for role in ("user", "assistant")), encoding="utf-8")
    invoke("sessions", "import", str(transcript), "--name", "长", "--db", str(db), code=0)
    result = chat(db, "长", ["/strategy buffer", "/tokens", "还记得吗？"], "--strategy", "window")
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    at = lines.index("strategy: buffer")
    warned = lines[at + 1]
    assert warned.startswith("the next context is ") and warned.endswith(
        " tokens before your message, over the budget of 4,000: the next turn sends it so "
        "(/tokens shows it by part; another /strategy keeps within it)")
    # The figure is what /tokens shows for an empty input.
    tokens = warned.removeprefix("the next context is ").split()[0]
    assert f"= {tokens} tokens of 4,000" in lines[at + 2]
    # Within the budget, a switch says only what it switched to.
    result = chat(db, "短", ["你好", "/strategy buffer", "/strategy window"])
    assert [line for line in result.stderr.splitlines() if line.startswith("strategy")] == [
        "strategy: buffer", "strategy: window k=5"]
    assert "over the budget" not in result.stderr


def test_attach_of_an_endless_device_is_refused_and_the_chat_goes_on(tmp_path: Path) -> None:
    """`/attach /dev/zero` read until the REPL was killed."""
    db = tmp_path / "h.db"
    result = chat(db, "t", ["/attach /dev/zero", "你好"])
    assert result.exit_code == 2  # a piped script's failed command says so at the end
    assert ("/dev/zero: more than 1,000.0 KiB of text, far more than a context budget of "
            "4,000 tokens can hold; nothing was sent (--allow-over-budget sends it anyway)"
            ) in result.stderr
    with Store(db) as store:
        [turn] = store.turns.turns(store.sessions.session("t").id)  # the chat went on
        assert not [p for p in turn.context["parts"] if p["kind"] == "files"]


def test_a_piped_line_past_what_the_budget_holds_ends_the_chat_in_one_line(
        tmp_path: Path) -> None:
    """`chatmem chat < /dev/zero` read one endless line until out of memory."""
    db = tmp_path / "h.db"
    result = invoke("chat", "t", "--db", str(db), "--provider", "scripted",
                    input="你好\n" + "x" * 1_024_001 + "\nnever read\n")
    assert result.exit_code == 2
    assert result.stderr.endswith(
        "error: standard input:2: more than 1,000.0 KiB of text, far more than a context "
        "budget of 4,000 tokens can hold; nothing was sent (--allow-over-budget sends it "
        "anyway)\n")
    with Store(db) as store:
        assert len(store.turns.turns(store.sessions.session("t").id)) == 1  # the one before


def test_tokens_counts_the_files_attached_to_the_next_message(tmp_path: Path,
                                                              monkeypatch) -> None:
    # /tokens is what the next turn would cost: it left out the files /attach holds for it
    # (36 tokens shown, then 387 sent with a text file and an image).
    monkeypatch.chdir(tmp_path)
    (tmp_path / "笔记.md").write_text("杭州：西湖、灵隐寺\n" * 20, encoding="utf-8")
    db = tmp_path / "h.db"
    result = chat(db, "t", ["你好", "/attach 笔记.md", "/tokens 去哪里？", "去哪里？"],
                  "--strategy", "buffer")
    assert result.exit_code == 0, result.stderr
    # The preview's token line is the one without the provider's count (no call was made).
    [line] = [line for line in result.stderr.splitlines()
              if " tokens of " in line and "provider reported" not in line]
    previewed = int(re.search(r"= ([\d,]+) tokens", line)[1].replace(",", ""))  # type: ignore[index]
    with Store(db) as store:
        turns = store.turns.turns(store.sessions.session("t").id)
    assert previewed == turns[-1].estimated_tokens


def test_a_message_refused_over_the_budget_says_its_files_are_no_longer_attached(
        tmp_path: Path) -> None:
    """Two files attached, the message refused over the budget: both were let go unsaid,
    and the next message ("just the notes then") went without the notes too."""
    db, big, notes = tmp_path / "h.db", tmp_path / "big.txt", tmp_path / "笔记.txt"
    big.write_text("word " * 3900, encoding="utf-8")  # fits alone, not with the rest
    notes.write_text("我们五月去杭州。\n", encoding="utf-8")
    result = chat(db, "t", [f"/attach {big}", f"/attach {notes}", "sum up", "/attach"])
    refused = [line for line in result.stderr.splitlines() if "not sent" in line]
    assert len(refused) == 1 and refused[0].endswith(
        "; its files are no longer attached (/attach again those to send)")
    assert result.stderr.splitlines()[-1].startswith("nothing attached")
    plain = chat(db, "t", ["x " * 4500])  # no file: nothing to say of files
    assert "no longer attached" not in plain.stderr and "not sent" in plain.stderr


def test_the_toolbar_shows_the_budget_the_config_sets_now(tmp_path: Path) -> None:
    """context_budget lowered in the config after a session's last turn: the restarted
    REPL's toolbar kept that turn's `/ 4,000` until the next turn, which is built to 2,000."""
    db = tmp_path / "t.db"
    with Store(db) as store:
        repl = Repl(open_session(store, Settings(), ScriptedProvider(), "杭州", strategy="window"),
                    make_console(), make_console(stderr=True))
        repl.turn("我们五月去杭州")
        assert " / 4,000 tokens" in toolbar_text(repl)
    for budget in (2000, 8000):
        with Store(db) as store:
            restarted = Repl(open_session(store, Settings(context_budget=budget),
                                          ScriptedProvider(), "杭州"),
                             make_console(), make_console(stderr=True))
            assert f" / {budget:,} tokens" in toolbar_text(restarted)
