"""What the fact extractor's answer may hold (chatmem.memory.extraction_answer), and what a
rejected answer costs: a fact too long to keep is dropped, not the answer with it, and turns
whose answer is rejected MAX_REJECTIONS times are passed over, not sent every turn."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatmem.errors import ProviderResponseError
from chatmem.memory.extraction import MAX_REJECTIONS, STATE_KEY
from chatmem.memory.extraction_answer import MAX_KEY_CHARS, MAX_VALUE_CHARS, parse_extraction
from chatmem.notices import FactsBehind, FactsFailed, FactsTooLong
from chatmem.providers.base import Purpose
from chatmem.providers.scripted import ScriptedProvider

LONG_BUDGET = "预算" + "很多" * 600  # the scripted extractor's value: 1,200 characters


def test_a_fact_too_long_is_dropped_and_the_rest_of_the_answer_kept() -> None:
    answer = json.dumps({"set": [
        {"key": "预算", "value": "很多" * 600, "turn": 1},
        {"key": "名字", "value": "李雷", "turn": 1},
        {"key": "k" * (MAX_KEY_CHARS + 1), "value": "v", "turn": 1},
        {"key": "city", "value": "x" * MAX_VALUE_CHARS, "turn": 1},
    ], "retract": ["order id"]}, ensure_ascii=False)
    parsed = parse_extraction(answer, [1])
    assert [(c.key, c.value) for c in parsed.set] == [("名字", "李雷"),
                                                       ("city", "x" * MAX_VALUE_CHARS)]
    assert parsed.too_long == ["预算", "k" * (MAX_KEY_CHARS + 1)]
    assert [r.key for r in parsed.retract] == ["order id"]


def test_a_turn_stating_a_fact_too_long_keeps_its_other_facts_and_the_next_turns(
        make_engine) -> None:
    """The whole answer was rejected ("set[0] is too long"), the same one came every turn,
    and no fact of that turn or any later one was ever kept."""
    provider = ScriptedProvider()
    engine = make_engine("entity", provider=provider)
    first = engine.run_turn(f"{LONG_BUDGET}。我叫李雷。")
    assert first.notices == [FactsTooLong(("预算",), MAX_KEY_CHARS, MAX_VALUE_CHARS)]
    second = engine.run_turn("I live in Lisbon.")
    assert second.notices == []
    facts = {f.key: (f.value, f.source_turn) for f in engine.state.live_facts()}
    assert facts == {"名字": ("李雷", 1), "city": ("Lisbon", 2)}
    assert provider.calls_by_purpose[Purpose.FACTS] == 2
    assert engine.state.get(STATE_KEY)["done_turn"] == 2


class PoisonedExtractor(ScriptedProvider):
    """The scripted model, except that it answers prose to every fact request holding
    POISON: an answer it always gives for those turns."""

    def complete(self, messages, *, purpose: Purpose = Purpose.CHAT) -> str:
        if purpose == Purpose.FACTS and "POISON" in messages[-1]["content"]:
            self._log(purpose, messages)
            return "Sure, the entities are: John"
        return super().complete(messages, purpose=purpose)


REJECTED = "fact extraction answer rejected: not JSON (Expecting value at char 0)"


def test_turns_whose_answer_is_rejected_again_and_again_are_passed_over(make_engine) -> None:
    """Every later turn said "turns 2–N will be retried", N growing, one helper call each on
    the same batch, and no fact was kept again."""
    provider = PoisonedExtractor()
    engine = make_engine("entity", provider=provider)
    engine.run_turn("My name is Ada.")
    assert engine.run_turn("POISON 毒").notices == [FactsFailed(REJECTED, 2, 2)]
    said = ["I live in Lisbon.", "我的订单号是ORD-7731。"]
    assert MAX_REJECTIONS == 3
    assert engine.run_turn(said[0]).notices == [FactsFailed(REJECTED, 2, 3)]
    # The third answer rejected: only the turn every rejected batch held is passed over.
    assert engine.run_turn(said[1]).notices == [
        FactsFailed(REJECTED, 2, 2, passed_over=MAX_REJECTIONS), FactsBehind(2)]
    assert engine.run_turn("My budget is 900 euros.").notices == []
    facts = {f.key: (f.value, f.source_turn) for f in engine.state.live_facts()}
    assert facts == {"name": ("Ada", 1), "city": ("Lisbon", 3), "订单号": ("ORD-7731", 4),
                     "budget": ("900 euros", 5)}
    assert provider.calls_by_purpose[Purpose.FACTS] == 5  # one a turn
    state = engine.state.get(STATE_KEY)
    assert (state["done_turn"], state["rejections"], state["rejected_through"]) == (5, None, None)
    # A later rejection counts from one again.
    assert engine.run_turn("POISON again").notices == [FactsFailed(REJECTED, 6, 6)]
    assert engine.state.get(STATE_KEY)["rejections"] == 1


class DownExtractor(ScriptedProvider):
    """The scripted model, except that its fact requests get no usable reply while `down`."""

    down = True

    def complete(self, messages, *, purpose: Purpose = Purpose.CHAT) -> str:
        if purpose == Purpose.FACTS and self.down:
            raise ProviderResponseError("the helper model sent an empty reply")
        return super().complete(messages, purpose=purpose)


def test_a_request_that_gets_no_answer_is_never_passed_over(make_engine) -> None:
    """A server that does not answer says nothing of the turns: their facts wait for it."""
    provider = DownExtractor()
    engine = make_engine("entity", provider=provider)
    said = ["My name is Ada.", "I live in Lisbon.", "我叫李雷。", "My budget is 900 euros."]
    for n, text in enumerate(said, 1):
        assert engine.run_turn(text).notices == [
            FactsFailed("the helper model sent an empty reply", 1, n)]
    provider.down = False
    assert engine.run_turn("What's new?").notices == []
    facts = {f.key: (f.value, f.source_turn) for f in engine.state.live_facts()}
    assert facts == {"name": ("李雷", 3), "city": ("Lisbon", 2), "budget": ("900 euros", 4)}


@pytest.mark.parametrize("answer", [
    'Here are the facts:\n```json\n{"set": [{"key": "名字", "value": "李雷", "turn": 1}]}\n```',
    'Sure! {"set": [{"key": "名字", "value": "李雷", "turn": 1}], "retract": []} Hope it helps.',
    '以下是事实：\n{"set": [{"key": "名字", "value": "李雷", "turn": 1}]}\n以上。',
    '```JSON\n{"set": [{"key": "名字", "value": "李雷", "turn": 1}]}\n```\nAnything else?',
])
def test_an_answer_with_a_line_around_its_json_is_read(answer: str) -> None:
    """Rejected as "not JSON (Expecting value at char 0)": a small model that always writes
    a line before or after its object kept no fact, and its turns were passed over."""
    assert [(c.key, c.value) for c in parse_extraction(answer, [1]).set] == [("名字", "李雷")]


def test_a_value_written_as_a_json_number_is_read_as_its_digits() -> None:
    """A helper writes an age or a count unquoted ("value": 30): the whole answer was
    rejected for it ('set[1].value must be a non-empty string'), Ada's name with it, and
    after MAX_REJECTIONS such answers the turns were passed over."""
    from chatmem.memory.extraction_answer import only_said

    answer = json.dumps({"set": [{"key": "name", "value": "Ada", "turn": 1},
                                 {"key": "age", "value": 30, "turn": 1},
                                 {"key": "height", "value": 1.68, "turn": 1},
                                 {"key": "kids", "value": 7, "turn": 1}]})
    parsed = parse_extraction(answer, [1])
    assert [(c.key, c.value) for c in parsed.set] == [
        ("name", "Ada"), ("age", "30"), ("height", "1.68"), ("kids", "7")]
    kept, unsaid = only_said(parsed, ["I'm Ada, 30 years old and 1.68 m tall, with 2 kids."])
    assert [c.key for c in kept.set] == ["name", "age", "height"] and unsaid == ["kids"]


@pytest.mark.parametrize("answer", [
    '{"set": [{"key": "name", "value": "Ada", "turn": 1}], "retract": null}',
    '{"set": [{"key": "name", "value": "Ada", "turn": 1, "scope": " User"}], "retract": []}',
    '{"set": [{"key": "name", "value": "Ada", "turn": "1", "scope": null}]}',
    '{"set": null, "retract": [{"key": "city", "turn": " 2"}]}',
])
def test_an_answer_one_step_off_the_schema_is_read(answer: str) -> None:
    """"retract": null, "scope": "User", "turn": "1": the whole answer was rejected, each of
    its facts lost, and the same answer came again until the turns were passed over."""
    parsed = parse_extraction(answer, [1, 2])
    assert [(c.key, c.value, c.turn) for c in parsed.set] + [
        (r.key, r.turn) for r in parsed.retract] in (
        [("name", "Ada", 1)], [("city", 2)])
    if "User" in answer:
        assert [c.scope.value for c in parsed.set] == ["user"]


@pytest.mark.parametrize("answer", [
    '{"set": [{"key": "name", "value": "Ada", "turn": "one"}]}',
    '{"set": [{"key": "name", "value": "Ada", "turn": "1.5"}]}',
    '{"set": [{"key": "name", "value": "Ada", "turn": 1, "scope": "everyone"}]}',
    '{"set": {"key": "name"}}',
])
def test_an_answer_off_the_schema_in_meaning_is_still_rejected(answer: str) -> None:
    with pytest.raises(ProviderResponseError, match="rejected"):
        parse_extraction(answer, [1, 2])


@pytest.mark.parametrize("answer", ["Sure, the entities are: John", "I found {no facts}.", ""])
def test_an_answer_without_json_is_still_rejected(answer: str) -> None:
    with pytest.raises(ProviderResponseError, match="not JSON"):
        parse_extraction(answer, [1])


class NestingExtractor(ScriptedProvider):
    """The scripted model, except that every fact answer is JSON nested past any parser."""

    def complete(self, messages, *, purpose: Purpose = Purpose.CHAT) -> str:
        if purpose == Purpose.FACTS:
            self._log(purpose, messages)
            return '{"set": ' + "[" * 100_000
        return super().complete(messages, purpose=purpose)


def test_json_nested_too_deeply_is_a_rejected_answer_not_a_crash(make_engine) -> None:
    """RecursionError escaped as "memory update failed": never counted as a rejection, the
    same answer was asked for twice a turn, for ever."""
    engine = make_engine("entity", provider=NestingExtractor())
    nested = "fact extraction answer rejected: JSON nested too deeply"
    assert engine.run_turn("我叫李雷。").notices == [FactsFailed(nested, 1, 1)]
    assert engine.run_turn("I live in Lisbon.").notices == [FactsFailed(nested, 1, 2)]
    assert engine.run_turn("OK").notices == [
        FactsFailed(nested, 1, 1, passed_over=MAX_REJECTIONS), FactsBehind(2)]


class TableExtractor(ScriptedProvider):
    """The scripted model, except that its answer holds the whole table: each current fact
    again, under the turn a model guesses it came from (the first)."""

    def complete(self, messages, *, purpose: Purpose = Purpose.CHAT) -> str:
        answer = super().complete(messages, purpose=purpose)
        if purpose != Purpose.FACTS:
            return answer
        table = [{"key": f["key"], "value": f["value"], "turn": 1}
                 for f in json.loads(messages[-1]["content"])["facts"]]
        new = json.loads(answer)
        return json.dumps({**new, "set": table + new.get("set", [])}, ensure_ascii=False)


def test_an_answer_repeating_the_current_facts_under_their_old_turns_is_read(
        make_engine) -> None:
    """"set[0].turn must be one of the given turns, got 1" from the second turn on: every
    answer rejected whole, its turns passed over after three, and no fact kept but the
    first turn's."""
    engine = make_engine("entity", provider=TableExtractor())
    for said in ["My name is Ada.", "I live in Lisbon.", "我的订单号是ORD-7731。"]:
        assert engine.run_turn(said).notices == []
    facts = {f.key: (f.value, f.source_turn) for f in engine.state.live_facts()}
    assert facts == {"name": ("Ada", 1), "city": ("Lisbon", 2), "订单号": ("ORD-7731", 3)}


