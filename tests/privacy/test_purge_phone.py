"""A purged phone number goes in every layout it is written in, and never another number.

Review: purging `phone: +1 415 555 0134` kept "(415) 555-0134", "415.555.0134" and
"+14155550134" in the messages, the turns and the index (`logs -q "+1 415 555 0134"` still
listed the message), and neither the dry run nor the purge said so. A form that may be the
number and may be another (its end without the area code, a run it is only part of) is kept
and listed apart, unsure, as a name spelled otherwise is.
"""

from __future__ import annotations

import json
import re

import pytest
from cli_runner import chat, invoke
from conftest import History
from growth import assert_linear

from chatmem.privacy.mentions import MARKER, erase_mentions, needles
from chatmem.privacy.near_mentions import other_numbers, other_spellings
from chatmem.privacy.phones import last_part, number_of
from chatmem.store import Store

F = MARKER
US = "+1 415 555 0134"


@pytest.mark.parametrize(("text", "erased"), [
    ("Call me at +1 415 555 0134 or (415) 555-0134 or 415.555.0134 or +14155550134",
     f"Call me at {F} or {F} or {F} or {F}"),
    ("tel 1 415 555 0134 or 415-555-0134.", f"tel {F} or {F}."),
    ("我的电话是+1 (415) 555-0134。", f"我的电话是{F}。"),
    ("＋１ ４１５ ５５５ ０１３４", F),
])
def test_every_layout_of_the_number_is_a_mention(text: str, erased: str) -> None:
    assert erase_mentions(text, [US]) == erased


@pytest.mark.parametrize("text", [
    "+44 415 555 0134",  # another country's number with the same digits
    "+1 415 555 0199",
    "A4155550134 is an order code",
    "4155550134x",
    "between 2024-05-03 and 2024-05-04",
])
def test_another_number_is_never_erased(text: str) -> None:
    assert erase_mentions(text, [US]) == text


@pytest.mark.parametrize(("value", "text", "unsure"), [
    (US, "at 555-0134, or 0014155550134, or 415 555 0134 5 times", [
        "555-0134", "0014155550134", "415 555 0134"]),
    ("13800138000", "或+86 138 0013 8000", ["+86 138 0013 8000"]),
    ("+44 20 7946 0958", "ring 7946 0958", ["7946 0958"]),
])
def test_a_form_that_may_be_another_number_is_kept_and_listed(
        value: str, text: str, unsure: list[str]) -> None:
    assert erase_mentions(text, [value]) == text
    assert [text[s.start:s.end] for s in other_numbers(text, [value])] == unsure


@pytest.mark.parametrize(("text", "erased"), [
    # Review: another group of digits just before or after the number made the whole run
    # "perhaps another number", and the number itself was kept.
    ("At 10:30 415-555-0134 called", f"At 10:30 {F} called"),
    ("my desk is room 12 (415) 555-0134", f"my desk is room 12 {F}"),
    ("2) 415-555-0134", f"2) {F}"),
    ("2024-05-01 415-555-0134", f"2024-05-01 {F}"),
    ("Tel/Fax: 415-555-0134 / 415-555-0135", f"Tel/Fax: {F} / 415-555-0135"),
    ("4155550134 4155550135", f"{F} 4155550135"),
    ("00 1 415 555 0134", f"00 {F}"),
    ("房间12（415）555-0134", f"房间12{F}"),
])
def test_the_number_among_other_digits_is_erased_and_they_are_kept(text: str, erased: str) -> None:
    assert erase_mentions(text, [US]) == erased
    assert other_numbers(text, [US]) == []


@pytest.mark.parametrize(("text", "unsure"), [
    ("No. 7 415 555 0134", "415 555 0134"),  # +7 415 555 01 34 is a number in Russia
    ("415 555 0134 5", "415 555 0134"),  # +41 55 550 13 45 one in Switzerland
])
def test_the_number_making_another_valid_number_with_digits_beside_it_is_unsure(
        text: str, unsure: str) -> None:
    assert erase_mentions(text, [US]) == text
    assert [text[s.start:s.end] for s in other_numbers(text, [US])] == [unsure]


@pytest.mark.parametrize("value", [US, "415 555 0134"])
@pytest.mark.parametrize(("text", "erased"), [
    # Review: a run starting with + was read from its first group only, so the number after
    # another number written with its country code was neither erased nor reported.
    ("office +44 20 7946 0958 415 555 0134", f"office +44 20 7946 0958 {F}"),
    ("+44 20 7946 0958 / 415 555 0134", f"+44 20 7946 0958 / {F}"),
    ("my numbers: +1 415 555 0199 415 555 0134", f"my numbers: +1 415 555 0199 {F}"),
    ("+44 20 7946 0958 (415) 555-0134", f"+44 20 7946 0958 {F}"),
])
def test_the_number_after_another_number_with_a_plus_is_erased(
        value: str, text: str, erased: str) -> None:
    assert erase_mentions(text, [value]) == erased
    assert other_numbers(text, [value]) == []


