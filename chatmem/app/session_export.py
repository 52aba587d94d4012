"""Exporting one session to a file: the use case `sessions export SESSION FILE` and the
REPL's /export share (`sessions export --all`: session_files.export_everything)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from chatmem.app.session_files import FileLeftOut, files_left_out, session_transcript

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.store import SessionRecord


@dataclass(frozen=True)
class Exported:
    """A session written to a file (export_session)."""

    messages: int
    format: str
    """jsonl, json or markdown: what the file's extension (or --format) named."""
    unencrypted_copy: bool
    """The history is encrypted and the file is not: the copy is no longer protected."""
    files_left_out: list[FileLeftOut]
    """The files its turns attached, which a transcript does not hold."""


def export_session(workspace: Workspace, session: SessionRecord | str, path: Path,
                   format_: str | None = None, *, force: bool = False) -> Exported:
    """Write `session`'s transcript to the new file `path`, in the format its extension
    names (`format_`, --format, must agree); an existing file is replaced only with `force`.
    The Markdown's times are the user's zone's, as the tables show them. The format is
    checked before the history is opened (an encrypted file's key is asked for then)."""
    from chatmem.transcripts.writer import export_format, write_transcript

    fmt = export_format(path, format_)
    transcript = session_transcript(workspace, session)
    left_out = files_left_out(workspace, session)
    write_transcript(transcript, path, fmt, force=force, zone=workspace.settings.zone)
    return Exported(len(transcript.messages), fmt, workspace.store.encrypted, left_out)
