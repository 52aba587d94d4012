"""Rule-based fact extraction for the `scripted` provider: offline and deterministic.

It answers the fact-extraction request (see chatmem.memory.extraction) with the
same JSON a model would return, from plain statements in English ("my X is
Y", "my name is X", "call me X", "I am allergic to X", "I live in X",
"forget my X") and Chinese (我叫…, 我的…是…, 我对…过敏, 预算…, 我住在…,
忘记我的…), and id-shaped values named by a key ("the order number is
KW-58213", 订单号是ORD-7731). Questions ("what is my order?", 我的订单号是什么？)
are never facts. Values are copied verbatim; keys are the user's own words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from chatmem.lazy_patterns import lazy
from chatmem.providers.base import ChatMessages

USER_KEYS = {"name", "allergy", "city", "名字", "过敏", "城市"}
"""Keys about the person rather than the task: suggested for the user profile."""
SAME_FACT = ({"name", "名字"}, {"allergy", "过敏"}, {"city", "城市"}, {"budget", "预算"})
"""Keys this extractor knows to name one fact across languages; it answers "same_as"."""

_CLAUSE = lazy(r"([。！？；，、\n;!?]|[.,](?=\s|$))")
_QUESTION_WORDS = lazy(
    r"什么|多少|哪(?!怕)|谁|怎么|为什么|吗[呢啊呀]?$"  # 吗 asks only at the end: 吗啡 is morphine
    r"|^(?:what|which|when|where|who|whom|whose|how|why)(?:['’]s)?\b"
    r"|^(?:is|are|was|were|do|does|did|can|could|would|will|shall)\s+(?:my|your|the|it|i|you|we)\b",
    re.IGNORECASE,
)
# Ids: ORD-7731, KW-58213, MU5137, SORRY15, 2026-0417-88, blue-otter-88.
_ID = (r"(?:[A-Za-z]{1,10}[-_#]?\d[A-Za-z0-9_-]*(?<![-_])|\d+(?:-\d+){2,}"
       r"|(?=[A-Za-z0-9-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+){2,})(?![A-Za-z0-9_-])")
_VALUE_END = lazy(
    r"\s+(?:and|but)\s+(?:i|i'm|my|we|please|it|it's|she|he|they|this|that)\b.*$", re.IGNORECASE
)
_FLAGS = re.IGNORECASE

Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[str, str] | None]]


def _fixed(key: str) -> Callable[[re.Match[str]], tuple[str, str]]:
    return lambda m: (key, m.group("value"))


def _named(m: re.Match[str]) -> tuple[str, str]:
    return m.group("key"), m.group("value")


def _named_id(m: re.Match[str]) -> tuple[str, str] | None:
    """订单号是ORD-7731: the key is the noun just before the id, without 我的/这次的."""
    key = m.group("key").split("的")[-1]
    if not m.group("link") and not key.endswith(("号", "码")):
        return None  # 去程坐MU5137 names no key
    return (key, m.group("value")) if key else None


RETRACT_RULES = [
    lazy(r"\b(?:forget|delete|drop) my (?P<key>[\w -]{1,40}?)\s*$", _FLAGS),
    lazy(r"(?:忘记|忘掉|删除|删掉)我的(?P<key>.{1,10}?)(?:吧)?$"),
]

SET_RULES: list[Rule] = [
    (lazy(r"\bmy name is (?P<value>.+)", _FLAGS), _fixed("name")),
    (lazy(r"\bcall me (?P<value>.+)", _FLAGS), _fixed("name")),
    (lazy(r"\bi(?:'m| am) allergic to (?P<value>.+)", _FLAGS), _fixed("allergy")),
    (lazy(r"\bi live in (?P<value>.+)", _FLAGS), _fixed("city")),
    # "the order number is KW-58213": only an id-shaped value makes "the X" the user's fact.
    (lazy(rf"\b(?:the|our) (?P<key>[a-z][\w-]*(?: [\w-]+){{0,3}}?)"
                rf" (?:is|was|are) (?P<value>{_ID})", _FLAGS), _named),
    (lazy(r"\bmy (?P<key>[a-z][\w-]*(?: [\w-]+){0,3}?) (?:is|are) (?P<value>.+)", _FLAGS),
     _named),
    (lazy(r"我叫(?P<value>.+)"), _fixed("名字")),
    (lazy(r"我对(?P<value>.+?)过敏"), _fixed("过敏")),
    (lazy(r"我住在(?P<value>.+)"), _fixed("城市")),
    (lazy(r"我的(?P<key>[^是]{1,10})是(?P<value>.+)"), _named),
    (lazy(r"预算(?:是|为|有|大约|大概|在)?(?P<value>.+)"), _fixed("预算")),
    (lazy(rf"(?P<key>[\u4e00-\u9fff]{{1,8}}?)(?P<link>是|为|：|:)?\s*(?P<value>{_ID})"),
     _named_id),
]


def _clauses(text: str) -> list[tuple[str, bool]]:
    """Each clause, and whether it asks rather than states (a question is never a fact)."""
    pieces = _CLAUSE.split(text)
    out = []
    for i in range(0, len(pieces), 2):
        clause = pieces[i].strip()
        end = pieces[i + 1] if i + 1 < len(pieces) else ""
        if clause:
            out.append((clause, end in ("?", "？") or bool(_QUESTION_WORDS.search(clause))))
    return out


def _clean_value(value: str) -> str:
    return _VALUE_END.sub("", value).strip().rstrip(".!?。！？").strip()


def extract(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(key, value) pairs set and keys retracted by one user message, in order."""
    sets: list[tuple[str, str]] = []
    retracts: list[str] = []
    for clause, asks in _clauses(text):
        retract = next((m for r in RETRACT_RULES if (m := r.search(clause))), None)
        if retract:  # "can you forget my city?" is a request, so it counts
            retracts.append(retract.group("key").strip().lower())
            continue
        if asks:
            continue
        for pattern, pick in SET_RULES:
            match = pattern.search(clause)
            if match is None:
                continue
            picked = pick(match)
            if picked is None:
                continue
            key, value = " ".join(picked[0].split()).lower(), _clean_value(picked[1])
            if key and value:
                sets.append((key, value))
            break
    return sets, retracts


def answer(messages: ChatMessages) -> str:
    """The JSON answer to an extraction request (last user message holds the data)."""
    data = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "{}")
    try:
        request: Any = json.loads(data)
        pending = [(int(m["turn"]), str(m["text"])) for m in request["messages"]]
        known = [str(f["key"]) for f in request.get("facts", [])]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        pending, known = [], []
    out: dict[str, list[Any]] = {"set": [], "retract": []}
    for turn, text in pending:
        sets, retracts = extract(text)
        out["retract"].extend({"key": key, "turn": turn} for key in retracts)
        for key, value in sets:
            item = {"key": key, "value": value, "turn": turn,
                    "scope": "user" if key in USER_KEYS else "session"}
            same = _same_fact(key, known)
            if same:
                item["same_as"] = same
            out["set"].append(item)
            known.append(key)
    return json.dumps(out, ensure_ascii=False)


def _same_fact(key: str, known: list[str]) -> str | None:
    """The first known key in another language for the same fact, if any."""
    group = next((g for g in SAME_FACT if key in g), set())
    return next((k for k in known if k != key and k in group), None)
