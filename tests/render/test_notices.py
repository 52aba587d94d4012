"""How notices read: the one place their wording is tested (chatmem.render.notices)."""

from __future__ import annotations

import pytest

from chatmem import install_hint
from chatmem.activity import ActivityStep, SendingOverBudget, Work
from chatmem.context_warnings import (
    ContextWarning,
    EmbeddingFailed,
    OverBudget,
    StoredWarning,
    SummaryBehind,
)
from chatmem.history_notices import HistoryUpgrading, LockHolder, WaitingForUpgrade, WaitingForWrite
from chatmem.indexing_notices import Failure, IndexingEvent, IndexingNotice
from chatmem.notices import (
    CredentialInInput,
    CutBy,
    DerivedMemory,
    ErasedWhileUpdating,
    FactsBehind,
    FactsFailed,
    FactsForgotten,
    FactsNotSaid,
    FactsTooLong,
    HelperTooSmall,
    InputNotUtf8,
    MemoryUpdateCancelled,
    MemoryUpdateFailed,
    NoEmbedder,
    Notice,
    ReplyCut,
    SensitiveNotRemembered,
    SummaryFailed,
    SummaryUpdated,
    after_calls,
    never_retried,
)
from chatmem.render.counts import counted
from chatmem.render.notices import notice_text, replay_notice_text
from chatmem.render.progress import activity_warning_text, step_text
from chatmem.session_notices import ModelChanged, StrategyChanged, SystemPromptReplaced

