"""The interactive prompt: completion, history from the store, multi-line input, a toolbar.

- Up/Down walk the session's own stored user messages, so history survives a
  restart and no plaintext history file exists: deleting a session deletes its
  history. Slash commands typed in this run are recalled too, but not kept. Once
  text has left the session (a purge, an /undo; here or in another shell), the
  next prompt reads its history again, and so does the prompt already open when a
  key that moves through the history or searches it is pressed.
  Keys typed before a prompt shows (while a reply streams, or after an Enter)
  reach it once its history is in the line, so an Up typed ahead recalls.
- Esc Enter (Alt Enter) starts a new line; a message that opens with `\"\"\"`
  goes on until a line ends with `\"\"\"`. Ctrl-X Ctrl-E edits the line in $EDITOR.
  Text of several lines whose last line is a slash command is not sent (NoCommandAtTheEnd).
- The prompt is drawn on the terminal even when stdout is redirected (stderr).
- The bottom toolbar: session · strategy · model · last context tokens / budget, what
  the session cost, and how many messages are still to be embedded for recall by
  meaning; on a narrow terminal, the fields that fit whole, the most important first.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.enums import DEFAULT_BUFFER
from prompt_toolkit.filters import Condition, has_focus
from prompt_toolkit.history import History
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.validation import ValidationError, Validator

from chatmem.errors import ChatmemError
from chatmem.render.terminal import prompt_label
from chatmem.render.toolbar import ToolbarState, toolbar_line
from chatmem.repl.blocks import ESCAPE, FENCE, open_block, unfence
from chatmem.repl.chat import strategy_label
from chatmem.repl.completion import SlashCompleter
from chatmem.repl.table import SLASH

if TYPE_CHECKING:
    from prompt_toolkit.document import Document
    from prompt_toolkit.key_binding import KeyPress
    from prompt_toolkit.output import Output

    from chatmem.app.workspace import Workspace
    from chatmem.repl.chat import Chat
    from chatmem.store import SessionRecord

TOOLBAR_REFRESH_SECONDS = 1.0
"""How often the toolbar is redrawn while the prompt waits: the backlog's count moves on."""
HISTORY_TURNS = 500
"""How far back Up reaches: the user messages of the session's last turns."""
HISTORY_KEYS = (("up",), ("down",), ("c-p",), ("c-n",), ("c-up",), ("c-down",), ("pageup",),
                ("pagedown",), ("escape", "<"), ("escape", ">"), ("c-r",), ("c-s",))
"""The keys that walk or search the line's history (prompt-toolkit's emacs and basic bindings)."""


class SessionHistory(History):
    """Up/Down history drawn from a session's stored user messages, newest first."""

    def __init__(self, workspace: Workspace, session: SessionRecord,
                 loaded: Callable[[], None], unsent: Sequence[str] = ()) -> None:
        super().__init__()
        self.workspace = workspace
        self.session = session
        self.loaded = loaded
        """Called each time a prompt's line has taken the whole history."""
        self.unsent = unsent
        """Messages of this run no turn stored (Prompt.unsent): offered first."""
        self.version: int | None = None
        """The session's history_version when its messages were read."""

    async def load(self) -> AsyncGenerator[str, None]:
        from chatmem.app.sessions import history_version

        # Read once and kept, the history showed text erased since (a purge in another
        # shell, an /undo) with Up. Read again when the session says so (one row): the
        # commands typed in this run go too, as one may hold what was erased.
        try:
            version = history_version(self.workspace, self.session)
        except ChatmemError:
            version = -1  # no count reads so: what was read goes (load_history_strings)
        if version != self.version:
            self.version, self._loaded = version, False
        # The buffer takes each string as it is yielded: past the last one, it has them all.
        async for string in super().load():
            yield string
        self.loaded()

    def stale(self) -> bool:
        """Text has left the session since its messages were read (one row)."""
        from chatmem.app.sessions import history_version

        try:
            return (self._loaded
                    and history_version(self.workspace, self.session) != self.version)
        except ChatmemError:
            return self._loaded  # read again: it offers nothing it cannot check

    def load_history_strings(self) -> Iterable[str]:
        from chatmem.app.sessions import last_messages

        previous = None
        for previous in reversed(self.unsent):
            yield previous
        try:
            messages = last_messages(self.workspace, self.session, HISTORY_TURNS)
        except ChatmemError:
            # The history cannot be read (its file deleted or replaced under the chat, a
            # failing disk): prompt-toolkit printed a traceback and "Press ENTER to
            # continue"; Up offers nothing more, and the next turn says what is wrong.
            return
        for message in reversed(messages):
            if message.role == "user" and message.content != previous:
                previous = message.content
                yield message.content

    def store_string(self, string: str) -> None:
        pass  # a turn is stored by the engine; a command lives for this run only


