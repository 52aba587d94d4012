"""Attached files: read as text or refused, and counted as a fixed part by every strategy."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from registered import create_strategy

from chatmem.attachments import Attachment, decode, read_file
from chatmem.errors import UsageError
from chatmem.history import StoredHistory
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import FIXED_KINDS, Context, Message
from chatmem.memory.state import SessionState
from chatmem.store import Store
from chatmem.tokens import counter_for_model

COUNTER = counter_for_model(None, exact=True)


def msg(role: str, content: str, id: int | None = None) -> Message:
    return Message(role, content, COUNTER.count_message(role, content), id)


def test_a_file_is_read_whole_without_its_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_bytes("\ufeff# 标题\nline\n".encode())
    assert read_file(path) == Attachment(str(path), "# 标题\nline\n")


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_file_saved_as_utf16_with_its_mark_is_read_as_text(tmp_path: Path,
                                                            encoding: str) -> None:
    # Windows' "Unicode": half its bytes are NUL, and it was refused as a binary file.
    path = tmp_path / "记录.txt"
    path.write_bytes("\ufeff会议记录 notes 😀\r\nline 2\r\n".encode(encoding))
    assert read_file(path) == Attachment(str(path), "会议记录 notes 😀\r\nline 2\r\n")
    path.write_bytes("\ufeff半个".encode(encoding) + b"\x00")
    with pytest.raises(UsageError, match=r"starts as UTF-16 text but is not"):
        read_file(path)
    path.write_bytes("\ufeffa\x00b".encode(encoding))
    with pytest.raises(UsageError, match=r"a binary file \(it holds NUL bytes\)"):
        read_file(path)


@given(st.text())
def test_any_text_decodes_back_to_itself_or_is_refused(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    try:
        decoded = decode("x", data)
    except UsageError as e:
        assert str(e).startswith("x: ")
        assert "\x00" in text or any("\ud800" <= c <= "\udfff" for c in text)
    else:
        assert decoded == text.removeprefix("\ufeff")


@pytest.mark.parametrize("strategy", ["tokens", "summary-buffer", "retrieval", "tokens+entity"])
def test_a_budget_makes_room_for_the_files_by_dropping_history(strategy: str) -> None:
    messages = []
    for n in range(1, 31):
        messages += [msg("user", f"turn {n} says something " * 8, 2 * n - 1),
                     msg("assistant", f"reply to {n}", 2 * n)]
    store = Store(":memory:")
    session = store.sessions.create_session("s", strategy)
    store.history.import_messages(session.id, [{"role": m.role,
                                                "content": m.content} for m in messages])
    history = StoredHistory(store, session.id, COUNTER)
    attached = (msg("user", "file text " * 60),)
    params = {"tokens.max_tokens" if "+" in strategy else "max_tokens": "600"}

    def build(attached: tuple[Message, ...]) -> Context:
        return create_strategy(strategy, params).build(ContextRequest(
            history=history, input=msg("user", "who says something?"), counter=COUNTER,
            attached=attached, state=SessionState(store, session.id)))

    built, without = build(attached), build(())
    assert built.part("files") is not None and built.part("files").messages == attached
    assert [p.kind for p in built.parts][-2:] == ["files", "input"]
    files = built.part("files").tokens
    assert built.tokens <= 600 < without.tokens + files  # it would not fit as it was…

    def memory(context: Context) -> int:
        return sum(p.tokens for p in context.parts if p.kind not in FIXED_KINDS)

    assert memory(built) <= 600 - files - (without.tokens - memory(without))  # …so less memory
