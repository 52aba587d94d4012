"""`chatmem sessions export|import`: a session to a transcript file and back, every session
to an export archive and back."""

from typing import TYPE_CHECKING, Annotated

import typer

from chatmem.cli.completion import session_names
from chatmem.cli.grammar import file_name
from chatmem.cli.opening import open_workspace, settings_from
from chatmem.cli.options import ConfigOption, DbOption, JsonOption
from chatmem.cli.output import (
    consoles,
    done_for_good,
    handles_errors,
    print_json,
    say_passed_over,
    stdin_transcript,
    stopped_as_by_ctrl_c,
    warn_if_dated_back,
)

if TYPE_CHECKING:
    from pathlib import Path

    from chatmem.app.session_files import FileLeftOut
    from chatmem.config.settings import Settings
    from chatmem.privacy.restore import Archive


@handles_errors
def export(
    name: Annotated[str | None, typer.Argument(metavar="SESSION", show_default=False,
                                               autocompletion=session_names,
                                               help="Session name (or --all).")] = None,
    file: Annotated[
        str | None, typer.Argument(metavar="FILE", show_default=False, callback=file_name,
                                   help="File to write, as -o FILE (as /export FILE takes it "
                                        "in the chat).")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every session with its summaries, and "
                                                     "every fact, in one .zip archive "
                                                     "(FILE.zip or -o FILE.zip).")] = False,
    output: Annotated[
        str | None, typer.Option("--output", "-o", show_default=False, metavar="FILE",
                                 callback=file_name,
                                 help="File to write, in the format its extension names: "
                                      ".jsonl, .json or .md (default: standard output).")
    ] = None,
    format_: Annotated[
        str | None, typer.Option("--format", show_default=False, metavar="FORMAT",
                                 help="jsonl (lossless, imports back), json or markdown; "
                                      "default: from the extension, jsonl on stdout.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Write a session as a transcript: .jsonl or .json (both import back), or .md to read.

    With --all, everything the history holds goes into one zip archive: each
    session's transcript and summaries, and every fact (see README.txt inside).

    \b
    Example: chatmem sessions export support support.md
    """
    import sys
    from pathlib import Path

    from chatmem.app.session_export import export_session
    from chatmem.app.session_files import files_left_out, session_transcript
    from chatmem.errors import UsageError
    from chatmem.render.counts import counted
    from chatmem.transcripts.writer import EXPORT_FORMATS, transcript_text

    if all_ and file is None and output is None and (name or "").lower().endswith(".zip"):
        name, file = None, name  # `export --all out.zip`: the one word is the archive
    if file is not None:
        if output is not None and output != file:
            raise UsageError(f"two files given: {file!r} and -o {output!r}; give one")
        output = file
    if all_ or name is None:
        export_all(name, output, force, settings_from(config, db))
        return
    if format_ is not None and format_ not in EXPORT_FORMATS:
        raise UsageError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, got {format_!r}")
    if output is None or output == "-":
        with open_workspace(settings_from(config, db), create=False) as ws:
            transcript = session_transcript(ws, name)
            zone = ws.settings.zone  # the Markdown's times: the user's, as the tables show
            left_out = files_left_out(ws, name)
        text = transcript_text(transcript, format_ or "jsonl", zone)
        if sys.stdout.isatty():
            from chatmem.render import printable

            text = printable(text)  # markdown on a terminal: escapes shown, not obeyed
        sys.stdout.write(text)
        _say_files_left_out(left_out)
        return
    with open_workspace(settings_from(config, db), create=False) as ws:
        done = export_session(ws, name, Path(output), format_, force=force)
    # Said as the archive says it: a copy of an encrypted history is no longer protected.
    consoles()[1].print(f"exported {counted(done.messages, 'message')} to {output}"
                        f" ({done.format})"
                        + ("; the file is not encrypted" if done.unencrypted_copy else ""),
                        markup=False, soft_wrap=True)
    _say_files_left_out(done.files_left_out)


def _say_files_left_out(left_out: "list[FileLeftOut]") -> None:
    from chatmem.render.sessions import files_left_out_line

    if line := files_left_out_line(left_out):
        consoles()[1].print(line, markup=False, soft_wrap=True)


def export_all(name: str | None, output: str | None, force: bool, settings: "Settings") -> None:
    from pathlib import Path

    from chatmem.app.session_files import export_everything
    from chatmem.errors import UsageError
    from chatmem.render.counts import counted
    from chatmem.render.sessions import archive_files_left_out_line

    if name is not None:
        raise UsageError("give a SESSION or --all, not both")
    if output is None or output == "-":
        raise UsageError("missing SESSION, or --all with -o FILE.zip")
    with open_workspace(settings, create=False) as ws:
        report = export_everything(ws, Path(output), force=force)
    say_passed_over((p.session, p.owner, p.strategy) for p in report.passed_over)
    consoles()[1].print(
        f"exported {counted(report.sessions, 'session')} "
        f"({counted(report.messages, 'message')}), "
        f"{counted(report.summaries, 'summary version')} and "
        f"{counted(report.facts, 'fact')} to {output}; "
        "the archive is not encrypted", markup=False, soft_wrap=True)
    if report.images_left_out:
        consoles()[1].print(
            f"not in the archive: {counted(report.images_left_out, 'image')} sent with"
            " messages (an archive keeps none; chatmem sessions copy --to FILE.db does)",
            markup=False, soft_wrap=True)
    if line := archive_files_left_out_line(report.files_left_out):
        consoles()[1].print(line, markup=False, soft_wrap=True)


@handles_errors
def import_(
    file: Annotated[str, typer.Argument(metavar="FILE", callback=file_name,
                                        help="Transcript: JSON Lines, {\"messages\": [...]} "
                                             "or a JSON list of messages (- reads stdin); or"
                                             " an archive of sessions export --all (.zip).")],
    name: Annotated[
        str | None, typer.Argument(metavar="SESSION", show_default=False,
                                   help="Name of the new session (default: made from the "
                                        "transcript's title or the file name).")
    ] = None,
    name_option: Annotated[
        str | None, typer.Option("--name", metavar="SESSION", show_default=False,
                                 help="The session name, as an option.")
    ] = None,
    index: Annotated[
        bool, typer.Option("--index/--no-index",
                           help="Embed the messages in the background when recall ranks by "
                                "meaning (--no-index: say how many wait).")
    ] = True,
    db: DbOption = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """Create a session from a transcript file: messages, system prompts, probes, recording.

    An archive of `sessions export --all` restores every session in it, each in its
    user profile with its retention, and its facts; all or nothing.

    \b
    Example: chatmem sessions import sessions/support.jsonl support
    """
    from pathlib import Path

    from chatmem.app.indexing import start_backlogs
    from chatmem.app.session_files import import_transcript
    from chatmem.app.sessions import (
        check_session_name,
        find_session,
        normal_name,
        session_name_from,
    )
    from chatmem.errors import UsageError
    from chatmem.privacy.restore import is_archive, read_archive
    from chatmem.privacy.secrets import TypedMask
    from chatmem.providers import typed_secrets
    from chatmem.render.counts import counted
    from chatmem.render.logs import question_start
    from chatmem.render.notices import notice_text
    from chatmem.render.progress import counted_progress
    from chatmem.render.sessions import backlog_lines
    from chatmem.transcripts.reader import read_transcript

    if name and name_option and name != name_option:
        raise UsageError(f"two names given: {name!r} and --name {name_option!r}; give one")
    chosen_name = name or name_option
    path = Path(file)
    if file != "-" and is_archive(path):
        if chosen_name is not None:
            raise UsageError(f"{file} is an archive: its sessions keep their names; give no "
                             "SESSION (rename one afterwards: chatmem sessions rename)")
        import_all(read_archive(path), index, config, settings_from(config, db), json_out)
        return
    if chosen_name is not None:
        check_session_name(chosen_name)  # before the file is read
    transcript = stdin_transcript() if file == "-" else read_transcript(path)
    warn_if_dated_back(transcript)
    settings = settings_from(config, db)
    # Masked as the import masks it (the session is named from it): the key in a title.
    origin = (TypedMask(typed_secrets(settings, None))(transcript.title) if transcript.title
              else path.stem)
    if chosen_name is None and not transcript.title and file == "-":
        raise UsageError("a transcript piped in (FILE -) has no file name to name the session"
                         " after: give SESSION")
    session_name = chosen_name or session_name_from(origin)
    err = consoles()[1]
    # A kill or a closed terminal deletes what was written, as Ctrl-C does (after kill -9:
    # the next import); the bar shows on a terminal only.
    with open_workspace(settings) as ws:
        if find_session(ws, session_name) is not None:
            # Said before anything is read into the history, with the way on: the file
            # was exported from this history, or imported before (import_transcript
            # refuses it too, worded for no command).
            raise UsageError(f"a session named {session_name!r} already exists; import it"
                             f" under another name: chatmem sessions import {file} NAME")
        try:
            with stopped_as_by_ctrl_c(), counted_progress(
                    err, f"importing into {session_name}") as progress:
                # Named, it stands: Ctrl-C then no longer stops what says so.
                imported = import_transcript(ws, transcript, session_name, progress=progress,
                                             published=done_for_good)
        except (KeyboardInterrupt, typer.Exit):
            # Said only "interrupted": whether half a session was left was not. Stopped as
            # it was named (a kill), it stands: "nothing was imported" said it did not.
            done = find_session(ws, session_name) is not None
            err.print(f"interrupted after the import: session {session_name} was created"
                      if done else
                      f"nothing was imported: session {session_name} was not created",
                      markup=False, soft_wrap=True)
            raise
        probes = imported.probes
        note = f" and {counted(probes, 'probe')}" if probes else ""
        named = (f" (named from {origin!r})"
                 if chosen_name is None and session_name != normal_name(origin) else "")
        consoles()[1].print(
            f"imported {counted(imported.messages, 'message')}{note}"
            f" into session {session_name}{named}",
            markup=False, soft_wrap=True,
        )
        if imported.session.user != settings.user:
            consoles()[1].print(f"session {session_name} is in user {imported.session.user}'s"
                                " profile, as the transcript says", markup=False, soft_wrap=True)
        if imported.session.system:
            # It is an instruction from then on, not data: a transcript someone shared says
            # what the model will obey, so the user is told, where a system message is quoted.
            consoles()[1].print(
                f"the transcript sets the session's system prompt, which the model follows: "
                f"{question_start(imported.session.system, 80)!r} (/system in the chat changes it)",
                markup=False, soft_wrap=True)
        for notice in (imported.params_dropped, imported.credentials_replaced):
            if notice is not None:
                consoles()[1].print(notice_text(notice), markup=False, soft_wrap=True)
        if imported.strategy is None:
            consoles()[1].print(
                f"session {session_name} keeps its memory with strategy "
                f"{imported.session.strategy!r}, which no installed plugin provides here; "
                f"install it, or go on with another (chatmem chat {session_name} -s NAME)",
                markup=False, soft_wrap=True)
        for line in backlog_lines(start_backlogs(ws, config, [session_name],
                                                 background=index)):
            consoles()[1].print(line, markup=False, soft_wrap=True)
    if json_out:  # the name chosen, which stderr says in a sentence
        from chatmem.render.payloads import imported_json

        print_json(imported_json([imported], 0))


def import_all(archive: "Archive", index: bool, config: "Path | None",
               settings: "Settings", json_out: bool = False) -> None:
    """`sessions import ARCHIVE.zip`: every session and fact of an export archive."""
    from chatmem.app.indexing import start_backlogs
    from chatmem.app.session_files import import_archive
    from chatmem.render.counts import counted
    from chatmem.render.history_notices import restored_past_retention_text
    from chatmem.render.notices import notice_text
    from chatmem.render.sessions import backlog_lines

    with open_workspace(settings) as ws:
        with stopped_as_by_ctrl_c():  # as one transcript's import
            imported = import_archive(ws, archive, warn_if_dated_back)
        err = consoles()[1]
        for one in imported.sessions:
            kept = one.session.retention_days
            err.print(f"imported {counted(one.messages, 'message')} into"
                      f" session {one.session.name} (user {one.session.user}"
                      + ("" if kept is None else ", kept for good" if kept == 0
                         else f", erased after {kept} days idle") + ")",
                      markup=False, soft_wrap=True)
            for notice in (one.params_dropped, one.credentials_replaced):
                if notice is not None:
                    err.print(notice_text(notice), markup=False, soft_wrap=True)
        by_user: dict[str, list[str]] = {}
        for fact in imported.profile_facts:
            by_user.setdefault(str(fact.user), []).append(fact.key)
        for user, keys in by_user.items():
            # Someone else's archive would speak for the user in every fact-using session.
            err.print(f"added to user {user}'s profile, sent by every fact-using session of"
                      f" it: {counted(len(keys), 'fact')} ({', '.join(keys)}); chatmem facts"
                      f" forget KEY --user {user} takes one out", markup=False, soft_wrap=True)
        err.print(f"restored {counted(len(imported.sessions), 'session')} and "
                  f"{counted(imported.facts, 'fact')} from {archive.path}",
                  markup=False, soft_wrap=True)
        if imported.past_retention is not None:
            err.print(restored_past_retention_text(imported.past_retention),
                      markup=False, soft_wrap=True)
        if imported.summaries_left:
            err.print(f"not restored: {counted(imported.summaries_left, 'summary version')}"
                      " in summaries/ and the details they pinned (kept there to read); a"
                      " summarising strategy summarises the restored turns again",
                      markup=False, soft_wrap=True)
        if archive.images_left_out:
            err.print(f"not restored: {counted(archive.images_left_out, 'image')} sent with"
                      " these sessions' messages, which the archive does not hold (they stay"
                      " in the history it was exported from)", markup=False, soft_wrap=True)
        names = [one.session.name for one in imported.sessions]
        for line in backlog_lines(start_backlogs(ws, config, names, background=index)):
            err.print(line, markup=False, soft_wrap=True)
    if json_out:
        from chatmem.render.payloads import imported_json

        print_json(imported_json(imported.sessions, imported.facts, imported.past_retention))
