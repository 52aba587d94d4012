"""`chatmem logs` as a table, and money as the user reads it."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from chatmem.config.options import Cost, Spent
from chatmem.graphemes import grapheme_start, one_line
from chatmem.render import cost_text, when
from chatmem.render.fields import Field, FittedLine
from chatmem.render.layout import Hanging, Trimmed
from chatmem.render.terminal import cells_prefix
from chatmem.store import LogEntry, TurnStatus

QUESTION_CHARS = 60
"""How much of each question the table shows: its start, enough to recognise it."""
QUESTION_FIRST = 30
"""The question's room the session column may take back from, before it is cut."""
SESSION_COLUMNS = 14
"""The session column in 80 columns: the start of a name and its turn number."""
SESSION_MOST = 40
LEAST = 6
"""The narrowest question and session columns tried; narrower, each turn takes lines."""
NAMED = 12
"""The model and strategy columns: enough of a name to tell most apart."""
NAMED_LEAST = 8
"""What the model and strategy columns give up to, so session names stay told apart."""


def spent_parts(spent: Spent) -> tuple[str, str | None]:
    """(`total 1,234 tokens`, `$0.0123`): the tokens, and the cost (None: no price known;
    a `+` after it when some model has no configured price); `$0.0123 + €0.05` when models
    were priced in different currencies."""
    cost = None if not spent.costs else " + ".join(cost_text(c) for c in spent.costs) + (
        "+" if spent.unpriced else "")
    return f"total {spent.tokens:,} tokens", cost


def question_start(text: str, chars: int = QUESTION_CHARS) -> str:
    return one_line(text, chars)


def tokens_text(entry: LogEntry) -> str:
    """`1,234+56`: tokens sent, plus tokens of the reply."""
    sent = f"{entry.prompt_tokens:,}" if entry.prompt_tokens is not None else "?"
    return sent + (f"+{entry.reply_tokens:,}" if entry.reply_tokens is not None else "")


