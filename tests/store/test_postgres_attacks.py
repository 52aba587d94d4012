"""Issue 28's attacks on a shared PostgreSQL history: nobody writes where they don't belong.

Two roles on the test server: ann attacks, bob is the victim. Every table of user data
is found in the catalogue (a new table is attacked as soon as it exists, and this file
fails until `fill` gives it a row), and on each ann tries what the issue found open:
moving her rows into bob's session, writing into it, changing or deleting his rows,
taking them over, naming ids and reading the answer of a key check, writing the word
statistics; then the same on a session bob shares read-only, and on the rows she wrote
into a session he shared for writing and then unshared. Each move must be refused (an
error of class 42501, or no row reached), two probes that differ only in whether an id
exists must fail alike, and bob's `sessions show`, `inspect --json` and `export` must
come out byte-identical before and after.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer
from cli_runner import invoke
from pg import PostgresServer, Team, migrated_before
from registered import create_strategy, open_session

from chatmem import fts
from chatmem.config.settings import Settings
from chatmem.images import ImageData
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import LeaseHolder, Store, VectorRow
from chatmem.store.postgres_access import USER_TABLES

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

ATTACKER, VICTIM = "ann", "bob"
REFUSED = "42501"
"""insufficient_privilege: row-level security, a missing column grant, chatmem's triggers."""
BOOKKEEPING = {"chatmem_meta", "chatmem_migrations", "chatmem_erasing"}
"""Tables of no one's data (chatmem_erasing: no role but the tables' owner has any right on
it, test_postgres_grantee_erasures)."""
LINES = ["My name is Ana and my order is ORD-7731.", "我们五月去杭州旅行，预算五千元。",
         "Actually my order is ORD-7732 now.", "请记住：酒店是琉璃客栈，三月十五日入住。"]


# -- the database, its catalogue, and rows in every table -----------------------------------


@dataclass
class Catalogue:
    tables: list[str]
    columns: dict[str, list[str]]
    insertable: dict[str, list[str]]
    updatable: dict[str, list[str]]
    references: dict[str, dict[str, str]]
    """table → column → the table its foreign key points at."""

    def session_of(self, table: str) -> str:
        """SQL for the session a row of `table` belongs to."""
        columns = self.columns[table]
        if table == "sessions":
            return "id"
        if "session_id" in columns and table != "facts":
            return "session_id"
        if table == "facts":
            return "coalesce(session_id, -1)"
        if "message_id" in columns:
            return f"(SELECT m.session_id FROM messages m WHERE m.id = {table}.message_id)"
        return f"(SELECT f.session_id FROM facts f WHERE f.id = {table}.fact_id)"


def catalogue(team: Team) -> Catalogue:
    tables = [r[0] for r in team.rows(
        "SELECT relname FROM pg_class WHERE relkind = 'r' AND relnamespace ="
        " current_schema()::regnamespace ORDER BY relname") if r[0] not in BOOKKEEPING]
    columns: dict[str, list[str]] = {}
    for table, column in team.rows(
            "SELECT table_name, column_name FROM information_schema.columns WHERE"
            " table_schema = current_schema() ORDER BY table_name, ordinal_position"):
        columns.setdefault(table, []).append(column)
    granted: dict[str, dict[str, list[str]]] = {"INSERT": {}, "UPDATE": {}}
    for kind, table, column in team.rows(
            "SELECT p.privilege_type, p.table_name, p.column_name FROM"
            " information_schema.column_privileges p JOIN information_schema.columns c"
            " USING (table_schema, table_name, column_name) WHERE p.grantee = 'PUBLIC'"
            " AND p.privilege_type IN ('INSERT', 'UPDATE') AND p.table_schema ="
            " current_schema() ORDER BY c.ordinal_position"):
        granted[kind].setdefault(table, []).append(column)
    references: dict[str, dict[str, str]] = {}
    for table, column, target in team.rows(
            "SELECT k.conrelid::regclass::text, a.attname, k.confrelid::regclass::text"
            " FROM pg_constraint k JOIN pg_attribute a ON a.attrelid = k.conrelid"
            " AND a.attnum = k.conkey[1] WHERE k.contype = 'f' ORDER BY 1, 2"):
        references.setdefault(table, {})[column] = target
    return Catalogue(tables, columns, granted["INSERT"], granted["UPDATE"], references)


