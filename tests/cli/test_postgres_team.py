"""A team on one PostgreSQL history: one role per person (ann, bob), sessions shared on
purpose; through chatmem's commands nobody reads another's memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import invoke, output
from pg import PostgresServer

from chatmem.errors import NotFound, StoreError, UsageError


def run(url: str, *args: str, input: str | None = None, code: int = 0) -> str:
    return output(*args, "--db", url, input=input, code=code)


def chat(url: str, session: str, text: str, code: int = 0) -> str:
    return run(url, "chat", session, "--provider", "scripted", input=text + "\n", code=code)


def names(url: str) -> list[str]:
    return sorted(s["name"] for s in json.loads(run(url, "sessions", "list", "--json")))


@pytest.fixture
def urls(pg_server: PostgresServer, pg_database: str) -> tuple[str, str]:
    ann, bob = pg_server.url(pg_database, "ann"), pg_server.url(pg_database, "bob")
    chat(bob, "bob-private", "my salary is 9000 杭州")
    chat(bob, "bob-shared", "the team meets on Friday")
    chat(ann, "ann-notes", "I like tea")
    return ann, bob


def test_ann_never_sees_bobs_sessions(urls: tuple[str, str], tmp_path: Path) -> None:
    ann, bob = urls
    assert names(ann) == ["ann-notes"]
    missing = int(NotFound.exit_code)
    run(ann, "inspect", "bob-private", code=missing)
    run(ann, "sessions", "export", "bob-private", "-o", str(tmp_path / "x.jsonl"), code=missing)
    assert not (tmp_path / "x.jsonl").exists()
    run(ann, "sessions", "fork", "bob-private", "stolen", code=missing)
    run(ann, "sessions", "delete", "bob-private", "--yes", code=missing)
    run(ann, "forget-me", "--yes")
    assert names(ann) == []
    assert names(bob) == ["bob-private", "bob-shared"]
    turns = json.loads(run(bob, "inspect", "bob-private", "--json"))["turn"]
    assert turns["input"] == "my salary is 9000 杭州"


def test_a_shared_session_is_readable_and_writable_only_with_write(
        urls: tuple[str, str]) -> None:
    ann, bob = urls
    run(bob, "sessions", "share", "bob-shared", "--with", "ann")
    assert names(ann) == ["ann-notes", "bob-shared"]
    shown = json.loads(run(ann, "inspect", "bob/bob-shared", "--json"))
    assert shown["turn"]["input"] == "the team meets on Friday"
    # Refused before any model is loaded or called (issue 28: it was sent, paid, then not
    # stored): one line, and no reply.
    refused = invoke("chat", "bob/bob-shared", "--provider", "scripted", "--db", ann,
                     input="ann adds a line\n")
    assert refused.exit_code == int(StoreError.exit_code) and "echo" not in refused.stdout
    assert refused.stderr.splitlines() == [
        "error: session 'bob/bob-shared' is shared with you read-only by bob: it cannot be"
        " changed (ask bob to share it with --write, or make your own copy: chatmem sessions"
        " fork bob/bob-shared NEW-NAME)"]
    assert json.loads(run(bob, "inspect", "bob-shared", "--json"))["turn"]["number"] == 1
    run(bob, "sessions", "share", "bob-shared", "--with", "ann", "--write")
    chat(ann, "bob/bob-shared", "ann adds a line")
    assert json.loads(run(bob, "inspect", "bob-shared", "--json"))["turn"]["input"] == (
        "ann: ann adds a line")  # a grantee's words carry his name
    # Only bob deletes it: said at once, not after ann answered "y" to "Erase ...?".
    refused = invoke("sessions", "delete", "bob/bob-shared", "--db", ann, input="")
    assert refused.exit_code == int(StoreError.exit_code)
    assert refused.stderr.splitlines() == [
        "error: only bob, its owner, can delete session 'bob/bob-shared' (it is shared with"
        " you for writing)"]
    run(bob, "sessions", "unshare", "bob-shared", "--with", "ann")
    assert names(ann) == ["ann-notes"]


def test_a_name_that_is_both_ones_own_and_shared_opens_ones_own(
        urls: tuple[str, str]) -> None:
    ann, bob = urls
    chat(ann, "bob-shared", "ann's own session of that name")
    run(bob, "sessions", "share", "bob-shared", "--with", "ann")
    shown = json.loads(run(ann, "inspect", "bob-shared", "--json"))
    assert shown["turn"]["input"] == "ann's own session of that name"
    assert json.loads(run(bob, "inspect", "bob-shared", "--json"))["turn"]["input"] == (
        "the team meets on Friday")


def test_continue_takes_ones_own_last_session_never_one_shared_later(
        urls: tuple[str, str]) -> None:
    """bob writes in a session he shared after ann's last turn: ann's -c still goes into her
    own, and a newer read-only share does not make it fail."""
    ann, bob = urls
    run(bob, "sessions", "share", "bob-shared", "--with", "ann", "--write")
    run(bob, "sessions", "share", "bob-private", "--with", "ann")
    chat(bob, "bob-shared", "bob writes after ann")
    chat(bob, "bob-private", "bob's newest turn")
    continued = invoke("ask", "-c", "我的银行密码提示是生日", "--provider", "scripted",
                       "--db", ann)
    assert continued.exit_code == 0, continued.stderr
    assert continued.stderr.splitlines()[0] == "continuing session ann-notes"
    assert json.loads(run(ann, "inspect", "ann-notes", "--json"))["turn"]["input"] == (
        "我的银行密码提示是生日")
    assert json.loads(run(bob, "inspect", "bob-shared", "--json"))["turn"]["input"] == (
        "bob writes after ann")
    piped = invoke("chat", "-c", "--provider", "scripted", "--db", ann, input="再说一次\n")
    assert piped.exit_code == 0 and piped.stderr.startswith("session ann-notes ·")
    assert json.loads(run(ann, "inspect", "ann-notes", "--json"))["turn"]["input"] == "再说一次"


def test_a_shared_namesake_is_listed_with_its_owner_and_reached_as_owner_slash_name(
        urls: tuple[str, str], tmp_path: Path) -> None:
    ann, bob = urls
    chat(ann, "bob-shared", "ann's own 会议 notes")
    run(bob, "sessions", "share", "bob-shared", "--with", "ann", "--write")
    listed = json.loads(run(ann, "sessions", "list", "--json"))
    assert sorted((s["name"], s["shared_by"] or "") for s in listed) == [
        ("ann-notes", ""), ("bob-shared", ""), ("bob-shared", "bob")]
    table = run(ann, "sessions", "list")
    assert "bob/bob-shared " in table and table.count("bob-shared") == 2
    shown = json.loads(run(ann, "inspect", "bob/bob-shared", "--json"))
    assert shown["turn"]["input"] == "the team meets on Friday"
    assert "the team meets on Friday" in run(ann, "sessions", "show", "bob/bob-shared")
    exported = tmp_path / "bob.jsonl"
    run(ann, "sessions", "export", "bob/bob-shared", "-o", str(exported))
    assert "the team meets on Friday" in exported.read_text(encoding="utf-8")
    run(ann, "ask", "bob/bob-shared", "周五几点？", "--provider", "scripted")
    chat(ann, "bob/bob-shared", "我会带咖啡")
    assert json.loads(run(bob, "inspect", "bob-shared", "--json"))["turn"]["input"] == (
        "ann: 我会带咖啡")
    assert json.loads(run(ann, "inspect", "ann/bob-shared", "--json"))["turn"]["input"] == (
        "ann's own 会议 notes")
    run(ann, "inspect", "bob/bob-private", code=int(NotFound.exit_code))


def test_owner_slash_name_names_nothing_in_a_file(tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    chat(db, "旅行", "你好")
    assert [s["shared_by"] for s in json.loads(run(db, "sessions", "list", "--json"))] == [None]
    error = run(db, "inspect", "ann/旅行", code=int(NotFound.exit_code))
    assert error.count("\n") == 1 and "'ann/旅行'" in error


def test_only_the_owner_shares_and_only_with_a_role_that_exists(urls: tuple[str, str]) -> None:
    ann, bob = urls
    run(bob, "sessions", "share", "bob-shared", "--with", "ann")
    error = run(ann, "sessions", "share", "bob-shared", "--with", "ann", "--write",
                code=int(NotFound.exit_code))
    assert error.count("\n") == 1 and "bob-shared" in error
    error = run(bob, "sessions", "share", "bob-shared", "--with", "nobody",
                code=int(NotFound.exit_code))
    assert "nobody" in error and error.count("\n") == 1
    run(bob, "sessions", "unshare", "bob-private", "--with", "ann", code=int(NotFound.exit_code))


def test_sharing_a_file_history_is_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    chat(db, "trip", "hello")
    error = run(db, "sessions", "share", "trip", "--with", "ann", code=int(UsageError.exit_code))
    assert error.count("\n") == 1 and "PostgreSQL" in error


def test_add_user_creates_a_role_that_sees_only_its_own(
        pg_server: PostgresServer, pg_database: str, urls: tuple[str, str]) -> None:
    role = f"carol_{pg_database}"
    run(pg_server.url(pg_database), "admin", "add-user", role)
    carol = pg_server.url(pg_database, role)
    assert names(carol) == []
    chat(carol, "carols", "hello")
    assert names(carol) == ["carols"]
    assert "carols" not in names(urls[0])
    again = invoke("admin", "add-user", role, "--db", pg_server.url(pg_database))
    assert again.exit_code == 0 and f"role {role} could already connect" in again.stderr


def test_add_user_of_a_role_that_can_already_connect_grants_and_says_the_door_is_open(
        pg_server: PostgresServer, pg_database: str) -> None:
    """A new database lets PUBLIC connect, so a login role never added (carla) chats there
    already: add-user of her succeeds, grants what it grants, and says how to close the
    database to PUBLIC; once closed, carla still chats and a role never added does not."""
    carla, eve = f"carla_{pg_database}", f"eve_{pg_database}"
    with pg_server.admin() as conn:
        for role in (carla, eve):
            conn.execute(f"CREATE ROLE {role} LOGIN")
    admin = pg_server.url(pg_database)
    chat(pg_server.url(pg_database, eve), "闯入", "你好")
    said = invoke("admin", "add-user", carla, "--db", admin)
    assert said.exit_code == 0, said.stderr
    first, note = said.stderr.splitlines()
    assert f"role {carla} could already connect" in first
    assert "CONNECT is granted to PUBLIC" in note
    closing = note.split("to leave it to the people added: ", 1)[1]
    assert closing == (f'REVOKE CONNECT ON DATABASE "{pg_database}" FROM PUBLIC; '
                       "REVOKE USAGE ON SCHEMA public FROM PUBLIC")
    with pg_server.admin(pg_database) as conn:
        for statement in closing.split("; "):
            conn.execute(statement)
    chat(pg_server.url(pg_database, carla), "卡拉", "你好")
    assert names(pg_server.url(pg_database, carla)) == ["卡拉"]
    chat(pg_server.url(pg_database, eve), "闯入", "again", code=int(StoreError.exit_code))
    closed = invoke("admin", "add-user", carla, "--db", admin)
    assert closed.exit_code == 0 and "PUBLIC" not in closed.stderr


def test_add_user_lets_a_person_of_another_database_connect_to_this_one(
        pg_server: PostgresServer, pg_database: str, urls: tuple[str, str]) -> None:
    """carol chats on one team database; a second one that does not let every role connect
    gets her through add-user too, password unchanged. A role row security would not bind,
    or one that cannot log in, is refused, and nothing is granted to it."""
    role = f"carol2_{pg_database}"
    run(pg_server.url(pg_database), "admin", "add-user", role)
    second = pg_server.create_database(pg_database)
    try:
        with pg_server.admin(second) as conn:
            conn.execute(f'REVOKE CONNECT ON DATABASE "{second}" FROM PUBLIC')
        admin = pg_server.url(second)
        chat(pg_server.url(second, role), "x", "hi", code=int(StoreError.exit_code))
        said = invoke("admin", "add-user", role, "--db", admin)
        assert said.exit_code == 0 and f"role {role} existed" in said.stderr
        chat(pg_server.url(second, role), "第二个", "你好")
        assert names(pg_server.url(second, role)) == ["第二个"]
        again = invoke("admin", "add-user", role, "--db", admin)
        assert again.exit_code == 0 and "could already connect" in again.stderr
        assert "PUBLIC" not in again.stderr
        sleeper, bypasser = f"nologin_{pg_database}", f"bypass_{pg_database}"
        with pg_server.admin() as conn:
            conn.execute(f"CREATE ROLE {sleeper} NOLOGIN")
            conn.execute(f"CREATE ROLE {bypasser} LOGIN BYPASSRLS")
        try:
            for refused, why in (("postgres", "a superuser"), (bypasser, "BYPASSRLS"),
                                 (sleeper, "cannot log in")):
                error = run(admin, "admin", "add-user", refused, code=int(UsageError.exit_code))
                assert error.count("\n") == 1 and why in error
            with pg_server.admin(second) as conn:
                assert conn.execute(
                    "SELECT has_database_privilege(%s, current_database(), 'CONNECT'),"
                    " has_database_privilege(%s, current_database(), 'CONNECT')",
                    (sleeper, bypasser)).fetchone() == (False, False)
        finally:
            with pg_server.admin() as conn:
                conn.execute(f"DROP ROLE {sleeper}")
                conn.execute(f"DROP ROLE {bypasser}")
    finally:
        with pg_server.admin(second) as conn:
            conn.execute(f"DROP OWNED BY {role}")
        pg_server.drop_database(second)


def test_a_team_is_refused_while_a_person_who_chats_owns_the_tables(
        pg_server: PostgresServer) -> None:
    """ann opened the empty database first, so chatmem's tables are hers: as their owner she
    could switch row security off and read everyone's messages. Adding people is refused,
    saying how to give the tables to the administrator; after that it works."""
    pg_database = pg_server.create_database()
    try:
        with pg_server.admin(pg_database) as conn:
            conn.execute("GRANT CREATE ON SCHEMA public TO ann")
        chat(pg_server.url(pg_database, "ann"), "安的会话", "你好")
        admin = pg_server.url(pg_database)
        role = f"dave_{pg_database}"
        refused = run(admin, "admin", "add-user", role, code=int(UsageError.exit_code))
        assert refused.count("\n") == 1
        assert "are owned by ann, who could turn row security off" in refused
        assert 'REASSIGN OWNED BY "ann" TO "postgres"' in refused
        with pg_server.admin(pg_database) as conn:
            assert conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                (role,)).fetchone() is None
            conn.execute("REASSIGN OWNED BY ann TO postgres")
        run(admin, "admin", "add-user", role)
        assert "安的会话" in names(pg_server.url(pg_database, "ann"))
    finally:
        pg_server.drop_database(pg_database)


def test_add_user_sql_prints_the_statements(tmp_path: Path) -> None:
    result = invoke("admin", "add-user", "dave", "--sql", "--database", "team")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[2:] == [
        'CREATE ROLE "dave" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;',
        'GRANT CONNECT ON DATABASE "team" TO "dave";',
        'GRANT USAGE ON SCHEMA public TO "dave";']
    # add-user's check of what an earlier dave left, which needs the database: comments.
    check = result.stdout.splitlines()[:2]
    assert all(line.startswith("-- ") for line in check) and "'dave'" in check[1]
    kept = invoke("admin", "add-user", "dave", "--sql", "--database", "team", "--keep-history")
    assert kept.stdout.splitlines() == result.stdout.splitlines()[2:]
    quoted = invoke("admin", "add-user", "dave", "--sql", "--database", 'our "team"',
                    "--keep-history")
    assert 'GRANT CONNECT ON DATABASE "our ""team""" TO "dave";' in quoted.stdout.splitlines()
    bad = invoke("admin", "add-user", "Robert'); DROP", "--sql", "--database", "t")
    assert bad.exit_code == int(UsageError.exit_code) and bad.stdout == ""


