"""REPL commands about the chat itself: /help /quit /strategy /inspect /tokens /copy /file
/detach /show-prompt /edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chatmem import render
from chatmem.app import sessions
from chatmem.config.options import shown_value
from chatmem.errors import UsageError
from chatmem.render.counts import counted
from chatmem.render.terminal import on_screen, prompt_label
from chatmem.repl.blocks import trimmed
from chatmem.repl.chat import Chat, strategy_label
from chatmem.repl.table import SLASH, QuitRepl, slash
from chatmem.store.records import TurnStatus
from chatmem.text import whole_number

if TYPE_CHECKING:
    from pathlib import Path

    from chatmem.attachments import Attachment


@slash("/help", "/help", "list the commands, each with an example", example="/help")
def _help(repl: Chat, args: list[str]) -> None:
    repl.show(render.help_table([(c.usage, c.help, c.example) for c in SLASH.values()]))
    repl.notice("Tab completes commands, strategies, parameters, sessions and facts; Up recalls "
                "this session's messages (and a draft Ctrl-C cleared); Esc Enter (or Alt "
                'Enter) starts a new line, and a message that opens with """ goes on until a '
                'line ends with """; Ctrl-X Ctrl-E or /edit writes it in $EDITOR')


@slash("/quit", "/quit", "leave (Ctrl-D works too)", example="/quit")
def _quit(repl: Chat, args: list[str]) -> None:
    raise QuitRepl


# Usages are upper case: Rich would take a lower-case `[k=v ...]` for markup and hide it.
@slash("/strategy", "/strategy [NAME[:K=V,...] [K=V ...]]",
       "show or switch the memory strategy for the next turn; history stays intact",
       example="/strategy window k=3", args=(0, None), completes="strategy")
def _strategy(repl: Chat, args: list[str]) -> None:
    from chatmem.config.pairs import parse_pairs
    from chatmem.engine.opening import with_config_table
    from chatmem.errors import StrategyError
    from chatmem.memory.params import format_params
    from chatmem.memory.spec import StrategySpec

    kept: dict[str, Any] = {}
    unsaved = None
    if args:
        strategies = repl.workspace.registries.strategies
        params = parse_pairs(args[1:], lambda pair: StrategyError(
            f"parameter {shown_value(pair)} must be key=value, e.g. k=3"))
        spec = strategies.parse(args[0], params)
        settings = repl.engine.settings
        fresh = spec if settings is None else with_config_table(spec, settings, strategies)
        # The previous strategy's values for the parts of the same name are kept, every one:
        # a value this chat chose may equal the default, and must still come before the
        # config (which already filled the rest when that strategy was built).
        chosen = spec.keeping(StrategySpec.of(repl.engine.strategy))
        if settings is not None:
            chosen = with_config_table(chosen, settings, strategies)
        # Said only where keeping made a difference to what the switch alone would build.
        would_be = StrategySpec.of(strategies.create(fresh)).params
        kept = {k: v for k, v in chosen.params.items()
                if k not in spec.params and would_be.get(k) != v}
        unsaved = repl.engine.set_strategy(strategies.create(chosen))
    line = f"strategy: {strategy_label(repl.engine)}"
    if kept:
        line += f" (kept from the previous strategy: {format_params(kept)})"
    repl.notice(line)
    if unsaved is not None:
        repl.notice(render.notice_text(unsaved))
    if args:
        _warn_if_over_budget(repl)


def _warn_if_over_budget(repl: Chat) -> None:
    """Say now when the switch makes the next context go over the budget (buffer on a long
    history): the turn would send it, and its warning come only after the reply. One build,
    as /tokens makes it (which gives the toolbar its budget); the turn builds its own."""
    from chatmem.tokens import format_count

    engine = repl.engine
    context = repl.note_budget()
    if context is None or context.budget is None or not context.over_budget:
        return
    tokens = format_count(engine.estimate(context), engine.counter.approximate)
    repl.notice(f"the next context is {tokens} tokens before your message, over the budget "
                f"of {context.budget:,}: the next turn sends it so (/tokens shows it by part; "
                "another /strategy keeps within it)")


