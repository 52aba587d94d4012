"""The interactive prompt, driven through prompt-toolkit's pipe input as a person types.

Completion, multi-line input, Up-arrow history after a restart, the toolbar,
and no history file outside the database.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli_runner import invoke
from prompt_toolkit import PromptSession
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from registered import open_session
from waiting import HANG

from chatmem.config.settings import Settings
from chatmem.embeddings import Embedder
from chatmem.errors import UsageError
from chatmem.memory.vector_backlog import IndexingStatus
from chatmem.privacy.mentions import MARKER
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render import make_console
from chatmem.render.toolbar import indexing_text
from chatmem.repl.blocks import join_blocks
from chatmem.repl.loop import Repl
from chatmem.repl.prompt import TOOLBAR_REFRESH_SECONDS, Prompt, toolbar_text
from chatmem.repl.table import split_closed, split_words
from chatmem.store import Store

UP, DOWN, TAB, ESC_ENTER = "\x1b[A", "\x1b[B", "\t", "\x1b\r"


@pytest.fixture
def tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)


Wait = Callable[[PromptSession[str]], bool]


def shows(text: str) -> Wait:
    """The line being edited reads `text`."""
    return lambda session: session.default_buffer.text == text


def menu(text: str) -> Wait:
    """The line reads `text` and the completion menu is open."""
    return lambda session: shows(text)(session) and (
        session.default_buffer.complete_state is not None)


def fresh_prompt(session: PromptSession[str]) -> bool:
    """A new, empty prompt with the history loaded: what a person sees before pressing Up.

    Only after a line that was not empty: the last prompt keeps its text once it has sent
    it, and the first prompt reads empty before it has taken the keys typed into it.
    """
    return session.default_buffer.text == "" and bool(session.history.get_strings())


@contextmanager
def typing(repl: Repl, *steps: str | Wait) -> Iterator[Iterator[str]]:
    """The lines the REPL reads while a person types `steps` at its prompt.

    A step is keys to type, or something to wait for (with a timeout, never a
    fixed sleep) before typing on, as a person waits for the completion menu or
    for the history to show.
    """
    with create_pipe_input() as typed, create_app_session(input=typed, output=DummyOutput()):
        repl.prompt_output = DummyOutput()
        failures: list[str] = []

        def type_steps() -> None:
            for step in steps:
                if isinstance(step, str):
                    typed.send_text(step)
                elif not wait_for(repl, step):
                    shown = repl.prompt.session.default_buffer.text if (
                        repl.prompt and repl.prompt.session) else None
                    failures.append(f"timed out at step {steps.index(step)}; the line read "
                                    f"{shown!r}")
                    typed.send_text("\r")

        thread = threading.Thread(target=type_steps, daemon=True)
        thread.start()
        yield repl.lines()
        thread.join(timeout=HANG)
        assert failures == []


def wait_for(repl: Repl, ready: Wait) -> bool:
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        prompt = repl.prompt
        if prompt is not None and prompt.session is not None and ready(prompt.session):
            return True
        time.sleep(0.01)
    return False


def make_repl(db: Path, session: str = "t", strategy: str = "window") -> tuple[Store, Repl]:
    store = Store(db)
    engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), session,
                          strategy=strategy)
    return store, Repl(engine, make_console(), make_console(stderr=True))


def backlog_repl(db: Path, embedder: Embedder) -> tuple[Store, Repl]:
    """A REPL over a `retrieval` session of 600 imported messages (602 to embed after its
    first turn), recalling by `embedder`'s vectors."""
    store = Store(db)
    engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "t",
                          strategy="retrieval", embedder=embedder)
    store.history.import_messages(engine.session.id, [
        {"role": role, "content": f"{role} {n}: 第{n}次 the ferry timetable"}
        for n in range(300) for role in ("user", "assistant")])
    return store, Repl(engine, make_console(), make_console(stderr=True))


def test_tab_completes_a_slash_command(tmp_path: Path, tty: None) -> None:
    store, repl = make_repl(tmp_path / "c.db")
    with store, typing(repl, "/str", menu("/str"), TAB, shows("/strategy"), "\r") as lines:
        assert next(lines) == "/strategy"


