"""Credentials not called a password (issue 28, finding 8): named by the thing they open,
by a generic word and that thing, or by what they do; and their look-alikes.

The phrasings here are not the benchmark's (benchmarks/privacy_corpus_other_names.py):
each is another instance of a kind of naming the rules are written for.
"""

from __future__ import annotations

import re

import pytest
from bench_modules import load
from growth import assert_linear
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatmem.privacy import credentials, secret_names, sensitive, word_lists
from chatmem.privacy.findings import CODE, PASSWORD
from chatmem.privacy.secret_guard import SecretGuard


@pytest.mark.parametrize(("text", "detail", "kind"), [
    # the thing it opens, then a generic noun
    ("the shed padlock combo is 5-5-1-2", "5-5-1-2", CODE),
    ("My iPad passcode: 770123", "770123", PASSWORD),
    ("the modem key is 4F9zQ2x8Lw", "4F9zQ2x8Lw", PASSWORD),
    ("Our office alarm disarm code is 4410.", "4410", CODE),
    ("mailbox combination 19 27 03 if you pick up the post", "19 27 03", CODE),
    # a generic noun, then the thing
    ("The pin for the garden gate is 3030.", "3030", CODE),
    ("the key for the guest wifi is Orchid#Lane7", "Orchid#Lane7", PASSWORD),
    ("The combo on the gym locker, just so you know, is 12-40-8.", "12-40-8", CODE),
    # the thing alone, where its "is" can only be a key
    ("the hotspot is kettle-Drum-52", "kettle-Drum-52", PASSWORD),
    # other credential nouns
    ("Our safe word with the babysitter is marmalade-Fox.", "marmalade-Fox", PASSWORD),
    ("The WPA3 pass: yellowSub!1969", "yellowSub!1969", PASSWORD),
    ("his pw is Tide#4471", "Tide#4471", PASSWORD),
    # what it does
    ("The lockbox by the door opens with 2-9-1-1.", "2-9-1-1", CODE),
    ("To get into the lobby, key in 8080 then the bell.", "8080", CODE),
    ("You can unlock my laptop with Quill&Ink22.", "Quill&Ink22", PASSWORD),
    ("I changed the alarm code to 6161 yesterday.", "6161", CODE),
    # Chinese
    ("保险柜的开柜码是778899。", "778899", CODE),
    ("路由器的钥匙是Lm84xQ2z。", "Lm84xQ2z", PASSWORD),
    ("热点是cloud7788，连上就行。", "cloud7788", PASSWORD),
    ("进单元门按6060#。", "6060#", CODE),
    ("用Pear2024!连公司的WiFi。", "Pear2024!", PASSWORD),
    ("我家门禁为0909。", "0909", CODE),
    ("the wifi code is 44551122", "44551122", CODE),
    ("the lockbox on the porch: 2719", "2719", CODE),
    ("Use 3344 to get into the side entrance.", "3344", CODE),
    ("the gate takes 1379#", "1379#", CODE),
    ("保险箱的密码组合是12-24-36。", "12-24-36", CODE),
])
def test_a_credential_named_other_ways_is_found(text: str, detail: str, kind: str) -> None:
    assert [(f.kind, f.text) for f in sensitive.findings(text)] == [(kind, detail)]
    assert detail not in sensitive.redact(text)


@pytest.mark.parametrize("text", [
    "door 4 opens at 9 and gate 12 at 10",
    "The wifi network is called Riverside_5G.",
    "the wifi is HomeNet-2G, no password",
    "the wifi is down again",
    "The model code of the keypad is A2891.",
    "the promo code for the router is SAVE2024",
    "the house key is under the mat",
    "use col2 as the key for the join",
    "The film opens with 1984 footage of the city.",
    "enter 2026 in the year field",
    "my boarding pass is BA2490-12A",
    "the key to the recipe is 300 grams of flour",
    "The area code for the office phone is 415.",
    "the code for the new feature is in branch 4471",
    "Locker number 118, the one by the door.",
    "Pin 13 on the board drives the door buzzer.",
    "门牌号是58号，4号门9点开。",
    "WiFi名称是CMCC-8F2A，不用密码。",
    "组合柜的型号是KX-2280。",
    "打电话按2转人工，门口等。",
    "车库有3个车位。",
    "door 12 takes 200 people",
    "Type 1000 words about the house.",
    "the wifi is 802.11ac",
    "the hotspot is Pixel-7a",
    "The lockbox model is LB-2000.",
])
def test_look_alikes_stay_as_they_were(text: str) -> None:
    assert sensitive.findings(text) == []


THINGS = ["front door", "garage", "safe", "lockbox", "bike lock", "alarm", "phone", "tablet",
          "gate", "locker", "storage unit", "atm"]
