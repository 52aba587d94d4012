"""Files and piped text attached to one input: text, documents and images.

Text is read whole and checked to be text; a PDF is read as the text on its pages
(pypdf, imported only then); an image (PNG, JPEG, GIF, WebP) keeps its bytes and goes
to the model as an image part where the endpoint sees images (chatmem.images). The
engine sends each as its own message, quoted as data (memory/quoting.py), in a
`files` part of the context that `inspect` shows with its tokens. A file that
cannot be attached is an error naming it, raised before anything is sent.

Nothing is read whole before its size is known: text of more bytes than the context budget
can hold is refused unread (a pipe or /dev/zero is read one byte past it), and no file is
read past a fixed size whatever the budget (a 404 MB file aborted inside the tokenizer).
"""

from __future__ import annotations

import codecs
import logging
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import BinaryIO

from chatmem.errors import UsageError
from chatmem.images import MAX_BYTES, ImageData, image_mime, read_image
from chatmem.text_files import NotUtf8, Oversized, read_stream_within, read_within, utf8_text
from chatmem.tokens import most_bytes_within

STDIN = "standard input"
"""The name piped text is attached under."""
MOST_TEXT_BYTES = 16 * 2**20
"""The most text attached to one input whatever the budget (also with --allow-over-budget):
more than the largest context windows (about 2 million tokens, 8 MB of English) hold.
Below MAX_BYTES and MOST_PDF_BYTES, so a limit met tells which it was."""
MOST_PDF_BYTES = 64 * 2**20
"""The largest PDF read (its text is held to the text limit once extracted): fonts and
pictures make a PDF many times the size of its text."""


@dataclass(frozen=True)
class TextLimit:
    """How much text one input can attach: what `budget` tokens can hold at the most bytes a
    token has (the rule `serve` refuses a request by), at most MOST_TEXT_BYTES."""

    budget: int | None
    """None: no budget (an engine built without one)."""
    over_budget: bool = False
    """--allow-over-budget: only MOST_TEXT_BYTES limits."""

    @property
    def most(self) -> int:
        if self.over_budget or not self.budget:
            return MOST_TEXT_BYTES
        return min(most_bytes_within(self.budget), MOST_TEXT_BYTES)

    def refusal(self, name: str, found: Oversized) -> UsageError:
        """The one line refusing `name` of `found` bytes of text. Over the budget's bound it
        says the budget, not the bound: at 256 bytes a token the bound is only a cheap test
        before reading (4,000 tokens hold some 16 KB of prose, not the 1 MB it allows)."""
        size = found.size if found.size is not None else found.limit
        amount = ("more than " if found.size is None else "") + sized(size)
        if self.budget and self.most < MOST_TEXT_BYTES:
            over = (f"{name}: {amount} of text, far more than a context budget of "
                    f"{self.budget:,} tokens can hold")
            if size > MOST_TEXT_BYTES:
                return UsageError(f"{over}, and past the {sized(MOST_TEXT_BYTES)} an input may "
                                  "attach at all; nothing was sent")
            return UsageError(f"{over}; nothing was sent (--allow-over-budget sends it anyway)")
        return UsageError(f"{name}: {amount} of text; at most {sized(self.most)} can be "
                          "attached; nothing was sent")


def sized(size: int) -> str:
    """A size in bytes as people read one: 512 bytes, 2.5 KiB, 2.1 MiB."""
    if size < 1024:
        return f"{size:,} bytes"
    if size < 1024**2:
        return f"{size / 1024:,.1f} KiB"
    return f"{size / 1024**2:,.1f} MiB"


@dataclass(frozen=True)
class Attachment:
    name: str
    """The path as the user gave it, or STDIN."""
    text: str
    """What the model reads: the file's text, a PDF's pages, or an image's description."""
    image: ImageData | None = None


