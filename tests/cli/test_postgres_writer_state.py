"""A write share's grantee's turns in the owner's PostgreSQL session keep their summary
strategy's state apart from hers (store.memory_state.PER_WRITER): her pins keep their ids,
turns and quotes, what she released stays released, and no pin id is given out twice in
the session, whoever's chatmem gives it out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import invoke, repl, run
from pg import Team
from pinned_share import share_pinned_session
from test_postgres_grantee_unpins import pinned_texts, sent_facts

from chatmem.memory import pins
from chatmem.store import Store

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

LOST = {"五千元": "一笔预算", "ORD-7731": "the order", "七千元": "新的预算", "INV-5521": "发票"}
"""What the scripted summarizer drops (each becomes a pin)."""
HERS = [("p1", "五千元", 1, "我们的预算是五千元。"), ("p2", "ORD-7731", 2, "My order is ORD-7731.")]


@pytest.fixture
def shared(team: Team, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """ann's `summary` session `a`, whose summarizer lost 五千元 (p1) and ORD-7731 (p2),
    shared with bob for writing."""
    return share_pinned_session(team, monkeypatch, LOST)


def listed(url: str, name: str) -> list[tuple[str, str, int | None, str]]:
    with Store(url) as store:
        return [(p.ref, p.text, p.turn, p.quote) for p in pins.pinned_facts(
            store.memory, store.sessions.session(name).id)]


def state(url: str, name: str, strategy: str = "summary") -> dict[str, object]:
    with Store(url) as store:
        return store.memory.strategy_state(store.sessions.session(name).id, strategy)


def shared_entity_session(team: Team) -> tuple[str, str]:
    """ann's entity session `a`, two turns of hers, shared with bob --write: their URLs."""
    ann, bob = team.url("ann"), team.url("bob")
    with Store(ann) as store:
        repl(store, "a", ["我叫安娜，我住在上海。", "我的猫叫 Mochi。"], strategy="entity")
    run(ann, "sessions", "share", "a", "--with", "bob", "--write", code=0)
    return ann, bob