@slash("/inspect", "/inspect [N]",
       "show the exact context of turn N (default: the last), part by part",
       example="/inspect 3", args=(0, 1), completes="turn")
def _inspect(repl: Chat, args: list[str]) -> None:
    from chatmem.app.inspection import inspect_turn

    number = whole_number(args[0]) if args else None
    if args and not (number is not None and number >= 1):
        raise UsageError(f"/inspect takes one turn number (1 or more), got {args[0]!r}")
    # As `chatmem inspect` sees it: counted with the tokenizer the turn recorded, not this
    # chat's model (which /model may have changed since).
    seen = inspect_turn(repl.workspace, repl.address, number)
    record = seen.turn
    assert record is not None  # a recorded turn's inspection always has it
    model = " / ".join(v for v in (record.provider, record.model) if v)
    # The turn's outcome first, as `chatmem inspect` shows it: a failed or cancelled turn's
    # context was built but its reply never entered memory.
    repl.show(render.key_values({"turn": record.turn, "status": record.status,
                                 **({"error": record.error} if record.error else {}),
                                 **({"superseded by": f"request {record.superseded_by},"
                                                      " a later attempt at this turn"}
                                    if record.superseded_by else {}),
                                 **({"model": model} if model else {}),
                                 "tokenizer": f"{seen.tokenizer.name} ("
                                 f"{'approximate' if seen.approximate else 'exact'})"}))
    repl.show(repl.prompt_panel(seen.context, record.estimated_tokens,
                                approximate=seen.approximate))


@slash("/tokens", "/tokens [TEXT]",
       "show what the next turn would cost, by part (with TEXT as its input)",
       example="/tokens what did I order?", args=(0, None))
def _tokens(repl: Chat, args: list[str]) -> None:
    # Without TEXT the input part is empty: the line shows what memory alone costs. The files
    # /attach holds for the next message go with it, so they are counted as the turn will.
    context = repl.engine.build_context(" ".join(args), repl.attached)
    repl.show(render.token_line(
        # Counted as the turn counts it: a local model's chat template adds tokens of its own.
        context, approximate=repl.engine.counter.approximate,
        estimated=repl.engine.estimate(context),
        strategy=strategy_label(repl.engine, changed_only=True), flow=True,
    ))
    if repl.engine.memory_behind:
        # A preview changes nothing stored: catching up (a summary, facts) is the turn's.
        repl.notice(f"the next turn first brings {repl.engine.strategy.name}'s memory up to "
                    "date: the summary or facts it makes are not counted here")


@slash("/copy", "/copy [N]",
       "copy the last reply to the clipboard, or its Nth code block (through the terminal, or "
       "the config's clipboard_command)",
       example="/copy 2", args=(0, 1))
