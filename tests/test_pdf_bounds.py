"""A hostile PDF is refused after bounded work: one page's text, or the drawing its page and
forms repeat, is not read whole before the limit says no (attack71)."""

from __future__ import annotations

from pathlib import Path

import pytest
from documents import pdf, pdf_drawing_a_form

from chatmem import attachments
from chatmem.attachments import TextLimit, read_file
from chatmem.errors import UsageError


def test_one_page_of_far_more_text_than_the_limit_is_not_read_whole(tmp_path: Path) -> None:
    """One page was read to its end before its size was known (the rule stopped only between
    pages): a page of 17 KB under a 2.5 KB limit said '16.6 KiB of text'. Reading now stops
    within the page, once it holds twice the limit, so the refusal says 'more than'."""
    document = tmp_path / "one-page.pdf"
    document.write_bytes(pdf("quarterly report " * 1000))
    with pytest.raises(UsageError) as refused:
        read_file(document, TextLimit(10))  # 2.5 KiB
    assert str(refused.value).startswith(f"{document}: more than 2.5 KiB of text, far more")
    # Just past the limit, it is read whole and its size said.
    document.write_bytes(pdf("quarterly report " * 200))
    with pytest.raises(UsageError) as refused:
        read_file(document, TextLimit(10))
    assert str(refused.value).startswith(f"{document}: 3.3 KiB of text, far more")


def test_a_form_drawn_over_and_over_is_refused_once_its_work_is_past_the_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1 KB PDF whose page drew one form 5,000 times, each time 1,000 lines, kept
    `ask -f` busy past ten minutes: pypdf reads a form again at each drawing. The work is
    counted as pypdf reads (the bound lowered here so the test is quick: the same rule)."""
    monkeypatch.setattr(attachments, "MOST_PDF_WORK", 100_000, raising=False)
    document = tmp_path / "forms.pdf"
    document.write_bytes(pdf_drawing_a_form(5000, "BT /F1 12 Tf 72 720 Td () Tj ET\n" * 10))
    assert len(document.read_bytes()) < 2000
    with pytest.raises(UsageError) as refused:
        read_file(document, TextLimit(4000))
    assert str(refused.value) == (
        f"{document}: a PDF whose pages take more than 100,000 drawing instructions to read "
        "(far more than text needs); nothing was sent")
    # Drawn a few times, its text is read.
    document.write_bytes(pdf_drawing_a_form(3, "BT /F1 12 Tf 72 720 Td (Order KW-58213) Tj ET\n"))
    assert "Order KW-58213" in read_file(document, TextLimit(4000)).text