def test_a_repeated_fact_under_a_turn_not_given_is_passed_over_a_new_one_is_not() -> None:
    answer = json.dumps({"set": [{"key": "City", "value": "Lisbon", "turn": 1},
                                 {"key": "名字", "value": "李雷", "turn": 2}]},
                        ensure_ascii=False)
    current = {("city", "Lisbon")}
    assert [(c.key, c.turn) for c in parse_extraction(answer, [2], current).set] == [
        ("名字", 2)]
    changed = answer.replace("Lisbon", "Porto")
    with pytest.raises(ProviderResponseError, match=r"set\[0\]\.turn must be one of the given"):
        parse_extraction(changed, [2], current)


def test_a_fact_restated_in_a_later_turn_of_the_batch_still_wins() -> None:
    """Only a repeat under a turn not given is passed over: Lisbon said again after Porto
    is the city, though Lisbon is the current fact."""
    answer = json.dumps({"set": [{"key": "city", "value": "Porto", "turn": 1},
                                 {"key": "city", "value": "Lisbon", "turn": 2}]})
    parsed = parse_extraction(answer, [1, 2], {("city", "Lisbon")})
    assert [(c.value, c.turn) for c in parsed.set] == [("Porto", 1), ("Lisbon", 2)]


def test_a_value_framed_in_quotes_or_end_punctuation_is_what_the_user_said() -> None:
    from chatmem.memory.extraction_answer import Extraction, FactChange, only_said
    from chatmem.store.records import FactScope

    def fact(key: str, value: str) -> FactChange:
        return FactChange(key, value, FactScope.SESSION, 1)

    said = ["I live in Lisbon and my nickname is Ace", "我住在杭州"]
    extraction = Extraction(set=[fact("city", "Lisbon."), fact("nickname", '"Ace"'),
                                 fact("城市", "「杭州」。"), fact("country", "Portugal."),
                                 fact("mark", "...")])
    kept, unsaid = only_said(extraction, said)
    assert [c.key for c in kept.set] == ["city", "nickname", "城市"]
    assert unsaid == ["country", "mark"]


