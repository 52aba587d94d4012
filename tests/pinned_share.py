"""ann's `summary` session `a`, shared with bob for writing, whose scripted summarizer loses
details (each becomes a pin): the set-up of the PostgreSQL tests of a grantee and her pins."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from cli_runner import repl, run
from pg import Team

from chatmem.store import Store

LOST = {"五千元": "一笔预算", "ORD-7731": "the order"}
"""What the scripted summarizer drops by default (p1 and p2)."""


def share_pinned_session(team: Team, monkeypatch: pytest.MonkeyPatch,
                         lost: Mapping[str, str] = LOST) -> tuple[str, str]:
    """ann's and bob's URLs, once ann said 五千元 and ORD-7731 in `a` (lost by its
    summarizer: pinned) and shared it with bob for writing."""
    from chatmem.providers.scripted import RULES
    from chatmem.providers.scripted_summary import extractive_summary

    def lossy(messages: object) -> str:
        text = extractive_summary(messages)
        for said, instead in lost.items():
            text = text.replace(said, instead)
        return text

    monkeypatch.setitem(RULES, "summary", lossy)
    ann, bob = team.url("ann"), team.url("bob")
    with Store(ann) as store:
        repl(store, "a", ["我们的预算是五千元。", "My order is ORD-7731."], strategy="summary")
    run(ann, "sessions", "share", "a", "--with", "bob", "--write", code=0)
    return ann, bob
