"""Pinned values a later message replaced are sent marked as replaced, never as current."""

from __future__ import annotations

from collections.abc import Callable

from growth import assert_linear

from chatmem.engine import Engine
from chatmem.memory.pin_block import pin_lines
from chatmem.memory.pins import Pin, parse_pins
from chatmem.memory.replaced_values import mark_replaced


def replaced_by(pin: Pin, said: list[tuple[int | None, str]]) -> int | None:
    """The turn of the message in `said` that replaced `pin`'s value, as mark_replaced
    marks it (the one way chatmem asks)."""
    return mark_replaced([pin], said)[0].replaced


FILLER = "Note {}: the tea is warm and the garden is quiet today, nothing else to add."


def test_a_corrected_renamed_or_moved_from_value_is_replaced_by_that_turn() -> None:
    said = [
        (51, "Big news: I moved from Leeds to Shenzhen last week. I live in Shenzhen now."),
        (62, "I left the hospital. My job is data analyst at DJI now."),
        (73, "We gave the dog a new name. My dog is Mochi now."),
        (89, "Correction: my birthday is 17 March, not the 14th."),
        (90, "更正一下，我的生日是三月十七日"),
    ]
    assert replaced_by(Pin("Leeds", 1, 1, 2, "I live in Leeds, near Hyde Park."), said) == 51
    assert replaced_by(Pin("St James's Hospital", 1, 1, 3,
                           "My job is staff nurse at St James's Hospital."), said) == 62
    assert replaced_by(Pin("Biscuit", 1, 1, 4, "My dog is Biscuit, a nosy beagle."), said) == 73
    assert replaced_by(Pin("14 March", 1, 1, 5, "My birthday is 14 March, so soon."), said) == 89
    assert replaced_by(Pin("三月十四日", 1, 1, 6, "我的生日是三月十四日"), said) == 90
    # The message a value was moved away in replaces it, though pinned from that very turn.
    assert replaced_by(Pin("Leeds", 1, 1, 51, "I moved from Leeds to Shenzhen last week."),
                       []) == 51


def test_a_value_said_many_times_in_one_clause_costs_the_clause_s_length() -> None:
    """Each repeat of a pinned value was read back to its clause's start (and the text
    after it copied): one pin on 'ORD-1 ' * 13,000 (80 KB, one clause, through MCP
    record_turn) took 7 s, growing with the square of the message."""
    pinned = [Pin("ORD-1", 1, 1, 1, "my order is ORD-1")]
    for unit, size in (("ORD-1 ", 3_400), ("isn't ORD-1 ", 1_700), ("从ORD-1", 3_000)):
        assert_linear(lambda text: mark_replaced(pinned, [(2, text)]),
                      lambda n, unit=unit: unit * n, size, unit)
    # The cue is still read back in its clause, a long one too.
    filler = " and then some more words" * 40
    assert replaced_by(pinned[0], [(2, f"I changed it{filler}, moved from ORD-1 to ORD-2")]) == 2
    assert replaced_by(pinned[0], [(2, f"I changed{filler} it from ORD-1 to ORD-2")]) is None
    assert replaced_by(pinned[0], [(2, f"it{filler} is ORD-2, not ORD-1.")]) == 2


def test_what_only_looks_like_a_replacement_is_not_one() -> None:
    biscuit = Pin("Biscuit", 1, 1, 4, "My dog is Biscuit, a nosy beagle.")
    assert replaced_by(biscuit, [(5, "My dog is sick today."), (6, "I come from Leeds."),
                                 (7, "My dog is Biscuit, still."), (3, "My dog is Rex.")]) is None
    assert replaced_by(Pin("17 March", 1, 1, 89, "my birthday is 17 March"), [
        (90, "My sister's birthday is 2 May."), (91, "我妹妹的生日是五月一日")]) is None
    assert replaced_by(Pin("Shenzhen", 1, 1, 51, "I live in Shenzhen now, in Nanshan."),
                       [(52, "I work in Shenzhen too, at DJI.")]) is None


def test_a_range_a_trip_a_start_or_a_passing_not_replaces_nothing() -> None:
    """Each was marked replaced: a current value sent as corrected misleads the model."""
    holiday = "I'm on holiday from 14 March to 20 March."
    assert replaced_by(Pin("14 March", 1, 1, 1, holiday), [(1, holiday)]) is None
    shift = "My shift is from 9am to 5pm."  # the noun, not the verb that moves a time
    assert replaced_by(Pin("9am", 1, 1, 1, shift), [(1, shift)]) is None
    started = "我从2020年3月开始在杭州工作。"
    assert replaced_by(Pin("2020年3月", 1, 1, 1, started), [(1, started)]) is None
    assert replaced_by(Pin("杭州", 1, 1, 1, "我住在杭州"),
                       [(2, "我每天从杭州坐高铁去上海上班。"), (3, "是不是杭州？")]) is None
    leeds = Pin("Leeds", 1, 1, 2, "I live in Leeds.")
    assert replaced_by(leeds, [(3, "I'm flying from Leeds to Paris on Friday."),
                               (4, "The train from Leeds to York was late."),
                               (5, "I changed my plans, I'm going from Leeds to York.")]) is None
    alice = Pin("Alice Chen", 1, 1, 2, "My sister Alice Chen lives in Leeds.")
    assert replaced_by(alice, [(3, "Not Alice Chen's fault, the train was late.")]) is None
    assert replaced_by(Pin("王小明", 1, 1, 2, "我叫王小明"), [(3, "这不是王小明的错。")]) is None


