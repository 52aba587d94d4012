"""A history location: a file path or a PostgreSQL URL, its password never shown."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmem.errors import StoreError
from chatmem.store.location import LocationKind, is_url, masked, parse_location, password_of


def test_a_path_is_a_sqlite_file() -> None:
    for path in ("history.db", "/home/u/.local/share/chatmem/history.db", "C:\\chat\\h.db",
                 "历史.db", ":memory:"):
        location = parse_location(path)
        assert location.kind is LocationKind.SQLITE
        assert (location.target, location.shown) == (path, path)
        assert not is_url(path)


@pytest.mark.parametrize("url", ["postgresql://ann@localhost/chat", "postgres://ann@127.0.0.1/chat",
                                 "postgresql://ann@[::1]:5433/chat",
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