def test_tab_completes_strategy_names_parameters_and_sessions(tmp_path: Path, tty: None) -> None:
    store, repl = make_repl(tmp_path / "c.db")
    store.sessions.create_session("trip-b", "window")
    with store, typing(repl, "/strategy summary-b", menu("/strategy summary-b"), TAB,
                       shows("/strategy summary-buffer"), "\r",
                       "/strategy window ", menu("/strategy window "), TAB,
                       shows("/strategy window k="), "3\r",
                       "/switch tri", menu("/switch tri"), TAB, shows("/switch trip-b"),
                       "\r") as lines:
        assert next(lines) == "/strategy summary-buffer"
        assert next(lines) == "/strategy window k=3"
        assert next(lines) == "/switch trip-b"


def test_completion_menu_entries_carry_one_line_of_help(tmp_path: Path) -> None:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from chatmem.repl.completion import SlashCompleter

    store, repl = make_repl(tmp_path / "c.db")
    with store:
        repl.engine.state.store.facts.upsert_fact("order id", "ORD-7731", scope="session",
                                                  user=None, session_id=repl.engine.session.id)
        completer = SlashCompleter(repl)

        def menu(text: str) -> list[tuple[str, str]]:
            return [(c.text, c.display_meta_text) for c in
                    completer.get_completions(Document(text), CompleteEvent())]

        assert menu("/s") == [
            ("/strategy", "show or switch the memory strategy for the next turn; histo…"),
            ("/show-prompt", "toggle the panel of the exact messages sent"),
            ("/summary", "show the summary and its word diff against the previous ver…"),
            ("/system", "show the system prompt, set it for the next turns, or clear…"),
            ("/sessions", "list the sessions in this history file (* = this one)"),
            ("/switch", "resume another session, with its own strategy"),
        ]
        assert ("k=", "how many recent turns to keep (default 5)") in menu("/strategy window ")
        assert menu("/strategy window+ent") == [
            ("window+entity", "Send the facts the user stated (key → value, with their tur…")]
        assert [t for t, _ in menu("/strategy window+entity ")] == [
            "window.k=", "entity.k=", "entity.max_facts="]
        assert menu("/forget ") == [("1", "order id = ORD-7731"), ("order id", "fact 1: ORD-7731")]
        assert menu("hello /str") == []  # only a line that starts with / is a command


def test_esc_enter_and_a_triple_quote_block_make_one_multi_line_message(
    tmp_path: Path, tty: None
) -> None:
    store, repl = make_repl(tmp_path / "c.db")
    keys = f"line one{ESC_ENTER}line two\r" + '"""\ralpha\r\rbeta\r"""\r' + 'single\r'
    with store, typing(repl, keys) as lines:
        assert next(lines) == "line one\nline two"
        assert next(lines) == "alpha\n\nbeta"
        assert next(lines) == "single"


def test_a_triple_quote_block_from_a_pipe_is_one_message() -> None:
    piped = ['"""', "first line", "", "  indented", '"""', "next", '"""one line"""', '"""a',
             'b"""', '"""never closed', "tail"]
    assert list(join_blocks(piped)) == [
        "first line\n\n  indented", "next", "one line", "a\nb", "never closed\ntail"]


def test_up_recalls_the_session_s_own_messages_after_a_restart(tmp_path: Path, tty: None) -> None:
    db = tmp_path / "h.db"
    store, repl = make_repl(db)
    with store:
        repl.turn("the blue door is at 12 Oak Street")
        repl.turn("我们五月去杭州")
        other = open_session(store, Settings(), ScriptedProvider(), "other", strategy="window")
        other.run_turn("a message of another session")
    store, restarted = make_repl(db)  # a new process would open the file the same way
    with store, typing(restarted, fresh_prompt, UP, shows("我们五月去杭州"), "\r",
                       fresh_prompt, UP, shows("我们五月去杭州"), UP,
                       shows("the blue door is at 12 Oak Street"), "\r",
                       fresh_prompt, UP, UP, UP, shows("the blue door is at 12 Oak Street"),
                       "\r") as lines:
        assert next(lines) == "我们五月去杭州"
        assert next(lines) == "the blue door is at 12 Oak Street"
        # Oldest first is as far as it goes; the other session's message never shows.
        assert next(lines) == "the blue door is at 12 Oak Street"


def test_history_follows_a_switch_and_a_deleted_session_takes_its_history(
    tmp_path: Path, tty: None
) -> None:
    db = tmp_path / "h.db"
    store, repl = make_repl(db)
    with store:
        repl.turn("only in t")
        store.sessions.create_session("u", "window")
        u = open_session(store, Settings(), ScriptedProvider(), "u")
        u.run_turn("only in u")
        # Up typed with the command, before the next prompt (and its history) exists.
        with typing(repl, "/switch u\r" + UP, shows("only in u"), "\r") as lines:
            assert next(lines) == "/switch u"
            repl.command("/switch u")
            assert next(lines) == "only in u"
        store.sessions.delete_session("u")
        repl.open("t")
        with typing(repl, fresh_prompt, UP, shows("only in t"), "\r") as lines:
            assert next(lines) == "only in t"
    assert b"only in u" not in b"".join(p.read_bytes() for p in tmp_path.rglob("*") if
                                        p.is_file() and p.suffix != ".db")


