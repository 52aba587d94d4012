"""A purged card or ID number is erased however its digits are grouped.

A purge of `银行卡: 6222021234567890123` (or a card's 4111111111111111, an ID's
11010119900307123X) left "6222 0212 3456 7890 123", "4111-1111-1111-1111" and
"110101 19900307 123X" in the messages: a run past a phone number's 15 digits was searched
only as spelled. Decided: 16 to 19 digits (an ID's last may be X), in one run or in groups
split by spaces or dashes, half or full width, standing whole.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke

from chatmem.privacy.mentions import MARKER, erase_mentions
from chatmem.store import Store

F = MARKER


@pytest.mark.parametrize(("value", "text", "erased"), [
    ("4111111111111111", "4111 1111 1111 1111, 4111-1111-1111-1111, 4111111111111111",
     f"{F}, {F}, {F}"),
    ("6222 0212 3456 7890 123",
     "银行卡6222021234567890123，６２２２ ０２１２ ３４５６ ７８９０ １２３", f"银行卡{F}，{F}"),
    ("11010119900307123X", "身份证110101 19900307 123X，11010119900307123x",
     f"身份证{F}，{F}"),
    # Another number stays: a group or digit more, another digit, inside a code or decimal.
    ("4111111111111111", "4111 1111 1111 1111 2, 4111 1111 1111 1112, ID4111111111111111, "
     "1.4111111111111111", "4111 1111 1111 1111 2, 4111 1111 1111 1112, ID4111111111111111, "
     "1.4111111111111111"),
])
def test_a_long_number_is_erased_however_it_is_grouped(value: str, text: str,
                                                       erased: str) -> None:
    assert erase_mentions(text, [value]) == erased


def _purged(db: str) -> list[str]:
    with Store(db) as store:
        session = store.sessions.create_session("卡号", "buffer", user="me").id
        store.history.import_messages(session, [
            {"role": "user", "content": "my card is 4111 1111 1111 1111"},
            {"role": "user", "content": "卡号：4111-1111-1111-1111。"}])
        fact = store.facts.upsert_fact("card", "4111111111111111", scope="user", user="me").id
    invoke("facts", "forget", str(fact), "--purge", "--yes", "--db", db, code=0)
    with Store(db) as store:
        return [m.content for m in store.history.messages(session)]


ERASED = [f"my card is {F}", f"卡号：{F}。"]


def test_a_purge_erases_a_grouped_card_number_and_leaves_no_byte(tmp_path: Path) -> None:
    assert _purged(str(tmp_path / "h.db")) == ERASED
    data = b"".join(p.read_bytes() for p in tmp_path.glob("h.db*"))
    for form in (b"4111 1111", b"4111-1111"):
        assert form not in data, form


def test_on_postgresql_too(pg_url: str) -> None:
    assert _purged(pg_url) == ERASED
