"""The guard that follows a secret across messages, in any role (issue 19, finding 3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmem.privacy import secret_guard, sensitive
from chatmem.privacy.findings import CARD, CODE, PASSWORD, masked
from chatmem.privacy.secret_guard import SecretGuard


def test_a_secret_the_assistant_repeats_is_masked_in_its_reply() -> None:
    guard = SecretGuard()
    said = guard.read(["The cabin wifi password is blue-heron-42.",
                       "Cabin Wi-Fi: blue-heron-42. Got it."])
    assert said == ["The cabin wifi password is ⟦password⟧.", "Cabin Wi-Fi: ⟦password⟧. Got it."]
    assert guard.known == {"blue-heron-42": PASSWORD}
    # Later, in another batch, in any role and any case.
    assert guard.mask("BLUE-HERON-42 worked on the laptop") == "⟦password⟧ worked on the laptop"


def test_a_followed_number_is_found_with_any_spacing_and_never_inside_a_longer_one() -> None:
    guard = SecretGuard()
    guard.read(["My card is 4487 5749 1186 2520."])
    assert guard.mask("Booking with 4487574911862520 now") == "Booking with ⟦card number⟧ now"
    assert guard.mask("ref 94487574911862520") == "ref 94487574911862520"


@pytest.mark.parametrize(("messages", "value", "kind"), [
    (["I need to give you my locker code.", "Sure, what is it?", "4399"], "4399", CODE),
    (["Let me tell you the wifi password.", "Go ahead.", "violet-anchor-63"],
     "violet-anchor-63", PASSWORD),
    (["Passphrase for the backup drive is next.", "Okay.", "paper tiger crimson lake"],
     "paper tiger crimson lake", PASSWORD),
    (["I'll tell you the door code.", "What is it?", "It's 1847."], "1847", CODE),
    (["Can you suggest a new PIN?", "How about 8812? It's not a date."], "8812", CODE),
    (["验证码刚收到。", "是多少？", "624051"], "624051", CODE),
    (["帮我想一个新的取款密码。", "可以用9630，不是生日也不是连号。"], "9630", PASSWORD),
    # The label names the credential otherwise: a wifi key, a combo, an unlock code.
    (["I'll send you the wifi key next.", "OK.", "Mesa!Verde8"], "Mesa!Verde8", PASSWORD),
    (["Here's the combo for the shed padlock:", "Go ahead.", "2-8-1-9"], "2-8-1-9", CODE),
    (["What's my tablet's unlock code again?", "Tell me.", "551902"], "551902", CODE),
    (["下一条是保险柜的开柜码。", "好的。", "778899"], "778899", CODE),
    (["无线网的钥匙发你。", "好。", "Lm84xQ2z"], "Lm84xQ2z", PASSWORD),
])
def test_a_value_answering_a_label_in_the_message_before_is_the_secret(
        messages: list[str], value: str, kind: str) -> None:
    guard = SecretGuard()
    said = guard.read(messages)
    assert all(value not in text for text in said)
    assert guard.known[value] == kind


@pytest.mark.parametrize("messages", [
    ["Here is the booking reference.", "Ready.", "4539 1488 0343 6467", "Saved."],
    ["How long should a password be?", "At least 12 characters, ideally a passphrase."],
    ["支付密码要几位？", "一般是6位数字。"],
    ["My password expired.", "Do you want to reset it?", "Yes please."],
    ["What's the gate code?", "It is on the card the host sent."],
    ["What's the zip code there?", "94107"],
    ["The confirmation code for the airline:", "Go on.", "Q7HT9K"],
])
def test_harmless_answers_after_a_label_stay_as_they_were(messages: list[str]) -> None:
    guard = SecretGuard()
    assert guard.read(messages) == messages
    assert guard.known == {}


def test_a_number_a_label_named_harmless_stays_harmless_where_it_recurs() -> None:
    guard = SecretGuard()
    guard.read(["Here is the booking reference.", "Ready.", "4539 1488 0343 6467"])
    assert guard.mask("The hotel confirmed 4539 1488 0343 6467.") == (
        "The hotel confirmed 4539 1488 0343 6467.")
    # Said as a card elsewhere, it is one.
    guard.read(["Pay with my card 4539 1488 0343 6467."])
    assert guard.known["4539 1488 0343 6467"] == CARD


_SECRETS = st.sampled_from([
    ("My locker code is {v}.", st.from_regex(r"[0-9]{4,6}", fullmatch=True)),
    ("我的密码是{v}。", st.from_regex(r"[a-z]{4,8}[0-9]{2,4}", fullmatch=True)),
    ("The wifi password is {v}.", st.from_regex(r"[a-z]{3,6}-[a-z]{3,6}-[0-9]{2}",
                                                fullmatch=True)),
])


@given(_SECRETS.flatmap(lambda t: st.tuples(st.just(t[0]), t[1])),
       st.lists(st.sampled_from(["OK, {v}.", "Noted: {v}", "记下了{v}。", "({v}) again",
                                 "Nothing to see here."]), min_size=1, max_size=4))
def test_once_found_a_secret_never_reaches_a_later_message(
        said: tuple[str, str], later: list[str]) -> None:
    template, value = said
    guard = SecretGuard()
    texts = [template.format(v=value), *(t.format(v=value) for t in later)]
    assert all(value not in text for text in guard.read(texts))
    assert all(value not in guard.mask(text) for text in texts)


_MESSAGES = st.sampled_from([
    "I need to give you my locker code.", "What is it?", "4399", "It's 1847.",
    "Here is the booking reference.", "4539 1488 0343 6467", "My card is 4487 5749 1186 2520.",
    "The wifi password is blue-heron-42.", "violet-anchor-63", "paper tiger crimson lake",
    "验证码是多少？", "624051", "记下了4399。", "Nothing to see here.",
    "Sure, and for the record the locker 4399 is on the second floor next to the stairs, "
    "with the gym bag in it.",
    "我们五月去杭州旅行，预算五千元，门禁码和房间号都在确认邮件里，到了以后再看，先安排第一天的行程，"
    "上午游西湖，下午去灵隐寺。",
])


def _read_one_by_one(texts: list[str]) -> tuple[list[str], dict[str, str]]:
    """What SecretGuard.read does, spelt out with the public findings(): learn from every
    message, each read after the two before it, then mask each with all learnt."""
    guard = SecretGuard()
    out: list[str] = []
    for _ in range(2):
        out, context = [], []
        for text in texts:
            found = guard.findings(text, context)
            guard.learn(found)
            out.append(masked(text, found))
            context = [*context[-1:], text]
    return out, guard.known


@given(st.lists(_MESSAGES, max_size=8))
def test_reading_a_batch_finds_what_reading_message_by_message_finds(texts: list[str]) -> None:
    guard = SecretGuard()
    assert (guard.read(texts), guard.known) == _read_one_by_one(texts)


def test_a_batch_works_out_each_label_once_and_none_before_a_long_message(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The label regexes are most of the guard's cost on every turn of entity and summary.
    looked_at: list[str] = []

    def counted(text: str) -> str | None:
        looked_at.append(text)
        return label_of(text)

    label_of = secret_guard._label_of
    monkeypatch.setattr(secret_guard, "_label_of", counted)
    first, second, third = (f"Message {n} is long: no label before it is read, since it goes "
                            "on far past what a bare answer to a label could be." for n in "ABC")
    texts = ["What is the door code?", "It's 1847.", "Fine.", first, second, third, "Thanks."]
    said = SecretGuard().read(texts)
    assert "1847" not in said[1]
    # "Thanks." reads the two before it; no message reads the first long one.
    assert sorted(looked_at) == sorted(["What is the door code?", "It's 1847.", second, third])


# -- Chinese phrasings whose English twins were caught (memory attacks, finding 3) -------


@pytest.mark.parametrize(("message", "shown"), [
    ("密码改为Hunter2024x", "密码改为⟦password⟧"),
    ("我的邮箱密码改成了Hunter2024x", "我的邮箱密码改成了⟦password⟧"),
    ("把密码设成Hunter2024x了", "把密码设成⟦password⟧了"),
    ("路由器密码换成Hunter2024x，记一下", "路由器密码换成⟦password⟧，记一下"),
    ("Hunter2024x是我的密码", "⟦password⟧是我的密码"),
    ("我的密码是 天王盖地虎", "我的密码是 ⟦password⟧"),
    ("暗号是天王盖地虎。", "暗号是⟦password⟧。"),
    ("口令：芝麻开门", "口令：⟦password⟧"),
    ("口令：天王盖地虎9527", "口令：⟦password⟧"),
    ("新口令改成宝塔镇河妖，别告诉别人", "新口令改成⟦password⟧，别告诉别人"),
    # Sentences about a password name none.
    ("公司要求密码每90天换一次。", "公司要求密码每90天换一次。"),
    ("我忘了密码", "我忘了密码"),
    ("支付密码是6位数字。", "支付密码是6位数字。"),
    ("密码是什么？", "密码是什么？"),
    ("密码改成什么好？", "密码改成什么好？"),
    ("密码是对的，但是登不上", "密码是对的，但是登不上"),
    ("密码为空", "密码为空"),
    ("这是我的密码本", "这是我的密码本"),
    ("WiFi是我们家的密码问题", "WiFi是我们家的密码问题"),
])
def test_a_chinese_password_is_masked_as_its_english_twin_is(message: str, shown: str) -> None:
    guard = SecretGuard()
    assert guard.read([message]) == [shown]
    assert guard.mask(message) == shown


@pytest.mark.parametrize(("message", "shown"), [
    ("I changed my password to Hunter2024x", "I changed my password to ⟦password⟧"),
    ("I set the wifi password to Hunter2024x.", "I set the wifi password to ⟦password⟧."),
    ('Updated our vpn password to "correct horse battery"',
     'Updated our vpn password to "⟦password⟧"'),
    ("Hunter2024x is my password", "⟦password⟧ is my password"),
    ("ok so 'Tr0ub4dor&3' was my old password", "ok so '⟦password⟧' was my old password"),
    # Sentences about a password name none.
    ("I changed my password to something stronger", "I changed my password to something "
                                                     "stronger"),
    ("1Password is my password manager", "1Password is my password manager"),
    ("version 2.4.1 is my pin", "version 2.4.1 is my pin"),
    ("Set the password to expire every 90 days", "Set the password to expire every 90 days"),
])
def test_an_english_password_changed_or_named_after_its_value_is_masked(message: str,
                                                                       shown: str) -> None:
    """The twins of the Chinese cases above: neither shape was caught in English either."""
    assert SecretGuard().read([message]) == [shown]
    assert sensitive.redact(message) == shown


@pytest.mark.parametrize("messages", [
    ["Should I pin the psycopg2 version?", "Port 8443 is set for staging."],
    ["Yes, pin it in requirements.", "Which port?", "8443"],
    ["Can you pin this message?", "Done: 4471 is on top."],
    ["Should I pin psycopg2?", "Yes, 2931 builds broke without it."],
    ["We should pin to the old release.", "Fine, 5512 it is."],
    ["Pin the version, then pin them all down.", "OK.", "7710"],
    ["I pinned dependency versions.", "4471"],
    ["Pinning helps.", "It's 8812."],
])
def test_pin_the_verb_names_no_secret(messages: list[str]) -> None:
    """"pin the version", "pin it" ask for no PIN: the next number is no PIN (it was
    masked, and then wherever it recurred)."""
    guard = SecretGuard()
    assert guard.read(messages) == messages
    assert guard.known == {}


@pytest.mark.parametrize(("messages", "value"), [
    (["What's the PIN for the card?", "4471"], "4471"),
    (["Send me the pin code.", "It's 5521."], "5521"),
    (["I'll tell you my pin.", "OK.", "8812"], "8812"),
    (["my pin is 1234"], "1234"),
    (["Pin: 4471"], "4471"),
    (["Should I use the pin 7331 on the back door?"], "7331"),
    (["我的PIN码是1986。"], "1986"),
    (["暗証番号は1234です。"], "1234"),
    (["门的PIN是4096。"], "4096"),
])
def test_pin_the_noun_still_names_one(messages: list[str], value: str) -> None:
    guard = SecretGuard()
    assert all(value not in text for text in guard.read(messages))
    assert guard.known[value] == CODE


def test_a_pinned_version_leaves_the_port_said_later_in_the_summary(make_engine) -> None:
    """The reviewer's replay: "pin" was a PIN label, so the staging port became a PIN and
    the user's own "production listens on 8443" reached the summarizer masked."""
    engine = make_engine("summary")
    for user, reply in [("Should I pin the psycopg2 version?", "Yes, pin it in requirements."),
                        ("Which port does staging listen on?", "Port 8443 is set for staging."),
                        ("And production listens on 8443 as well, behind the load balancer.",
                         "Fine.")]:
        engine.replay_turn(user, reply)
    summary = engine.store.memory.summaries(engine.session.id)[-1].text
    assert "listens on 8443" in summary
    assert "⟦" not in summary


