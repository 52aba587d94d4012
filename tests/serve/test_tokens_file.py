"""Reading `chatmem serve --tokens FILE`: the TOML text, whatever its editor saved."""

from __future__ import annotations

from pathlib import Path

from chatmem.serve.tokens_file import load_tokens


def test_a_tokens_file_saved_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_bytes(b"\xef\xbb\xbf" + f'[tokens]\n"{"令牌" * 8}" = "历史.db"\n'.encode())
    path.chmod(0o600)
    assert load_tokens(path) == {"令牌" * 8: "历史.db"}