def test_a_role_that_may_not_create_roles_gets_one_line(urls: tuple[str, str]) -> None:
    error = run(urls[0], "admin", "add-user", "mallory", code=int(StoreError.exit_code))
    assert error.count("\n") == 1 and "permission denied to create role" in error


@pytest.fixture
def namesakes(urls: tuple[str, str]) -> tuple[str, str]:
    """ann shares her `旅行` with bob (read-only), who has his own `旅行` too."""
    ann, bob = urls
    chat(bob, "旅行", "bob 的斑马")
    chat(ann, "旅行", "ann 的袋鼠")
    run(ann, "sessions", "share", "旅行", "--with", "bob")
    return ann, bob


def test_logs_name_a_shared_session_as_owner_slash_name(namesakes: tuple[str, str]) -> None:
    _, bob = namesakes
    entries = json.loads(run(bob, "logs", "--json"))
    by_input = {e["input"]: (e["session"], e["shared_by"]) for e in entries}
    assert by_input["ann 的袋鼠"] == ("ann/旅行", "ann")
    assert by_input["bob 的斑马"] == ("旅行", None)
    assert "ann/旅行 #1" in run(bob, "logs", "-q", "袋鼠")
    # What the row names is what `inspect` opens.
    shown = json.loads(run(bob, "inspect", "ann/旅行", "--turn", "1", "--json"))
    assert shown["turn"]["input"] == "ann 的袋鼠"


