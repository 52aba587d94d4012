"""`retrieval`'s speaker prior: a question naming a speaker prefers what that speaker said."""

from __future__ import annotations

import sys

import pytest
from fact_conversations import context_with, run_conversation
from hypothesis import given
from hypothesis import strategies as st

from chatmem.memory import speaker_prior
from chatmem.memory.packing import Known, Ranked
from chatmem.memory.speaker_prior import names, prefer_named, speaker_of

# A group chat: alice says what she does, bob reacts to each on topic, saying nothing of it.
GROUP_CHAT = [
    "alice: On Saturday I baked sourdough bread with rye flour.",
    "bob: Wow alice, baking on Saturday sounds so fun, I love that you bake!",
    "alice: Then on Sunday I went kayaking on the lake.",
    "bob: Alice, kayaking on Sunday, that sounds so fun, I love that you go out!",
    "alice: On Monday I planted tomatoes in the garden.",
    "bob: So fun alice, planting on Monday sounds lovely, I love that you do it!",
    *[f"carol: Unrelated note number {i} about the weather report." for i in range(12)],
]
BUDGET = 300
QUESTION = "What does alice do for fun on the weekend and Monday?"


def recalled(context) -> list[str]:
    part = context.part("recalled")
    return [] if part is None else [m.content for m in part.messages if m.role == "user"]


@pytest.mark.parametrize(("text", "label"), [
    ("alice: hi", "alice"),
    ("(8 May 2023) Caroline: Hey Mel!", "caroline"),
    ("[08/05/2023, 13:56] Mary Ann: see you", "mary ann"),
    ("小明：我明天去杭州", "小明"),
    ("【5月8日】小明： 好的", "小明"),
    ("Here is what I think about it all: no", None),
    ("no label here", None),
    ("12:30 is when we meet", None),
    ("", None),
    ("A: the meeting moved to Friday", None),
    ("我：明天去杭州", None),
    ("答：可以", None),
])
def test_the_speaker_label_a_message_opens_with(text: str, label: str | None) -> None:
    assert speaker_of(text) == label


@pytest.mark.parametrize(("query", "label", "named"), [
    ("What does Alice like?", "alice", True),
    ("What does alice's brother do?", "alice", True),
    ("What does Malice like?", "alice", False),
    ("What do Alicent and Bob like?", "alice", False),
    ("小明喜欢什么？", "小明", True),
    ("小红喜欢什么？", "小明", False),
    ("What did Mary Ann say?", "mary ann", True),
])
def test_a_question_names_a_speaker_as_a_whole_word_or_in_chinese_anywhere(
    query: str, label: str, named: bool,
) -> None:
    assert names(query, label) is named


@pytest.mark.parametrize(("query", "said"), [
    ("張偉養了什麼寵物？", "张伟：我养了一只橘猫"),  # traditional asks about simplified
    ("张伟养了什么宠物？", "張偉：我養了一隻橘貓"),
    ("What did O’Brien collect?", "O'Brien: I collect old maps"),  # a phone's apostrophe
    ("What did O'Brien collect?", "O’Brien: I collect old maps"),
    ("What does Jose bake?", "José: I bake bread"),  # as search finds José
    ("What does José bake?", "Jose\u0301: I bake bread"),  # decomposed
    ("ＡＬＩＣＥ在哪儿？", "alice: 我在杭州"),  # full-width letters, as a Chinese IME types
])
def test_a_question_names_a_speaker_however_search_would_find_the_name(
    query: str, said: str,
) -> None:
    label = speaker_of(said)
    assert label is not None and names(query, label)


def test_the_input_s_own_label_is_who_asks_not_who_is_asked_about() -> None:
    def candidate(position: int, text: str) -> Ranked:
        return Ranked(position, position, position, "user", 0.0, 0.0, None, 1 - position / 10,
                      10, text)

    pool = [candidate(1, "bob: great hike!"), candidate(2, "alice: I hiked Mount Tai")]
    assert [r.position for r in prefer_named(pool, "bob: where did alice hike?", 0.2)] == [2, 1]
    pool = [candidate(1, "bob: great hike!"), candidate(2, "alice: I hiked Mount Tai")]
    assert [r.position for r in prefer_named(pool, "bob: where did I hike?", 0.2)] == [1, 2]
    pool = [candidate(1, "小红：爬山真好！"), candidate(2, "小明：我爬了泰山")]
    assert [r.position for r in prefer_named(pool, "小明去哪儿爬山了？", 0.2)] == [2, 1]