WORDED: list[tuple[Notice | ContextWarning, str]] = [
    (SummaryUpdated(version=1, upto=1, added=5, removed=0, unit="words", pinned=("Paris",)),
     "summary v1 now covers turn 1: +5 −0 words; /summary shows the diff;"
     " dropped by the summarizer, pinned: Paris"),
    (SummaryUpdated(version=3, upto=4, added=12, removed=3, unit="characters", clipped_to=66,
                    pinned=("ORD-7731",), refused=("五千元",), released=("a", "b", "c", "d"),
                    pin_limit=125, sensitive=("card number", "password")),
     "summary v3 now covers turns 1–4: +12 −3 characters; /summary shows the diff;"
     " oldest part clipped to fit 66 tokens; dropped by the summarizer, pinned: ORD-7731;"
     " dropped by the summarizer, not pinned (you unpinned them): 五千元;"
     " released to keep pins within 125 tokens (/summary lists them): a, b, c …;"
     " sensitive, kept out of the summary and pins: card number, password"),
    (SummaryUpdated(version=2, upto=2, added=1, removed=1, unit="words",
                    unguarded=("ORD-7731",), calls=4),
     "caught up in 4 summarizer calls; summary v2 now covers turns 1–2: +1 −1 words;"
     " /summary shows the diff; dropped by the summarizer, not pinned (drift_guard off):"
     " ORD-7731"),
    (SummaryFailed("the summarizer returned an empty summary", (2,)),
     "summary is behind (the summarizer returned an empty summary); turn 2 stays"
     " in the context unsummarized, the next turn catches up"),
    (SummaryFailed("timed out", (5, 6, 7)),
     "summary is behind (timed out); turns 5–7 stay in the context unsummarized,"
     " the next turn catches up"),
    (FactsFailed("fact extraction answer rejected: not JSON", 1, 1),
     "facts not updated (fact extraction answer rejected: not JSON); turn 1 will be retried"),
    (FactsFailed("timed out", 3, 9), "facts not updated (timed out); turns 3–9 will be retried"),
    (FactsFailed("fact extraction answer rejected: not JSON", 2, 4, passed_over=3),
     "facts not updated (fact extraction answer rejected: not JSON); turns 2–4 passed over,"
     " their answer rejected 3 times: no fact is read from them; /remember KEY: VALUE keeps"
     " one"),
    (FactsTooLong(("预算", "k" * 81), 80, 1000),
     "not remembered, longer than a fact holds (key ≤ 80, value ≤ 1,000 characters): 预算,"
     f" {'k' * 40}…; /remember KEY: VALUE keeps one"),
    (FactsNotSaid(("名字", "fact 1", "fact 2", "fact 3")),
     "not remembered, the helper model's value is not in what you said: 名字, fact 1, fact 2 …;"
     " /remember KEY: VALUE keeps one"),
    (FactsBehind(12), "facts are 12 turns behind; catching up next turn"),
    (FactsBehind(1), "facts are 1 turn behind; catching up next turn"),
    (SensitiveNotRemembered(("card number", "password")),
     "not remembered: card number, password (sensitive details stay out of memory;"
     " /remember KEY: VALUE stores one on purpose)"),
    (NoEmbedder("retrieval"),
     "retrieval: no embedder, so recall ranks by words only (mode=bm25); "
     f"{install_hint('embed')}, or set [embeddings], to recall by meaning"),
    (CredentialInInput(("[api key]", "[history key]")),
     "the input held your api key and history key; it was replaced by [api key], [history key]"
     " in what is sent and stored"),
    (InputNotUtf8("\ufffd"),
     "the input held bytes that are not UTF-8; each was replaced by \ufffd"),
    (ReplyCut(), "the reply stopped at the reply-length limit (max_reply_tokens); "
                 "it is stored as it is"),
    (ReplyCut(CutBy.LIMIT, empty=True),
     "the reply stopped at the reply-length limit (max_reply_tokens) before any text (a "
     "reasoning model may spend it all thinking); an empty reply is stored"),
    (ReplyCut(CutBy.FILTER), "the reply stopped at the model's server's content filter; it is "
                             "stored as it is"),
    (ReplyCut(CutBy.FILTER, empty=True), "the reply stopped at the model's server's content "
                                         "filter before any text; an empty reply is stored"),
    # A one-off question is stored nowhere: its notice does not say it is stored.
    (ReplyCut(stored=False), "the reply stopped at the reply-length limit (max_reply_tokens); "
                             "it is incomplete"),
    (ReplyCut(CutBy.FILTER, empty=True, stored=False),
     "the reply stopped at the model's server's content filter before any text; there is no "
     "reply"),
    (MemoryUpdateFailed("no model"), "memory update failed, will retry next turn: no model"),
    (IndexingNotice(IndexingEvent.STOPPED, Failure("truncated", unexpected="RuntimeError")),
     "indexing stopped: RuntimeError: truncated; recall ranks the messages without a vector by"
     " words; `chatmem index` retries"),
    (IndexingNotice(IndexingEvent.RETRYING, Failure("database is busy")),
     "indexing failed, will retry next turn: database is busy"),
    (IndexingNotice(IndexingEvent.NOT_STORED, Failure("磁盘已满")),
     "indexing: vectors not stored yet, will retry: 磁盘已满"),
    (IndexingNotice(IndexingEvent.RETRYING, Failure("database is busy"), in_replay=True),
     "indexing failed during the replay: database is busy; recall ranked the messages without"
     " a vector by words"),
    (IndexingNotice(IndexingEvent.STOPPED, Failure("磁盘已满"), in_replay=True),
     "indexing stopped during the replay: 磁盘已满; recall ranked the messages without a"
     " vector by words"),
    (MemoryUpdateCancelled(),
     "memory update cancelled; the turn is stored and the update is retried next turn"),
    (ErasedWhileUpdating(DerivedMemory.SUMMARY, 4, 6),
     "the summary of turns 4–6 was not stored: text was erased from this session while"
     " the update ran (a purge, or a turn replaced in another chat); it runs again on the"
     " text as it is now next turn"),
    (ErasedWhileUpdating(DerivedMemory.FACTS, 7, 7),
     "the facts found in turn 7 were not stored: text was erased from this session while"
     " the update ran (a purge, or a turn replaced in another chat); it runs again on the"
     " text as it is now next turn"),
    (StrategyChanged("旅行", "window k=5", "tokens max_tokens=300"),
     "session 旅行: strategy window k=5 → tokens max_tokens=300"),
    (SystemPromptReplaced("s", 9, 8), "session s: system prompt replaced (9 → 8 characters)"),
    (ModelChanged("旅行", "openai:m2", "openai:m3", "--model"),
     "session 旅行 ran on openai:m2; its next turns run on openai:m3 (--model)"),
    (ModelChanged("s", "openai:m2", "local:SmolLM2"), "session s ran on openai:m2; its next "
                                                      "turns run on local:SmolLM2"),
    (StrategyChanged("s", "window", "buffer", kept=False),
     "session s: strategy window → buffer for this call (--save keeps it)"),
    (SystemPromptReplaced("s", 9, 8, kept=False),
     "session s: system prompt replaced (9 → 8 characters) for this call (--save keeps it)"),
    (OverBudget(5_120, 4_000), "context is 5,120 tokens, over the budget of 4,000"),
    (OverBudget(1_234, 20, fixed=True),
     "system prompt and input alone take 1,234 tokens, over the budget of 20"),
    (OverBudget(9_000, 4_000, fixed=True, attached=True),
     "system prompt and input and attached files alone take 9,000 tokens,"
     " over the budget of 4,000"),
    (SummaryBehind(3, 9), "summary is behind; turns 3–9 sent unsummarized"),
    (SummaryBehind(4, 4), "summary is behind; turn 4 sent unsummarized"),
    (SummaryBehind(31, 40, 1, 30), "summary is behind; turns 31–40 sent unsummarized,"
     " turns 1–30 not sent: over the budget until the summary catches up"),
    (SummaryBehind(0, 0, 1, 40), "summary is behind; turns 1–40 not sent: over the budget"
     " until the summary catches up"),
    (EmbeddingFailed("HTTP 500"), "recall: embedding failed (HTTP 500), ranked by words only"),
    (StoredWarning("摘要落后了"), "摘要落后了"),
    (HistoryUpgrading("/h/旅行.db", "m005_a", "m018_b", 14),
     "upgrading history /h/旅行.db (m005_a–m018_b, 14 steps) …"),
    (HistoryUpgrading("/h/c.db", "m018_b", "m018_b", 1), "upgrading history /h/c.db (m018_b) …"),
    (WaitingForUpgrade("/h/c.db", 600),
     "waiting for another chatmem holding history /h/c.db alone (an upgrade, encrypt or"
     " rekey; at most 600 s) …"),
    (WaitingForWrite("postgresql://ann@/team", 600, True, LockHolder(4242, "eve", "psql")),
     "waiting for another process's write to history postgresql://ann@/team to end (held by"
     " pid 4242, role eve, psql; at most 600 s): the reply waits to be stored; Ctrl-C gives"
     " it up …"),
    (WaitingForWrite("/h/c.db", 600, False),
     "waiting for another process's write to history /h/c.db to end (at most 600 s): the"
     " input waits to be sent; Ctrl-C gives it up …"),
]


