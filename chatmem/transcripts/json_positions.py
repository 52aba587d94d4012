"""Where things are in a JSON document's text, so an error in one message can name its line:
json.loads gives values, not positions."""

from __future__ import annotations

import json

_DECODER = json.JSONDecoder()
_BLANK = " \t\r\n"


def _skip_blank(text: str, index: int) -> int:
    while text[index] in _BLANK:
        index += 1
    return index


def top_level_value(text: str, wanted: str) -> int:
    """Where the value of the top-level object's key `wanted` begins.

    Key by key, each value skipped whole: a "messages" key nested in another value
    (an export's "metadata") is never taken for it. The last one wins, as in json.loads.
    """
    index = _skip_blank(text, 0)
    if text[index] != "{":
        raise ValueError("not an object")
    index += 1
    found = None
    while True:
        index = _skip_blank(text, index)
        if text[index] == "}":
            break
        key, index = _DECODER.raw_decode(text, index)
        index = _skip_blank(text, index)
        if text[index] != ":":
            raise ValueError("expected ':'")
        index = _skip_blank(text, index + 1)
        if key == wanted:
            found = index
        _, index = _DECODER.raw_decode(text, index)
        index = _skip_blank(text, index)
        if text[index] == ",":
            index += 1
    if found is None:
        raise ValueError(f"no top-level {wanted!r}")
    return found


def element_lines(text: str, array_start: int, count: int) -> list[int]:
    """The line each element of the JSON array at `array_start` begins on.

    Newlines are counted from the element before, not from the start: counting from
    the start made a 20,000-message document take seconds per thousand messages.
    """
    lines = []
    index, line, counted_to = array_start + 1, 1 + text.count("\n", 0, array_start), array_start
    for _ in range(count):
        while text[index] in " \t\r\n,":
            index += 1
        line += text.count("\n", counted_to, index)
        counted_to = index
        lines.append(line)
        _, index = _DECODER.raw_decode(text, index)
    return lines
