"""The REPL's slash commands; importing this package fills the table (`chatmem.repl.table`)."""

from chatmem.repl.commands import basics, facts, sessions, summary

__all__ = ["basics", "facts", "sessions", "summary"]
