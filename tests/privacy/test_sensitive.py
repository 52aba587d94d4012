"""Sensitive details never reach derived memory (facts, pins, summaries) unless /remember'd."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.memory import pins
from chatmem.memory.extraction_request import EXTRACTION_PROMPT
from chatmem.memory.summarizer import DEFAULT_PROMPT
from chatmem.notices import SensitiveNotRemembered, SummaryUpdated
from chatmem.privacy import sensitive
from chatmem.privacy.findings import REDACTED
from chatmem.privacy.unnamed_details import cn_id_ok, iban_ok, luhn_ok
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

# (what the user says, the detail that must not be remembered, its kind)
SENSITIVE = [
    ("My credit card number is 4111 1111 1111 1111.", "4111 1111 1111 1111", "card number"),
    ("我的银行卡号是6222021001115678905。", "6222021001115678905", "card number"),
    ("My IBAN is DE89 3704 0044 0532 0130 00.", "DE89 3704 0044 0532 0130 00", "IBAN"),
    ("My wifi password is Tr0ub4dor&3x.", "Tr0ub4dor&3x", "password"),
    ("我的密码是Hua8mei2024。", "Hua8mei2024", "password"),
    ("My OpenAI key is sk-proj-Xb81mQz7LkP0vT4sW9cY2aR6.", "sk-proj-Xb81mQz7LkP0vT4sW9cY2aR6",
     "API key"),
    ("My phone number is +44 20 7946 0958.", "+44 20 7946 0958", "phone number"),
    ("我的手机号是13812345678。", "13812345678", "phone number"),
    ("我的身份证号是11010519491231002X。", "11010519491231002X", "national id"),
]
# Details that must still be remembered: ids, dates, amounts, names, everyday numbers.
ORDINARY = [
    "The order number is ORD-7731.", "我的预算是五千元。", "The flight is on 2026-03-15.",
    "Order 2026-0417-88 shipped", "flight MU5137 at 14:05", "it costs $1,234,567.89",
    "blue-otter-88 is the code name", "my password is wrong", "the token budget is 2000 tokens",
    "I paid 12000 yuan on 2026-03-15", "timestamp 1718000000000", "my phone is an iPhone 15",
    "the PIN was reset", "请帮我查一下订单号ORD-55190", "我的密码错误",
    "version 3.11.4 on port 8080",
    "the api key is set", "room 1207, floor 12", "ISBN 978-3-16-148410-0",
    "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed it",
    "tracking number 9400 1000 0000 0000 0000 00", "invoice INV2024-07 total 4,500 EUR",
    "我们五月去杭州旅行，预算是五千元，2026年5月1日出发", "KW-58213 arrives March 15, 2026",
]


@pytest.mark.parametrize(("text", "detail", "kind"), SENSITIVE)
def test_each_detail_is_found_and_replaced_by_its_kind(text: str, detail: str, kind: str) -> None:
    [found] = sensitive.findings(text)
    assert (found.kind, found.text) == (kind, detail)
    assert sensitive.redact(text) == text.replace(detail, f"⟦{kind}⟧")


@pytest.mark.parametrize("text", [
    "call me at 138 1234 5678", "call (415) 555-0132 tomorrow", "ssn 123-45-6789",
    "iban GB82WEST12345698765432 please", "aws AKIAIOSFODNN7EXAMPLE here", "my PIN is 4321",
    "验证码是 884213", "password: hunter2", 'The password is "open sesame" ok',
    "我的银行卡号是 6217 0000 1000 0000 001", "token ghp_" + "a1B2" * 9,
])
def test_more_shapes_are_found(text: str) -> None:
    [found] = sensitive.findings(text)
    assert found.text not in sensitive.redact(text)


@pytest.mark.parametrize("text", ORDINARY)
def test_ids_dates_and_amounts_are_not_sensitive(text: str) -> None:
    assert sensitive.findings(text) == []
    assert sensitive.redact(text) == text


def test_the_checks_reject_a_wrong_check_digit() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("DE89 3704 0044 0532 0130 00")
    assert not iban_ok("DE88 3704 0044 0532 0130 00")
    assert cn_id_ok("11010519491231002X") and not cn_id_ok("110105194912310021")
    # A right check digit but no such birth date (month 13).
    assert not cn_id_ok("110105194913310028")
    assert sensitive.findings("ref 4111 1111 1111 1112") == []
    # Named as a card, a number is one even when its check digit is off.
    assert sensitive.kinds("card 4111 1111 1111 1112") == ["card number"]


def _luhn_complete(prefix: str) -> str:
    for last in "0123456789":
        if luhn_ok(prefix + last):
            return prefix + last
    raise AssertionError(prefix)


@given(st.sampled_from("23456"), st.text("0123456789", min_size=14, max_size=14),
       st.sampled_from([" ", "-", ""]), st.sampled_from(["", "Card: ", "卡号", "pay with "]))
def test_any_valid_card_number_is_redacted(first: str, middle: str, sep: str, lead: str) -> None:
    number = _luhn_complete(first + middle)
    grouped = sep.join(number[i:i + 4] for i in range(0, 16, 4)) if sep else number
    text = f"{lead}{grouped}, thanks"
    assert grouped not in sensitive.redact(text)


@given(st.from_regex(r"(ORD|KW|INV|MU)-?[0-9]{1,6}", fullmatch=True),
       st.dates().map(lambda d: d.isoformat()),
       st.integers(1, 10**7).map(lambda n: f"{n:,}"),
       st.sampled_from(["元", " EUR", " USD", "万元", " kg"]))
def test_ids_dates_and_amounts_survive_redaction(id_: str, date: str, amount: str,
                                                 unit: str) -> None:
    text = f"Order {id_} on {date} costs {amount}{unit}; 订单{id_}于{date}付款{amount}{unit}"
    assert sensitive.redact(text) == text


@pytest.mark.parametrize(("key", "value", "kind"), [
    ("wifi password", "Tr0ub4dor&3x", "password"), ("密码", "Hua8mei2024", "password"),
    ("phone", "+44 20 7946 0958", "phone number"), ("card number", "⟦card number⟧",
                                                     REDACTED),
    ("pin", "4321", "PIN or security code"),
    ("phone", "iPhone 15", None), ("token budget", "2000", None),
    ("order number", "ORD-7731", None), ("预算", "五千元", None),
])
def test_a_fact_is_refused_by_its_key_or_its_value(key: str, value: str,
                                                    kind: str | None) -> None:
    assert sensitive.fact_kind(key, value) == kind


# -- memory: the scripted extractor and summarizer --------------------------------------

SMALL_TALK = [f"Small talk {i}: the weather is mild and the garden is quiet." for i in range(10)]
MIXED = [
    "Order ORD-7731 was paid with card 4111 1111 1111 1111.",
    "我的预算是五千元，银行卡号是6222021001115678905。",
    "We fly on 2026-03-15; my phone number is +44 20 7946 0958.",
]


def _memory_text(store: Store, engine: Engine) -> str:
    """Everything derived memory holds for the session: facts, pins with quotes, summaries."""
    facts = [f"{f.key} {f.value}" for f in store.facts.facts(include_deleted=True)]
    pinned = [f"{p.text} {p.quote}" for p in pins.pinned_facts(store.memory, engine.session.id)]
    summaries = [s.text for s in store.memory.summaries(engine.session.id)]
    return "\n".join(facts + pinned + summaries)


def test_the_fact_extractor_keeps_no_sensitive_detail(make_engine, store: Store) -> None:
    engine = make_engine("entity")
    notices = [n for text, _, _ in SENSITIVE for n in engine.run_turn(text).notices]
    engine.run_turn("The order number is ORD-7731.")
    engine.run_turn("我的预算是五千元。")
    held = _memory_text(store, engine)
    for _, detail, _ in SENSITIVE:
        assert detail not in held
    assert "⟦" not in held
    assert {(f.key, f.value) for f in engine.state.live_facts()} == {
        ("order number", "ORD-7731"), ("预算", "五千元")}
    assert len(notices) == len(SENSITIVE)
    assert notices[0] == SensitiveNotRemembered(("card number",))


def test_a_remembered_detail_is_kept_because_the_user_asked(make_engine, store: Store) -> None:
    engine = make_engine("entity")
    store.facts.upsert_fact("card number", "4111 1111 1111 1111", scope="session",
                            session_id=engine.session.id)
    engine.run_turn("My phone number is +44 20 7946 0958.")
    assert [(f.key, f.value) for f in engine.state.live_facts()] == [
        ("card number", "4111 1111 1111 1111")]


def test_summaries_and_pins_keep_ordinary_details_and_no_sensitive_ones(
    make_engine, store: Store
) -> None:
    engine = make_engine("summary-buffer", max_tokens=300)
    notices = []
    for text in [*MIXED, *(t for t, _, _ in SENSITIVE), *SMALL_TALK]:
        notices += engine.run_turn(text).notices
    held = _memory_text(store, engine)
    for _, detail, _ in SENSITIVE:
        assert detail not in held
    pinned = {p.text for p in pins.pinned_facts(store.memory, engine.session.id)}
    assert {"ORD-7731", "五千元", "2026-03-15"} <= pinned
    assert any(isinstance(n, SummaryUpdated) and "card number" in n.sensitive for n in notices)
    # The next context holds the ordinary details and none of the sensitive ones.
    context = "\n".join(m["content"] for m in engine.build_context("what did I say?").messages())
    assert "ORD-7731" in context and "五千元" in context
    assert not any(detail in context for _, detail, _ in SENSITIVE)


# -- the real prompt path: an OpenAI-compatible server over HTTP ------------------------


def test_the_extraction_prompt_forbids_them_and_the_request_never_holds_them(
    store: Store, chat_server
) -> None:
    from chatmem.providers.openai import OpenAIProvider

    assert "Never store passwords, PINs, API keys or other secrets, card or bank account" \
        in EXTRACTION_PROMPT
    assert "only by typing /remember" in EXTRACTION_PROMPT
    model = OpenAIProvider("test-model", base_url=chat_server.base_url, timeout=10,
                           max_retries=0)
    engine = open_session(store, Settings(system="Be brief.", user="li"), ScriptedProvider(),
                          "zh", strategy="entity")
    engine.helper = model
    # A model that ignores the prompt and copies a marker, a detail and an ordinary id.
    chat_server.reply_words = [json.dumps({"set": [
        {"key": "银行卡号", "value": "⟦card number⟧", "turn": 1},
        {"key": "wifi password", "value": "Tr0ub4dor&3x", "turn": 1},
        {"key": "订单号", "value": "ORD-7731", "turn": 1}], "retract": []}, ensure_ascii=False)]
    result = engine.run_turn("我的银行卡号是6222021001115678905，订单号是ORD-7731。")
    assert [(f.key, f.value) for f in engine.state.live_facts()] == [("订单号", "ORD-7731")]
    assert result.notices == [SensitiveNotRemembered(("card number", "password"))]
    sent = chat_server.requests[-1]["messages"]
    assert sent[0] == {"role": "system", "content": EXTRACTION_PROMPT}
    assert json.loads(sent[1]["content"])["messages"] == [
        {"turn": 1, "text": "我的银行卡号是⟦card number⟧，订单号是ORD-7731。"}]
    model.close()


def test_the_summary_prompt_forbids_them_and_the_request_never_holds_them(
    store: Store, chat_server
) -> None:
    from chatmem.providers.openai import OpenAIProvider

    assert "never write passwords, PINs, API keys or other secrets, card or bank\naccount" \
        " numbers, IBANs, national id or passport numbers, or phone numbers" in DEFAULT_PROMPT
    model = OpenAIProvider("test-model", base_url=chat_server.base_url, timeout=10,
                           max_retries=0)
    engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "s",
                          strategy="summary")
    engine.helper = model
    # A summarizer that writes a phone number the markers hid, and one they did not cover.
    chat_server.reply_words = ["User ", "(+44 20 7946 0958, ", "身份证11010519491231002X) ",
                               "ordered ORD-7731."]
    engine.run_turn("Order ORD-7731; call me on +44 20 7946 0958, id 11010519491231002X.")
    [request] = [r for r in chat_server.requests if r["messages"][0]["role"] == "user"]
    prompt = request["messages"][0]["content"]
    assert "never write passwords" in prompt
    assert "user: Order ORD-7731; call me on ⟦phone number⟧, id ⟦national id⟧." in prompt
    [summary] = store.memory.summaries(engine.session.id)
    assert summary.text == "User (⟦phone number⟧, 身份证⟦national id⟧) ordered ORD-7731."
    model.close()


# -- issue 19, finding 4: misses and false alarms ---------------------------------------


@pytest.mark.parametrize(("text", "detail", "kind"), [
    ("ring 020 7946 0958 after six", "020 7946 0958", "phone number"),
    ("passphrase correct horse battery staple", "correct horse battery staple", "password"),
    ("login for the portal is ada / S3cr3t-Passw0rd", "S3cr3t-Passw0rd", "password"),
    ("My gym locker code is 4471", "4471", "PIN or security code"),
    ("My locker code is 5512.", "5512", "PIN or security code"),
    ("Gate code 7290# for the driver.", "7290#", "PIN or security code"),
    ("The PIN for my SIM card is 1207.", "1207", "PIN or security code"),
    ("my passport number is K4820193.", "K4820193", "national id"),
    ("门禁码是4825。", "4825", "PIN or security code"),
    ("行李箱的密码锁是5286。", "5286", "PIN or security code"),
    ("call the Munich office on 089 1234567", "089 1234567", "phone number"),
    ("有急事打138 0013 8000。", "138 0013 8000", "phone number"),
    ("My storage unit code is 60417.", "60417", "PIN or security code"),
    ("the keypad at the back door: 3382", "3382", "PIN or security code"),
    ("you can sign in with leo.m / Gr8tDay#2", "Gr8tDay#2", "password"),
])
def test_labelled_codes_passphrases_pairs_and_national_phone_numbers(
        text: str, detail: str, kind: str) -> None:
    assert [(f.kind, f.text) for f in sensitive.findings(text)] == [(kind, detail)]
    assert detail not in sensitive.redact(text)


@pytest.mark.parametrize("text", [
    "Booking reference 4539 1488 0343 6467 is on the ticket",  # Luhn-valid by chance
    "Tracking number 4539 1488 0343 6467, arriving Tuesday",
    "order 415 555 2671 was split in two",
    "预订号是4539148803436467。",
    "公司要求密码每90天换一次。", "支付密码是6位数字。", "密码输错3次就会锁卡。",
    "the promo code is SPRING25", "the confirmation code is Q7HT9K",
    "Pi starts 3141592653", "my appointment is on 03.04.2026", "The city has 3 000 000 people.",
    "有问题打10086客服。", "The PIN has 6 digits now.", "my passphrase needs to be longer",
])
def test_a_label_or_a_shape_beside_a_number_keeps_it_harmless(text: str) -> None:
    assert sensitive.findings(text) == []


def test_a_locker_code_is_never_a_fact() -> None:
    assert sensitive.fact_kind("locker code", "5512") == "PIN or security code"
    assert sensitive.fact_kind("passphrase", "correct horse battery staple") == "password"
    assert sensitive.fact_kind("promo code", "SPRING25") is None


# -- a password inside a URL's user:password (memory attacks, finding 1) ----------------


@pytest.mark.parametrize(("text", "shown"), [
    ("our staging db is postgresql://ann:Sup3rS3cret@db.example.com/team",
     "our staging db is postgresql://ann:⟦password⟧@db.example.com/team"),
    ("DATABASE_URL=postgres://ann:Sup3rS3cret@db.example.com:5432/team",
     "DATABASE_URL=postgres://ann:⟦password⟧@db.example.com:5432/team"),
    ("git clone https://ann:Sup3rS3cret@github.com/acme/app.git",
     "git clone https://ann:⟦password⟧@github.com/acme/app.git"),
    ("连接串是 postgresql://ann:Sup3rS3cret@db.example.com/team，别外传。",
     "连接串是 postgresql://ann:⟦password⟧@db.example.com/team，别外传。"),
    ("缓存用 redis://:p@ss-W0rd@cache.internal:6379/0",
     "缓存用 redis://:⟦password⟧@cache.internal:6379/0"),
    # No password, or a placeholder for one: nothing to mask.
    ("see https://docs.python.org/3/library/re.html and ann@example.com",
     "see https://docs.python.org/3/library/re.html and ann@example.com"),
    ("the template is postgres://user:password@localhost/db",
     "the template is postgres://user:password@localhost/db"),
    ("用 postgresql://ann@db.example.com/team 连接",
     "用 postgresql://ann@db.example.com/team 连接"),
    ("export DATABASE_URL=postgres://app:${DB_PASS}@db/app",
     "export DATABASE_URL=postgres://app:${DB_PASS}@db/app"),
])
def test_a_password_in_a_url_is_masked_and_its_user_name_stays(text: str, shown: str) -> None:
    assert sensitive.redact(text) == shown


def test_a_fact_holding_a_url_with_a_password_is_refused() -> None:
    assert sensitive.fact_kind(
        "database url", "postgresql://ann:Sup3rS3cret@db.example.com/team") == "password"
    assert sensitive.fact_kind("数据库", "postgresql://ann:Sup3rS3cret@db.example.com/team") \
        == "password"
    assert sensitive.fact_kind("database url", "postgresql://db.example.com/team") is None
