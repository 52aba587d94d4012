"""What a slash command acts on: the engine of the current session, the consoles, one turn.

Two channels, in every mode: `out` carries replies and nothing else, so
`chatmem chat < script > replies.txt` holds only replies; `status` (stderr)
carries the banner, token lines, notices, errors and every slash command's
output. When stdout is redirected in an interactive chat, replies are also
shown on the terminal, so nobody types blind.
"""

from __future__ import annotations

import dataclasses
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from chatmem import render
from chatmem.app.sessions import last_turn, session_address, stored_name, turn_count
from chatmem.app.workspace import Workspace
from chatmem.config.options import Spent
from chatmem.config.settings import Settings, Source, SourceKind, for_model, with_options
from chatmem.engine import Engine, TurnResult
from chatmem.engine.resend import resend_last
from chatmem.errors import (
    ChatmemError,
    OutputFailed,
    ProviderError,
    ReplyNotShown,
    UsageError,
)
from chatmem.memory.context import Context
from chatmem.memory.guards import built_to
from chatmem.memory.params import strategy_label as label_of
from chatmem.render.notices import notice_text
from chatmem.render.progress import ConsoleActivity
from chatmem.render.terminal import is_line, on_screen
from chatmem.render.toolbar import ContextUsage
from chatmem.session_notices import ModelChanged
from chatmem.store.records import TurnStatus

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console, RenderableType

    from chatmem.attachments import Attachment
    from chatmem.config.options import Price
    from chatmem.memory.spec import StrategySpec
    from chatmem.store import Store


