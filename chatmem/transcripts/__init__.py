"""Transcripts: the format's items, reading the three formats, writing JSONL, JSON and Markdown."""