@pytest.mark.parametrize("message", ["a long carefully written message: 我们五月去杭州",
                                     "//usr/local/bin 是我的路径"])
def test_a_message_refused_because_its_session_was_deleted_stays_in_up_history(
    tmp_path: Path, tty: None, capsys: pytest.CaptureFixture[str], message: str
) -> None:
    """Refused ("session 't' was deleted meanwhile ... nothing was sent"), the message was in
    no stored message, and Up, reading the history again, offered nothing: the typed text was
    lost. Up offers it, also in the session /new starts, until it is sent. A message sent with
    // (one opening with a slash) was not kept at all, and once stored stayed offered first."""
    db = tmp_path / "h.db"
    store, repl = make_repl(db)

    def deleted_elsewhere(session: PromptSession[str]) -> bool:
        invoke("sessions", "delete", "t", "--yes", "--db", str(db), code=0)
        return True

    with store:
        repl.turn("first")
        with typing(repl, fresh_prompt, deleted_elsewhere, message + "\r", fresh_prompt, UP,
                    shows(message), "\r", "/new t\r", fresh_prompt, UP, shows(message), "\r",
                    fresh_prompt, UP, shows(message), UP, shows(message), "\r") as lines:
            repl.loop([next(lines)])
            assert "deleted meanwhile" in capsys.readouterr().err
            assert repl.prompt is not None and repl.prompt.unsent == [message]
            assert next(lines) == message  # recalled, not sent: the session is gone
            command = next(lines)
            assert command == "/new t"
            repl.loop([command])
            sent = next(lines)
            assert sent == message
            repl.loop([sent])
            assert repl.last is not None and repl.last.status == "ok"
            said = message.removeprefix("/") if message.startswith("//") else message
            assert f"echo #2: {said}" in capsys.readouterr().out
            assert repl.prompt.unsent == []
            # Stored now: Up offers it as the new session's message.
            assert next(lines) == message


def test_a_draft_ctrl_c_cleared_comes_back_with_up(tmp_path: Path, tty: None) -> None:
    """Ctrl-C at the prompt cleared a long draft for good: Up offered only the stored
    messages. Up offers it first, a message as a refused one (in every session of the
    run), a command in this prompt's history only."""
    store, repl = make_repl(tmp_path / "h.db")
    draft = "五月去杭州的计划\nsecond line"
    with store:
        repl.turn("first")
        with typing(repl, "五月去杭州的计划", ESC_ENTER, "second line", shows(draft), "\x03",
                    fresh_prompt, "/strategy buf", shows("/strategy buf"), "\x03",
                    fresh_prompt, "\x03", fresh_prompt, UP, shows("/strategy buf"), UP,
                    shows(draft), "\r") as lines:
            assert next(lines) == draft
        assert repl.prompt is not None and repl.prompt.unsent == [draft]


def test_up_no_longer_recalls_text_another_process_erased(tmp_path: Path, tty: None) -> None:
    """The history was read once per chat: after a purge in another shell, Up still
    recalled 'my name is Zebulon' from the prompt's copy."""
    db = tmp_path / "h.db"
    store, repl = make_repl(db)
    with store:
        repl.turn("my name is Zebulon, 我住在奥斯陆")
        repl.command("/remember name: Zebulon")
        erased = f"my name is {MARKER}, 我住在奥斯陆"
        with typing(repl, fresh_prompt, UP, shows("my name is Zebulon, 我住在奥斯陆"), "\r",
                    fresh_prompt, UP, shows(erased), "\r") as lines:
            assert next(lines) == "my name is Zebulon, 我住在奥斯陆"
            invoke("facts", "forget", "t", "name", "--purge", "--yes", "--db", str(db), code=0)
            assert next(lines) == erased
            assert not [s for s in repl.prompt.session.history.get_strings() if "Zebulon" in s]