def test_a_question_naming_a_speaker_recalls_what_they_said_over_others_reactions(
    make_engine,
) -> None:
    engine = make_engine("retrieval", mode="bm25")
    run_conversation(engine, GROUP_CHAT)
    # Room for about five of the six (and their replies): bob's reactions match the
    # question's words best.
    context = context_with(engine, "retrieval", QUESTION, mode="bm25", max_tokens=BUDGET,
                           later=0)
    said = recalled(context)
    assert [s for s in said if s.startswith("alice:")] == [
        GROUP_CHAT[0], GROUP_CHAT[2], GROUP_CHAT[4]], said
    without = recalled(context_with(engine, "retrieval", QUESTION, mode="bm25",
                                    max_tokens=BUDGET, later=0, speaker=0))
    assert any(s.startswith("bob:") for s in without), without
    # A question naming no speaker ranks as it did.
    nobody = QUESTION.replace("alice", "she")
    assert recalled(context_with(engine, "retrieval", nobody, mode="bm25", max_tokens=BUDGET,
                                 later=0)) == recalled(context_with(
        engine, "retrieval", nobody, mode="bm25", max_tokens=BUDGET, later=0, speaker=0))


def _calls(query: str, pool: list[Ranked], events: tuple[str, ...] = ("call", "c_call")
           ) -> int:
    """Calls prefer_named makes for `query` over `pool` (Python and C ones, or those of
    `events`): counted, not timed."""
    count = 0

    def counted(frame: object, event: str, arg: object) -> None:
        nonlocal count
        count += event in events

    sys.setprofile(counted)
    try:
        prefer_named(pool, query, 0.1)
    finally:
        sys.setprofile(None)
    return count


def test_a_long_input_costs_each_label_the_same_however_often_it_holds_the_label() -> None:
    # A member of a group chat names themselves a, aa, aaa, … and asks with a serve request
    # of a's (its body may be 16 MiB): every label occurs everywhere, inside one word.
    labels = [c * k for k in range(1, 40) for c in "aA"]
    pool = [Ranked(i, i, i, "user", 0.0, 0.0, None, 1.0, 10, f"{label}: hello")
            for i, label in enumerate(labels, 1)]
    assert _calls("hello " + "a" * 20_000, pool) == _calls("hello " + "a" * 2_000, pool)
    assert not any(r.fused > 1.0 for r in prefer_named(pool, "hello " + "a" * 2_000, 0.1))
    assert names("hello " + "a" * 2_000 + " aaa", "aaa")


@pytest.mark.parametrize("query", [
    "Quick question about alice: where did she hike?",
    "Alice's trip: where did she hike?",
    "关于小明：他去哪儿爬山了？",
])
def test_an_input_opening_with_a_phrase_before_a_colon_still_names_its_speaker(
    query: str,
) -> None:
    # Only a speaker's label is who asks: these open with a topic, not a speaker.
    speaker = "小明" if "小明" in query else "alice"
    pool = [Ranked(1, 1, 1, "user", 0.0, 0.0, None, 0.9, 10, "bob: great hike!"),
            Ranked(2, 2, 2, "user", 0.0, 0.0, None, 0.8, 10, f"{speaker}: I hiked Mount Tai")]
    assert [r.position for r in prefer_named(pool, query, 0.2)] == [2, 1]


@pytest.mark.parametrize("query", [
    "这个地方叫什么名字？",  # 方 of 地方, not the speaker 方
    "请问我的航班号是多少？",  # a Q&A log's 问：… lines
    "我有个问题",
    "方去哪儿了？",
    "你知道方去哪儿了吗",
    "@方 明天来吗",
    "关于方：他喜欢什么",
])
def test_one_chinese_character_before_a_colon_names_no_speaker(query: str) -> None:
    # group57 matched a one-character Han label only outside a word; attack57b then made
    # a one-letter label a form's (问：, 答：, 我：), so speaker_of gives none and no
    # question, not even 方去哪儿了, names 方 (names() of a one-character label was dead).
    pool = [Ranked(1, 1, 1, "user", 0.0, 0.0, None, 0.9, 10, "王芳：我明天去杭州"),
            Ranked(2, 2, 2, "user", 0.0, 0.0, None, 0.8, 10, "方：我去爬山"),
            Ranked(3, 3, 3, "user", 0.0, 0.0, None, 0.7, 10, "问：航班号是多少？")]
    assert speaker_of("方：我去爬山") is None
    assert [(r.position, r.fused) for r in prefer_named(pool, query, 0.2)] == [
        (1, 0.9), (2, 0.8), (3, 0.7)]
    assert names("小明喜欢什么", "小明")  # two characters: anywhere, as before


