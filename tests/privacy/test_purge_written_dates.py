"""A purged date is erased however it is written: with slashes and in English words too.

Purging `birthday: May 7, 2023` left `2023-05-07`, `2023/5/7`, `the 7th of May, 2023` and
`2023年5月7日` in the user's messages (only the value's own spelling was searched; Chinese
month-and-day values alone had other forms). Decided (privacy.date_forms): every form of the
date is erased; numbers that read as two dates (7/5/2023: 7 May or July 5) are the date only
in the value's own order, and otherwise kept and shown by a dry run as perhaps another date;
text that is no date (`may 7`, version 1.2.23, a fraction 7/5) is never touched.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke

from chatmem.privacy.mentions import MARKER, erase_mentions
from chatmem.store import Store

F = MARKER
TEXT = ("born 2023-05-07, 2023/5/7, May 7, 2023, 7 May 2023, the 7th of May, 2023, "
        "MAY 7TH 2023, 17/5/2023, 2023年5月7日; 7/5/2023, 5/7/2023")


@pytest.mark.parametrize(("value", "erased"), [
    ("May 7, 2023", f"born {F}, {F}, {F}, {F}, the {F}, {F}, 17/5/2023, {F}; "
                    "7/5/2023, 5/7/2023"),
    # The value's own order read either way: its form in that order, nothing else.
    ("07/05/2023", "born 2023-05-07, 2023/5/7, May 7, 2023, 7 May 2023, the 7th of May, 2023,"
                   f" MAY 7TH 2023, 17/5/2023, 2023年5月7日; {F}, 5/7/2023"),
    # Day over 12: one reading; without a year, the year written with it is kept.
    ("17 May", f"born 2023-05-07, 2023/5/7, May 7, 2023, 7 May 2023, the 7th of May, 2023, "
               f"MAY 7TH 2023, {F}/2023, 2023年5月7日; 7/5/2023, 5/7/2023"),
    ("十二月三日", TEXT),
])
def test_a_date_is_erased_in_each_of_its_forms(value: str, erased: str) -> None:
    assert erase_mentions(TEXT, [value]) == erased


@pytest.mark.parametrize("text", [
    "may 7 people come?", "version 1.2.23 of 5/7", "May 17, 2023", "Feb 7, 2023",
    "2023-05-17", "May 7, 2024", "Mayor 7", "12.5.7.2023"])
def test_what_is_no_mention_of_the_date_stays(text: str) -> None:
    assert erase_mentions(text, ["May 7, 2023"]) == text


def _store(db: str) -> int:
    with Store(db) as store:
        session = store.sessions.create_session("birthday", "buffer", user="me").id
        store.history.import_messages(session, [
            {"role": "user", "content": "My birthday is 2023/5/7."},
            {"role": "user", "content": "Again: the 7th of May, 2023 (7/5/2023 on forms)."}])
        return store.facts.upsert_fact("birthday", "May 7, 2023", scope="user", user="me").id


def test_a_dry_run_shows_the_date_read_either_way_and_a_purge_keeps_it(tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    fact = _store(db)
    shown = invoke("facts", "forget", str(fact), "--purge", "--dry-run", "--db", db, code=0)
    assert "read either way round" in shown.stdout and "7/5/2023" in shown.stdout
    assert "perhaps another date" in shown.stdout and "keeping 1 date written" in shown.stderr
    done = invoke("facts", "forget", str(fact), "--purge", "--yes", "--db", db, code=0)
    assert "chatmem logs -q 2023" in done.stderr
    with Store(db) as store:
        session = store.sessions.find_session("birthday").id  # type: ignore[union-attr]
        assert [m.content for m in store.history.messages(session)] == [
            f"My birthday is {F}.", f"Again: the {F} (7/5/2023 on forms)."]
    data = b"".join(p.read_bytes() for p in tmp_path.glob("h.db*"))
    assert b"2023/5/7" not in data and b"7th of May" not in data


def test_on_postgresql_too(pg_url: str) -> None:
    fact = _store(pg_url)
    invoke("facts", "forget", str(fact), "--purge", "--yes", "--db", pg_url, code=0)
    with Store(pg_url) as store:
        session = store.sessions.find_session("birthday").id  # type: ignore[union-attr]
        first = store.history.messages(session)[0]
        assert first.content == f"My birthday is {F}."
