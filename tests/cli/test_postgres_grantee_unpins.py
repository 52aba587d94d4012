"""A write share's grantee's unpin in the owner's PostgreSQL session (`chatmem facts forget
ann/a pN`) is his: the pin leaves his listing and the contexts his chatmem builds there,
and her pins, her unpins and her context stay as they were."""

from __future__ import annotations

import pytest
from cli_runner import run
from pg import Team
from pinned_share import share_pinned_session
from registered import open_session

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.memory import pins
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

SETTINGS = Settings(system="", embeddings=EmbeddingsSection(provider="none"))


@pytest.fixture
def pinned(team: Team, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """ann's `summary` session `a`, whose summarizer lost 五千元 (p1) and ORD-7731 (p2),
    shared with bob for writing."""
    return share_pinned_session(team, monkeypatch)


def pinned_texts(url: str, name: str) -> list[str]:
    with Store(url) as store:
        return [p.text for p in pins.pinned_facts(store.memory, store.sessions.session(name).id)]


def sent_facts(url: str, name: str) -> str:
    """The facts part the role's next context in the session sends ('' when none)."""
    with Store(url) as store:
        chat = open_session(store, SETTINGS, ScriptedProvider(), name)
        facts = chat.build_context("?").part("facts")
        return facts.messages[0].content if facts is not None else ""


def test_a_grantees_unpin_is_his_and_the_owner_keeps_her_pins(pinned: tuple[str, str],
                                                                team: Team) -> None:
    ann, bob = pinned
    run(ann, "facts", "forget", "a", "p1", code=0)  # hers: 五千元
    run(bob, "facts", "forget", "ann/a", "p2", code=0)  # his: ORD-7731
    # Hers: the order id still pinned and sent, her unpin kept.
    assert pinned_texts(ann, "a") == ["ORD-7731"]
    facts = sent_facts(ann, "a")
    assert "ORD-7731" in facts and "五千元" not in facts
    # His: neither listed nor sent in the contexts his chatmem builds in her session.
    assert pinned_texts(bob, "ann/a") == []
    facts = sent_facts(bob, "ann/a")
    assert "ORD-7731" not in facts and "五千元" not in facts
    # His turn there leaves both as they are; her next turn too.
    run(bob, "ask", "ann/a", "鲍勃：订单呢？", "--provider", "scripted", code=0)
    assert "ORD-7731" not in sent_facts(bob, "ann/a")
    run(ann, "ask", "a", "安娜：还有什么？", "--provider", "scripted", code=0)
    facts = sent_facts(ann, "a")
    assert "ORD-7731" in facts and "五千元" not in facts
    assert "ORD-7731" not in sent_facts(bob, "ann/a")
    # Nor does his SQL unpin for her by writing a row named as a grantee's own state is.
    ((session_id,),) = team.rows("SELECT id FROM sessions WHERE owner = 'ann'")
    with psycopg.connect(bob, autocommit=True) as conn:
        assert conn.execute("INSERT INTO strategy_state (session_id, strategy, key, value)"
                            " VALUES (%s, 'summary/ann', 'unpinned', '[\"ORD-7731\"]')",
                            [session_id]).rowcount == 1
    assert pinned_texts(ann, "a") == ["ORD-7731"]
    assert "ORD-7731" in sent_facts(ann, "a")


def test_after_a_grantees_turn_the_owner_lists_and_unpins_what_she_is_sent(
        pinned: tuple[str, str]) -> None:
    """His turn's upkeep rewrites her strategy's state; her context sends the pins rebuilt
    from her summaries. Her listing showed none of them ('no fact' to her forget), and an
    unpin written over an absent state would have lost her earlier ones."""
    ann, bob = pinned
    run(ann, "facts", "forget", "a", "p1", code=0)  # hers: 五千元
    run(bob, "ask", "ann/a", "鲍勃：订单呢？", "--provider", "scripted", code=0)
    assert pinned_texts(ann, "a") == ["ORD-7731"]
    assert "ORD-7731" in sent_facts(ann, "a")
    run(ann, "facts", "forget", "a", "ORD-7731", code=0)
    for _ in range(2):  # before her next turn and after it
        assert pinned_texts(ann, "a") == []
        facts = sent_facts(ann, "a")
        assert "ORD-7731" not in facts and "五千元" not in facts
        run(ann, "ask", "a", "安娜：还有什么？", "--provider", "scripted", code=0)


def test_her_pins_get_their_turns_and_quotes_back_at_her_next_update(
        pinned: tuple[str, str], team: Team) -> None:
    """Rebuilt from her summaries after an older chatmem's turn of his wrote her state (his
    upkeep's rows over hers, stamped with him; now his chatmem keeps his own: tests/cli/
    test_postgres_writer_state.py), her pins are bare; her next update looks for where
    each was said, as for an anchor an older summary held."""
    ann, bob = pinned

    def stored(url: str) -> list[tuple[str, int | None, str]]:
        with Store(url) as store:
            return [(p.text, p.turn, p.quote) for p in pins.pinned_facts(
                store.memory, store.sessions.session("a").id)]

    said = [("五千元", 1, "我们的预算是五千元。"), ("ORD-7731", 2, "My order is ORD-7731.")]
    assert stored(ann) == said
    ((session_id,),) = team.rows("SELECT id FROM sessions WHERE owner = 'ann'")
    with psycopg.connect(bob, autocommit=True) as conn:  # an older chatmem's upkeep
        assert conn.execute("UPDATE strategy_state SET value = value WHERE session_id = %s"
                            " AND strategy = 'summary'", [session_id]).rowcount == 5
    assert stored(ann) == [(text, None, "") for text, _, _ in said]
    run(ann, "ask", "a", "安娜：还有什么？", "--provider", "scripted", code=0)
    assert stored(ann) == said
    assert "My order is ORD-7731." in sent_facts(ann, "a")


def test_a_read_only_grantees_unpin_is_refused_as_every_write_there_is(
        pinned: tuple[str, str], team: Team) -> None:
    # It was refused by the server, worded as a row security policy ("new row violates
    # row-level security policy for table \"strategy_state\""), not as a read-only share.
    ann, bob = pinned
    run(ann, "sessions", "share", "a", "--with", "bob", code=0)  # now read-only
    before = team.rows("SELECT * FROM strategy_state ORDER BY 1, 2, 3")
    for detail in ("p1", "五千元"):
        refused = run(bob, "facts", "forget", "ann/a", detail, code=2)
        [line] = refused.stderr.splitlines()
        assert "read-only by ann" in line and "row-level security" not in line
    assert team.rows("SELECT * FROM strategy_state ORDER BY 1, 2, 3") == before
    assert pinned_texts(bob, "ann/a") == ["五千元", "ORD-7731"]
