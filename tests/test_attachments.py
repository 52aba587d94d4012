"""Attached files: read as text or refused, and counted as a fixed part by every strategy."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from documents import pdf, png
from hypothesis import given
from hypothesis import strategies as st
from registered import create_strategy

from chatmem.attachments import (
    MOST_PDF_BYTES,
    MOST_TEXT_BYTES,
    STDIN,
    Attachment,
    PipedKind,
    TextLimit,
    decode,
    piped_file_kind,
    read_file,
    read_piped,
)
from chatmem.errors import UsageError
from chatmem.history import StoredHistory
from chatmem.images import MAX_BYTES
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import FIXED_KINDS, Context, Message
from chatmem.memory.state import SessionState
from chatmem.store import Store
from chatmem.tokens import counter_for_model

COUNTER = counter_for_model(None, exact=True)
LIMIT = TextLimit(4000)


def msg(role: str, content: str, id: int | None = None) -> Message:
    return Message(role, content, COUNTER.count_message(role, content), id)


def test_a_file_is_read_whole_without_its_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_bytes("\ufeff# 标题\nline\n".encode())
    assert read_file(path, LIMIT) == Attachment(str(path), "# 标题\nline\n")


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_file_saved_as_utf16_with_its_mark_is_read_as_text(tmp_path: Path,
                                                            encoding: str) -> None:
    # Windows' "Unicode": half its bytes are NUL, and it was refused as a binary file.
    path = tmp_path / "记录.txt"
    path.write_bytes("\ufeff会议记录 notes 😀\r\nline 2\r\n".encode(encoding))
    assert read_file(path, LIMIT) == Attachment(str(path), "会议记录 notes 😀\r\nline 2\r\n")
    path.write_bytes("\ufeff半个".encode(encoding) + b"\x00")
    with pytest.raises(UsageError, match=r"starts as UTF-16 text but is not"):
        read_file(path, LIMIT)
    path.write_bytes("\ufeffa\x00b".encode(encoding))
    with pytest.raises(UsageError, match=r"a binary file \(it holds NUL bytes\)"):
        read_file(path, LIMIT)


def sparse(path: Path, head: bytes, size: int) -> Path:
    """A file of `size` bytes starting with `head`, written without writing them all."""
    with path.open("wb") as f:
        f.write(head)
        f.truncate(size)
    return path


def test_text_is_held_to_what_the_budget_can_hold_at_256_bytes_a_token(tmp_path: Path) -> None:
    """A 404 MB file aborted in the tokenizer; a regular file's size is looked at first."""
    fits = sparse(tmp_path / "笔记.txt", b"", 0)
    fits.write_bytes("é".encode() * 1280)  # 2,560 bytes: 10 tokens of 256
    assert read_file(fits, TextLimit(10)).text == "é" * 1280
    big = sparse(tmp_path / "大.txt", b"x", 2561)
    with pytest.raises(UsageError) as refused:
        read_file(big, TextLimit(10))
    assert str(refused.value) == (
        f"{big}: 2.5 KiB of text, far more than a context budget of 10 tokens can hold; "
        "nothing was sent (--allow-over-budget sends it anyway)")
    huge = sparse(tmp_path / "huge.txt", b"x", 404 * 2**20)
    with pytest.raises(UsageError) as refused:
        read_file(huge, TextLimit(10**9, over_budget=True))
    assert str(refused.value) == (
        f"{huge}: 404.0 MiB of text; at most 16.0 MiB can be attached; nothing was sent")
    with pytest.raises(UsageError) as refused:
        read_file(huge, TextLimit(4000))
    assert str(refused.value) == (  # --allow-over-budget would not send it either
        f"{huge}: 404.0 MiB of text, far more than a context budget of 4,000 tokens can hold,"
        " and past the 16.0 MiB an input may attach at all; nothing was sent")
    assert TextLimit(10**9).most == TextLimit(None).most == MOST_TEXT_BYTES


def test_a_device_or_fifo_is_read_one_byte_past_the_limit_never_whole(tmp_path: Path) -> None:
    """/dev/zero grew until out of memory (a MemoryError traceback)."""
    with pytest.raises(UsageError) as refused:
        read_file(Path("/dev/zero"), LIMIT)
    assert str(refused.value) == (
        "/dev/zero: more than 1,000.0 KiB of text, far more than a context budget of 4,000 "
        "tokens can hold; nothing was sent (--allow-over-budget sends it anyway)")


def test_images_and_pdfs_have_their_own_limits_and_a_pdf_s_text_the_budget(
        tmp_path: Path) -> None:
    photo = sparse(tmp_path / "照片.png", png(2, 2), MAX_BYTES + 1)
    with pytest.raises(UsageError, match=rf"^{photo}: an image of 20,971,521 bytes; at most "
                                         r"20,971,520 can be attached; nothing was sent$"):
        read_file(photo, LIMIT)
    # Bigger than text may be: a PDF's fonts and pictures are not its text.
    scan = sparse(tmp_path / "scan.pdf", pdf("a few words"), MOST_PDF_BYTES + 1)
    with pytest.raises(UsageError, match=r"a PDF of 67,108,865 bytes; at most 67,108,864 "):
        read_file(scan, LIMIT)
    report = tmp_path / "report.pdf"
    report.write_bytes(pdf("quarterly report " * 40))  # 680 bytes of text
    assert "quarterly report" in read_file(report, LIMIT).text
    with pytest.raises(UsageError, match=r"^\S+report.pdf: [\d,]+ bytes of text, far more than "
                                         r"a context budget of 2 tokens can hold"):
        read_file(report, TextLimit(2))


