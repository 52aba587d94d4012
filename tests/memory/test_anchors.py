"""Drift-guard anchors: English and Chinese literal details a summary must keep."""

from __future__ import annotations

from itertools import pairwise

import pytest
from growth import assert_linear
from hypothesis import given
from hypothesis import strategies as st

from chatmem.memory.anchors import anchors_of, extract_anchors, missing_anchors, present


def test_english_ids_dates_amounts_names_emails_urls() -> None:
    text = ("My order ORD-7731 ships on March 15, 2026 to Alice Chen at alice@example.com, "
            "see https://shop.example.com/o/7731. It weighs 5 kg and costs $120.")
    assert extract_anchors(text) == [
        "ORD-7731", "March 15, 2026", "Alice Chen", "alice@example.com",
        "https://shop.example.com/o/7731", "5 kg", "$120",
    ]


def test_iso_dates_titles_and_percentages() -> None:
    assert extract_anchors("Meeting on 2026-05-01 with Dr. Smith; a 30% discount.") == [
        "2026-05-01", "Dr. Smith", "30%",
    ]


def test_chinese_amounts_months_and_an_id_inside_chinese() -> None:
    assert extract_anchors("我的订单号是ORD-7731，预算五千元，五月去杭州") == [
        "ORD-7731", "五千元", "五月",
    ]


def test_chinese_dates_names_and_arabic_amounts() -> None:
    text = "我们2026年5月1日出发，三月十五日回来，我叫王小明，请联系李先生。预算3000元，30%折扣"
    assert extract_anchors(text) == [
        "2026年5月1日", "三月十五日", "王小明", "李先生", "3000元", "30%"]


def test_plain_words_bare_numbers_and_sentence_starts_are_not_anchors() -> None:
    assert extract_anchors("Question 17: tell me more about the weather. Thanks!") == []
    assert extract_anchors("今天天气很好，我们去散步吧。") == []


def test_longest_match_wins_and_repeats_are_listed_once() -> None:
    assert extract_anchors("2026年5月1日 and again 2026年5月1日") == ["2026年5月1日"]
    assert extract_anchors("see https://x.example.com/ORD-7731 now") == [
        "https://x.example.com/ORD-7731"
    ]


def test_present_ignores_case_and_spacing_but_not_content() -> None:
    assert present("Alice Chen", "met alice  chen today")
    assert not present("五千元", "预算是一笔钱")
    assert missing_anchors(["ORD-7731", "五千元", "ORD-7731"], "ORD-7731 预算") == ["五千元"]


@pytest.mark.parametrize("anchor, summary", [
    # CJK typesetting puts a space between Han (Kana, Hangul) and digits: the summary kept
    # the value, and the drift guard pinned it as lost.
    ("5万元", "借款 5 万元"), ("500元", "一共 500 元"), ("3月15日", "3 月 15 日开会"),
    ("下午3点", "下午 3 点见"), ("5万円", "5 万円を払った"), ("50,000원", "50,000 원"),
    ("5 万元", "借了5万元"),
    # Full-width signs as the ones they stand for, as full-width digits are.
    ("￥5,000", "价格 ¥5,000"), ("¥5,000", "价格￥5,000"), ("￡20", "£20"),
])
def test_present_ignores_a_space_between_cjk_and_digits_and_sign_widths(
        anchor: str, summary: str) -> None:
    assert present(anchor, summary)
    assert missing_anchors([anchor], summary) == []


def test_present_still_needs_the_digits_and_latin_spacing() -> None:
    assert not present("5万元", "6 万元")
    assert not present("ORD7731", "ORD 7731")  # a space between Latin and digits still counts
    assert not present("5kg", "5 kg")


@given(st.lists(st.sampled_from(["5", "12", "万", "元", "月", "日", "円", "원", "点", "下午"]),
                min_size=1, max_size=8))
