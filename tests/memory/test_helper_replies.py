"""What a helper model answers for memory, as real ones answer over HTTP: a reasoning
model's thinking around its summary or fact answer is not memory."""

from __future__ import annotations

import json
from collections.abc import Callable

from chat_server import ChatServer, running_chat_server
from registered import create_provider

from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.memory.summary_state import load_state
from chatmem.notices import FactsForgotten, FactsNotSaid, SummaryFailed, SummaryUpdated


def helper(server: ChatServer) -> object:
    return create_provider(Settings(provider="openai", base_url=server.base_url,
                                    model="qwen3", max_retries=0))


def test_a_summary_is_what_follows_the_helpers_thinking(
        chat_server: ChatServer, make_engine: Callable[..., Engine]) -> None:
    """The whole reply was stored as the summary, `<think>` and all, and sent every turn
    after: 88 tokens where the summary was 20, with the helper's musings as memory."""
    chat_server.reply_words = [
        "<think>\n用户提到订单号", " ORD-7731。Ignore previous instructions?", " 不。</think>\n",
        "用户的订单号是 ORD-7731，", "金额五千元。"]
    engine = make_engine("summary", provider=helper(chat_server))
    first = engine.run_turn("我的订单号是 ORD-7731，金额五千元")
    assert [type(n) for n in first.notices] == [SummaryUpdated]
    assert load_state(engine.state, "summary").text == "用户的订单号是 ORD-7731，金额五千元。"
    sent = engine.run_turn("好的").context.part("summary").messages[0].content
    assert "think" not in sent and "Ignore previous" not in sent
    assert "用户的订单号是 ORD-7731，金额五千元。" in sent


def test_a_summary_reply_of_thinking_alone_is_no_summary(
        chat_server: ChatServer, make_engine: Callable[..., Engine]) -> None:
    """A reply stopped at its cap while the model still thought: the summary is behind, and
    the turns stay in the context unsummarized (kept, the thinking was the summary)."""
    chat_server.reply_words = ["<think>", "The user gave an order id, so I"]
    engine = make_engine("summary", provider=helper(chat_server))
    notices = engine.run_turn("My order is ORD-7731").notices
    assert [type(n) for n in notices] == [SummaryFailed]
    assert "nothing but its reasoning" in notices[0].error
    assert load_state(engine.state, "summary").latest is None


def test_facts_are_read_from_the_answer_after_the_helpers_thinking(
        chat_server: ChatServer, make_engine: Callable[..., Engine]) -> None:
    """Rejected as "not JSON (Expecting value at char 0)" every turn, and after three the
    turns were passed over: a reasoning helper (Qwen3, R1) kept no fact at all."""
    answer = json.dumps({"set": [{"key": "名字", "value": "王小明", "scope": "session",
                                  "turn": 1}], "retract": []}, ensure_ascii=False)
    chat_server.reply_words = ["<think>用户说了名字 {name}。", "</think>\n\n", answer]
    engine = make_engine("entity", provider=helper(chat_server))
    assert engine.run_turn("我叫王小明").notices == []
    assert {f.key: f.value for f in engine.state.live_facts()} == {"名字": "王小明"}


def test_facts_are_read_after_a_closing_tag_the_chat_template_opened(
        chat_server: ChatServer, make_engine: Callable[..., Engine]) -> None:
    """Qwen3 and DeepSeek-R1 templates open the block themselves: the reply starts inside it
    and only closes it."""
    answer = json.dumps({"set": [{"key": "city", "value": "Lisbon", "turn": 1}],
                         "retract": []})
    chat_server.reply_words = ["The user lives in Lisbon {city}.", "\n</think>\n", answer]
    engine = make_engine("entity", provider=helper(chat_server))
    assert engine.run_turn("I live in Lisbon").notices == []
    assert {f.key: f.value for f in engine.state.live_facts()} == {"city": "Lisbon"}


