"""Saving a fact reads the few rows that may be its key, not every fact the owner holds
(second reading, finding 3: upsert compared every live key in Python, ~100x slower at a few
thousand facts), and still finds a key stored in another form before keys were normalized."""

from __future__ import annotations

import sqlite3
import sys
import unicodedata
from pathlib import Path

from meter import metered

from chatmem.store import Store, fact_keys
from chatmem.store.records import FactScope


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _restating_cost(db: Path, held: int) -> tuple[int, int]:
    with Store(db) as store:
        for n in range(held):
            store.facts.upsert_fact(f"预算 {n}", f"{n} 元", scope=FactScope.USER, user="ann")
        with metered(store) as meter:
            fact = store.facts.upsert_fact("预算 7", "八百元", scope=FactScope.USER, user="ann")
        assert (fact.key, fact.value) == ("预算 7", "八百元")
        return meter.statements, meter.rows


def test_restating_a_fact_reads_as_much_with_many_facts_as_with_few(tmp_path: Path) -> None:
    few = _restating_cost(tmp_path / "few.db", 10)
    many = _restating_cost(tmp_path / "many.db", 400)
    assert many == few
    assert few[1] <= 4


def test_keys_stored_as_typed_before_normalizing_are_still_the_one_fact(
        tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    legacy = [_nfd("CAFÉ").lower(), "straße", "ﬁle", _nfd("도시"), "σίσυφος", "城市"]
    with Store(db) as store:
        for n in range(30):
            store.facts.upsert_fact(f"其他 {n}", "值", scope=FactScope.USER, user="ann")
    with sqlite3.connect(db) as raw:
        raw.executemany(
            "INSERT INTO facts (scope, user, key, value, created_at, updated_at)"
            " VALUES ('user', 'ann', ?, '旧', '2025-01-01', '2025-01-01')",
            [(key,) for key in legacy])
    with Store(db) as store:
        before = {f.key: f.id for f in store.facts.facts(user="ann")}
        for typed, stored in zip(["Café", "STRASSE", "FILE", "도시", "ΣΊΣΥΦΟΣ", "城市"],
                                 legacy, strict=True):
            with metered(store) as meter:
                fact = store.facts.upsert_fact(typed, "新的值", scope=FactScope.USER,
                                               user="ann")
            assert fact.id == before[stored], typed
            # The one key, and the few that fold apart (straße, ﬁle, σίσυφος): not the 30 others.
            assert meter.rows <= 6, typed
        assert len(store.facts.facts(user="ann")) == 30 + len(legacy)


def test_the_letters_read_back_are_every_letter_that_folds_apart() -> None:
    apart = set()
    for point in range(sys.maxunicode + 1):
        letter = chr(point)
        if unicodedata.category(letter) in ("Cs", "Cn") or letter != letter.lower():
            continue
        composed = unicodedata.normalize("NFC", letter)
        identity = fact_keys.key_identity(letter) or letter
        if unicodedata.normalize("NFC", identity).lower() != composed \
                and unicodedata.normalize("NFC", _nfd(letter).casefold()).lower() != composed:
            apart.add(letter)
    assert apart == set(fact_keys.FOLDING_APART)


def test_on_postgresql_a_key_folding_apart_is_found_in_a_few_rows(pg_url: str) -> None:
    with Store(pg_url) as store:
        for n in range(20):
            store.facts.upsert_fact(f"其他 {n}", "值", scope=FactScope.USER, user="ann")
        first = store.facts.upsert_fact("straße", "长安街", scope=FactScope.USER, user="ann")
        cafe = store.facts.upsert_fact(_nfd("café"), "Flore", scope=FactScope.USER, user="ann")
        with metered(store) as meter:
            again = store.facts.upsert_fact("STRASSE", "王府井", scope=FactScope.USER,
                                            user="ann")
        assert (again.id, again.value) == (first.id, "王府井") and meter.rows <= 4
        assert store.facts.upsert_fact("CAFÉ", "Lipp", scope=FactScope.USER,
                                       user="ann").id == cafe.id


def test_a_key_with_too_many_spellings_is_still_found_among_those_folding_apart(
        tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        kept = store.facts.upsert_fact("ssssssss 地址", "旧", scope=FactScope.USER, user="ann")
        folded = store.facts.upsert_fact("ßßßß 地址", "旧", scope=FactScope.USER, user="ann")
        assert kept.id == folded.id and fact_keys.stored_forms("ssssssss 地址") is None
