"""The chat REPL for bob on a team's PostgreSQL history, where ann shares her `trip` (for
writing) and her `旅行` (read-only) and bob has a `trip` of his own: /sessions lists and tab
completes a shared session as `ann/trip`, `/switch ann/trip` opens ann's, and every command
that reopens or names the current session keeps to it, never to bob's namesake."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from cli_runner import invoke, output
from pg import PostgresServer
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render import make_console
from chatmem.repl.completion import SlashCompleter
from chatmem.repl.loop import Repl
from chatmem.store import Store


@pytest.fixture
def urls(pg_server: PostgresServer, pg_template: str) -> Iterator[tuple[str, str]]:
    name = pg_server.create_database(pg_template)
    ann, bob = pg_server.url(name, "ann"), pg_server.url(name, "bob")
    for url, session, said in ((bob, "trip", "我的斑马 zebra"), (ann, "trip", "ann 的袋鼠"),
                               (ann, "旅行", "ann 的日记"), (ann, "secret", "ann 的秘密")):
        output("chat", session, "--provider", "scripted", "--db", url, input=said + "\n")
    output("sessions", "share", "trip", "--with", "bob", "--write", "--db", ann)
    output("sessions", "share", "旅行", "--with", "bob", "--db", ann)
    yield ann, bob
    pg_server.drop_database(name)


def inputs(url: str, session: str) -> list[str]:
    with Store(url) as store:
        found = store.sessions.session(session)
        return [t.input for t in store.turns.turns(found.id)]


def test_sessions_and_switch_name_a_shared_session_owner_slash_name(
        urls: tuple[str, str]) -> None:
    ann, bob = urls
    typed = "".join(f"{line}\n" for line in [
        "/sessions", "/switch ann/trip", "bob 补充一句", "/sessions", "/model other", "换了模型",
        "/inspect", "/switch ann/旅行", "还在 ann 的", "/switch ann/secret", "/switch trip"])
    result = invoke("chat", "trip", "--provider", "scripted", "--db", bob, width=200,
                    input=typed)
    assert result.exit_code == 2  # the refused /switch commands
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: session 'ann/旅行' is shared with you read-only by ann: it cannot be changed"
        " (ask ann to share it with --write, or make your own copy: chatmem sessions fork"
        " ann/旅行 NEW-NAME)",
        "error: no session named 'ann/secret'; /sessions lists them"]
    assert "switched to session ann/trip · " in result.stderr
    assert "switched to session trip · " in result.stderr
    tables = result.stderr.split("switched to session ann/trip")
    for table, current in zip(tables, ("trip", "ann/trip"), strict=True):
        # `*  NAME  STRATEGY  MESSAGES  TURNS  UPDATED`, as `sessions list` has them.
        rows = {words[1] if marked else words[0]: "*" if marked else ""
                for line in table.splitlines() for words in [line.split()]
                for marked in [words[:1] == ["*"]] if len(words) >= 5 + marked}
        assert {name: rows.get(name) for name in ("trip", "ann/trip", "ann/旅行")} == {
            "trip": "*" if current == "trip" else "", "ann/trip": "*" if current != "trip"
            else "", "ann/旅行": ""}
    # /model reopened ann's session (not bob's `trip`), and /inspect showed its turn 3.
    inspected = result.stderr.split("turn       3")[1]
    assert "turn 1 user: ann 的袋鼠" in inspected and "user: bob: 换了模型" in inspected
    assert inputs(ann, "trip") == ["ann 的袋鼠", "bob: bob 补充一句", "bob: 换了模型",
                                   "bob: 还在 ann 的"]
    assert inputs(bob, "trip") == ["我的斑马 zebra"]
    assert inputs(ann, "旅行") == ["ann 的日记"]
    listed = json.loads(output("sessions", "list", "--json", "--db", bob))
    assert sorted((s["shared_by"] or "") + "/" + s["name"] for s in listed) == [
        "/trip", "ann/trip", "ann/旅行"]


def test_tab_completes_a_shared_session_as_owner_slash_name(urls: tuple[str, str]) -> None:
    _, bob = urls
    with Store(bob) as store:
        engine = open_session(store, Settings(db=bob), ScriptedProvider(), "trip")
        repl = Repl(engine, make_console(), make_console(stderr=True))

        def offered(text: str) -> list[str]:
            return [c.text for c in SlashCompleter(repl).get_completions(
                Document(text), CompleteEvent())]

        # bob's own `trip` is the current session; ann's of that name is another one.
        assert sorted(offered("/switch ")) == ["ann/trip", "ann/旅行"]
        assert offered("/switch ann/旅") == ["ann/旅行"]
        repl.command("/switch ann/trip")
        assert repl.address == "ann/trip"
        assert sorted(offered("/switch ")) == ["ann/旅行", "trip"]


def test_a_plain_name_is_ones_own_never_a_share_of_that_name(urls: tuple[str, str]) -> None:
    """bob has no `旅行` of his own: /switch 旅行 does not open ann's read-only one, and
    /new 旅行 makes his own instead of saying the name is taken."""
    ann, bob = urls
    typed = "".join(f"{line}\n" for line in ["/switch 旅行", "/new 旅行", "bob 自己的旅行"])
    result = invoke("chat", "trip", "--provider", "scripted", "--db", bob, width=200,
                    input=typed)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: no session named '旅行'; /sessions lists them,"
                      " /new 旅行 creates it"]
    assert "new session 旅行 · " in result.stderr
    assert inputs(bob, "旅行") == ["bob 自己的旅行"]
    assert inputs(ann, "旅行") == ["ann 的日记"]


def test_a_shared_session_deleted_meanwhile_is_named_owner_slash_name(
        urls: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    ann, bob = urls
    with Store(bob) as store:
        engine = open_session(store, Settings(db=bob), ScriptedProvider(), "ann/trip")
        repl = Repl(engine, make_console(), make_console(stderr=True))
        repl.loop(["bob 说一句"])
        output("sessions", "delete", "trip", "--yes", "--db", ann)
        capsys.readouterr()
        repl.loop(["还在吗"])
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert errors == ["error: session 'ann/trip' was deleted meanwhile (or is no longer shared"
                      " with you): nothing was sent; /switch SESSION goes on in another"]
    assert inputs(bob, "trip") == ["我的斑马 zebra"]  # bob's own namesake is untouched
