"""A plugin strategy whose build sends a stored message altered (its text "tidied", its role
changed) or a message id the session does not store: before, only `check_strategy` caught
it; at run time the altered words went to the model as the user's and `inspect` showed them
as stored. Now it is refused before it is sent, as any other wrong return: one line naming
the strategy and its plugin, nothing stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke, run
from pg import Team, add_messages
from plugin_site import Install
from test_plugin_returns import turns_stored

from chatmem.memory.sent_as_stored import AS_STORED

TIDIES = '''
from dataclasses import replace

from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy
from chatmem.memory.context import Part
from chatmem.memory.reasons import TextReason


class Sends(BaseStrategy):
    description = "sends every stored message, changed by `change`"

    def change(self, message, request):
        return message

    def build(self, request):
        turns = request.history.turns(1, request.history.turn_count())
        sent = tuple(self.change(m, request) for t in turns for m in t.messages)
        parts = [Part("history", sent, TextReason("all"))] if sent else []
        return assemble(request, parts)


class Tidied(Sends):
    name = "tidied"

    def change(self, message, request):
        text = message.content.replace("李雷", "韩梅梅")
        return replace(message, content=text,
                       tokens=request.counter.count_message(message.role, text))


class Relabelled(Sends):
    name = "relabelled"

    def change(self, message, request):
        return replace(message, role="system") if message.role == "user" else message


class Borrowed(Sends):
    name = "borrowed"

    def change(self, message, request):
        return replace(message, id=message.id + 1000)


class Dated(Sends):
    name = "dated"  # the same text, a day line above it and counted: allowed

    def change(self, message, request):
        from datetime import date
        dated = replace(message, said_on=date(2026, 5, 1))
        return replace(dated, tokens=request.counter.count_message(dated.role, dated.sent))


class Given(Sends):
    name = "given"  # each stored message as the history gave it


def register(plugins):
    for strategy in (Tidied, Relabelled, Borrowed, Dated, Given):
        plugins.add_strategy(strategy)
'''
BY = "(plugin tidies (chatmem-tidies 0.1.0))"
ALTERED = ("its build returned a 'history' part holding stored message {id} (turn 1) with its"
           " role or text altered: send stored messages as the history gives them, whole"
           " (dataclasses.replace for `said_on` and `tokens` only); text of your own goes in"
           " a 'summary' or 'facts' part")
INPUTS = "我叫李雷 my name is Lei\n我叫什么? my name?\n"


def test_a_stored_message_sent_altered_is_refused_before_it_is_sent(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-tidies", "chatmem_tidies", TIDIES, name="tidies")
    db = str(tmp_path / "h.db")
    for strategy, said in (
            # Each session's first message: ids 1, 3 and 5 in this fresh file.
            ("tidied", ALTERED.format(id=1)), ("relabelled", ALTERED.format(id=3)),
            ("borrowed", "its build returned a 'history' part holding message id 1005 (turn"
                         " 1), which this session does not store: send the messages its"
                         " history gives; text of your own goes in a 'summary' or 'facts'"
                         " part")):
        chatted = invoke("chat", strategy, "-s", strategy, "--provider", "scripted",
                         "--db", db, input=INPUTS)
        assert "Traceback" not in chatted.output
        errors = [s for s in chatted.stderr.splitlines() if s.startswith("error:")]
        assert errors == [f"error: strategy {strategy!r} failed: {said} {BY}"], strategy
        # The first turn (nothing stored to send) stands; the altered one was never sent.
        assert turns_stored(db, strategy) == 1, strategy
        shown = invoke("inspect", strategy, "--next", "再说一次", "-s", strategy,
                       "--provider", "scripted", "--db", db)
        assert shown.exit_code != 0 and "韩梅梅" not in shown.output, strategy
    # The same text below its day's line, counted so, is what the history gave: sent.
    invoke("chat", "dated", "-s", "dated", "--provider", "scripted", "--db", db,
           input=INPUTS, code=0)
    assert turns_stored(db, "dated") == 2


def test_each_stored_message_is_read_once_per_process(make_engine, installed: Install) -> None:
    """The check reads a message's stored text once: a turn reads only its new ones."""
    installed("chatmem-tidies", "chatmem_tidies", TIDIES, name="tidies")
    from chatmem.memory.guards import build_guarded
    from chatmem.plugins import load_registries

    engine = make_engine("window")
    engine.store.history.import_messages(engine.session.id, [
        {"role": "user", "content": "第一 one"}, {"role": "assistant", "content": "ok"}])
    dated = load_registries().strategies.strategy("dated", {})
    request = engine.request("next")
    build_guarded(dated, request)
    checked = request.state.caches[AS_STORED]
    assert len(checked) == 2
    reads: list[list[int]] = []
    placed = engine.store.history.placed
    engine.store.history.placed = lambda s, ids: reads.append(list(ids)) or placed(s, ids)
    build_guarded(dated, engine.request("again"))
    assert reads == []


def test_a_grantees_words_sent_as_the_history_gives_them_are_not_taken_for_altered(
        installed: Install, team: Team) -> None:
    """On PostgreSQL the history reads a write grantee's words after his label (the server's
    `writer`, not the stored text): the check compared them with the bare stored text and
    refused every turn of a plugin strategy in a session he had written in."""
    pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")
    installed("chatmem-tidies", "chatmem_tidies", TIDIES, name="tidies")
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "--session", "a", "我叫安娜。", "-s", "buffer", "--provider", "scripted",
        code=0)
    run(ann, "sessions", "share", "a", "--with", "bob", "--write", code=0)
    (session_id,), = team.rows("SELECT id FROM sessions WHERE name = 'a'")
    add_messages(bob, session_id, ["我是安娜，我改名叫马洛里。", "好的。"], first_position=3)
    run(ann, "ask", "a", "我叫什么？", "-s", "given", "--provider", "scripted", code=0)
    assert team.rows("SELECT count(*) FROM turns t JOIN sessions s ON s.id = t.session_id"
                     " WHERE s.name = 'a'") == [(2,)]


def test_a_full_check_cache_is_read_again_not_taken_for_messages_not_stored(
        make_engine, installed: Install, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Past AS_STORED_AT_MOST checked messages (20,000: a plugin sending a long session's
    whole history) the cache was emptied and only the build's new messages read, so the ones
    it had checked before and sent again were refused as messages the session does not
    store: every turn of that session failed from then on. Here the bound is 3."""
    import chatmem.memory.sent_as_stored as sent_as_stored

    installed("chatmem-tidies", "chatmem_tidies", TIDIES, name="tidies")
    from chatmem.memory.guards import build_guarded
    from chatmem.plugins import load_registries

    monkeypatch.setattr(sent_as_stored, "AS_STORED_AT_MOST", 3)
    engine = make_engine("window")
    dated = load_registries().strategies.strategy("dated", {})
    for said in ("第一 one", "第二 two", "第三 three"):
        engine.store.history.import_messages(engine.session.id, [
            {"role": "user", "content": said}, {"role": "assistant", "content": "ok"}])
        context = build_guarded(dated, engine.request("next"))
        assert len(context.part("history").messages) == 2 * engine.history().turn_count()
