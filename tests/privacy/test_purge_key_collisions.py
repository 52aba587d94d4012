"""A purge that rewrites two keys into one keeps them two, and says so.

Review (attacker, today's surfaces), finding 3: purging `sister: Annabel` then
`brother: Zebulon` rewrote `annabel birthday` and `zebulon birthday` both to
"[forgotten] birthday": two live facts under one key, and the next write to that key
updated one and left the other (one key holds one live fact per owner). A strategy's
state keyed by names ({"Annabel": 2, "Zebulon": 1}) kept only the later count.
"""

from __future__ import annotations

import json

from cli_runner import invoke
from conftest import History

from chatmem.privacy.mentions import MARKER
from chatmem.store import FactScope


def _live(history: History, **owner: object) -> dict[str, str]:
    with history.open() as store:
        return {f.key: f.value for f in store.facts.facts(**owner)}  # type: ignore[arg-type]


def test_on_every_backend_a_rewritten_key_another_fact_holds_is_made_distinct(
        history: History) -> None:
    db = str(history.location)
    with history.open() as store:
        # A purge rewrites the profile's facts when the profile has a session.
        store.sessions.create_session("k", "entity", user="u")
        for key, value in (("sister", "Annabel"), ("brother", "Zebulon"),
                           ("annabel birthday", "May 4"), ("zebulon birthday", "June 9")):
            store.facts.upsert_fact(key, value, scope=FactScope.USER, user="u")
    invoke("facts", "forget", "sister", "--purge", "-y", "-u", "u", "--db", db, code=0)
    dry = invoke("facts", "forget", "brother", "--purge", "--dry-run", "-u", "u", "--db", db,
                 code=0)
    assert f"1 other fact would be keyed {MARKER} birthday (2)" in " ".join(dry.stderr.split())
    listed = json.loads(invoke("facts", "forget", "brother", "--purge", "--dry-run", "--json",
                               "-u", "u", "--db", db, code=0).stdout)
    assert listed["distinct_keys"] == [f"{MARKER} birthday (2)"]
    invoke("facts", "forget", "brother", "--purge", "-y", "-u", "u", "--db", db, code=0)
    assert _live(history, user="u") == {f"{MARKER} birthday": "May 4",
                                        f"{MARKER} birthday (2)": "June 9"}
    # Writing the plain key again changes the one fact it names, and no other.
    with history.open() as store:
        store.facts.upsert_fact(f"{MARKER} Birthday", "May 5", scope=FactScope.USER, user="u")
    assert _live(history, user="u") == {f"{MARKER} Birthday": "May 5",
                                        f"{MARKER} birthday (2)": "June 9"}


def test_a_fact_whose_key_is_not_rewritten_keeps_it(history: History) -> None:
    with history.open() as store:
        session = store.sessions.create_session("kc", "entity").id
        for key, value in (("name", "Zebulon"), (f"{MARKER} birthday", "May 4"),
                           (f"{MARKER} birthday (2)", "May 5"), ("zebulon birthday", "June 9"),
                           ("ZEBULON age", "9"), ("age", "40")):
            store.facts.upsert_fact(key, value, scope=FactScope.SESSION, session_id=session)
    invoke("facts", "forget", "kc", "name", "--purge", "-y", "--db", str(history.location),
           code=0)
    with history.open() as store:
        assert _live(history, session_id=store.sessions.session("kc").id) == {
            f"{MARKER} birthday": "May 4", f"{MARKER} birthday (2)": "May 5",
            f"{MARKER} birthday (3)": "June 9", f"{MARKER} age": "9", "age": "40"}


def test_on_every_backend_state_keys_the_rewrite_makes_one_stay_two(history: History) -> None:
    with history.open() as store:
        session = store.sessions.create_session("sk", "entity").id
        store.facts.upsert_fact("name", "Zebulon", scope="session", session_id=session)
        store.memory.set_strategy_state(session, "names", {
            "counts": {"Zebulon": 2, MARKER: 1, "ZEBULON": 3, "@covers_turn": 4}})
    invoke("facts", "forget", "sk", "name", "--purge", "--yes", "--db",
           str(history.location), code=0)
    with history.open() as store:
        state = store.memory.strategy_state(store.sessions.session("sk").id, "names")
    assert state == {"counts": {f"{MARKER} (2)": 2, MARKER: 1, f"{MARKER} (3)": 3,
                                "@covers_turn": 4}}


def test_on_every_backend_a_profile_without_sessions_has_its_other_facts_rewritten(
        history: History) -> None:
    # The rewrite stopped at "no session": a profile whose sessions were all deleted kept
    # the purged value in its other facts' keys and values.
    db = str(history.location)
    with history.open() as store:
        for key, value in (("brother", "Zebulon"), ("zebulon birthday", "June 9"),
                           ("note", "call Zebulon on Sunday")):
            store.facts.upsert_fact(key, value, scope=FactScope.USER, user="u")
    invoke("facts", "forget", "brother", "--purge", "-y", "-u", "u", "--db", db, code=0)
    assert _live(history, user="u") == {f"{MARKER} birthday": "June 9",
                                        "note": f"call {MARKER} on Sunday"}
