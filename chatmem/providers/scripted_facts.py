"""Rule-based fact extraction for the `scripted` provider: offline and deterministic.

It answers the fact-extraction request (see chatmem.memory.facts) with the
same JSON a model would return, from plain statements in English ("my X is
Y", "my name is X", "call me X", "I am allergic to X", "I live in X",
"forget my X") and Chinese (我叫…, 我的…是…, 我对…过敏, 预算…, 我住在…,
忘记我的…). Values are copied verbatim; keys are the user's own words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from chatmem.providers.base import ChatMessages

USER_KEYS = {"name", "allergy", "city", "名字", "过敏", "城市"}
"""Keys about the person rather than the task: they follow the user across sessions."""

_CLAUSE = re.compile(r"[。！？；，、\n;!?]|[.,](?=\s|$)")
_VALUE_END = re.compile(r"\s+(?:and|but)\s+(?:i|i'm|my|we|please)\b.*$", re.IGNORECASE)
_FLAGS = re.IGNORECASE

Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[str, str] | None]]


def _fixed(key: str) -> Callable[[re.Match[str]], tuple[str, str]]:
    return lambda m: (key, m.group("value"))


def _named(m: re.Match[str]) -> tuple[str, str]:
    return m.group("key"), m.group("value")


RETRACT_RULES = [
    re.compile(r"\b(?:forget|delete|drop) my (?P<key>[\w -]{1,40}?)\s*$", _FLAGS),
    re.compile(r"(?:忘记|忘掉|删除|删掉)我的(?P<key>.{1,10}?)(?:吧)?$"),
]

SET_RULES: list[Rule] = [
    (re.compile(r"\bmy name is (?P<value>.+)", _FLAGS), _fixed("name")),
    (re.compile(r"\bcall me (?P<value>.+)", _FLAGS), _fixed("name")),
    (re.compile(r"\bi(?:'m| am) allergic to (?P<value>.+)", _FLAGS), _fixed("allergy")),
    (re.compile(r"\bi live in (?P<value>.+)", _FLAGS), _fixed("city")),
    (re.compile(r"\bmy (?P<key>[a-z][\w-]*(?: [\w-]+){0,3}?) (?:is|are) (?P<value>.+)", _FLAGS),
     _named),
    (re.compile(r"我叫(?P<value>.+)"), _fixed("名字")),
    (re.compile(r"我对(?P<value>.+?)过敏"), _fixed("过敏")),
    (re.compile(r"我住在(?P<value>.+)"), _fixed("城市")),
    (re.compile(r"我的(?P<key>[^是]{1,10})是(?P<value>.+)"), _named),
    (re.compile(r"预算(?:是|为|有|大约|大概|在)?(?P<value>.+)"), _fixed("预算")),
]


def clauses(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSE.split(text) if c.strip()]


def _clean_value(value: str) -> str:
    return _VALUE_END.sub("", value).strip().rstrip(".!?。！？").strip()


def extract(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(key, value) pairs set and keys retracted by one user message, in order."""
    sets: list[tuple[str, str]] = []
    retracts: list[str] = []
    for clause in clauses(text):
        retract = next((m for r in RETRACT_RULES if (m := r.search(clause))), None)
        if retract:
            retracts.append(retract.group("key").strip().lower())
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
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        pending = []
    out: dict[str, list[Any]] = {"set": [], "retract": []}
    for turn, text in pending:
        sets, retracts = extract(text)
        out["retract"].extend({"key": key, "turn": turn} for key in retracts)
        for key, value in sets:
            out["set"].append({"key": key, "value": value, "turn": turn,
                               "scope": "user" if key in USER_KEYS else "session"})
    return json.dumps(out, ensure_ascii=False)


def register(rules: dict[str, Callable[[ChatMessages], str]]) -> None:
    rules["facts"] = answer
