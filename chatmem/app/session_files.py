"""Sessions to and from files: a session as a transcript, every session in one archive, and
a transcript or an archive imported as new sessions. Each use case takes a workspace and
returns a value; an import is written in batches under an unfinished name and named at
the end, all or nothing (store.unfinished)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from chatmem.errors import StrategyError, TranscriptError, UsageError

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.history_notices import RestoredPastRetention
    from chatmem.memory.base import Strategy
    from chatmem.notices import CredentialInInput, SavedParamsDropped
    from chatmem.privacy.archive import ArchiveReport
    from chatmem.privacy.restore import Archive
    from chatmem.store import FactRecord, SessionRecord
    from chatmem.transcripts.format import Transcript


def session_transcript(workspace: Workspace, session: SessionRecord | str) -> Transcript:
    """A stored session as a transcript (what export writes and replay reads)."""
    from chatmem.transcripts.format import stored_transcript

    store = workspace.store
    record = store.sessions.session(session) if isinstance(session, str) else session
    return stored_transcript(store, record)


@dataclass(frozen=True)
class FileLeftOut:
    """A file a turn of the session attached (`/attach`, `-a`): its text or image went to
    the model in that turn's context, which a transcript does not hold (README)."""

    turn: int
    name: str


def files_left_out(workspace: Workspace, session: SessionRecord | str) -> list[FileLeftOut]:
    """The files the turns of `session`'s history attached, in turn order: an export of
    its transcript leaves them out, and says so."""
    from chatmem.memory.quoting import attached_from_block
    from chatmem.store.records import TurnStatus

    store = workspace.store
    record = store.sessions.session(session) if isinstance(session, str) else session
    left: list[FileLeftOut] = []
    for turn in store.turns.turns(record.id, TurnStatus.OK, expanded=False):
        if turn.superseded_by is not None or turn.history_turn is None:
            continue
        for part in turn.context.get("parts", ()):
            if part.get("kind") == "files":
                left += [FileLeftOut(turn.history_turn, quoted[0] if quoted else "a file")
                         for m in part["messages"]
                         for quoted in [attached_from_block(m["content"])]]
    return left


def export_everything(workspace: Workspace, path: Path, *, force: bool = False) -> ArchiveReport:
    """Every session with its summaries, and every fact, in one zip archive at `path`."""
    from chatmem import __version__
    from chatmem.privacy.archive import write_archive
    from chatmem.transcripts.format import stored_transcript
    from chatmem.transcripts.writer import to_jsonl

    if path.suffix.lower() != ".zip":
        raise UsageError(f"--all writes a zip archive: name it FILE.zip, not {str(path)!r}")
    store = workspace.store
    attached: dict[int, int] = {}

    def transcript(session: SessionRecord) -> str:
        # The files its turns attached went to the model; the transcript holds only the
        # words typed, so the export says how many stay behind, as a single one does.
        if left := files_left_out(workspace, session):
            attached[session.id] = len(left)
        return to_jsonl(stored_transcript(store, session))

    report = write_archive(store, path, transcript, version=__version__, force=force)
    # Each named as the user names it (OWNER/NAME when shared with them): by its name, one
    # shared under the name of one of theirs was counted as that one.
    addresses = store.sessions.session_addresses(attached)
    return replace(report, files_left_out=tuple((addresses.get(i, str(i)), n)
                                                for i, n in attached.items()))


@dataclass(frozen=True)
class Imported:
    session: SessionRecord
    strategy: Strategy | None
    """None when its plugin is not installed here (the session keeps its name)."""
    messages: int
    probes: int
    params_dropped: SavedParamsDropped | None = None
    """The saved parameters of its plugin strategy that the installed version no longer
    takes: stored as the transcript has them, left out as opening the session leaves them."""
    credentials_replaced: CredentialInInput | None = None
    """The transcript's messages held a credential chatmem runs with, stored replaced by
    its label (as a turn's input is: Engine.without_credentials)."""


IMPORT_BATCH = 2_000
"""Messages an import writes per transaction: each holds the history's write lock for a
fraction of a second (80,000 messages in one held it for 13 s, and every other writer
waited), and the session stays under an unfinished name until all are written."""