def extractions_read(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The turns each of the scripted model's fact extractions reads, as they come."""
    from chatmem.providers.base import Purpose
    from chatmem.providers.scripted import RULES

    asked: list[list[int]] = []
    real = RULES[Purpose.FACTS]

    def recording(messages):  # type: ignore[no-untyped-def]
        asked.append([m["turn"] for m in json.loads(messages[-1]["content"])["messages"]])
        return real(messages)

    monkeypatch.setitem(RULES, Purpose.FACTS, recording)
    return asked


def test_her_pins_keep_their_ids_through_his_turns_and_no_id_is_given_twice(
        shared: tuple[str, str]) -> None:
    ann, bob = shared
    assert listed(ann, "a") == HERS
    run(bob, "ask", "ann/a", "鲍勃：预算改成七千元。", "--provider", "scripted", code=0)
    # Hers as she stored them; his listing goes on from hers with his own pin.
    assert listed(ann, "a") == HERS
    assert [(ref, text) for ref, text, _, _ in listed(bob, "ann/a")] == [
        ("p1", "五千元"), ("p2", "ORD-7731"), ("p3", "七千元")]
    assert "七千元" not in sent_facts(ann, "a")
    run(bob, "sessions", "fork", "ann/a", "bf", code=0)  # his fork: his state
    assert [ref for ref, *_ in listed(bob, "bf")] == ["p1", "p2", "p3"]
    # Her next pins (her summary lost his 七千元 too) take ids his chatmem never gave out.
    run(ann, "ask", "a", "安娜：发票是 INV-5521。", "--provider", "scripted", code=0)
    assert [(ref, text) for ref, text, _, _ in listed(ann, "a")] == [
        ("p1", "五千元"), ("p2", "ORD-7731"), ("p4", "七千元"), ("p5", "INV-5521")]
    assert listed(ann, "a")[:2] == HERS
    facts = sent_facts(ann, "a")
    assert "我们的预算是五千元。" in facts and "INV-5521" in facts
    # His turn after hers keeps his pins, and her update's summary is not folded again.
    run(bob, "ask", "ann/a", "鲍勃：好的。", "--provider", "scripted", code=0)
    assert [ref for ref, *_ in listed(bob, "ann/a")] == ["p1", "p2", "p3"]
    assert listed(ann, "a")[:2] == HERS
    with Store(bob) as store:
        latest = store.memory.latest_summary(store.sessions.session("ann/a").id, "summary")
    assert latest is not None and latest.text.count("安娜：发票是") == 1


def test_what_she_released_stays_released_after_his_turns(shared: tuple[str, str]) -> None:
    ann, bob = shared
    with Store(ann) as store:  # as her update stores a pin let go for space
        session_id = store.sessions.session("a").id
        kept = [p.stored() for p in pins.parse_pins(
            store.memory.strategy_state(session_id, "summary")["pinned"])][1:]
        store.memory.set_strategy_state(session_id, "summary",
                                        {"pinned": kept, "released": 1})
    for url, name, said in ((bob, "ann/a", "鲍勃：订单呢？"), (ann, "a", "安娜：还有什么？")):
        run(url, "ask", name, said, "--provider", "scripted", code=0)
        assert pinned_texts(ann, "a") == ["ORD-7731"]
        assert state(ann, "a")["released"] == 1
        assert "五千元" not in sent_facts(ann, "a")


def test_his_own_turns_retry_undo_and_unpin_work_his_way(shared: tuple[str, str]) -> None:
    ann, bob = shared
    with Store(bob) as store:
        out, err = repl(store, "ann/a", ["鲍勃：预算改成七千元。", "/retry", "/undo",
                                         "鲍勃：预算改成七千元。"], strategy="summary")
    assert "Traceback" not in out + err
    with Store(bob) as store:
        session_id = store.sessions.session("ann/a").id
        assert [m.content for m in store.history.messages(session_id)
                if m.role == "user"][-1] == "bob: 鲍勃：预算改成七千元。"
    assert [text for _, text, _, _ in listed(bob, "ann/a")][-1] == "七千元"
    refs = {text: ref for ref, text, _, _ in listed(bob, "ann/a")}
    run(bob, "facts", "forget", "ann/a", refs["七千元"], code=0)
    run(bob, "facts", "forget", "ann/a", "p1", code=0)
    assert [text for _, text, _, _ in listed(bob, "ann/a")] == ["ORD-7731"]
    assert "五千元" not in sent_facts(bob, "ann/a")
    assert listed(ann, "a") == HERS


def test_his_copy_of_her_session_into_a_file_keeps_his_pins(
        shared: tuple[str, str], tmp_path: Path) -> None:
    # The copy held her state and his side by side: the file listed p1 and p2 twice.
    ann, bob = shared
    run(bob, "ask", "ann/a", "鲍勃：预算改成七千元。", "--provider", "scripted", code=0)
    mine = listed(bob, "ann/a")
    assert [(ref, text) for ref, text, _, _ in mine] == [
        ("p1", "五千元"), ("p2", "ORD-7731"), ("p3", "七千元")]
    copy = tmp_path / "bob.db"
    invoke("sessions", "copy", "--from", bob, "--to", str(copy), "ann/a", code=0)
    with Store(str(copy)) as store:
        [name] = [s.name for s in store.sessions.list_sessions()]
    assert listed(str(copy), name) == mine
    # Hers, copied by her, are hers alone.
    mine_too = tmp_path / "ann.db"
    invoke("sessions", "copy", "--from", ann, "--to", str(mine_too), "a", code=0)
    assert listed(str(mine_too), "a") == HERS


def test_his_unpin_in_her_session_is_in_his_copy_into_a_file(
        shared: tuple[str, str], tmp_path: Path) -> None:
    # His unpin was a row of its own (grantee-unpins), which a copy into a file left out:
    # the file listed and sent the detail he had unpinned.
    ann, bob = shared
    run(bob, "facts", "forget", "ann/a", "p1", code=0)
    for turn in range(2):  # before his turn there and after it
        mine = listed(bob, "ann/a")
        assert [ref for ref, _, _, _ in mine] == ["p2", "p3"][:turn + 1]
        copy = tmp_path / f"bob{turn}.db"
        invoke("sessions", "copy", "--from", bob, "--to", str(copy), "ann/a", code=0)
        with Store(str(copy)) as store:
            [name] = [s.name for s in store.sessions.list_sessions()]
        assert listed(str(copy), name) == mine
        assert "五千元" not in sent_facts(str(copy), name)
        run(bob, "ask", "ann/a", "鲍勃：预算改成七千元。", "--provider", "scripted", code=0)
    assert listed(ann, "a") == HERS
    assert "五千元" in sent_facts(ann, "a")


def test_her_next_turn_after_his_extracts_only_the_turns_since(
        team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    # His turn's extraction wrote the session's marker (stamped with him), which she did not
    # trust: her next turn extracted her whole history again from turn 1, after each of his.
    asked = extractions_read(monkeypatch)  # the turns each extraction request reads
    ann, bob = shared_entity_session(team)

    def values() -> set[str]:
        with Store(ann) as store:
            return {f.value for f in store.facts.facts(
                session_id=store.sessions.session("a").id)}

    hers = values()
    assert "上海" in hers
    run(bob, "ask", "ann/a", "鲍勃：我的电话是 555-0142。", "--provider", "scripted", code=0)
    asked.clear()
    run(ann, "ask", "a", "安娜：我的爱好是围棋。", "--provider", "scripted", code=0)
    assert sorted(t for turns in asked for t in turns) == [3, 4]  # his turn, hers
    assert hers | {"围棋"} <= values()


def test_her_reset_of_a_state_his_turns_stopped_on_lets_them_go_on(
        shared: tuple[str, str], team: Team) -> None:
    # His own copy of her summary state, unreadable (his SQL, an editor), stopped each of his
    # turns, saying she could reset it; her reset left his copy, and him stopped, for good.
    ann, bob = shared
    run(bob, "ask", "ann/a", "鲍勃：预算改成七千元。", "--provider", "scripted", code=0)
    with psycopg.connect(bob, autocommit=True) as conn:
        assert conn.execute("UPDATE strategy_state SET value = '{bad' WHERE strategy ="
                            " 'summary/bob' AND key = 'pinned'").rowcount == 1
    stopped = run(bob, "ask", "ann/a", "鲍勃：还有吗？", "--provider", "scripted", code=2)
    assert "reset-state a summary" in stopped.stderr
    run(ann, "sessions", "reset-state", "a", "summary", code=0)
    run(bob, "ask", "ann/a", "鲍勃：还有吗？", "--provider", "scripted", code=0)
    assert team.rows("SELECT count(*) FROM strategy_state WHERE value = '{bad'") == [(0,)]
    # His pin counter goes with hers; no id he gave out (p3) is given to another detail.
    [(his,)] = team.rows("SELECT value::int FROM strategy_state WHERE strategy = 'pins/bob'"
                         " AND key = 'last'")  # the last pin id his chatmem gave out
    run(ann, "sessions", "reset-state", "a", "pins", code=0)
    assert team.rows("SELECT count(*) FROM strategy_state WHERE strategy = 'pins/bob'") \
        == [(0,)]
    with Store(ann) as store:
        [given] = pins.allocate_ids(store, store.sessions.session("a").id, 1)
    assert given > his >= 3


def test_unsharing_drops_the_state_his_chatmem_kept_as_his_own_there(
        shared: tuple[str, str], team: Team) -> None:
    # His pins, boundary and counters (summary/bob, pins/bob) stayed in her session for good,
    # read by no one, and a later share took them up again, stale.
    ann, bob = shared
    run(bob, "ask", "ann/a", "鲍勃：预算改成七千元。", "--provider", "scripted", code=0)
    run(bob, "facts", "forget", "ann/a", "p1", code=0)

    def kept() -> list[tuple[str, str]]:
        return team.rows("SELECT DISTINCT strategy, writer FROM strategy_state"
                         " WHERE strategy LIKE '%%/%%' ORDER BY 1")

    assert kept() == [("pins/bob", "bob"), ("summary/bob", "bob")]
    run(ann, "sessions", "unshare", "a", "--with", "bob", code=0)
    assert kept() == []
    assert listed(ann, "a") == HERS
    run(ann, "sessions", "share", "a", "--with", "bob", "--write", code=0)
    assert listed(bob, "ann/a") == HERS  # from hers again, as at his first turn there



def test_his_copy_into_a_file_keeps_her_words_and_facts_hers(
        team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # His copy of her session into a file made her words and the facts she stated the
    # file's user's, his: his next turn there sent "名字 安娜, 城市 上海" as what he stated.
    # It also carries his extraction marker (behind hers): a turn there reads the turns
    # after it again, hers among them, and her facts stay as they were.
    asked = extractions_read(monkeypatch)  # the turns each extraction request reads
    ann, bob = team.url("ann"), team.url("bob")
    with Store(ann) as store:
        repl(store, "a", ["我叫安娜，我住在上海。"], strategy="entity")
    run(ann, "sessions", "share", "a", "--with", "bob", "--write", code=0)
    run(bob, "ask", "ann/a", "鲍勃：我的电话是 555-0142。", "--provider", "scripted", code=0)
    run(ann, "ask", "a", "安娜：我的爱好是围棋。", "--provider", "scripted", code=0)

    def facts(url: str) -> list[tuple[str, str, str | None]]:
        with Store(url) as store:
            [session] = store.sessions.list_sessions()
            return sorted((f.key, f.value, f.speaker) for f in store.facts.facts(
                session_id=session.id))

    def speakers(url: str) -> dict[int, str]:
        with Store(url) as store:
            [session] = store.sessions.list_sessions()
            said = {m.id: m.position for m in store.history.messages(session.id)}
            return {said[i]: name for i, name in
                    store.history.speakers(session.id, list(said)).items()}

    hers = [("名字", "安娜"), ("城市", "上海"), ("爱好", "围棋")]
    mine, his = tmp_path / "ann.db", tmp_path / "bob.db"
    invoke("sessions", "copy", "--from", ann, "--to", str(mine), "a", code=0)
    invoke("sessions", "copy", "--from", bob, "--to", str(his), "ann/a", code=0)
    assert facts(str(mine)) == sorted((k, v, None) for k, v in hers)
    assert speakers(str(mine)) == {3: "bob"}
    assert facts(str(his)) == sorted((k, v, "ann") for k, v in hers)
    assert speakers(str(his)) == {1: "ann", 3: "bob", 5: "ann"}
    asked.clear()
    with Store(str(his)) as store:
        [name] = [s.name for s in store.sessions.list_sessions()]
    run(str(his), "ask", name, "好的。", "--provider", "scripted", code=0)
    assert asked == [[3], [4]]  # from his marker: her turn 3 again, then his new one
    assert facts(str(his)) == sorted((k, v, "ann") for k, v in hers)


def test_her_purge_reaches_his_words_there_and_his_marker_reads_nothing_again(
        team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    # Untested before: her purge of 上海 in a session he wrote in (his message, the context
    # his chatmem sent and stored), and whether his extraction marker then re-reads turns.
    asked = extractions_read(monkeypatch)  # the turns each extraction request reads
    ann, bob = shared_entity_session(team)
    run(bob, "ask", "ann/a", "鲍勃：我也住在上海，叫我张三。", "--provider", "scripted", code=0)
    run(ann, "ask", "a", "安娜：我的爱好是围棋。", "--provider", "scripted", code=0)
    [(fact,)] = team.rows("SELECT id FROM facts WHERE value = '上海'")
    run(ann, "facts", "forget", "a", str(fact), "--purge", "--yes", code=0)
    tables = [r[0] for r in team.rows("SELECT relname FROM pg_class WHERE relkind = 'r'"
                                      " AND relnamespace = current_schema()::regnamespace")]
    for table in tables:
        assert team.rows(f"SELECT count(*) FROM {table} x WHERE x::text LIKE '%%上海%%'") \
            == [(0,)], table
    assert team.rows("SELECT count(*) FROM messages WHERE content LIKE '%%[forgotten]，叫我张三%%'"
                     " AND writer = 'bob' AND role = 'user'") == [(1,)]
    asked.clear()
    run(bob, "ask", "ann/a", "鲍勃：好的。", "--provider", "scripted", code=0)
    assert asked == [[5]]  # his new turn only: nothing read again, nothing erased back
    with Store(ann) as store:
        values = {f.value for f in store.facts.facts(session_id=store.sessions.session("a").id)}
    assert values == {"安娜", "围棋"}


def test_removing_a_person_drops_the_state_his_chatmem_kept_in_others_sessions(
        shared: tuple[str, str], team: Team) -> None:
    # remove-user erased every share to him but left his own state in her session
    # (summary/bob, pins/bob), for whoever is made bob next to take up as his.
    ann, bob = shared
    run(bob, "ask", "ann/a", "鲍勃：预算改成七千元。", "--provider", "scripted", code=0)
    assert team.rows("SELECT count(*) FROM strategy_state WHERE strategy LIKE '%%/bob'") \
        != [(0,)]
    admin = team.server.url(team.database)
    invoke("admin", "remove-user", "bob", "--yes", "--db", admin, code=0)
    assert team.rows("SELECT count(*) FROM strategy_state WHERE strategy LIKE '%%/bob'") \
        == [(0,)]
    assert listed(ann, "a") == HERS


def test_a_downgrade_to_read_drops_his_own_state_and_he_reads_hers(
        shared: tuple[str, str]) -> None:
    # Shared for reading, his own copy stayed: his listing kept p3 (七千元), his pins and
    # boundary as at his last turn, while hers went on; a later write share took them up.
    ann, bob = shared
    run(bob, "ask", "ann/a", "鲍勃：预算改成七千元。", "--provider", "scripted", code=0)
    assert [ref for ref, *_ in listed(bob, "ann/a")] == ["p1", "p2", "p3"]
    run(ann, "sessions", "share", "a", "--with", "bob", code=0)
    assert listed(bob, "ann/a") == listed(ann, "a") == HERS
    run(ann, "ask", "a", "安娜：发票是 INV-5521。", "--provider", "scripted", code=0)
    assert listed(bob, "ann/a") == listed(ann, "a")