NOUNS = ["code", "pin", "combo", "combination", "passcode", "unlock code"]


@given(thing=st.sampled_from(THINGS), noun=st.sampled_from(NOUNS),
       code=st.from_regex(r"[0-9]{4,6}", fullmatch=True),
       form=st.sampled_from(["The {t} {n} is {c}.", "my {t} {n}: {c}", "{T} {n} {c} for you",
                             "the {n} for the {t} is {c}", "the {n} to my {t}, for Ana, is {c}"]))
def test_any_thing_and_any_noun_name_a_code(thing: str, noun: str, code: str,
                                            form: str) -> None:
    text = form.format(t=thing, T=thing.capitalize(), n=noun, c=code)
    assert code not in sensitive.redact(text), text


@given(qualifier=st.sampled_from(["model", "product", "promo", "discount", "booking", "error",
                                  "zip", "postal", "area", "tracking", "confirmation"]),
       code=st.from_regex(r"[A-Z]{0,2}[0-9]{3,6}", fullmatch=True))
def test_a_harmless_word_before_code_keeps_it_harmless_wherever_the_code_is_said(
        qualifier: str, code: str) -> None:
    for text in (f"The {qualifier} code is {code}.",
                 f"the {qualifier} code of the keypad is {code}"):
        assert sensitive.redact(text) == text
    guard = SecretGuard()
    said = [f"Here's the {qualifier} code of the door panel:", "Go on.", code, "Thanks."]
    assert guard.read(said) == said


@pytest.mark.parametrize("messages", [
    ["The network name is next.", "OK.", "Riverside_5G"],
    ["WiFi的名字发你。", "好的。", "CMCC-8F2A"],
    ["Which door opens first?", "Door 4, at 9."],
])
def test_a_name_or_a_number_after_a_harmless_label_stays(messages: list[str]) -> None:
    assert SecretGuard().read(messages) == messages


@pytest.mark.parametrize(("key", "value", "kind"), [
    ("wifi key", "BlueHeron-42", PASSWORD), ("lockbox combo", "3719", CODE),
    ("保险箱的组合", "246801", CODE), ("wifi name", "Lakehouse_5G", None),
    ("model code", "A2891", None),
])
def test_a_fact_keyed_by_a_credential_named_otherwise_is_refused(
        key: str, value: str, kind: str | None) -> None:
    assert sensitive.fact_kind(key, value) == kind


# -- the scan: patterns led by a word list are tried only where such a word begins -------

def _every_match(text: str) -> list[tuple[str, tuple[int, int]]]:
    """What each pattern's own finditer finds: what the scan must find, faster."""
    return [(name, m.span()) for name, pattern in credentials._OTHERWISE.items()
            for m in pattern.finditer(text)]


def _scanned(text: str) -> list[tuple[str, tuple[int, int]]]:
    return [(name, m.span()) for name, m in credentials.pattern_matches(text)]


CORPUS, OTHER = load("privacy_corpus"), load("privacy_corpus_other_names")
_PHRASES = [message for cases in (CORPUS.SENSITIVE, CORPUS.HARMLESS, OTHER.SENSITIVE,
                                  OTHER.HARMLESS) for _, _, _, messages in cases
            for message in messages]


def test_every_word_a_thing_begins_with_is_listed() -> None:
    listed = credentials._THING_FIRST_WORDS
    assert {"wi", "wifi", "front", "door", "key", "keybox", "e", "email", "sign"} <= listed
    for text in word_lists.spelled(secret_names.THINGS):
        assert re.fullmatch(f"(?:{secret_names.THINGS})", text, re.IGNORECASE), text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PHRASES), min_size=1, max_size=3),
       st.sampled_from(["", "in", "x", "the back ", "FRONT "]),
       st.sampled_from([" ", ", ", "x", " and "]), st.booleans())
def test_the_scan_finds_what_every_pattern_finds_alone(phrases: list[str], prefix: str,
                                                       glue: str, upper: bool) -> None:
    text = prefix + glue.join(phrases)
    text = text.upper() if upper else text
    assert _scanned(text) == _every_match(text)


@pytest.mark.parametrize("text", [
    "Padlock combo 0427",  # a match where the text begins
    "the lockbox combo is 3-7-1-9 and the gate takes 1379# and the door takes 5511",
    "indoor lock code is 1234",  # a word list entry inside a word, then one that counts
    "set the garage keypad code to 1975, then set the alarm panel code to 2468",
    "the wi-fi is Lantern!88; the WIFI key is Mesa!Verde8, the key box code is 3344",
    "the front door code is 1234, the door code is 5678",
    "the \u212aeypad code is 2580 and the ſafe combo is 1397",  # letters read as ASCII
    "the side door opens with 7781; the back door opens with 4455",
])
def test_the_scan_finds_each_match_where_they_begin_close_together(text: str) -> None:
    assert _scanned(text) == _every_match(text) != []


