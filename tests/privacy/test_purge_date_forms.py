"""A purged Chinese date is erased in every way it is written.

A purge of `生日: 十二月三日` left "12月3日", "１２月３日" and "12月3号" in the user's
messages (and `12月3日` left 十二月三日): the month and day were read as two numbers, so no
amount, and searched only as spelled. Decided: a month and day (月, then 日/号/號), perhaps
after a year, in digits (half or full width) or Chinese numerals, is mentioned wherever the
same month and day are written; when the value gives a year, only with that year.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke

from chatmem.privacy.mentions import MARKER, erase_mentions
from chatmem.store import Store

F = MARKER


@pytest.mark.parametrize(("value", "text", "erased"), [
    ("十二月三日", "生日12月3日，１２月３日，12月3号，十二月三日", f"生日{F}，{F}，{F}，{F}"),
    ("12月3日", "十二月三日和12月3號", f"{F}和{F}"),
    # Another date stays: another day or month, or a date inside a longer one.
    ("12月3日", "12月13日，2月3日，十二月三十日，12月4日",
     "12月13日，2月3日，十二月三十日，12月4日"),
    # A year in the text: the month and day are the mention; a value's year must match.
    ("12月3日", "2025年12月3日", f"2025年{F}"),
    ("2026年12月3日", "二〇二六年十二月三日，2025年12月3日", f"{F}，2025年12月3日"),
    # Spoken without 日 where the day ends the words (privacy71: 三月十五 was left); a
    # number running on into a count or an amount is none.
    ("3月15日", "三月十五那天，3月15前，3月15到20日，三月十五。",
     f"{F}那天，{F}前，{F}到20日，{F}。"),
    ("三月十五", "3月15日和3月15号", f"{F}和{F}"),
    *[("3月15日", kept, kept) for kept in ("3月15人参加，6月1.5万元，三月十五六日",)],
])
def test_a_date_is_erased_in_each_of_its_forms(value: str, text: str, erased: str) -> None:
    assert erase_mentions(text, [value]) == erased


def _purged(db: str) -> list[str]:
    with Store(db) as store:
        session = store.sessions.create_session("生日", "buffer", user="me").id
        store.history.import_messages(session, [
            {"role": "user", "content": "我的生日是12月3日。"},
            {"role": "user", "content": "再说一遍：１２月３日，也就是十二月三号。"}])
        fact = store.facts.upsert_fact("生日", "十二月三日", scope="user", user="me").id
    invoke("facts", "forget", str(fact), "--purge", "--yes", "--db", db, code=0)
    with Store(db) as store:
        return [m.content for m in store.history.messages(session)]


ERASED = [f"我的生日是{F}。", f"再说一遍：{F}，也就是{F}。"]


def test_a_purge_erases_every_form_of_a_date_and_leaves_no_byte(tmp_path: Path) -> None:
    assert _purged(str(tmp_path / "h.db")) == ERASED
    data = b"".join(p.read_bytes() for p in tmp_path.glob("h.db*"))
    for form in ("12月3", "１２月３", "十二月三"):
        assert form.encode() not in data, form


def test_on_postgresql_too(pg_url: str) -> None:
    assert _purged(pg_url) == ERASED


def test_a_date_is_no_number_to_erase_elsewhere(tmp_path: Path) -> None:
    """Purging `生日: 十二月三日` read from "我的生日是十二月三日" erased every 12 and 十二 in the
    profile ("我有[forgotten]个苹果"): the 十二 of the date, read as the number 12, was a
    value written otherwise (said_values.written_otherwise). A date has no such numbers."""
    db = str(tmp_path / "h.db")
    with Store(db) as store:
        session = store.sessions.create_session("生日", "buffer", user="me").id
        store.history.import_messages(session, [
            {"role": "user", "content": "我的生日是十二月三日。"},
            {"role": "user", "content": "我有12个苹果，十二个梨。"}])
        first = store.history.messages(session)[0]  # the fact cites it, as extraction does
        fact = store.facts.upsert_fact("生日", "十二月三日", scope="user", user="me",
                                       source_message_id=first.id, source_turn=first.turn,
                                       source_session_id=session).id
    invoke("facts", "forget", str(fact), "--purge", "--yes", "--db", db, code=0)
    with Store(db) as store:
        assert [m.content for m in store.history.messages(session)] == [
            f"我的生日是{F}。", "我有12个苹果，十二个梨。"]


def test_a_date_without_the_values_year_is_listed_as_perhaps_it_and_kept(
        tmp_path: Path) -> None:
    """Purging `2023年5月7日` left `5月7日` unsaid (privacy71): a year-less date may be
    another year's, so it is kept, and now the dry run lists it as perhaps the date."""
    db = str(tmp_path / "h.db")
    with Store(db) as store:
        session = store.sessions.create_session("生日", "buffer", user="me").id
        store.history.import_messages(session, [
            {"role": "user", "content": "我的生日是2023年5月7日，就是五月七号。"}])
        fact = store.facts.upsert_fact("生日", "2023年5月7日", scope="user", user="me").id
    shown = invoke("facts", "forget", str(fact), "--purge", "--dry-run", "--db", db, code=0)
    assert "without a year" in shown.stdout and "五月七号" in shown.stdout
    assert "keeping 1 date written without a year" in " ".join(shown.stderr.split())
    done = invoke("facts", "forget", str(fact), "--purge", "--yes", "--db", db, code=0)
    assert "--dry-run lists those without one" in " ".join(done.stderr.split())
    with Store(db) as store:
        assert [m.content for m in store.history.messages(session)] == [
            f"我的生日是{F}，就是五月七号。"]