def test_a_read_only_share_suggests_the_fork_that_copies_it(namesakes: tuple[str, str]) -> None:
    ann, bob = namesakes
    refused = invoke("ask", "ann/旅行", "我也想去", "--provider", "scripted", "--db", bob)
    assert refused.exit_code == int(StoreError.exit_code)
    assert "session 'ann/旅行' is shared with you read-only by ann" in refused.stderr
    fork = refused.stderr.split("chatmem ")[-1].rstrip(")\n").replace("NEW-NAME", "我的旅行")
    assert fork == "sessions fork ann/旅行 我的旅行"
    run(bob, *fork.split())
    copied = run(bob, "sessions", "show", "我的旅行")
    assert "ann 的袋鼠" in copied and "斑马" not in copied
    chat(bob, "我的旅行", "bob 在副本里写")
    assert "我的旅行" not in names(ann)


def test_copy_says_whose_namesake_it_left_out(namesakes: tuple[str, str],
                                               tmp_path: Path) -> None:
    _, bob = namesakes
    target = str(tmp_path / "副本.db")
    report = json.loads(output("sessions", "copy", "旅行", "ann/旅行", "--from", bob,
                               "--to", target, "--json"))
    assert report["sessions"] == ["旅行"]
    assert report["skipped"] == [{"name": "旅行", "reason": "name-taken", "shared_by": "ann",
                                  "owner": "ann"}]
    assert "斑马" in run(target, "sessions", "show", "旅行")