def test_a_one_letter_label_is_a_form_not_a_speaker() -> None:
    """Review: a pasted Q&A's answers ("A: …") gained for every question with the word "a"
    in it, and a Chinese chat's "我：…" for every question with 我: ranked over what the
    question was about."""
    def candidate(position: int, text: str) -> Ranked:
        return Ranked(position, position, position, "user", 0.0, 0.0, None, 1 - position / 10,
                      10, text)

    pool = [candidate(1, "I booked the Lisbon flight for a Friday"),
            candidate(2, "A: the printer is on floor 2")]
    assert [r.position for r in prefer_named(pool, "when is a flight booked?", 0.2)] == [1, 2]
    pool = [candidate(1, "机票订在周五"), candidate(2, "我：打印机在二楼")]
    assert [r.position for r in prefer_named(pool, "我的机票订在哪天？", 0.2)] == [1, 2]


def test_no_opening_outlives_the_session_caches() -> None:
    """The labels a build works out of its messages' openings are kept with the session's
    caches (packing.Known, cleared when text leaves its memory: a purge): a memo of the
    process kept every opening before a colon, a question's too ("sk-…: why is it
    refused?"), for any session, purged or not, as long as a server ran."""
    secret = "sk-proj-Zq81XvT0"
    known = Known()
    pool = [Ranked(1, 1, 1, "user", 0.0, 0.0, None, 1.0, 10, f"{secret}: 这个密钥为什么失效？",
                   known=known),
            Ranked(2, 2, 1, "user", 0.0, 0.0, None, 1.0, 10, "alice: 我去过杭州。", known=known)]
    assert [r.key for r in prefer_named(pool, f"{secret}: alice 去过哪里？", 0.1)] == [2, 1]
    memos = [f for f in vars(speaker_prior).values() if hasattr(f, "cache_info")]
    assert [f.cache_info().currsize for f in memos] == [0] * len(memos)
    assert sorted(known.labels.values(), key=str) == ["alice", "sk-proj-zq81xvt0"]


_PIECES = [":", "：", "\u2236", " ", "alice", "小明", "Mary Ann", "A", "我", "12",
           "(8 May 2023) ", "ＡＬＩＣＥ"]
_OPENINGS = st.lists(st.one_of(st.sampled_from(_PIECES), st.characters()), max_size=8).map(
    "".join)


@given(_OPENINGS)
def test_a_candidate_s_kept_label_is_its_text_s_speaker(text: str) -> None:
    # A text without a colon is labelled without speaker_of's calls, to the same None.
    known = Known()
    ranked = Ranked(1, 1, 1, "user", 0.0, 0.0, None, 1.0, 10, text, known=known)
    assert speaker_prior._labels_of([ranked]) == [speaker_of(text)]
    assert known.labels == {(1, hash(text)): speaker_of(text)}
    assert speaker_prior._labels_of([ranked]) == [speaker_of(text)]


@pytest.mark.parametrize("query", ["What did we decide about the budget?", "预算定了多少？"])
def test_a_pool_whose_labels_are_known_costs_no_python_call_per_candidate(query: str) -> None:
    # perf67: a build's 150-300 candidates each cost a Python call for a label kept from the
    # last build (the largest share of a retrieval turn's Python calls at 1,000 turns).
    known = Known()

    def pool(size: int) -> list[Ranked]:
        return [Ranked(i, i, i, "user", 0.0, 0.0, None, 1.0 - i / 1000, 10,
                       "alice: 我去过杭州。" if i % 7 == 0 else f"note {i} about the budget",
                       known=known) for i in range(1, size + 1)]

    small, large = pool(20), pool(300)
    prefer_named(large, query, 0.1)  # the labels of the first build, kept
    assert _calls(query, large, ("call",)) == _calls(query, small, ("call",))
    assert [r.key for r in prefer_named(large, "what did alice do?", 0.1)][:3] == [7, 14, 21]
