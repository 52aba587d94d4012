"""A purged amount is erased in every way it is written, in every session of the profile.

A purge of `salary: 15000` left "fifteen thousand", "15,000", "1.5万" and "一万五千" in the
user's other messages; of `rent: €900` it left "900 euros" and "九百欧元"; of `kids: 3 kids`
it left "three kids" (only the message the fact was read from was searched for forms:
said_values.written_otherwise). Decided: the same number in digits (grouped or not, with
k, thousand or 万/千), English words or Chinese numerals; with the value's currency in any
of its names (symbol, code, word, Chinese) or the same words after it. A number of one
digit alone is searched in no form (3 is too short to search out, and so is "three").
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from cli_runner import invoke
from growth import assert_linear, best_cpu_seconds

from chatmem.privacy.mentions import MARKER, erase_mentions
from chatmem.store import Store

F = MARKER


@pytest.mark.parametrize(("value", "text", "erased"), [
    ("15000", "fifteen thousand, Fifteen Thousand, 15,000, 15k, 15000 and 15 thousand",
     f"{F}, {F}, {F}, {F}, {F} and {F}"),
    ("15000", "一万五千，一万五，1.5万，1万5，15000元，壹", f"{F}，{F}，{F}，{F}，{F}元，壹"),
    # Other numbers stay: inside a longer one or a code, another amount.
    ("15000", "150000, ORD15000, 1500, fifteen thousand five hundred, 十五万, 五千",
     "150000, ORD15000, 1500, fifteen thousand five hundred, 十五万, 五千"),
    ("€900", "€900, 900€, 900 euros, EUR 900, 900 Euro, 九百欧元, 900欧元",
     f"{F}, {F}, {F}, {F}, {F}, {F}, {F}"),
    ("€900", "900 dollars, $900, 900 people", "900 dollars, $900, 900 people"),
    ("5000元", "5千元，五千块，5000 yuan，¥5000，五千人", f"{F}，{F}，{F}，{F}，五千人"),
    ("3 kids", "three kids, Three Kids, 3 kids; three kidneys, 3 cats",
     f"{F}, {F}, {F}; three kidneys, 3 cats"),
    ("3个孩子", "我有三个孩子，3个孩子，三只猫", f"我有{F}，{F}，三只猫"),
    ("25 cats", "twenty-five cats, twenty five cats, 25 cats", f"{F}, {F}, {F}"),
    ("120", "a hundred and twenty, one hundred twenty, 一百二十", f"{F}, {F}, {F}"),
    # One digit alone is no search (mentions.MIN_CHARACTERS): "three" stays, and 3.
    ("3", "three, 3, 三", "three, 3, 三"),
    # Words that only hold numerals are not numbers: 万一, 千万, one two.
    ("10000", "万一，千万，一万", f"万一，千万，{F}"),
])
def test_an_amount_is_erased_in_each_of_its_forms(value: str, text: str, erased: str) -> None:
    assert erase_mentions(text, [value]) == erased


@pytest.mark.parametrize(("value", "text", "erased"), [
    # Digits grouped by a space (French, SI); a group that runs on is another number.
    ("15000", "15 000, 15 000.00 and 15 0000", f"{F}, {F} and 15 0000"),
    ("15000元", "15 000元，壹万伍仟元整", f"{F}，{F}整"),
    # 亿 (a hundred million), in digits and in numerals; 一亿五 as 一万五 is read.
    ("100000000元", "1亿元存款，一亿元，壹亿元，一万元", f"{F}存款，{F}，{F}，一万元"),
    ("¥150000000", "1.5亿元，一亿五千万元，一亿五元", f"{F}，{F}，{F}"),
    # The capital numerals of cheques and receipts: 壹万 is 一万.
    ("10000元", "壹万元整，一万元整，壹仟元", f"{F}整，{F}整，壹仟元"),
    # Grouped digits before 万 (read by Fraction with their marks in: a ValueError's
    # traceback, and the purge of any amount stopped with the value left everywhere).
    ("15000", "15 000万，1'500万，1\u00a0500万，15 000", "15 000万，1'500万，1\u00a0500万，" + F),
    ("¥150000000", "15 000万元，1'500万元", f"{F}，1'500万元"),
])
def test_spaced_digits_yi_and_capital_numerals_are_forms_too(
        value: str, text: str, erased: str) -> None:
    """"15 000", 1亿 and 壹万 were not read as numbers: a purge of the amount left them."""
    assert erase_mentions(text, [value]) == erased


def test_a_name_is_found_in_any_case_and_with_or_without_its_accents() -> None:
    nfd = unicodedata.normalize("NFD", "José")
    text = f"José, JOSÉ, Jose, jose, {nfd}; Josefina"
    for value in ("José", "JOSE", nfd):
        assert erase_mentions(text, [value]) == f"{F}, {F}, {F}, {F}, {F}; Josefina"


SAID = [
    ("I make fifteen thousand a month.", f"I make {F} a month."),
    ("That is 15,000 before tax, 15k.", f"That is {F} before tax, {F}."),
    ("月薪一万五，也就是1.5万。", f"月薪{F}，也就是{F}。"),
    ("The rent is 900 euros, EUR 900.", f"The rent is {F}, {F}."),
    ("房租九百欧元。", f"房租{F}。"),
]


def _stored(db: str) -> tuple[list[int], int, int]:
    with Store(db) as store:
        sessions = [store.sessions.create_session(name, "buffer", user="me").id
                    for name in ("s1", "s2")]
        for i, (said, _) in enumerate(SAID):
            store.history.import_messages(sessions[i % 2], [{"role": "user", "content": said}])
        salary = store.facts.upsert_fact("salary", "15000", scope="user", user="me").id
        rent = store.facts.upsert_fact("rent", "€900", scope="user", user="me").id
    return sessions, salary, rent


def _purged(db: str) -> list[str]:
    sessions, salary, rent = _stored(db)
    for fact in (salary, rent):
        invoke("facts", "forget", str(fact), "--purge", "--yes", "--db", db, code=0)
    with Store(db) as store:
        by_session = [[m.content for m in store.history.messages(s)] for s in sessions]
    return [by_session[i % 2][i // 2] for i in range(len(SAID))]


def test_a_purge_erases_every_form_in_every_session_and_leaves_no_byte(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    assert _purged(str(db)) == [erased for _, erased in SAID]
    data = b"".join(p.read_bytes() for p in tmp_path.glob("h.db*"))
    for form in ("fifteen", "15,000", "15k", "1.5万", "一万五", "900 euros", "九百"):
        assert re.search(re.escape(form).encode(), data, re.IGNORECASE) is None, form


def test_on_postgresql_too(pg_url: str) -> None:
    assert _purged(pg_url) == [erased for _, erased in SAID]


@pytest.mark.parametrize(("value", "unit"), [
    ("€900", "EUR 900, "),  # a currency before each number
    ("€900", "900 euros, "),
    ("3 kids", "3 kids, "),
    ("15000", "第1行：一个7元，"),  # Chinese numerals among numbers in digits
    ("15000", "1万11"),  # digits between 万s, each run read from after the one before
])
def test_an_amount_said_thousands_of_times_costs_time_linear_in_the_text(
        value: str, unit: str) -> None:
    """Each number looked for a currency in all the text before it, and each Chinese or
    English number checked every number read before: 8,000 "EUR 900" (64 KB) took 97 s to
    purge of €900, a 60 KB Chinese table 3 s of 15000."""
    assert_linear(lambda text: erase_mentions(text, [value]), lambda n: unit * n, 500, value)
    assert erase_mentions(unit * 3, [value]).count(F) == (0 if value == "15000" else 3)


@pytest.mark.parametrize("run", ["1" * 26 + ",5", "2万" + "1" * 26 + ",5", "1" * 26 + ".5.5"])
def test_a_run_of_digits_no_number_ends_costs_a_purge_no_time(run: str) -> None:
    """A run of digits that ends in no number (",5" after it) was read by trying every way
    of splitting it into a number and the digits of a Chinese amount (1万5): a log line
    with 26 digits made `facts forget salary --purge` of 15000 run for minutes, the value
    left everywhere meanwhile; 30 digits, hours. Whoever can put a line in the history (a
    model's reply, an imported transcript, a served client) could keep any amount from
    being purged."""
    said = f"It is 15000 now. {run}"
    seconds = best_cpu_seconds(lambda: erase_mentions(said, ["15000"]), runs=1)
    assert erase_mentions(said, ["15000"]) == f"It is {F} now. {run}"
    assert seconds < 0.5, seconds


@pytest.mark.parametrize(("value", "run"), [
    ("15000", "15000" + "7" * 5000),  # past the 4,300 digits Python reads as an int
    ("€900", "0." + "9" * 5000),
    ("15000", "1万" + "5" * 5000 + "千"),
    ("一万五千", "8" * 5000 + "万"),
])
def test_a_message_holding_a_run_of_thousands_of_digits_is_purged_like_any(
        tmp_path: Path, value: str, run: str) -> None:
    """Every number a purge read was made an int, and Python refuses a string of more than
    4,300 digits: a message pasting such a run (an id, digits of pi) made `facts forget
    --purge` of any amount end in a ValueError's traceback, the value left in every
    message. Such a run is no amount; the value beside it is erased as in any message."""
    said = f"It is {value} now. {run}"
    db = str(tmp_path / "h.db")
    with Store(db) as store:
        session = store.sessions.create_session("s", "buffer", user="me").id
        store.history.import_messages(session, [{"role": "user", "content": said}])
        fact = store.facts.upsert_fact("amount", value, scope="user", user="me").id
    invoke("facts", "forget", str(fact), "--purge", "--yes", "--db", db, code=0)
    with Store(db) as store:
        (message,) = store.history.messages(session)
    assert message.content == f"It is {F} now. {run}"  # a longer number holds no mention
