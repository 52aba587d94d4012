"""The values a secret guard follows, found in one reading of a text however many it knows
(a message of N card numbers cost N readings of it, and every later fold read it again)."""

from __future__ import annotations

import random
import re

from growth import assert_linear
from hypothesis import given
from hypothesis import strategies as st

from chatmem.privacy import followed, sensitive
from chatmem.privacy.findings import CARD, CODE, PASSWORD, Finding, merged
from chatmem.privacy.followed import Followed
from chatmem.privacy.secret_guard import SecretGuard


def _cards(count: int, seed: int = 1) -> list[str]:
    """`count` Luhn-valid card numbers."""
    rng, cards = random.Random(seed), []
    for _ in range(count):
        digits = [4] + [rng.randrange(10) for _ in range(14)]
        total = sum((d * 2 - 9 if d * 2 > 9 else d * 2) if i % 2 == 0 else d
                    for i, d in enumerate(reversed(digits)))
        cards.append("".join(map(str, [*digits, (10 - total % 10) % 10])))
    return cards


def _read_afresh(texts: list[str]) -> list[str]:
    # As a new process does: nothing found or compiled before.
    sensitive._found.cache_clear()
    followed._pattern.cache_clear()
    re.purge()
    return SecretGuard().read(texts)


def test_a_message_full_of_card_numbers_is_read_in_linear_time() -> None:
    said = _read_afresh([" ".join(_cards(50))])[0]
    assert said == " ".join(["⟦card number⟧"] * 50)
    assert_linear(lambda text: _read_afresh([text]), lambda n: " ".join(_cards(n)), 600,
                  "cards in one message")


def test_turns_that_each_held_a_card_are_re_read_in_linear_time() -> None:
    """What a fold does: re-read every turn that said a secret."""
    assert_linear(lambda text: _read_afresh(text.split("\n")),
                  lambda n: "\n".join(f"My card is {card}." for card in _cards(n)), 250,
                  "a card a turn")


def test_turns_that_each_held_a_password_are_re_read_in_linear_time() -> None:
    """Values that are no numbers: learnt one by one, each message read with all before."""
    def turns(n: int) -> str:
        words = [f"{a}-{b}-{i % 90 + 10}" for i, (a, b) in enumerate(
            (a, b) for a in ("amber", "violet", "crimson", "pale", "quiet", "iron", "salt",
                             "north", "copper", "linen") for b in range(n // 10 + 1))]
        return "\n".join(f"The wifi password is {w}. Noted: {w}." for w in words[:n])

    said = _read_afresh(turns(30).split("\n"))
    assert all(s.count("⟦password⟧") == 2 for s in said)
    assert_linear(lambda text: _read_afresh(text.split("\n")), turns, 150, "a password a turn")


def test_a_value_learnt_after_the_guard_read_is_followed_too() -> None:
    guard = SecretGuard()
    values = [f"blue-heron-{n}" for n in range(10, 30)]
    for value in values:
        guard.read([f"The wifi password is {value}."])
        assert guard.mask(f"Cabin Wi-Fi: {value.upper()}.") == "Cabin Wi-Fi: ⟦password⟧."
    assert guard.mask(" ".join(values)) == " ".join(["⟦password⟧"] * len(values))


def test_the_longest_value_said_at_a_place_is_masked_with_the_kind_learnt_first() -> None:
    found = Followed()
    for value, kind in [("Hunter2024", PASSWORD), ("hunter2024x", CODE), ("HUNTER2024", CODE),
                        ("4487 5749 1186 2520", CARD), ("5749 1186", CODE)]:
        found.add(value, kind)
    text = "hunter2024x, hunter2024, hunter2024xy, 4487-5749-1186-2520 and 57491186"
    assert [(f.kind, f.text) for f in merged(text, found.findings(text))] == [
        (CODE, "hunter2024x"), (PASSWORD, "hunter2024"), (CARD, "4487-5749-1186-2520"),
        (CODE, "57491186")]


def _one_pattern_a_value(known: dict[str, str], text: str) -> list[Finding]:
    """What the guard found before: a pattern for each value, tried at every position."""
    found = []
    for value, kind in known.items():
        if re.fullmatch(r"[\d\s()+-]+", value):
            body = r"[\s()+-]?".join(re.escape(d) for d in re.sub(r"\D", "", value))
            pattern = re.compile(rf"(?=((?<![\d]){body}(?![\d])))")
        else:
            start = r"(?<![A-Za-z0-9])" if value[0].isascii() and value[0].isalnum() else ""
            end = r"(?![A-Za-z0-9])" if value[-1].isascii() and value[-1].isalnum() else ""
            pattern = re.compile(f"(?=({start}{re.escape(value)}{end}))", re.IGNORECASE)
        found += [Finding(kind, m.start(), m.start() + len(m.group(1)), m.group(1))
                  for m in pattern.finditer(text)]
    return merged(text, found)


# Letters IGNORECASE reads as others (ſ as s, the Kelvin sign as k, ı and İ as i), word
# edges, digit groups, Chinese.
_LETTERS = "aAbS1 9-(#密码éſİıkK"
_VALUES = st.text(_LETTERS, min_size=3, max_size=6).map(str.strip).filter(
    lambda v: len(v) >= 3 and not re.fullmatch(r"[\s()+-]+", v))


@given(st.lists(st.tuples(_VALUES, st.sampled_from([CARD, CODE, PASSWORD])), min_size=1,
                max_size=6),
       st.lists(st.one_of(st.text(_LETTERS, max_size=3), st.integers(0, 5)), max_size=10),
       st.booleans())
def test_every_occurrence_of_every_value_is_found_as_one_pattern_a_value_finds_it(
        values: list[tuple[str, str]], pieces: list[str | int], compiled: bool) -> None:
    known: dict[str, str] = {}
    for value, kind in values:
        known.setdefault(value, kind)
    spelled = list(known)
    text = "".join(p if isinstance(p, str) else [str.upper, str.lower, str][p % 3](
        spelled[p % len(spelled)]) for p in pieces)
    found = Followed()
    for value, kind in known.items():
        found.add(value, kind)
    # Values never said, after which those above are matched by a compiled pattern, not
    # looked for one by one.
    for n in range(followed._UNCOMPILED if compiled else 0):
        found.add(f"zz{n}qq", CODE)
    assert merged(text, found.findings(text)) == _one_pattern_a_value(known, text)
