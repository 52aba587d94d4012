"""A message that declines to keep or ask for a detail asks nobody for it.

"我不会保存卡号。" named a card, so the guard read the user's next short message as its
answer: "下午见，8443，浙A1" was masked as a card number in summaries (and "see you at 8443
then" after "I will not store your card number."). A refusal that asks for the detail all
the same, by a question or a request, is still a label: no leak opens.
"""

from __future__ import annotations

import pytest
from growth import assert_linear

from chatmem.privacy.secret_guard import SecretGuard


@pytest.mark.parametrize("said", [
    ["我不会保存卡号。", "下午见，8443，浙A1"],
    ["我不会记录你的密码。", "好的，明天8443见"],
    ["请勿提供密码。", "8443"],
    ["I will not store your card number.", "see you at 8443 then"],
    ["I won't keep your password.", "ok, tomorrow at 8443"],
    ["Please don't share your PIN.", "see you at 8443"],
    # A verb that is part of the refusal asks nothing.
    ["I won't keep your password. Don't send it here.", "ok, tomorrow at 8443"],
    ["我不会记录你的密码，也不需要提供。", "好的，明天8443见"],
    ["I won't keep your password.\n- Don't send it here.", "ok, tomorrow at 8443"],
    # A verb that sends the detail elsewhere asks nothing of the one it is said to.
    ["I won't keep your card number. Give it to the bank instead.", "see you at 8443"],
    ["I won't store your password. Please share it with your IT desk.", "ok 8443"],
    ["我不会保存卡号。直接提供给银行就行。", "8443"],
    ["我不会保存卡号，请把它交给银行。", "好的，8443见"],
], ids=["zh-card", "zh-password", "zh-do-not-give", "en-card", "en-password", "en-pin",
        "en-do-not-send", "zh-no-need-to-give", "en-do-not-send-listed", "en-to-the-bank",
        "en-please-to-it", "zh-to-the-bank", "zh-please-to-the-bank"])
def test_a_refusal_naming_a_detail_is_no_question(said: list[str]) -> None:
    assert SecretGuard().read(said) == said


@pytest.mark.parametrize(("said", "masked"), [
    (["卡号是多少？", "4111 1111 1111 1111"], "⟦card number⟧"),
    (["卡号是多少？", "8443"], "⟦card number⟧"),
    (["我不会保存卡号，能告诉我后四位吗？", "8443"], "⟦card number⟧"),
    (["我不会保存卡号，请告诉我后四位。", "8443"], "⟦card number⟧"),
    (["What is your card number?", "4111 1111 1111 1111"], "⟦card number⟧"),
    (["I won't store it, but please give me the card number", "8443"], "⟦card number⟧"),
    (["What is the door code?", "8443"], "⟦PIN or security code⟧"),
    # A request by its verb alone, with no please and no question mark.
    (["I won't store your card number. Reply with the last 4 digits", "8443"],
     "⟦card number⟧"),
    (["I won't store your card number; just send the last four digits.", "8443"],
     "⟦card number⟧"),
    (["我不会保存卡号。回复后四位", "8443"], "⟦card number⟧"),
    (["我不会保存卡号，只需提供后四位。", "8443"], "⟦card number⟧"),
    # On a line of its own, with no stop before it, or as a model's Markdown writes it.
    (["I won't store your card number\nReply with the last 4 digits", "8443"],
     "⟦card number⟧"),
    (["I won't store your card number.\n\n- **Reply** with the last 4 digits", "8443"],
     "⟦card number⟧"),
    (["我不会保存卡号\n> 回复后四位", "8443"], "⟦card number⟧"),
    # The part wanted alone, with no verb, asks for it too; so does a verb sending it to me.
    (["I won't store your card number. Just the last 4 digits.", "8443"], "⟦card number⟧"),
    (["我不会保存卡号。后四位就行。", "8443"], "⟦card number⟧"),
    (["我不会保存卡号，只要后四位。", "8443"], "⟦card number⟧"),
    (["I won't store your card number. Give it to me anyway.", "8443"], "⟦card number⟧"),
    (["我不会保存卡号，请把它发给我。", "8443"], "⟦card number⟧"),
])
def test_a_question_or_request_for_it_is_still_answered(said: list[str], masked: str) -> None:
    assert SecretGuard().read(said) == [said[0], masked]


@pytest.mark.parametrize("unit", ["\n", "\n- ", ". ", "1."])
def test_a_message_of_many_lines_or_marks_costs_time_linear_in_its_length(unit: str) -> None:
    """A request is looked for at each line's start: read from every line break on, a
    message of 5,000 blank lines took 8 s."""
    refusal = "I won't store your card number."
    assert_linear(lambda text: SecretGuard().read([text, "8443"]),
                  lambda n: refusal + unit * n, 2000, repr(unit))
