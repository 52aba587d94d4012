"""A purge's dry run reports what the purge then changes, and the purge reaches every copy.

Review of s52 (erase report), findings 1, 2, 3 and 6: the value stayed in fact keys
("zebulon's birthday", sent with the next turn) and in the keys of a strategy's JSON state
({"counts": {"Zebulon": 2}}); the dry run counted messages only ("0 mentions in 0 messages
of 0 sessions") while the purge rewrote turns, system prompts and other facts; another fact
whose whole value was the purged one stayed live as "[forgotten]", sent with every turn.
The dry run now reports the plan the purge applies (RedactionTables.plan_rewrite).
"""

from __future__ import annotations

import json
import re

from cli_runner import chat, invoke
from conftest import History

from chatmem.privacy.mentions import MARKER
from chatmem.privacy.purge import preview, purge_fact
from chatmem.store import Place


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
    dry = json.loads(invoke("facts", "forget", "pl", "name", "--purge", "--dry-run", "--json",
                            "--db", str(history.location), code=0).stdout)
    assert dry["changes"] == {"strategy_state": 2}  # its two rows, counts and seen
    invoke("facts", "forget", "pl", "name", "--purge", "--yes", "--db",
           str(history.location), code=0)
    with history.open() as store:
        state = store.memory.strategy_state(store.sessions.session("pl").id, "names")
    assert state == {"counts": {"My": 1, MARKER: 2, "Yolanda": 1},
                     "seen": [MARKER, "Yolanda"]}


def _scattered(location: str) -> None:
    """The report's sessions: the value in a system prompt, a fact of another session (its
    whole value), messages, turns and an entity strategy's memory."""
    chat(location, "sp", ["/remember name: Zebulon", "hello"], "-s", "entity", "--system",
         "You assist Zebulon kindly", code=0)
    chat(location, "sp2", ["/remember nick: Zebulon", "hey", "Zebulon again, and note: Zebulon"
                           " likes tea"], "-s", "window+entity", code=0)


def _after_value(line: str) -> str:
    return line[line.index("; its value"):]


def test_the_dry_run_reports_what_the_purge_then_changes(history: History) -> None:
    location = str(history.location)
    _scattered(location)
    args = ("facts", "forget", "sp", "name", "--purge", "--db", location)
    plan = json.loads(invoke(*args, "--dry-run", "--json", code=0).stdout)
    told = invoke(*args, "--dry-run", code=0).stderr
    # Not only messages: what the purge rewrites everywhere, and the fact it deletes.
    assert {"messages", "turns", "system_prompts", "facts_deleted"} <= set(plan["changes"])
    assert plan["sessions"] == 2 and plan["deleted_facts"] == ["nick"]
    assert told.rstrip().endswith("; nothing was changed")
    done = invoke(*args, "--yes", code=0).stderr.splitlines()[0]
    assert done.startswith("erased fact 1: name (session); its value was replaced by")
    # The same counts, word for word but the tense.
    dry_said = _after_value(told.rstrip().removesuffix("; nothing was changed"))
    assert re.sub(r"\b(was|were) (replaced|updated|dropped|deleted)\b", r"would be \2",
                  _after_value(done)) == dry_said
    assert "1 other fact (nick) would be deleted" in dry_said
    # The fact whose whole value was erased is gone, not sent as [forgotten] every turn.
    assert _rows(history, "SELECT key, value FROM facts") == []
    shown = chat(location, "sp2", ["hello"], "--show-prompt", code=0).stdout
    assert "Zebulon" not in shown and f'"{MARKER}"' not in shown


def test_the_preview_is_the_plan_the_purge_applies(history: History) -> None:
    _scattered(str(history.location))
    with history.open() as store:
        fact = next(f for f in store.facts.facts() if f.key == "name")
        planned = preview(store, fact)
        done = purge_fact(store, fact.id).redaction
    assert planned.counts == done.counts and planned.sessions == done.sessions
    assert planned.deleted_facts == done.deleted_facts
    assert done.counts[Place.TURNS] >= 3 and done.counts[Place.SYSTEM_PROMPTS] >= 1


def test_on_every_backend_a_purged_value_that_names_a_field_leaves_chatmems_own_json_whole(
        history: History) -> None:
    # Second reading: purging "Content" renamed every stored message's "content" field in
    # turns.context (inspect then failed with KeyError) and stopped an entity session's purge.
    for name, strategy in (("w1", "window"), ("e1", "entity")):
        chat(history.location, name, ["/remember magazine: Content",
                                      "I read the latest issue of Content today"],
             "-s", strategy, code=0)
        invoke("facts", "forget", name, "magazine", "--purge", "--yes", "--db",
               str(history.location), code=0)
        shown = json.loads(invoke("inspect", name, "--json", "--db", str(history.location),
                                  code=0).stdout)
        texts = json.dumps(shown, ensure_ascii=False)
        assert "Content" not in texts and MARKER in texts
        assert shown["messages"] and all("content" in m for m in shown["messages"])


def test_on_every_backend_a_pin_the_purge_empties_is_dropped_and_said(history: History) -> None:
    """A day of use: after the purge the pin of the e-mail stayed as a bare `[forgotten]`,
    listed (`p1 (pinned) [forgotten]`) and sent in the facts part of every turn."""
    location = str(history.location)
    invoke("ask", "p", "I live in Oslo. My email is bo@example.org, order ORD-7731",
           "--provider", "scripted", "-s", "summary+entity", "--save", "--no-stdin",
           "--db", location, code=0)
    listed = invoke("facts", "list", "p", "--json", "--db", location, code=0).stdout
    assert "bo@example.org" in listed and "ORD-7731" in listed
    args = ("facts", "forget", "email", "--session", "p", "--purge", "--db", location)
    dry = json.loads(invoke(*args, "--dry-run", "--json", code=0).stdout)
    assert dry["dropped_pins"] == ["p1"]
    said = invoke(*args, "--yes", code=0).stderr
    assert "1 pinned detail (p1) was dropped" in " ".join(said.split())
    pins = [f for f in json.loads(invoke("facts", "list", "p", "--json", "--db", location,
                                         code=0).stdout) if str(f["id"]).startswith("p")]
    assert [(p["id"], p["value"]) for p in pins] == [("p2", "ORD-7731")]  # its id kept
    shown = invoke("inspect", "p", "--next", "hi", "--provider", "scripted", "--db", location,
                   code=0).stdout
    assert f"- {MARKER}" not in shown and "- ORD-7731" in shown