@pytest.mark.parametrize("messages", [
    ["The alarm code is next.", "Which port does staging listen on?",
     "Port 8443 is set for staging."],
    ["门禁码等下发你。", "测试环境用哪个端口？", "测试环境用8443端口。"],
])
def test_a_sentence_after_a_message_between_answers_that_message_not_the_label(
        messages: list[str]) -> None:
    """Two messages back a label is answered by the value alone ("Go ahead." then "1847"):
    a sentence there is about the message in between."""
    guard = SecretGuard()
    assert guard.read(messages) == messages
    assert guard.findings(messages[2], messages[:2]) == []


@pytest.mark.parametrize("messages", [
    ["I'll tell you the alarm code for when you house-sit.", "Sure, go ahead.",
     "4096 then press #"],
    ["The alarm code, for the house-sit.", "OK.", "OK: 4096 (press enter after)"],
    ["门禁码等下发你。", "好的，请说。", "4096然后按#"],
])
def test_an_acknowledgement_in_between_leaves_the_label_answered(messages: list[str]) -> None:
    """Only a question in between is what a sentence answers: after "Sure, go ahead." the
    code and its instructions are still the label's value."""
    said = SecretGuard().read(messages)
    assert "4096" not in said[2] and "⟦PIN or security code⟧" in said[2]


