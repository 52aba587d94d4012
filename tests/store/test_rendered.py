"""Rendered prompts stored by reference: O(parts) per turn, read back byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acting_providers import RenderingProvider, chatml
from cli_runner import RUNNER
from hypothesis import given, settings
from hypothesis import strategies as st
from registered import open_session

from chatmem.cli import app
from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.errors import StoreError
from chatmem.privacy.mentions import erase_mentions
from chatmem.store import Store, rendered
from chatmem.store.rendered import Sent

runner = RUNNER
M008 = "m008_rendered_prompts_by_reference"


_CONTENT = st.one_of(st.text(max_size=12), st.sampled_from(
    ["user", "assistant", "<|im_end|>", "\n", "", "五千元", "ORD-7731", "im_start"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "system"]), _CONTENT,
                          st.booleans()), max_size=12),
       st.sampled_from(["verbatim", "stripped"]))
def test_compacting_then_expanding_gives_back_the_exact_text(
        messages: list[tuple[str, str, bool]], template: str) -> None:
    rows = {i + 1: (role, content) for i, (role, content, _) in enumerate(messages)}
    sent = [Sent(role, content, i + 1 if stored else None)
            for i, (role, content, stored) in enumerate(messages)]
    shown = [{"role": r, "content": c if template == "verbatim" else c.strip()}
             for r, c, _ in messages]
    text = chatml(shown)
    pieces = rendered.compact(text, sent, rows.get)
    if pieces is not None:
        assert rendered.expand(pieces, rows.get) == text
        assert any(isinstance(p, dict) for p in pieces)


def test_a_run_of_stored_messages_is_one_piece_however_long(store: Store) -> None:
    rows = {p: ("user" if p % 2 else "assistant", f"message {p}") for p in range(1, 201)}
    sent = [Sent(*rows[p], p) for p in range(1, 201)]
    text = chatml([{"role": "system", "content": "Be brief."},
                   *({"role": r, "content": c} for r, c in rows.values()),
                   {"role": "user", "content": "new"}])
    pieces = rendered.compact(text, [Sent("system", "Be brief.", None), *sent,
                                     Sent("user", "new", None)], rows.get)
    assert pieces is not None
    assert [type(p).__name__ for p in pieces] == ["str", "dict", "str"]
    assert pieces[1] == {"from": 1, "to": 200, "gaps": {
        "user assistant": "<|im_end|>\n<|im_start|>assistant\n",
        "assistant user": "<|im_end|>\n<|im_start|>user\n"}}
    assert rendered.expand(pieces, rows.get) == text


def stored_rows(store: Store) -> list[tuple[str | None, str | None]]:
    """(rendered_prompt, rendered) as they are stored."""
    return [tuple(row) for row in store.db.execute(
        "SELECT rendered_prompt, rendered FROM turns ORDER BY id").fetchall()]


def chatted(store: Store, turns: int) -> Engine:
    settings = Settings(system="Be brief.", embeddings=EmbeddingsSection(provider="none"))
    engine = open_session(store, settings,
                          RenderingProvider(), "loc", strategy="buffer")
    for i in range(turns):
        engine.run_turn(f"message {i} about ORD-{i}, 第{i}天")
    return engine


def test_a_buffer_turns_rendered_prompt_is_stored_by_reference_and_read_back_exactly(
        store: Store) -> None:
    engine = chatted(store, 30)
    rows = stored_rows(store)
    # The first turn sent no stored message: its prompt is all template and new text.
    assert rows[0][0] is not None and rows[0][1] is None
    assert all(text is None and pieces for text, pieces in rows[1:])
    sizes = [len(pieces or "") for _, pieces in rows]
    # One run of history, the system prompt and the input around it: the same size.
    assert max(sizes[3:]) - min(sizes[3:]) < 40
    for number, turn in enumerate(store.turns.turns(engine.session.id), 1):
        messages = [m.as_chat() for p in _context(turn.context) for m in p]
        assert turn.rendered_prompt == chatml(messages), number


def _context(context: dict[str, Any]) -> list[list[Any]]:
    from chatmem.memory.context import Context

    return [list(p.messages) for p in Context.from_json(context).parts]


def test_files_from_before_m008_are_converted_and_inspect_reads_the_same(
        tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    with Store(db) as store:
        engine = chatted(store, 6)
        expanded = [t.rendered_prompt for t in store.turns.turns(engine.session.id)]
    before = [json.loads(runner.invoke(app, ["inspect", "loc", "--turn", str(n), "--json",
                                             "--db", db]).stdout) for n in range(1, 7)]
    with Store(db) as store, store.write():  # the file as chatmem wrote it before m008
        for number, text in enumerate(expanded, 1):
            store.db.execute("UPDATE turns SET rendered_prompt = ? WHERE number = ?",
                             [text, number])
        store.db.execute("ALTER TABLE turns DROP COLUMN rendered")
        store.db.execute("DELETE FROM _sqlite_migrations WHERE name = ?", [M008])
    with Store(db) as store:  # opening it applies m008
        rows = stored_rows(store)
    assert all(text is None and pieces for text, pieces in rows[1:])
    after = [json.loads(runner.invoke(app, ["inspect", "loc", "--turn", str(n), "--json",
                                            "--db", db]).stdout) for n in range(1, 7)]
    assert after == before
    assert [a["rendered_prompt"] for a in after] == expanded


def test_a_purge_reaches_the_rendered_prompt_through_its_references(store: Store) -> None:
    engine = chatted(store, 3)
    store.redactions.rewrite_stored_text([engine.session.id], None, ["ORD-1"],
                                         lambda text: erase_mentions(text, ["ORD-1"]))
    prompts = [t.rendered_prompt or "" for t in store.turns.turns(engine.session.id)]
    assert not any("ORD-1" in p for p in prompts)
    assert "message 1 about [forgotten], 第1天" in prompts[2]  # a referenced message
    assert "message 1 about [forgotten], 第1天<|im_end|>\n<|im_start|>assistant\n" in prompts[1]


def test_pieces_written_by_hand_are_one_line_naming_the_turn_not_a_traceback(
        tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    with Store(db) as store:
        chatted(store, 3)
        (good,), = store.db.execute("SELECT rendered FROM turns WHERE number = 2").fetchall()
    run = json.loads(good)[1]
    for forged in ({**run, "from": str(run["from"]), "to": str(run["to"])},
                   {**run, "from": float(run["from"])}, {**run, "to": True},
                   {**run, "from": run["to"] + 1}, {**run, "from": 0},
                   {**run, "gaps": {"user assistant": 5}}, {"from": 1, "to": 1},
                   [run], 7):
        with Store(db) as store, store.write():
            store.db.execute("UPDATE turns SET rendered = ? WHERE number = 2",
                             [json.dumps(["<|im_start|>", forged])])
        result = runner.invoke(app, ["inspect", "loc", "--request", "2", "--db", db])
        assert result.exit_code == StoreError.exit_code, (forged, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), forged
        assert ("request 2 (turn 2): its rendered prompt is not stored as chatmem stores it"
                in result.output)
        assert "Traceback" not in result.output