def test_up_at_a_prompt_already_open_no_longer_recalls_erased_text(
    tmp_path: Path, tty: None
) -> None:
    """Only the next prompt read the history again: a purge in another shell while the
    prompt was open left Up offering 'my name is Zebulon', and Enter stored it again."""
    db = tmp_path / "h.db"
    store, repl = make_repl(db)

    def purged_elsewhere(session: PromptSession[str]) -> bool:
        invoke("facts", "forget", "t", "name", "--purge", "--yes", "--db", str(db), code=0)
        return True

    with store:
        repl.turn("my name is Zebulon, 我住在奥斯陆")
        repl.turn("我们五月去杭州")
        repl.command("/remember name: Zebulon")
        erased = f"my name is {MARKER}, 我住在奥斯陆"
        with typing(repl, fresh_prompt, "draft", purged_elsewhere, UP, shows("我们五月去杭州"),
                    UP, shows(erased), DOWN, DOWN, shows("draft"), UP, UP, shows(erased),
                    "\r") as lines:
            assert next(lines) == erased
            assert not [s for s in repl.prompt.session.history.get_strings() if "Zebulon" in s]


def test_typed_lines_are_not_written_to_a_history_file(
    tmp_path: Path, isolated_home: Path, tty: None
) -> None:
    store, repl = make_repl(tmp_path / "x.db")
    with store, typing(repl, "my secret is ZEBRA-42\r") as lines:
        assert next(lines) == "my secret is ZEBRA-42"
    # `sessions delete` erases a conversation for good only if no copy lives elsewhere.
    leftovers = [p for p in isolated_home.rglob("*") if p.is_file()]
    assert not [p for p in leftovers if b"ZEBRA-42" in p.read_bytes()]


def test_retry_and_edit_last_replace_only_this_chats_own_last_turn(tmp_path: Path) -> None:
    """After MCP's record_turn (or another REPL, or serve) added a turn, /retry regenerated
    that turn: the recorded reply left memory for a reply this chat's model made up."""
    db = tmp_path / "t.db"
    store, repl = make_repl(db)
    with store:
        repl.turn("我想去西安")
        with Store(db) as other:  # what MCP's record_turn does, in another process
            session = other.sessions.session("t")
            other_engine = open_session(other, Settings(), ScriptedProvider(), "t")
            other_engine.replay_turn("帮我订酒店", "已订好如家酒店")
        for command in ("/retry", "/edit-last 我想去成都"):
            with pytest.raises(UsageError) as refused:
                repl.command(command)
            assert "turn 2 was added by another chat since your last turn" in str(refused.value)
        assert [t.superseded_by for t in store.turns.turns(session.id)] == [None, None]
        repl.turn("那成都呢？")
        repl.command("/retry")  # its own last turn, as before
        assert [t.superseded_by for t in store.turns.turns(session.id)] == [None, None, 4, None]


def test_the_turn_another_chat_added_is_named_as_sessions_show_numbers_it(
        tmp_path: Path) -> None:
    """It was named by the request's number: after one /retry of this chat's turn 1, the
    other chat's turn 2 was 'turn 3 was added by another chat', a turn no command finds."""
    db = tmp_path / "t.db"
    store, repl = make_repl(db)
    with store:
        repl.turn("我想去西安")
        repl.command("/retry")
        with Store(db) as other:
            open_session(other, Settings(), ScriptedProvider(), "t").replay_turn(
                "帮我订酒店", "已订好如家酒店")
        with pytest.raises(UsageError) as refused:
            repl.command("/retry")
        assert "turn 2 was added by another chat since your last turn" in str(refused.value)


