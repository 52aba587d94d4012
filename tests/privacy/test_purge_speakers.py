"""A purge of a group chat member's name takes it off the facts she stated too.

Review (privacy71), finding 1: with serve relaying a group chat (`{"name": "carol", …}`),
purging "Carol" erased her name from messages, facts and their history, but every fact she
stated kept `speaker = carol`: `facts list` showed `by carol`, `--json` and exports carried
it. A speaker holding a purged value is rewritten as any stored text is (`[forgotten]`); two
speakers the rewrite makes one stay two (`[forgotten] (2)`), as keys do, since one key
holds one live value per speaker.
"""

from __future__ import annotations

import json

from cli_runner import invoke
from conftest import History

from chatmem.privacy.mentions import MARKER
from chatmem.store import FactScope


def _speakers(history: History, session: str) -> dict[tuple[str, str], str | None]:
    with history.open() as store:
        session_id = store.sessions.session(session).id
        return {(f.key, f.value): f.speaker
                for f in store.facts.facts(session_id=session_id)}


def test_on_every_backend_a_purged_members_name_leaves_the_facts_she_stated(
        history: History) -> None:
    db = str(history.location)
    with history.open() as store:
        session = store.sessions.create_session("群聊", "entity").id
        for key, value, speaker in (
                ("friend", "Carol", None), ("朋友", "小红", None),
                ("city", "Paris", "carol"), ("job", "nurse", "carol"),
                ("城市", "深圳", "小红"), ("city", "Rome", "dave"),
                ("age", "40", None), ("city", "Oslo", f"{MARKER}")):
            store.facts.upsert_fact(key, value, scope=FactScope.SESSION, session_id=session,
                                    speaker=speaker)
    dry = invoke("facts", "forget", "群聊", "friend", "--purge", "--dry-run", "--db", db,
                 code=0)
    assert "fact" in dry.stderr
    invoke("facts", "forget", "群聊", "friend", "--purge", "-y", "--db", db, code=0)
    invoke("facts", "forget", "群聊", "朋友", "--purge", "-y", "--db", db, code=0)
    speakers = _speakers(history, "群聊")
    # Each forgotten member stays one speaker of her own: her city and job together, apart
    # from another forgotten earlier (Oslo's), and from the user's and dave's.
    assert speakers == {("city", "Paris"): f"{MARKER} (2)", ("job", "nurse"): f"{MARKER} (2)",
                        ("城市", "深圳"): f"{MARKER} (3)", ("city", "Rome"): "dave",
                        ("age", "40"): None, ("city", "Oslo"): MARKER}
    listed = invoke("facts", "list", "群聊", "--json", "--db", db, code=0).stdout
    assert "carol" not in listed.lower() and "小红" not in listed
    assert {f["speaker"] for f in json.loads(listed)} == {
        f"{MARKER} (2)", f"{MARKER} (3)", "dave", None, MARKER}
    # The next value a forgotten speaker's key gets replaces hers, and no one else's.
    with history.open() as store:
        session = store.sessions.session("群聊").id
        store.facts.upsert_fact("city", "Lyon", scope=FactScope.SESSION, session_id=session,
                                speaker=f"{MARKER} (2)")
    assert _speakers(history, "群聊")[("city", "Lyon")] == f"{MARKER} (2)"
    assert ("city", "Paris") not in _speakers(history, "群聊")


def test_a_relayed_speaker_made_distinct_keeps_who_relayed_it_last(history: History) -> None:
    """`carol (via bob)` purged beside a member forgotten before: `[forgotten] (2) (via bob)`,
    his name still ending it, as PostgreSQL's speaker trigger reads a relayed one (p032)."""
    with history.open() as store:
        session = store.sessions.create_session("g", "entity").id
        for key, value, speaker in (("friend", "Carol", None), ("city", "Paris", "carol (via bob)"),
                                    ("city", "Oslo", f"{MARKER} (via bob)"),
                                    ("city", "Rome", f"{MARKER} (2)")):
            store.facts.upsert_fact(key, value, scope=FactScope.SESSION, session_id=session,
                                    speaker=speaker)
    dry = invoke("facts", "forget", "g", "friend", "--purge", "--dry-run", "--db",
                 str(history.location), code=0)
    assert f"replaced by {MARKER} in 1 other fact" in " ".join(dry.stderr.split())
    invoke("facts", "forget", "g", "friend", "--purge", "-y", "--db", str(history.location),
           code=0)
    assert _speakers(history, "g") == {("city", "Paris"): f"{MARKER} (2) (via bob)",
                                       ("city", "Oslo"): f"{MARKER} (via bob)",
                                       ("city", "Rome"): f"{MARKER} (2)"}