def test_the_number_written_twice_after_a_plus_is_erased_twice() -> None:
    assert erase_mentions("+1 415 555 0134 415 555 0134", [US]) == f"{F} {F}"


@pytest.mark.parametrize(("text", "unsure"), [
    ("+44 20 7946 0958 555-0134", "555-0134"),  # its end only: perhaps another number
    ("+1 415 555 0199 4155550134 5", "4155550134"),  # +41 55 550 13 45 beside it
])
def test_what_may_be_the_number_after_another_number_with_a_plus_is_kept_and_listed(
        text: str, unsure: str) -> None:
    assert erase_mentions(text, [US]) == text
    assert [text[s.start:s.end] for s in other_numbers(text, [US])] == [unsure]


def test_a_long_table_of_the_number_is_erased_row_by_row() -> None:
    text = " ".join(["415 555 0134"] * 2000)
    assert erase_mentions(text, [US]) == " ".join([F] * 2000)


def test_a_number_without_a_country_code_is_erased_in_its_other_layouts() -> None:
    text = "我的手机１３８ ００１３ ８０００，或138-0013-8000"
    assert erase_mentions(text, ["13800138000"]) == f"我的手机{F}，或{F}"


def test_what_is_no_phone_number_keeps_the_exact_rule() -> None:
    assert number_of("2024-05-03") is None and number_of("Ada") is None
    assert number_of("12345") is None  # too short to be one
    assert erase_mentions("order 12-345 and 12345", ["12345"]) == f"order 12-345 and {F}"
    assert needles("Ada Lovelace") == ["Lovelace"]


def test_every_layout_holds_the_needle_the_store_narrows_rows_by() -> None:
    assert needles(US) == ["34"]
    assert last_part(US) == "0134" and last_part("+14155550134") == "0134"


def _said(history: History, session: str) -> list[str]:
    with Store(history.location, key=history.key) as store:
        return [m.content for m in store.history.messages(store.sessions.session(session).id)
                if m.role == "user"]


def test_a_purge_erases_the_number_in_every_layout_on_every_backend(history: History) -> None:
    db = str(history.location)
    chat(db, "ph", [f"/remember phone: {US}",
                    f"Call me at {US} or (415) 555-0134 or 415.555.0134 or +14155550134",
                    "my desk is 555-0134"], "-s", "entity", code=0)
    dry = invoke("facts", "forget", "phone", "--purge", "--dry-run", "-s", "ph", "--db", db,
                 code=0)
    assert "[[(415) 555-0134]]" in dry.stdout and "[[+14155550134]]" in dry.stdout
    assert "kept, unsure: the number written in part" in dry.stdout
    assert "[[555-0134]]" in dry.stdout.split("kept, unsure")[1]
    # The scripted model's replies echo what was said: counted alike.
    assert re.search(r"keeping \d+ numbers? written in part", " ".join(dry.stderr.split()))
    listed = json.loads(invoke("facts", "forget", "phone", "--purge", "--dry-run", "--json",
                               "-s", "ph", "--db", db, code=0).stdout)["messages"]
    said = [m for m in listed if m["role"] == "user"]
    assert [len(m["mentions"]) for m in said] == [4, 0]  # /remember is no message
    assert said[1]["other_numbers"] == [[11, 19]]
    done = invoke("facts", "forget", "phone", "--purge", "-y", "-s", "ph", "--db", db, code=0)
    assert "chatmem logs -q 0134 finds those with 0134 written apart" in " ".join(
        done.stderr.split())
    assert _said(history, "ph")[0] == f"Call me at {F} or {F} or {F} or {F}"
    assert _said(history, "ph")[1] == "my desk is 555-0134"
    found = invoke("logs", "-q", "415 555 0134", "--db", db, code=None)
    assert "Call me" not in found.stdout


def test_a_purge_erases_the_number_after_other_digits(history: History) -> None:
    db = str(history.location)
    chat(db, "pd", [f"/remember phone: {US}",
                    "At 10:30 415-555-0134 called, and my desk is room 12 (415) 555-0134"],
         "-s", "entity", code=0)
    listed = json.loads(invoke("facts", "forget", "phone", "--purge", "--dry-run", "--json",
                               "-s", "pd", "--db", db, code=0).stdout)["messages"]
    said = [m for m in listed if m["role"] == "user"]
    assert [len(m["mentions"]) for m in said] == [2]
    assert said[0].get("other_numbers", []) == []
    invoke("facts", "forget", "phone", "--purge", "-y", "-s", "pd", "--db", db, code=0)
    assert _said(history, "pd") == [f"At 10:30 {F} called, and my desk is room 12 {F}"]