def test_a_turn_another_chat_adds_while_the_edit_is_typed_or_after_model_is_not_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check ran before the edit window (seconds to minutes long), and /model or
    /template reopened the session and made another chat's turn this chat's own: either way
    MCP's recorded exchange left memory for a reply this chat's model made up."""
    db = tmp_path / "t.db"
    store, repl = make_repl(db)

    def another_chat_records(text: str) -> None:
        with Store(db) as other:
            open_session(other, Settings(), ScriptedProvider(), "t").replay_turn(text, "已订好")

    with store:
        repl.turn("我想去西安")
        session = store.sessions.session("t")

        def edited(default: str) -> str:
            another_chat_records("帮我订酒店")  # while the user types the edit
            return "我想去成都"

        monkeypatch.setattr(repl, "edit_line", edited)
        with pytest.raises(UsageError, match="turn 2 was added by another chat"):
            repl.command("/edit-last")
        repl.command("/model scripted")
        with pytest.raises(UsageError, match="turn 2 was added by another chat"):
            repl.command("/retry")
        assert [t.superseded_by for t in store.turns.turns(session.id)] == [None, None]
        assert [m.content for m in store.history.messages(session.id)] == [
            "我想去西安", "echo #1: 我想去西安", "帮我订酒店", "已订好"]


def test_the_toolbar_names_session_strategy_model_and_the_last_context(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    store, repl = make_repl(db)
    with store:
        assert toolbar_text(repl) == " session t · window · scripted:scripted · no turn yet "
        repl.turn("hello there")
        assert toolbar_text(repl) == (" session t · window · scripted:scripted · last context "
                                      "16 / 4,000 tokens · total 22 tokens ")
        repl.command("/strategy window k=2")
        assert "window k=2" in toolbar_text(repl)
    store, restarted = make_repl(db)
    with store:  # a restart shows the last context stored, and the session's total
        assert toolbar_text(restarted).endswith("last context 16 / 4,000 tokens · "
                                                "total 22 tokens ")


def test_the_toolbar_shows_the_budget_a_strategy_or_budget_change_sets(tmp_path: Path) -> None:
    store, repl = make_repl(tmp_path / "t.db")
    with store:
        repl.turn("我们五月去杭州")
        assert "last context 21 / 4,000 tokens" in toolbar_text(repl)
        repl.command("/strategy summary-buffer")  # its own budget: max_tokens
        assert "last context 21 / 2,000 tokens" in toolbar_text(repl)
        repl.command("/strategy summary-buffer max_tokens=3000")
        assert "last context 21 / 3,000 tokens" in toolbar_text(repl)
        repl.command("/strategy window")
        repl.command("/budget 8000")  # the budget of a strategy without one of its own
        assert "last context 21 / 8,000 tokens" in toolbar_text(repl)
        repl.turn("hello")
        assert toolbar_text(repl).count(" / 8,000 tokens") == 1


def test_a_session_reopened_under_another_strategy_shows_its_budget(tmp_path: Path) -> None:
    """A /strategy with no turn after it, then the chat left and opened again: the toolbar
    said `last context 21 / 4,000 tokens` under summary-buffer max_tokens=1500."""
    db = tmp_path / "t.db"
    store, repl = make_repl(db)
    with store:
        repl.turn("我们五月去杭州")
        repl.command("/strategy summary-buffer max_tokens=1500")
        assert "last context 21 / 1,500 tokens" in toolbar_text(repl)
    store = Store(db)
    engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "t")
    with store:
        reopened = Repl(engine, make_console(), make_console(stderr=True))
        assert "summary-buffer max_tokens=1500" in toolbar_text(reopened)
        assert "last context 21 / 1,500 tokens" in toolbar_text(reopened)
    store, switched = make_repl(db, strategy="window")  # -s window: the config's budget
    with store:
        assert "last context 21 / 4,000 tokens" in toolbar_text(switched)


def test_opening_a_session_whose_strategy_sets_its_own_budget_builds_no_extra_context(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its last turn was built to the strategy's own budget (summary-buffer max_tokens=1500),
    which the opening compared with the setting's 4,000: every opening built the context
    once more for nothing (another budget now still builds it:
    tests/repl/test_repl_edges.py::test_the_toolbar_shows_the_budget_the_config_sets_now)."""
    from chatmem.engine import Engine

    db = tmp_path / "t.db"
    store, repl = make_repl(db, strategy="summary-buffer:max_tokens=1500")
    with store:
        repl.turn("我们五月去杭州")
    built: list[str] = []
    build = Engine.build_context
    monkeypatch.setattr(Engine, "build_context",
                        lambda self, *args, **kwargs: built.append("built") or build(
                            self, *args, **kwargs))
    store = Store(db)
    with store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "t")
        reopened = Repl(engine, make_console(), make_console(stderr=True))
        assert "last context" in toolbar_text(reopened) and " / 1,500 tokens" in toolbar_text(
            reopened)
    assert built == []


def test_the_toolbar_keeps_a_running_total_of_tokens_and_cost(tmp_path: Path) -> None:
    store = Store(tmp_path / "t.db")
    settings = Settings(system="Be brief.",
                        prices={"scripted": {"input": 1000.0, "output": 2000.0}})
    engine = open_session(store, settings, ScriptedProvider(), "t", strategy="window")
    repl = Repl(engine, make_console(), make_console(stderr=True))
    with store:
        repl.turn("hello there")  # 16 tokens sent, 6 received: (16k + 12k) / 10⁶
        assert toolbar_text(repl).endswith(" · total 22 tokens · $0.03 ")
        repl.turn("你好，再来一次")
        total = repl.spent
        assert total.tokens > 22 and len(total.costs) == 1 and total.costs[0].amount > 0.028
        restarted = Repl(open_session(store, settings, ScriptedProvider(), "t"),
                         make_console(), make_console(stderr=True))
        # Read back from the stored turns (summed per model, so rounding may differ).
        assert restarted.spent.tokens == total.tokens
        assert len(restarted.spent.costs) == 1
        assert restarted.spent.costs[0].amount == pytest.approx(total.costs[0].amount)