def key_bindings(history: SessionHistory,
                 reread: Callable[[KeyPressEvent], None]) -> KeyBindings:
    """Esc Enter and an open block's Enter make a new line; a key that walks or searches
    `history` first has `reread` read it again once text has left the session."""
    bindings = KeyBindings()
    # Checked at the next prompt only, a purge in another shell left the open prompt's
    # copy offering the erased text on Up, and Enter stored it again. The check runs for
    # these keys only (one row each): the line's own editing never reads the store.
    stale = has_focus(DEFAULT_BUFFER) & Condition(history.stale)
    for keys in HISTORY_KEYS:
        bindings.add(*keys, filter=stale)(reread)

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("enter", filter=Condition(lambda: _in_open_block()))
    def _block_line(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return bindings


class NoCommandAtTheEnd(Validator):
    """Refuses a text of several lines whose last line is a slash command.

    Ctrl-U clears only the line the cursor is on (emacs, readline): after Up recalled a
    pasted message of many lines, Ctrl-U and `/switch x` sent the whole old message with
    the command as one turn, and stored it. The text stays at the prompt, and the foot
    of the screen says what to do; a command is a line of its own, and a line typed
    after the command sends the text as a message.
    """

    def validate(self, document: Document) -> None:
        text = document.text.strip()
        if "\n" not in text or text.startswith(("/", "／", FENCE)):
            return
        last = text.rsplit("\n", 1)[1].strip()
        name = "/" + last[1:].split(maxsplit=1)[0] if last[:1] in ("/", "／") and (
            last[1:2].strip()) else ""
        if name in SLASH:
            # One line, shown at the foot of an 80-column terminal whole.
            raise ValidationError(len(document.text), (
                f"not sent: {name} is a command, on the last of {text.count(chr(10)) + 1} "
                "lines. Ctrl-C clears them all"))


def _in_open_block() -> bool:
    from prompt_toolkit.application import get_app

    return open_block(get_app().current_buffer.text)


def toolbar_text(chat: Chat, width: int | None = None) -> str:
    """` session t · window · openai:gpt-4o · last context 364 / 4,000 tokens · …`, with
    the fields that fit `width` columns whole (None: all of them)."""
    engine = chat.engine
    return toolbar_line(ToolbarState(
        chat.address, strategy_label(engine, changed_only=True),
        f"{engine.provider.name}:{engine.provider.model}", chat.usage, chat.spent,
        engine.indexing.status(engine.embedder), chat.history_turns), width)


def terminal_output() -> Output | None:
    """The terminal for the prompt when stdout is redirected; None: stdout is the terminal."""
    if sys.stdout.isatty():
        return None
    from prompt_toolkit.output import create_output

    if sys.stderr.isatty():
        return create_output(stdout=sys.stderr)
    try:
        tty = open("/dev/tty", "w")  # noqa: SIM115 - it lives as long as the prompt
    except OSError:
        return None
    return create_output(stdout=tty)


class Prompt:
    """Reads one message at a time; rebuilt when the chat switches sessions."""

    def __init__(self, chat: Chat, output: Output | None = None) -> None:
        self.chat = chat
        self.output = output if output is not None else terminal_output()
        self.session_id: int | None = None
        self.session: PromptSession[str] | None = None
        self.typed_ahead: list[KeyPress] = []
        """Keys pressed before the next prompt (while a turn ran: chatmem.repl.keys), which
        it takes once its history has loaded."""
        self.unsent: list[str] = []
        """Messages refused before anything was stored (their session deleted meanwhile,
        over the budget, the model unreachable), oldest first: no stored message holds them,
        so Up lost one once the history was read again (the session gone, /new, /switch)."""

    def keep_unsent(self, message: str) -> None:
        """Offer `message` with Up in every session of this run until it is stored."""
        if message in self.unsent:
            self.unsent.remove(message)
        self.unsent.append(message)

    def _build(self) -> PromptSession[str]:
        engine = self.chat.engine
        self.session_id = engine.session.id
        history = SessionHistory(self.chat.workspace, engine.session, self._press_typed_ahead,
                                 self.unsent)
        return PromptSession(
            history=history,
            completer=SlashCompleter(self.chat),
            complete_while_typing=True,
            key_bindings=key_bindings(history, self._reread_history),
            multiline=False,
            prompt_continuation=lambda width, line, wrapped: "." * (width - 1) + " ",
            bottom_toolbar=lambda: toolbar_text(self.chat, self._columns()),
            refresh_interval=TOOLBAR_REFRESH_SECONDS,
            enable_open_in_editor=True,
            validator=NoCommandAtTheEnd(),
            validate_while_typing=False,
            output=self.output,
        )

    def _columns(self) -> int:
        from prompt_toolkit.application import get_app

        return get_app().output.get_size().columns

    def _reread_history(self, event: KeyPressEvent) -> None:
        """Read the line's history again, then press the key once it is in the line.

        The line as edited stays, at the history's end; what was erased is gone from the
        entries Up and Ctrl-R reach (SessionHistory.load reads them once text has left).
        """
        buffer = event.app.current_buffer
        self.typed_ahead[:0] = event.key_sequence
        buffer.reset(buffer.document)
        buffer.load_history_if_not_yet_loaded()

    def _press_typed_ahead(self) -> None:
        """Press the keys typed before this prompt, now that its history is in the line.

        prompt-toolkit replays keys it read ahead before the history loads, and an Up
        typed ahead found nothing to recall. Any key still queued in the terminal is read
        after these, so all stay in typed order.
        """
        from prompt_toolkit.application import get_app

        keys, self.typed_ahead = self.typed_ahead, []
        if keys:
            processor = get_app().key_processor
            processor.feed_multiple(keys)
            processor.process_keys()

    def ask(self, default: str = "") -> str:
        """The next message; `default` is the text the line starts with (/edit-last)."""
        self.chat.follow_renames()  # the prompt and the toolbar name the session as it is now
        if self.session is None or self.session_id != self.chat.engine.session.id:
            self.session = self._build()
        from prompt_toolkit.input.typeahead import get_typeahead

        # The keys the last prompt read past its Enter were typed before those of the turn.
        self.typed_ahead[:0] = get_typeahead(self.session.input)
        try:
            return unfence(self.session.prompt(
                lambda: prompt_label(self.chat.address, self._columns()),
                default=default))
        except KeyboardInterrupt:
            # Ctrl-C clears the line, as in a shell; a draft typed there is not lost: Up
            # offers it first, a message as a refused one (a line /edit-last gave, unchanged,
            # is not kept).
            draft = self.session.default_buffer.text
            if draft.strip() and draft != default:
                if draft.startswith(ESCAPE) or not draft.startswith(("/", "／")):
                    self.keep_unsent(draft)
                self.session.history.append_string(draft)
            raise
        finally:
            self.mark_pastes(True)

    def mark_pastes(self, on: bool) -> None:
        """Have the terminal mark pastes (bracketed paste), or stop.

        prompt-toolkit marks them only while a prompt shows; kept on between prompts, a
        paste made while a reply streams reaches the next prompt as one paste, its lines
        one message, not one turn each (chatmem.repl.keys).
        """
        if self.session is None:
            return
        output = self.session.app.output
        if on:
            output.enable_bracketed_paste()
        else:
            output.disable_bracketed_paste()
        output.flush()