@pytest.mark.parametrize(("value", "said"), [
    ("Dr. Smith", "I'm Dr Smith"),
    ("O'Brien", "my name is O’Brien"),
    ("Dr. Smith", "I'm Dr. Jane Smith, the new GP"),
    ("San Francisco CA", "I live in San Francisco, CA"),
    ("3", "I have three kids"),
    ("25", "I'm twenty-five"),
    ("twelve", "my son is 12"),
    ("$1000", "the budget is $1,000"),
    ("1000 €", "it costs 1\u202f000 €"),
    ("杭州", "订单 ORD-7731 杭州"),  # after a number, as Chinese spacing is folded
    ("cats, dogs", "I like cats and dogs"),
    ("2", "我有两个孩子"),
    ("30岁", "我今年三十岁"),
    ("两千零五", "我2005年毕业"),
    ("猫、狗", "我喜欢猫和狗"),
    ("克里斯保罗", "我叫克里斯·保罗"),
    ("ＡＢＣ-１２", "order abc 12"),
    # A form's number touching a word, as the text as typed may ("10" in "10am"): the
    # forms' edge rule was read57's (no letter either side), said_in's attack57b's.
    ("10000", "I ran 10,000km last year"),
    ("$1000", "the budget is $1,000USD"),
    ("30岁", "I am 三十岁"),
    ("2", "I have 两个 kids"),
    # A number and the word beside it, spaced one way by the user and the other by the
    # helper: each was dropped as 'not said', a correct fact lost.
    ("180 cm", "I'm 180cm tall"),
    ("9am", "I land at 9 am"),
    ("ORD7731", "my order is ORD-7731"),
    ("GPT-4", "I use gpt4 at work"),
    ("京A12345", "我的车牌是京A·12345"),
    # Written as search folds it: a helper answering in simplified Chinese, or without
    # an accent, wrote the name the user typed.
    ("张伟", "我叫張偉"),
    ("台北", "我住在臺北"),
    ("Zoe", "I'm Zoë"),
    # A Chinese number said short, its last digit a tenth of the unit before it.
    ("2500", "预算两千五"),
    ("15000", "我月薪一万五"),
    ("1200元", "房租一千二元"),
    ("350", "房租三百五一个月"),           # 350 and "a" (month): read whole, no number
])
def test_a_value_the_helper_tidied_is_still_what_the_user_said(value: str, said: str) -> None:
    """A real helper writes the user's words its own way (a title's full stop, a curly
    apostrophe, a number in digits, a list's commas); each was dropped as 'not said'."""
    from chatmem.memory.extraction_answer import Extraction, FactChange, only_said
    from chatmem.store.records import FactScope

    extraction = Extraction(set=[FactChange("k", value, FactScope.SESSION, 1)])
    assert only_said(extraction, [said]) == (extraction, [])