def test_the_toolbar_totals_each_currency_on_its_own(tmp_path: Path) -> None:
    """A turn priced in ¥ and one in $ were shown as one sum under the second sign."""
    store = Store(tmp_path / "t.db")
    settings = Settings(system="Be brief.", prices={
        "scripted": {"input": 1_000_000.0, "output": 0.0, "currency": "¥"},
        "m2": {"input": 1_000_000.0, "output": 0.0, "currency": "$"}})
    engine = open_session(store, settings, ScriptedProvider(), "t", strategy="window")
    repl = Repl(engine, make_console(), make_console(stderr=True))
    with store:
        repl.turn("你好")
        yuan = repl.spent.tokens  # at most ¥1 a token
        repl.command("/model m2")
        repl.turn("再说一次")
        dollars = repl.spent.costs[1].amount
        assert [c.currency for c in repl.spent.costs] == ["¥", "$"]
        assert repl.spent.costs[0].amount <= yuan and dollars > 0
        assert toolbar_text(repl).endswith(f"¥{repl.spent.costs[0].amount:,.2f} + "
                                           f"${dollars:,.2f} ")
        restarted = Repl(open_session(store, settings, ScriptedProvider(), "t"),
                         make_console(), make_console(stderr=True))
        # Read back per model from the stored turns: still one sum per currency.
        assert sorted(c.currency for c in restarted.spent.costs) == ["$", "¥"]
        assert "¥" in toolbar_text(restarted) and f"${dollars:,.2f}" in toolbar_text(restarted)


def test_the_toolbar_says_how_many_messages_are_still_to_embed(tmp_path: Path) -> None:
    from chatmem.embeddings.hashed import HashEmbedder

    go_on = threading.Event()

    class Held(HashEmbedder):
        """Embeds stored texts only once the test lets it: the backlog stays where it is."""

        def embed(self, texts, *, query=False):  # type: ignore[no-untyped-def]
            if not query:
                assert go_on.wait(HANG)
            return super().embed(texts, query=query)

    embedder = Held()
    store, repl = backlog_repl(tmp_path / "t.db", embedder)
    engine = repl.engine
    with store:
        assert "index" not in toolbar_text(repl)
        repl.turn("when is the ferry?")
        assert toolbar_text(repl).endswith(" · indexing, 602 left ")
        engine.indexing.pause()
        assert toolbar_text(repl).endswith(" · 602 not indexed ")
        go_on.set()
        engine.indexing.finish(embedder)
        assert "index" not in toolbar_text(repl)


@pytest.mark.parametrize(("status", "text"), [
    (None, None),
    (IndexingStatus(1, "hash:256", 0, running=True, embedded=40), None),
    (IndexingStatus(1, "hash:256", 602, running=True), "indexing, 602 left"),
    (IndexingStatus(1, "hash:256", 5_986, running=True, embedded=16),
     "indexing, 5,986 left (16 embedded)"),
    (IndexingStatus(1, "hash:256", 586, running=False, embedded=16), "586 not indexed"),
])
def test_the_toolbar_words_each_backlog_state(status: IndexingStatus | None,
                                              text: str | None) -> None:
    assert indexing_text(status) == text


def test_the_toolbar_counts_batches_embedded_while_the_prompt_waits(tmp_path: Path) -> None:
    """No turn, no pause, nothing stored: the count moves on as the thread embeds, and the
    prompt redraws the toolbar on a timer, not only on a keystroke."""
    from chatmem.embeddings.hashed import HashEmbedder
    from chatmem.memory.vector_backlog import BATCH

    allowed = threading.Semaphore(0)

    class Metered(HashEmbedder):
        """Embeds stored texts only as the test allows, one call at a time."""

        def embed(self, texts, *, query=False):  # type: ignore[no-untyped-def]
            if not query:
                assert allowed.acquire(timeout=HANG)
            return super().embed(texts, query=query)

    embedder = Metered()
    store, repl = backlog_repl(tmp_path / "t.db", embedder)
    engine = repl.engine
    with store:
        repl.turn("when is the ferry?")
        assert toolbar_text(repl).endswith(" · indexing, 602 left ")
        for _ in range(2):  # two batches, one embedding call each (contexts are derived)
            allowed.release()
        deadline = time.monotonic() + HANG
        while engine.indexing.status(embedder).embedded < 2 * BATCH:  # type: ignore[union-attr]
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert toolbar_text(repl).endswith(f" · indexing, {602 - 2 * BATCH} left "
                                           f"({2 * BATCH} embedded) ")
        assert store.vectors.count_without_vectors(embedder.key, engine.session.id) == 602
        for _ in range(1000):
            allowed.release()
        engine.indexing.close()
    assert Prompt(repl, DummyOutput())._build().refresh_interval == TOOLBAR_REFRESH_SECONDS