class Chat:
    def __init__(
        self,
        engine: Engine[Store],
        out: Console,
        status: Console,
        *,
        show_prompt: bool = False,
        mirror_replies: bool = False,
        markdown: bool = False,
        workspace: Workspace | None = None,
    ) -> None:
        self.engine = engine
        self.owns_workspace = workspace is None
        """A chat given only an engine opens what it needs itself, and closes it at the end."""
        self.workspace = workspace or Workspace.around(engine.settings or Settings(),
                                                       engine.store, engine.provider)
        """Where the REPL opens other sessions and models (/switch, /model, /template)."""
        self.out = out
        """Replies only."""
        self.status = status
        """Everything that is not a reply; the CLI sends it to stderr."""
        self.mirror_replies = mirror_replies
        """Also write replies to `status` (stdout redirected, a person at the terminal)."""
        self.show_prompt = show_prompt
        self.markdown = markdown
        """Show replies as Markdown on a terminal (never in a pipe or a file)."""
        self.last: TurnResult | None = None
        self.exit_code = 0
        """The worst error's exit code; a script piping lines in gets it at the end."""
        self.attached: list[Attachment] = []
        """Files (/file, `chat -f`) that go with the next message, then are let go."""
        self.raw_args = ""
        """The current slash command's arguments as typed, quotes and spacing kept."""
        self.usage: ContextUsage | None = None
        """The session's last context, for the toolbar."""
        self.history_turns = 0
        """The history's turns while `usage` is None (an imported or forked session's)."""
        self.spent = Spent()
        """Tokens (and money, when priced) the session's turns used so far, for the toolbar."""
        self.streaming = False
        """True from a turn's request until its reply is complete or cut."""
        self.seen_last_turn: int | None = None
        """The session's last turn as this chat last saw it (its own, or the one it
        resumed after): the only one /retry and /edit-last may replace."""
        self.replacing: int | None = None
        self._address: tuple[int, str] | None = None
        """After a /retry or /edit-last whose attempt failed or was cancelled (it is the
        last turn now): the completed turn it was to replace, which retrying or editing the
        attempt still replaces, rather than adding a turn after it."""
        self.note_usage()
        self.seen_last_turn = self._last_turn_id()

    # -- output ------------------------------------------------------------------

    @property
    def one_line(self) -> bool:
        """Whether a status line stays one line, whatever the width: off a screen (a pipe, a
        file, FORCE_COLOR or not), so scripts can read it; on a screen it wraps between words."""
        return not on_screen(self.status)

    def show(self, renderable: RenderableType) -> None:
        """A slash command's output: a table, a panel, a line. A line keeps the one-line rule;
        a panel or table is laid out at the width wherever it goes (printed as one line, its
        borders cut a URL, a reason or a summary diff's closing marker off)."""
        self.status.print(renderable, soft_wrap=self.one_line and is_line(renderable))

    def notice(self, text: str) -> None:
        self.status.print(render.notice_line(text), soft_wrap=self.one_line)

    def error(self, text: str) -> None:
        self.status.print(render.error_line(text), soft_wrap=self.one_line)

    # -- the session -----------------------------------------------------------------

    @property
    def address(self) -> str:
        """What names the current session in a command: `OWNER/NAME` when another role
        shares it (the user's own may have its name, and its bare name would reach that);
        read once per session, as the prompt asks at every redraw."""
        session = self.engine.session
        if self._address is None or self._address[0] != session.id:
            self._address = (session.id, session_address(self.workspace, session))
        return self._address[1]

    def follow_renames(self) -> None:
        """Read the session's name again, before each prompt and line: another process may
        have renamed it (`chatmem sessions rename`), and the prompt, the toolbar and the
        commands that name it (/model reopens it by name) would go on with the old one."""
        session = self.engine.session
        try:
            name = stored_name(self.workspace, session)
        except ChatmemError:
            return  # the store cannot be read now: the line's own work meets it and says so
        if name is not None and name != session.name:  # None: deleted; the next turn says so
            self.engine.session = dataclasses.replace(session, name=name)
            self._address = None

    def open(
        self, name: str, *, strategy: StrategySpec | None = None,
        system: str | None = None, model: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """Make `name` the current session, built the way `chatmem chat NAME` builds it.

        With `model` or `options`, the chat runs on a new provider for that model, or with
        those options over the current ones (/model, /template).
        """
        from chatmem.app.conversations import start_conversation

        old = self.engine
        if old.settings is None:
            raise ChatmemError("this chat was started without settings; restart it with "
                               "chatmem chat")
        settings = old.settings
        if model is not None:
            settings = for_model(settings, model, Source(SourceKind.COMMAND, "/model"))
        if options:
            settings = with_options(settings, options, Source(SourceKind.COMMAND, "/template"))
        if model is not None or options:
            # The provider in use, not `auto` again: /model names a model of this provider.
            settings = dataclasses.replace(settings, provider=old.provider.name)
            self.workspace.provider_for(settings)  # a bad name fails here; the chat goes on
        old.settle()  # what opening it changed is kept (or not) before it is reopened
        left = old.session.name  # one it created is its own: no owner to name
        new = start_conversation(self.workspace, name, strategy=strategy, system=system,
                                 activity=old.activity,
                                 allow_over_budget=old.allow_over_budget, settings=settings,
                                 budget=old.budget)
        old.indexing.close()  # the new engine resumes the backlog from the file
        self.engine = new
        self.last = None
        self.note_usage()
        same = new.session.id == old.session.id
        if not same and old.discard_if_unused():
            # As at the chat's end: `chat a`, then /switch b with nothing said, left a behind.
            self.notice(f"session {left} not kept: nothing was said in it")
        if not same:
            # The same session reopened (/model, /template) keeps what this chat saw: a turn
            # another chat added meanwhile does not become its own.
            self.seen_last_turn = self._last_turn_id()
            self.replacing = None
            if self.attached:
                # Said: a file attached for the old session's question went, unsaid, with
                # the new session's first message.
                # Named: said before "switched to session …", "this session" read as the
                # one being left.
                self.notice(f"still attached, to your next message in session {self.address}: "
                            + ", ".join(a.name for a in self.attached))
        for notice in new.notices:
            if not (same and isinstance(notice, ModelChanged)):  # /model says it, in its words
                self.notice(notice_text(notice))

    # -- a turn --------------------------------------------------------------------

    def note_usage(self) -> None:
        """The session's last recorded context: what the toolbar shows before a new turn."""
        from chatmem.app.sessions import usage_by_model

        session = self.engine.session
        self.spent = Spent()
        for used in usage_by_model(self.workspace, session):
            self.spent = self.spent.plus(used.prompt_tokens, used.reply_tokens,
                                         self.price_of(used.model))
        record = last_turn(self.workspace, session)
        # Counted as the turn recorded it was (a model of unknown tokenizer: approximately).
        self.usage = None if record is None else ContextUsage(
            record.estimated_tokens or 0, record.context.get("budget"),
            bool(record.context.get("approximate", False)))
        # Without a turn record the history may still hold turns (imported, forked).
        self.history_turns = 0 if record is not None else turn_count(self.workspace, session)
        strategy = self.engine.strategy
        if record is not None and ((record.strategy, dict(record.params)) != (
                strategy.name, dict(strategy.params))
                or record.context.get("budget") != built_to(strategy, self.engine.request(""))):
            # Switched since its last turn (a /strategy with no turn after it, `-s`), or the
            # budget is another now (context_budget in the config, --budget): the toolbar
            # showed that turn's (`2,337 / 4,000` under max_tokens=1500, or under 2,000).
            # Compared with the budget the strategy builds to (its own max_tokens), not the
            # setting: each opening of such a session built its context once more for nothing.
            self.note_budget()

    def note_budget(self, built: Context | None = None) -> Context | None:
        """The next context, built without a message (None: it cannot be built now) unless
        `built` is it; its budget is the toolbar's from now on. After a /strategy or /budget
        the toolbar kept the last context's (`last context 25 / 4,000` under a summary_buffer
        of 2,000)."""
        try:
            context = built or self.engine.build_context("")
        except ChatmemError:
            return None  # the turn meets it and says so
        if self.usage is not None:
            self.usage = dataclasses.replace(self.usage, budget=context.budget)
        return context

    def _last_turn_id(self) -> int | None:
        record = last_turn(self.workspace, self.engine.session)
        return None if record is None else record.id

    def turn(self, text: str | None, attachments: Sequence[Attachment] = (), *,
             replace_last: bool = False) -> None:
        """Send `text`; with `replace_last`, in place of the last turn (None: its input
        again), which stays stored and leaves memory (chatmem.engine.resend)."""
        from chatmem.render.reply import ReplyWriter

        # Attached files go with this message only, sent or not; /retry and /edit-last pass
        # the replaced turn's again, rebuilt from what it stored (engine.resend.sent_files).
        attachments = [*self.attached, *attachments]
        self.attached = []
        consoles = [self.out] + ([self.status] if self.mirror_replies else [])
        reply = ReplyWriter(consoles, markdown=self.markdown)
        activity = self.engine.activity
        awaiting = (activity.awaiting_reply(self.engine.provider.model)
                    if isinstance(activity, ConsoleActivity) else nullcontext(lambda: None))

        def reply_end() -> None:
            # Before the strategy's own calls: their spinner and notices start on a new
            # line, under the whole reply.
            self.streaming = False
            replied()
            reply.end()

        def write(delta: str) -> None:
            replied()  # its spinner gone before the reply is drawn where it was
            reply.write(delta)

        # A failed attempt at replacing a turn is passed over: the turn it was to replace
        # is the one replaced (store.turns.hide_turn).
        replaces = (self.replacing or self.seen_last_turn) if replace_last else None
        self.streaming = True
        try:
            with awaiting as replied:
                if replace_last:
                    result = resend_last(self.engine, text, on_delta=write,
                                         on_reply_end=reply_end, attachments=attachments,
                                         expected=replaces)
                else:
                    assert text is not None
                    result = self.engine.run_turn(text, on_delta=write,
                                                  on_reply_end=reply_end,
                                                  attachments=attachments)
        except ProviderError:
            # A failed turn is recorded before its error is raised: it is this chat's last.
            self.seen_last_turn = self._last_turn_id()
            self.replacing = replaces
            raise
        finally:
            self.streaming = False
            reply.end()  # a reply cut by an error or Ctrl-C still ends its line
        self.last = result
        if result.record.id is not None:  # a cancelled turn's row is not kept after a purge
            self.seen_last_turn = result.record.id
        self.replacing = replaces if result.status != TurnStatus.OK else None
        self.usage = ContextUsage(result.record.estimated_tokens or result.context.tokens,
                                  result.context.budget, self.engine.counter.approximate)
        if result.status != TurnStatus.FAILED:
            self.spent = self.spent.plus(*result.billed_tokens(), self.price_of(
                result.record.model))
        if result.status == TurnStatus.CANCELLED:
            self.notice("(reply cancelled; it stays out of memory)")
        else:
            if self.show_prompt:
                self.status.print(self.prompt_panel(result.context,
                                                    result.record.estimated_tokens))
            self.status.print(self.token_line(result), soft_wrap=self.one_line)
            for notice in result.notices:
                self.notice(notice_text(notice))
        self.engine.between_turns()
        failure = reply.failure(self.out)
        if failure is not None:
            raise not_shown(failure, None if self.workspace.one_off else self.address,
                             result.record.turn or None)

    def terminal_as_found(self) -> AbstractContextManager[None]:
        """The terminal as the chat found it, for a program run in it ($EDITOR)."""
        return nullcontext()

    def command(self, text: str) -> None:
        """Run the slash command line `text` (`/strategy window k=3`); the loop, which holds
        the command table, does."""
        raise NotImplementedError

    def edit_line(self, default: str) -> str:
        """A line the user edits, starting as `default`; only a terminal's prompt can."""
        raise UsageError("editing needs the interactive prompt; in a script, give the new "
                         "text: /edit-last TEXT")

    def price_of(self, model: str | None) -> Price | None:
        """The configured price of `model`; None without one (or without settings)."""
        from chatmem.config.options import price_of

        settings = self.engine.settings
        return price_of(settings.prices, model) if settings is not None else None

    def token_line(self, result: TurnResult) -> object:
        record = result.record
        price = self.price_of(record.model)
        return render.token_line(
            result.context,
            approximate=self.engine.counter.approximate,
            estimated=record.estimated_tokens,
            reported=record.prompt_tokens,
            latency_ms=record.latency_ms,
            strategy=strategy_label(self.engine, changed_only=True),
            cost=price.cost(*result.billed_tokens()) if price is not None else None,
        )

    def prompt_panel(self, context: Context, estimated: int | None = None, *,
                     approximate: bool | None = None) -> RenderableType:
        """`approximate`: how the context was counted (default: as this chat's model counts)."""
        if approximate is None:
            approximate = self.engine.counter.approximate
        return render.context_panel(context, approximate=approximate, estimated=estimated)


def not_shown(failure: Exception, address: str | None, turn: int | None) -> ReplyNotShown:
    """What stopped a reply being shown, as the error its chat ends with."""
    if isinstance(failure, OutputFailed):
        return ReplyNotShown(failure.reason, closed=failure.closed, address=address, turn=turn)
    closed = isinstance(failure, BrokenPipeError)
    if closed:
        reason = "whatever read it has gone"
    elif isinstance(failure, UnicodeEncodeError):
        reason = f"its encoding, {failure.encoding}, cannot write the reply's characters"
    elif isinstance(failure, OSError) and failure.strerror:
        reason = failure.strerror
    else:
        reason = str(failure)
    return ReplyNotShown(reason, closed=closed, address=address, turn=turn)


def strategy_label(engine: Engine[Any], *, changed_only: bool = False) -> str:
    """`window k=3`: the strategy in use and its parameters, as a user would type them."""
    strategy = engine.strategy
    return label_of(strategy.name,
                    strategy.changed_params() if changed_only else strategy.params)
