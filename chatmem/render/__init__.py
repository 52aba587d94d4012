"""All Rich output: panels, tables, token lines. Core code never prints."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from chatmem.config.options import Cost
from chatmem.memory.context import Context, said_line
from chatmem.memory.params import format_params
from chatmem.render.counts import counted
from chatmem.render.fields import Field, FittedLine
from chatmem.render.kinsoku import kinsoku
from chatmem.render.layout import Fitted, Hanging, Trimmed
from chatmem.render.notices import notice_text
from chatmem.render.reasons import dropped_line, reason_text
from chatmem.render.sessions import shared_cell, shared_words, unanswered_words
from chatmem.render.terminal import SafeConsole
from chatmem.render.terminal import printable as printable
from chatmem.timestamps import dated_time, is_date
from chatmem.tokens import format_count

if TYPE_CHECKING:
    from chatmem.store import SessionSummary

PART_STYLES = {
    "system": "magenta",
    "summary": "yellow",
    "facts": "cyan",
    "recalled": "blue",
    "history": "green",
    "files": "bright_cyan",
    "input": "bold white",
}


def when(iso: str | None, zone: tzinfo | None = None) -> str:
    """`2026-11-29 23:09`: a stored ISO timestamp (UTC) in the user's zone (`zone`, the
    timezone setting's: Settings.zone; None: the process's, $TZ), as a person reads a time
    with no zone shown; seconds and offset left out. --json keeps UTC."""
    if not iso:
        return ""
    moment = dated_time(iso)
    if moment is None or is_date(iso):
        # Not a time chatmem wrote, one at the calendar's edge no zone can move, or a day
        # with no time (an imported transcript's): shown as stored, not hidden or made up.
        return iso[:16].replace("T", " ")
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M")


def cost_text(cost: Cost) -> str:
    """`$1.25`, or `$0.0000039` below a cent: three significant digits, never an exponent."""
    amount = cost.amount
    if amount >= 0.01 or amount <= 0:
        return f"{cost.currency}{amount:,.2f}"
    decimals = 2 - math.floor(math.log10(amount))
    return f"{cost.currency}{amount:.{decimals}f}".rstrip("0")


def make_console(stderr: bool = False) -> Console:
    # Session names, messages and replies are data: their escape sequences are shown, inert.
    # Markup off: names, prompts and parameter values are data, and `[/]` in one is text, not
    # a closing tag (Rich would raise, or take `[bold red]X` for a style). Styles are Text.
    # Emoji codes off alike: a fact's value `:100:` was listed as 💯, an input `:+1:` as 👍.
    return SafeConsole(stderr=stderr, highlight=False, soft_wrap=False, markup=False,
                       emoji=False)


def error_line(message: str) -> Text:
    return Text.assemble(("error: ", "bold red"), message)


def notice_line(message: str) -> Text:
    return Text(message, style="dim")


def sent_message(label: str, text: str) -> Text:
    """A message written elsewhere than the prompt ($EDITOR), shown as the prompt shows a
    typed one: `label` before its first line, dots before the others."""
    more = "." * max(cell_len(label) - 1, 0) + " "
    lines = printable(text).split("\n")
    return Text("\n".join([label + lines[0], *(more + line for line in lines[1:])]))


def no_model_panel(message: str) -> Panel:
    # Text, not markup: `'.[local]'` in the help is a command to copy, not a style tag.
    return Panel(Text(message), title="no model", border_style="red", expand=False)


TEMPLATE_NOTE = ("tokens the chat template adds around the messages (e.g. a default system"
                 " prompt); `chatmem inspect` shows the rendered prompt")
PRIMING_NOTE = "fixed chat-format tokens before the reply"


def template_extra(context: Context, estimated: int | None) -> int:
    """Tokens of the exact request count that no part and no priming explains."""
    return 0 if estimated is None else estimated - context.tokens



TOKEN_LINE_RANKS = {"total": 9, "parts": 6, "cost": 5, "reported": 4, "latency": 3,
                    "strategy": 2}
"""What a narrow terminal keeps of the token line, most important first: the total and
budget, the parts that add up to it, the cost. The strategy is on the toolbar already."""


def token_line(
    context: Context,
    *,
    approximate: bool,
    estimated: int | None = None,
    reported: int | None = None,
    latency_ms: int | None = None,
    strategy: str | None = None,
    cost: Cost | None = None,
    flow: bool = False,
) -> FittedLine:
    """`system 12 · history 340 · input 9 · priming 3 = 364 tokens of 4,000 (reported 364) · …`.

    When the exact count (`estimated`, from the provider's own chat template)
    differs from the parts plus priming, a `chat template +N` segment says
    where the difference went, so the line adds up. On a narrow terminal whole
    fields are left out, least important first, or with `flow` (/tokens, where
    the parts are the point) every field flows onto more lines (chatmem.render.fields).
    """
    ranks = TOKEN_LINE_RANKS

    def part(name: str, style: str, count: str) -> Field:
        return Field(Text.assemble((name, style), f" {count}"), ranks["parts"], group="parts")

    fields = [part(p.kind, PART_STYLES.get(p.kind, ""), format_count(p.tokens, approximate))
              for p in context.parts]
    if context.priming:
        # The reply's opening tokens are part of every request: listed, the line adds up.
        fields.append(part("priming", "dim", format_count(context.priming, approximate)))
    extra = template_extra(context, estimated)
    if extra:
        fields.append(part("chat template", "magenta", f"{extra:+,}"))
    total = estimated if estimated is not None else context.tokens
    summed = Text(f"{format_count(total, approximate)} tokens")
    if context.budget:
        summed.append(f" of {context.budget:,}", style="red" if context.over_budget else "dim")
    fields.append(Field(summed, ranks["total"], Text(" = ")))
    if reported is not None:
        style = "dim" if reported == total else "yellow"
        fields.append(Field(Text(f"(provider reported {reported:,})", style=style),
                            ranks["reported"], Text(" ")))
    if cost is not None:
        fields.append(Field(Text(cost_text(cost), style="green"), ranks["cost"]))
    if latency_ms is not None:
        fields.append(Field(Text(f"{latency_ms / 1000:.1f} s", style="dim"),
                            ranks["latency"]))
    if strategy:
        fields.append(Field(Text(strategy, style="dim"), ranks["strategy"]))
    warnings = [Text(f"⚠ {notice_text(w)}", style="bold yellow") for w in context.warnings]
    return FittedLine(fields, warnings, flow=flow)


def context_panel(
    context: Context, *, approximate: bool, title: str = "prompt", estimated: int | None = None,
    template_note: str = TEMPLATE_NOTE,
) -> Panel:
    """Every message sent, labelled with its part, its tokens and the part's reason.

    Reply priming and any tokens the chat template adds get their own rows, so
    the rows add up to the total under the panel.
    """
    blocks: list[RenderableType] = []
    for part in context.parts:
        style = PART_STYLES.get(part.kind, "")
        header = Text.assemble(
            (f"{part.kind}", f"bold {style}"),
            (f"  {format_count(part.tokens, approximate)} tokens", "dim"),
            (f"  {reason_text(part.reason)}", "italic dim"),
        )
        blocks.append(header)
        for message in part.messages:
            label = f"turn {message.turn} " if message.turn else ""
            # Indented as a block, so every line of a multi-line message sits under its part.
            # The day a recalled message was said, on the line the model gets above it.
            said = (f"{said_line(message.said_on)}\n", "italic") if message.said_on else ""
            # Its later lines further in, so none passes for a message line of its own.
            blocks.append(Padding(Hanging(Text.assemble(
                (f"{label}{message.role}: ", style),
                said,
                (printable(message.content), ""),
                (f"  [{format_count(message.tokens, approximate)}]", "dim"),
            )), (0, 0, 0, 2)))
    blocks.append(Text.assemble(("reply priming", "bold dim"),
                                (f"  {format_count(context.priming, approximate)} tokens",
                                 "dim"),
                                (f"  {PRIMING_NOTE}", "italic dim")))
    extra = template_extra(context, estimated)
    if extra:
        blocks.append(Text.assemble(("chat template", "bold magenta"),
                                    (f"  {extra:+,} tokens", "dim"),
                                    (f"  {template_note}", "italic dim")))
    if context.dropped:
        blocks.append(Text(dropped_line(context.dropped), style="dim red"))
    shown = estimated if estimated is not None else context.tokens
    total = f"{format_count(shown, approximate)} tokens"
    if context.budget:
        total += f" of {context.budget:,}"
    return Panel(Group(*blocks), title=title, subtitle=total, border_style="blue")


def table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], title: str | None = None
) -> Table:
    out = Table(title=title, header_style="bold")
    for column in columns:
        out.add_column(column.replace("_", " "), overflow="fold")
    for row in rows:
        # A Chinese description folds with no line starting with "，" (render.kinsoku).
        out.add_row(*(kinsoku("" if row.get(c) is None else str(row.get(c))) for c in columns))
    return out


def sessions_table(rows: Sequence[SessionSummary], current: int | None = None, *,
                   zone: tzinfo | None = None) -> RenderableType:
    """`sessions list`: names and strategies whole, counts right-aligned, times to the minute.

    No vertical rules and the parameters under the strategy: that is what lets
    a long name and a combined strategy fit whole in 80 columns; narrower, the time goes,
    then each session takes a name line and a details line. `current`: the id of the
    session a chat is in (/sessions), marked with `*`; `zone`: the times', as `when` takes it.
    """
    if not rows:
        return Text("no sessions yet (chatmem chat NAME starts one)", style="dim")
    # Only where something is shared (a team's PostgreSQL history): a file's list is as it was.
    shared = any(shared_cell(row) for row in rows)
    return Fitted(_sessions_grid(rows, current, updated=True, shared=shared, zone=zone),
                  _sessions_grid(rows, current, updated=False, shared=shared, zone=zone),
                  _sessions_stacked(rows, current, zone))


def _sessions_grid(rows: Sequence[SessionSummary], current: int | None, *,
                   updated: bool, shared: bool, zone: tzinfo | None) -> Table:
    out = Table(header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                padding=(0, 1, 0, 0))
    cells: list[tuple[list[str], Text, list[str]]] = []
    for row in rows:
        strategy = Text(row.strategy)
        params = format_params(row.params or {})
        if params:
            strategy.append(f"\n{params}", style="dim")
        mark = [] if current is None else ["*" if row.id == current else ""]
        unanswered = unanswered_words(row.failed, row.cancelled)
        turns = f"{row.turns:,}" + (f" ({unanswered})" if unanswered else "")
        cells.append(([*mark, row.address], strategy,
                      [f"{row.messages:,}", turns, *([shared_cell(row)] if shared else []),
                       *([when(row.updated_at, zone)] if updated else [])]))

    def whole(column: int, before: bool) -> int:
        # Rich measures a no-wrap cell by its longest word, so "0 (1 cancelled)" or a
        # time counted as 10 columns, the grid was chosen where it did not fit, and the
        # strategy column was squeezed: "max_tokens=50000" read "max_tokens=500" over "00".
        return max(cell_len((left if before else right)[column]) for left, _, right in cells)

    if current is not None:
        out.add_column("", no_wrap=True)
    out.add_column("name", no_wrap=True, min_width=whole(len(cells[0][0]) - 1, True))
    # Its header whole: a strategy column folded to 6 columns is no layout to pick.
    out.add_column("strategy", overflow="fold", min_width=len("strategy"))
    headers = ["messages", "turns", *(["shared"] if shared else []),
               *(["updated"] if updated else [])]
    for column, header in enumerate(headers):
        out.add_column(header, justify="right" if column < 2 else "left", no_wrap=True,
                       min_width=whole(column, False))
    for left, strategy, right in cells:
        out.add_row(*left, strategy, *right)
    return out


def _sessions_stacked(rows: Sequence[SessionSummary], current: int | None,
                      zone: tzinfo | None) -> Group:
    lines: list[RenderableType] = []
    for row in rows:
        mark = "" if current is None else "* " if row.id == current else "  "
        params = format_params(row.params or {})
        details = [f"{row.strategy}{f' {params}' if params else ''}",
                   counted(row.messages, "message"), counted(row.turns, "turn"),
                   unanswered_words(row.failed, row.cancelled),
                   when(row.updated_at, zone), shared_words(row)]
        lines.append(Text.assemble(mark, (row.address, "bold")))
        # Flowed between details, never inside one: wrapped as a sentence, the line split
        # "2 messages" and "2026-12-06 19:11" and left a dot at one line's start.
        flowing = FittedLine([Field(Text(d, style="dim"), 0) for d in details if d], flow=True)
        lines.append(Padding(flowing, (0, 0, 0, len(mark)), expand=False) if mark else flowing)
    return Group(*lines)


def named_lines(named: Mapping[str, str]) -> list[Text]:
    """`config file   PATH` lines, names aligned; print them with soft_wrap (paths whole)."""
    width = max(len(name) for name in named)
    return [Text.assemble((f"{name:<{width}}  ", "bold"), value) for name, value in named.items()]


def config_table(rows: Sequence[Mapping[str, Any]]) -> RenderableType:
    """`config show`: key · value · source (empty for a default), under the files' lines;
    narrower than the table's least, each key over its value and source (Rich would
    squeeze the value and source to nothing)."""
    out = Table(header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                padding=(0, 2, 0, 0))
    out.add_column("key", no_wrap=True)
    out.add_column("value", overflow="fold", min_width=8)
    out.add_column("source", style="dim", overflow="fold", min_width=6)
    stacked: list[RenderableType] = []
    for row in rows:
        key, value, source = str(row["key"]), str(row["value"]), str(row["source"])
        out.add_row(key, value, source)
        stacked += [Text(key, style="bold", overflow="fold"),
                    Padding(Text.assemble(value, (f"  ({source})" if source else "", "dim"),
                                          overflow="fold"), (0, 0, 0, 2))]
    return Fitted(out, Group(*stacked))


def key_values(data: Mapping[str, Any], title: str | None = None) -> RenderableType:
    out = Table(title=title, show_header=False, box=None, padding=(0, 2, 0, 0))
    out.add_column(style="bold")
    out.add_column(overflow="fold")
    for key, value in data.items():
        out.add_row(key, "" if value is None else printable(str(value)))
    return Trimmed(out)


def transcript(messages: Iterable[Mapping[str, Any]]) -> Group:
    """`[3] user: …` lines; a message's later lines start further in, so a message that
    writes `\n[4] assistant: …` cannot pass for a message of its own."""
    lines: list[RenderableType] = []
    for m in messages:
        style = {"user": "bold green", "assistant": "cyan", "system": "magenta"}.get(m["role"], "")
        lines.append(Hanging(Text.assemble((f"[{m['turn']}] {m['role']}: ", style),
                                           printable(m["content"]))))
    return Group(*lines)


HELP_COLUMN = 30
"""The narrowest the help beside the usages may be; narrower, each usage goes over its help."""


def help_table(commands: Iterable[tuple[str, str, str]]) -> RenderableType:
    """(usage, help, example) rows: what /help prints, each command with an example.

    Usages beside their help where the help keeps HELP_COLUMN columns; on a
    narrower terminal (60 columns left it 16), each usage over its help.
    """
    rows = [(usage, Text.assemble(text, ("\ne.g. ", "dim"), (example, "cyan")))
            for usage, text, example in commands]
    out = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    # Both minimums stated: Rich measures a no-wrap column by its longest word.
    out.add_column(style="bold cyan", no_wrap=True,
                   min_width=max((cell_len(usage) for usage, _ in rows), default=1))
    out.add_column(min_width=HELP_COLUMN)
    for usage, text in rows:
        out.add_row(usage, text)
    stacked = Group(*(Group(Text(usage, style="bold cyan"), Padding(text, (0, 0, 0, 2)))
                      for usage, text in rows))
    return Fitted(out, stacked)