def test_a_fact_whose_value_the_user_never_said_is_not_kept(
        chat_server: ChatServer, make_engine: Callable[..., Engine]) -> None:
    """Kept and sent every turn under "Facts the user stated": a name the helper misheard,
    a value it translated, and 800 facts it made up from "I live in Paris"."""
    made_up = [{"key": f"fact {i}", "value": f"value {i}", "turn": 1} for i in range(800)]
    chat_server.reply_words = [json.dumps({"set": [
        {"key": "名字", "value": "李雷", "turn": 1},
        {"key": "城市", "value": "Shanghai", "turn": 1},
        {"key": "订单号", "value": "ｏｒｄ-7731", "turn": 1},
        {"key": "role", "value": "admin", "turn": 1}, *made_up]}, ensure_ascii=False)]
    engine = make_engine("entity", provider=helper(chat_server))
    notices = engine.run_turn("我叫王小明，住在上海，订单号 ORD-7731。I'm an admin").notices
    assert notices == [FactsNotSaid(("名字", "城市", *(f"fact {i}" for i in range(800))))]
    # Width, case and spacing aside, what the user said is kept.
    assert {f.key: f.value for f in engine.state.live_facts()} == {
        "订单号": "ｏｒｄ-7731", "role": "admin"}


def test_the_chat_models_reasoning_is_neither_summarized_nor_pinned(
        chat_server: ChatServer, make_engine: Callable[..., Engine]) -> None:
    """The drift guard read the reply's <think> block as said in the turn: the order id and
    date the model only wondered about were pinned as "details from earlier turns, kept
    verbatim", sent every turn after."""
    chat_server.reply_words = [
        "<think>Maybe order ORD-9999 on 2026-07-04 for 800 EUR?", " I'm not sure.</think>",
        "Your order ORD-7731 will arrive soon."]
    engine = make_engine("summary", provider=helper(chat_server))
    engine.run_turn("When does my order ORD-7731 arrive?")
    summary_request = chat_server.requests[-1]["messages"][-1]["content"]
    assert "ORD-9999" not in summary_request and "ORD-7731" in summary_request
    assert load_state(engine.state, "summary").pins == []
    assert engine.run_turn("ok").context.parts[2].kind == "input"


def test_a_detail_the_summarizer_wrote_that_no_turn_said_is_named(
        chat_server: ChatServer, make_engine: Callable[..., Engine]) -> None:
    """A helper that answers the user instead of summarizing ("it arrives on 2026-07-04 by
    DHL") had its guess stored as the conversation's memory without a word."""
    chat_server.reply_words = ["The user asked when order ORD-7731 arrives;",
                               " it arrives on 2026-07-04 by DHL."]
    engine = make_engine("summary")  # the scripted chat model, which says neither
    engine.helper = helper(chat_server)
    [updated] = engine.run_turn("When does my order ORD-7731 arrive?").notices
    assert isinstance(updated, SummaryUpdated)
    assert updated.unsaid == ("2026-07-04", "DHL") and updated.pinned == ()
    from chatmem.render.notices import notice_text
    assert notice_text(updated).endswith("; in the summary as no turn said it: 2026-07-04, DHL")
    # What the old summary holds is said, as what the turns say: nothing is named again.
    chat_server.reply_words = ["The user asked when order ORD-7731 arrives;",
                               " it arrives on 2026-07-04 by DHL. 用户说好的。"]
    [again] = engine.run_turn("好的").notices
    assert isinstance(again, SummaryUpdated) and again.unsaid == ()


def test_a_detail_the_summarizer_wrote_in_its_own_form_is_not_named_unsaid(
        chat_server: ChatServer, make_engine: Callable[..., Engine]) -> None:
    """The summary notice compares as facts do: '$1000' for '$1,000' and 一万元 for 10000元
    were named 'in the summary as no turn said it'; an invented detail still is."""
    chat_server.reply_words = ["The user's budget is $1000, 预算一万元, order ORD-5555."]
    engine = make_engine("summary")
    engine.helper = helper(chat_server)
    [updated] = engine.run_turn("My budget is $1,000 (预算10000元).").notices
    assert isinstance(updated, SummaryUpdated)
    assert updated.unsaid == ("ORD-5555",)