@pytest.mark.parametrize(("value", "said"), [
    ("Dr. Smith", "I'm Jane Smith"),       # a title the user never gave
    ("4", "I have 14 cats"),               # a piece of a longer number
    ("1", "I have 100 books"),
    ("2026-07-04", "it ships July 4th"),   # a date the helper wrote its own way
    ("Paris", "I live in France"),
    ("李四", "我叫张三"),
    ("王先生", "我姓王"),
    ("cats, birds", "I like cats and dogs"),
    ("3", "I have thirty kids"),
    ("100", "I ran 1,000km"),              # the forms' rule: still no piece of a number
    ("Al", "Alice, 30yo"),
    ("B1", "I take vitamin B 12"),        # a number and its word one, still whole
    ("Room 1", "Room 12"),
    ("张伟", "我叫張衛"),                  # another name, folded or not
    ("2005", "预算两千五"),                # 两千五 is 2,500; 两千零五 is 2,005
    ("1", "编号一二三"),                   # digit by digit: an id, no number
])
def test_a_value_the_user_did_not_say_is_still_dropped(value: str, said: str) -> None:
    from chatmem.memory.extraction_answer import Extraction, FactChange, only_said
    from chatmem.store.records import FactScope

    extraction = Extraction(set=[FactChange("k", value, FactScope.SESSION, 1)])
    assert only_said(extraction, [said]) == (Extraction(set=[]), ["k"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["Lisbon", "杭州", "ORD-7731", "3", "twenty", "五千元", "Dr.",
                                 "O'Brien", "cats", "和", "１２", "São", "2,000", "三"]),
                min_size=1, max_size=8), st.data())