def test_only_a_space_between_cjk_and_digits_is_set_aside(pieces: list[str]) -> None:
    # 5 万 is 5万, but 5 12 is not 512, nor 下午 万 下午万.
    set_aside = all(a.isdigit() != b.isdigit() for a, b in pairwise(pieces))
    assert present("".join(pieces), " ".join(pieces)) == set_aside


def test_anchors_of_several_texts_keeps_first_appearance_order() -> None:
    assert anchors_of(["pay $120", "ORD-7731 and $120", "五千元"]) == ["$120", "ORD-7731", "五千元"]


@given(st.text(max_size=200))
def test_every_anchor_is_a_substring_and_is_present_in_its_text(text: str) -> None:
    for anchor in extract_anchors(text):
        assert anchor and anchor in text
        assert present(anchor, text)


def test_everyday_chinese_counts_are_not_anchors() -> None:
    text = ("我想安排一次旅行，带一个箱子、两个背包和一件外套，一人一天的花费，"
            "第二天我们两人去西湖。")
    assert extract_anchors(text) == []


def test_ordinals_never_yield_a_piece_of_a_numeral() -> None:
    assert extract_anchors("第二天去苏州，第三天住三晚") == ["三晚"]
    assert extract_anchors("一共十一天") == ["十一天"]
    # With Arabic digits too: "第2天" is day 2; "2天" cut out of it would pin "2 days".
    assert extract_anchors("第2天去苏州，第12天住3晚，一共15天") == ["3晚", "15天"]


def test_meaningful_chinese_amounts_dates_and_counts_stay() -> None:
    text = "预算五千元，总共两万元，五月三日出发，三月十五日回来，一共八天，六人同行，住三晚"
    assert extract_anchors(text) == [
        "五千元", "两万元", "五月三日", "三月十五日", "八天", "六人", "三晚"]


def test_a_piece_of_a_hyphenated_word_is_not_a_name() -> None:
    assert extract_anchors("The cabin Wi-Fi works; ask Dana Whitfield about Wi-Fi.") == [
        "Dana Whitfield"]
    assert extract_anchors("房间有 Wi-Fi 吧？") == []


def test_ids_names_and_hotels_of_the_sample_sessions_stay() -> None:
    text = ("Flight MU5137, order ORD-7731 and KW-58213; we stay at Lakeview Garden Hotel "
            "and the password is blue-otter-88.")
    assert extract_anchors(text) == [
        "MU5137", "ORD-7731", "KW-58213", "Lakeview Garden Hotel", "blue-otter-88"]


def test_short_hyphenated_words_are_not_ids() -> None:
    assert extract_anchors("a 5-star, well-known place with e-mail") == []


def test_anchors_are_found_in_time_that_grows_with_the_length_not_its_square() -> None:
    """A long run of digits, letters or Chinese numerals (a pasted log, a hash) made the
    e-mail and Chinese-date patterns try every start in it: 40,000 digits took 17 s. The
    ratio of 4× the text is compared (linear 4, quadratic 16), so a busy machine slows
    both sides alike."""
    for unit in ("11", "a1", "三三", "一万", "$1 ", "1-"):
        assert_linear(extract_anchors, lambda n, unit=unit: unit * n, 3_000, unit)


def test_a_list_of_numbers_or_latin_letters_in_chinese_cost_their_length() -> None:
    """Every number after a comma of 1,2,3,… (a JSON array of floats) started an amount
    running to the end of the list (35 KB: 35 s), and every Latin letter of a Chinese
    clause an image name running to its end."""
    for unit, size in (("1,", 600), ("0.1234,", 200), ("a一", 2_000), ("用a和b", 1_000)):
        assert_linear(extract_anchors, lambda n, unit=unit: unit * n, size, unit)
    # The list's first number still holds the unit, and a list of amounts each its own.
    assert extract_anchors("weights 1,200,300 kg") == ["1,200,300 kg"]
    assert extract_anchors("bags of 3kg,5kg,10kg") == ["3kg", "5kg", "10kg"]
    assert extract_anchors("升级到jobs-worker:1.14.2了") == ["jobs-worker:1.14.2"]