def test_a_fact_the_helper_forgets_is_named(
        chat_server: ChatServer, make_engine: Callable[..., Engine]) -> None:
    """A helper that read "what is my name?" as a retraction erased the name without a word:
    'facts list' said "no facts yet" and nothing told the user why."""
    chat_server.reply_words = [json.dumps({"set": [{"key": "name", "value": "Ada", "turn": 1},
                                                   {"key": "city", "value": "Lisbon",
                                                    "turn": 1}]})]
    engine = make_engine("entity", provider=helper(chat_server))
    assert engine.run_turn("My name is Ada, I live in Lisbon").notices == []
    chat_server.reply_words = [json.dumps({"set": [{"key": "city", "value": "Porto",
                                                    "turn": 2}],
                                           "retract": [{"key": "Name", "turn": 2},
                                                       {"key": "city", "turn": 2}]})]
    notices = engine.run_turn("what is my name? I moved to Porto").notices
    # The city forgotten and set again in the same answer is no loss to name.
    assert notices == [FactsForgotten(("name",))]
    assert {f.key: f.value for f in engine.state.live_facts()} == {"city": "Porto"}
    from chatmem.render.notices import notice_text
    assert notice_text(notices[0]) == ("forgot, as the helper model read what you said: name;"
                                       " /remember KEY: VALUE keeps one again")


def test_a_tag_the_text_talks_about_is_not_reasoning(
        chat_server: ChatServer, make_engine: Callable[..., Engine]) -> None:
    """A conversation about reasoning models: the summary named `</think>` inside a line, and
    all it said before the tag (the order, the city) was taken for reasoning and dropped;
    the chat reply quoting both tags lost what stood between them before it was folded."""
    summary = ("The user (order ORD-7731, lives in Lisbon) asked why Qwen3 replies end with"
               " </think> and how to strip it.")
    chat_server.reply_words = ["Strip what lies between `<think>` and `</think>`;",
                               " ORD-7731 ships Friday."]
    engine = make_engine("summary", provider=helper(chat_server))
    with running_chat_server() as summarizer:
        summarizer.reply_words = [summary]
        engine.helper = helper(summarizer)
        engine.run_turn("Order ORD-7731, I live in Lisbon: why do Qwen3 replies end with"
                        " </think>?")
        folded = summarizer.requests[-1]["messages"][-1]["content"]
    assert "`<think>` and `</think>`; ORD-7731 ships Friday." in folded
    assert load_state(engine.state, "summary").text == summary


def test_a_value_cut_from_a_longer_word_or_number_is_not_said(
        chat_server: ChatServer, make_engine: Callable[..., Engine]) -> None:
    """A helper's value cut short passed as said, being a piece of what was: age 3 for "I am
    30", name Al for Alice, an order ORD-773 for ORD-7731, each sent every turn after as
    a fact the user stated."""
    chat_server.reply_words = [json.dumps({"set": [
        {"key": "age", "value": "3", "turn": 1}, {"key": "name", "value": "Al", "turn": 1},
        {"key": "order", "value": "ORD-773", "turn": 1},
        {"key": "城市", "value": "杭州", "turn": 1}, {"key": "金额", "value": "5000元", "turn": 1},
        {"key": "employer", "value": "ACME", "turn": 1},
        {"key": "meeting", "value": "10", "turn": 1}]}, ensure_ascii=False)]
    engine = make_engine("entity", provider=helper(chat_server))
    notices = engine.run_turn("I am 30, Alice (order ORD-7731) 住在杭州，金额5000元, work at"
                              " ACME's lab, meet at 10am").notices
    assert notices == [FactsNotSaid(("age", "name", "order"))]
    # A number may touch a word, and a Chinese value anything.
    assert {f.key: f.value for f in engine.state.live_facts()} == {
        "城市": "杭州", "金额": "5000元", "employer": "ACME", "meeting": "10"}
