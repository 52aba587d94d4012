"""The REPL's slash commands; importing this package fills the table (`chatmem.repl.table`).

The import order is the order /help lists them in.
"""

from chatmem.repl.commands import basics, summary, facts, settings, sessions  # noqa: I001

__all__ = ["basics", "facts", "sessions", "settings", "summary"]