def _copy(repl: Chat, args: list[str]) -> None:
    from chatmem import clipboard

    number = whole_number(args[0]) if args else None
    if args and not (number is not None and number >= 1):
        raise UsageError(f"/copy takes one code block number (1 or more), got {args[0]!r}")
    engine = repl.engine
    cut = ""
    record = repl.last.record if repl.last else sessions.last_turn(repl.workspace,
                                                                   engine.session)
    if record is not None:
        if record.reply is None:
            raise UsageError(f"/copy: turn {record.turn} has no reply ({record.status})")
        reply = record.reply
        # A cancelled (or broken) reply is stored as far as it came: copied, said so.
        if record.status != TurnStatus.OK:
            cut = f"; cut short: turn {record.turn} was {record.status}"
    else:
        # An imported or forked session's turns have no records: its messages hold them.
        last = sessions.last_history_reply(repl.workspace, engine.session)
        if last is None:
            raise UsageError("/copy: no reply yet in this session")
        if last[1] is None:
            raise UsageError(f"/copy: turn {last[0]} has no reply")
        reply = last[1]
    text, dropped = clipboard.pasteable(clipboard.pick(reply, number))
    command = engine.settings.clipboard_command if engine.settings else None
    what = f"code block {args[0]}" if args else "the last reply"
    left_out = (f"; {counted(dropped, 'control character')} left out"
                if dropped else "")
    if command:
        clipboard.copy_with_command(command, text)
        repl.notice(f"copied {what} ({len(text):,} characters{cut}) with clipboard_command"
                    f"{left_out}")
        return
    console = next((c for c in (repl.status, repl.out) if on_screen(c)), None)
    if console is None:
        raise UsageError("/copy needs a terminal (it asks the terminal to set the clipboard) "
                         "or the config key clipboard_command, e.g. clipboard_command = "
                         '"wl-copy"')
    console.file.write(clipboard.osc52(text))
    console.file.flush()
    repl.notice(f"copied {what} ({len(text):,} characters{cut}) through the terminal (OSC 52)"
                f"{left_out}")


@slash("/attach", "/attach [PATH]",
       "attach a file to your next message: text or a PDF's text, quoted as data (never "
       "read as instructions), or an image the model sees; without PATH, list them",
       example="/attach photo.png", args=(0, 1), completes="path")
@slash("/file", "/file [PATH]",
       "attach a file to your next message, as /attach does",
       example="/file notes.md", args=(0, 1), completes="path")
def _file(repl: Chat, args: list[str]) -> None:

    from chatmem.attachments import TextLimit, read_file
    from chatmem.config.paths import user_path
    from chatmem.engine.attached import attached_messages
    from chatmem.memory.guards import built_to
    from chatmem.memory.params import budget_params

    if args:
        path = user_path(args[0])
        # The same file twice would be sent twice (under another spelling of its path too).
        same = next((a for a in repl.attached if _is_file(a, path)), None)
        if same is not None:
            repl.notice(f"{same.name} is attached already; it goes with your next message once")
            return
        engine = repl.engine
        attachment = read_file(path, TextLimit(engine.budget, engine.allow_over_budget))
        # An image for a model that cannot see it is refused now, not at the next message.
        [message] = attached_messages([attachment], repl.engine.counter, repl.engine.provider)
        tokens = message.tokens
        # Over the budget on its own, no message with it can be sent: said at the send,
        # after the message was typed, and the file then dropped, it is said now.
        budget = None if engine.allow_over_budget else built_to(engine.strategy,
                                                                engine.request(""))
        if budget and tokens > budget:
            values = " ".join(f"{n}=N" for n in budget_params(engine.strategy.params, budget))
            way = f"/strategy {engine.strategy.name} {values}" if values else "/budget N"
            raise UsageError(
                f"{attachment.name} is about {tokens:,} tokens, more than the context budget of"
                f" {budget:,} on its own: not attached (raise the budget with {way}, or start"
                " the chat with --allow-over-budget)")
        repl.attached.append(attachment)
        repl.notice(f"attached {attachment.name} (about {tokens:,} tokens); it goes with "
                    "your next message (/detach drops it)")
    elif repl.attached:
        repl.notice("attached to your next message: "
                    + ", ".join(a.name for a in repl.attached))
    else:
        repl.notice("nothing attached (/file PATH attaches a file to your next message)")


@slash("/detach", "/detach [PATH]",
       "drop a file attached to your next message, or every one: it is not sent",
       example="/detach notes.md", args=(0, 1), completes="attached")