def test_the_colon_form_completes_the_strategy_parameters(tmp_path: Path, tty: None) -> None:
    store, repl = make_repl(tmp_path / "c.db")
    typed = "/strategy summary-buffer:"
    with store, typing(repl, typed, menu(typed), TAB, shows(f"{typed}max_tokens="),
                       "200,", menu(f"{typed}max_tokens=200,"), TAB,
                       shows(f"{typed}max_tokens=200,summary_max_tokens="), "64\r") as lines:
        assert next(lines) == f"{typed}max_tokens=200,summary_max_tokens=64"


def test_colon_completion_offers_each_parameter_once_with_its_help(tmp_path: Path) -> None:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document
    from registered import STRATEGIES

    from chatmem.repl.completion import SlashCompleter

    store, repl = make_repl(tmp_path / "c.db")
    with store:
        completer = SlashCompleter(repl)

        def offered(text: str) -> list[str]:
            return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

        names = [p.name for p in STRATEGIES["summary-buffer"].PARAMS]
        assert offered("/strategy summary-buffer:") == [
            f"summary-buffer:{n}=" for n in names]
        assert offered(f"/strategy summary-buffer:{names[0]}=9,") == [
            f"summary-buffer:{names[0]}=9,{n}=" for n in names[1:]]
        assert offered("/strategy window+entity:window.") == [
            f"window+entity:window.{p.name}=" for p in STRATEGIES["window"].PARAMS]
        assert offered("/strategy nosuch:") == []


def test_edit_last_opens_the_prompt_on_the_last_input_and_sends_the_edit(
    tmp_path: Path, tty: None
) -> None:
    store, repl = make_repl(tmp_path / "e.db")
    with store:
        repl.turn("my order is ORD-7731")
        repl.turn("我们五月去杭州")
        backspace = "\x7f"
        with typing(repl, "/edit-last\r", shows("我们五月去杭州"), backspace * 2, "苏州",
                    shows("我们五月去苏州"), "\r") as lines:
            assert next(lines) == "/edit-last"
            repl.command("/edit-last")  # reads the edit at the prompt, then sends it
        session_id = repl.engine.session.id
        assert [m.content for m in store.history.messages(session_id)] == [
            "my order is ORD-7731", "echo #1: my order is ORD-7731",
            "我们五月去苏州", "echo #3: 我们五月去苏州"]
        assert [(t.input, t.superseded_by) for t in store.turns.turns(session_id)] == [
            ("my order is ORD-7731", None), ("我们五月去杭州", 3), ("我们五月去苏州", None)]
        # Up recalls what history holds: the edit, not the replaced input.
        with typing(repl, fresh_prompt, UP, shows("我们五月去苏州"), "\r") as lines:
            assert next(lines) == "我们五月去苏州"


