"""A purge reaches every copy of the value: fact keys and the keys of a strategy's state.

Review of s52 (erase report), findings 1 and 2: the value stayed in fact keys ("zebulon's
birthday", sent with the next turn) and in the keys of a strategy's JSON state
({"counts": {"Zebulon": 2}}).
"""

from __future__ import annotations

from cli_runner import invoke
from conftest import History

from chatmem.privacy.mentions import MARKER


def _rows(history: History, sql: str) -> list[tuple[object, ...]]:
    with history.open() as store:
        return [tuple(r) for r in store.db.execute(sql).fetchall()]


def test_on_every_backend_a_purge_erases_the_value_from_fact_keys(history: History) -> None:
    with history.open() as store:
        session = store.sessions.create_session("fh", "entity").id
        store.facts.upsert_fact("name", "Zebulon", scope="session", session_id=session)
        store.facts.upsert_fact("zebulon's birthday", "May 3", scope="session",
                                session_id=session)
        store.facts.upsert_fact("zebulon's birthday", "May 4", scope="session",
                                session_id=session)
    invoke("facts", "forget", "fh", "name", "--purge", "--yes", "--db",
           str(history.location), code=0)
    keys = _rows(history, "SELECT key, value FROM facts")
    assert keys == [(f"{MARKER}'s birthday", "May 4")]
    assert _rows(history, "SELECT key, value FROM fact_history") == [
        (f"{MARKER}'s birthday", "May 3")]


def test_on_every_backend_a_purge_erases_the_value_from_json_keys_of_state(
        history: History) -> None:
    with history.open() as store:
        session = store.sessions.create_session("pl", "entity").id
        store.facts.upsert_fact("name", "Zebulon", scope="session", session_id=session)
        store.memory.set_strategy_state(session, "names", {
            "counts": {"My": 1, "Zebulon": 2, "Yolanda": 1}, "seen": ["Zebulon", "Yolanda"]})
    invoke("facts", "forget", "pl", "name", "--purge", "--yes", "--db",
           str(history.location), code=0)
    with history.open() as store:
        state = store.memory.strategy_state(store.sessions.session("pl").id, "names")
    assert state == {"counts": {"My": 1, MARKER: 2, "Yolanda": 1},
                     "seen": [MARKER, "Yolanda"]}