# -- credentials pasted as commands and config lines (memory attacks, finding 4) ---------


@pytest.mark.parametrize(("text", "shown"), [
    ("PGPASSWORD=Sup3rS3cret9 psql -h db team", "PGPASSWORD=⟦password⟧ psql -h db team"),
    ('SECRET_KEY = "Sup3rS3cret9"', 'SECRET_KEY = "⟦password⟧"'),
    ("export MYSQL_PWD='Sup3rS3cret9'", "export MYSQL_PWD='⟦password⟧'"),
    ('{"client_secret": "Sup3rS3cret9"}', '{"client_secret": "⟦password⟧"}'),
    ("GITHUB_TOKEN=Sup3rS3cret9 make release", "GITHUB_TOKEN=⟦password⟧ make release"),
    ("curl -u ann:Sup3rS3cret9 https://api.example.com/v1/items",
     "curl -u ann:⟦password⟧ https://api.example.com/v1/items"),
    ("mysql -h db -u root -pSup3rS3cret9 prod", "mysql -h db -u root -p⟦password⟧ prod"),
    ("WIFI:S:HomeNet;T:WPA;P:Sup3rS3cret9;;", "WIFI:S:HomeNet;T:WPA;P:⟦password⟧;;"),
    ("Authorization: Basic YW5uOlN1cDNyUzNjcmV0OQ==", "Authorization: Basic ⟦password⟧"),
    ("这条命令报错：PGPASSWORD=天王盖地虎9527 psql -h db",
     "这条命令报错：PGPASSWORD=⟦password⟧ psql -h db"),
    ("扫码连网：WIFI:T:WPA;S:家里;P:芝麻开门88;;", "扫码连网：WIFI:T:WPA;S:家里;P:⟦password⟧;;"),
    # Commands and settings that hold no password.
    ("git push -u origin main", "git push -u origin main"),
    ("docker run -u 1000:1000 app", "docker run -u 1000:1000 app"),
    ("ssh -p2222 ann@host", "ssh -p2222 ann@host"),
    ("mysql -h db -u root -p prod", "mysql -h db -u root -p prod"),
    ("PGPASSWORD=$DB_PASS psql -h db", "PGPASSWORD=$DB_PASS psql -h db"),
    ("max_tokens=200, bypass=true, token: 5", "max_tokens=200, bypass=true, token: 5"),
    ("the primary_key = id", "the primary_key = id"),
    ("Basic English has 850 words", "Basic English has 850 words"),
    ("WIFI:S:HomeNet;T:nopass;;", "WIFI:S:HomeNet;T:nopass;;"),
    ("配置里写 password_min_length=12", "配置里写 password_min_length=12"),
])
def test_a_password_pasted_as_a_command_or_a_config_line_is_masked(text: str, shown: str) -> None:
    assert sensitive.redact(text) == shown
    assert SecretGuard().read([text]) == [shown]


@pytest.mark.parametrize("unit", [
    "://a:", "a:b@", "PASSWORD" * 3 + "=", "a" * 60 + "token=", "-u a:", "mysql -pa ",
    "WIFI:S:a;", "Basic YWFh", "密码是", "密码改为", "a是我的密码", "口令：天王",
    "set my password to ", "changed the pin to a ", "x1x1x1 is my password ", "a1",
])
def test_the_pasted_and_chinese_shapes_cost_time_linear_in_the_text(unit: str) -> None:
    """Each shape is tried only where its literal lead is: a long run of leads (a pasted
    log) costs 4× at 4× the length, not 16×; and a password after it is still found (in
    the 4× text, 240 KB: what its timed run gave, not a run of its own)."""
    tail = " PGPASSWORD=Sup3rS3cret9"
    redacted = assert_linear(sensitive.redact, lambda n: unit * n + tail, 60_000 // len(unit),
                             unit)
    assert isinstance(redacted, str) and "Sup3rS3cret9" not in redacted[-40:]


@pytest.mark.parametrize("unit", ["PIN:", "gate code:", "passcode=", "PIN ", "pin code:x"])
def test_a_run_of_code_names_costs_time_linear_in_the_text(unit: str) -> None:
    """A code's name was followed by a look for a digit to the end of the run without a
    space: "PIN:" said 20,000 times (80 KB) cost 50 s of CPU in an `ask -s entity`, 16×
    the time at 4× the length. The code said after the run is still found."""
    tail = " the door PIN is 4471"
    assert_linear(sensitive.redact, lambda n: unit * n + tail, 24_000 // len(unit), unit)
    assert sensitive.redact(unit * 3 + tail).endswith("the door PIN is ⟦PIN or security code⟧")