def test_nothing_in_a_url_s_user_and_password_is_an_anchor() -> None:
    """"Sup3rS3cret@db.example.com" read as an e-mail was pinned and sent every turn."""
    assert extract_anchors("our db is postgresql://ann:Sup3rS3cret@db.example.com/team, "
                           "due 2026-05-01") == ["2026-05-01"]
    assert extract_anchors("git clone https://ann:p@ss9Word@github.com/acme/app.git") == []
    # Masked first, the URL holds a marker: no anchor either.
    assert extract_anchors("clone https://ann:⟦password⟧@github.com/acme/app.git") == []
    # An e-mail after a colon and a URL without a password still are.
    assert extract_anchors("email:bob@example.org, see https://example.org/a1") == [
        "bob@example.org", "https://example.org/a1"]


def test_an_email_a_latin_name_or_a_date_ends_where_the_cjk_text_around_it_starts() -> None:
    """\\w matches Han: "发到ada@…就行" was the anchor, so a summary keeping the address
    was told it dropped it, and "Alice Chen" inside Chinese was no name at all."""
    assert extract_anchors("请把发票发到li.wei+tax@corp.example.org吧") == [
        "li.wei+tax@corp.example.org"]
    assert extract_anchors("メールはtaro@example.jpです") == ["taro@example.jp"]
    assert extract_anchors("이메일은kim@example.kr입니다") == ["kim@example.kr"]
    assert extract_anchors("昨天跟Maria Lopez吃饭") == ["Maria Lopez"]
    assert extract_anchors("会议改到June 3之后") == ["June 3"]
    assert missing_anchors(extract_anchors("我的邮箱是li@corp.example.org，谢谢"),
                           "用户邮箱：li@corp.example.org") == []


_EN_TOKENS = ["ORD-7731", "KW-58213", "MU5137", "li@corp.example.org", "Maria Lopez",
              "2026-05-01", "June 3", "$120", "5 kg", "30%"]


@given(st.sampled_from(_EN_TOKENS), st.text("今天我们在吃饭见面很好吧也", min_size=1, max_size=8),
       st.text("今天我们在吃饭见面很好吧也，。", max_size=8))
def test_an_anchor_of_an_english_sentence_is_found_among_chinese_text(
        token: str, before: str, after: str) -> None:
    assert token in extract_anchors(f"We met, {token} is noted.")
    assert token in extract_anchors(before + token + after)


def test_chinese_names_introduced_by_kin_role_or_pet_words_are_anchors() -> None:
    """Only 我叫, 名字是, 名叫 were read: 我妹妹叫李娜 and 猫叫“团子” went unguarded."""
    assert extract_anchors("我女儿叫陈思远，今年上大学。") == ["陈思远"]
    assert extract_anchors("我的室友叫司马光辉") == ["司马光辉"]
    assert extract_anchors("我们家的狗叫“豆豆”，很乖") == ["豆豆"]
    assert extract_anchors("我家的兔子叫雪球。") == ["雪球"]
    assert extract_anchors("我叫上官婉儿") == ["上官婉儿"]


def test_a_title_takes_the_whole_name_before_it() -> None:
    """王小明先生 gave 明先生: one character, whatever the name."""
    assert extract_anchors("周末去见刘德明老师") == ["刘德明"]
    assert extract_anchors("我约了欧阳雪女士") == ["欧阳雪"]
    assert extract_anchors("请联系赵女士，谢谢周先生") == ["赵女士", "周先生"]


def test_what_only_looks_like_a_name_is_not_pinned() -> None:
    assert extract_anchors("我妈妈叫我早点回家，同事叫他去开会") == []
    assert extract_anchors("数学老师说历史老师很好，这种菜叫做火锅") == []
    assert extract_anchors("我家猫叫起来很吵") == []