def read_file(path: Path, limit: TextLimit) -> Attachment:
    """The file at `path` as an attachment; UsageError naming it when it is not readable text
    or more than `limit` allows."""
    try:
        data = read_within(path, lambda head: _most_read(head, limit))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file; nothing was sent") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a file; nothing was sent") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read it ({e.strerror}); nothing was sent") from None
    if isinstance(data, Oversized):
        raise _refusal(str(path), data, limit)
    return _attachment(str(path), data, limit)


def read_piped(stream: BinaryIO, limit: TextLimit) -> Attachment | None:
    """What is piped in, as a file of its kind is attached (an image, a PDF's text, or text),
    read no further than one byte past its limit: UsageError past it; None when it is blank."""
    data = read_stream_within(stream, lambda head: _most_read(head, limit))
    if isinstance(data, Oversized):
        raise _refusal(STDIN, data, limit)
    return _attachment(STDIN, data, limit) if data.strip() else None


def _refusal(name: str, data: Oversized, limit: TextLimit) -> UsageError:
    if data.limit == MAX_BYTES:
        return UsageError(f"{name}: an image of {data.amount()}; at most {MAX_BYTES:,} can "
                          "be attached; nothing was sent")
    if data.limit == MOST_PDF_BYTES:
        return UsageError(f"{name}: a PDF of {data.amount()}; at most {MOST_PDF_BYTES:,} "
                          "bytes are read; nothing was sent")
    return limit.refusal(name, data)


def _attachment(name: str, data: bytes, limit: TextLimit) -> Attachment:
    image = read_image(data)
    if image is not None and not _reads_as_text(data):
        return Attachment(name, image_text(image), image)
    if _is_pdf(name, data):
        return Attachment(name, _within(name, pdf_text(name, data, limit), limit))
    # Read to an image's limit for its first bytes, yet not an image: text, held to text's.
    return Attachment(name, decode(name, _bytes_within(name, data, limit)))


class PipedKind(Enum):
    """A file piped in where text was expected (piped_file_kind)."""

    PDF = "pdf"
    IMAGE = "image"


def piped_file_kind(stream: BinaryIO) -> PipedKind | None:
    """Which file what is piped in begins as, a PDF or an image (bytes looked at, not
    taken); None for anything else: `cat scan.png | chatmem ask -` sent the image's bytes
    as the question, each byte not UTF-8 replaced by U+FFFD."""
    peek = getattr(stream, "peek", None)
    if peek is not None:
        head = peek(_HEAD)[:_HEAD]
    elif stream.seekable():
        head = stream.read(_HEAD)
        stream.seek(-len(head), 1)
    else:
        return None
    text = _reads_as_text(head, whole=False)
    if head.startswith(b"%PDF-") and (not text or _PDF_OBJECT.search(head)):
        return PipedKind.PDF
    if image_mime(head) is not None and not text:
        return PipedKind.IMAGE
    return None


_HEAD = 4096


def _most_read(head: bytes, limit: TextLimit) -> int:
    """How much of a file starting with `head` is read: an image's or a PDF's own limit."""
    if image_mime(head) is not None:
        return MAX_BYTES
    if head.startswith(b"%PDF-"):
        return MOST_PDF_BYTES
    return limit.most


def _is_pdf(name: str, data: bytes) -> bool:
    """Whether `data` is to be read as a PDF: a note that begins "%PDF-1.7 is the version…"
    was refused as 'not a readable PDF'. A PDF holds an object (`1 0 obj`) or a byte text
    has not; a file named .pdf is one whatever it holds, so a cut one is refused as such."""
    if not data.startswith(b"%PDF-"):
        return False
    return (name.lower().endswith(".pdf") or not _reads_as_text(data)
            or _PDF_OBJECT.search(data) is not None)


_PDF_OBJECT = re.compile(rb"\d+\s+\d+\s+obj\b")


def _reads_as_text(data: bytes, *, whole: bool = True) -> bool:
    """Whether `data` is UTF-8 without a NUL: a note that begins "GIF89a is the 1989…" is
    text, not a GIF of its letters' size; a real image always holds a byte text has not
    (a NUL among its header's sizes and fields, or a byte UTF-8 never starts with).
    Not `whole` (the head of a stream): a character cut at its end is no fault."""
    if b"\x00" in data:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=whole)
    except UnicodeDecodeError:
        return False
    return True