@given(st.text())
def test_any_text_decodes_back_to_itself_or_is_refused(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    try:
        decoded = decode("x", data)
    except UsageError as e:
        assert re.match(r"x(:\d+)?: ", str(e))  # the file, and the line not UTF-8
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


@pytest.mark.parametrize("text", [
    "GIF89a is the 1989 revision of the GIF format; GIF87a came first.\n",
    "GIF87a 是最早的 GIF 格式。\n",
])
def test_a_note_that_begins_as_an_image_header_is_text(tmp_path: Path, text: str) -> None:
    """It was sent as a GIF of 26,912×2,639 pixels its letters spelled (1,491 tokens), and
    refused by a model that cannot see images; its text never went."""
    note = tmp_path / "formats.txt"
    note.write_text(text, encoding="utf-8")
    assert read_file(note, LIMIT) == Attachment(str(note), text)


@pytest.mark.parametrize("text", [
    "%PDF-1.7 is the version our printer wants.\nPlease convert the report.\n",
    "%PDF-1.4 是打印机要的版本。\n",
])
def test_a_note_that_begins_as_a_pdf_header_is_text(tmp_path: Path, text: str) -> None:
    """`cat printer-notes.txt | chatmem ask q` (and -a printer-notes.txt) refused it as 'not
    a readable PDF': its first five letters were taken for a PDF's header."""
    note = tmp_path / "printer-notes.txt"
    note.write_text(text, encoding="utf-8")
    assert read_file(note, LIMIT) == Attachment(str(note), text)
    with note.open("rb") as stream:
        assert read_piped(stream, LIMIT) == Attachment(STDIN, text)


def test_a_pdf_that_reads_as_text_is_still_a_pdf(tmp_path: Path) -> None:
    """An all-ASCII PDF (uncompressed, as tests/documents.py writes one) is read as a PDF
    whatever its name, and a cut one named .pdf is still refused as a PDF."""
    document = tmp_path / "order.bin"
    document.write_bytes(pdf("Order KW-58213 ships on Friday."))
    assert read_file(document, LIMIT).text == "[page 1]\nOrder KW-58213 ships on Friday."
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(b"%PDF-1.4\nnot really")
    with pytest.raises(UsageError, match="not a readable PDF"):
        read_file(cut, LIMIT)


def test_what_is_piped_in_is_told_as_a_kind_and_left_unread() -> None:
    """piped_file_kind answered with the CLI's words ('a PDF', 'an image'), a sentence's
    piece from the layer under every front end; it answers with a kind, and reads nothing
    of the stream away (the question then read is whole)."""
    for data, kind in ((pdf("Order KW-58213 ships on Friday."), PipedKind.PDF),
                       (png(4, 3), PipedKind.IMAGE), ("我们五月去杭州".encode(), None),
                       (b"%PDF-1.7 is the version the printer wants", None)):
        stream = io.BufferedReader(io.BytesIO(data))
        assert piped_file_kind(stream) is kind
        assert stream.read() == data


def test_a_pdf_s_pages_past_its_text_limit_are_not_read(tmp_path: Path) -> None:
    """A 15 KB PDF of 40 pages, each showing one 8 MB stream, was read whole (minutes a
    page, its text piling up in memory) only to be refused: reading stops at the limit, so
    how much text the rest holds is not known."""
    document = tmp_path / "many.pdf"
    document.write_bytes(pdf(*["quarterly report " * 1000] * 60))  # 17 KB of text a page
    with pytest.raises(UsageError) as refused:
        read_file(document, TextLimit(100))  # 25.6 KB: two pages
    assert str(refused.value).startswith(f"{document}: more than 25.0 KiB of text, far more")


def test_a_pdf_whose_text_fits_is_read_though_its_pages_hold_blanks(tmp_path: Path) -> None:
    """fin70 (attack70's early stop): the pages read were counted as pypdf gave them, blanks
    around each page too, where the text sent holds each page stripped: a PDF of 23 KB of
    text (and 3 KB of blanks ending its first page) was refused under a 25 KB limit as
    'more than 25.0 KiB of text'. One past the limit is still refused before the rest."""
    document = tmp_path / "report.pdf"
    document.write_bytes(pdf("word " * 4600 + " " * 3000, "the end"))
    read = read_file(document, TextLimit(100))  # 25.6 KB
    assert len(read.text.encode()) == 23_026
    assert read.text.endswith("[page 2]\nthe end")
    document.write_bytes(pdf("word " * 5200, "the end"))
    with pytest.raises(UsageError) as refused:
        read_file(document, TextLimit(100))
    assert str(refused.value).startswith(f"{document}: more than 25.0 KiB of text")