def test_any_run_of_the_users_words_is_said(words: list[str], data: st.DataObject) -> None:
    from chatmem.memory.said_values import said_in

    first = data.draw(st.integers(0, len(words) - 1))
    last = data.draw(st.integers(first + 1, len(words)))
    text = " ".join(words)
    assert said_in(" ".join(words[first:last]), [f"I said: {text}."])


def test_checking_a_value_was_said_compiles_no_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each value a batch checks compiled a pattern of its own (its letter class holds every
    CJK range, ~1 ms): most of the CPU of catching up 5,000 turns of facts."""
    import re

    from chatmem.memory.said_values import said_in

    compiled: list[str] = []
    original = re.compile
    monkeypatch.setattr(re, "compile", lambda *a, **k: compiled.append(a[0]) or original(*a, **k))
    texts = ["My order is ORD-7731, the 30yo Alice lives in 杭州 with 14 cats."]
    assert [said_in(v, texts) for v in ("ORD-7731", "Alice", "杭州", "30", "4", "Al")] == [
        True, True, True, True, False, False]
    assert compiled == []


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("ab1９ 杭州-é_"), max_size=12),
       st.text(st.sampled_from("ab1９ 杭州-é_"), min_size=1, max_size=3))
def test_a_part_is_whole_where_no_letter_or_digit_of_its_kind_touches_it(
        text: str, part: str) -> None:
    """The rule as a pattern states it: not after a digit (letter) when it begins with one,
    not before one when it ends with one; Chinese touches anything."""
    import re

    from chatmem.memory.said_values import _LETTER, _holds

    def touching(edge: str) -> str:
        return r"\d" if edge.isdigit() else _LETTER if re.fullmatch(_LETTER, edge) else ""

    before, after = touching(part[0]), touching(part[-1])
    pattern = (f"(?<!{before})" * bool(before) + re.escape(part)
               + f"(?!{after})" * bool(after))
    assert _holds(text, part) is (re.search(pattern, text) is not None)
