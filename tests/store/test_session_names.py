"""Session names made from what clients give: `session_name_of` is one-to-one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chatmem.store.records import SESSION_NAME, session_name_of

ids = st.one_of(st.text(min_size=1, max_size=120),
                st.from_regex(SESSION_NAME, fullmatch=True),
                st.sampled_from(["旅行", "日记", "朋友", "杭州", "!!!", "???", "🙂", "🙃",
                                 "x" * 64 + "-alice", "x" * 64 + "-bob"]))


@given(ids, ids)
def test_two_ids_never_share_a_session_and_each_name_is_valid(first: str, second: str) -> None:
    a, b = session_name_of(first), session_name_of(second)
    assert SESSION_NAME.fullmatch(a) and SESSION_NAME.fullmatch(b)
    assert (a == b) == (first == second)


@given(st.from_regex(SESSION_NAME, fullmatch=True))
def test_an_id_that_is_a_valid_name_is_the_name(name: str) -> None:
    assert session_name_of(name) == name


def test_a_name_made_from_an_id_shows_where_it_came_from() -> None:
    assert session_name_of("trip to 杭州").startswith("trip-to-杭州-")
    assert session_name_of("!!!").startswith("session-")
    long = session_name_of("x" * 100)
    assert len(long) == 64 and long.startswith("x" * 51 + "-")