ImportProgress = Callable[[int, int], None]
"""Told (messages written, messages in the transcript) after each batch commits."""


def import_transcript(workspace: Workspace, transcript: Transcript, name: str, *,
                      progress: ImportProgress | None = None,
                      batch: int = IMPORT_BATCH,
                      published: Callable[[], None] | None = None) -> Imported:
    """A new session `name` from `transcript`: messages, system prompts, probes and what it
    was recorded with, under its own strategy (else the configured one). Written `batch`
    messages a transaction under an unfinished name (store.unfinished), and named in one
    short transaction at the end: an import that fails or is stopped leaves no session,
    and another process's write waits for one batch, not the whole import. `published` is
    called once the session has its name (from then on it stands, whatever stops us)."""
    from chatmem.errors import StoreError
    from chatmem.store import unfinished

    store = workspace.store
    _check_free(workspace, name)  # before anything is written
    unfinished.remove_leftovers(store)
    made: list[tuple[str, int]] = []
    try:
        written = _write_unfinished(workspace, transcript, made, progress, batch)
        unfinished.publish(store, made, [name],
                           lambda taken: StoreError(f"a session named {taken!r} already exists"))
    except BaseException:
        unfinished.discard(store, made)  # after kill -9: the next import's remove_leftovers
        raise
    if published is not None:
        published()
    return _named(workspace, written)


def _check_free(workspace: Workspace, name: str) -> None:
    from chatmem.errors import StoreError
    from chatmem.store import check_session_name

    check_session_name(name)
    if workspace.store.sessions.find_session(name) is not None:
        raise StoreError(f"a session named {name!r} already exists")


def _named(workspace: Workspace, written: Imported) -> Imported:
    """`written` as published: its session under its own name."""
    import dataclasses

    session = workspace.store.sessions.session_by_id(written.session.id)
    dropped = written.params_dropped
    return dataclasses.replace(written, session=session, params_dropped=dropped and
                               dataclasses.replace(dropped, session=session.name))


def _write_unfinished(workspace: Workspace, transcript: Transcript,
                      made: list[tuple[str, int]], progress: ImportProgress | None,
                      batch: int) -> Imported:
    """`transcript` written as a session under a new unfinished name, noted in `made` once
    it exists (so that a failure after it deletes it)."""
    from chatmem.notices import CredentialInInput
    from chatmem.privacy.secrets import TypedMask
    from chatmem.store import unfinished
    from chatmem.transcripts.format import TranscriptMessage, message_dicts, transcript_masked

    settings = workspace.settings
    chosen: Strategy | None = None
    dropped: SavedParamsDropped | None = None
    if transcript.strategy and _not_installed(workspace, transcript.strategy):
        # Kept by name, as `sessions copy` keeps it: opening the session says whose it is
        # and how to go on, and the exchange is not lost for want of a plugin here.
        strategy, params = transcript.strategy, dict(transcript.params)
    else:
        chosen, dropped = _transcript_strategy(workspace, transcript)
        strategy, params = chosen.name, dict(chosen.params)
        if dropped is not None:
            # Kept as saved, for the version that takes them, as the exporting history kept
            # them (its own export of the session was refused here otherwise).
            params = dict(transcript.params)
    store = workspace.store  # first: the key it opens with is masked too
    masked = TypedMask(workspace.typed_secrets())
    transcript = transcript_masked(transcript, masked)
    replaced = CredentialInInput(masked.found) if masked.found else None
    messages = message_dicts(
        [m for m in transcript.on_its_clock() if isinstance(m, TranscriptMessage)])
    prompts = transcript.system_prompts()
    hidden = unfinished.unfinished_name("import")
    session = store.sessions.create_session(
        hidden, strategy, params, provider=transcript.provider,
        model=transcript.model, system=prompts[-1][1],
        user=transcript.user or settings.user, tokenizer=transcript.tokenizer,
        unfinished=True,
    )
    made.append((hidden, session.id))
    with store.write():
        if transcript.retention_days is not None:
            store.retention.set_retention(session.id, transcript.retention_days)
        store.sessions.set_system_prompts(session.id, prompts)
    batch = max(batch, 1)
    for start in range(0, len(messages), batch):
        # Each batch its own transaction: it goes on after the last stored message.
        store.history.import_messages(session.id, messages[start : start + batch])
        if progress is not None:
            progress(min(start + batch, len(messages)), len(messages))
    store.sessions.add_probes(session.id, [
        {"after_position": position, "question": p.question, "expect_ids": p.expect_ids,
         "expect_text": p.expect_text, "before_prompt": before_prompt}
        for position, p, before_prompt in transcript.probe_positions()])
    return Imported(session, chosen, len(transcript.messages), len(transcript.probes),
                    dropped, replaced)


