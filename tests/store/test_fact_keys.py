"""The one rule fact keys compare by (store/fact_keys.py), for the store and the memory."""

from __future__ import annotations

import unicodedata

import pytest

from chatmem.store.fact_keys import normalize_key, same_key


@pytest.mark.parametrize(("typed", "other"), [
    ("café", unicodedata.normalize("NFD", "CAFÉ")),
    ("Straße", "STRASSE"),
    ("도시", unicodedata.normalize("NFD", "도시")),
    ("Order  ID", "order id"),
    ("ΣΊΣΥΦΟΣ", "σίσυφος"),
    ("预算", "预算"),
    ("車牌號", "车牌号"),
    ("Ｅｍａｉｌ", "email"),
    ("臺北 ＷｉＦｉ 密碼", "台北 wifi 密码"),
])
def test_every_form_and_case_of_a_key_is_the_same_key(typed: str, other: str) -> None:
    assert same_key(typed, other)


def test_different_keys_stay_different() -> None:
    assert not same_key("cafe", "café") and not same_key("预算", "预算 2")
    # 於 and 乾 are simplified characters too (a surname, 乾坤): only a purge's fold applies.
    assert not same_key("於先生", "于先生") and not same_key("乾", "干")


def test_a_key_is_shown_as_typed_not_as_it_compares() -> None:
    assert normalize_key("Ｅｍａｉｌ") == "ｅｍａｉｌ" and normalize_key("車牌號") == "車牌號"


def test_a_key_is_stored_composed_in_lower_case_as_typed() -> None:
    assert normalize_key(unicodedata.normalize("NFD", " Café  Straße ")) == "café straße"


def test_turkish_dotted_and_dotless_i_are_one_letter_and_i_keeps_no_stray_dot() -> None:
    assert normalize_key("ŞEHİR") == "şehir" and normalize_key("IŞIK") == "işik"
    assert same_key("şehir", "ŞEHİR") and same_key("Işık", "IŞIK") and same_key("ısım", "İSİM")
    assert same_key("şehi\u0307r", "şehir")  # as str.lower stored İ before
