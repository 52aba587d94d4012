"""The summarizer: prompt, one call per update, clipping, word diffs, the scripted rule."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from cli_runner import invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from chatmem.config.loader import load_settings
from chatmem.config.schema import check_prompt
from chatmem.config.sections import SummarySection
from chatmem.errors import ConfigError, ProviderResponseError
from chatmem.graphemes import grapheme_start
from chatmem.memory.context import Message
from chatmem.memory.summarizer import (
    DEFAULT_PROMPT,
    clip,
    diff_size,
    diff_tokens,
    diff_unit,
    format_lines,
    strip_clip_marker,
    summarize,
    summary_request,
    word_diff,
)
from chatmem.plugins import load_registries
from chatmem.providers.scripted import RULES, ScriptedProvider
from chatmem.providers.scripted_summary import extractive_summary
from chatmem.tokens import counter_for_model

COUNTER = counter_for_model(None, exact=True)


def msg(role: str, content: str) -> Message:
    return Message(role, content, COUNTER.count_message(role, content))


def test_default_prompt_has_both_placeholders_and_asks_for_verbatim_details() -> None:
    assert check_prompt(DEFAULT_PROMPT) == DEFAULT_PROMPT
    assert "exactly as written" in DEFAULT_PROMPT and "language" in DEFAULT_PROMPT


@pytest.mark.parametrize(("prompt", "missing"), [
    ("Summarize {new_lines}", "{summary}"),
    ("Summary so far: {summary}", "{new_lines}"),
    ("Summarize please", "{summary} and {new_lines}"),
])
def test_a_prompt_without_its_placeholders_is_a_config_error(prompt: str, missing: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_prompt(prompt, "config.toml: key 'summary.prompt'")
    assert str(info.value) == (
        "config.toml: key 'summary.prompt': the summary prompt must contain {summary} and"
        f" {{new_lines}} (missing {missing})"
    )


def test_request_fills_placeholders_without_format_so_other_braces_survive() -> None:
    prompt = "JSON {\"a\": 1}\nWas: {summary}\nNew:\n{new_lines}"
    lines = [msg("user", "line one\nline two"), msg("assistant", "ok")]
    request = summary_request(prompt, "", lines)
    assert request == [{"role": "user", "content":
                        "JSON {\"a\": 1}\nWas: (no summary yet)\nNew:\nuser: line one line two\n"
                        "assistant: ok"}]


def test_summarize_makes_exactly_one_call_and_labels_the_model() -> None:
    provider = ScriptedProvider()
    draft = summarize(provider, COUNTER, "- earlier point",
                      [msg("user", "My order is ORD-7731. Thanks."), msg("assistant", "noted")])
    assert provider.calls_by_purpose == {"summary": 1}
    assert draft.text == "- earlier point\n- My order is ORD-7731."
    assert draft.model == "scripted:scripted" and not draft.clipped


def test_an_empty_summary_reply_is_an_error_not_an_erased_summary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(RULES, "summary", lambda messages: "   ")
    with pytest.raises(ProviderResponseError):
        summarize(ScriptedProvider(), COUNTER, "old", [msg("user", "hi")])


def test_long_output_loses_its_oldest_lines_behind_a_marker_that_counts() -> None:
    lines = [f"- point {i}: order ORD-77{i:02d} costs {i} EUR." for i in range(1, 30)]
    text = "\n".join(lines)
    clipped, was = clip(text, 40, COUNTER)
    marker = "[…older part clipped to fit 40 tokens]\n"
    assert was and clipped.startswith(marker)
    assert COUNTER.count_text(clipped) <= 40  # the marker's tokens included
    kept = clipped.removeprefix(marker)
    assert text.endswith("\n" + kept)  # whole lines, the newest ones
    assert kept.splitlines()[-1] == lines[-1] and len(kept.splitlines()) >= 2
    assert clip("short", 40, COUNTER) == ("short", False)


def test_a_clipped_summary_is_never_clipped_again_into_a_nested_marker() -> None:
    text = "\n".join(f"- 第{i}天：预算{i}千元，航班MU51{i:02d}，住在湖景花园酒店。"
                     for i in range(1, 9))
    once, _ = clip(text, 60, COUNTER)
    newest = "- 第九天：预算九千元，航班MU5109，坐高铁去上海外滩吃本帮菜。"
    twice, was = clip(once + "\n" + newest, 60, COUNTER)
    assert was and twice.count("[…") == 1 and twice.startswith("[…older part clipped to fit 60")
    assert twice.endswith("\n" + newest)
    # The end-of-line markers older versions stored, even one cut by a later clip, go too.
    old = "- 三月十五日出发，航班MU5137，住在湖景花园 […clip […clipped to 66 tokens]\n- 上海"
    assert strip_clip_marker(old) == "- 三月十五日出发，航班MU5137，住在湖景花园\n- 上海"
    assert strip_clip_marker(twice).count("[…") == 0


def test_one_line_too_long_keeps_its_end_and_never_starts_inside_an_id() -> None:
    line = ("- 我叫王小明，预算是五千元，三月十五日出发，航班MU5137，住在湖景花园酒店，"
            "第二天坐高铁去上海，看外滩夜景，然后吃本帮菜，订单号ORD-7731。")
    clipped, was = clip(line, 30, COUNTER)
    assert was and COUNTER.count_text(clipped) <= 30
    kept = clipped.removeprefix("[…older part clipped to fit 30 tokens]\n")
    assert kept.startswith("…") and line.endswith(kept[1:])
    assert kept.endswith("ORD-7731。")
    english = "- " + " ".join(f"ID-{i:04d}" for i in range(60))
    kept = clip(english, 30, COUNTER)[0].split("\n", 1)[1]
    assert kept.startswith("…ID-") or kept.startswith("… ID-")


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=1, max_size=300), st.integers(min_value=12, max_value=60))
def test_clipped_text_always_fits(text: str, limit: int) -> None:
    clipped, _ = clip(text, limit, COUNTER)
    assert COUNTER.count_text(clipped) <= limit


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_characters="\n[…"), min_size=1, max_size=40),
                min_size=1, max_size=12),
       st.integers(min_value=16, max_value=60))
def test_clipping_keeps_the_newest_text_and_one_marker_from_a_character_start(
        lines: list[str], limit: int) -> None:
    text = "\n".join(lines).strip()
    clipped, was = clip(text, limit, COUNTER)
    again, _ = clip(clipped + "\nnew", limit, COUNTER)
    assert again.count("[…") <= 1
    if was and clipped.count("\n"):
        kept = clipped.split("\n", 1)[1]
        assert text.endswith(kept.removeprefix("…"))
        assert grapheme_start(text, len(text) - len(kept.removeprefix("…")))


@pytest.mark.parametrize(("text", "limit"), [
    ("我们的旅行国家顺序是 " + "🇯🇵🇨🇳🇺🇸🇫🇷🇩🇪🇮🇹🇪🇸🇰🇷" * 3, 13),  # no half of 🇰🇷 left
    (unicodedata.normalize("NFD", "Renée Zoë àéüöñ") * 8, 8),  # no accent without its letter
    ("👨\u200d👩\u200d👧\u200d👦 " * 4 + "去韩国", 20),
    ("👍🏽" * 30, 12),
    ("旅行 हिन्दी " * 30, 5),
])
def test_a_clipped_line_starts_where_a_character_a_reader_sees_starts(text: str,
                                                                       limit: int) -> None:
    clipped, was = clip(text, limit, COUNTER)
    tail = clipped.split("\n")[-1].removeprefix("…")
    assert was and text.endswith(tail) and COUNTER.count_text(clipped) <= limit
    assert grapheme_start(text, len(text) - len(tail)), ascii(tail)


@pytest.mark.parametrize(("text", "limit", "tail"), [
    ("- 고객 김민준 님이 주문 ORD-7731 을 서울 강남구 역삼동 지점으로 받기를 원하며 환불 요청", 42,
     "…강남구 역삼동 지점으로 받기를 원하며 환불 요청"),
    ("- Kunde Müller aus Zürich möchte die Rückerstattung für Bestellung ORD-7731 bis Freitag", 21,
     "…Bestellung ORD-7731 bis Freitag"),
    ("- Клиент Иванов из Москвы просит вернуть деньги за заказ ORD-7731 до пятницы", 30,
     "…вернуть деньги за заказ ORD-7731 до пятницы"),
])
def test_a_clipped_line_never_starts_inside_a_word_of_any_spaced_script(
        text: str, limit: int, tail: str) -> None:
    assert clip(text, limit, COUNTER)[0].split("\n")[-1] == tail


_SPACED_WORDS = st.text(st.sampled_from("aéüßжы서울강남αλ0-7"), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(st.lists(_SPACED_WORDS, min_size=2, max_size=40), st.integers(min_value=12, max_value=40))
def test_a_clipped_line_of_spaced_words_starts_at_a_word(words: list[str], limit: int) -> None:
    text = " ".join(words)
    clipped, was = clip(text, limit, COUNTER)
    tail = clipped.split("\n")[-1].removeprefix("…")
    if was and tail and " " in tail:  # one word too long to keep is cut where a character starts
        assert text[len(text) - len(tail) - 1] == " ", tail


def test_chinese_and_thai_lines_may_start_at_any_character() -> None:
    text = "我们五月去杭州旅行然后去上海看朋友再回北京" * 4
    tail = clip(text, 20, COUNTER)[0].split("\n")[-1]
    assert tail.startswith("…") and len(tail) > 5 and text.endswith(tail[1:])


def test_a_line_of_one_long_word_keeps_its_newest_characters() -> None:
    text = "- " + "x" * 400
    tail = clip(text, 21, COUNTER)[0].split("\n")[-1]
    assert tail.startswith("…x") and text.endswith(tail[1:])


def test_scripted_rule_keeps_user_first_sentences_verbatim_in_any_language() -> None:
    request = summary_request(DEFAULT_PROMPT, "- 我叫王小明", [
        msg("user", "我的订单号是ORD-7731，预算五千元。五月去杭州"),
        msg("assistant", "好的"),
    ])
    assert RULES["summary"](request) == "- 我叫王小明\n- 我的订单号是ORD-7731，预算五千元。"


def test_cjk_is_diffed_by_character_so_one_amount_is_not_the_whole_line() -> None:
    runs = word_diff("预算五千元，五月去杭州", "预算一笔钱，五月去杭州")
    assert runs == [("=", "预算"), ("-", "五千元"), ("+", "一笔钱"), ("=", "，五月去杭州")]
    assert diff_size("预算五千元", "预算一笔钱") == (3, 3)


def test_latin_is_diffed_by_word() -> None:
    assert word_diff("order ORD-7731 ships Monday", "order ships Friday") == [
        ("=", "order"), ("-", " ORD-7731"), ("=", " ships "), ("-", "Monday"), ("+", "Friday"),
    ]
    assert diff_tokens("ORD-7731, 杭州 a@b.com") == [
        "ORD-7731", ",", " ", "杭", "州", " ", "a@b.com"]
    assert diff_size("Paid $120 on 2026-05-01.", "Paid.") == (0, 3)


@pytest.mark.parametrize(("old", "new", "size", "unit"), [
    # A line of both: 14 characters and 2 words (6, ORD-776) read "+16 characters".
    ("- 第5件事：我住在杭州", "- 第5件事：我住在杭州\n- 第6件事：我的订单号是 ORD-776，金额五千元",
     (16, 0), "characters and words"),
    ("- We fly to Hangzhou.", "- We fly to Hangzhou to meet 王小明.", (5, 0),
     "characters and words"),
    ("- 预算五千元。", "- 预算六千元。", (1, 1), "characters"),
    ("- Budget 5000 EUR.", "- Budget 6000 EUR, order ORD-776.", (3, 1), "words"),
])
def test_the_diff_unit_names_what_the_count_counted(old: str, new: str, size: tuple[int, int],
                                                    unit: str) -> None:
    assert diff_size(old, new) == size
    assert diff_unit(old, new) == unit


@given(st.text(max_size=80), st.text(max_size=80))
def test_word_diff_reconstructs_both_versions(old: str, new: str) -> None:
    runs = word_diff(old, new)
    assert "".join(t for op, t in runs if op != "+") == old
    assert "".join(t for op, t in runs if op != "-") == new


def test_config_prompt_without_placeholders_names_the_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[summary]\nprompt = "Summarize: {new_lines}"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(config, env={})
    assert str(info.value) == (
        f"{config}: key 'summary.prompt': the summary prompt must contain {{summary}} and"
        " {new_lines} (missing {summary})"
    )


def test_config_summary_table_is_read_and_checked(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[summary]\nprompt = "{summary} + {new_lines}"\nmodel = "small"\n'
                      "drift_guard = false\n", encoding="utf-8")
    settings = load_settings(config, env={})
    # [summary] model is the old name of helper_model: one setting, read from either place.
    assert settings.summary == SummarySection(prompt="{summary} + {new_lines}", drift_guard=False)
    assert settings.helper_model == "small"
    assert str(settings.source_of("helper_model")) == str(config)
    assert load_settings(env={}).summary == SummarySection()
    # A name no plugin could have is refused as the file loads (one a plugin could have,
    # `cheap`, is refused where it is used: tests/cli/test_plugin_failures.py).
    config.write_text('[summary]\nprovider = "cheap 1"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(config, env={}, registered=load_registries())
    assert str(info.value) == (
        f"{config}: key 'summary.provider' must be one of auto, local, openai, scripted,"
        " got 'cheap 1'"
    )
    config.write_text("[summary]\ndrift_guard = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"key 'summary.drift_guard' must be true or false"):
        load_settings(config, env={})


def test_chat_with_a_bad_summary_prompt_exits_2_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[summary]\nprompt = "no placeholders"\n', encoding="utf-8")
    result = invoke("chat", "--config", str(config), "--provider", "scripted",
                    "--db", str(tmp_path / "c.db"), input="hi\n")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: {config}: key 'summary.prompt': the summary prompt must contain {{summary}}"
        " and {new_lines} (missing {summary} and {new_lines})"
    )
    assert not (tmp_path / "c.db").exists()


def test_a_fenced_code_block_keeps_its_lines_and_indentation() -> None:
    """Every message's whitespace was folded into one line: Python's indentation and
    YAML's nesting reached the summarizer flattened."""
    code = ("Our compose file:\n\n```yaml\nservices:\n  worker:\n    image: w:1.14.2\n```\n"
            "Looks   fine?\nuser: not a message")
    lines = format_lines([Message("user", code, 0), Message("assistant", "Yes.\n\nIt is.", 0)])
    assert lines.splitlines() == [
        "user: Our compose file:", "  ```yaml", "  services:", "    worker:",
        "      image: w:1.14.2", "  ```", "  Looks fine? user: not a message",
        "assistant: Yes. It is."]
    # The scripted rule still reads each new message's first sentence, whole.
    points = extractive_summary(
        [{"role": "user", "content": f"Current summary:\n- a point\n\nNew lines:\n{lines}"}])
    assert points.splitlines() == ["- a point", "- Our compose file: ```yaml services: worker: "
                                   "image: w:1.14.2 ``` Looks fine?"]


