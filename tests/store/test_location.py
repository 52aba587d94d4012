"""A history location: a file path or a PostgreSQL URL, its password never shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke
from hypothesis import given
from hypothesis import strategies as st

from chatmem.errors import StoreError
from chatmem.store.location import (
    HistoryLocation,
    LocationKind,
    as_location,
    is_url,
    masked,
    parse_location,
    password_of,
)


def test_a_path_is_a_sqlite_file() -> None:
    for path in ("history.db", "/home/u/.local/share/chatmem/history.db", "C:\\chat\\h.db",
                 "历史.db", ":memory:"):
        location = parse_location(path)
        assert location.kind is LocationKind.SQLITE
        assert (location.target, location.shown) == (path, path)
        assert not is_url(path)


@pytest.mark.parametrize("url", ["postgresql://ann@localhost/chat", "postgres://ann@127.0.0.1/chat",
                                 "postgresql://ann@[::1]:5433/chat",
                                 "postgresql://ann@127.0.0.2/chat",
                                 "postgresql://ann@/chat?host=/run/postgresql",
                                 "postgresql:///chat"])
def test_a_local_server_keeps_its_url(url: str) -> None:
    location = parse_location(url)
    assert location.kind is LocationKind.POSTGRESQL
    assert location.target == url


def test_a_remote_host_gets_tls_required() -> None:
    assert parse_location("postgresql://ann@db.example.com/chat").target == (
        "postgresql://ann@db.example.com/chat?sslmode=require")
    assert parse_location("postgresql://ann@db.example.com/chat?application_name=x").target == (
        "postgresql://ann@db.example.com/chat?application_name=x&sslmode=require")
    # One remote host among several is enough.
    assert parse_location("postgresql://ann@localhost,db.example.com/chat").target.endswith(
        "?sslmode=require")
    # A host parameter overrides the authority's host.
    assert parse_location("postgresql://ann@localhost/chat?host=10.0.0.5").target.endswith(
        "&sslmode=require")
    # libpq connects to hostaddr, not to the host it names for authentication.
    for url in ("postgresql://ann@localhost/chat?hostaddr=10.0.0.5",
                "postgresql:///chat?host=localhost&hostaddr=10.0.0.5",
                "postgresql://ann@localhost,localhost/chat?hostaddr=127.0.0.1,10.0.0.5"):
        assert parse_location(url).target == f"{url}&sslmode=require"
    assert parse_location("postgresql://ann@localhost/chat?hostaddr=127.0.0.1").target == (
        "postgresql://ann@localhost/chat?hostaddr=127.0.0.1")


def test_an_explicit_sslmode_is_kept() -> None:
    url = "postgresql://ann@db.example.com/chat?sslmode=disable"
    assert parse_location(url).target == url


def test_the_password_is_masked_in_the_user_part_and_the_query() -> None:
    assert masked("postgresql://ann:s3cret@db.example.com:5432/chat") == (
        "postgresql://ann:***@db.example.com:5432/chat")
    assert masked("postgresql://ann@db/chat?password=s3cret&sslmode=require") == (
        "postgresql://ann@db/chat?password=***&sslmode=require")
    assert masked("postgresql://ann:p@ss/w:rd@db/chat") == "postgresql://ann:***@db/chat"
    assert masked("postgresql://ann@db/chat") == "postgresql://ann@db/chat"
    shown = parse_location("postgresql://ann:s3cret@db.example.com/chat").shown
    assert shown == "postgresql://ann:***@db.example.com/chat?sslmode=require"


@given(st.text(alphabet=st.characters(blacklist_characters="&#?", min_codepoint=33),
               min_size=1, max_size=30))
def test_no_password_survives_masking(password: str) -> None:
    assert masked(f"postgresql://ann:{password}@db.example.com/chat") == (
        "postgresql://ann:***@db.example.com/chat")
    assert masked(f"postgresql://ann@db.example.com/chat?sslmode=require&password={password}") == (
        "postgresql://ann@db.example.com/chat?sslmode=require&password=***")


def test_another_scheme_is_refused_naming_it_masked() -> None:
    with pytest.raises(StoreError) as e:
        parse_location("mysql://ann:s3cret@db/chat")
    assert "mysql://ann:***@db/chat" in e.value.message
    assert "s3cret" not in e.value.message
    assert "\n" not in e.value.message


@pytest.mark.parametrize("url", ["postgresql://ann:s3cret@db.example.com",
                                 "postgresql://ann:s3cret@db.example.com/"])
def test_a_url_without_a_database_is_refused_masked(url: str) -> None:
    with pytest.raises(StoreError) as e:
        parse_location(url)
    assert e.value.message.startswith("postgresql://ann:***@db.example.com")
    assert "s3cret" not in e.value.message
    assert "names no database" in e.value.message


def test_a_database_named_in_the_query_is_enough() -> None:
    assert parse_location("postgresql://ann@localhost?dbname=chat").kind is LocationKind.POSTGRESQL


def test_the_password_of_a_url_is_found_wherever_it_is() -> None:
    assert password_of("postgresql://ann:s%40cret@db/chat") == "s@cret"
    assert password_of("postgresql://ann@db/chat?password=s3cret") == "s3cret"
    assert password_of("postgresql://ann@db/chat") is None
    assert password_of("postgresql://ann:@db/chat") is None


def test_the_scheme_is_read_in_any_case_and_given_to_the_driver_in_lower_case() -> None:
    for url in ("PostgreSQL://ann@localhost/chat", "POSTGRES://ann@localhost/chat"):
        location = parse_location(url)
        assert location.kind is LocationKind.POSTGRESQL
        assert location.target.startswith(url.split(":")[0].lower() + "://")
        assert location.database == "chat"


def test_a_service_names_the_database_for_the_url() -> None:
    location = parse_location("postgresql://?service=team")
    assert (location.kind, location.target, location.database) == (
        LocationKind.POSTGRESQL, "postgresql://?service=team", "")


@pytest.mark.parametrize(("location", "said"), [
    ("postgresql://ann:s3cret@[::1/chat", "postgresql://ann:***@[::1/chat: not a valid URL"),
    ("postgresql://ann:s3cret@::1]/chat", "postgresql://ann:***@::1]/chat: not a valid URL"),
    ("postgresql://ann:s3cret@db/ch\x1b[2Jat",
     "postgresql://ann:***@db/ch\\u001b[2Jat: a history location cannot hold a control "
     "character (\\u001b)"),
    ("history\n.db", "history\\u000a.db: a history location cannot hold a control character"),
    ("postgresql://ann:s3cret@db/ch\udcffat", "must be UTF-8 text"),
    ("   ", "is empty"),
])
def test_a_location_that_cannot_be_used_is_one_line_naming_where_it_came_from(
    location: str, said: str
) -> None:
    with pytest.raises(StoreError) as e:
        parse_location(location, "CHATMEM_DB")
    assert e.value.message.startswith("CHATMEM_DB") and said in e.value.message
    assert "s3cret" not in e.value.message
    assert not any(c in e.value.message for c in "\n\x1b")


def test_a_path_is_a_file_and_a_location_is_itself() -> None:
    path = Path("postgresql:/x.db")  # a Path is never read as a URL
    assert as_location(path) == HistoryLocation.file(path)
    assert as_location(path).kind is LocationKind.SQLITE
    located = parse_location("postgresql://ann@localhost/chat")
    assert as_location(located) is located


def test_a_url_in_another_case_never_becomes_a_file(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28, finding 7: `--db PostgreSQL://u:p@…` listed an empty history and created
    `./PostgreSQL:/u:p@127.0.0.1:1/db`, the password in a folder's name."""
    monkeypatch.chdir(tmp_path)
    result = invoke("sessions", "list", "--db", "PostgreSQL://u:s3cret@127.0.0.1:1/db")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: postgresql://u:***@127.0.0.1:1/db: cannot connect")
    assert result.stderr.count("\n") == 1 and "s3cret" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_an_in_memory_history_a_person_names_is_refused_in_one_line(tmp_path: Path) -> None:
    """Review: `chat m --db :memory:` stored the turns nowhere and exited 0; `sessions list
    --db :memory:` then said "no history file at :memory:"."""
    (tmp_path / "c.toml").write_text('db = ":memory:"\n', encoding="utf-8")
    for args, env, origin in (
            (["chat", "m", "--db", ":memory:"], {}, "--db"),
            (["sessions", "list"], {"CHATMEM_DB": ":memory:"}, "CHATMEM_DB"),
            (["sessions", "list", "--config", str(tmp_path / "c.toml")], {}, "key 'db'")):
        result = invoke(*args, input="hi\n", env={"CHATMEM_PROVIDER": "scripted", **env},
                        code=2)
        assert result.stderr.count("\n") == 1
        assert origin in result.stderr and ":memory: keeps nothing" in result.stderr
    # chatmem's own scratch database is no location a person gave.
    assert parse_location(":memory:").kind is LocationKind.SQLITE
    with pytest.raises(StoreError):
        parse_location(":memory:", "--db")


