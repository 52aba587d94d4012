"""Tab completion: slash commands, strategies, their parameters and the values each takes,
sessions, facts, turns, templates.

Every candidate carries one line of help for the menu. What an argument is
comes from the command table (`SlashCommand.completes`); the candidates come
from the store and the strategy registry as they are now, so a session
created a moment ago completes too.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from chatmem import graphemes
from chatmem.app import facts as remembered
from chatmem.app import sessions
from chatmem.app.summaries import latest_summary, summarizing, summary_version
from chatmem.errors import ChatmemError, NotFound
from chatmem.memory.fact_keys import key_identity
from chatmem.memory.spec import StrategySpec
from chatmem.memory.spec_candidates import parameters, spec_candidates, value_candidates
from chatmem.render.counts import counted
from chatmem.repl.table import (
    SLASH,
    SPACES,
    closed_words,
    split_closed,
    split_command,
    split_words,
)

if TYPE_CHECKING:
    from chatmem.config.settings import Settings
    from chatmem.memory.registry import StrategyRegistry
    from chatmem.repl.chat import Chat
    from chatmem.store import SessionRecord

R = TypeVar("R")

MENU_WIDTH = 60
"""Help in the menu is cut to one line of about this many characters."""
RECENT = 20
"""Turns and summary versions offered, newest first. Each is read by a one-row query, and
only when the newest one changed, so a keystroke's reads do not grow with the session."""


def one_line(text: str, width: int = MENU_WIDTH) -> str:
    return graphemes.one_line(text, width)


class SlashCompleter(Completer):
    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self.paths = PathCompleter(expanduser=True)
        self._recent: dict[str, tuple[Any, list[tuple[str, str]]]] = {}

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or "\n" in text:
            return
        name, rest = split_command(text)
        if not rest:
            yield from self._commands(text)
            return
        command = SLASH.get(name)
        if command is None or command.completes is None:
            return
        if command.completes == "path":
            yield from self._paths(rest, complete_event)
            return
        if command.completes == "attached":
            yield from self._attached(rest)
            return
        try:
            words = split_words(rest)
        except ValueError:
            return
        word = "" if rest.endswith(tuple(SPACES)) or not words else words[-1]
        position = len(words) - (0 if word == "" else 1)  # index of the word being typed
        candidates: Iterable[tuple[str, str]]
        if command.completes == "strategy":
            in_use = StrategySpec.of(self.chat.engine.strategy)
            if position > 0 and "=" in word:  # `/strategy window k=`
                candidates = value_candidates(words[0].partition(":")[0], word,
                                              self.strategies, in_use)
            elif position > 0:
                candidates = parameters(words[0].partition(":")[0], self.strategies)
            else:
                candidates = spec_candidates(word, self.strategies, in_use)
        elif position > 0:
            return
        else:
            try:
                candidates = self._candidates(command.completes, word)
            except ChatmemError:
                # The history cannot be read (its file deleted or replaced under the chat):
                # prompt-toolkit printed a traceback and 'Press ENTER to continue...'.
                return
        # A fact key completes as /forget finds it: 預 (traditional) offers 预约时间, 過敏 过敏.
        starts = _same_key_start if command.completes == "fact" else str.startswith
        for value, meta in candidates:
            if starts(value, word) and value != word:
                yield Completion(value, start_position=-len(word), display_meta=one_line(meta))

    def _paths(self, rest: str, complete_event: CompleteEvent) -> Iterator[Completion]:
        """The files a command's one PATH may name, each as the whole word quoted where the
        command line would split it (`'Screen Shot 10.12.png'`, `'会议 纪要.md'`): put in
        as it is, a name with a space read as two words and /attach refused the line."""
        typed = _typed_path(rest)
        if typed is None:
            return
        word, raw = typed
        for found in self.paths.get_completions(Document(word), complete_event):
            whole = word[:len(word) + found.start_position] + found.text
            yield Completion(_as_word(whole), start_position=-len(raw),
                             display=found.display, display_meta=found.display_meta)

    def _attached(self, rest: str) -> Iterator[Completion]:
        """What /detach drops: the files attached, not the folder's, each read and put in as
        a PATH is (`会` and `'会` both offer `'会议 纪要.md'`)."""
        typed = _typed_path(rest)
        if typed is None:
            return
        word, raw = typed
        for attachment in self.chat.attached:
            if attachment.name.startswith(word):
                yield Completion(_as_word(attachment.name), start_position=-len(raw),
                                 display_meta="attached to your next message")

    def _commands(self, typed: str) -> Iterator[Completion]:
        for command in SLASH.values():
            if command.name.startswith(typed):
                yield Completion(command.name, start_position=-len(typed),
                                 display=command.name, display_meta=one_line(command.help))

    def _candidates(self, kind: str, word: str) -> Iterable[tuple[str, str]]:
        engine, workspace = self.chat.engine, self.chat.workspace
        session = engine.session
        if kind == "session":
            # A shared session as OWNER/NAME, which /switch takes; told from the current
            # one by id, as one's own and a shared one may have the same name.
            return [(row.address, f"{row.strategy} · {counted(row.turns, 'turn')}")
                    for row in sessions.list_sessions(workspace) if row.id != session.id]
        if kind == "fact":
            facts = remembered.live_facts(workspace, session)
            pinned = remembered.session_pins(workspace, session)
            return ([(str(f.id), f"{f.key} = {f.value}") for f in facts]
                    + [(f.key, f"fact {f.id}: {f.value}") for f in facts]
                    + [(p.ref, f"pinned: {p.text}") for p in pinned if p.ref])
        if kind == "turn":
            return self._turns(session)
        if kind == "summary":
            in_use = summarizing(engine.strategy)
            return self._summaries(session, [in_use] if in_use else [
                name for name, cls in self.strategies.items() if cls.summarizes])
        if kind == "template":
            return _templates(engine.settings)
        return []

    @property
    def strategies(self) -> StrategyRegistry:
        """What `/strategy` names: the workspace's registry, plugins' strategies included."""
        return self.chat.workspace.registries.strategies

    def _turns(self, session: SessionRecord) -> list[tuple[str, str]]:
        last = sessions.last_turn(self.chat.workspace, session)
        if last is None:
            return []
        # The conversation's turn numbers, as /inspect N takes them (after an import they
        # are not the request numbers); an attempt that failed shares its turn's.
        read = partial(sessions.turn_at, self.chat.workspace, session)
        erased = sessions.history_version(self.chat.workspace, session)
        return self._window(("turn", session.id, erased, last.status, last.number), last,
                            last.turn,
                            read, lambda t: (str(t.turn), f"{t.status}: {t.input}"))

    def _summaries(self, session: SessionRecord,
                   strategies: Iterable[str]) -> list[tuple[str, str]]:
        """Versions of the summary /summary shows: the strategy's in use, else the newest."""
        workspace = self.chat.workspace
        found = [s for n in strategies if (s := latest_summary(workspace, session, n))]
        if not found:
            return []
        latest = max(found, key=lambda s: s.created_at)
        erased = sessions.history_version(workspace, session)
        return self._window(("summary", session.id, erased, latest.strategy), latest,
                            latest.version,
                            partial(summary_version, workspace, session, latest.strategy),
                            lambda v: (str(v.version), f"{v.strategy} · {v.text}"))

    def _window(self, key: tuple[Any, ...], newest: R, number: int, read: Callable[[int], R],
                row: Callable[[R], tuple[str, str]]) -> list[tuple[str, str]]:
        """`newest` (number `number`) and the RECENT - 1 before it, read one by one (gaps
        skipped), as menu rows; kept until `key` or the newest number changes. Each key
        holds the session's history_version: text another process erased (a purge) has
        left the rows, but not their numbers."""
        marker = (*key, number)
        cached = self._recent.get(str(key[0]))
        if cached is not None and cached[0] == marker:
            return cached[1]
        records = [newest]
        for earlier in range(number - 1, max(number - RECENT, 0), -1):
            with suppress(NotFound):
                records.append(read(earlier))
        rows = [row(r) for r in records]
        self._recent[str(key[0])] = (marker, rows)
        return rows


