"""chatmem: a chat REPL whose memory you can choose, see and measure."""

__version__ = "0.1.0"
