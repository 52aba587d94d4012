"""The full-text terms: CJK bigrams next to Latin words, on a real SQLite FTS5 index."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matches import matches

from chatmem import expected_text, fts
from chatmem.store import Store
from chatmem.store.sqlite_words import match_terms

SYNTAX = ['"', "*", "NEAR", "-", ":", "(", ")", "^", "+", "AND", "OR", "NOT", "{", "}", "'"]
CJK_PUNCTUATION = list("。，、；：？！“”‘’（）【】《》「」『』…—～·￥％＃＠＆＊")


def test_cjk_runs_become_overlapping_bigrams_and_latin_words_stay_words() -> None:
    assert fts.index_terms("我们五月去杭州旅行") == [
        "我们", "们五", "五月", "月去", "去杭", "杭州", "州旅", "旅行"]
    assert fts.index_terms("我的订单号是ORD-7731，预算五千元") == [
        "我的", "的订", "订单", "单号", "号是", "ord", "7731", "预算", "算五", "五千", "千元"]
    # Latin accents are folded, as FTS5's remove_diacritics folds them (so PostgreSQL, which
    # keeps them, finds Café for cafe as SQLite does).
    assert fts.index_terms("Café 東 x") == ["cafe", "东", "x"]  # 東 traditional, as 东


def test_a_word_with_combining_marks_is_one_term_with_its_marks_folded_out() -> None:
    assert fts.index_terms("मेरा नाम राहुल है") == ["मर", "नम", "रहल", "ह"]
    assert fts.index_terms("தமிழ்") == ["தமழ"]
    # Arabic harakat and Hebrew points fold out: the plain spelling is the same term.
    assert fts.index_terms("مَرْحَبًا") == fts.index_terms("مرحبا") == ["مرحبا"]
    assert fts.index_terms("שָׁלוֹם") == fts.index_terms("שלום") == ["שלום"]
    # A decomposed accent (as macOS writes it) is the composed letter; kana keep their marks.
    assert fts.index_terms("cafe\u0301") == fts.index_terms("café") == ["cafe"]
    assert fts.index_terms("か\u3099っこう") == fts.index_terms("がっこう") == [
        "がっ", "っこ", "こう"]


def test_vietnamese_and_greek_accents_fold_out_as_latin_ones_do() -> None:
    # ễ, ộ, ố (Latin Extended Additional) as ă already was: one sentence folded throughout.
    assert fts.index_terms("Nguyễn Văn An sống ở Hà Nội") == [
        "nguyen", "van", "an", "song", "o", "ha", "noi"]
    assert fts.index_terms("Σίσυφος ἀγαθός") == fts.index_terms("ΣΙΣΥΦΟΣ αγαθος") == [
        "σισυφος", "αγαθος"]
    # Typed decomposed, the same terms; plain letters (α, Ø, 李) are kept as they are.
    assert fts.index_terms(unicodedata.normalize("NFD", "Nguyễn Σίσυφος")) == [
        "nguyen", "σισυφος"]
    assert fts.index_terms("αβγ Øre 李雷") == ["αβγ", "øre", "李雷"]


def test_a_character_that_draws_nothing_does_not_split_a_word() -> None:
    assert fts.index_text("我叫李\u200b雷，来自北京") == fts.index_text("我叫李雷，来自北京")
    assert fts.index_terms("my friend A\u200bda, Ada\u00adline\ufeff") == [
        "my", "friend", "ada", "adaline"]
    assert fts.search_terms("李\u2060雷") == ["李雷"]


def test_thai_like_runs_become_bigrams_and_full_width_ascii_is_ascii() -> None:
    assert fts.index_terms("ผมชื่อสมชาย") == ["ผม", "มช", "ชอ", "อส", "สม", "มช", "ชา", "าย"]
    assert fts.index_terms("我去Ｂｅｉｊｉｎｇ，ＯＲＤ－７７３１") == [
        "我去", "beijing", "ord", "7731"]


def test_the_index_holds_each_runs_last_character_and_a_lone_character_is_a_prefix() -> None:
    assert fts.index_text("我家的猫，喝茶") == "我家 家的 的猫 猫 喝茶 茶"
    assert match_terms(fts.search_terms("猫")) == '"猫"*'
    assert match_terms(fts.search_terms("猫，cat")) == '"猫"* OR "cat"'
    assert match_terms(fts.search_terms('"猫"*')) == '"猫"*'
    # One touching a digit or letter is exact: 月* would match every 月… bigram.
    assert match_terms(fts.search_terms("3月11号")) == '"3" OR "月" OR "11" OR "号"'


def test_traditional_chinese_is_indexed_queried_and_compared_as_simplified() -> None:
    wedding = "表妹的婚禮在臺北，禮金包兩萬元。"
    assert fts.index_text(wedding) == fts.index_text("表妹的婚礼在台北，礼金包两万元。")
    assert fts.search_terms("禮金準備了多少？") == fts.search_terms("礼金准备了多少？")
    # Taiwan's and Hong Kong's standard forms as well as OpenCC's own (著, 為/爲, 裡/裏).
    assert fts.folded("看著 為 爲 裡 裏 後") == "看着 为 为 里 里 后"
    # Recall scoring: what is expected in simplified is said in traditional, and back.
    for text, expected in [(wedding, "两万元"), (wedding, "台北"), (wedding, "婚礼"),
                           ("婚礼在台北", "臺北"), ("礼金两万元", "兩萬元")]:
        assert expected_text.mentions(expected_text.compared(text),
                                      expected_text.compared(expected)), (text, expected)
    # One character for one, and folding twice is folding once.
    assert len(fts.folded(wedding)) == len(wedding)
    assert fts.folded(fts.folded(wedding)) == fts.folded(wedding)


def test_stop_terms_are_dropped_from_queries_unless_nothing_else_is_left() -> None:
    assert fts.query_terms("What is my order?") == ["order"]
    assert fts.query_terms("what is it") == ["what", "is", "it"]
    assert fts.query_terms("我们去杭州的计划是什么？") == [
        "们去", "去杭", "杭州", "州的", "的计", "计划", "划是"]
    # Words PostgreSQL's english configuration never indexes are not searched on SQLite
    # either (the possessive's "s", pronouns): both backends rank by the same words.
    assert fts.query_terms("What do Melanie's kids like?") == ["melanie", "kids", "like"]
    assert fts.query_terms("What has she done with her family?") == ["done", "family"]
    assert fts.query_terms("What did he say about it?") == ["say"]


HANGZHOU = "我们五月去杭州旅行，想看西湖。"
PEANUTS = "我对花生过敏。"
ORDER = "预算五千元，订单号ORD-7731。"
STATION = "Meet me near the station: gate 4-B."


@pytest.fixture
def indexed(store: Store) -> tuple[Store, int]:
    session = store.sessions.create_session("s", "retrieval")
    store.history.import_messages(session.id, [
        {"role": "user", "content": HANGZHOU},
        {"role": "assistant", "content": "好的。"},
        {"role": "user", "content": PEANUTS},
        {"role": "user", "content": ORDER},
        {"role": "user", "content": STATION},
    ])
    return store, session.id


def found(store: Store, session_id: int, query: str, limit: int = 20) -> list[str]:
    return [m.content for m, _ in matches(store, session_id, query, limit=limit)]


@pytest.mark.parametrize(("query", "expected"), [
    ("杭州", "我们五月去杭州旅行，想看西湖。"),
    ("花生", "我对花生过敏。"),
    ("预算", "预算五千元，订单号ORD-7731。"),
    ("ord-7731", "预算五千元，订单号ORD-7731。"),
    ("订单号是多少？", "预算五千元，订单号ORD-7731。"),
    ("NEAR", "Meet me near the station: gate 4-B."),
    ("station:", "Meet me near the station: gate 4-B."),
])
def test_cjk_words_and_mixed_ids_are_found(indexed, query: str, expected: str) -> None:
    store, session_id = indexed
    assert found(store, session_id, query)[0] == expected


VIETNAMESE = "Nguyễn Văn An sống ở Hà Nội"
GREEK = "Ο Σίσυφος ήταν βασιλιάς"
LI_LEI = "我叫李\u200b雷，来自北京"
ADA = "my friend A\u200bda called"


@pytest.fixture
def many_scripts(store: Store) -> tuple[Store, int]:
    # Another conversation, so a conversation's search reads its own counts (recall's
    # other path) as well as the whole index's.
    other = store.sessions.create_session("other", "retrieval")
    store.history.import_messages(other.id, [{"role": "user", "content": "我家的狗叫大黄"}])
    session = store.sessions.create_session("many", "retrieval")
    store.history.import_messages(session.id, [{"role": "user", "content": text} for text in [
        "我家的猫叫小白，我每天喝茶。", "ผมชื่อสมชาย", "मेरा नाम राहुल है",
        "हम कल रविवार को मिलेंगे", "مَرْحَبًا يا أحمد",
        "我下周去Ｂｅｉｊｉｎｇ出差，订单号ＯＲＤ－７７３１。",
        "We had coffee at Café Müller in Zürich.", VIETNAMESE, GREEK, LI_LEI, ADA]])
    return store, session.id


@pytest.mark.parametrize(("query", "expected"), [
    ("猫", ["我家的猫叫小白，我每天喝茶。"]),
    ("茶", ["我家的猫叫小白，我每天喝茶。"]),  # the last character of its run
    ("สมชาย", ["ผมชื่อสมชาย"]),
    # Only the message that says the name: the other holds its letters, not the word.
    ("राहुल", ["मेरा नाम राहुल है"]),
    ("مرحبا", ["مَرْحَبًا يا أحمد"]),
    ("Beijing", ["我下周去Ｂｅｉｊｉｎｇ出差，订单号ＯＲＤ－７７３１。"]),
    ("ORD-7731", ["我下周去Ｂｅｉｊｉｎｇ出差，订单号ＯＲＤ－７７３１。"]),
    # Typed without accents, as SQLite's FTS5 always found them and PostgreSQL did not.
    ("cafe muller", ["We had coffee at Café Müller in Zürich."]),
    ("zurich", ["We had coffee at Café Müller in Zürich."]),
    ("Zürich", ["We had coffee at Café Müller in Zürich."]),
    # Vietnamese and Greek are often typed without their accents.
    ("Nguyen", [VIETNAMESE]),
    ("Noi song", [VIETNAMESE]),
    ("σισυφος", [GREEK]),
    ("ΣΙΣΥΦΟΣ", [GREEK]),
    # A zero-width space pasted inside a name leaves it one word, as a purge reads it.
    ("李雷", [LI_LEI]),
    ("Ada", [ADA]),
])
def test_words_of_every_script_are_found_on_both_backends(many_scripts, query: str,
                                                          expected: list[str]) -> None:
    store, session_id = many_scripts
    assert found(store, session_id, query) == expected


def test_a_one_character_word_is_found_across_conversations(many_scripts) -> None:
    store, _ = many_scripts
    assert store.logs.sessions_matching("猫", limit=5) == ["many"]
    assert store.logs.sessions_matching("狗", limit=5) == ["other"]
    assert sorted(store.logs.sessions_matching("家", limit=5)) == ["many", "other"]
    # logs -q reads the same terms as recall.
    assert store.logs.sessions_matching("nguyen", limit=5) == ["many"]
    assert store.logs.sessions_matching("李雷", limit=5) == ["many"]


@pytest.mark.parametrize(("said", "asked"), [
    ("表妹的婚禮在臺北，禮金包兩萬元。", "礼金准备了多少？婚礼在哪个城市？"),
    ("表妹的婚礼在台北，礼金包两万元。", "禮金準備了多少？婚禮在哪個城市？"),
])
def test_traditional_and_simplified_chinese_find_each_other_on_both_backends(
        store: Store, said: str, asked: str) -> None:
    session = store.sessions.create_session("婚禮", "retrieval")
    store.history.import_messages(session.id, [
        {"role": "user", "content": said}, {"role": "user", "content": "今天天气不错。"}])
    assert found(store, session.id, asked) == [said]
    assert found(store, session.id, "臺北") == found(store, session.id, "台北") == [said]
    assert store.logs.sessions_matching("台北", limit=5) == ["婚禮"]


@pytest.mark.sqlite_only(reason="about SQLite FTS5's own tokenizer")
def test_the_default_tokenizer_alone_would_miss_hangzhou(store: Store) -> None:
    """Why the bigrams exist: FTS5 unicode61 sees the whole CJK run as one token."""
    store.db.execute("CREATE VIRTUAL TABLE plain USING fts5(body)")
    store.db.execute("INSERT INTO plain VALUES ('我们五月去杭州旅行')")
    hits = store.db.execute("SELECT count(*) FROM plain WHERE plain MATCH '杭州'").fetchone()
    assert hits[0] == 0


@pytest.mark.parametrize(("query", "expected"), [
    *[(operator, []) for operator in SYNTAX if operator != "NEAR"],
    ("NEAR", [STATION]),  # a word like any other
    ('"杭州', [HANGZHOU]),
    ("杭州*", [HANGZHOU]),
    ("NEAR(杭州 西湖)", [HANGZHOU, STATION]),
    ("-花生", [PEANUTS]),  # not FTS5's NOT: the word is still looked for
    ("body:杭州", [HANGZHOU]),  # not a column filter
    ("ＯＲＤ－７７３１", [ORDER]),
    ("", []),
    ("   ", []),
    ("。。。", []),
])
def test_fts5_syntax_in_a_query_is_plain_text(indexed, query: str, expected: list[str]) -> None:
    store, session_id = indexed
    assert found(store, session_id, query) == expected


texts = st.lists(
    st.one_of(
        st.sampled_from(SYNTAX + CJK_PUNCTUATION),
        st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), max_size=6),
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8),
        st.text(alphabet="abcXYZ0123 -_", max_size=8),
        st.sampled_from(["ぁ", "カタカナ", "한국어", "𠀀𠀁", "é", "ﬁ", "\u0301", "\x00"]),
    ),
    max_size=8,
).map("".join)


@settings(max_examples=300,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(query=texts)
def test_any_query_with_cjk_punctuation_or_mixed_scripts_never_errors(indexed, query) -> None:
    store, session_id = indexed
    for message, score in matches(store, session_id, query):
        assert isinstance(score, float) and message.session_id == session_id


@settings(max_examples=100,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(run=st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
                   min_size=2, max_size=12), data=st.data())
def test_every_bigram_of_an_indexed_cjk_run_finds_it(indexed, run: str, data) -> None:
    store, session_id = indexed
    store.history.import_messages(session_id, [{"role": "user", "content": f"x{run}。"}])
    start = data.draw(st.integers(0, len(run) - 2))
    assert f"x{run}。" in found(store, session_id, run[start : start + 2], limit=10_000)


def test_a_term_in_very_many_messages_is_left_out_so_search_cost_stays_bounded(
    store: Store,
) -> None:
    from chatmem.store.recall import POSTINGS

    session = store.sessions.create_session("long", "retrieval")
    filler = [{"role": "user", "content": f"delivery update number {n}"}
              for n in range(POSTINGS // 2 + 1)]
    store.history.import_messages(session.id, [*filler, {"role": "user",
                                                         "content": "delivery to 杭州"}])
    # "delivery" is in every message: searching it would score all of them.
    assert store.recall.rare_terms(["delivery", "杭州", "unseen"], POSTINGS) == ["杭州"]
    found = [m.content for m, _ in matches(store, session.id, "delivery 杭州")]
    assert found == ["delivery to 杭州"]
    assert list(matches(store, session.id, "delivery")) == []


def test_rarer_terms_are_searched_first_within_the_postings_budget(indexed) -> None:
    store, session_id = indexed
    store.history.import_messages(session_id, [{"role": "user", "content": "杭州的西湖"},
                                               {"role": "user", "content": "杭州的灵隐寺"}])
    assert store.recall.rare_terms(["杭州", "花生"], 10) == ["花生", "杭州"]  # 1 entry, then 3
    assert store.recall.rare_terms(["杭州", "花生"], 3) == ["花生"]  # 杭州's 3 would exceed half
    assert sorted(found(store, session_id, "杭州 花生")) == [
        "我们五月去杭州旅行，想看西湖。", "我对花生过敏。", "杭州的灵隐寺", "杭州的西湖"]


def test_half_width_katakana_is_indexed_as_full_width_with_its_voicing_joined() -> None:
    assert fts.folded("わたしはﾀﾅｶです｡ｶﾞｯｺｳ") == "わたしはタナカです。ガッコウ"
    assert fts.index_terms("ﾀﾅｶ") == fts.index_terms("タナカ") == ["タナ", "ナカ"]


def test_arabic_and_persian_spellings_of_one_word_are_one_term() -> None:
    # Alef with hamza or madda, tatweel, Persian ی and ک against Arabic ي and ك.
    assert fts.index_terms("أحمد إبراهيم آمنة محـــمد علی کتاب") == fts.index_terms(
        "احمد ابراهيم امنة محمد علي كتاب")
    assert fts.index_terms(unicodedata.normalize("NFD", "أحمد")) == ["احمد"]
    assert fts.folded_differently_since_m020(unicodedata.normalize("NFD", "أحمد"))
    assert not fts.folded_differently_since_m020("احمد") and not fts.folded_differently_since_m020(
        "タナカ")


def test_turkish_dotted_and_dotless_i_are_one_letter_to_the_index() -> None:
    assert fts.index_terms("IŞIK GELDİ") == fts.index_terms("Işık geldi") == ["isik", "geldi"]
    assert fts.index_terms("İzmir") == fts.index_terms("izmir") == ["izmir"]


@pytest.mark.parametrize(("query", "expected"), [
    ("タナカ", ["わたしはﾀﾅｶです"]),
    ("ｶﾞｯｺｳ", ["ガッコウに行く"]),
    ("احمد", ["اتصل بي يا أحمد"]),
    ("علی", ["اسمه علي"]),
    ("Işık", ["IŞIK GELDİ"]),
])
def test_other_spellings_of_japanese_arabic_and_turkish_words_are_found_on_both_backends(
        store: Store, query: str, expected: list[str]) -> None:
    session = store.sessions.create_session("spellings", "retrieval")
    store.history.import_messages(session.id, [{"role": "user", "content": text} for text in [
        "わたしはﾀﾅｶです", "ガッコウに行く", "اتصل بي يا أحمد", "اسمه علي", "IŞIK GELDİ",
        "今天天气不错"]])
    assert found(store, session.id, query) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(max_codepoint=0x7F), max_size=60)
       | st.text(st.sampled_from([*"aZ9_ -.,'\n\t", "é", "Ü", "ﬁ", "Ａ", "ｂ", "\u200b", "ı"]),
                 max_size=30),
       st.booleans(), st.booleans())
def test_text_that_folds_to_ascii_has_the_terms_the_general_tokenizer_finds(
        text: str, run_ends: bool, prefixes: bool) -> None:
    # ASCII holds no run: its terms are its words, lowercased, read without _TOKEN's classes.
    folded = fts.folded(text)
    assert fts._terms(text, run_ends=run_ends, prefixes=prefixes) == fts._tokens(
        folded, run_ends=run_ends, prefixes=prefixes)


@given(st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
               | st.characters(min_codepoint=0x20000, max_codepoint=0x2A6DF)
               | st.sampled_from("カナ한글。"), min_size=2, max_size=12))
def test_a_run_s_bigrams_are_each_character_with_the_next(run: str) -> None:
    # Made by joining neighbours (map in C): the slices they were made of, astral too.
    runs = [found.group() for found in fts._RUN.finditer(run)]
    expected = []
    for token in runs:
        expected += [token[i : i + 2] for i in range(len(token) - 1)] if len(token) > 1 \
            else [token]
    assert [t for t in fts._tokens(run, run_ends=False, prefixes=False)
            if fts._RUN.fullmatch(t[:1])] == expected