def _typed_path(rest: str) -> tuple[str, str] | None:
    """(the PATH being typed as the command reads it, as it was typed, quotes and all) at
    the end of `rest`; None when a word is typed after it. A quote opening a word and left
    open is read as closed, one inside a word as an apostrophe: as Enter reads the line
    (split_closed), not `it's` as its."""
    close, words = closed_words(rest)
    if not words:
        return "", ""
    if not close and rest.endswith(tuple(SPACES)):
        return None
    if len(words) > 1:
        return None
    start = len(rest) - len(rest.lstrip(SPACES))
    return words[0], rest[start:]


def _as_word(path: str) -> str:
    """`path` as one word Enter reads back (split_closed): bare when it reads so (it's.txt,
    as it was typed and attached), else quoted, in double quotes when it holds an
    apostrophe: shlex.quote wrote "O'Brien notes.md" as 'O'"'"'Brien notes.md'."""
    if split_closed(path) == [path]:
        return path
    if "'" in path and not any(c in path for c in '"\\'):
        return f'"{path}"'
    return shlex.quote(path)


def _same_key_start(value: str, word: str) -> bool:
    return value.startswith(word) or key_identity(value).startswith(key_identity(word))


def _templates(settings: Settings | None) -> list[tuple[str, str]]:
    """Template names, each with what it sets; one that cannot be read says why."""
    from chatmem.config.templates import find_template, known_templates
    from chatmem.errors import ChatmemError

    if settings is None:
        return []
    rows = []
    for name in known_templates(settings):
        try:
            template = find_template(settings, name)
        except ChatmemError as e:
            rows.append((name, f"cannot be used: {e}"))
            continue
        sets = [f"{what} {value}" for what, value in (
            ("model", template.model), ("strategy", template.strategy),
            ("system", template.system)) if value]
        rows.append((name, " · ".join(sets) or "sets nothing"))
    return rows
