"""`chatmem strategies NAME`: what a strategy sends, and each parameter in a sentence."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from chatmem.memory.params import Param
from chatmem.render.kinsoku import kinsoku


def strategy_help(name: str, description: str, params: Sequence[Param],
                  prefix: str = "", plugin: str | None = None) -> RenderableType:
    """The strategy's line, then a row per parameter: name, default, range, meaning.

    `prefix` is how a combination addresses a member's parameters (`window.`); `plugin`,
    the distribution a plugin's strategy comes from (`chatmem-echo 0.1.0`).
    """
    title = Text.assemble((name, "bold"), f"  {description}")
    if plugin is not None:
        title.append(f"  (plugin {plugin})", style="dim")
    if not params:
        return Group(kinsoku(title), Text("no parameters", style="dim"))
    out = Table(header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                padding=(0, 2, 0, 0))
    out.add_column("parameter", no_wrap=True)
    out.add_column("default", no_wrap=True)
    out.add_column("takes", overflow="fold", ratio=1)
    out.add_column("meaning", overflow="fold", ratio=2)
    for param in params:
        out.add_row(f"{prefix}{param.name}", f"{param.default}", param.range_text(),
                    kinsoku(sentence(param.help)))
    return Group(kinsoku(title), out)


def sentence(text: str) -> str:
    """`how many turns to keep` → `How many turns to keep.`; `保留最近几轮` → `保留最近几轮。`
    (a text that ends in a stop of its own keeps it, and one ending in Chinese punctuation
    takes none: `标记：` is not `标记：.`)."""
    text = text.strip()
    if not text or text[-1] in ".。！？!?…" or (
            text[-1] not in _CLOSING and _CJK_PUNCTUATION.match(text[-1])):
        return text[:1].upper() + text[1:]
    # A closing bracket or quote belongs to what it closes: `上限（0 表示不限）` is Chinese.
    last = text.rstrip(_CLOSING)[-1:] or text[-1]
    # Chinese ending in a number or a Latin name (`默认 3 轮，最多 10`, `单位为 MB`) is Chinese.
    chinese = _CJK_LAST.match(last) or (
        len(_CJK_LAST.findall(text)) > len(_LATIN.findall(text)))
    stop = "。" if chinese else "."
    return text[:1].upper() + text[1:] + stop


_CJK_LAST = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
                       "\U00020000-\U0002fa1f]")
"""Chinese and Japanese, which end a sentence with 。 (Korean takes a full stop)."""
_CJK_PUNCTUATION = re.compile("[\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40"
                              "\uff5b-\uff65]")
"""Chinese and Japanese punctuation, fullwidth forms included (，、；：…): a stop after one
would read as a stray mark."""
_LATIN = re.compile("[A-Za-z]")
_CLOSING = ")]}\"'）】」』》〉”’"
