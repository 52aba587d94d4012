"""A purge erases a mention from the keys a strategy's state rows are stored under, and from
every key inside their values, but never from the keys chatmem's own code reads by name.

Plugin review (s53), HIGH: a plugin's `env.state.set(self.name, **{"seen My sister Alice
Wong lives in Boston.": 1})` kept the purged name in `strategy_state.key`, and a handle
`{"@Alice Wong": 2}` inside a value kept it too ("@" keys were taken for chatmem's own;
chatmem writes none inside a value, only the row key @covers_turn).
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import chat, invoke
from conftest import History

from chatmem.memory import extraction, pins, sensitive_turns
from chatmem.memory.summary import SummaryStrategy
from chatmem.memory.summary_buffer import SummaryBufferStrategy
from chatmem.privacy.mentions import MARKER
from chatmem.store import Store
from chatmem.store.rewritten_keys import OWN_STATE_KEYS
from chatmem.store.state_coverage import COVERS_KEY
from chatmem.store.writer_state import PER_WRITER

SAID = "seen My sister {} lives in Boston."


def _state_rows(history: History, session: str) -> dict[tuple[str, str], object]:
    with history.open() as store:
        sid = store.sessions.session(session).id
        return {(owner, key): json.loads(value) for owner, key, value in store.db.execute(
            "SELECT strategy, key, value FROM strategy_state WHERE session_id = ?",
            [sid]).fetchall()}


def test_on_every_backend_a_purge_rewrites_a_plugins_row_keys_and_handles(
        history: History) -> None:
    db = str(history.location)
    with history.open() as store:
        session = store.sessions.create_session("kp", "entity").id
        store.facts.upsert_fact("sister", "Alice Wong", scope="session", session_id=session)
        store.memory.set_strategy_state(session, "keeper", {
            SAID.format("Alice Wong"): 1,
            SAID.format("ALICE WONG"): 2,  # rewritten into the key above
            SAID.format(MARKER): 3,  # a key the rewrite gives, held already
            "handles": {"@Alice Wong": 2, "@Bob": 1},
            "last": "I met Alice Wong again."}, covers_turn=2)
    dry = json.loads(invoke("facts", "forget", "kp", "sister", "--purge", "--dry-run",
                            "--json", "--db", db, code=0).stdout)
    assert dry["changes"] == {"strategy_state": 4}  # two rows by key, two by value
    invoke("facts", "forget", "kp", "sister", "--purge", "--yes", "--db", db, code=0)
    assert _state_rows(history, "kp") == {
        ("keeper", SAID.format(MARKER)): 3,
        ("keeper", SAID.format(MARKER) + " (2)"): 2,  # numbered in the order of the old keys
        ("keeper", SAID.format(MARKER) + " (3)"): 1,
        ("keeper", "handles"): {f"@{MARKER}": 2, "@Bob": 1},
        ("keeper", "last"): f"I met {MARKER} again.",
        ("keeper", COVERS_KEY): 2}


def test_on_every_backend_chatmems_own_state_keys_stay_and_a_plugins_of_one_name_do_not(
        history: History) -> None:
    own = {(owner, key): 1 for owner, keys in OWN_STATE_KEYS.items() for key in keys}
    with history.open() as store:
        sid = store.sessions.create_session("ok", "entity").id
        for owner in {*OWN_STATE_KEYS, "keeper"}:
            store.memory.set_strategy_state(sid, owner, {key: 1 for o, key in own if o == owner},
                                            covers_turn=1)
        store.memory.set_strategy_state(sid, "keeper", {"last": 1, "behind": 1})
        # Every text holds "": every row is read, every key and value upper-cased.
        store.redactions.rewrite_stored_text([sid], None, [""], str.upper)
    covers = {(owner, COVERS_KEY): 1 for owner in {*OWN_STATE_KEYS, "keeper"}}
    assert _state_rows(history, "ok") == {**own, **covers, ("keeper", "LAST"): 1,
                                          ("keeper", "BEHIND"): 1}


def test_the_built_in_owners_are_the_ones_memory_names() -> None:
    assert set(OWN_STATE_KEYS) == {SummaryStrategy.name, SummaryBufferStrategy.name,
                                   extraction.STATE_KEY, pins.COUNTER,
                                   sensitive_turns.SENSITIVE_KEY}
    for summary in (SummaryStrategy.name, SummaryBufferStrategy.name):
        assert {pins.PINNED_KEY, pins.UNPINNED_KEY} <= OWN_STATE_KEYS[summary]


def test_every_key_the_built_ins_store_is_one_a_purge_keeps(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    chat(db, "b1", ["my password is hunter2hunter2 and order ORD-55123 ships to 12 Elm Street",
                    "the meeting is on 2024-05-06 at 10:30 in Room 4B",
                    "more words here about Canada", "and more words here", "yet more words"],
         "-s", "entity+summary-buffer:max_tokens=80", code=0)
    with Store(db) as store:
        rows = {(owner, key) for owner, key in store.db.execute(
            "SELECT strategy, key FROM strategy_state").fetchall()}
    assert {owner for owner, _ in rows} == {"facts", "summary-buffer", "sensitive"}
    assert all(key == COVERS_KEY or key in OWN_STATE_KEYS[owner] for owner, key in rows)


def test_a_grantees_own_summary_state_keeps_its_keys_through_a_purge(
        history: History) -> None:
    # A write share's grantee keeps his summary state and pin counter under OWNER/ROLE
    # (store.writer_state.PER_WRITER): a purge of "pinned" renamed his pins' key, and he
    # lost them (his counter's `last`, his `released`, `behind` alike).
    own = {(f"{owner}/bob", key): 1 for owner in PER_WRITER for key in OWN_STATE_KEYS[owner]}
    with history.open() as store:
        sid = store.sessions.create_session("ok", "summary").id
        for owner in PER_WRITER:
            store.memory.set_strategy_state(sid, f"{owner}/bob",
                                            dict.fromkeys(OWN_STATE_KEYS[owner], 1))
        store.redactions.rewrite_stored_text([sid], None, [""], str.upper)
    assert _state_rows(history, "ok") == own