def test_chatting_as_a_role_row_security_does_not_bind_warns_once(
        pg_server: PostgresServer, pg_database: str) -> None:
    """The README's "to try it" chats as the superuser postgres, which row security does not
    bind; chat and ask say so in one line on stderr (and still work), a person's own role
    hears nothing, and the admin commands, which need such a role, say nothing of it."""
    superuser, ann = pg_server.url(pg_database), pg_server.url(pg_database, "ann")
    said = invoke("ask", "计划", "你好", "--provider", "scripted", "--db", superuser, code=0)
    warned = [line for line in said.stderr.splitlines() if line.startswith("warning:")]
    assert warned == [line for line in said.stderr.splitlines() if "row security" in line]
    assert len(warned) == 1 and "postgres, a superuser" in warned[0]
    assert "admin add-user" in warned[0] and said.stdout.strip()
    chatted = invoke("chat", "计划", "--provider", "scripted", "--db", superuser,
                     input="再见\n", code=0)
    assert chatted.stderr.count("row security does not bind") == 1
    own = invoke("ask", "mine", "你好", "--provider", "scripted", "--db", ann, code=0)
    assert "row security" not in own.stderr
    added = invoke("admin", "add-user", "dave_rf", "--db", superuser)
    assert "row security does not bind" not in added.stderr
    name = "bypass_rf"
    with pg_server.admin() as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN BYPASSRLS")
    try:
        bypassing = invoke("ask", "x", "hi", "--provider", "scripted", "--db",
                           pg_server.url(pg_database, name))
        assert f"{name}, a role with BYPASSRLS" in bypassing.stderr
    finally:
        with pg_server.admin(pg_database) as conn:
            conn.execute(f"DROP OWNED BY {name}, dave_rf")
        with pg_server.admin() as conn:
            conn.execute(f"DROP ROLE {name}, dave_rf")


