"""`replay --save-as` saves under unfinished names until every strategy has run
(chatmem.store.unfinished); the killed processes are in tests/cli/test_replay_stopped.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta

from conftest import History
from registered import parse_spec

from chatmem.evaluation.replay import replay
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store
from chatmem.store.unfinished import host_mark, is_unfinished, unfinished_name
from chatmem.timestamps import utc_now
from chatmem.transcripts.format import stored_transcript
from chatmem.transcripts.reader import parse_transcript

TALK = parse_transcript("\n".join(
    f'{{"role": "{role}", "content": "第{i}句 {role}"}}'
    for i in range(1, 5) for role in ("user", "assistant")))


def test_a_save_under_way_has_no_wanted_name_until_every_strategy_has_run(store: Store) -> None:
    """A replay saved turn by turn under its wanted names: killed halfway, its sessions
    looked finished in every listing and refused the same --save-as next time."""
    seen: list[tuple[str, int, list[str]]] = []

    def look(label: str, done: int, total: int) -> None:
        seen.append((label, done, [s.name for s in store.sessions.list_sessions()]))

    runs = replay(TALK, [parse_spec("buffer"), parse_spec("window:k=2")],
                  chat_provider=ScriptedProvider(), store=store, save_as="旅行", progress=look)
    assert seen and all(names and all(is_unfinished(n) for n in names)
                        for _, _, names in seen)
    assert len(seen[-1][2]) == 2  # the first strategy's, finished, still unnamed
    assert [r.session for r in runs] == ["旅行-buffer", "旅行-window-k-2"]
    assert sorted(s.name for s in store.sessions.list_sessions()) == [
        "旅行-buffer", "旅行-window-k-2"]
    kept = store.sessions.session("旅行-window-k-2")
    assert len(store.history.messages(kept.id)) == 8


def _left_by(history: History, name: str, *, days_ago: float = 0) -> None:
    """A session as a killed replay leaves it: its unfinished name and some turns."""
    moment = utc_now() - timedelta(days=days_ago)
    with history.open(clock=lambda: moment) as other:
        session = other.sessions.create_session(name, "buffer", unfinished=True)
        other.history.import_messages(session.id, [{"role": "user", "content": "我的航班 MU5137"},
                                                   {"role": "assistant", "content": "好"}])


def test_the_next_save_removes_what_replays_no_longer_running_left(
        store: Store, history: History) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = f"unfinished-replay.{gone.stdout.strip()}.{host_mark()}.0123abcd"
    running = unfinished_name("replay")  # this process: a replay still under way
    elsewhere = "unfinished-replay.4242.00000000.0123abcd"  # another host: cannot be seen
    elsewhere_idle = "unfinished-replay.4343.00000000.89abcdef"
    assert host_mark() != "00000000"
    for name in (dead, running, elsewhere):
        _left_by(history, name)
    _left_by(history, elsewhere_idle, days_ago=2)
    # Not a replay's form (a name a person gave before such names were refused): kept.
    store.sessions.create_session("unfinished-replay.mine", "buffer", unfinished=True)

    replay(TALK, [parse_spec("buffer")], chat_provider=ScriptedProvider(), store=store,
           save_as="again")
    assert sorted(s.name for s in store.sessions.list_sessions()) == sorted(
        ["again", running, elsewhere, "unfinished-replay.mine"])
    assert os.getpid() == int(running.split(".")[1])


PROBED = parse_transcript("\n".join(json.dumps(line, ensure_ascii=False) for line in [
    {"chatmem": 1, "title": "探针", "system": "你是导游"},
    {"role": "assistant", "content": "欢迎！", "id": "g1"},
    {"role": "user", "content": "我的航班是 MU5137", "id": "u1"},
    {"role": "assistant", "content": "记下了 MU5137", "id": "a1"},
    {"probe": "航班号？", "expect_ids": ["u1"], "expect_text": ["MU5137"]},
    {"system_prompt": "只用英文回答"},
    {"role": "user", "content": "酒店在西湖边", "id": "u2"},
    {"role": "user", "content": "预算五千元", "id": "u3"},
    {"role": "system", "content": "用户上传了报价单.pdf", "id": "s1"},
    {"probe": "上传了什么？", "expect_ids": ["s1"], "expect_text": ["报价单"]},
    {"role": "assistant", "content": "好的，五千元", "id": "a3"},
    {"probe": "酒店和预算？", "expect_ids": ["u2", "u3"], "expect_text": ["西湖", "五千"]},
]), "probed.jsonl")


def test_a_saved_replay_keeps_transcript_ids_and_probes_as_an_import_does(store: Store) -> None:
    """A --save-as session stored no external id and no probe: `chatmem eval SAVED` had no
    probe to ask, and eval's found_ids ("u1") named no message inspect could show."""
    run, = replay(PROBED, [parse_spec("buffer")], chat_provider=ScriptedProvider(),
                  store=store, save_as="存档")
    session = store.sessions.session("存档")
    assert [(m.role, m.content, m.external_id) for m in store.history.messages(session.id)] == [
        (m.role, m.content, m.id) for m in PROBED.messages]
    assert store.sessions.probes(session.id) == [
        {"after_position": position, "question": p.question, "expect_ids": list(p.expect_ids),
         "expect_text": list(p.expect_text), "before_prompt": before}
        for position, p, before in PROBED.probe_positions()]
    assert [p["before_prompt"] for p in store.sessions.probes(session.id)] == [
        True, False, False]
    # The saved session evaluates as the transcript did, its found_ids its messages' ids.
    again, = replay(stored_transcript(store, session), [parse_spec("buffer")],
                    chat_provider=ScriptedProvider())
    assert [p.found_ids for p in again.probes] == [p.found_ids for p in run.probes] == [
        ["u1"], ["s1"], ["u2", "u3"]]


def test_a_saved_regenerated_replay_keeps_the_users_ids_and_places_probes_anew(
        store: Store) -> None:
    """Regenerated, the recorded replies are not stored: each probe goes after the
    messages this session holds when it was asked, and the model's replies have no id."""
    run, = replay(PROBED, [parse_spec("buffer")], chat_provider=ScriptedProvider(),
                  store=store, save_as="重答", keep_replies=False)
    session = store.sessions.session("重答")
    stored = store.history.messages(session.id)
    assert [(m.role, m.external_id) for m in stored] == [
        ("user", "u1"), ("assistant", None), ("user", "u2"), ("assistant", None),
        ("user", "u3"), ("assistant", None), ("system", "s1")]
    assert [(p["after_position"], p["question"], p["before_prompt"])
            for p in store.sessions.probes(session.id)] == [
        (2, "航班号？", True), (7, "上传了什么？", False), (7, "酒店和预算？", False)]
    again, = replay(stored_transcript(store, session), [parse_spec("buffer")],
                    chat_provider=ScriptedProvider())
    assert [p.found_ids for p in again.probes] == [p.found_ids for p in run.probes]
