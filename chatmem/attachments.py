"""Files and piped text attached to one input: text, documents and images.

Text is read whole and checked to be text; a PDF is read as the text on its pages
(pypdf, imported only then); an image (PNG, JPEG, GIF, WebP) keeps its bytes and goes
to the model as an image part where the endpoint sees images (chatmem.images). The
engine sends each as its own message, quoted as data (memory/quoting.py), in a
`files` part of the context that `inspect` shows with its tokens. A file that
cannot be attached is an error naming it, raised before anything is sent.
"""

from __future__ import annotations

import codecs
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from chatmem.errors import UsageError
from chatmem.images import MAX_BYTES, ImageData, read_image

STDIN = "standard input"
"""The name piped text is attached under."""


@dataclass(frozen=True)
class Attachment:
    name: str
    """The path as the user gave it, or STDIN."""
    text: str
    """What the model reads: the file's text, a PDF's pages, or an image's description."""
    image: ImageData | None = None


def read_file(path: Path) -> Attachment:
    """The file at `path` as an attachment; UsageError naming it when it is not readable text."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file; nothing was sent") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a file; nothing was sent") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read it ({e.strerror}); nothing was sent") from None
    image = read_image(data)
    if image is not None:
        if len(data) > MAX_BYTES:
            raise UsageError(f"{path}: an image of {len(data):,} bytes; at most "
                             f"{MAX_BYTES:,} can be attached; nothing was sent")
        return Attachment(str(path), image_text(image), image)
    if data.startswith(b"%PDF-"):
        return Attachment(str(path), pdf_text(str(path), data))
    return Attachment(str(path), decode(str(path), data))


def image_text(image: ImageData) -> str:
    """What the text beside an image says of it."""
    return f"an image ({image.mime}, {image.width}×{image.height} pixels), sent with this message"


def pdf_text(name: str, data: bytes) -> str:
    """The text of a PDF's pages, page by page, through pypdf; UsageError when it has none."""
    import io

    import pypdf  # only a PDF needs it: `chatmem --help` stays fast

    try:
        with _pypdf_quiet():
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise UsageError(f"{name}: an encrypted PDF; decrypt it first; nothing was sent")
            pages = [page.extract_text() or "" for page in reader.pages]
    except pypdf.errors.PyPdfError as e:
        raise UsageError(f"{name}: not a readable PDF ({e}); nothing was sent") from None
    if not any(page.strip() for page in pages):
        raise UsageError(f"{name}: a PDF without text (scanned pages?); only its text can be "
                         "attached; nothing was sent")
    return "\n\n".join(f"[page {n}]\n{text.strip()}" for n, text in enumerate(pages, 1))


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
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{name}: not UTF-8 text (byte {e.start} is {data[e.start]:#04x}); "
                         "only text can be attached; nothing was sent") from None
    return text.removeprefix("\ufeff")  # a byte-order mark is not part of the text
