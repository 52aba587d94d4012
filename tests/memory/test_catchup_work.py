"""A long catch-up checks each message once, whichever strategies read it, and stores the
same as when nothing was kept from before: strategies catch up one after another, and each
read every message's sensitive details and anchors again (a 2,500-turn history took 20,000
sensitive-detail checks for 5,000 messages)."""

from __future__ import annotations

import difflib
import itertools
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from registered import open_session

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.memory import anchors
from chatmem.privacy import credentials, secret_guard
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

SETTINGS = Settings(embeddings=EmbeddingsSection(provider="none"))
TURNS = 270
"""More messages than a cache of 512 results holds."""
USER = [
    "My name is Alice Chen and order ORD-{n} ships to 12 Oak Street on March {d}, 2026 ({tag}).",
    "我叫王小明，我住在杭州，预算五千元，第{n}天去西湖，2026年5月{d}日出发（{tag}）。",
    "My API key is sk-proj-{n}AbCdEfGhIjKlMnOpQrStUvWx{n} and the password is hunter{n}! {tag}",
    "我的银行卡号是 6222 0202 0000 {n:04d}，密码是 {n:06d}，别告诉别人。{tag}",
    "Set backoff=2.{n} and retry_count={n} in jobs-worker:1.{n}.2 on port 84{d}. {tag}",
]
ASSISTANT = [
    "Noted, Alice: ORD-{n} goes to 12 Oak Street on March {d}. {tag}",
    "<think>maybe ORD-999?</think>好的，王小明，第{n}天：上午游西湖，预算约八百元。{tag}",
    "I will not repeat your key. Item {n}: budget 5,000 yuan, delivery March {d}. {tag}",
    "我不会保存卡号。第{n}天行程已更新，预算两万元。{tag}",
]
_tags = itertools.count(1)


def conversation(tag: str, turns: int = TURNS) -> Iterator[dict[str, str]]:
    """English and Chinese turns with ids, dates, amounts, names and secrets; `tag` makes
    its texts this test's own (what other tests checked is kept from before)."""
    for n in range(1, turns + 1):
        values = {"n": n, "d": n % 28 + 1, "tag": tag}
        yield {"role": "user", "content": USER[n % len(USER)].format(**values)}
        yield {"role": "assistant", "content": ASSISTANT[n % len(ASSISTANT)].format(**values)}


def caught_up(path: Path, tag: str, strategies: tuple[str, ...], turns: int = TURNS) -> None:
    with Store(path) as store:
        session = store.sessions.create_session("long", "window", system="Be brief.")
        store.history.import_messages(session.id, list(conversation(tag, turns)))
        for strategy in strategies:
            open_session(store, SETTINGS, ScriptedProvider(), "long",
                         strategy=strategy).catch_up()


def derived(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """The summaries, facts and strategy state stored, without their times."""
    with sqlite3.connect(path) as db:
        return {
            "summaries": db.execute(
                "SELECT strategy, version, text, covered_ids, anchors, dropped_anchors"
                " FROM summaries ORDER BY strategy, version").fetchall(),
            "facts": db.execute("SELECT key, value, source_turn FROM facts ORDER BY id").fetchall(),
            "state": db.execute("SELECT strategy, key, value FROM strategy_state"
                                " ORDER BY strategy, key").fetchall(),
        }


STATEFUL = ("summary", "summary-buffer", "entity")


@pytest.fixture(scope="module")
def counts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, int, int]]:
    """For each kind of text worked out, not read from before (its sensitive details,
    anchors, or label: what it asks for, the secret guard's), how many were worked out by
    a catch-up of one strategy, by a first of two on a history of its own, and by the same
    two again: (first, every, again).

    The three kinds are counted in one run of the three catch-ups, as they always were
    each test counting all three; each test then reads its own kind (a run of its own
    for each cost ~2 s of CPU, three times the same work).
    """
    texts: dict[str, list[str]] = {"sensitive": [], "anchors": [], "labels": []}
    tmp_path = tmp_path_factory.mktemp("catchup")
    with pytest.MonkeyPatch.context() as monkeypatch:
        def counting(module: object, name: str, kind: str) -> None:
            real = getattr(module, name)

            def count(text: str) -> object:
                texts[kind].append(text)
                return real(text)

            monkeypatch.setattr(module, name, count)

        counting(credentials, "named_otherwise", "sensitive")
        counting(anchors, "chinese_names", "anchors")
        counting(secret_guard, "lowered_text", "labels")

        def worked_out() -> dict[str, int]:
            numbers = {kind: len(seen) for kind, seen in texts.items()}
            for seen in texts.values():
                seen.clear()
            return numbers

        caught_up(tmp_path / "first.db", f"t{next(_tags)}", STATEFUL[:1])
        first = worked_out()
        tag = f"t{next(_tags)}"
        caught_up(tmp_path / "both.db", tag, STATEFUL[:2])
        every = worked_out()
        caught_up(tmp_path / "again.db", tag, STATEFUL[:2])
        again = worked_out()
    return {kind: (first[kind], every[kind], again[kind]) for kind in texts}


@pytest.mark.parametrize("kind", ["sensitive", "anchors", "labels"])
def test_a_second_strategy_reads_no_message_again(
        kind: str, counts: dict[str, tuple[int, int, int]]) -> None:
    first, every, again = counts[kind]
    assert first > TURNS  # the messages were read (masked, some read alike)
    # The same history caught up again reads nothing again; the first run of two
    # strategies reads each message about once, not once per strategy.
    assert again == 0
    assert every < first * 1.2


def test_what_is_kept_from_before_stores_the_same(tmp_path: Path) -> None:
    tag = f"t{next(_tags)}"
    caught_up(tmp_path / "cold.db", tag, STATEFUL)
    caught_up(tmp_path / "warm.db", tag, STATEFUL)
    cold, warm = derived(tmp_path / "cold.db"), derived(tmp_path / "warm.db")
    assert cold == warm
    assert len(cold["summaries"]) > 4 and cold["facts"]
    assert any("⟦" in str(row[2]) for row in cold["summaries"])  # secrets masked


def test_anchors_kept_are_handed_out_as_new_lists() -> None:
    text = f"ORD-{next(_tags)}7731 ships on 2026年5月1日 to Alice Chen, $120."
    first = anchors.extract_anchors(text)
    assert first[1:] == ["2026年5月1日", "Alice Chen", "$120"]
    first.append("changed by a caller")
    assert anchors.extract_anchors(text) == first[:-1]


def test_a_fold_diffs_the_old_and_new_summary_once(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Its notice says words added, removed and their unit (diff_size, diff_unit)."""
    made: list[object] = []

    class Counting(difflib.SequenceMatcher[str]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made.append(args)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(difflib, "SequenceMatcher", Counting)
    caught_up(tmp_path / "h.db", f"t{next(_tags)}", ("summary",), turns=80)
    folds = len(derived(tmp_path / "h.db")["summaries"])
    assert folds > 1
    assert len(made) == folds
