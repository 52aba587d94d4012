"""`retrieval` reads the meaning of an input that names speakers with them left out in part
(chatmem.memory.unnamed_meaning): every message of a speaker holds their label, so the name
alone drew their small talk over what the question is about."""

from __future__ import annotations

from fact_conversations import context_with, run_conversation

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.render.reasons import reason_text

EVIDENCE = "alice: Took the kids to the science museum yesterday, they loved the bones."
GROUP_CHAT = [
    "alice: Morning all!",
    "bob: Hey alice, morning!",
    "alice: Ha, yes.",
    EVIDENCE,
    "bob: Nice one.",
    "alice: Sure thing.",
    "carol: Anyone seen the game last night?",
    "alice: Not me.",
    "bob: I did, great match.",
    "alice: Cool cool.",
    "alice: Same here.",
    "carol: Lunch at noon?",
    "alice: OK!",
    "alice: Sounds good.",
]
QUESTION = "What did alice do with her family?"
ALIASES = {"kids": "family"}


def recalled(context) -> list[str]:
    part = context.part("recalled")
    return [] if part is None else [m.content for m in part.messages if m.role == "user"]


def group_session(make_engine, embedder):
    engine = make_engine("retrieval", embedder=embedder)
    run_conversation(engine, GROUP_CHAT)
    engine.indexing.finish(engine.embedder)
    return engine


def test_a_question_naming_a_speaker_recalls_by_what_it_asks_not_by_the_name(
    make_engine,
) -> None:
    engine = group_session(make_engine, HashEmbedder(aliases=ALIASES))
    # Room for one or two messages, ranked by meaning alone, no speaker prior: alice's small
    # talk holds her name and little else, and her label drew it over the museum.
    params = {"mode": "dense", "max_tokens": 47, "later": 0, "speaker": 0, "recent": 0}
    context = context_with(engine, "retrieval", QUESTION, **params)
    assert EVIDENCE in recalled(context), recalled(context)
    reason = context.part("recalled").reason
    assert reason.unnamed == ("alice",)
    assert "meaning also read without alice" in reason_text(reason)
    without = context_with(engine, "retrieval", QUESTION, unnamed=0, **params)
    assert EVIDENCE not in recalled(without), recalled(without)


def test_a_question_naming_no_speaker_ranks_as_before_and_embeds_once(make_engine) -> None:
    embedder = HashEmbedder(aliases=ALIASES)
    engine = group_session(make_engine, embedder)
    params = {"mode": "dense", "max_tokens": 47, "later": 0, "speaker": 0, "recent": 0}
    question = "What did someone do with the family?"
    before = embedder.queries
    context = context_with(engine, "retrieval", question, **params)
    assert embedder.queries == before + 1
    assert context.part("recalled").reason.unnamed == ()
    assert recalled(context) == recalled(context_with(engine, "retrieval", question,
                                                      unnamed=0, **params))


def test_a_chinese_question_naming_a_speaker_is_read_without_them_too(make_engine) -> None:
    chat = ["小明：大家早！", "小红：早啊小明！", "小明：带孩子们去了博物馆。", "小红：不错。",
            "小刚：昨晚的比赛看了吗？", "小明：没看。"]
    embedder = HashEmbedder(aliases={"孩子": "家人"})
    engine = make_engine("retrieval", embedder=embedder)
    run_conversation(engine, chat)
    engine.indexing.finish(engine.embedder)
    before = embedder.queries
    context = context_with(engine, "retrieval", "小明带家人去了哪里？", later=0)
    reason = context.part("recalled").reason
    assert reason.unnamed == ("小明",)
    assert "meaning also read without 小明" in reason_text(reason)
    assert embedder.queries == before + 2  # the input, and it without 小明
    # 小红 is a speaker too, but not named: 小明 alone is put as 他们.
    assert context_with(engine, "retrieval", "他们带家人去了哪里？", later=0).part(
        "recalled").reason.unnamed == ()


def test_the_named_speakers_are_put_as_a_pronoun_in_english_and_chinese() -> None:
    from chatmem.memory.speaker_prior import unnamed

    assert unnamed("What do Alice's kids like, alice?", {"alice"}) == (
        "What do they kids like, they?")
    assert unnamed("What did Malice say?", {"alice"}) == "What did Malice say?"
    assert unnamed("What did Mary Ann and Bob do?", {"mary ann", "bob"}) == (
        "What did they and they do?")
    assert unnamed("小明喜欢什么？", {"小明"}) == "他们喜欢什么？"
