"""A guard that follows a secret from message to message, whoever says it.

One message alone cannot always show a secret: the user says "I'll give you the
door code" and then only "1847"; the assistant answers "what's a good PIN?" with
"How about 8812?"; the user says "my wifi password is blue-heron-42" and the
assistant repeats "Cabin Wi-Fi: blue-heron-42." A SecretGuard reads a
conversation's messages in order, finds what chatmem.privacy.sensitive finds in
each, plus:

- an answer to a label: a short message right after one naming a secret ("the
  alarm code, for when you house-sit:", "验证码是多少？") holds that secret when
  it is the value alone or the one code-like word in it; a message after the one
  right after it ("Go ahead.", "是多少？") only when it is the value alone: a
  sentence there answers the message in between ("Which port does staging
  listen on?" then "Port 8443 is set for staging.");
- every later occurrence of a value found sensitive before, in any role and with
  any spacing of its digits ("4487574911862520" after "4487 5749 1186 2520").

A label names harmless numbers too: after "here is the booking reference", a bare
Luhn-valid number is not a card.

The guard keeps the values it found only in memory, for the messages it is
given: what earlier turns found is re-read from those turns (see
chatmem.memory.sensitive_turns), so no copy of a secret is ever stored.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from chatmem.lazy_patterns import lazy
from chatmem.privacy import secret_names, sensitive
from chatmem.privacy.findings import CARD, CODE, MARK_OPEN, PASSWORD, PHONE, Finding, masked, merged
from chatmem.privacy.followed import Followed
from chatmem.privacy.unnamed_details import private_label_before
from chatmem.privacy.word_lists import WordGate, lowered_text
from chatmem.text_digests import by_digest

ANSWER_CHARS = 80
"""Longest message read as the answer to a label in the message before it."""
MIN_FOLLOWED = 3
"""Shortest value followed into later messages: shorter ones recur by chance."""

PHRASE = "phrase"
"""A label naming a passphrase: its answer may be several plain words."""
_PHRASE_LABEL = lazy(rf"(?<![A-Za-z])(?:{secret_names.PHRASE_WORDS})(?![A-Za-z])",
                           re.IGNORECASE)
_SECRET_LABEL = lazy(
    rf"(?<![A-Za-z])(?:{secret_names.SECRET_WORDS}|secret)(?![A-Za-z])"
    rf"|{secret_names.SECRET_WORDS_ZH}|(?:{secret_names.BARE_THINGS_ZH})的?钥匙",
    re.IGNORECASE)
_CODE_LABEL = lazy(
    rf"(?<![A-Za-z])(?:{secret_names.CODE_NAMES}"
    rf"|(?:{secret_names.THINGS})(?:'s)?\s+(?:{secret_names.THING_NOUNS}))(?![A-Za-z])"
    rf"|{secret_names.CODE_WORDS_ZH}|门禁|(?:{secret_names.THINGS_ZH})的?{secret_names.THING_NOUNS_ZH}",
    re.IGNORECASE)
# "the model code of the keypad:", "the promo code": a code, but not a secret.
_HARMLESS_CODE_LABEL = lazy(
    rf"(?<![A-Za-z])(?:{secret_names.HARMLESS_CODES})\s+(?:code|number|no\.?)(?![A-Za-z])",
    re.IGNORECASE)
_CARD_WORDS = r"card(?: number)?"
_CARD_WORDS_ZH = r"卡号|银行卡|信用卡"
_PHONE_WORDS = r"phone|mobile|cell|telephone"
_PHONE_WORDS_ZH = r"电话|手机|座机"
_NUMBER_LABEL = {
    CARD: lazy(rf"(?<![A-Za-z])(?:{_CARD_WORDS})(?![A-Za-z])|{_CARD_WORDS_ZH}",
                     re.IGNORECASE),
    PHONE: lazy(rf"(?<![A-Za-z])(?:{_PHONE_WORDS})(?![A-Za-z])|{_PHONE_WORDS_ZH}",
                      re.IGNORECASE),
}
_HARMLESS_WORDS = (
    r"booking|reservation|order|tracking|invoice|reference|confirmation"
    r"|membership|customer|parcel|shipment|serial|receipt|flight|seat|room|postcode")
_HARMLESS_WORDS_ZH = r"预订|订单|单号|编号|发票|快递|车次|航班|房间|邮编"
_HARMLESS_LABEL = lazy(
    rf"(?<![A-Za-z])(?:{_HARMLESS_WORDS})(?![A-Za-z])|{_HARMLESS_WORDS_ZH}", re.IGNORECASE)
# Each label in the order it is looked for, with the words its pattern needs one of (a
# message's label is worked out for each short answer after it: most hold none of them).
_LABELS = (
    (_PHRASE_LABEL, WordGate(secret_names.PHRASE_WORDS), PHRASE),
    (_SECRET_LABEL, WordGate(f"{secret_names.SECRET_WORDS}|secret"
                             f"|{secret_names.SECRET_WORDS_ZH}|钥匙"), PASSWORD),
    (_HARMLESS_CODE_LABEL, WordGate(secret_names.HARMLESS_CODES, "code|number|no"),
     "harmless"),
    (_CODE_LABEL, WordGate(f"{secret_names.CODE_WORDS}|{secret_names.THING_NOUNS}"
                           f"|{secret_names.CODE_WORDS_ZH}|门禁|{secret_names.THING_NOUNS_ZH}"),
     CODE),
    (_NUMBER_LABEL[CARD], WordGate(f"{_CARD_WORDS}|{_CARD_WORDS_ZH}"), CARD),
    (_NUMBER_LABEL[PHONE], WordGate(f"{_PHONE_WORDS}|{_PHONE_WORDS_ZH}"), PHONE),
    (_HARMLESS_LABEL, WordGate(f"{_HARMLESS_WORDS}|{_HARMLESS_WORDS_ZH}"), "harmless"),
)
# "It's 1847.", "Yes: 732-19-0046", "是3568": the value alone, with a short lead-in.
_LEAD = lazy(r"^(?:it'?s|it is|yes|sure|ok(?:ay)?|here|that'?s|是|就是)[\s,:：]*",
                   re.IGNORECASE)
_TRAIL = lazy(r"[\s.!。！]+$")
# A number that a full stop or colon follows, "." or "。", "：", ends a statement ("My plate
# is ABC 12345."), not an answer; "，" and "、" only go on to say more ("可以用9630，不是生日").
_CODE_WORD = lazy(r"(?<![A-Za-z0-9_.,:/-])\d{3,12}#?(?![A-Za-z0-9_.,:/%。．：-])")
_PASSWORD_WORD = lazy(r"(?<![^\s\"'“‘「(，、：:])(?=\S*[A-Za-z])(?=\S*[\d!@#$%^&*_+=~])"
                            r"[!-~]{6,64}?(?=[\s\"'”’」)，。！？、]|[.,!?]?$|[.,!?]\s)")
_PASSWORD_TOKEN = lazy(r"(?=.*[\d!@#$%^&*_+=~-])[!-~]{3,64}")
# A code: "4399", "7290#", or digit groups ("0-4-2-7", "31 17 44"), three digits at least.
_CODE_TOKEN = lazy(r"[A-Za-z]?(?=(?:\D?\d){3})\d{1,6}(?:[ -]\d{1,6}){0,5}[A-Za-z#*]?")
_NUMBER_TOKEN = lazy(r"\+?\d[\d\s()-]{5,30}\d")
_PHRASE_TOKEN = lazy(r"[A-Za-z]+(?: [A-Za-z]+){1,11}")
_DATE_OR_AMOUNT = lazy(r"\d{1,4}[-/.:]\d{1,2}(?:[-/.:]\d{1,4})?|[$€£¥]\s*\d.*|\d+%")
# A number its own sentence names as something else is no answer to the label before it:
# "端口8443，" (a port), "2026年5月" (a year), "第183天", "room 305 then": the assistant's
# "我不会保存卡号。" names a card, and the user's next plans are not its number.
_NAMED_BEFORE = lazy(
    rf"(?:(?<![A-Za-z])(?:{_HARMLESS_WORDS}|port|version|floor|page|line|step|platform"
    r"|bus|route|day|year|week|item)\s*#?"
    rf"|{_HARMLESS_WORDS_ZH}|端口|版本|第|楼|层|门牌|号线|页)\s*$", re.IGNORECASE)
_NAMED_AFTER = lazy(
    r"\s*(?:年|月|日|号|天|周|岁|点|时|分|秒|元|块|个|次|楼|层|页|端口|米|公里|人|万|千|百"
    r"|(?:years?|days?|weeks?|months?|ms|px|km|kg|mb|gb)(?![A-Za-z]))", re.IGNORECASE)


@dataclass
class SecretGuard:
    """What a conversation has said that is sensitive, followed into every later message."""

    known: dict[str, str] = field(default_factory=dict)
    """Value → its kind: each value found sensitive so far."""
    cleared: set[str] = field(default_factory=set)
    """Numbers a label named harmless ("the booking reference:" then the number alone):
    not a card or a phone number wherever they recur, unless found sensitive too."""
    _followed_values: Followed = field(default_factory=Followed, repr=False, compare=False)

    def read(self, texts: Sequence[str], before: Sequence[str] = ()) -> list[str]:
        """Each of `texts` masked, having learnt from all of them what each one hides.

        `before` are the messages just before the first of `texts` (the label a first
        bare value answers); they are read for context, not returned. A value found in
        any of `texts` is masked in all of them, earlier ones included.
        """
        # A message's own findings and label depend on it alone: worked out once, not on
        # each pass.
        owns = [sensitive.findings(text) for text in texts]
        labels: dict[str, str | None] = {}

        def label_of(text: str) -> str | None:
            if text not in labels:
                labels[text] = _label_of(text)
            return labels[text]

        for _ in range(2):  # learn from every message, then mask each with all learnt
            out = []
            context = list(before[-2:])
            for text, own in zip(texts, owns, strict=True):
                found = self._judged(text, own, *_label_before(text, context, label_of))
                self.learn(found)
                out.append(masked(text, found))
                context = [*context[-1:], text]
        return out

    def learn(self, found: Iterable[Finding]) -> None:
        for finding in found:
            value = finding.text.strip()
            if (len(value) >= MIN_FOLLOWED and MARK_OPEN not in value
                    and value not in self.known):
                self.known[value] = finding.kind
                self._followed_values.add(value, finding.kind)

    def copy(self) -> SecretGuard:
        """A guard that knows what this one knows, and learns apart from it."""
        return copy.deepcopy(self)

    def holds(self, text: str) -> bool:
        """Whether `text` says anything sensitive on its own or anything the guard follows."""
        return bool(self.findings(text))

    def mask(self, text: str) -> str:
        """`text` with what it says and every followed value replaced by markers."""
        return masked(text, self.findings(text))

    def findings(self, text: str, before: Sequence[str] = ()) -> list[Finding]:
        """The sensitive details of `text`, read after the messages `before` it."""
        return self._judged(text, sensitive.findings(text), *_label_before(text, before))

    def _judged(self, text: str, own: list[Finding], label: str | None,
                next_to: bool = True) -> list[Finding]:
        """`text`'s details: its `own` findings read after a message labelled `label`
        (`next_to` it, or with one message between), answers to that label, and every
        value the guard follows."""
        if label == "harmless" and _is_bare(text):
            self.cleared.update(f.text for f in own if f.kind in (CARD, PHONE))
        own = [f for f in own if not (f.kind in (CARD, PHONE) and f.text in self.cleared
                                      and not private_label_before(text, f.start))]
        answer = _answer(text, label, next_to) if label not in (None, "harmless") else []
        return merged(text, [*own, *answer, *self._followed(text)])

    def _followed(self, text: str) -> Iterable[Finding]:
        if self._followed_values.count != len(self.known):  # `known` set from outside
            self._followed_values = Followed()
            for value, kind in self.known.items():
                self._followed_values.add(value, kind)
        return self._followed_values.findings(text)


def _may_answer(text: str) -> bool:
    """Whether `text` is short enough to be the bare answer to a label before it."""
    return len(text) <= ANSWER_CHARS


def _label_before(text: str, before: Sequence[str],
                  label_of: Callable[[str], str | None] | None = None
                  ) -> tuple[str | None, bool]:
    """What the nearer of the last two messages `before` asks for or announces, if anything,
    and whether that message is the last one; None for a `text` too long to answer it,
    whose label is then not worked out (the label regexes are most of the guard's cost)."""
    if not _may_answer(text):
        return None, True
    label_of = label_of or _label_of
    for distance, earlier in enumerate(reversed(before[-2:])):
        if label := label_of(earlier):
            # Only a question in between ("Which port…?") is what a sentence answers; an
            # acknowledgement ("Sure, go ahead.") still invites the label's value.
            return label, distance == 0 or not _asks(before[-1])
    return None, True


_QUESTION = lazy(r"[?？]|[吗呢么]\s*[。.!！]?\s*$")


def _asks(text: str) -> bool:
    """Whether a message asks something of its own."""
    return _QUESTION.search(text) is not None


@by_digest
def _label_of(text: str) -> str | None:
    """What one message asks for or announces, if anything (kept: each strategy of a
    catch-up reads the same messages)."""
    lowered, held = lowered_text(text), dict[tuple[str, ...], bool]()
    for pattern, gate, label in _LABELS:
        if gate.admits(lowered, held) and pattern.search(text):
            if label != "harmless" and _declines(text):
                return None
            return None if _gave_own_value(text, label) else label
    return None


# "I will not store your card number.", "请勿提供密码。": a message that says it will not
# keep, or ask for, the detail it names asks nobody for it.
_DECLINES = lazy(
    r"(?<![A-Za-z])(?:won'?t|will not|can'?t|cannot|can not|don'?t|do not|never|not going to"
    r"|shouldn'?t|should not|no need to)\s+(?:[A-Za-z]+\s+){0,2}?(?:store|save|keep|ask"
    r"|need|share|record|remember|log|collect|request|want)(?![A-Za-z])"
    r"|(?:不会|不能|不要|无法|不用|不需要|别|请勿|切勿|不得|不必|从不)\s*(?:再|帮你|为你|替你)?"
    r"\s*(?:保存|存储|储存|存|记录|记住|记下|询问|问|索取|要|提供|发|分享|透露|收集|需要)",
    re.IGNORECASE)
# ...unless it asks for it all the same: "I won't store it: please give me the card number",
# "我不会保存卡号，请告诉我后四位。" (a question mark is `_asks`).
_LINE_OPENING = r"[ \t\u00a0\u3000>*+•#_-]*"
"""What may stand before a line's first word: spaces, a list's or a quote's mark, emphasis.
Never a line break (each is an opening of its own): a run of 5,000 read from each of its
breaks took 8 s a message."""
_TO_ELSEWHERE = r"\s+(?:it|them|that|this|those|these)\s+(?:to|with)\s+(?!me\b|us\b)"
_ELSEWHERE = rf"\s+(?:give|send|share|provide|hand|pass|forward){_TO_ELSEWHERE}"
"""A request that the detail go to someone else ("Give it to the bank instead.", "please send
it to your bank"): it asks nothing of the one it was said to."""
_ELSEWHERE_ZH = r"把?(?:[它这那][个些]?|卡号|密码)?(?:交给|发给|提供给|转给|给)(?!我)"
"""请把它交给银行, 直接提供给银行: as _ELSEWHERE."""
_REQUESTS = lazy(
    rf"(?<![A-Za-z])(?:(?:please|kindly)(?!\s+(?:do not|don'?t|never|avoid)|{_ELSEWHERE})"
    r"|tell me|give me|send me|can you|could you|would you|type it|enter it|again)(?![A-Za-z])"
    rf"|请(?![勿不别]|{_ELSEWHERE_ZH})|告诉我|发给我|发我|输入|报一下|说一下|再发"
    # A sentence, clause or line that opens on a verb asks without a please: "Reply with
    # the last 4 digits", "Just send the last four.", "回复后四位就行"; a model's Markdown
    # line too ("- **Reply** with the last 4 digits"); or on the part wanted alone ("Just
    # the last 4 digits.", "后四位就行").
    rf"|(?:^|[\n.!;:。！；：，,]){_LINE_OPENING}(?:just\s+|only\s+|simply\s+)?"
    r"(?:reply|respond|send|enter|type|give|tell|share|provide|confirm|write|text)(?![A-Za-z])"
    rf"(?!{_TO_ELSEWHERE})"
    rf"|(?:^|[\n.!;:。！；：，,]){_LINE_OPENING}(?:just|only)\s+(?:the\s+)?(?:last|final|first)"
    r"\s+(?:\d{1,2}|one|two|three|four|five|six)\s+(?:digits?|numbers?|characters?)"
    rf"|(?:^|[\n。！；：，,]){_LINE_OPENING}(?:只需|只要|直接|就)?(?:回复|发送|发一下|提供|给我|说出)"
    r"(?!给(?!我))"
    rf"|(?:^|[\n。！；：，,]){_LINE_OPENING}(?:只需|只要|就要)?(?:后|末|最后)\s*[一二三四五六1-6]\s*位",
    re.IGNORECASE)


def _declines(text: str) -> bool:
    """Whether a message naming a detail says it will not keep or ask for it, and asks for
    nothing: then a short message after it is no answer."""
    return _DECLINES.search(text) is not None and not _asks(text) \
        and _REQUESTS.search(text) is None


def _gave_own_value(text: str, label: str) -> bool:
    """Whether a message naming `label` gave that value itself and asks nothing more: then
    the next short message is not its answer ("My phone number is 415-555-0134." "OK."
    "My plate is ABC·12345!" — 12345 is no phone number)."""
    if label == "harmless" or _asks(text):
        return False
    kind = PASSWORD if label == PHRASE else label
    return any(f.kind == kind for f in sensitive.findings(text))


def _is_bare(text: str) -> bool:
    return _may_answer(text) and len(_bare_value(text).split()) <= 8


def _bare_value(text: str) -> str:
    return _TRAIL.sub("", _LEAD.sub("", text.strip()))


def _answer(text: str, label: str, next_to: bool = True) -> list[Finding]:
    """The value `text` gives in answer to a label naming `label`, if it gives one; a label
    not `next_to` it is answered by the value alone."""
    if not _may_answer(text):
        return []
    kind = PASSWORD if label == PHRASE else label
    value = _bare_value(text)
    if _answers(value, label):
        start = text.find(value)
        return [Finding(kind, start, start + len(value), value)]
    if not next_to:
        return []
    # A PIN is a 密码 too ("取款密码"): after a password label a code-like number counts.
    patterns = [_CODE_WORD] if kind in (CODE, CARD, PHONE) else [_CODE_WORD, _PASSWORD_WORD]
    words = [m for pattern in patterns for m in pattern.finditer(text)
             if not _DATE_OR_AMOUNT.fullmatch(m.group())
             and not _NAMED_BEFORE.search(text, 0, m.start())
             and not _NAMED_AFTER.match(text, m.end())]
    if len(words) == 1:
        match = words[0]
        return [Finding(kind, match.start(), match.end(), match.group())]
    return []


def _answers(value: str, label: str) -> bool:
    """Whether a message that is only `value` is the detail `label` asked for."""
    if not value or "?" in value or "？" in value or MARK_OPEN in value:
        return False
    if _DATE_OR_AMOUNT.fullmatch(value):
        return False
    if label == PHRASE and _PHRASE_TOKEN.fullmatch(value):
        return True
    if label in (PASSWORD, PHRASE):
        return bool(_PASSWORD_TOKEN.fullmatch(value))
    if label == CODE:
        return bool(_CODE_TOKEN.fullmatch(value))
    return bool(_NUMBER_TOKEN.fullmatch(value)) and sum(c.isdigit() for c in value) >= 7
