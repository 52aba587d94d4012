"""Statements for psycopg: chatmem writes `?` placeholders, psycopg reads `%s`."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1024)
def translate(sql: str) -> str:
    """`sql` with `?` placeholders as psycopg's `%s`, and every `%` doubled.

    A `?` inside a quoted literal, a quoted identifier or a comment stays; a
    `%` is doubled everywhere, as psycopg reads placeholders in literals too.
    """
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"":
            end = i + 1
            while end < n:
                if sql[end] == c:
                    if end + 1 < n and sql[end + 1] == c:  # '' or "" escapes the quote
                        end += 2
                        continue
                    break
                end += 1
            out.append(sql[i : end + 1].replace("%", "%%"))
            i = end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif c == "?":
            out.append("%s")
            i += 1
        elif c == "%":
            out.append("%%")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)