def _bytes_within(name: str, data: bytes, limit: TextLimit) -> bytes:
    if len(data) > limit.most:
        raise limit.refusal(name, Oversized(limit.most, len(data)))
    return data


def _within(name: str, text: str, limit: TextLimit) -> str:
    _bytes_within(name, text.encode(), limit)
    return text


def image_text(image: ImageData) -> str:
    """What the text beside an image says of it."""
    return f"an image ({image.mime}, {image.width}×{image.height} pixels), sent with this message"


def pdf_text(name: str, data: bytes, limit: TextLimit | None = None) -> str:
    """The text of a PDF's pages, page by page, through pypdf; UsageError when it has none,
    or (`limit`) as soon as the pages read hold more text than it allows and more follow,
    or as soon as one page alone holds twice that, or its drawing takes more than
    MOST_PDF_WORK tokens to read (_PdfWork)."""
    import io

    import pypdf  # only a PDF needs it: `chatmem --help` stays fast

    work = _PdfWork(limit)
    try:
        with _pypdf_quiet():
            reader = pypdf.PdfReader(io.BytesIO(data))
            # pypdf has tried the empty password: one that opens with it (an owner password
            # only, against printing or copying) opens so in every viewer, and is read.
            if reader.is_encrypted and reader.decrypt("") == pypdf.PasswordType.NOT_DECRYPTED:
                raise UsageError(f"{name}: an encrypted PDF that needs a password; decrypt "
                                 "it first; nothing was sent")
            pages: list[str] = []
            for page in reader.pages:
                work.page_begins()
                text = page.extract_text(visitor_operand_before=work.operation,
                                         visitor_text=work.text) or ""
                work.check()  # what a form read last raised, pypdf caught (_PdfWork)
                pages.append(text.strip())
                # Counted as the text sent holds it (each page stripped, below its line):
                # counting what pypdf gave, a page's blanks too, refused a PDF whose text
                # fitted. The rest is not read: a 15 KB PDF whose 40 pages each showed one
                # 8 MB stream took minutes a page, its text piling up, only to be refused;
                # one of blanks stops at the most an input may attach.
                work.size += len(f"\n\n[page {len(pages)}]\n{pages[-1]}".encode())
                if limit is not None and len(pages) < len(reader.pages) and (
                        work.size - 2 > limit.most or work.read > MOST_TEXT_BYTES):
                    raise _PdfTooMuch(text=True)
    except (_PdfTooMuch, pypdf.errors.LimitReachedError) as e:
        # pypdf's own bound on one stream's tokens (MOST_PDF_WORK's): a page's drawing, read
        # now that a visitor counts it, is past it as the whole PDF's would be.
        if isinstance(e, pypdf.errors.LimitReachedError) and "tokens" not in str(e):
            raise UsageError(f"{name}: not a readable PDF ({e}); nothing was sent") from None
        if isinstance(e, _PdfTooMuch) and e.text:
            raise (limit or TextLimit(None)).refusal(
                name, Oversized((limit or TextLimit(None)).most, None)) from None
        raise UsageError(f"{name}: a PDF whose pages take more than {MOST_PDF_WORK:,} "
                         "drawing instructions to read (far more than text needs); "
                         "nothing was sent") from None
    except pypdf.errors.DependencyError as e:
        # AES needs the cryptography package, which pypdf (and chatmem) do not require.
        raise UsageError(f"{name}: an encrypted PDF pypdf cannot read without another "
                         f"package ({e}); nothing was sent") from None
    except pypdf.errors.PyPdfError as e:
        raise UsageError(f"{name}: not a readable PDF ({e}); nothing was sent") from None
    if not any(page.strip() for page in pages):
        raise UsageError(f"{name}: a PDF without text (scanned pages?); only its text can be "
                         "attached; nothing was sent")
    return "\n\n".join(f"[page {n}]\n{text}" for n, text in enumerate(pages, 1))