def test_a_question_word_where_a_name_would_stand_is_no_name() -> None:
    """我的猫叫什么？ pinned 什么, and a summary guard dropped an order id to keep it."""
    for text in ("我的猫叫什么？", "我叫什么名字来着？", "我的名字是甚么", "你知道我的猫叫几号吗",
                 "我的狗叫多少钱", "名字叫怎么写", "我家的兔子叫哪个名字", "我叫谁"):
        assert extract_anchors(text) == [], text
    assert extract_anchors("What is my order number? 我的猫叫什么？ ORD-7731") == ["ORD-7731"]
    assert extract_anchors("我的猫叫何小白，我叫谁都行") == ["何小白"]


def test_full_width_ids_and_amounts_are_anchors_either_width_keeps_them() -> None:
    anchors = extract_anchors("快递单号ＳＦ１２３４５６７，重２．５ｋｇ")
    assert anchors == ["ＳＦ１２３４５６７", "２．５ｋｇ"]
    assert missing_anchors(anchors, "单号SF1234567，2.5kg") == []
    assert missing_anchors(["SF1234567"], "单号ＳＦ１２３４５６７") == []
    assert missing_anchors(anchors, "单号SF1234568") == anchors


def test_acronyms_versions_ports_and_code_identifiers_are_anchors() -> None:
    """A new employer "DJI", an image tag, a port and an env variable were no anchors: a
    summary dropped them and nothing was pinned (debug transcript: text recall 0.00)."""
    assert extract_anchors("My job is data analyst at DJI now.") == ["DJI"]
    assert extract_anchors("image jobs-worker:1.14.2, port 8443") == [
        "jobs-worker:1.14.2", "8443"]
    assert extract_anchors("Set DEPLOY_ENV=staging; UndefinedColumn") == [
        "DEPLOY_ENV=staging", "UndefinedColumn"]
    assert extract_anchors('def retry(times=3, backoff=2.0): raise RetryExhausted()') == [
        "times=3", "backoff=2.0", "RetryExhausted"]
    assert extract_anchors('    STAGING_PORT: "8443"\nthe retry_count column, v2.0.1-rc1') == [
        "STAGING_PORT", "8443", "retry_count", "v2.0.1-rc1"]
    assert extract_anchors("我在DJI上班，端口改成8443，版本1.14.2，字段retry_count") == [
        "DJI", "8443", "1.14.2", "retry_count"]


def test_shouting_sql_common_acronyms_and_plain_numbers_are_not_anchors() -> None:
    assert extract_anchors("PLEASE HELP ME, the API and the CI are OK") == []
    assert extract_anchors("SELECT id FROM jobs WHERE state = 1") == []
    assert extract_anchors("a 2.0 ratio, the report for 2024, at 10, the port is fine") == []
    assert extract_anchors("it is a well-known e-mail, one_ off? no: __enter__ and x=1") == []


def test_a_name_stops_at_a_sentence_end_and_a_title_starts_one() -> None:
    """"See Dr. Smith." gave "See Dr"; "Annex A. The Customer" ran over a full stop."""
    assert extract_anchors("See Dr. Smith. Then go home.") == ["Dr. Smith"]
    assert extract_anchors("John F. Kennedy spoke, as set out in Annex A. The Customer "
                           "shall pay.") == ["John F. Kennedy"]
    assert extract_anchors("Hi Priya, is Alice's car fixed? Then pay Bob 50 euros.") == [
        "Priya", "Alice", "Bob", "50 euros"]
    assert extract_anchors("我和Dr. Smith见面。然后回家") == ["Dr. Smith"]


@pytest.mark.parametrize(("text", "name"), [
    ("I lent Alice 200.", "Alice"), ("Please pay Carol 45.", "Carol"),
    ("Send it to Ravi 8.\nThanks", "Ravi"), ("借给 Alice 200 块", "Alice")])
def test_a_name_a_number_ends_the_clause_after_is_still_a_name(text: str, name: str) -> None:
    """Only a label's noun (Section 4:) or a word its place capitalised (a heading's
    "Reminder 2:") is dropped before a designator; "lent Alice 200." names Alice."""
    assert name in extract_anchors(text)
    assert extract_anchors("See Section 4: rules") == []
    assert extract_anchors("Reminder 2: pay the rent") == []