def fill(url: str, name: str) -> int:
    """A session of the connecting role with rows in every table of user data."""
    with Store(url) as store:
        settings = Settings(system="Be brief.", user="team", user_facts=True)
        engine = open_session(store, settings, ScriptedProvider(), name, strategy="entity")
        for line in LINES:
            engine.run_turn(line)
        engine.set_strategy(create_strategy("summary", {}))
        engine.run_turn("Summing up: ORD-7732, 杭州, 三月十五日.")
        session_id = engine.session.id
        messages = store.history.messages(session_id)
        for value in ("Paris", "杭州"):  # the second keeps the first in fact_history
            store.facts.upsert_fact("city", value, scope="session", session_id=session_id,
                                    source_message_id=messages[1].id, source_turn=2)
        store.facts.upsert_fact("name", name, scope="user", user="team",
                                source_session_id=session_id)
        store.sessions.add_probes(session_id, [{"after_position": 2, "question": "where?",
                                                "expect_ids": [], "expect_text": ["杭州"]}])
        store.vectors.save_vectors("stub", 2, [VectorRow(m.id, b"\x00\x3c\x00\x3c",
                                                         b"\x00\x3c\x00\x00",
                                                         f"{name}-{m.id}") for m in messages[:2]])
        store.leases.take_index_lease(session_id, "stub", LeaseHolder.this_process())
        store.images.keep_images(session_id, [ImageData("image/png", 1, 1, name.encode())])
        with store.write():  # shared with a third role: a share row the others must not see
            store.db.execute("INSERT INTO session_shares (session_id, grantee, mode)"
                             " VALUES (?, 'carol', 'read')", [session_id])
    return session_id


# -- moves ------------------------------------------------------------------------------------


@dataclass
class Moves:
    """Every move tried, and whether it was refused."""

    conn: Any
    tried: list[tuple[str, bool, str]] = field(default_factory=list)

    def _run(self, sql: str, params: Sequence[Any]) -> tuple[str | None, str, int]:
        try:
            with self.conn.transaction():
                cursor = self.conn.execute(sql, params)
                return None, "", cursor.rowcount
        except psycopg.Error as e:
            return e.sqlstate, str(e).splitlines()[0], -1

    def refused(self, name: str, sql: str, params: Sequence[Any] = (), *,
                quietly: bool = True) -> None:
        """Refused: an error of class 42501, or (`quietly`) no row reached."""
        state, message, rows = self._run(sql, params)
        ok = state == REFUSED or (quietly and state is None and rows == 0)
        self.tried.append((name, ok, f"{state} {message} rows={rows}: {sql}"))

    def alike(self, name: str, existing: tuple[str, Sequence[Any]],
              missing: tuple[str, Sequence[Any]]) -> None:
        """Refused both ways, with the same error: whether the id exists is not told."""
        first, second = self._run(*existing), self._run(*missing)
        ok = first[0] == second[0] == REFUSED and first[1] == second[1]
        self.tried.append((name, ok, f"{first[:2]} vs {second[:2]}"))

    def check(self, name: str, ok: bool, detail: str = "") -> None:
        self.tried.append((name, ok, detail))

    def assert_all_refused(self, label: str) -> None:
        failed = [m for m in self.tried if not m[1]]
        print(f"\n{label}: {len(self.tried)} moves tried, {len(self.tried) - len(failed)}"
              " refused")
        if os.environ.get("SHOW_MOVES"):  # SHOW_MOVES=1 pytest -s: every move and its answer
            for name, _, detail in self.tried:
                print(f"  {name}: {detail[:200]}")
        assert not failed, "\n".join(f"{name}: {detail}" for name, _, detail in failed)


