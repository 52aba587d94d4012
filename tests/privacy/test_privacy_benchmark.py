"""The privacy benchmark's corpus and its figures (benchmarks/privacy.py, section 4).

The corpus is data written by hand; these tests check it is what it claims to be
(sizes, languages, styles, valid numbers), and run a sample of it in the default
run and all of it under `-m slow`, against the issue's targets: at least 97 % of
secrets kept out of memory, at most 2 % of harmless values masked.
"""

from __future__ import annotations

import re
import unicodedata

import pytest
from bench_modules import load

corpus = load("privacy_corpus")
other_names = load("privacy_corpus_other_names")
bench = load("privacy")

STYLES = {"labelled", "unlabelled", "repeated", "split"}


@pytest.mark.parametrize(("cases", "at_least"), [
    (corpus.SENSITIVE, 150), (corpus.HARMLESS, 150),
    (other_names.SENSITIVE, 50), (other_names.HARMLESS, 50)],
    ids=["sensitive", "harmless", "other-names-sensitive", "other-names-harmless"])
def test_each_corpus_is_large_and_covers_every_style_in_both_languages(
        cases: list, at_least: int) -> None:
    assert len(cases) >= at_least
    held = {(style, lang) for style, lang, _, _ in cases}
    # Every style in English and Chinese; a few Japanese phrasings too (labelled).
    assert {(style, lang) for style in STYLES for lang in ("en", "zh")} <= held
    assert {lang for _, lang in held} <= {"en", "zh", "ja"}
    for style, _, value, messages in cases:
        assert any(value in m for m in messages[::2]) or style == "repeated", value
        assert any(value in m for m in messages), value
        if style == "split":
            assert len(messages) >= 3 and value not in messages[0]


def test_the_other_names_cases_are_new() -> None:
    # Written for issue 28, not copied from the first corpus.
    first = {(value, messages) for _, _, value, messages in corpus.SENSITIVE + corpus.HARMLESS}
    assert not first & {(value, messages) for _, _, value, messages in
                        other_names.SENSITIVE + other_names.HARMLESS}


def test_checksummed_secrets_in_the_corpus_are_valid() -> None:
    from stdnum import iban, luhn
    from stdnum.cn import ric

    checked = 0
    for _, _, value, _ in corpus.SENSITIVE:
        compact = re.sub(r"[ -]", "", unicodedata.normalize("NFKC", value))
        if re.fullmatch(r"[1-9]\d{16}[\dX]", compact) and ric.is_valid(compact):
            checked += 1
        elif re.fullmatch(r"[2-6]\d{12,18}", compact):
            assert luhn.is_valid(compact), value
            checked += 1
        elif re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{10,30}", compact):
            assert iban.is_valid(compact), value
            checked += 1
    assert checked >= 30


def test_the_harmless_look_alikes_include_luhn_valid_references() -> None:
    from stdnum import luhn

    lookalikes = [v for _, _, v, _ in corpus.HARMLESS
                  if re.fullmatch(r"\d{13,19}", v.replace(" ", ""))
                  and luhn.is_valid(v.replace(" ", ""))]
    assert len(lookalikes) >= 8


def _check(figures: object) -> None:
    assert figures.kept_out_share >= 0.97, figures.leaks  # type: ignore[attr-defined]
    assert figures.redacted_share <= 0.02, figures.redacted  # type: ignore[attr-defined]


def test_a_sample_of_the_corpus_meets_the_targets() -> None:
    figures = bench.corpus_figures(every=10)
    assert figures.sensitive >= 15 and figures.harmless >= 15
    _check(figures)


@pytest.mark.slow
def test_the_whole_corpus_meets_the_targets() -> None:
    _check(bench.corpus_figures())


def test_a_leak_and_a_masked_value_are_each_counted() -> None:
    seen = bench.Seen(sent=["user: my pin is 4471"], pins=["ORD-1 quote"])
    assert bench.leaked_into("4471", seen) == "sent"
    assert bench.leaked_into("9999", seen) is None
    masked = bench.Seen(sent=["New lines:\nuser: order ⟦card number⟧", "{\"messages\": []}"])
    assert bench.masked("4539 1488 0343 6467", ["order 4539 1488 0343 6467"], masked)


def test_help_says_the_options_and_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """`python benchmarks/privacy.py --help` ran the whole benchmark (minutes of chats) and
    printed no usage: every argument but --corpus was ignored."""
    with pytest.raises(SystemExit) as e:
        bench.main(["--help"])
    assert e.value.code == 0
    assert "--corpus" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        bench.main(["--corpsu"])
    assert e.value.code == 2
