"""Secrets typed the usual Chinese and Japanese ways are masked as their ASCII forms are:
full-width values (ｓｕｎｎｙ２０２４, １２３４), a colon after 是/为/is, Japanese names
(パスワード, 暗証番号 with は/が), a full-width check character in a Chinese id."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmem.engine import Engine
from chatmem.privacy import sensitive
from chatmem.privacy.widths import folded
from chatmem.store import Store

# (what is said, the value that must be masked, its kind)
SAID = [
    ("门禁密码１２３４。", "１２３４", "password"),
    ("验证码是８３４２１１", "８３４２１１", "PIN or security code"),
    ("密码是ｈｕｎｔｅｒ２", "ｈｕｎｔｅｒ２", "password"),
    ("WiFi密码：ｓｕｎｎｙ２０２４", "ｓｕｎｎｙ２０２４", "password"),
    ("ＷｉＦｉ密码是ｓｕｎｎｙ２０２４，客人来了可以用。", "ｓｕｎｎｙ２０２４", "password"),
    ("密码是：sunny2024", "sunny2024", "password"),
    ("验证码是：834211", "834211", "PIN or security code"),
    ("门禁码是：4711", "4711", "PIN or security code"),
    ("公司VPN的密码为：Lz#2026sun。", "Lz#2026sun", "password"),
    ("门禁是：２５８０", "２５８０", "PIN or security code"),
    ("密码改为：abc12345", "abc12345", "password"),
    ("my password is: hunter2x", "hunter2x", "password"),
    ("The door code was: 8842.", "8842", "PIN or security code"),
    ("パスワードはhunter2です", "hunter2", "password"),
    ("パスワード：ｈｕｎｔｅｒ２", "ｈｕｎｔｅｒ２", "password"),
    ("暗証番号は1234です", "1234", "PIN or security code"),
    ("認証コードが８３４２１１です", "８３４２１１", "PIN or security code"),
    ("身份证１１０１０５１９４９１２３１００２Ｘ", "１１０１０５１９４９１２３１００２Ｘ",
     "national id"),
    ("我的手机号是１３８１２３４５６７８。", "１３８１２３４５６７８", "phone number"),
]
# Said about a secret, or ids, in the same forms: nothing to mask.
HARMLESS = [
    "密码是：６位数字", "支付密码是６位数字，我记得很清楚。", "密码每９０天换一次。",
    "订单号ＯＲＤ－７７３１已发货。", "航班ＣＡ１８３１明天起飞。", "The password is: wrong",
    "パスワードを変更しました。", "パスワードは変更しました。", "暗証番号が違います。",
    "預算は５０００円です。", "密码是：对的", "我的密码是：忘了",
]


@pytest.mark.parametrize(("text", "value", "kind"), SAID)
def test_a_value_said_these_ways_is_masked_where_it_was_typed(text: str, value: str,
                                                              kind: str) -> None:
    [found] = sensitive.findings(text)
    assert (found.kind, found.text) == (kind, value)
    assert sensitive.redact(text) == text.replace(value, f"⟦{kind}⟧")


@pytest.mark.parametrize("text", HARMLESS)
def test_words_about_a_secret_and_ids_stay_as_they_were(text: str) -> None:
    assert sensitive.findings(text) == []


def test_a_full_width_key_names_a_secret_as_its_ascii_form_does() -> None:
    assert sensitive.fact_kind("ＰＩＮ", "４３２１") == sensitive.fact_kind("PIN", "4321") \
        == "PIN or security code"


# Each ASCII character that has a full-width form read as it (letters, digits, ＃＠－…;
# not the clause marks ，：！？, which end a value in Chinese).
_WIDE = {folded(chr(c)): chr(c) for c in range(0xFF01, 0xFF5F) if folded(chr(c)).isascii()}


@given(st.text(st.characters(min_codepoint=0xFF01, max_codepoint=0xFF5E)
               | st.sampled_from("密码是：，。 ")))
def test_folding_keeps_every_character_where_it_was(text: str) -> None:
    out = folded(text)
    assert len(out) == len(text)
    assert all(a == b or unicodedata.normalize("NFKC", b) == a for a, b in zip(out, text,
                                                                              strict=True))
    assert "，" not in out or "，" in text  # clause marks stay


LABELS = ["My wifi password is ", "password: ", "the gate code is ", "PIN ", "我的密码是",
          "家里WiFi密码是", "门禁密码", "验证码：", "保险箱的组合是", "门禁是", "暗号是",
          "我的银行卡号是", "手机号", "パスワードは", "暗証番号は", "身份证号"]
ENDS = ["", "。", ", thanks.", "，谢谢。", "です"]
VALUES = st.one_of(
    st.text("abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ0123456789#@-_", min_size=4,
            max_size=16),
    st.text("0123456789", min_size=3, max_size=19),
    st.sampled_from(["11010519491231002X", "13812345678", "6222021001115678905"]))


@given(st.sampled_from(LABELS), VALUES, st.sampled_from(ENDS), st.data())
def test_any_secret_masked_in_ascii_is_masked_in_full_width(label: str, value: str, end: str,
                                                            data: st.DataObject) -> None:
    text = f"{label}{value}{end}"
    # Any of its characters typed full-width: the value's, the label's ("ＷｉＦｉ").
    wide = "".join(_WIDE.get(c, c) if data.draw(st.booleans()) else c for c in text)
    ascii_found = [(f.kind, f.start, f.end) for f in sensitive.findings(text)]
    assert [(f.kind, f.start, f.end) for f in sensitive.findings(wide)] == ascii_found
    for f in sensitive.findings(wide):
        assert f.text == wide[f.start:f.end]


def test_the_reported_chat_keeps_neither_secret_in_its_summary(make_engine,
                                                                store: Store) -> None:
    engine: Engine = make_engine("summary")
    engine.run_turn("家里WiFi密码是：sunny2024，门禁密码１２３４。")
    [summary] = [s.text for s in store.memory.summaries(engine.session.id)]
    assert "sunny2024" not in summary and "１２３４" not in summary
    assert "⟦password⟧" in summary
