"""/remember: its options come before the fact; the fact is stored as typed, in this session."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from cli_runner import chat, invoke, repl

from chatmem.store import Store


def errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error")]


def stored(db: Path) -> list[tuple[str, str, str]]:
    result = invoke("facts", "list", "--db", str(db), "--json")
    assert result.exit_code == 0, result.stderr
    return [(f["key"], f["value"], f["scope"]) for f in json.loads(result.stdout)]


def test_option_words_inside_the_fact_are_part_of_it(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    _, err = repl(db, "会话甲", ["/remember 提示: 用 --user 选项查看",
                                "/remember 用法: chatmem ask --for 一个问题",
                                "/remember 范围: 加 --session 就只在本会话"])
    assert errors(err) == []
    assert stored(db) == [("提示", "用 --user 选项查看", "session"),
                          ("用法", "chatmem ask --for 一个问题", "session"),
                          ("范围", "加 --session 就只在本会话", "session")]
    # Another session does not see them: they stayed in the session they were told in.
    _, err = repl(db, "会话乙", ["/facts"])
    assert "选项查看" not in err


def test_options_before_the_fact_still_apply(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    _, err = repl(db, "会话甲", ["/remember --user --for 7d 城市: 杭州 --user",
                                "/remember -- --user 是一个选项"])
    assert errors(err) == []
    assert stored(db) == [("城市", "杭州 --user", "user"),
                          ("note 1", "--user 是一个选项", "session")]


def test_an_unknown_leading_option_is_one_usage_line(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    _, err = repl(db, "会话甲", ["/remember --usr 城市: 杭州"])
    assert errors(err) == [
        "error: /remember: unknown option --usr; put -- before a fact that starts with --; "
        "usage: /remember [--user] [--for AGE] TEXT, e.g. /remember budget: 5000 EUR"]
    assert stored(db) == []


def test_the_fact_keeps_its_quotes_and_spacing(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    _, err = repl(db, "会话甲", ['/remember 引用: 他说 "你好  世界" 然后走了',
                                "/remember 名字: O'Brien  双空格",
                                "/remember --for 7d   门牌: '三号'  楼"])
    assert errors(err) == []
    assert stored(db) == [("引用", '他说 "你好  世界" 然后走了', "session"),
                          ("名字", "O'Brien  双空格", "session"),
                          ("门牌", "'三号'  楼", "session")]


def test_the_end_of_a_fact_kept_for_a_while_is_said_in_the_users_zone(tmp_path: Path) -> None:
    # It said "until 2026-12-13 01:42 UTC" where every other time is the timezone setting's.
    db = tmp_path / "z.db"
    env = {"CHATMEM_TIMEZONE": "Asia/Kathmandu", "TZ": "UTC"}  # +05:45, never $TZ's
    done = chat(db, "行程", ["/remember --for 7d 酒店: 西湖边"], env=env, width=160)
    assert done.exit_code == 0, done.stderr
    with Store(db) as store:
        [fact] = store.facts.facts(session_id=store.sessions.session("行程").id)
    assert fact.expires_at is not None
    local = datetime.fromisoformat(fact.expires_at).astimezone(ZoneInfo("Asia/Kathmandu"))
    assert f"(session, until {local:%Y-%m-%d %H:%M})" in done.stderr, done.stderr