@dataclass(frozen=True)
class ArchiveImported:
    sessions: list[Imported]
    facts: int
    summaries_left: int = 0
    """Summary versions the archive holds (summaries/) and the import does not restore: their
    covered messages are named by the exporting history's ids, which the transcripts do not
    carry; a summarising strategy summarises the restored turns again."""
    profile_facts: tuple[FactRecord, ...] = ()
    """The live profile facts the import added: every fact-using session of that profile
    sends them from now on, so the user is told which (an archive may be someone else's)."""
    past_retention: RestoredPastRetention | None = None
    """The restored sessions idle past their retention already (they keep when they were
    last used), which the next start or prune would erase unless the user keeps them."""


def import_archive(workspace: Workspace, archive: Archive,
                   on_read: Callable[[Transcript], None] | None = None, *,
                   batch: int = IMPORT_BATCH) -> ArchiveImported:
    """Every session of an export archive, each under its profile with its retention, and
    its facts; all or nothing: a name the history has already (refused as one import
    refuses it), a transcript that does not parse or a profile fact the history holds
    otherwise leaves nothing imported. Transcripts are read one at a time, each written
    (as `import_transcript` writes one, under an unfinished name) before the next is read
    (`on_read` sees each as it is read); the names and the facts come in one transaction
    at the end."""
    from chatmem.store import check_session_name, unfinished

    store = workspace.store

    def taken(name: str) -> UsageError:
        # As one import refuses a taken name.
        return UsageError(f"a session named {name!r} already exists; nothing of"
                          f" {archive.path} was imported (rename yours: chatmem sessions"
                          " rename)")

    for listed in archive.sessions:
        check_session_name(listed.name)  # as one import checks its name (read_archive did)
        if store.sessions.find_session(listed.name) is not None:
            raise taken(listed.name)  # before anything is read or written
    unfinished.remove_leftovers(store)
    made: list[tuple[str, int]] = []
    written: list[Imported] = []
    names: list[str] = []
    ids: dict[str, int] = {}
    titles: list[str] = []
    facts: list[int] = []
    added: list[FactRecord] = []

    def restore_facts() -> None:
        from chatmem.store import FactScope

        for name, restored in zip(names, written, strict=True):
            # Then an older archive's, which named a shared one bare.
            ids.setdefault(name, restored.session.id)
        for title, restored in zip(titles, written, strict=True):
            ids.setdefault(title, restored.session.id)
        for listed, restored in zip(archive.sessions, written, strict=True):
            # Named now, so that naming it does not date it again.
            if listed.updated_at is not None:
                store.sessions.set_times(restored.session.id,
                                         listed.created_at or listed.updated_at,
                                         listed.updated_at)
        held = {f.id for f in store.facts.facts() if f.scope == FactScope.USER}
        facts.append(store.facts.restore(archive.kept_facts(ids)))
        added.extend(f for f in store.facts.facts()
                     if f.scope == FactScope.USER and f.id not in held)

    try:
        for listed, transcript in archive.transcripts():
            if on_read is not None:
                on_read(transcript)
            written.append(_write_unfinished(workspace, transcript, made, None, batch))
            names.append(listed.name)
            titles.append(transcript.title or listed.name)
            # As facts.json names it: OWNER/NAME for a shared one, never the user's own.
            ids[listed.address] = written[-1].session.id
            _mark_facts_read(workspace, written[-1], listed.facts_read_turns)
        unfinished.publish(store, made, names, taken, then=restore_facts)
    except BaseException:
        unfinished.discard(store, made)
        raise
    return ArchiveImported([_named(workspace, one) for one in written], facts[0],
                           archive.summaries, tuple(added),
                           _past_retention(workspace, {one.session.id for one in written}))


