"""chatmem: a chat REPL whose memory you can choose, see and measure."""

__version__ = "0.1.0"


def install_hint(extra: str) -> str:
    """How to add an optional part: from the checkout, never by name from the package index
    (a different project holds the name chatmem there)."""
    return f"pip install -e '.[{extra}]' in the chatmem checkout"
