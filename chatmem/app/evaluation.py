"""Comparing strategies on one conversation: replay (what each costs) and eval (what each
remembers at the probes), over a transcript file or a stored session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chatmem.errors import TranscriptError
from chatmem.store.records import FactScope

if TYPE_CHECKING:
    import numpy as np

    from chatmem.app.workspace import Workspace
    from chatmem.config.settings import Settings
    from chatmem.engine.resend import SentFiles
    from chatmem.evaluation.recording import Tokenizer
    from chatmem.evaluation.replay import Progress
    from chatmem.evaluation.scoring import FailedRun, StrategyRun
    from chatmem.memory.registry import StrategyRegistry
    from chatmem.memory.spec import StrategySpec
    from chatmem.store import FactRecord, SessionRecord, Store
    from chatmem.transcripts.format import Item, Transcript, TranscriptMessage


@dataclass
class Comparison:
    """One replay or eval: its input, its runs and what its numbers were counted with."""

    transcript: Transcript
    runs: list[StrategyRun]
    keep_replies: bool
    tokenizer: Tokenizer
    zone: str = "UTC"
    """The time zone the runs read days in (its name): "on 5 March" names another day in
    another zone, so recall can differ."""
    failed: list[FailedRun] = field(default_factory=list)
    """The strategies whose own code failed partway (a plugin's), in the order given: not
    among `runs`, whose results stand without them."""
    cut: list[str] = field(default_factory=list)
    """The strategies Ctrl-C stopped or kept from starting, in the order given (with
    `finished_on_ctrl_c`): not among `runs`, which finished before it."""

    @property
    def turns_replayed(self) -> int:
        """User messages sent as turns: one followed by another user message has no reply
        of its own and is stored as it is (evaluation.steps.plan), so it is not one."""
        from chatmem.evaluation.steps import StepKind, plan

        return sum(1 for step in plan(self.transcript, self.keep_replies)
                   if step.kind is StepKind.TURN)


def load_source(workspace: Workspace, source: str, name: str | None = None) -> Transcript:
    """A transcript file, or else the stored session of that name. `name`: `source` read as
    the text it was typed as (a file's name is its bytes, a session's name is text: under an
    ASCII locale 旅行 came in as escaped bytes)."""
    from chatmem.transcripts.format import stored_transcript
    from chatmem.transcripts.reader import read_transcript

    path = Path(source)
    if path.is_file():
        return read_transcript(path)
    # A session may be named `客服.json`: with no such file, that name is the session's.
    session = (workspace.store.sessions.find_session(name or source) if workspace.has_history
               else None)
    if session is not None:
        return as_sent(workspace.store, session, stored_transcript(workspace.store, session))
    if path.suffix.lower() in (".jsonl", ".json"):
        return read_transcript(path)  # "no such transcript file", the likelier meaning
    raise TranscriptError(f"{source}: no such transcript file or session")


def as_sent(store: Store, session: SessionRecord, transcript: Transcript) -> Transcript:
    """`session`'s `transcript` (stored_transcript) with each input as its turn sent it: its
    files (chatmem.engine.resend.sent_files) and its system prompt, for a replay to send them
    again (in a group chat who said it comes with stored_transcript: store.history.speakers).
    A prompt given for one turn (`ask --system`, a template, a serve request's) is not in the
    session's prompt history, so the turn after it goes back to that history's prompt."""
    from chatmem.engine.resend import sent_files
    from chatmem.transcripts.format import SystemPrompt, TranscriptMessage

    files: dict[int, SentFiles] = {}
    systems: dict[int, str | None] = {}
    # Read as /retry reads a turn: the files part is inline, and expanding each turn's
    # runs of history read the whole history again a turn (1.1 s at 600 buffer turns).
    for record in store.turns.turns(session.id, expanded=False):
        if record.user_message_id is not None and record.history_turn is not None:
            sent = sent_files(store, record)
            if sent.attachments or sent.lost:
                files[record.user_message_id] = sent
            if record.context.get("parts"):  # a context recorded empty sent nothing
                systems[record.user_message_id] = _sent_system(record.context)
    records = iter(store.history.messages(session.id))
    items: list[Item] = []
    held = sending = transcript.system  # the prompt history's, and what the replay sends
    # stored_transcript makes one message of each stored one, in order.
    for item in transcript.items:
        if isinstance(item, SystemPrompt):
            held = sending = item.system
        elif isinstance(item, TranscriptMessage):
            message_id = next(records).id
            if item.role == "user":
                wanted = systems.get(message_id, held)
                if wanted != sending:
                    items.append(SystemPrompt(wanted))
                    sending = wanted
            item = _as_sent(item, message_id, files)
        items.append(item)
    return replace(transcript, items=items)


def _masked(workspace: Workspace, transcript: Transcript) -> Transcript:
    """`transcript` with the credentials chatmem runs with masked in all it sends and keeps
    (its probes' questions and expected texts too: `--answer` asks them, a report and a
    saved replay show them), told once as a turn's input is."""
    from chatmem.notices import CredentialInInput
    from chatmem.privacy.secrets import TypedMask
    from chatmem.transcripts.format import transcript_masked

    mask = TypedMask(workspace.typed_secrets())
    transcript = transcript_masked(transcript, mask)
    if mask.found:
        workspace.tell(CredentialInInput(mask.found))
    return transcript


def _sent_system(context: Mapping[str, Any]) -> str | None:
    """The system prompt a recorded context sent (None: it sent none)."""
    for part in context.get("parts", ()):
        if isinstance(part, Mapping) and part.get("kind") == "system":
            for message in part.get("messages", ()):
                if isinstance(message, Mapping) and isinstance(message.get("content"), str):
                    return message["content"]
    return None


def _as_sent(message: TranscriptMessage, message_id: int,
             files: dict[int, SentFiles]) -> TranscriptMessage:
    sent = files.get(message_id)
    return message if sent is None else replace(
        message, files=sent.attachments, files_gone=sent.lost)


def compare_strategies(
    workspace: Workspace,
    transcript: Transcript,
    specs: Sequence[StrategySpec],
    *,
    source: str | None = None,
    keep: bool | None = None,
    explicit: bool = False,
    with_user_facts: bool = False,
    save_as: str | None = None,
    answer: bool = False,
    probes_only: bool = False,
    progress: Progress | None = None,
    collect: dict[tuple[str, bool], None] | None = None,
    known: Mapping[tuple[str, bool], np.ndarray] | None = None,
    finished_on_ctrl_c: bool = False,
) -> Comparison:
    """Replay `transcript` under each strategy (in memory unless `save_as` names sessions to
    keep) with the provider and tokenizer it was recorded with unless `explicit`; recorded
    replies are reused unless `keep` is False. With `answer`, each probe is also asked;
    with `probes_only`, only the probes' contexts are built.
    `source` names the conversation in errors (default: the transcript's own source).
    With `collect`, a dry run: nothing is embedded, each text the runs would embed is
    noted in it (embeddings.base.Collecting); `known`: vectors embedded ahead (embed_ahead).
    With `finished_on_ctrl_c`, Ctrl-C after a strategy in memory has finished returns the
    finished ones, the others named in the comparison's `cut`.
    Each spec is as the user gave it: the config's [strategies.NAME] fills what it leaves
    out, as for `chat -s`, and the run's label names what the user typed and what the
    table changes from the defaults (as `sessions list` shows a session's): a table that
    restates a default (`[strategies.window] k = 5`) does not make `window` `window k=5`."""
    from chatmem.evaluation.recording import describe_counter
    from chatmem.evaluation.replay import replay

    if not transcript.user_turns():
        raise TranscriptError(f"{source or transcript.source}: the transcript has no user "
                              "messages to replay")
    transcript = _masked(workspace, transcript)
    keep_replies = transcript.has_replies() if keep is None else keep
    user = workspace.settings.user if with_user_facts else None
    chat_provider = workspace.reproducing(transcript, explicit=explicit)
    tokenizer = describe_counter(chat_provider.token_counter(), transcript.tokenizer)
    strategies = workspace.registries.strategies
    specs = as_configured(specs, workspace.settings, strategies)
    from chatmem.embeddings.base import KEEP_EVERY, Collecting, Remembering

    remembering = workspace.recall_embedder([strategies.create(s) for s in specs], KEEP_EVERY)
    if remembering is not None and known:
        remembering.know(known)
    embedder: Remembering | Collecting | None = remembering
    if remembering is not None and collect is not None:
        embedder = Collecting(remembering, collect)
    failed: list[FailedRun] = []
    cut: list[str] | None = [] if finished_on_ctrl_c else None
    runs = replay(transcript, specs, chat_provider=chat_provider, strategies=strategies,
                  # Each strategy on a model of its own: a scripted reply file is read
                  # from its first line for each, whatever order -s gave them in.
                  provider_per_run=chat_provider.fresh,
                  # Only --save-as needs the history; otherwise every replay stays in memory.
                  store=workspace.store if save_as else None,
                  save_as=save_as, keep_replies=keep_replies,
                  budget=workspace.settings.context_budget, user=user,
                  user_facts=profile_facts(workspace, user), answer=answer, progress=progress,
                  probes_only=probes_only, zone=workspace.settings.zone,
                  embedder=embedder, failed=failed, cut=cut)
    if isinstance(embedder, Remembering):
        # A run that fails leaves its last vectors (fewer than KEEP_EVERY) unwritten:
        # the next run embeds them again.
        embedder.flush()
    if save_as:
        # A saved replay is the user's like any session they made: forget-me and retention
        # reach it. Given after the replay, so that it read no profile's facts unasked.
        store = workspace.store
        for run in runs:
            saved = store.sessions.find_session(run.session) if run.session else None
            if saved is not None and saved.user != workspace.settings.user:
                store.sessions.update_session(saved.id, user=workspace.settings.user)
    from chatmem.timezones import zone_name

    return Comparison(transcript, runs, keep_replies, tokenizer,
                      zone_name(workspace.settings.zone), failed, cut or [])


def texts_to_embed(workspace: Workspace, transcript: Transcript, specs: Sequence[StrategySpec],
                   *, explicit: bool, answer: bool, with_user_facts: bool = False,
                   probes_only: bool = False) -> list[tuple[str, bool]]:
    """Each text (and whether as a query) compare_strategies will embed for `transcript`
    under `specs`, learnt by a dry run of it that embeds nothing. None at all where a dry run
    would call a model (a turn without its recorded reply, --answer, a strategy asking the
    helper): its run embeds its own texts, as before."""
    from chatmem.evaluation.steps import StepKind, plan

    strategies = workspace.registries.strategies
    made = [strategies.create(s) for s in as_configured(specs, workspace.settings, strategies)]
    if answer or not any(m.needs_embedder for m in made) or any(m.calls_helper for m in made):
        return []
    scripted = workspace.reproducing(transcript, explicit=explicit).name == "scripted"
    replied = transcript.has_replies() and all(
        step.reply is not None for step in plan(transcript, True) if step.kind is StepKind.TURN)
    if not (scripted or replied):
        return []
    asked: dict[tuple[str, bool], None] = {}
    compare_strategies(workspace, transcript, specs, explicit=explicit, collect=asked,
                       with_user_facts=with_user_facts, probes_only=probes_only)
    return list(asked)


def embed_ahead(workspace: Workspace, specs: Sequence[StrategySpec],
                texts: Sequence[tuple[str, bool]]) -> dict[tuple[str, bool], bytes] | None:
    """Embed `texts` (each with whether it is a query) as compare_strategies under `specs`
    would: kept in the user's vector cache, where its runs will find them (None), or, with
    no cache (an encrypted history keeps nothing outside it), handed back as float32 bytes
    for compare_strategies' `known`. None too when no strategy ranks by meaning."""
    import numpy as np

    from chatmem.embeddings.base import KEEP_EVERY

    strategies = workspace.registries.strategies
    chosen = [strategies.create(s) for s in as_configured(specs, workspace.settings, strategies)]
    embedder = workspace.recall_embedder(chosen, KEEP_EVERY)
    if embedder is None:
        return None
    handed: dict[tuple[str, bool], bytes] = {}
    for query in (False, True):
        asked = [text for text, is_query in texts if is_query is query]
        rows = embedder.embed(asked, query=query)
        handed.update(((text, query), np.asarray(row, dtype=np.float32).tobytes())
                      for text, row in zip(asked, rows, strict=True))
    embedder.flush()
    return None if embedder.cache is not None else handed


def not_kept(workspace: Workspace, specs: Sequence[StrategySpec],
             texts: Sequence[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Those of `texts` (each with whether it is a query) that `embed_ahead` would embed:
    all of them without a cache file, else those it does not hold yet."""
    strategies = workspace.registries.strategies
    chosen = [strategies.create(s) for s in as_configured(specs, workspace.settings, strategies)]
    embedder = workspace.recall_embedder(chosen)
    if embedder is None or embedder.cache is None:
        return list(texts)
    missing = {(text, query) for query in (False, True) for text in embedder.not_kept(
        [text for text, is_query in texts if is_query is query], query)}
    return [text for text in texts if text in missing]


def as_configured(specs: Sequence[StrategySpec], settings: Settings,
                  strategies: StrategyRegistry) -> list[StrategySpec]:
    """Each spec as the user gave it, what the config's [strategies.NAME] gives filling what
    it leaves out, labelled with what differs from the defaults (see compare_strategies)."""
    from chatmem.engine.opening import with_config_table
    from chatmem.memory.spec import SpecPart, StrategySpec

    return [s.keeping(StrategySpec.of(strategies.create(with_config_table(
        StrategySpec(tuple(SpecPart(p.name) for p in s.parts)), settings,
        strategies)), changed_only=True)) for s in specs]


def check_comparable(specs: Sequence[StrategySpec], settings: Settings,
                     strategies: StrategyRegistry) -> None:
    """Refuse, before any transcript is read, what every transcript's comparison would
    refuse: a strategy given twice as the config makes it (eval of a folder failed each
    file one by one, exit 2 with `complete: true`)."""
    from chatmem.evaluation.replay import check_distinct

    check_distinct(as_configured(specs, settings, strategies), strategies)


def profile_facts(workspace: Workspace, user: str | None) -> list[FactRecord]:
    """The profile's facts, for --with-user-facts (none when there is no history)."""
    if user is None or not workspace.has_history:
        return []
    return [f for f in workspace.store.facts.facts(user=user) if f.scope == FactScope.USER]
