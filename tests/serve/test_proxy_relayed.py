"""A group chat a write share's grantee relays into the owner's PostgreSQL session through
`chatmem serve` (his client names each member): a fact a member states there is that
member's as relayed through him (`carol (via bob)`), not his (p032). The server still
stamps him on any other speaker he names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from cli_runner import run
from grantees import profile, session_facts, shared_after, shared_session, sql_as
from pg import NOW, OldHistory, PostgresServer, Team, migrated_before, older_chatmem_refuses

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")
pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

from starlette.testclient import TestClient

from chatmem.config.settings import Settings
from chatmem.privacy.mentions import MARKER
from chatmem.serve.proxy import build_app

P032 = "p032_relayed_speakers_keep_their_names"


def relay(bob: str, name: str | None, said: str) -> None:
    """His client's message in ann/proj, under the member's `name` it gives (or none)."""
    message = {"role": "user", "content": said, **({"name": name} if name else {})}
    with TestClient(build_app(Settings(provider="scripted", db=bob, user_facts=True))) as http:
        answer = http.post("/v1/chat/completions",
                           headers={"X-Chatmem-Conversation": quote("ann/proj")},
                           json={"model": "scripted", "messages": [message]})
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(("hers", "her_value", "said", "key", "value"), [
    ("我住在杭州。", "杭州", "我住在深圳。", "城市", "深圳"),
    ("My name is Ann.", "Ann", "My name is Carol.", "name", "Carol"),
])
@pytest.mark.parametrize(("name", "credited"), [
    ("carol", "carol (via bob)"),
    ("小红", "小红 (via bob)"),
    # His client naming her is still him relaying; naming himself (or no one) is him.
    ("ann", "ann (via bob)"),
    ("bob", "bob"),
    (None, "bob"),
])
def test_a_fact_a_member_states_through_his_client_is_that_members(
        team: Team, tmp_path: Path, hers: str, her_value: str, said: str, key: str,
        value: str, name: str | None, credited: str) -> None:
    ann, bob, config = shared_after(team, tmp_path, hers)
    relay(bob, name, said)
    assert session_facts(ann, "proj", config) == {key: (value, credited)}
    assert session_facts(bob, "ann/proj", config) == {key: (value, credited)}
    # Neither's profile takes it: it is no one's own.
    assert profile(bob, config) == {}
    assert profile(ann, config) == {key: her_value}


def facts_of(team: Team) -> list[tuple[str, str | None]]:
    return team.rows("SELECT value, speaker FROM facts WHERE scope = 'session' ORDER BY id")


def test_by_sql_he_names_only_members_relayed_through_him(team: Team) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    session_id = shared_session(ann)
    insert = ("INSERT INTO facts (scope, session_id, key, value, created_at, updated_at,"
              " speaker) VALUES ('session', %s, %s, %s, %s, %s, %s)")
    for key, speaker in [("a", "carol (via bob)"), ("b", "ann"), ("c", "carol (via ann)"),
                         ("d", " (via bob)"), ("e", None), ("f", "bob (via bob)x")]:
        assert sql_as(bob, insert, [session_id, key, f"v{key}", NOW, NOW, speaker]) == 1
    assert facts_of(team) == [("va", "carol (via bob)"), ("vb", "bob"), ("vc", "bob"),
                              ("vd", "bob"), ("ve", "bob"), ("vf", "bob")]
    # Nor does an update make one of his another's.
    assert sql_as(bob, "UPDATE facts SET speaker = 'carol (via ann)' WHERE key = 'a'") == 1
    assert facts_of(team)[0] == ("va", "bob")


@pytest.fixture
def before_p032(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, P032) as old:
        yield old


def test_an_older_database_upgrades_keeping_its_facts(
        before_p032: OldHistory, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p032
    ann, bob = old.url("ann"), old.url("bob")
    session_id = shared_session(ann)
    insert = ("INSERT INTO facts (scope, session_id, key, value, created_at, updated_at,"
              " speaker) VALUES ('session', %s, %s, %s, %s, %s, %s)")
    assert sql_as(bob, insert, [session_id, "城市", "深圳", NOW, NOW, "carol (via bob)"]) == 1
    with old.server.admin(old.database) as conn:
        stored = conn.execute("SELECT * FROM facts").fetchall()
    assert len(stored) == 1
    PostgresBackend(old.url(old.keeper)).close()
    with old.server.admin(old.database) as conn:
        assert conn.execute("SELECT * FROM facts").fetchall() == stored
        assert conn.execute("SELECT speaker FROM facts").fetchall() == [("bob",)]
    assert sql_as(bob, insert, [session_id, "名字", "卡萝", NOW, NOW, "carol (via bob)"]) == 1
    with old.server.admin(old.database) as conn:
        assert conn.execute("SELECT speaker FROM facts ORDER BY id").fetchall() == [
            ("bob",), ("carol (via bob)",)]
    older_chatmem_refuses(ann, P032, monkeypatch)


@pytest.mark.parametrize(("name", "said", "key", "value"), [
    ("Carol", "My name is Carol.", "name", "Carol"),
    ("小红", "我叫小红。", "名字", "小红"),
])
def test_her_purge_of_a_relayed_members_name_leaves_the_facts_the_member_stated(
        team: Team, tmp_path: Path, name: str, said: str, key: str, value: str) -> None:
    """Ann purging carol's name erased it from the messages and facts, but the facts carol
    stated through bob's client kept `carol (via bob)` as their speaker (privacy71). Now
    they are the forgotten member's, relayed by him: p032's trigger still reads them so."""
    ann, bob, config = shared_after(team, tmp_path, "I live in Rome.")
    relay(bob, name, said)
    relay(bob, name, "我住在深圳。")
    relay(bob, None, "I live in Oslo.")
    facts = json.loads(run(ann, "facts", "list", "proj", "--json", "--config", str(config),
                           code=0).stdout)
    (hers,) = [f["id"] for f in facts if f["value"] == value]
    run(ann, "facts", "forget", "proj", str(hers), "--purge", "--yes", "--config", str(config),
        code=0)
    forgotten = f"{MARKER} (via bob)"
    assert [r for r in facts_of(team) if r[0] != "Rome"] == [("深圳", forgotten), ("Oslo", "bob")]
    exported = run(ann, "sessions", "export", "proj", "--config", str(config), code=0).stdout
    listed = run(bob, "facts", "list", "ann/proj", "--json", "--config", str(config),
                 code=0).stdout
    for text in (exported, listed, *(str(r) for r in facts_of(team))):
        assert name not in text and name.lower() not in text
    # His client relaying her again is a member of his, as before: a fact of its own.
    relay(bob, name, "我住在广州。")
    assert [r for r in facts_of(team) if r[0] != "Rome"] == [
        ("深圳", forgotten), ("Oslo", "bob"), ("广州", f"{name} (via bob)")]