@pytest.mark.parametrize("reply", [
    lambda request: request,  # the whole prompt
    lambda request: "Sure!\n" + request.split("\n", 1)[1],  # its second line on
    lambda request: request.upper().replace("\n", "  \n"),
])
def test_a_reply_repeating_the_prompt_is_no_summary(
        monkeypatch: pytest.MonkeyPatch, reply) -> None:
    """Stored as summary v1 ("+139 words"): the instructions and a transcript of the lines,
    sent as memory every turn, each later echo holding the previous one."""
    monkeypatch.setitem(RULES, "summary", lambda messages: reply(messages[-1]["content"]))
    with pytest.raises(ProviderResponseError, match="repeated its instructions"):
        summarize(ScriptedProvider(), COUNTER, "", [msg("user", "我叫王小明，订单号 ORD-7731")])


def test_a_summary_may_open_with_the_prompts_headings_or_quote_its_lines() -> None:
    from chatmem.memory.summarizer import echoes_prompt

    lines = format_lines([msg("user", "Keep every number exactly as written, please")])
    assert not echoes_prompt(DEFAULT_PROMPT, "Current summary:\nThe user asked for care.")
    assert not echoes_prompt(DEFAULT_PROMPT, lines)
    rule = "用一两句话总结对话，保留所有数字、日期和名字，不要遗漏任何细节。"
    custom = f"{rule}\n{{summary}}\n{{new_lines}}"
    assert echoes_prompt(custom, f"{rule}\n王小明")
    assert not echoes_prompt(custom, "王小明的订单号是 ORD-7731。")