def test_a_change_verb_or_a_correction_still_replaces_the_value() -> None:
    leeds = Pin("Leeds", 1, 1, 2, "I live in Leeds.")
    assert replaced_by(leeds, [(3, "Sorry, I live in York, not Leeds.")]) == 3
    assert replaced_by(leeds, [(3, "It's not Leeds but York.")]) == 3
    assert replaced_by(leeds, [(4, "We relocated from Leeds to York.")]) == 4
    biscuit = Pin("Biscuit", 1, 1, 4, "He is called Biscuit.")
    assert replaced_by(biscuit, [(5, "We changed his name from Biscuit to Mochi.")]) == 5
    visit = Pin("14 March", 1, 1, 1, "The dentist is on 14 March.")
    assert replaced_by(visit, [(2, "They moved the dentist from 14 March to 20 March.")]) == 2
    assert replaced_by(Pin("利兹", 1, 1, 1, "我在利兹"), [(2, "我们从利兹搬到了深圳")]) == 2
    assert replaced_by(Pin("三月十四日", 1, 1, 1, "生日三月十四日"),
                       [(2, "我的生日是三月十七日，不是三月十四日")]) == 2
    assert replaced_by(Pin("杭州", 1, 1, 1, "我在杭州上班"), [(2, "我已经不在杭州了")]) == 2


def test_a_rescheduled_trip_is_a_change_and_travelling_after_the_change_verb_is_a_trip() -> None:
    """A travel word blocked the change verb: a moved flight date was sent as current."""
    flight = Pin("14 March", 1, 1, 1, "My flight is on 14 March.")
    assert replaced_by(flight, [(2, "My flight was rescheduled from 14 March to 20 March.")]) == 2
    assert replaced_by(flight, [(3, "They moved my flight from 14 March to 20 March.")]) == 3
    train = Pin("9am", 1, 1, 1, "My train is at 9am.")
    assert replaced_by(train, [(2, "My train was changed from 9am to 11am.")]) == 2
    leeds = Pin("Leeds", 1, 1, 2, "I live in Leeds.")
    assert replaced_by(leeds, [(3, "I changed my plans and I'm flying from Leeds to Paris."),
                               (4, "We moved the meeting and drove from Leeds to York.")]) is None


def test_a_replaced_pin_is_stored_and_sent_marked_with_the_turn_that_replaced_it(
    make_engine: Callable[..., Engine],
) -> None:
    """moves.jsonl re-sent "14 March" and "Biscuit" as "Details from earlier turns, kept
    verbatim" beside the corrected "17 March" and "Mochi"."""
    engine = make_engine("summary-buffer", max_tokens=300, summary_max_tokens=80)
    said = ["My dog is Biscuit, a very nosy beagle.", *[FILLER.format(i) for i in range(2, 5)],
            "We gave the dog a new name. My dog is Mochi now.",
            *[FILLER.format(i) for i in range(6, 30)]]
    for text in said:
        assert engine.run_turn(text).status == "ok"
    stored = parse_pins(engine.state.get("summary-buffer")["pinned"])
    biscuit = next(p for p in stored if p.text == "Biscuit")
    assert biscuit.replaced == 5
    facts = engine.build_context("What is my dog called?").part("facts")
    assert facts is not None
    content = facts.messages[0].content
    assert "- Biscuit (replaced in turn 5) (" in content
    assert "- Mochi (from turn 5:" in content
    (line,) = pin_lines([biscuit])
    assert line.startswith('- Biscuit (replaced in turn 5) (from turn 1: "')


def test_a_date_range_is_sent_as_two_current_values(make_engine: Callable[..., Engine]) -> None:
    """The start of "on holiday from 14 March to 20 March" was sent "replaced in turn 1"."""
    engine = make_engine("summary")
    said = ["I'm on holiday from 14 March to 20 March.",
            *[f"Filler topic number {i} is about gardening." for i in range(1, 11)]]
    for text in said:
        assert engine.run_turn(text).status == "ok"
    stored = parse_pins(engine.state.get("summary")["pinned"])
    assert {p.text: p.replaced for p in stored} == {"14 March": None, "20 March": None}
    facts = engine.build_context("When is my holiday?").part("facts")
    assert facts is not None
    assert "- 14 March, 20 March (from turn 1:" in facts.messages[0].content
