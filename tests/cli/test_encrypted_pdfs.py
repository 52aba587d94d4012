"""Encrypted PDFs attached: one in a cipher pypdf cannot read on this install is one line
naming it, never a traceback."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pypdf
import pytest
from documents import pdf


def encrypted(text: str, user_password: str, algorithm: str) -> bytes:
    """A one-page PDF showing `text`, encrypted by pypdf with `algorithm`."""
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(pdf(text)))
    writer.encrypt(user_password, "owner-secret", algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize("user_password", ["", "open-sesame"])
def test_an_aes_pdf_without_the_cryptography_package_is_one_line(
        tmp_path: Path, user_password: str) -> None:
    """pypdf reads AES only through the cryptography package, which chatmem does not
    require: an AES-256 PDF (what Acrobat and Word write) ended in pypdf's DependencyError
    and a traceback. A real process without the package (an import of it fails, as in an
    install that lacks it)."""
    document = tmp_path / "contract.pdf"
    document.write_bytes(encrypted("Notice period starts 1 March", user_password, "AES-256"))
    without = ("import sys; sys.modules['cryptography'] = sys.modules['Crypto'] = None; "
               "from chatmem.cli import main; sys.argv[0] = 'chatmem'; main()")
    done = subprocess.run(
        [sys.executable, "-c", without, "ask", "read it", "-f", str(document),
         "--provider", "scripted", "--db", str(tmp_path / "h.db")],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)})
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"error: {document}: an encrypted PDF pypdf cannot read without "
                           "another package (cryptography>=3.1 is required for AES "
                           "algorithm); nothing was sent\n")
