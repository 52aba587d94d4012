"""A fact key typed in full-width ASCII (Ｅｍａｉｌ, as a CJK input method types it) or in
traditional Chinese (車牌號) is the key typed in ASCII or simplified Chinese (email, 车牌号):
Chinese-user review, finding 3: they were four live facts, all sent to the model. Nothing
stores the fold, so a history already holding two such facts is read as before and made one
fact at the key's next write, on either backend."""

from __future__ import annotations

from conftest import History
from meter import metered

from chatmem.store import Store
from chatmem.store.fact_keys import normalize_key
from chatmem.store.records import FactScope

USER = FactScope.USER


def _remember(store: Store, key: str, value: str) -> int:
    return store.facts.upsert_fact(key, value, scope=USER, user="ann").id


def test_a_full_width_or_traditional_key_updates_the_one_fact_reading_a_few_rows(
        history: History) -> None:
    with history.open() as store:
        for n in range(20):  # others, some with traditional characters of their own
            _remember(store, f"其他 {n}", "值")
            _remember(store, f"臺北 地址 {n}", "值")
        plate = _remember(store, "車牌號", "滬A·12345")
        mail = _remember(store, "Ｅｍａｉｌ", "a@b.cn")
        with metered(store) as meter:
            again = store.facts.upsert_fact("车牌号", "沪B·67890", scope=USER, user="ann")
        assert (again.id, again.value) == (plate, "沪B·67890") and meter.rows <= 4
        with metered(store) as meter:
            assert _remember(store, "EMAIL", "c@d.cn") == mail
        assert meter.rows <= 4
        assert _remember(store, "臺北 地址 3", "新") == _remember(store, "台北 地址 3", "更新")
        assert len(store.facts.facts(user="ann")) == 42


def test_two_live_facts_of_one_key_stored_before_are_kept_until_the_next_write(
        history: History) -> None:
    with history.open() as store:
        first = _remember(store, "車牌號", "滬A·12345")
        second = _remember(store, "城市", "沪B·67890")
        with store.db.write():  # as chatmem stored 车牌号 apart from 車牌號 before
            store.db.execute("UPDATE facts SET key = ? WHERE id = ?", ["车牌号", second])
        assert [(f.id, f.key) for f in store.facts.facts(user="ann")] == [
            (first, "車牌號"), (second, "车牌号")]
        fact = store.facts.upsert_fact("车牌号", "沪C·13579", scope=USER, user="ann")
        assert (fact.id, fact.key, fact.value) == (first, "车牌号", "沪C·13579")
        assert [f.id for f in store.facts.facts(user="ann")] == [first]
        history_values = [h.value for h in store.facts.fact_history([first])[first]]
        assert sorted(history_values) == ["沪B·67890", "滬A·12345"]


def test_turkish_dotted_and_dotless_i_write_one_key_even_one_stored_with_a_stray_dot(
        history: History) -> None:
    """Turkish-user review: `/remember şehir: İzmir` then `ŞEHİR: Ankara` were two live facts,
    the second shown `şehi̇r` (str.lower gave İ a combining dot above, U+0307)."""
    with history.open() as store:
        city = _remember(store, "şehir", "İzmir")
        # As /remember passes it: normalize_key'd.
        again = store.facts.upsert_fact(normalize_key("ŞEHİR"), "Ankara", scope=USER, user="ann")
        assert (again.id, again.key, again.value) == (city, "şehir", "Ankara")
        name = _remember(store, "isim", "Işık")
        with store.db.write():  # as chatmem stored ISIM typed on a Turkish keyboard before
            store.db.execute("UPDATE facts SET key = ? WHERE id = ?", ["i\u0307si\u0307m", name])
        assert _remember(store, normalize_key("İSİM"), "Ayşe") == name
        assert _remember(store, "ısım", "Ayşe") == name
        assert [(f.key, f.value) for f in store.facts.facts(user="ann")] == [
            ("şehir", "Ankara"), ("ısım", "Ayşe")]  # shown as last written, as 车牌号 is