def test_tab_completes_a_file_name_with_spaces_quoted_as_one_word(
    tmp_path: Path, tty: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`/attach 会议` Tab put in `会议 纪要.md` unquoted, read as two words: /attach refused
    the line ("unexpected argument '纪要.md'"), as it did macOS's `Screen Shot … .png`."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("会议 纪要.md", "Screen Shot at 10.12.png", "notes.md"):
        (folder / name).write_text("x", encoding="utf-8")
    monkeypatch.chdir(folder)
    store, repl = make_repl(tmp_path / "c.db")
    with store, typing(repl, "/attach 会议", menu("/attach 会议"), TAB,
                       shows("/attach '会议 纪要.md'"), "\r",
                       "/file 'Screen Shot", menu("/file 'Screen Shot"), TAB,
                       shows("/file 'Screen Shot at 10.12.png'"), "\r",
                       "/attach no", menu("/attach no"), TAB, shows("/attach notes.md"),
                       "\r") as lines:
        read = [next(lines) for _ in range(3)]
    assert [split_words(line)[1:] for line in read] == [
        ["会议 纪要.md"], ["Screen Shot at 10.12.png"], ["notes.md"]]


def test_an_open_quote_on_a_command_line_is_read_as_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`/attach '会议 纪要.md` (its closing quote not typed) was split at the space:
    "/attach: unexpected argument '纪要.md'", nothing attached; Tab reads it as closed."""
    (tmp_path / "会议 纪要.md").write_text("周五发布\n", encoding="utf-8")
    (tmp_path / "Screen Shot.txt").write_text("shot\n", encoding="utf-8")
    (tmp_path / "it's.txt").write_text("apostrophe\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    store, repl = make_repl(tmp_path / "c.db")
    with store:
        repl.command("/attach '会议 纪要.md")
        repl.command('/attach "Screen Shot.txt')
        repl.command("/attach it's.txt")  # an apostrophe, not a quote: as it was
        assert [a.name for a in repl.attached] == ["会议 纪要.md", "Screen Shot.txt", "it's.txt"]
    assert split_closed("/forget mom's birthday") == ["/forget", "mom's", "birthday"]
    assert split_closed("/attach \"it's notes.txt") == ["/attach", "it's notes.txt"]


def test_tab_reads_an_apostrophe_in_a_file_name_as_enter_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tab closed any open quote, Enter (split_closed) only one opening a word: `/attach
    it's` Tab completed files beginning 'its' (its.md) and never offered it's.txt, which
    Enter then attaches as typed."""
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from chatmem.repl.completion import SlashCompleter

    for name in ("it's.txt", "its.md", "会议 纪要.md", "O'Brien notes.md"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    store, repl = make_repl(tmp_path / "c.db")
    with store:
        completer = SlashCompleter(repl)

        def offered(text: str) -> list[str]:
            return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

        # Put in as Enter reads it back: bare, as at c7cd13f5, where a shell's quoting made
        # it 'it'"'"'s.txt'; a name Enter would split, in the quotes easiest to read.
        assert offered("/attach it's") == offered("/attach it'") == ["it's.txt"]
        assert offered("/attach O") == ['"O\'Brien notes.md"']
        for name in ("it's.txt", "O'Brien notes.md"):
            line = f"/attach {offered('/attach ' + name[:2])[0]}"
            assert split_closed(line) == ["/attach", name]
        assert offered("/attach '会议") == ["'会议 纪要.md'"]  # a quote opening a word, closed
        assert offered("/attach mom's no") == []  # two words, as Enter reads them


def test_a_recalled_message_cleared_by_ctrl_u_to_its_last_line_and_a_command_is_not_sent(
    tmp_path: Path, tty: None
) -> None:
    db = tmp_path / "u.db"
    store, repl = make_repl(db)
    pasted = "第一段：我们五月去杭州。\nsecond paragraph\n第三段"
    with store:
        repl.turn(pasted)
    store, restarted = make_repl(db)

    def refused(session: PromptSession[str]) -> bool:
        error = session.default_buffer.validation_error
        return error is not None and "/switch" in error.message

    # Ctrl-U clears the line the cursor is on only: the text above it stays in the buffer.
    with store, typing(restarted, fresh_prompt, UP, shows(pasted), "\x15", "/switch 旅行计划\r",
                       refused, "\x03", fresh_prompt, "/switch 旅行计划\r") as lines:
        assert next(lines) == "/switch 旅行计划"  # the command alone, once the text is cleared
        assert [m.content for m in store.history.messages(restarted.engine.session.id)
                if m.role == "user"] == [pasted]


def test_only_a_known_command_on_the_last_of_several_lines_is_refused() -> None:
    from prompt_toolkit.document import Document
    from prompt_toolkit.validation import ValidationError

    import chatmem.repl.commands  # noqa: F401  (fills the table)
    from chatmem.repl.prompt import NoCommandAtTheEnd

    def refused(text: str) -> bool:
        try:
            NoCommandAtTheEnd().validate(Document(text))
        except ValidationError:
            return True
        return False

    assert refused("old message\n/switch x") and refused("旧消息\n\n／help\n")
    assert not refused("/switch x") and not refused("a slash\n/") and not refused("a\n/ help")
    assert not refused("where is it?\n/usr/local/bin")  # a path, not a command
    assert not refused("/system be brief\nand kind")  # a command's own lines
    assert not refused('"""\nsee\n/help\n"""')  # a block is a message whatever it holds
