"""Replay and eval over real in-memory stores, the real tokenizer and the scripted model."""

from __future__ import annotations

import json
from itertools import accumulate
from pathlib import Path

import pytest
from conftest import History
from hypothesis import given, settings
from hypothesis import strategies as st
from registered import STRATEGIES, parse_spec

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.errors import RepeatedStrategy, StoreError
from chatmem.evaluation.counting_provider import CountingProvider
from chatmem.evaluation.replay import replay
from chatmem.evaluation.scoring import StrategyRun
from chatmem.evaluation.steps import StepKind, plan
from chatmem.providers.base import Purpose
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store
from chatmem.transcripts.reader import parse_transcript, read_transcript

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"


def transcript(*lines: object) -> str:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


SMALL = parse_transcript(transcript(
    {"chatmem": 1, "title": "small", "system": "Be brief."},
    {"role": "user", "content": "My order is KW-1.", "id": "u1"},
    {"role": "assistant", "content": "Noted: KW-1.", "id": "a1"},
    {"role": "user", "content": "I live in Oslo.", "id": "u2"},
    {"role": "assistant", "content": "Oslo, noted.", "id": "a2"},
    {"role": "user", "content": "Nice weather.", "id": "u3"},
    {"role": "assistant", "content": "Indeed.", "id": "a3"},
    {"probe": "Order and city?", "expect_ids": ["u1", "u2"], "expect_text": ["kw-1", "oslo"]},
), "small.jsonl")


def test_a_replays_undated_messages_keep_the_conversations_clock() -> None:
    t = parse_transcript(transcript(
        {"role": "user", "content": "q0"},
        {"role": "user", "content": "q1", "ts": "2024-05-12T19:00:00Z"},
        {"role": "assistant", "content": "r1"},
        {"role": "user", "content": "q2", "ts": "2024-09-20T19:00:00Z"},
        {"role": "assistant", "content": "r2"},
    ))
    steps = plan(t, keep_replies=True)
    assert [m.ts for m in steps[0].extra] == ["2024-05-12T19:00:00Z"]
    assert [(s.message and s.message.ts, s.reply and s.reply.ts) for s in steps[1:]] == [
        ("2024-05-12T19:00:00Z", "2024-05-12T19:00:00Z"),
        ("2024-09-20T19:00:00Z", "2024-09-20T19:00:00Z")]
    assert t.messages[0].ts is None  # the transcript itself is as written


def test_plan_pairs_turns_and_keeps_stray_messages() -> None:
    t = parse_transcript(transcript(
        {"role": "assistant", "content": "Welcome!"},
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "r1"},
        {"role": "system", "content": "note"},
        {"role": "user", "content": "q2"},
        {"role": "user", "content": "q3"},
        {"role": "assistant", "content": "r3"},
    ))
    steps = plan(t, keep_replies=True)
    assert [(s.kind, s.message and s.message.content, s.reply and s.reply.content,
             [m.content for m in s.extra]) for s in steps] == [
        (StepKind.IMPORT, None, None, ["Welcome!"]),
        # q2 has no reply of its own: stored as recorded, not sent for an invented one.
        (StepKind.TURN, "q1", "r1", ["note", "q2"]),
        (StepKind.TURN, "q3", "r3", []),
    ]
    # Regenerating drops every recorded assistant message, the greeting included.
    regenerated = plan(t, keep_replies=False)
    assert [(s.kind, s.reply) for s in regenerated] == [(StepKind.TURN, None)] * 3
    assert [m.content for s in regenerated for m in s.extra] == ["note"]


def test_kept_replies_need_no_chat_model_and_are_stored_verbatim(store: Store) -> None:
    model = ScriptedProvider()
    runs = replay(SMALL, [parse_spec("buffer")], chat_provider=model, store=store,
                  save_as="kept")
    assert runs[0].chat_calls == 0 and model.calls_by_purpose == {}
    session = store.sessions.session("kept")
    assert [(m.role, m.content) for m in store.history.messages(session.id)] == [
        (m.role, m.content) for m in SMALL.messages
    ]
    assert session.system == "Be brief." and len(store.turns.turns(session.id)) == 3


def test_regenerate_asks_the_model_for_every_reply() -> None:
    model = ScriptedProvider()
    run = replay(SMALL, [parse_spec("window:k=1")], chat_provider=model,
                 keep_replies=False)[0]
    assert run.chat_calls == 3 and model.calls_by_purpose == {"chat": 3}