def test_words_capitalised_for_their_place_in_a_document_are_not_names() -> None:
    """A pasted contract, e-mail and README pinned "Each", "Section", "Subject",
    "Installation", "Customer's": capitalised for starting a line, a heading or a
    numbered clause, for labelling what follows, or as a defined term after "the"."""
    text = ("From: Priya Natarajan\nSubject: Warehouse move\n\n## Installation\n\n"
            "Section 1: The racking.\n4.9 Each party shall pay. The Supplier shall act; "
            "the Customer's sole remedy. See Reminder 2: keep receipts.\n"
            "- Configuration goes here\n> Note the Data Protection Schedule.")
    assert extract_anchors(text) == ["Priya Natarajan", "Data Protection Schedule"]
    # A summary runs the lines together: a label or a heading mark still tells.
    assert extract_anchors("To: ops@example.org Subject: Warehouse move ## Installation "
                           "pip install. 4.10 Each party") == ["ops@example.org"]
    # The same word mid-sentence is a name.
    assert extract_anchors("Section 1 is done. I asked Priya and Lisbon.") == [
        "Priya", "Lisbon"]


def test_an_amount_with_a_currency_code_before_or_after_is_one_anchor() -> None:
    assert extract_anchors("The early termination fee is EUR 42,500.") == ["EUR 42,500"]
    assert extract_anchors("Fee is USD 1,200, or US$1,200, or 300 GBP.") == [
        "USD 1,200", "US$1,200", "300 GBP"]
    assert extract_anchors("押金RMB 5000，另付300美元和200欧元") == [
        "RMB 5000", "300美元", "200欧元"]
    assert missing_anchors(["EUR 42,500"], "fee EUR 40,000") == ["EUR 42,500"]


def test_clock_times_are_anchors_in_english_and_chinese() -> None:
    assert extract_anchors("Starting at 06:30; the last truck leaves at 15:45.") == [
        "06:30", "15:45"]
    assert extract_anchors("call at 3pm or 6:30 pm, not 12:34:56:78") == ["3pm", "6:30 pm"]
    assert extract_anchors("下午3点半出发，15点45分到，晚上七点半吃饭") == [
        "下午3点半", "15点45分", "晚上七点半"]
    # 这3点 is "these three points", 一点 "a little".
    assert extract_anchors("这3点很重要，多吃一点，第3点") == []


def test_traditional_chinese_dates_and_amounts() -> None:
    """The date pattern took 日/号 only and the numerals lacked 兩/萬/億."""
    assert extract_anchors("二〇二五年三月五號在臺北") == ["二〇二五年三月五號"]
    assert extract_anchors("禮金兩萬元，預算三億元，住三晚，兩個人") == ["兩萬元", "三億元", "三晚"]
    assert extract_anchors("5月3號出發，花了2萬元") == ["5月3號", "2萬元"]
    assert extract_anchors("禮金两万元") == ["两万元"]


def test_a_chinese_licence_plate_keeps_its_province() -> None:
    """浙A12345 gave A12345: a summary naming 沪A12345 counted as keeping it."""
    assert extract_anchors("我的车牌号是浙A12345。") == ["浙A12345"]
    assert extract_anchors("车牌粤B·D12345，另一辆京N12345") == ["粤B·D12345", "京N12345"]
    assert extract_anchors("車牌粵B12345") == ["粵B12345"]
    assert missing_anchors(extract_anchors("我的车牌号是浙A12345。"), "车牌是沪A12345。") == [
        "浙A12345"]
    assert missing_anchors(["浙A12345"], "车牌浙A12345") == []


def test_nothing_inside_or_touching_a_privacy_marker_is_an_anchor() -> None:
    assert extract_anchors("door code is ⟦PIN or security code⟧ now") == []
    assert extract_anchors("my IBAN is ⟦IBAN⟧, call ⟦phone number⟧ Alice Smith") == [
        "IBAN", "Alice Smith"]
    assert extract_anchors("我叫⟦national id⟧王小明，卡号⟦card number⟧") == []