def test_a_bare_value_past_a_message_and_a_sentence_next_to_a_label_answer_it() -> None:
    guard = SecretGuard()
    said = guard.read(["The alarm code is next.", "Which port does staging listen on?", "8443",
                       "What's the door code?", "Try 7719 then press the bell."])
    assert said[2] == "⟦PIN or security code⟧"
    assert "7719" not in said[4]


@pytest.mark.parametrize("messages", [
    # A label whose message gave its value asks for nothing more.
    ["我的手机号是13800138000。", "好的。", "我的车牌号是沪A·12345。", "好的。"],
    ["My phone number is 415-555-0134.", "OK.", "My plate is ABC·12345!", "OK."],
    ["我的银行卡号是6222 0212 3456 7890 128。", "记下了。", "我家门牌是305号！"],
    # A number a full stop ends, "." or "。", states something; it answers no label.
    ["我把手机号发你。", "好的。", "我的车牌号是沪A·12345。", "好的。"],
    ["I will send you my phone number.", "OK.", "My plate is ABC 12345.", "OK."],
])
def test_a_number_after_a_label_already_answered_or_ending_a_statement_stays(
        messages: list[str]) -> None:
    said = SecretGuard().read(messages)
    assert said[2:] == messages[2:]


@pytest.mark.parametrize(("messages", "value"), [
    (["我把手机号发你。", "好的。", "是13800138000。"], "13800138000"),
    (["验证码刚收到。", "是多少？", "624051。"], "624051"),
    (["帮我想一个新的取款密码。", "就用9630吧！"], "9630"),
    (["I'll tell you the door code.", "What is it?", "It's 1847."], "1847"),
])
def test_a_value_after_its_label_is_still_found_in_full_width_punctuation(
        messages: list[str], value: str) -> None:
    assert all(value not in text for text in SecretGuard().read(messages))