def test_a_role_named_by_an_sql_word_is_added_chats_and_is_removed(
        pg_server: PostgresServer, pg_database: str) -> None:
    """`order` is an SQL word: chatmem writes a role's name into SQL quoted, so it is the
    role's name and not a syntax error, from add-user to remove-user --drop-role. A pg_
    name (or public, none), which PostgreSQL keeps for itself, is refused in one line
    before anything is tried, not sent to ALTER ROLE advice PostgreSQL would refuse."""
    admin, word = pg_server.url(pg_database), "order"
    try:
        said = invoke("admin", "add-user", word, "--db", admin)
        assert said.exit_code == 0, said.stderr
        assert f'set its password with `ALTER ROLE "{word}" PASSWORD' in said.stderr
        chat(pg_server.url(pg_database, word), "订单", "你好")
        assert names(pg_server.url(pg_database, word)) == ["订单"]
        again = invoke("admin", "add-user", word, "--db", admin)
        assert again.exit_code == 0 and f"role {word} could already connect" in again.stderr
        removed = invoke("admin", "remove-user", word, "--yes", "--drop-role", "--db", admin)
        assert removed.exit_code == 0, removed.stderr
        with pg_server.admin() as conn:
            assert conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                (word,)).fetchone() is None
    finally:
        with pg_server.admin(pg_database) as conn:
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (word,)).fetchone():
                conn.execute(f'DROP OWNED BY "{word}"')
                conn.execute(f'DROP ROLE "{word}"')
    for reserved in ("pg_monitor", "pg_新", "public", "none"):
        for args in (["add-user", reserved], ["add-user", reserved, "--sql"],
                     ["remove-user", reserved, "--yes"]):
            error = run(admin, "admin", *args, code=int(UsageError.exit_code))
            assert error.count("\n") == 1, error
            if reserved != "pg_新":  # not a name of lower-case letters, digits and _
                assert f"role name {reserved!r} is reserved by PostgreSQL" in error, error