def session_cell(session: str, number: int, columns: int, shared: int = 0) -> str:
    """`name #N` in `columns` terminal cells at most: a long name is cut (never inside a
    character: a Chinese one is two cells, an accent stays on its letter), the turn number
    `inspect SESSION --turn N` needs stays. `shared`: how many characters it starts with
    that another session's name in the same log does; where its start alone would show no
    more than those, the part after them is shown, as `中文回放…window-k-1 #9`."""
    whole = f"{session} #{number}"
    tail = f"… #{number}"
    room = columns - cell_len(tail)
    if cell_len(whole) <= columns or room < 1:
        return whole
    head = cells_prefix(session, room)
    if not shared or len(head) >= shared + _TELLS_APART or room < 5:
        return head + tail
    # The word that differs whole when it fits (replay --save-as NAME's -window-k-1).
    start = max(session.rfind(sign, 0, shared) for sign in _WORD_ENDS) + 1
    if cell_len(session[start:]) > room - 2:
        start = shared
    while not grapheme_start(session, start):
        start -= 1
    rest = session[start:]
    if cell_len(rest) <= room - 2:
        return f"{cells_prefix(session[:start], room - cell_len(rest))}…{rest} #{number}"
    head = cells_prefix(session[:start], max(room // 3, 2))
    return f"{head}…{cells_prefix(rest, room - cell_len(head) - 1)}{tail}"


_TELLS_APART = 4
"""Characters past the start a name shares with another that its plain cut must show, else
the part after that start is shown: `中文回放-w…` and `中文回放-s…` hardly tell them apart."""
_WORD_ENDS = "-_. "
"""Characters a session name's words end at."""


def shared_starts(names: Iterable[str]) -> dict[str, int]:
    """How many characters each name starts with that another of `names` does: the most it
    shares with a neighbour in sorted order, which is the most it shares with any."""
    ordered = sorted(set(names))
    shared = dict.fromkeys(ordered, 0)
    for before, after in itertools.pairwise(ordered):
        pairs = zip(before, after, strict=False)  # (the shorter one ends the common start)
        common = next((i for i, (a, b) in enumerate(pairs) if a != b),
                      min(len(before), len(after)))
        shared[before] = max(shared[before], common)
        shared[after] = max(shared[after], common)
    return shared


def status_text(entry: LogEntry) -> str:
    """`failed`, `cancelled`, `replaced` (by a later attempt at the same turn), or nothing
    for an ok turn still in history."""
    if entry.superseded_by is not None:
        return "replaced"
    return "" if entry.status == TurnStatus.OK else str(entry.status)


def logs_table(entries: Sequence[LogEntry], costs: Sequence[Cost | None], *,
               zone: tzinfo | None = None) -> RenderableType:
    """Turns, newest (or best-matching) first: when (in `zone`, as `when` takes it), where,
    which model and strategy, what it cost, and the start of the question, cut to the width
    the console leaves it."""
    if not entries:
        return Text("no turns found", style="dim")
    longest = max(cell_len(f"{entry.address} #{entry.number}") for entry in entries)
    log = _Log(entries, costs, shared_starts(entry.address for entry in entries), zone)
    session = min(max(longest, SESSION_COLUMNS), SESSION_MOST)
    return _QuestionFit(log, session, _apart(log, session))


def _apart(log: _Log, widest: int) -> int:
    """The narrowest session column (LEAST at least, `widest` at most) whose cells tell the
    log's sessions apart: no two names shown alike beside turn numbers of as many digits
    (trip-b and trip-c both `tri… #3` in 7 cells)."""
    names = {(entry.address, len(str(entry.number))) for entry in log.entries}
    for columns in range(LEAST, widest):
        cells = {(digits, session_cell(name, 10 ** digits - 1, columns,
                                       log.shared.get(name, 0))) for name, digits in names}
        if len(cells) == len(names):
            return columns
    return widest


@dataclass(frozen=True)
class _Log:
    entries: Sequence[LogEntry]
    costs: Sequence[Cost | None]
    shared: Mapping[str, int] = field(default_factory=dict)
    """shared_starts of the whole log's session names (a few rows of it are measured)."""
    zone: tzinfo | None = None

    @property
    def priced(self) -> bool:
        return any(cost is not None for cost in self.costs)

    @property
    def marked(self) -> bool:
        # Only when some turn is not simply ok: most logs are all ok, and 80 columns are few.
        return any(status_text(entry) for entry in self.entries)

    def rows(self, session: int, priced: bool, marked: bool) -> Iterator[list[str]]:
        for entry, cost in zip(self.entries, self.costs, strict=True):
            # Month, day and time: a log is read for what happened lately.
            cell = session_cell(entry.address, entry.number, session,
                                self.shared.get(entry.address, 0))
            row = [when(entry.created_at, self.zone)[5:], cell, entry.model or "", entry.strategy,
                   tokens_text(entry)]
            if priced:
                row.append(cost_text(cost) if cost is not None else "")
            if marked:
                row.append(status_text(entry))
            row.append(question_start(entry.input))
            yield row

    def only(self, chosen: Sequence[int]) -> _Log:
        return _Log([self.entries[i] for i in chosen], [self.costs[i] for i in chosen],
                    self.shared, self.zone)


def _table(log: _Log, question: int, session: int, priced: bool, marked: bool,
           named: int = NAMED) -> Table:
    out = Table(header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                padding=(0, 1, 0, 0))
    out.add_column("time", no_wrap=True)
    # Names keep their start: enough to tell sessions and models apart in 80 columns.
    for name, widest in (("session", session), ("model", named), ("strategy", named)):
        out.add_column(name, no_wrap=True, overflow="ellipsis", max_width=widest)
    out.add_column("tokens", justify="right", no_wrap=True)
    if priced:
        out.add_column("cost", justify="right", no_wrap=True)
    if marked:
        out.add_column("status", no_wrap=True)
    out.add_column("question", no_wrap=True, overflow="ellipsis", max_width=question)
    for row in log.rows(session, priced, marked):
        # Cut here, between two characters: Rich's cut of a Chinese question that did not
        # fit ended it with a space where half a character would go ("下周去 …").
        out.add_row(*row[:-1], _cut(row[-1], question))
    return out


class _QuestionFit:
    """The table with the widest question and session columns that fit the console (Rich
    would squeeze the other columns to nothing instead): the question gives up room first,
    down to QUESTION_FIRST, then the session names down to SESSION_COLUMNS, then the
    question again, then the names to what still tells them apart (`apart`: their first
    characters and the turn number where those do), then the model and strategy columns to
    NAMED_LEAST. Where not even those fit, each turn takes a few lines instead (`_Stacked`),
    names whole: a column squeezed by Rich shows `1…` for 166, names cut shorter than
    `apart` show two sessions alike."""

    def __init__(self, log: _Log, session: int, apart: int = LEAST) -> None:
        self.log = log
        self.session = session
        self.apart = apart

    def _widths(self) -> list[tuple[int, int, int]]:
        """(question, session, model and strategy) column widths, in the order tried."""
        names = range(self.session, SESSION_COLUMNS - 1, -2)
        least = max(LEAST, min(self.apart, names[-1]))
        # Only to keep names apart: names told apart in LEAST take lines next, as before.
        named = range(NAMED - 1, NAMED_LEAST - 1, -1) if least > LEAST else range(0)
        return ([(question, self.session, NAMED) for question in range(QUESTION_CHARS,
                                                                       QUESTION_FIRST - 1, -2)]
                + [(QUESTION_FIRST, session, NAMED) for session in names]
                + [(question, names[-1], NAMED)
                   for question in range(QUESTION_FIRST - 2, LEAST - 1, -2)]
                + [(LEAST, session, NAMED) for session in range(names[-1] - 1, least - 1, -1)]
                + [(LEAST, least, width) for width in named])

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        roomy = options.update_width(10_000)
        priced, marked = self.log.priced, self.log.marked
        # Rich measures a table as the sum of its columns' widest cells, so the few rows that
        # hold them measure as the whole log does: each width tried measures those, not every
        # row again (47 s of CPU for `logs -n 10000` in 80 columns).
        few = self.log.only(_widest_rows(console, roomy, self.log, self.session, priced,
                                         marked))
        for question, session, named in self._widths():
            table = _table(few, question, session, priced, marked, named)
            if Measurement.get(console, roomy, table).maximum <= options.max_width:
                # Its lines end at their last mark (a pipe's lines, too).
                yield Trimmed(_table(self.log, question, session, priced, marked, named))
                return
        yield Trimmed(_Stacked(self.log))


class _Stacked:
    """Each turn in lines of its own, as `sessions list` and `facts list` are when narrow:
    its session and turn number whole, then its time, model, strategy, tokens, cost and
    status, each whole (onto another line rather than in pieces), then its question's start
    on one line."""

    def __init__(self, log: _Log) -> None:
        self.log = log

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        room = max(options.max_width - 2, 1)
        for entry, cost in zip(self.log.entries, self.log.costs, strict=True):
            yield Text(f"{entry.address} #{entry.number}", style="bold")
            facts = [when(entry.created_at, self.log.zone)[5:], entry.model or "", entry.strategy,
                     f"{tokens_text(entry)} tokens", cost_text(cost) if cost else "",
                     status_text(entry)]
            details = FittedLine([Field(Text(fact), 0) for fact in facts if fact], flow=True)
            # Room for the ` ·` a line of them ends with.
            yield Padding(Text(details.text(room - 2).plain, style="dim"), (0, 0, 0, 2))
            yield Padding(Text(_cut(question_start(entry.input), room)), (0, 0, 0, 2))


def _cut(text: str, room: int) -> str:
    """`text` in `room` cells, cut with … between two characters as a reader sees them."""
    return text if cell_len(text) <= room else cells_prefix(text, room - 1).rstrip() + "…"


def _widest_rows(console: Console, options: ConsoleOptions, log: _Log, session: int,
                 priced: bool, marked: bool) -> list[int]:
    """Indexes of rows that hold the widest cell of each column whatever the widths tried:
    every column's but the session's measured once; a session cell (cut to the width tried)
    depends only on the session's name and the turn number's digits, so one row of each."""
    widest: dict[int, tuple[int, int]] = {}
    chosen: dict[tuple[str, int], int] = {}
    for index, (entry, row) in enumerate(zip(log.entries, log.rows(session, priced, marked),
                                             strict=True)):
        chosen.setdefault((entry.address, len(str(entry.number))), index)
        for column, cell in enumerate(row):
            if column == 1:
                continue
            width = Measurement.get(console, options, cell).maximum
            if column not in widest or width > widest[column][0]:
                widest[column] = (width, index)
    return sorted({index for _, index in widest.values()} | set(chosen.values()))


def full_turns(entries: Sequence[LogEntry], costs: Sequence[Cost | None], *,
               zone: tzinfo | None = None) -> RenderableType:
    """`logs --full`: each turn whole, a header line (its time in `zone`) then its question
    and its reply."""
    if not entries:
        return Text("no turns found", style="dim")
    blocks: list[RenderableType] = []
    for entry, cost in zip(entries, costs, strict=True):
        facts = [when(entry.created_at, zone), f"{entry.address} #{entry.number}",
                 entry.model or "", entry.strategy, f"{tokens_text(entry)} tokens"]
        if cost is not None:
            facts.append(cost_text(cost))
        if status_text(entry):
            facts.append(status_text(entry))
        header = Text(" · ".join(fact for fact in facts if fact), style="bold")
        # Later lines of the question and reply further in: at the margin, a line the user
        # or model wrote could pass for a `reply:` or another turn's header.
        question = Text.assemble(("question: ", "cyan"), entry.input)
        reply = Text.assemble(("reply: ", "green"), (f"(none: the turn {entry.status})", "dim")
                              if entry.reply is None else entry.reply)
        blocks.extend([header, Hanging(question), Hanging(reply), Text("")])
    return Group(*blocks[:-1])