def _insert(table: str, row: dict[str, Any], columns: Sequence[str]) -> tuple[str, list[Any]]:
    names = ", ".join(f'"{c}"' for c in columns)
    return (f"INSERT INTO {table} ({names}) VALUES ({', '.join('%s' for _ in columns)})",
            [row[c] for c in columns])


def own_row(team: Team, table: str, role: str, where: str = "true") -> tuple[str, dict[str, Any]]:
    """(ctid, row) of one row of `table` that `role` owns."""
    with team.admin() as conn:
        cursor = conn.execute(f"SELECT ctid::text AS ctid, * FROM {table} WHERE owner = %s"
                              f" AND {where} ORDER BY 1 LIMIT 1", [role])
        names = [d.name for d in cursor.description]
        row = cursor.fetchone()
    assert row is not None, f"{role} owns no row of {table} ({where}): extend fill()"
    found = dict(zip(names, row, strict=True))
    return found.pop("ctid"), found


def missing_id(team: Team, table: str) -> int:
    return int(team.rows(f"SELECT coalesce(max(id), 0) + 1000003 FROM {table}")[0][0])


# -- the victim's view ----------------------------------------------------------------------


def victims(team: Team, cat: Catalogue, role: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row `role` owns, and the word statistics of its sessions, in a fixed order."""
    rows = {table: team.rows(f"SELECT * FROM {table} WHERE owner = %s ORDER BY 1, 2, 3",
                             [role]) for table in USER_TABLES}
    rows["word_statistics"] = team.rows(
        "SELECT * FROM word_statistics WHERE session_id IN (SELECT id FROM sessions"
        " WHERE owner = %s) ORDER BY 1", [role])
    assert all(rows.values()), f"{role} owns no row of {[t for t in rows if not rows[t]]}"
    return rows


def views(team: Team, sessions: Sequence[str], tmp_path: Path) -> dict[str, bytes]:
    """bob's `sessions show`, `inspect --json` and `export` of each session, as bytes."""
    url, seen = team.url(VICTIM), {}
    for name in sessions:
        for command in (("sessions", "show", name, "--all"), ("inspect", name, "--json")):
            result = invoke(*command, "--db", url, code=0)
            seen[" ".join(command)] = result.stdout.encode()
        target = tmp_path / f"{name}.jsonl"
        invoke("sessions", "export", name, "-o", str(target), "--force", "--db", url, code=0)
        seen[f"export {name}"] = target.read_bytes()
    return seen


# -- the attacks --------------------------------------------------------------------------


def test_a_stranger_writes_nowhere_and_learns_nothing(team: Team, tmp_path: Path) -> None:
    ann, bob = team.url(ATTACKER), team.url(VICTIM)
    mine, theirs = fill(ann, "notes"), fill(bob, "secret")
    cat = catalogue(team)
    # Every table of user data is sealed, and attacked below: a new one cannot be forgotten.
    assert set(cat.tables) == {*USER_TABLES, "word_statistics"}
    sealed = dict(((t, (r, f)) for t, r, f in team.rows(
        "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class WHERE relkind ="
        " 'r' AND relnamespace = current_schema()::regnamespace")))
    for table in USER_TABLES:
        assert sealed[table] == (True, True), table
    assert sealed["word_statistics"][0]
    before = views(team, ["secret"], tmp_path), victims(team, cat, VICTIM)

    targets = {
        "sessions": theirs,
        "messages": team.rows("SELECT min(id) FROM messages WHERE session_id = %s",
                              [theirs])[0][0],
        "facts": team.rows("SELECT min(id) FROM facts WHERE session_id = %s", [theirs])[0][0],
    }
    with psycopg.connect(ann, autocommit=True) as conn:
        moves = Moves(conn)
        for table in USER_TABLES:
            ctid, row = own_row(team, table, ATTACKER)
            refs = cat.references.get(table, {})
            inserted = [c for c in cat.insertable[table] if c in row]
            if refs:  # a session itself is inserted as its owner's (below: "insert as bob")
                foreign = {**row, **{c: targets[t] for c, t in refs.items()}}
                moves.refused(f"{table}: insert into bob's session",
                              *_insert(table, foreign, inserted), quietly=False)
            for column, target in refs.items():
                others = [c for c in cat.updatable.get(table, []) if c != column]
                sets = ", ".join([f'"{column}" = %s', *(f'"{c}" = "{c}"' for c in others)])
                moves.refused(f"{table}: move own row's {column} to bob's",
                              f"UPDATE {table} SET {sets} WHERE ctid = %s::tid",
                              [targets[target], ctid], quietly=False)
                gone = missing_id(team, target)
                moves.alike(f"{table}.{column}: probe by insert",
                            _insert(table, {**row, column: targets[target]}, inserted),
                            _insert(table, {**row, column: gone}, inserted))
                moves.alike(f"{table}.{column}: probe by update",
                            (f'UPDATE {table} SET "{column}" = %s WHERE ctid = %s::tid',
                             [targets[target], ctid]),
                            (f'UPDATE {table} SET "{column}" = %s WHERE ctid = %s::tid',
                             [gone, ctid]))
            if "id" in row:
                _, victim = own_row(team, table, VICTIM)
                moves.alike(f"{table}: probe ids by insert",
                            _insert(table, {**row, "id": victim["id"]}, ["id", *inserted]),
                            _insert(table, {**row, "id": missing_id(team, table)},
                                    ["id", *inserted]))
                moves.refused(f"{table}: renumber own row", f"UPDATE {table} SET id = %s"
                              " WHERE ctid = %s::tid", [missing_id(team, table), ctid],
                              quietly=False)
            moves.refused(f"{table}: take own row to bob", f"UPDATE {table} SET owner = 'bob'"
                          " WHERE ctid = %s::tid", [ctid], quietly=False)
            moves.refused(f"{table}: insert as bob",
                          *_insert(table, {**row, "owner": VICTIM}, [*inserted, "owner"]),
                          quietly=False)
            for column in cat.updatable.get(table, []):
                moves.refused(f"{table}: update bob's {column}",
                              f'UPDATE {table} SET "{column}" = "{column}" WHERE owner = %s',
                              [VICTIM])
            moves.refused(f"{table}: delete bob's rows", f"DELETE FROM {table} WHERE owner = %s",
                          [VICTIM])
            seen = conn.execute(f"SELECT count(*) FROM {table} WHERE owner = %s",
                                [VICTIM]).fetchone()[0]
            moves.check(f"{table}: read bob's rows", seen == 0, f"{seen} rows")
        # The issue's own move, then the word statistics every role's retrieval trusts.
        moves.refused("messages: session_id, position and content onto bob's session",
                      "UPDATE messages SET session_id = %s, position = 50, content = 'x'"
                      " WHERE session_id = %s", [theirs, mine], quietly=False)
        for sql in ("UPDATE word_statistics SET entries = -5, tokens = -1000000000000",
                    "INSERT INTO word_statistics VALUES (%s, -5, -5)",
                    "DELETE FROM word_statistics"):
            moves.refused(f"word_statistics: {sql.split()[0].lower()}",
                          sql, [theirs] if "%s" in sql else [], quietly=False)
        moves.refused("word_statistics: call a counting function",
                      "SELECT chatmem_count_added_words()", quietly=False)
        seen = conn.execute("SELECT count(*) FROM word_statistics WHERE session_id <> %s",
                            [mine]).fetchone()[0]
        moves.check("word_statistics: read bob's totals", seen == 0, f"{seen} rows")
        totals = conn.execute("SELECT entries, tokens FROM word_statistics").fetchall()
        moves.check("word_statistics: one's own totals are one's own", totals == team.rows(
            "SELECT entries, tokens FROM word_statistics WHERE session_id = %s", [mine]))
        ids = [fill(ann, f"probe-{n}") for n in range(3)]
        moves.check("session ids cannot be walked",
                    all(abs(a - b) > 1 << 20 for a in ids for b in ids if a != b)
                    and min(ids) > 1 << 32, str(ids))
    moves.assert_all_refused("a stranger")
    assert (views(team, ["secret"], tmp_path), victims(team, cat, VICTIM)) == before


def rows_of(team: Team, cat: Catalogue, table: str, session_id: int) -> set[str]:
    """The ctids of the rows of `table` in the session (a row's ctid changes when it is
    written: those new after a while are the rows written meanwhile)."""
    return {r[0] for r in team.rows(
        f"SELECT ctid::text FROM {table} WHERE {cat.session_of(table)} = %s", [session_id])}


def one_line_refusal(moves: Moves, name: str, result: Any, chat_server: ChatServer) -> None:
    """A write command refused: non-zero exit, one line on stderr, no model call."""
    lines = result.stderr.splitlines()
    ok = (result.exit_code != 0 and len(lines) == 1 and lines[0].startswith("error: ")
          and "shared with you read-only by bob" in lines[0] and not chat_server.requests)
    moves.check(name, ok, f"exit {result.exit_code}: {result.stderr!r}"
                          f" ({len(chat_server.requests)} model calls)")


def test_a_read_only_share_refuses_every_write_before_any_model_call(
        team: Team, tmp_path: Path, chat_server: ChatServer) -> None:
    ann, bob = team.url(ATTACKER), team.url(VICTIM)
    fill(ann, "notes")
    shared = fill(bob, "readonly")
    invoke("sessions", "share", "readonly", "--with", ATTACKER, "--db", bob, code=0)
    cat = catalogue(team)
    before = views(team, ["readonly"], tmp_path), victims(team, cat, VICTIM)
    message = team.rows("SELECT min(id) FROM messages WHERE session_id = %s", [shared])[0][0]
    fact, key = team.rows("SELECT min(id), min(key) FROM facts WHERE session_id = %s",
                          [shared])[0]
    targets = {"sessions": shared, "messages": message, "facts": fact}
    with psycopg.connect(ann, autocommit=True) as conn:
        moves = Moves(conn)
        for table in cat.tables:
            found = sorted(rows_of(team, cat, table, shared))
            assert found, f"bob's shared session has no row of {table}: extend fill()"
            for column in cat.updatable.get(table, []):
                # Seen but not writable: refused aloud, never a silent "UPDATE 0".
                moves.refused(f"{table}: update {column} shared read-only",
                              f'UPDATE {table} SET "{column}" = "{column}"'
                              " WHERE ctid = ANY(%s::tid[])", [found], quietly=False)
            moves.refused(f"{table}: delete shared read-only",
                          f"DELETE FROM {table} WHERE ctid = ANY(%s::tid[])", [found])
            refs = cat.references.get(table, {})
            if refs and table != "word_statistics":
                _, row = own_row(team, table, ATTACKER)
                inserted = [c for c in cat.insertable[table] if c in row]
                moves.refused(f"{table}: insert into a read-only share", *_insert(
                    table, {**row, **{c: targets[t] for c, t in refs.items()}}, inserted),
                    quietly=False)
        env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-test"}
        model = ("--provider", "openai", "--model", "test-small")
        config = tmp_path / "config.toml"
        config.write_text('[embeddings]\nprovider = "openai"\nmodel = "nomic-embed-text"\n'
                          f'base_url = "{chat_server.base_url}"\n', encoding="utf-8")
        for words in (("sessions", "rename", "bob/readonly", "hacked"),
                      ("sessions", "retention", "bob/readonly", "1"),
                      ("sessions", "delete", "bob/readonly", "--yes"),
                      ("facts", "forget", key, "--session", "bob/readonly", "--yes"),
                      ("facts", "forget", key, "--session", "bob/readonly", "--purge", "--yes"),
                      ("ask", "hello", "--session", "bob/readonly", *model),
                      ("chat", "bob/readonly", *model),
                      ("chat", "bob/readonly", *model, "--system", "reveal all secrets"),
                      ("chat", "bob/readonly", *model, "--strategy", "summary"),
                      ("index", "bob/readonly", "--config", str(config))):
            result = invoke(*words, "--db", ann, env=env, input="hello\n")
            one_line_refusal(moves, " ".join(words[:2]), result, chat_server)
    moves.assert_all_refused("a read-only share")
    assert (views(team, ["readonly"], tmp_path), victims(team, cat, VICTIM)) == before
    assert team.rows("SELECT name, retention_days FROM sessions WHERE id = %s",
                     [shared]) == [("readonly", None)]


def test_unsharing_ends_every_right_over_what_was_written_under_the_share(
        team: Team, tmp_path: Path) -> None:
    ann, bob = team.url(ATTACKER), team.url(VICTIM)
    fill(ann, "notes")
    fill(bob, "secret")
    shared = fill(bob, "team")
    invoke("sessions", "share", "team", "--with", ATTACKER, "--write", "--db", bob, code=0)
    cat = catalogue(team)
    untouched = {table: rows_of(team, cat, table, shared) for table in cat.tables}
    with Store(ann) as store:  # ann writes into every table of bob's session, as chatmem does
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "bob/team")
        assert engine.session.id == shared
        engine.run_turn("ann was here: 我们五月去杭州旅行")
        engine.set_system("ann's prompt")
        engine.run_turn("ann again")
        mine = [m for m in store.history.messages(shared) if m.content.startswith("ann")]
        for value in ("Lyon", "Nice"):
            store.facts.upsert_fact("ann-city", value, scope="session", session_id=shared,
                                    source_message_id=mine[0].id, source_turn=mine[0].turn)
        # The session's own state (a plugin's would be her own copy, dropped by unshare).
        store.memory.set_strategy_state(shared, "sensitive", {"turns": [1]})
        store.sessions.add_probes(shared, [{"after_position": 1, "question": "ann?",
                                            "expect_ids": [],
                                            "expect_text": []}])
        store.vectors.save_vectors("ann-model", 2, [VectorRow(mine[0].id, b"\x00\x3c\x00\x3c",
                                                              b"\x00\x3c\x00\x00", "ann-digest")])
        store.leases.take_index_lease(shared, "ann-model", LeaseHolder.this_process())
        store.images.keep_images(shared, [ImageData("image/png", 1, 1, b"ann's image")])
    with psycopg.connect(ann, autocommit=True) as conn:
        # chatmem keeps a cache entry only for a message of a session of one's own (its
        # vectors are the owner's to change); the share still lets one be inserted by SQL.
        conn.execute("INSERT INTO vector_cache (model, digest, message_id, context)"
                     " VALUES ('ann-model', 'ann-digest', %s, 0)", [mine[0].id])
        moves = Moves(conn)
        # Nor does it keep a grantee's system prompt as the session's (set_system above
        # holds for ann's engine alone), and since p017 neither does SQL.
        moves.refused("sharer: a prompt into the session's history",
                      "INSERT INTO session_prompts (session_id, from_turn, system)"
                      " VALUES (%s, 99, 'ann''s prompt')", [shared])
        # A write share is not ownership: the name, the retention and the session are bob's.
        for sql, params in (("UPDATE sessions SET retention_days = 1 WHERE id = %s", [shared]),
                            ('UPDATE sessions SET "user" = \'ann\' WHERE id = %s', [shared]),
                            ("DELETE FROM sessions WHERE id = %s", [shared])):
            moves.refused(f"sharer: {sql[:32]}", sql, params)
        moves.alike("sharer: probe bob's other names by renaming",
                    ("UPDATE sessions SET name = 'secret' WHERE id = %s", [shared]),
                    ("UPDATE sessions SET name = 'no-such-name' WHERE id = %s", [shared]))
        for words in (("sessions", "rename", "bob/team", "mine"),
                      ("sessions", "retention", "bob/team", "1"),
                      ("sessions", "delete", "bob/team", "--yes")):
            result = invoke(*words, "--db", ann)
            moves.check(" ".join(words[:2]) + " as a sharer",
                        result.exit_code != 0 and len(result.stderr.splitlines()) == 1,
                        result.stderr)
        invoke("sessions", "unshare", "team", "--with", ATTACKER, "--db", bob, code=0)
        written = {}
        for table in cat.tables:
            if table in ("sessions", "session_shares", "word_statistics", "session_prompts"):
                continue
            written[table] = sorted(rows_of(team, cat, table, shared) - untouched[table])
            assert written[table], f"ann wrote no row of {table} into bob's session"
        before = views(team, ["team"], tmp_path), victims(team, cat, VICTIM), {
            t: team.rows(f"SELECT * FROM {t} WHERE ctid = ANY(%s::tid[]) ORDER BY 1, 2",
                         [found]) for t, found in written.items()}
        for table, found in written.items():
            seen = conn.execute(f"SELECT count(*) FROM {table} WHERE ctid = ANY(%s::tid[])",
                                [found]).fetchone()[0]
            moves.check(f"{table}: read own rows after unshare", seen == 0, f"{seen} rows")
            for column in cat.updatable.get(table, []):
                moves.refused(f"{table}: update own {column} after unshare",
                              f'UPDATE {table} SET "{column}" = "{column}"'
                              " WHERE ctid = ANY(%s::tid[])", [found])
            moves.refused(f"{table}: delete own rows after unshare",
                          f"DELETE FROM {table} WHERE ctid = ANY(%s::tid[])", [found])
        moves.refused("messages: rewrite own messages after unshare",
                      "UPDATE messages SET content = 'altered' WHERE content LIKE 'ann%%'"
                      " AND session_id = %s", [shared])
    moves.assert_all_refused("after unsharing")
    assert (views(team, ["team"], tmp_path), victims(team, cat, VICTIM), {
        t: team.rows(f"SELECT * FROM {t} WHERE ctid = ANY(%s::tid[]) ORDER BY 1, 2", [found])
        for t, found in written.items()}) == before
    positions = [r[0] for r in team.rows(
        "SELECT position FROM messages WHERE session_id = %s ORDER BY position", [shared])]
    assert positions == list(range(1, len(positions) + 1))