def _past_retention(workspace: Workspace, restored: set[int]) -> RestoredPastRetention | None:
    from chatmem.history_notices import IdleSession, RestoredPastRetention
    from chatmem.timestamps import utc_now

    now = utc_now()
    idle = [IdleSession(s.name, s.idle_days(now), s.keep_days)
            for s in workspace.store.retention.idle_sessions(now, workspace.settings.retention_days)
            if s.id in restored]
    return RestoredPastRetention(tuple(idle)) if idle else None


def _mark_facts_read(workspace: Workspace, restored: Imported, read: int | None) -> None:
    """Record as read by the fact extractor the turns of a restored fact-using session that
    the exporting history's extractor had read (`read`, from the manifest): facts.json holds
    what it found in them (and what was forgotten or corrected since), which reading them
    again would at best repeat at a model call per 20 turns. The turns it had not read yet
    (a failed or cancelled extraction, a strategy switched to a fact-using one just before
    the export) stay unread, and it reads them on the session's next turn.

    `read` None (an archive written before the manifest said): nothing is marked and the
    extractor reads every restored turn again. That is safe: a catch-up never overrides a
    value set by a later turn or by the user, nor brings back a forgotten fact
    (chatmem.memory.later_facts), so it only finds again what facts.json restored."""
    from chatmem.memory.extraction import STATE_KEY

    if not read or restored.strategy is None or not restored.strategy.sends_facts:
        return
    store = workspace.store
    turns = store.history.turn_count(restored.session.id)
    done = min(read, turns)
    store.memory.set_strategy_state(restored.session.id, STATE_KEY, {
        "done_turn": done, "behind": turns - done, "last_error": None}, covers_turn=done)


def _not_installed(workspace: Workspace, strategy: str) -> bool:
    """Whether `strategy` (a transcript's) is well formed but names a part no installed
    plugin provides here."""
    from chatmem.memory.registry import VALID_NAME

    parts = strategy.split("+")
    return (all(VALID_NAME.fullmatch(part) for part in parts)
            and any(part not in workspace.registries.strategies for part in parts))


def _built_in(workspace: Workspace, strategy: str) -> dict[str, bool]:
    """Each installed part of `strategy` → whether it is chatmem's own: only a plugin's
    version can change under a saved session; chatmem's own parameters are checked as given."""
    registries = workspace.registries
    return {part: origin.builtin for part in strategy.split("+")
            if (origin := registries.origin("strategy", part)) is not None}


def _transcript_strategy(workspace: Workspace, transcript: Transcript
                         ) -> tuple[Strategy, SavedParamsDropped | None]:
    """The strategy the transcript's header names, on its parameters (else the configured
    one). A plugin's new version may no longer take parameters its old one saved with a
    session: those are left out, as opening the session leaves them out, and said."""
    from chatmem.engine.opening import configured_strategy, saved_strategy

    settings = workspace.settings
    strategies = workspace.registries.strategies
    if transcript.params and not transcript.strategy:
        # The header's params are its strategy's settings (an export writes them together):
        # alone they name no strategy to fit, and dropped the session ran on other ones.
        raise TranscriptError(f"{transcript.header_at or transcript.source}: in the header:"
                              " 'params' without 'strategy': name the strategy they are for"
                              " (\"strategy\": \"window\") or leave params out")
    try:
        built_in = _built_in(workspace, transcript.strategy or "")
        if transcript.strategy and not all(built_in.values()):  # a part is a plugin's
            # A built-in part's parameter is refused as a lone built-in's is.
            return saved_strategy(transcript.strategy, transcript.params, strategies,
                                  transcript.title or str(transcript.source),
                                  fixed={part for part, own in built_in.items() if own})
        if not transcript.strategy:
            return configured_strategy(settings, strategies), None
        return strategies.strategy(transcript.strategy, transcript.params), None
    except StrategyError as e:
        if not transcript.strategy:
            raise
        # The user gave no strategy: without the file and line they would look in the config.
        raise TranscriptError(f"{transcript.header_at or transcript.source}: in the header:"
                              f" {e}", listed=e.listed) from None