def test_an_empty_history_location_a_person_names_is_refused_not_the_default(
        tmp_path: Path) -> None:
    """Review: `sessions import x.jsonl s --db "$UNSET"` wrote into the default history with
    no word; an empty CHATMEM_DB stays "not set", as environment variables go."""
    (tmp_path / "c.toml").write_text('db = ""\n', encoding="utf-8")
    for args, origin in ((["sessions", "list", "--db", ""], "--db"),
                         (["sessions", "copy", "--from", "", "--to", str(tmp_path / "t.db")],
                          "--from"),
                         (["sessions", "list", "--config", str(tmp_path / "c.toml")],
                          "key 'db'")):
        result = invoke(*args, code=2)
        assert result.stderr.count("\n") == 1
        assert f"{origin} is empty" in result.stderr, result.stderr
    assert not (tmp_path / "t.db").exists()
    invoke("sessions", "list", env={"CHATMEM_DB": ""}, code=0)


def test_a_history_named_with_a_tilde_no_user_has_is_that_file(tmp_path: Path,
                                                               monkeypatch) -> None:
    """`--db ~nosuchuser/h.db` ended in pathlib's "Could not determine home directory"
    traceback; it names a file of that name, here."""
    monkeypatch.chdir(tmp_path)
    said = invoke("sessions", "list", "--db", "~nosuchuser_chatmem/h.db", code=1)
    assert said.stderr == ("error: no history file at ~nosuchuser_chatmem/h.db (chat, ask"
                           " SESSION and sessions import create it)\n")
    assert parse_location("~/h.db").path == Path.home() / "h.db"