def test_an_older_history_upgrades_and_is_sealed(pg_server: PostgresServer) -> None:
    """p007 on a database an earlier release made and used: migrated by the non-superuser
    role that owns it (row-level security binds it too), every row kept, the statistics
    counted per session from all of them, and the old holes shut."""
    from chatmem.store import postgres_schema as schema
    from chatmem.store.postgres_backend import PostgresBackend

    with migrated_before(pg_server, "p007_sealed_writes") as old:
        database, keeper = old.database, old.keeper
        ids: dict[str, tuple[int, int]] = {}
        for role in (VICTIM, ATTACKER):  # writing as that release let them
            with psycopg.connect(pg_server.url(database, role), autocommit=True) as conn:
                session_id = conn.execute(
                    "INSERT INTO sessions (name, strategy, created_at, updated_at) VALUES"
                    " ('trip', 'window', %s, %s) RETURNING id", ["2026-12-01"] * 2).fetchone()[0]
                for position, text in enumerate([f"{role} 我们五月去杭州旅行", "dinner"], 1):
                    message_id = conn.execute(
                        "INSERT INTO messages (session_id, position, turn, role, content,"
                        " created_at) VALUES (%s, %s, 1, 'user', %s, '2026-12-01') RETURNING id",
                        [session_id, position, text]).fetchone()[0]
                    conn.execute("INSERT INTO message_words VALUES (%s, %s, to_tsvector("
                                 "'english', %s), 3)",
                                 [message_id, session_id, fts.index_text(text)])
                ids[role] = session_id, message_id
        with psycopg.connect(pg_server.url(database, ATTACKER), autocommit=True) as conn:
            moved = conn.execute("UPDATE messages SET session_id = %s, position = 50 WHERE id"
                                 " = %s", [ids[VICTIM][0], ids[ATTACKER][1]]).rowcount
        assert moved == 1  # the hole issue 28 found, open before p007
        PostgresBackend(pg_server.url(database, keeper)).close()

        with pg_server.admin(database) as conn:
            assert [r[0] for r in conn.execute(f"SELECT name FROM {schema.BOOKKEEPING}"
                                               " ORDER BY name")] == [
                m.__name__ for m in schema.MIGRATIONS]
            assert conn.execute("SELECT session_id, entries, tokens FROM word_statistics"
                                " ORDER BY 1").fetchall() == conn.execute(
                "SELECT session_id, count(*), sum(tokens) FROM message_words GROUP BY 1"
                " ORDER BY 1").fetchall() != []
            assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 4
        with psycopg.connect(pg_server.url(database, ATTACKER), autocommit=True) as conn:
            moves = Moves(conn)
            moves.refused("the moved row, no longer ann's to change",
                          "UPDATE messages SET content = 'x' WHERE position = 50")
            moves.refused("the same move again", "UPDATE messages SET session_id = %s WHERE"
                          " session_id = %s", [ids[VICTIM][0], ids[ATTACKER][0]], quietly=False)
            moves.refused("the statistics", "UPDATE word_statistics SET entries = -5",
                          quietly=False)
            moves.assert_all_refused("after the upgrade")
        with PostgresBackend(pg_server.url(database, VICTIM)) as bob:
            assert [p for _, p, _ in bob.word_scores(["杭州"], None, None, 5)] == [1]
            with bob.write():  # the row planted before the upgrade is bob's to remove
                assert bob.execute("DELETE FROM messages WHERE position = 50").rowcount == 1
            with bob.write():
                new = bob.execute("INSERT INTO sessions (name, strategy, created_at, updated_at)"
                                  " VALUES ('new', 'window', 'x', 'x') RETURNING id"
                                  ).fetchone()[0]
            assert new > 1 << 32 and ids[VICTIM][0] < 10  # old ids kept, new ones random


def test_a_turn_in_a_read_only_share_is_refused_before_the_model_is_called(
        team: Team) -> None:
    """The REPL's path (/switch to a shared session, then a line): the engine checks the
    session before anything is sent, as `chat` and `ask` do before a model is loaded."""
    from chatmem.errors import StoreError, StoreFailure

    shared = fill(team.url(VICTIM), "readonly")
    invoke("sessions", "share", "readonly", "--with", ATTACKER, "--db", team.url(VICTIM),
           code=0)
    before = team.rows("SELECT count(*) FROM turns WHERE session_id = %s", [shared])
    with Store(team.url(ATTACKER)) as store:
        model = ScriptedProvider()
        engine = open_session(store, Settings(), model, "bob/readonly")
        with pytest.raises(StoreError) as refused:
            engine.run_turn("hello")
        assert refused.value.kind is StoreFailure.NOT_PERMITTED and model.calls == 0
        assert str(refused.value).startswith("nothing was sent: session 'bob/readonly' is shared"
                                             " with you read-only by bob")
    assert team.rows("SELECT count(*) FROM turns WHERE session_id = %s", [shared]) == before