_MARKERS = ["⟦PIN or security code⟧", "⟦card number⟧", "⟦IBAN⟧", "⟦API key⟧", "⟦password⟧",
            "⟦phone number⟧", "⟦national id⟧", "⟦bank account number⟧", "⟦redacted detail⟧"]
_PIECES = [*_EN_TOKENS, "浙A12345", "兩萬元", "王小明", "EUR 42,500", "15:45", "Dr. Smith",
           " ", "，", ". ", "我叫", "code ", "at ", "DJI", "PIN", "Card", "-", "@", ":", "://"]


@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=4).map("".join), min_size=2,
                max_size=5),
       st.lists(st.sampled_from(_MARKERS), min_size=4, max_size=4))
def test_no_anchor_holds_any_of_a_privacy_marker(parts: list[str], markers: list[str]) -> None:
    text = "".join(p + m for p, m in zip(parts, markers, strict=False)) + parts[-1]
    for anchor in extract_anchors(text):
        assert "⟦" not in anchor and "⟧" not in anchor
        # Every anchor lies wholly between markers: no word of one is ever pinned.
        assert any(anchor in part for part in parts)


@pytest.mark.parametrize(("text", "anchors"), [
    ("금액은 50,000원", ["50,000원"]),
    ("예산은 5만 원, 2명이 3박", ["5만 원", "2명", "3박"]),
    ("5万円の予算で3泊", ["5万円", "3泊"]),
    ("三万円です", ["三万円"]),
    ("₹5,000 or Rs. 4,500", ["₹5,000", "Rs. 4,500"]),
    ("₩50,000 and ₪120", ["₩50,000", "₪120"]),
    ("15 Mart 2026 tarihinde 500 TL", ["15 Mart 2026", "500 TL"]),
    ("am 15. März 2026 für 100 €", ["15. März 2026", "100 €"]),
    ("le 15 mars 2026 à 500 €", ["15 mars 2026", "500 €"]),
    ("el 15 de marzo de 2026", ["15 de marzo de 2026"]),
    ("op 3 maart 2026", ["3 maart 2026"]),
    ("dnia 15 marca 2026 za 50 zł", ["15 marca 2026", "50 zł"]),
    ("15 марта 2026 года за 300 руб", ["15 марта 2026", "300 руб"]),
    ("3월 15일 예약", ["3월 15일"]),
    ("2026년 3월 15일에", ["2026년 3월 15일"]),
    ("ngày 15 tháng 3 năm 2026 giá 500.000 đồng", ["15 tháng 3 năm 2026", "500.000 đồng"]),
    ("2026年3月15日に東京", ["2026年3月15日"]),
])
def test_amounts_and_dates_in_other_languages(text: str, anchors: list[str]) -> None:
    assert extract_anchors(text) == anchors


@pytest.mark.parametrize("text", [
    "Option 5 may work", "Step 5. May I ask?", "give it 3 try", "I have 5 mail",
    "12개월 동안", "一泊でいい",
])
def test_words_of_other_languages_alone_or_by_chance_are_not_anchors(text: str) -> None:
    assert extract_anchors(text) == []


@pytest.mark.parametrize(("text", "anchors"), [
    ("Ich habe bestellt. Die Rechnung kommt am Montag, die Lieferung dauert drei Wochen und "
     "kostet 49,90 €.", ["49,90 €"]),
    ("Der Termin beim Zahnarzt ist am Dienstag um 10 Uhr.", ["10 Uhr"]),
    ("Am 15. März 2026 fliege ich nach Zürich, das Hotel kostet 180 € pro Nacht.",
     ["15. März 2026", "180 €"]),
    ("Wir ziehen in die neue Wohnung, eine Woche nach dem Umzug.", []),
    ("Es dauert 3 Wochen, 2 Tage und 5 Minuten, um 15.30 Uhr.",
     ["3 Wochen", "2 Tage", "5 Minuten", "15.30 Uhr"]),
    ("Ech hunn d'Rechnung fir eng Garage Freideg kritt.", []),
    ("Cuma günü Mart ayında", []),
])
def test_a_german_noun_weekday_or_month_is_no_name(text: str, anchors: list[str]) -> None:
    """German capitalises every noun: a day of use pinned "Die Rechnung", "Montag",
    "Lieferung", "Wochen", and "Hotel" and "Nacht" pushed a date out of the pin budget."""
    assert extract_anchors(text) == anchors