def test_a_purge_that_kept_no_other_form_of_the_number_does_not_point_at_them(
        history: History) -> None:
    """The 'kept any form of the number that may be another one' line was printed with
    every phone purge, though nothing of the kind was kept: it sent one looking for none."""
    db = str(history.location)
    chat(db, "ph1", [f"/remember phone: {US}", "我的电话是 (415) 555-0134，请记住"], "-s", "entity",
         code=0)
    done = invoke("facts", "forget", "phone", "--purge", "-y", "-s", "ph1", "--db", db, code=0)
    said = " ".join(done.stderr.split())
    assert "erased fact" in said and "kept any form" not in said and "logs -q" not in said
    assert _said(history, "ph1") == [f"我的电话是 {F}，请记住"]


def test_a_purge_erases_the_number_after_another_number_with_a_plus(history: History) -> None:
    db = str(history.location)
    chat(db, "pp", [f"/remember phone: {US}", "my numbers: +1 415 555 0199 415 555 0134",
                    "office +44 20 7946 0958 415 555 0134"], "-s", "entity", code=0)
    listed = json.loads(invoke("facts", "forget", "phone", "--purge", "--dry-run", "--json",
                               "-s", "pp", "--db", db, code=0).stdout)["messages"]
    said = [m for m in listed if m["role"] == "user"]
    assert [len(m["mentions"]) for m in said] == [1, 1]
    invoke("facts", "forget", "phone", "--purge", "-y", "-s", "pp", "--db", db, code=0)
    assert _said(history, "pp") == [f"my numbers: +1 415 555 0199 {F}",
                                    f"office +44 20 7946 0958 {F}"]


def test_what_a_purge_keeps_is_worded_from_the_forms_it_kept(history: History) -> None:
    """The dry run and the purge said "written in part or after another prefix (555-0134)"
    for a +86 form of a number the fact gave without a country code."""
    db = str(history.location)
    chat(db, "cn", ["/remember 手机：138-0013-8000", "朋友打过+86 138 0013 8000找我。"],
         "-s", "entity", code=0)
    dry = invoke("facts", "forget", "手机", "--purge", "--dry-run", "-s", "cn", "--db", db,
                 code=0)
    for said in (" ".join(dry.stdout.split()), " ".join(dry.stderr.split())):
        assert "with a country code the fact does not give" in said
        assert "555-0134" not in said and "in part" not in said
    done = " ".join(invoke("facts", "forget", "手机", "--purge", "-y", "-s", "cn", "--db", db,
                           code=0).stderr.split())
    assert "written with a country code the fact does not give: chatmem logs -q 8000" in done
    assert _said(history, "cn")[0] == "朋友打过+86 138 0013 8000找我。"


def test_the_purge_notice_promises_logs_q_only_what_it_finds(history: History) -> None:
    """It said `chatmem logs -q 8000 finds them`, but a kept form written in one run of
    digits holds no word 8000 in the search index."""
    db = str(history.location)
    chat(db, "one", ["/remember 手机：138-0013-8000", "朋友打过+8613800138000找我。"],
         "-s", "entity", code=0)
    done = " ".join(invoke("facts", "forget", "手机", "--purge", "-y", "-s", "one", "--db", db,
                           code=0).stderr.split())
    assert ("chatmem logs -q 8000 finds those with 8000 written apart, not those written in"
            " one run of digits") in done
    assert _said(history, "one") == ["朋友打过+8613800138000找我。"]
    assert "+8613800138000" not in invoke("logs", "-q", "8000", "--db", db, code=None).stdout


def test_a_number_after_an_exit_code_is_kept_as_written_after_more_digits(
        history: History) -> None:
    db = str(history.location)
    chat(db, "ex", [f"/remember phone: {US}", "from abroad dial 0014155550134"],
         "-s", "entity", code=0)
    dry = invoke("facts", "forget", "phone", "--purge", "--dry-run", "-s", "ex", "--db", db,
                 code=0)
    said = " ".join(dry.stderr.split())
    assert "written after more digits (another country's exit code or number)" in said
    assert "in part" not in said


@pytest.mark.parametrize(("look", "values", "unit", "size", "kept"), [
    # Each +1 555 0100 is a mention, and its 555 0100 a number that may be another.
    (other_numbers, ["555 0100"], "+1 555 0100 ", 2000, []),
    (other_numbers, ["+1 415 555 0100"], "415-555-0100 and 555-0100; ", 400, ["555-0100"]),
    (other_spellings, ["于梅"], "于梅於梅", 1000, ["於梅"]),
])
def test_what_a_purge_keeps_is_told_apart_in_time_linear_in_the_text(
        look, values: list[str], unit: str, size: int, kept: list[str]) -> None:
    """Each number that may be another one (each other spelling) was checked against every
    mention erased: a 405 KB message of '415-555-0100 and 555-0100; ' took 22 s of CPU to
    purge of +1 415 555 0100 (a served client's one request could make the owner's purge
    that slow, and dearer with each byte more)."""
    assert_linear(lambda text: look(text, values), lambda n: unit * n, size, unit)
    text = unit * 3
    assert [text[s.start:s.end] for s in look(text, values)] == kept * 3