def test_a_location_ending_in_a_slash_is_a_folder_refused_in_one_line(tmp_path: Path) -> None:
    """`--db notes/` (a folder meant, not there yet) made a history file named `notes`,
    and a later `--db notes/x.db` then failed on it as 'cannot create its folder'."""
    meant = f"{tmp_path}/我的 notes/"
    for args, env, origin in (
            (["ask", "s", "hi", "--db", meant], {}, "--db"),
            (["sessions", "list"], {"CHATMEM_DB": meant}, "CHATMEM_DB")):
        result = invoke(*args, env={"CHATMEM_PROVIDER": "scripted", **env}, code=2)
        assert result.stderr == (f"error: {origin}: {meant} names a folder (it ends in /):"
                                 f" name the history file in it, e.g. {meant}chatmem.db\n")
    assert list(tmp_path.iterdir()) == []  # nothing made
    assert parse_location(f"{tmp_path}/h.db").path == tmp_path / "h.db"


def test_a_location_ending_in_a_slash_and_a_dot_is_a_folder_refused(tmp_path: Path) -> None:
    """`--db notes.db/.` made a history file named notes.db (a path drops a last "."),
    exit 0 with the turn stored there, as `--db notes/` did before it was refused."""
    meant = f"{tmp_path}/笔记/."
    result = invoke("ask", "s", "hi", "--db", meant, env={"CHATMEM_PROVIDER": "scripted"},
                    code=2)
    assert result.stderr == (f"error: --db: {meant} names a folder (it ends in /.): name the"
                             f" history file in it, e.g. {tmp_path}/笔记/chatmem.db\n")
    assert list(tmp_path.iterdir()) == []  # nothing made
    assert parse_location(f"{tmp_path}/.h.db").path == tmp_path / ".h.db"