def test_probe_scores_are_computed_on_the_context() -> None:
    runs = replay(SMALL, [parse_spec("buffer"), parse_spec("window:k=1"),
                          parse_spec("window:k=2")], chat_provider=ScriptedProvider())
    by_label = {r.label: r.probes[0] for r in runs}
    assert (by_label["buffer"].found_ids, by_label["buffer"].found_text) == (
        ["u1", "u2"], ["kw-1", "oslo"])
    # k=1 keeps only turn 3; k=2 keeps turns 2-3, so the city but not the order.
    assert (by_label["window k=1"].found_ids, by_label["window k=1"].found_text) == ([], [])
    assert (by_label["window k=2"].found_ids, by_label["window k=2"].found_text) == (
        ["u2"], ["oslo"])
    assert [r.id_recall() for r in runs] == [1.0, 0.0, 0.5]
    assert by_label["buffer"].after_turn == 3


def test_the_probe_question_itself_never_counts_as_recall() -> None:
    t = parse_transcript(transcript(
        {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"},
        {"probe": "Is it Oslo?", "expect_text": ["Oslo"]},
    ))
    run = replay(t, [parse_spec("buffer")], chat_provider=ScriptedProvider())[0]
    assert run.text_recall() == 0.0


def test_buffer_grows_quadratically_while_window_stays_linear() -> None:
    support = read_transcript(SESSIONS / "support.jsonl")
    buffer, window = replay(support, [parse_spec("buffer"), parse_spec("window")],
                            chat_provider=ScriptedProvider())
    for run in (buffer, window):
        assert run.turns == 30
    totals = {r.label: list(accumulate(r.prompt_tokens)) for r in (buffer, window)}
    second = {label: [c - 2 * b + a for a, b, c in zip(t, t[1:], t[2:], strict=False)]
              for label, t in totals.items()}
    # Buffer: every turn adds the previous turn's messages to every later prompt.
    assert all(d > 0 for d in second["buffer"])
    assert sum(second["buffer"]) / len(second["buffer"]) > 30
    # Window k=5: once full, prompts only swap turns, so the totals' curvature averages out.
    buffer_curvature = sum(second["buffer"]) / len(second["buffer"])
    tail = second["window"][6:]
    assert abs(sum(tail) / len(tail)) < buffer_curvature / 5
    assert max(window.prompt_tokens[6:]) < 1.6 * min(window.prompt_tokens[6:])
    assert totals["buffer"][29] / totals["buffer"][14] > 3.3
    assert totals["window"][29] / totals["window"][14] < 2.3


def test_eval_on_the_long_chat_ranks_strategies_as_checked_by_hand() -> None:
    long_chat = read_transcript(SESSIONS / "long-chat.jsonl")
    runs = replay(long_chat, [parse_spec(s) for s in ("buffer", "window:k=2", "window",
                                                       "tokens")],
                  chat_provider=ScriptedProvider())
    recall = {r.label: (r.id_recall(), r.text_recall()) for r in runs}
    # 15 probes, one fact each. Five are asked 1-2 turns after their fact (turns 3, 17,
    # 55, 101, 171 asked after 4, 18, 58, 102, 173), ten at turn 200.
    assert recall["buffer"] == (1.0, 1.0)
    # k=2 sees the two turns before a probe: facts 3, 17 and 101 are one turn back, 55 is
    # three back and 171 two back (asked after 173: turns 172-173 only). At 200: 199-200.
    assert recall["window k=2"] == (0.2, 0.2)
    # k=5 keeps all five early ones and, at turn 200, the fact of turn 196.
    assert recall["window"] == (0.4, 0.4)
    # max_tokens=2000 holds all early ones and the last ~55 small-talk turns at 200:
    # facts 150, 171 and 196 but not 126.
    assert recall["tokens"] == (pytest.approx(8 / 15, abs=1e-4),) * 2
    tokens = next(r for r in runs if r.label == "tokens")
    assert [p.question for p in tokens.probes if p.after_turn == 200 and p.found_ids] == [
        "What is our cat called?", "What's my licence plate?",
        "Which room is the planning meeting in?"]
    assert max(p.tokens for p in tokens.probes) <= 2000
    assert all(r.model_calls == 0 for r in runs)


def test_counting_provider_counts_helper_calls_by_purpose() -> None:
    model = ScriptedProvider()
    counting = CountingProvider(model)
    counting.complete([{"role": "user", "content": "x"}], purpose=Purpose.SUMMARY)
    counting.complete([{"role": "user", "content": "x"}], purpose=Purpose.SUMMARY)
    counting.complete([{"role": "user", "content": "x"}], purpose=Purpose.FACTS)
    assert counting.calls == {Purpose.SUMMARY: 2, Purpose.FACTS: 1}
    assert model.calls_by_purpose == {Purpose.SUMMARY: 2, Purpose.FACTS: 1}
    assert counting.token_counter() is model.token_counter()


def test_save_as_names_one_session_per_strategy_and_refuses_taken_names(store: Store) -> None:
    replay(SMALL, [parse_spec("buffer"), parse_spec("window:k=2")],
           chat_provider=ScriptedProvider(), store=store, save_as="cmp")
    assert {s.name for s in store.sessions.list_sessions()} == {"cmp-buffer", "cmp-window-k-2"}
    assert store.sessions.session("cmp-window-k-2").params == {"k": 2}
    with pytest.raises(StoreError, match="'cmp-buffer'"):  # names the taken name
        replay(SMALL, [parse_spec("buffer"), parse_spec("tokens")],
               chat_provider=ScriptedProvider(), store=store, save_as="cmp")
    # Refused before anything was written.
    assert store.sessions.find_session("cmp-tokens") is None


def test_the_same_strategy_twice_is_refused() -> None:
    with pytest.raises(RepeatedStrategy, match="each strategy must differ: buffer is given twice"):
        replay(SMALL, [parse_spec("buffer"), parse_spec("buffer")],
               chat_provider=ScriptedProvider())


@pytest.mark.parametrize(("first", "again"), [("window:k=3", "window:k=03"),
                                               ("window", "window:k=5"),
                                               ("window+entity", "window+entity:window.k=5")])
def test_the_same_strategy_under_another_label_is_refused(first: str, again: str) -> None:
    """Labels name what was typed: `window k=03` and `window k=3` were two strategies whose
    every number was the same."""
    with pytest.raises(RepeatedStrategy) as e:
        replay(SMALL, [parse_spec(first), parse_spec(again)], chat_provider=ScriptedProvider())
    assert (e.value.first, e.value.label) == (parse_spec(first).label, parse_spec(again).label)
    assert e.value.first != e.value.label
    runs = replay(SMALL, [parse_spec("window"), parse_spec("window:k=4")],
                  chat_provider=ScriptedProvider())
    assert [r.params for r in runs] == [{"k": 5}, {"k": 4}]


@pytest.mark.parametrize("name", STRATEGIES.contract_names())
def test_every_registered_strategy_replays_the_chinese_sample(name: str) -> None:
    travel = read_transcript(SESSIONS / "travel-zh.jsonl")
    run = replay(travel, [parse_spec(name)], chat_provider=ScriptedProvider())[0]
    assert run.turns == 60 and len(run.probes) == 7
    assert all(t > 0 for t in run.prompt_tokens)
    assert run.chat_calls == 0
    assert run.id_recall() is not None and 0.0 <= run.id_recall() <= 1.0  # type: ignore[operator]


@settings(max_examples=25, deadline=None)
@given(turns=st.integers(1, 10), k=st.integers(1, 4), data=st.data())
def test_id_recall_follows_the_window_exactly(turns: int, k: int, data: st.DataObject) -> None:
    asked = data.draw(st.lists(st.integers(1, turns), min_size=1, max_size=4, unique=True))
    lines: list[object] = []
    for n in range(1, turns + 1):
        lines += [{"role": "user", "content": f"fact {n}: 码{n * 7}", "id": f"u{n}"},
                  {"role": "assistant", "content": f"ok {n}", "id": f"a{n}"}]
    lines.append({"probe": "which?", "expect_ids": [f"u{n}" for n in asked]})
    t = parse_transcript(transcript(*lines))
    buffer, window = replay(t, [parse_spec("buffer"), parse_spec(f"window:k={k}")],
                            chat_provider=ScriptedProvider())
    assert buffer.id_recall() == 1.0
    kept = [n for n in asked if turns - n < k]
    assert window.probes[0].found_ids == [f"u{n}" for n in kept]


def probe_outcomes(run: StrategyRun) -> list[tuple[object, ...]]:
    return [(p.question, p.found_ids, p.found_text, p.tokens) for p in run.probes]


# Paired turns, then what a real conversation also has: a user message followed by another
# (stored as recorded), a second assistant message and a last user message with no reply
# (the model is asked for one, with or without --probes-only).
UNEVEN = parse_transcript(transcript(
    {"role": "user", "content": "My order is KW-1.", "id": "u1"},
    {"role": "assistant", "content": "Noted: KW-1.", "id": "a1"},
    {"role": "user", "content": "我住在奥斯陆。", "id": "u2"},
    {"role": "user", "content": "Also: my locker code is 4417.", "id": "u3"},
    {"role": "assistant", "content": "Locker 4417, noted.", "id": "a3"},
    {"role": "assistant", "content": "Anything else?", "id": "a3b"},
    {"probe": "Order and locker?", "expect_ids": ["u1", "u3"], "expect_text": ["KW-1"]},
    {"role": "user", "content": "Nice weather.", "id": "u4"},
    {"role": "assistant", "content": "Indeed.", "id": "a4"},
    {"role": "user", "content": "还有别的吗？", "id": "u5"},
    {"probe": "我住在哪里？", "expect_ids": ["u2"], "expect_text": ["奥斯陆"]},
), "uneven.jsonl")


@pytest.mark.parametrize("name", STRATEGIES.contract_names())
def test_probes_only_scores_every_probe_as_a_full_replay_does(name: str) -> None:
    for conversation, turns in ((read_transcript(SESSIONS / "travel-zh.jsonl"), 60),
                                (UNEVEN, 4)):
        full, = replay(conversation, [parse_spec(name)], chat_provider=ScriptedProvider())
        quick, = replay(conversation, [parse_spec(name)], chat_provider=ScriptedProvider(),
                        probes_only=True)
        assert probe_outcomes(quick) == probe_outcomes(full)
        assert (quick.strategy_calls, quick.summary_versions, quick.facts,
                quick.chat_calls) == (full.strategy_calls, full.summary_versions, full.facts,
                                      full.chat_calls)
        assert quick.turns == full.turns == turns and quick.prompt_tokens == []
        assert quick.to_json(str)["prompt_tokens"] == {
            "total": None, "mean": None, "max": None, "per_turn": None}
    # The reply-less turn went to the model either way.
    assert quick.chat_calls == 1


def test_probes_only_embeds_the_probes_alone_and_recalls_the_same() -> None:
    long_chat = read_transcript(SESSIONS / "long-chat.jsonl")
    spec = parse_spec("retrieval:max_tokens=300")
    embedders = HashEmbedder(), HashEmbedder()  # each counts the queries it embeds
    full, quick = (replay(long_chat, [spec], chat_provider=ScriptedProvider(), embedder=e,
                          probes_only=only)[0]
                   for e, only in zip(embedders, (False, True), strict=True))
    assert probe_outcomes(quick) == probe_outcomes(full)
    assert quick.id_recall() == 1.0  # the probes recall their facts from 200 turns
    # A full replay embeds each turn's input to rank what it recalls; --probes-only only
    # the probes' questions.
    assert embedders[1].queries == len(long_chat.probes) < embedders[0].queries


def test_a_recorded_reply_is_used_whatever_comes_between_it_and_its_question(
        store: Store) -> None:
    t = parse_transcript(transcript(
        {"chatmem": 1, "title": "隔开", "system": "你是导游"},
        {"role": "user", "content": "我去年五月在里斯本丢了护照", "id": "w1",
         "ts": "2023-05-10T08:00:00+08:00"},
        {"role": "user", "content": "后来补办花了三百欧元", "id": "w2",
         "ts": "2023-05-10T08:00:30+08:00"},
        {"role": "assistant", "content": "真不容易", "id": "w3", "ts": "2023-05-10T08:01:00+08:00"},
        {"role": "user", "content": "帮我看看这个文件", "id": "s1",
         "ts": "2024-05-01T09:00:00+08:00"},
        {"role": "system", "content": "用户上传了报价单.pdf", "id": "s2",
         "ts": "2024-05-01T09:00:01+08:00"},
        {"probe": "上传了什么？", "expect_ids": ["s2"], "expect_text": ["报价单"]},
        {"role": "assistant", "content": "报价单总价是八千元", "id": "s3",
         "ts": "2024-05-01T09:00:05+08:00"},
        {"role": "user", "content": "预算五千元", "id": "y1", "ts": "2024-05-01T09:01:00+08:00"},
        {"system_prompt": "只用英文回答"},
        {"role": "assistant", "content": "好的，五千元", "id": "y2",
         "ts": "2024-05-01T09:01:05+08:00"},
        {"role": "user", "content": "住哪里？", "id": "y3", "ts": "2024-05-01T09:02:00+08:00"},
        {"role": "assistant", "content": "湖边酒店", "id": "y4", "ts": "2024-05-01T09:02:05+08:00"},
        {"probe": "总价多少？", "expect_ids": ["s3"], "expect_text": ["八千元"]},
    ), "apart.jsonl")
    model = ScriptedProvider()
    run, = replay(t, [parse_spec("buffer")], chat_provider=model, store=store, save_as="apart")
    assert run.chat_calls == 0 and model.calls_by_purpose == {}
    assert run.turns == 4 and len(run.prompt_tokens) == 4
    assert [p.found_ids for p in run.probes] == [["s2"], ["s3"]]
    session = store.sessions.session("apart")
    assert [(m.role, m.content, m.created_at) for m in store.history.messages(session.id)] == [
        (m.role, m.content, m.ts) for m in t.messages]
    # The prompt changes from the turn after the one it was set in, as an import stores it.
    assert store.sessions.system_prompts(session.id) == [(1, "你是导游"), (5, "只用英文回答")]


def test_expected_text_is_found_as_the_word_index_reads_it(tmp_path: Path) -> None:
    """What a Chinese input method types (full-width ＯＲＤ７７３１) is the ORD7731 a probe
    expects: it was scored as not recalled while the context held it."""
    from chatmem.evaluation.scoring import score_probe
    from chatmem.memory.context import Context, Message, Part
    from chatmem.memory.reasons import TextReason
    from chatmem.tokens import counter_for_model
    from chatmem.transcripts.format import Probe

    counter = counter_for_model(None)
    said = Message.counted("user", "订单号ＯＲＤ７７３１，Café Zürich", counter)
    context = Context((Part("history", (said,), TextReason("历史")),
                       Part("input", (Message.counted("user", "订单号？", counter),),
                            TextReason("输入"))))
    probe = Probe("订单号？", (), ("ord7731", "cafe zurich", "ORD-9999"), 1)
    assert score_probe(probe, context, {}, 1).found_text == ["ord7731", "cafe zurich"]


def test_expected_text_is_found_as_a_whole_word_or_number_and_cjk_anywhere() -> None:
    """A probe expecting Tom passed on Tomorrow, 950 on 9500 and 7 March on 17 March: a
    context that never said them scored as recalling them (text recall too high)."""
    from chatmem.evaluation.scoring import ProbeResult, score_probe
    from chatmem.memory.context import Context, Message, Part
    from chatmem.memory.reasons import TextReason
    from chatmem.tokens import counter_for_model
    from chatmem.transcripts.format import Probe

    counter = counter_for_model(None)
    said = [Message.counted("user", text, counter) for text in (
        "Tomorrow the parking costs 9500 yen, born 17 March", "我们去杭州旅行, with Ann的猫",
        "Rent: $950.")]
    context = Context((Part("history", tuple(said), TextReason("历史")),))
    expected = ("Tom", "950", "7 March", "Tomorrow", "杭州", "ann", "yen,", "rent: $950.",
                "9500 YEN", "750")
    found = score_probe(Probe("?", (), expected, 1), context, {}, 1).found_text
    assert found == ["950", "Tomorrow", "杭州", "ann", "yen,", "rent: $950.", "9500 YEN"]
    answered = ProbeResult("?", 1, [], [], ["Tom", "9.5", "95", "西湖"], [], 0)
    answered.score_answer("Tommy paid 9.50 (19.5 with tax) at 西湖边, 95!")
    assert answered.answer_found == ["95", "西湖"]


@pytest.mark.parametrize("stop", [KeyboardInterrupt, StoreError])
def test_a_save_as_stopped_halfway_keeps_no_session_and_the_name_is_free_again(
        store: Store, stop: type[BaseException]) -> None:
    """Ctrl-C (or an error) in `replay --save-as` left a session of 1,286 of 10,000 messages
    that every listing showed as finished, and the name refused the next run."""
    t = parse_transcript(transcript(*[{"role": role, "content": f"第{i}句 {role} {i}"}
                                      for i in range(1, 9) for role in ("user", "assistant")]))

    def stopped_at_the_second_strategys_fifth_step(label: str, done: int, total: int) -> None:
        if label == "window k=2" and done == 5:
            raise stop("stopped 中断") if stop is StoreError else stop()

    with pytest.raises(stop):
        replay(t, [parse_spec("buffer"), parse_spec("window:k=2")],
               chat_provider=ScriptedProvider(), store=store, save_as="半途",
               progress=stopped_at_the_second_strategys_fifth_step)
    assert [s.name for s in store.sessions.list_sessions()] == []
    runs = replay(t, [parse_spec("buffer"), parse_spec("window:k=2")],
                  chat_provider=ScriptedProvider(), store=store, save_as="半途")
    assert [r.session for r in runs] == ["半途-buffer", "半途-window-k-2"]
    assert sorted(s.name for s in store.sessions.list_sessions()) == [
        "半途-buffer", "半途-window-k-2"]


def test_a_save_as_that_fails_leaves_another_processs_session_of_its_name(
        store: Store, history: History) -> None:
    """The name of a later strategy's session, taken by another chat while the first one ran,
    failed the run, and the run then deleted that other session by name, its turn with it."""
    t = parse_transcript(transcript(*[{"role": role, "content": f"第{i}句 {role}"}
                                      for i in range(1, 5) for role in ("user", "assistant")]))

    def another_chat_takes_the_name(label: str, done: int, total: int) -> None:
        if label == "buffer" and done == 1:
            with history.open() as other:
                taken = other.sessions.create_session("半途-window-k-2", "window")
                other.history.import_messages(taken.id, [{"role": "user",
                                                          "content": "我的航班号是 MU5137"}])

    with pytest.raises(StoreError):
        replay(t, [parse_spec("buffer"), parse_spec("window:k=2")],
               chat_provider=ScriptedProvider(), store=store, save_as="半途",
               progress=another_chat_takes_the_name)
    assert [s.name for s in store.sessions.list_sessions()] == ["半途-window-k-2"]
    kept = store.sessions.session("半途-window-k-2")
    assert [m.content for m in store.history.messages(kept.id)] == ["我的航班号是 MU5137"]


def test_ctrl_c_during_a_regenerated_reply_stops_the_replay(store: Store) -> None:
    """A replay's turn is nobody's: Ctrl-C while its reply streamed was stored as a cancelled
    turn and the replay went on to the next, its totals counting a reply never finished."""
    from chatmem.providers.scripted import ScriptedReply

    class Cut(ScriptedReply):
        def __iter__(self):  # type: ignore[no-untyped-def]
            yield "半句"
            raise KeyboardInterrupt

    class CutAtTheSecondReply(ScriptedProvider):
        def stream(self, messages):  # type: ignore[no-untyped-def]
            reply = super().stream(messages)
            return Cut("", 0, 0) if self.calls == 2 else reply

    provider = CutAtTheSecondReply()
    with pytest.raises(KeyboardInterrupt):
        replay(SMALL, [parse_spec("window:k=2")], chat_provider=provider, store=store,
               save_as="半途", keep_replies=False)
    assert provider.calls == 2  # the third turn was never sent
    assert [s.name for s in store.sessions.list_sessions()] == []


def test_a_replayed_askers_own_label_is_not_searched(store: Store) -> None:
    """Leftover: a group transcript's "alice: what did bob say about the ferry?" was
    searched with its label, so every message alice wrote matched by the word "alice"."""
    said = [("alice", "I walked the dog this morning"), ("bob", "The ferry leaves at nine"),
            ("alice", "My garden needs water"), ("alice", "The cat sleeps all afternoon"),
            ("alice", "what did bob say about the ferry?")]
    t = parse_transcript(json.dumps({"messages": [
        m for name, text in said for m in (
            {"role": "user", "name": name, "content": text},
            {"role": "assistant", "content": "Noted."})]}), "group.json")
    assert [m.speaker for m in t.messages][-2:] == ["alice", None]
    replay(t, [parse_spec("retrieval:recent=1,mode=bm25")], chat_provider=ScriptedProvider(),
           store=store, save_as="g")
    session = store.sessions.list_sessions()[0].id
    rows = store.turns.turn(session, None).context["recall"]
    text = {m.id: m.content for m in store.history.messages(session)}
    assert {text[r["id"]] for r in rows if r["bm25"] > 0} == {"bob: The ferry leaves at nine"}