def test_names_in_german_and_english_names_beside_the_german_words_stay() -> None:
    assert extract_anchors("Ich treffe Anna Schmidt und Peter am Bahnhof in Berlin. "
                           "Hallo Lisa! Danach mit Frau Weber.") == [
        "Anna Schmidt", "Peter", "Berlin", "Lisa", "Frau Weber"]
    # "am", "die" and "den" are English words too: "I am Bob" names Bob.
    assert extract_anchors("I am Bob and at 9 am Alice called; plants die Monday.") == [
        "Bob", "9 am", "Alice"]


def test_chinese_dates_and_clock_times_typed_with_spaces_are_anchors() -> None:
    # The drift guard pinned 3月15日 but not 3 月 15 日, nor 下午 3 点.
    assert extract_anchors("我 3 月 15 日到，2025 年 12 月 31 日截止") == [
        "3 月 15 日", "2025 年 12 月 31 日"]
    assert extract_anchors("下午 3 点 30 分开会，15 点 45 分结束") == [
        "下午 3 点 30 分", "15 点 45 分"]
    assert present("2025 年 12 月 31 日", "截止日是2025年12月31日")


@pytest.mark.parametrize("text, anchors", [
    # 周5晚上 is Friday evening, not five nights: it pinned "5晚".
    ("我们周5晚上见", []),
    ("上周5晚上吃了火锅", []),
    ("星期5晚饭在哪吃", []),
    ("周5 晚上见", []),
    # Nights they stay.
    ("住5晚", ["5晚"]),
    ("一周5晚", ["5晚"]),
])
def test_a_digit_weekday_before_evening_is_no_count_of_nights(text: str,
                                                              anchors: list[str]) -> None:
    assert extract_anchors(text) == anchors


def test_han_of_the_extensions_and_half_width_kana_are_cjk_to_anchors() -> None:
    # One definition of CJK (chatmem.text): anchors' two lacked extensions B–F (𠮷 of 𠮷田
    # took the address into a Latin word) and one half-width kana (a space beside them
    # was not spacing aside).
    assert extract_anchors("请联系𠮷ada@example.com") == ["ada@example.com"]
    assert present("𠮷5", "𠮷 5")
    assert present("ｶ5", "ｶ 5")


@pytest.mark.parametrize("text, anchors", [
    # A number ending or after a Latin token is no month (Q3 was lost to "3 月"), and 第
    # spaced from its number is an ordinal still.
    ("Q3 月报", ["Q3"]),
    ("Top 3 月度榜单", []),
    ("iOS 18 月活", []),
    ("第 3 点 15 分", []),
    ("deadline 3 月 15 日", ["3 月 15 日"]),
    ("去年 3 月", ["3 月"]),
])
def test_a_number_of_a_latin_token_is_no_month_nor_an_ordinal_a_time(
        text: str, anchors: list[str]) -> None:
    assert extract_anchors(text) == anchors


def test_a_month_after_a_latin_word_is_pinned_where_its_word_ends() -> None:
    # 月份, 月底 and a 月 ending the words are months; 月度, 月活 begin other words.
    assert extract_anchors("OKR 3 月份复盘") == ["OKR", "3 月"]
    assert extract_anchors("Sprint 12 月底结束") == ["12 月"]
    assert extract_anchors("Budget for 5 月") == ["5 月"]
    assert extract_anchors("iOS 18 月活") == []