MOST_PDF_WORK = 2_000_000
"""The most content tokens (operators and their operands) read from one PDF, its pages and
the forms they draw together: pypdf's own bound for one stream. A 1 KB PDF whose page drew
one form 5,000 times, each drawing 1,000 lines, kept `ask -f` busy for more than ten
minutes; counted as read, it is refused after about as much work as one large page."""


class _PdfTooMuch(Exception):
    """Raised inside pypdf's reading to stop it: `text` when the text is past the limit,
    else the work is past MOST_PDF_WORK."""

    def __init__(self, *, text: bool) -> None:
        super().__init__("text" if text else "work")
        self.text = text


class _PdfWork:
    """What reading a PDF has cost so far, told by pypdf's visitors as it reads: content
    tokens, and the text of the page being read. pypdf reads a page's whole text before
    giving it back, and a form's inside a `try` that logs what it raised and goes on: the
    first call after the limit raises again (every one does), and `check` after a page."""

    def __init__(self, limit: TextLimit | None) -> None:
        self.limit = limit
        self.tokens = 0
        self.read = 0
        """Bytes of text pypdf gave, blanks too (at most MOST_TEXT_BYTES held)."""
        self.size = 0
        """Bytes of the text sent for the pages done, each page stripped, with its line."""
        self.page_letters = 0
        """Bytes of the page being read that are no blank: its text sent holds at least these."""
        self.over: _PdfTooMuch | None = None

    def page_begins(self) -> None:
        self.page_letters = 0

    def check(self) -> None:
        if self.over is not None:
            raise self.over

    def operation(self, operator: object, operands: object, *_: object) -> None:
        self.check()
        self.tokens += 1 + sum(len(o) if isinstance(o, list) else 1
                               for o in (operands if isinstance(operands, list) else ()))
        if self.tokens > MOST_PDF_WORK:
            self.over = _PdfTooMuch(text=False)
            raise self.over

    def text(self, text: object, *_: object) -> None:
        self.check()
        if not isinstance(text, str):
            return
        self.read += len(text.encode())
        self.page_letters += len("".join(text.split()).encode())
        # Twice the limit within one page: a page just past it is read whole, so that its
        # refusal can say how much text it holds.
        if self.read > MOST_TEXT_BYTES or (self.limit is not None and (
                self.size + self.page_letters > 2 * self.limit.most)):
            self.over = _PdfTooMuch(text=True)
            raise self.over


@contextmanager
def _pypdf_quiet() -> Iterator[None]:
    """pypdf's log lines and warnings silenced while it reads: what it repairs ("incorrect
    startxref pointer") the user cannot act on, and what it cannot read is chatmem's one
    line; with no handler configured, Python's last resort printed them on stderr."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def decode(name: str, data: bytes) -> str:
    """`data` as text; a binary file (a NUL byte, or not UTF-8) is refused, not mangled.

    Text saved as UTF-16 (Windows' "Unicode") starts with its byte-order mark and is read
    as such: half its bytes are NUL, and it was refused as a binary file."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            raise UsageError(f"{name}: starts as UTF-16 text but is not (an odd byte or a "
                             "broken pair); nothing was sent") from None
        if "\x00" not in text:
            return text
    if b"\x00" in data:
        raise UsageError(f"{name}: a binary file (it holds NUL bytes); only text can be "
                         "attached; nothing was sent")
    # A byte-order mark is not part of the text. Text in another encoding (GBK, Big5,
    # Shift-JIS, Latin-1: a guess between them would garble it) is named by its line, as
    # every text file chatmem reads is, and how to attach it said.
    read = utf8_text(data)
    if isinstance(read, NotUtf8):
        what = "text" if name == STDIN else "file"
        raise UsageError(f"{read.said(name, what)}; nothing was sent")
    return read