def test_a_too_small_helper_names_the_settings_that_change_it() -> None:
    text = notice_text(HelperTooSmall("summary", "SmolLM2-135M-Instruct.Q4_1"))
    assert text.startswith("summary: SmolLM2-135M-Instruct.Q4_1 (the embedded SmolLM2-135M) "
                           "is too small to write summaries or extract facts, so none are "
                           "stored")
    assert "helper_model" in text and "CHATMEM_HELPER_MODEL" in text and "--helper-model" in text


@pytest.mark.parametrize(("notice", "text"), WORDED)
def test_each_notice_reads_as_one_line(notice: Notice | ContextWarning, text: str) -> None:
    assert notice_text(notice) == text


def test_a_replay_words_a_notice_without_the_repl_advice() -> None:
    notice = SummaryUpdated(version=1, upto=3, added=2, removed=0, unit="words")
    assert notice_text(notice).endswith("; /summary shows the diff")
    assert replay_notice_text(notice) == "summary v1 now covers turns 1–3: +2 −0 words"


@pytest.mark.parametrize("notice", [
    SummaryFailed("timed out", (2, 3)), FactsFailed("超时", 1, 2), FactsBehind(2),
    MemoryUpdateFailed("timed out"), MemoryUpdateCancelled(),
    ErasedWhileUpdating(DerivedMemory.FACTS, 7, 7)])
def test_a_replays_last_turn_words_what_it_left_undone_as_never_retried(
        notice: Notice) -> None:
    """A replay kept in memory has no turn after its last (replay sets `retry`): "next turn"
    and "will be retried" were untrue there."""
    assert "next turn" in notice_text(notice) or "will be retried" in notice_text(notice)
    [last] = never_retried([notice])
    assert type(last) is type(notice) and last != notice
    text = replay_notice_text(last)
    assert "next turn" not in text and "retried" not in text and "replay ended" in text, text


def test_a_client_is_told_no_repl_command_it_cannot_type() -> None:
    from chatmem.render.client_notices import client_notice_text
    from chatmem.render.errors import Client

    released = SummaryUpdated(version=2, upto=2, added=1, removed=1, unit="words",
                              released=("Rex", "西湖"), pin_limit=16)
    assert "(/summary lists them)" in notice_text(released)
    for client in Client:
        assert client_notice_text(released, client) == (
            "summary v2 now covers turns 1–2: +1 −1 words;"
            " released to keep pins within 16 tokens: Rex, 西湖")
    sensitive = SensitiveNotRemembered(("password",))
    assert client_notice_text(sensitive, Client.MCP) == (
        "not remembered: password (sensitive details stay out of memory; the remember tool"
        " stores one on purpose)")
    assert client_notice_text(sensitive, Client.API) == (
        "not remembered: password (sensitive details stay out of memory)")


