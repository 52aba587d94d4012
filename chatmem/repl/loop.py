"""The chat loop: prompt-toolkit on a terminal, plain lines from a pipe.

Each line is one turn, or a slash command from the table. Ctrl-C while a reply
streams cancels that reply only; Ctrl-C at the prompt clears the line; Ctrl-D
or /quit leaves, and Ctrl-D while a reply streams cancels it first. Keys typed
while a reply streams wait for the next prompt (chatmem.repl.keys), unsent after
a Ctrl-C. Errors are shown as one line and the loop goes on. Lines from a pipe
are a script: Ctrl-C cancels the reply and stops the script (exit 130).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING

import chatmem.repl.commands  # noqa: F401  (importing the commands fills the table)
from chatmem import render
from chatmem.errors import ChatmemError, ExitCode, NotFound, ReplyNotShown
from chatmem.names import nearest
from chatmem.render.errors import repl_error_text
from chatmem.repl.blocks import ESCAPE
from chatmem.repl.chat import Chat, strategy_label
from chatmem.repl.keys import KeyWatch, QuietTerminal, as_draft, key_presses
from chatmem.repl.table import SLASH, QuitRepl, split_closed
from chatmem.store.records import TurnStatus

if TYPE_CHECKING:
    from prompt_toolkit.output import Output

    from chatmem.attachments import Attachment
    from chatmem.repl.prompt import Prompt


class Repl(Chat):
    prompt_output: Output | None = None
    """Where the prompt is drawn; None: the terminal (stderr when stdout is redirected)."""
    prompt: Prompt | None = None
    """The interactive prompt while one runs."""
    quiet: QuietTerminal | None = None
    """The terminal the prompt reads, kept quiet between prompts (chatmem.repl.keys)."""
    leaving = False
    """Ctrl-D was pressed while a turn ran: the loop ends once the line is done."""

    def _piped_lines(self) -> Iterator[str]:
        """The lines piped in, none read past what the budget can hold (a `< /dev/zero`
        line grew until out of memory): characters, each at least a byte."""
        from chatmem.attachments import STDIN, TextLimit
        from chatmem.text_files import Oversized

        limit = TextLimit(self.engine.budget, self.engine.allow_over_budget)
        number = 0
        while line := sys.stdin.readline(limit.most + 1):
            number += 1
            if len(line) > limit.most:
                raise limit.refusal(f"{STDIN}:{number}", Oversized(limit.most, None))
            yield line

    def lines(self) -> Iterator[str]:
        from chatmem.repl.blocks import join_blocks

        if not sys.stdin.isatty():
            # A file saved with a byte-order mark (Windows' Notepad) is piped with it: it is
            # not part of the first line, as it is not part of an imported or attached file.
            piped = (line.removeprefix("\ufeff") if number == 0 else line
                     for number, line in enumerate(self._piped_lines()))
            yield from join_blocks(line.rstrip("\n") for line in piped)
            return
        from chatmem.repl.prompt import Prompt

        self.prompt = Prompt(self, self.prompt_output)
        while True:
            try:
                yield self.prompt.ask()
            except KeyboardInterrupt:
                continue
            except EOFError:
                return

    def edit_line(self, default: str) -> str:
        if self.prompt is None:
            return super().edit_line(default)
        return self.prompt.ask(default)

    def turn(self, text: str | None, attachments: Sequence[Attachment] = (), *,
             replace_last: bool = False) -> None:
        if self.quiet is None or not self.quiet.active or self.prompt is None:
            super().turn(text, attachments, replace_last=replace_last)
            return
        watch = KeyWatch(self.quiet.fd, cancellable=lambda: self.streaming)
        keep = True
        try:
            with watch:
                super().turn(text, attachments, replace_last=replace_last)
            keep = self.last is None or self.last.status != TurnStatus.CANCELLED
        except KeyboardInterrupt:
            keep = False
            if not watch.ctrl_d:
                raise
        finally:
            if watch.ctrl_d:
                # Once the turn is stored (cancelled, if it was still streaming), or its
                # error shown.
                self.leaving = True
            else:  # after a Ctrl-C, what was typed waits at the prompt, unsent
                typed = key_presses(bytes(watch.typed))
                self.prompt.typed_ahead += typed if keep else as_draft(typed)

    def terminal_as_found(self) -> AbstractContextManager[None]:
        return self._as_found() if self.quiet is not None else nullcontext()

    @contextmanager
    def _as_found(self) -> Iterator[None]:
        # The program run in it ($EDITOR) gets pastes unmarked, as from the shell.
        assert self.quiet is not None
        if self.prompt is not None:
            self.prompt.mark_pastes(False)
        try:
            with self.quiet.as_found():
                yield
        finally:
            if self.prompt is not None:
                self.prompt.mark_pastes(True)

    def run(self, lines: Iterable[str] | None = None) -> None:
        self.status.print(render.notice_line(
            f"session {self.address} · {strategy_label(self.engine)} · "
            f"{self.engine.provider.name}:{self.engine.provider.model} · /help for commands"
        ), soft_wrap=self.one_line)
        try:
            if lines is None and sys.stdin.isatty():
                with QuietTerminal(sys.stdin.fileno()) as self.quiet:
                    self.loop(self.lines())
            else:
                self.loop(lines if lines is not None else self.lines())
        finally:
            if self.prompt is not None:
                self.prompt.mark_pastes(False)  # the terminal as found: the shell's own
            self.quiet = None
            if self.owns_workspace:
                self.workspace.close()

    def loop(self, lines: Iterable[str]) -> None:
        for line in lines:
            text = line.strip()
            if not text:
                continue
            # Sent as typed: a pasted block of code keeps its first line's indentation.
            message = line.strip("\r\n").rstrip()
            self.follow_renames()
            try:
                if text.startswith(ESCAPE):
                    self.turn(message.lstrip()[1:])
                    self.forget_unsent(message)
                elif text.startswith(("/", "／")):  # ／: the slash a Chinese input method types
                    self.command("/" + text[1:])
                else:
                    self.turn(message)
                    self.forget_unsent(message)
                    if self.last is not None and self.last.status == TurnStatus.CANCELLED \
                            and not sys.stdin.isatty():
                        # Ctrl-C stops a script (as in any pipeline): the lines after
                        # it are not sent, and the exit code says it was interrupted.
                        self.exit_code = int(ExitCode.INTERRUPTED)
                        return
            except QuitRepl:
                return
            except ReplyNotShown:
                raise  # its turn is stored; the next replies would be lost too
            except ChatmemError as e:
                self.exit_code = max(self.exit_code, int(e.exit_code))
                self.error(repl_error_text(e))
                if self.prompt is not None and (text.startswith(ESCAPE)
                                                or not text.startswith(("/", "／"))):
                    self.prompt.keep_unsent(message)
            except KeyboardInterrupt:
                if not sys.stdin.isatty():
                    raise  # a script is stopped, not resumed
                # Outside a reply (a reply's own Ctrl-C is handled by the engine): what was
                # committed stays committed; the chat goes on, and what was typed meanwhile
                # waits at the prompt unsent, as after a reply's Ctrl-C.
                self.notice("(interrupted)")
                if self.quiet is not None and self.prompt is not None:
                    self.prompt.typed_ahead += as_draft(key_presses(self.quiet.pending()))
            if self.leaving:
                return

    def forget_unsent(self, message: str) -> None:
        """Up no longer offers a refused message first once a turn stored it."""
        if (self.prompt is not None and message in self.prompt.unsent
                and self.last is not None and self.last.status == TurnStatus.OK):
            self.prompt.unsent.remove(message)

    def command(self, text: str) -> None:
        words = split_closed(text)
        name, args = words[0], words[1:]
        # A system prompt is prose: /system and /model take the arguments as typed.
        self.raw_args = text.strip()[len(text.split(maxsplit=1)[0]):].strip()
        command = SLASH.get(name)
        if command is None:
            close = nearest(name, SLASH)
            if close:
                raise NotFound(f"unknown command {name}; did you mean {close}? /help lists them")
            # A pasted path (/usr/local/bin …) is likelier a message than a command.
            raise NotFound(f"unknown command {name}; /help lists them, and a message that "
                           f"opens with / starts with {ESCAPE} ({ESCAPE}{name[1:]} …)")
        command.check_arity(args)
        command.run(self, args)

