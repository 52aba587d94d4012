"""A fact key is one key however it was typed: its letters composed or not (café, 도시 as
jamo, as macOS and some input methods send them) and in any case by Unicode's rules
(STRASSE is straße). Review of text in every script, finding 2: café typed two ways was
two live facts, both sent to the model, and `facts forget café` found only one."""

from __future__ import annotations

import json
import sqlite3
import unicodedata
from pathlib import Path

from cli_runner import invoke, repl

from chatmem.store import Store


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def facts_json(db: Path) -> list[dict]:
    return json.loads(invoke("facts", "list", "--db", str(db), "--json", code=0).stdout)


def test_a_key_typed_in_another_form_or_case_updates_the_one_fact(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    repl(db, "trip", ["/remember café: Flore", f"/remember {_nfd('Café')}: Procope",
                      "/remember 도시: 서울", f"/remember {_nfd('도시')}: 부산",
                      "/remember Straße: Unter den Linden", "/remember STRASSE: 长安街"])
    assert [(f["id"], f["key"], f["value"]) for f in facts_json(db)] == [
        (1, "café", "Procope"), (2, "도시", "부산"), (3, "straße", "长安街")]
    done = invoke("facts", "forget", "trip", _nfd("CAFÉ"), "--db", str(db), code=0)
    assert done.stderr == "forgot fact 1: café (session)\n"
    done = invoke("facts", "forget", "trip", "strasse", "--db", str(db), code=0)
    assert done.stderr == "forgot fact 3: straße (session)\n"
    assert [f["key"] for f in facts_json(db)] == ["도시"]


def test_a_key_stored_twice_in_two_forms_is_one_fact_again_once_written(
        tmp_path: Path) -> None:
    # As a history written before keys were normalized holds them: café composed and not.
    db = tmp_path / "x.db"
    repl(db, "trip", ["/remember café: Flore", "/remember 城市: 北京"])
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE facts SET key = ?, value = ? WHERE id = 2",
                    [_nfd("café"), "Procope"])
    refused = invoke("facts", "forget", "trip", "café", "--db", str(db), code=2)
    assert refused.stderr.startswith("error: key 'café' names 2 facts (ids 1, 2)")
    repl(db, "trip", ["what is my café?"])
    with Store(db) as store:
        sent = json.dumps(store.turns.turn(store.sessions.session("trip").id).context,
                          ensure_ascii=False)
    assert "Procope" in sent and "Flore" not in sent  # the newer value, once
    repl(db, "trip", ["/remember Café: Lipp"])
    [fact] = facts_json(db)
    assert (fact["id"], fact["key"], fact["value"]) == (1, "café", "Lipp")
    assert {"Flore", "Procope"} <= {h["value"] for h in fact["history"]}


def test_a_full_width_or_traditional_key_is_the_key_in_ascii_or_simplified(
        tmp_path: Path) -> None:
    # Chinese-user review, finding 3: four facts, both plates and both emails sent.
    db = tmp_path / "x.db"
    repl(db, "k", ["/remember 車牌號：滬A·12345", "/remember 车牌号：沪B·67890",
                   "/remember Ｅｍａｉｌ：a@b.cn", "/remember email: c@d.cn"],
         strategy="window+entity")
    assert [(f["id"], f["key"], f["value"]) for f in facts_json(db)] == [
        (1, "車牌號", "沪B·67890"), (2, "ｅｍａｉｌ", "c@d.cn")]
    repl(db, "e", ["我的車牌號是滬A12345", "我的车牌号是沪B67890"])
    assert [(f["key"], f["value"]) for f in facts_json(db) if f["id"] > 2] == [
        ("車牌號", "沪B67890")]
    done = invoke("facts", "forget", "k", "车牌号", "--purge", "--dry-run", "--db", str(db),
                  code=0)
    assert done.stderr.startswith("would erase fact 1 (車牌號)")
    done = invoke("facts", "forget", "k", "EMAIL", "--db", str(db), code=0)
    assert done.stderr == "forgot fact 2: ｅｍａｉｌ (session)\n"


def test_a_traditional_and_a_simplified_key_stored_apart_before_are_one_at_the_next_write(
        tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    repl(db, "k", ["/remember 車牌號: 滬A·12345", "/remember 城市: 北京"])
    with sqlite3.connect(db) as raw:  # as chatmem stored them before keys folded variants
        raw.execute("UPDATE facts SET key = ?, value = ? WHERE id = 2", ["车牌号", "沪B·67890"])
    refused = invoke("facts", "forget", "k", "車牌號", "--purge", "--dry-run", "--db", str(db),
                     code=2)
    assert refused.stderr.startswith("error: key '車牌號' names 2 facts (ids 1, 2)")
    assert {f["key"] for f in facts_json(db)} == {"車牌號", "车牌号"}
    repl(db, "k", ["what is my plate?"])
    with Store(db) as store:
        sent = json.dumps(store.turns.turn(store.sessions.session("k").id).context,
                          ensure_ascii=False)
    assert "沪B·67890" in sent and "滬A·12345" not in sent  # the newer value, once
    repl(db, "k", ["/remember 车牌号: 沪C·13579"])
    [fact] = facts_json(db)
    assert (fact["id"], fact["key"], fact["value"]) == (1, "車牌號", "沪C·13579")
    assert {"滬A·12345", "沪B·67890"} <= {h["value"] for h in fact["history"]}