def test_an_mcp_client_is_told_the_tool_that_keeps_a_fact_the_helper_did_not() -> None:
    """As a sensitive detail's notice names the remember tool: the fact notices helper57
    added (a value not said, a fact forgotten) and a fact too long named no way for an MCP
    client, where the REPL names /remember."""
    from chatmem.render.client_notices import client_notice_text
    from chatmem.render.errors import Client

    unsaid, forgot = FactsNotSaid(("城市",)), FactsForgotten(("name",))
    assert client_notice_text(unsaid, Client.MCP) == (
        "not remembered, the helper model's value is not in what you said: 城市;"
        " the remember tool keeps one")
    assert client_notice_text(forgot, Client.MCP) == (
        "forgot, as the helper model read what you said: name; the remember tool keeps one"
        " again")
    assert client_notice_text(FactsTooLong(("k",), 80, 400), Client.MCP).endswith(
        ": k; the remember tool keeps one")
    for notice in (unsaid, forgot, FactsTooLong(("k",), 80, 400)):
        assert "remember tool" not in client_notice_text(notice, Client.API)
        assert "keeps one" not in client_notice_text(notice, Client.API)
        assert notice_text(notice).endswith(" keeps one" if notice is not forgot
                                            else " keeps one again")
        assert "/remember KEY: VALUE" in notice_text(notice)


def test_a_catch_up_counts_its_calls_on_the_first_notice_only() -> None:
    failed = SummaryFailed("timed out", (4,))
    assert after_calls([failed, FactsBehind(2)], 3) == [
        SummaryFailed("timed out", (4,), calls=3), FactsBehind(2)]
    assert after_calls([failed], 1) == [failed]
    assert after_calls([], 5) == []


@pytest.mark.parametrize(("step", "text"), [
    (ActivityStep(Work.SUMMARIZING, 3, 3), "summarizing turn 3"),
    (ActivityStep(Work.SUMMARIZING, 1, 40, of=5_000),
     "summarizing turns 1–40 of 5,000 (catching up)"),
    (ActivityStep(Work.EXTRACTING_FACTS, 2, 9), "extracting facts from turns 2–9"),
    (ActivityStep(Work.COPYING_TURNS, 1_001, 1_200, of=1_200),
     "copying turns 1,001–1,200 of 1,200 for the what-if"),
])
def test_a_slow_step_reads_as_what_it_does(step: ActivityStep, text: str) -> None:
    assert step_text(step) == text


def test_a_step_beside_its_bar_leaves_the_catching_up_to_the_bar() -> None:
    step = ActivityStep(Work.SUMMARIZING, 1, 40, of=5_000)
    assert step_text(step, bar=True) == "summarizing turns 1–40 of 5,000"


def test_activity_warnings_are_worded_with_their_numbers_and_the_way_out() -> None:
    over = SendingOverBudget((("system", 7), ("input", 1_105)), 3, 50)
    assert activity_warning_text(over) == (
        "OVER BUDGET: system 7 + input 1,105 + chat format 3 = 1,115 tokens, over the context "
        "budget of 50; sending anyway (--allow-over-budget)")


def test_every_count_agrees_with_its_noun_and_groups_its_thousands() -> None:
    assert [counted(n, "turn") for n in (0, 1, 2, 1_200)] == [
        "0 turns", "1 turn", "2 turns", "1,200 turns"]
    assert [counted(n, "summary", "summaries") for n in (1, 3)] == ["1 summary", "3 summaries"]


def test_a_client_is_told_a_system_prompt_or_a_setting_held_for_one_call_as_its_own() -> None:
    """SystemPromptReplaced and SettingsNotSaved had no client wording: a client of the
    servers read "session …" where every other notice says "conversation …", and "--save
    keeps it", a flag it has no way to give."""
    from chatmem.render.client_notices import client_notice_text
    from chatmem.render.errors import Client
    from chatmem.session_notices import SettingsNotSaved, StrategyChanged, SystemPromptReplaced

    replaced = SystemPromptReplaced("旅行", 28, 12, kept=False)
    changed = StrategyChanged("旅行", "window k=5", "buffer", kept=False)
    assert notice_text(replaced).endswith(" for this call (--save keeps it)")
    for client in Client:
        assert client_notice_text(replaced, client) == (
            "conversation 旅行: system prompt replaced (28 → 12 characters) for this call")
        assert client_notice_text(changed, client) == (
            "conversation 旅行: strategy window k=5 → buffer for this call")
        assert client_notice_text(SettingsNotSaved("ann/trip", "system prompt", "ann"),
                                  client) == (
            "conversation ann/trip: system prompt for this chat only (not saved: only ann,"
            " its owner, changes the session's settings)")