@pytest.mark.parametrize("messages", [
    ["我不会保存卡号。第12天行程已更新。", "下午3点半见Bob，端口8443，浙A10187。"],
    ["我不会保存卡号。第12天行程已更新。", "我住在杭州，第5天去西湖，2026年5月14日出发。"],
    ["I won't keep your card number.", "Meet Bob at port 8443 then the lobby."],
    ["I won't keep your card number.", "Room 1204 then, see you at 3pm."],
    ["What is the door code?", "测试环境用8443端口，别的还没定"],
])
def test_a_number_its_own_sentence_names_answers_no_label(messages: list[str]) -> None:
    """The long catch-up's "端口⟦card number⟧": after the assistant's "我不会保存卡号。" the
    one number of a short plan (a port, a year, a room) was read as the card asked for,
    and then followed into every later message."""
    guard = SecretGuard()
    assert guard.read(messages) == messages
    assert guard.known == {}


def test_the_port_in_a_plan_after_a_card_refusal_reaches_the_summary(make_engine) -> None:
    engine = make_engine("summary")
    for user, reply in [("我的银行卡号是 6222 0202 0000 0187，别告诉别人。",
                         "我不会保存卡号。行程已更新。"),
                        ("下午3点半见Bob，端口8443，浙A10187。", "好的。")]:
        engine.replay_turn(user, reply)
    summary = engine.store.memory.summaries(engine.session.id)[-1].text
    assert "端口8443" in summary