def _detach(repl: Chat, args: list[str]) -> None:
    from chatmem.config.paths import user_path

    if not repl.attached:
        repl.notice("nothing attached (/file PATH attaches a file to your next message)")
        return
    if args:
        # As /attach tells one file from another: by where it is, however its path is spelt.
        path = user_path(args[0])
        dropped = [a for a in repl.attached if a.name == args[0] or _is_file(a, path)]
        if not dropped:
            raise UsageError(f"/detach: {args[0]} is not attached; attached to your next "
                             "message: " + ", ".join(a.name for a in repl.attached))
    else:
        dropped = list(repl.attached)
    repl.attached = [a for a in repl.attached if all(a is not d for d in dropped)]
    left = (f"still attached: {', '.join(a.name for a in repl.attached)}" if repl.attached
            else "nothing is attached now")
    repl.notice(f"detached {', '.join(a.name for a in dropped)}; {left}")


def _is_file(attachment: Attachment, path: Path) -> bool:
    """Whether `attachment` is the file at `path`, however either path is spelt."""
    from chatmem.attachments import STDIN
    from chatmem.config.paths import user_path

    return attachment.name != STDIN and user_path(attachment.name).resolve() == path.resolve()


@slash("/show-prompt", "/show-prompt", "toggle the panel of the exact messages sent",
       example="/show-prompt")
def _show_prompt(repl: Chat, args: list[str]) -> None:
    repl.show_prompt = not repl.show_prompt
    repl.notice(f"show prompt: {'on' if repl.show_prompt else 'off'}")


@slash("/edit", "/edit [TEXT]",
       "write the next message in $EDITOR (starting from TEXT); it is sent when the editor "
       "closes, unless it is empty",
       example="/edit", args=(0, None))
def _edit(repl: Chat, args: list[str]) -> None:
    with repl.terminal_as_found():
        text = trimmed(edit_in_editor(repl.raw_args))
    if not text:
        repl.notice("nothing sent: the message is empty")
        return
    if on_screen(repl.status):
        # The editor's screen is gone and the prompt line reads `/edit`: without this the
        # scrollback held each reply under no message, as a typed one stays in view.
        repl.show(render.sent_message(prompt_label(repl.address, repl.status.width), text))
    repl.turn(text)


def edit_in_editor(initial: str) -> str:
    """Open $VISUAL or $EDITOR (else vi) on a private temporary file; return what was saved.

    The file lives only while the editor runs, in memory (/dev/shm) where the system has
    it: a message never reaches the disk outside the history file, whose text may be
    encrypted there (a deleted file's blocks, or the editor's swap file beside it, stay
    readable on a disk).
    """
    import os
    import shlex
    import shutil
    import subprocess
    import tempfile

    from chatmem.config.keys import program_environment

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or (
        "vi" if shutil.which("vi") else None)
    if not editor:
        raise UsageError("/edit needs an editor: set $EDITOR (e.g. export EDITOR=nano)")
    memory = "/dev/shm"
    in_memory = os.path.isdir(memory) and os.access(memory, os.W_OK | os.X_OK)
    descriptor, name = tempfile.mkstemp(prefix="chatmem-", suffix=".md",
                                        dir=memory if in_memory else None)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(initial)
        try:
            done = subprocess.run([*shlex.split(editor), name], check=False,
                                  env=program_environment())
        except ValueError as e:  # an unbalanced quote
            raise UsageError(f"/edit: the editor {editor!r} cannot be read: {e}") from None
        except OSError as e:
            raise UsageError(f"/edit: cannot run the editor {editor!r}: {e.strerror}") from None
        if done.returncode != 0:
            raise UsageError(f"/edit: the editor {editor!r} exited with {done.returncode}; "
                             "nothing sent")
        try:
            # utf-8-sig: an editor that saves a byte-order mark (Notepad) adds it to the text.
            with open(name, encoding="utf-8-sig") as file:
                return file.read()
        except UnicodeDecodeError as e:
            raise UsageError(f"/edit: the editor saved text that is not UTF-8 (byte {e.start} is "
                             f"0x{e.object[e.start]:02x}); nothing sent") from None
    finally:
        os.unlink(name)
