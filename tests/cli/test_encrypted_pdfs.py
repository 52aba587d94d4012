"""Encrypted PDFs attached: one every viewer opens without asking (only an owner password,
against printing or copying) is read as any other; one that needs a password, or a cipher
pypdf cannot read on this install, is one line naming it, never a traceback."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pypdf
import pytest
from cli_runner import invoke
from documents import pdf


def encrypted(text: str, user_password: str, algorithm: str) -> bytes:
    """A one-page PDF showing `text`, encrypted by pypdf with `algorithm`."""
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(pdf(text)))
    writer.encrypt(user_password, "owner-secret", algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-256"])
def test_a_pdf_with_only_an_owner_password_is_read_as_any_other(
        chat_server, tmp_path: Path, algorithm: str) -> None:
    """Bank statements and forms lock printing or copying with an owner password and open
    with none: they were refused as "an encrypted PDF; decrypt it first"."""
    document = tmp_path / "statement.pdf"
    document.write_bytes(encrypted("Balance due 1 March: 420 EUR", "", algorithm))
    result = invoke("ask", "-m", "m", "-f", str(document), "what is due?",
                    env={"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-t"})
    assert result.exit_code == 0, result.stderr
    attached = chat_server.requests[-1]["messages"][-2]["content"]
    assert "[page 1]\nBalance due 1 March: 420 EUR" in attached


def test_a_pdf_that_needs_a_password_is_refused_naming_it(tmp_path: Path) -> None:
    document = tmp_path / "locked.pdf"
    document.write_bytes(encrypted("Salary 9000", "open-sesame", "RC4-128"))
    result = invoke("ask", "-f", str(document), "read it", "--provider", "scripted")
    assert result.exit_code == 2
    assert result.stderr == (f"error: {document}: an encrypted PDF that needs a password; "
                             "decrypt it first; nothing was sent\n")


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
