"""ReplyWriter: Markdown on a terminal, the text as sent anywhere else; escapes inert in both."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import signal
import struct
import termios
import threading
import time

import pytest
from rich.console import Console
from waiting import HANG, wait_until

from chatmem.render.reply import ReplyWriter
from chatmem.render.terminal import SafeConsole

STYLES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
REPLY = ["Use **bold** ", "here.\n\n- one\n- two\n\n", "```python\nx = 1\n```\n", "终于 \x1b[2J"]


class Screen(io.StringIO):
    """A terminal the test can read: what isatty() says of one."""

    def isatty(self) -> bool:
        return True


def console(*, terminal: bool, width: int = 60) -> tuple[Console, io.StringIO]:
    screen = Screen() if terminal else io.StringIO()
    # What make_console builds, on a screen the test can read.
    return SafeConsole(file=screen, force_terminal=terminal, color_system="256", width=width,
                       highlight=False, soft_wrap=False), screen


def stream(writer: ReplyWriter) -> None:
    for delta in REPLY:
        writer.write(delta)
    writer.end()
    writer.end()  # a second end (the error path after on_reply_end) adds nothing


def test_a_pipe_gets_the_reply_byte_for_byte_with_escapes_made_visible() -> None:
    out, screen = console(terminal=False)
    stream(ReplyWriter([out], markdown=True))
    assert screen.getvalue() == "".join(REPLY).replace("\x1b", "␛") + "\n"


@pytest.mark.parametrize("environ", [{"FORCE_COLOR": "1"}, {"TTY_COMPATIBLE": "1"}])
def test_a_file_gets_the_reply_as_sent_when_colour_is_forced(environ: dict[str, str]) -> None:
    """FORCE_COLOR=1 (colour in a CI log) made Rich call a file a terminal: `ask > r.txt`
    held the reply as Markdown, reflowed to 80 columns, with styles and cursor moves."""
    file = io.StringIO()
    out = SafeConsole(file=file, highlight=False, soft_wrap=False, _environ=environ)
    assert out.is_terminal  # colour is still Rich's to give
    stream(ReplyWriter([out], markdown=True))
    assert file.getvalue() == "".join(REPLY).replace("\x1b", "␛") + "\n"


def test_a_dumb_terminal_gets_the_reply_as_sent_at_its_own_width() -> None:
    """TERM=dumb (Emacs's shell, an IDE's console) got the reply as Markdown it cannot style:
    heading marks, `**bold**` and code fences gone, laid out at 80 columns whatever the
    terminal's width (Rich's fixed size for a dumb terminal)."""
    screen = Screen()
    out = SafeConsole(file=screen, highlight=False, soft_wrap=False,
                      _environ={"TERM": "dumb", "COLUMNS": "132"})
    assert out.is_terminal and out.width == 132
    stream(ReplyWriter([out], markdown=True))
    assert screen.getvalue() == "".join(REPLY).replace("\x1b", "␛") + "\n"


def test_a_dumb_terminal_s_width_is_its_tty_s_without_columns() -> None:
    leader, follower = pty.openpty()
    try:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 117, 0, 0))
        with os.fdopen(follower, "w", encoding="utf-8", closefd=False) as tty:
            dumb = SafeConsole(file=tty, _environ={"TERM": "dumb"})
            assert (dumb.is_dumb_terminal, dumb.size) == (True, (117, 33))
            wide = SafeConsole(file=tty, _environ={"TERM": "dumb", "COLUMNS": "150"})
            assert wide.width == 150
    finally:
        os.close(leader)
        os.close(follower)


def test_plain_on_a_terminal_is_the_text_as_sent() -> None:
    out, screen = console(terminal=True)
    stream(ReplyWriter([out], markdown=False))
    assert screen.getvalue() == "".join(REPLY).replace("\x1b", "␛") + "\n"


def test_a_terminal_gets_markdown_and_no_escape_from_the_reply() -> None:
    out, screen = console(terminal=True)
    stream(ReplyWriter([out], markdown=True))
    shown = screen.getvalue()
    assert "\x1b[1mbold\x1b[0m" in shown  # bold, its asterisks gone
    assert "**" not in shown and "```" not in shown
    text = STYLES.sub("", shown)
    assert "• one" in text and "• two" in text and "x = 1" in text
    assert "x = 1" not in shown  # highlighted: each token has its own colour
    assert "\x1b[2J" not in shown and "␛[2J" in text and "终于" in text


def test_mirrored_reply_markdown_on_the_terminal_plain_in_the_file() -> None:
    terminal, screen = console(terminal=True)
    piped, file = console(terminal=False)
    stream(ReplyWriter([piped, terminal], markdown=True))
    assert file.getvalue().startswith("Use **bold** here.")
    assert "• one" in STYLES.sub("", screen.getvalue())


def test_nothing_written_nothing_ended() -> None:
    out, screen = console(terminal=True)
    ReplyWriter([out], markdown=True).end()
    assert screen.getvalue() == ""


def test_a_ctrl_c_while_a_long_reply_is_drawn_stops_the_drawing_then_cancels(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C that broke into the display's stop (waiting while it drew a 1.8 M-character
    reply) left it redrawing that reply for good, over the next turns, at 70 % CPU."""
    import chatmem.render.reply as reply

    drawing, drawn = threading.Event(), threading.Event()
    real = reply.printable

    def slow_off_the_main_thread(text: str) -> str:
        if threading.current_thread() is not threading.main_thread() and not drawn.is_set():
            drawing.set()
            drawn.wait(HANG)  # the display's own redraw, holding its lock, takes a while
        return real(text)

    monkeypatch.setattr(reply, "printable", slow_off_the_main_thread)
    screen, _ = console(terminal=True)
    writer = ReplyWriter([screen], markdown=True)
    writer.write("很长的回复 a long reply " * 50)
    wait_until(drawing.is_set, "the display redraws the reply")
    stopping = threading.Event()
    live = writer.lives[0]
    stop = live.stop

    def stop_seen() -> None:
        stopping.set()
        stop()

    monkeypatch.setattr(live, "stop", stop_seen)

    def press_ctrl_c() -> None:
        stopping.wait(HANG)
        time.sleep(0.1)  # end() waits for the redraw now, or is about to
        os.kill(os.getpid(), signal.SIGINT)
        drawn.set()

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    with pytest.raises(KeyboardInterrupt):
        writer.end()
    presser.join(HANG)
    assert not live.is_started
    wait_until(lambda: not [t for t in threading.enumerate()
                            if "Refresh" in type(t).__name__ and t.is_alive()],
               "the display stops redrawing")


def test_a_link_in_a_reply_shows_where_it_goes_and_is_no_terminal_hyperlink() -> None:
    out, screen = console(terminal=True)
    writer = ReplyWriter([out], markdown=True)
    writer.write("登录: [https://bank.example/login](http://evil.example/phish) now")
    writer.end()
    shown = STYLES.sub("", screen.getvalue())
    assert "\x1b]8;" not in screen.getvalue()
    assert "https://bank.example/login" in shown
    assert "http://evil.example/phish" in shown


@pytest.mark.parametrize("reply", [
    "> " * 20 + "the door code is in the blue box\n\nafter",
    "> " * 40 + "the door code is in the blue box\n\nafter",
    "".join("  " * i + f"- step {i}\n" for i in range(9)) + "  " * 9 + "- the blue box\n\nafter",
    "> - " * 12 + "the blue box\n\nafter",
    "> " * 30 + "门禁密码在蓝色盒子里\n\nafter",
])
def test_text_nested_past_the_markdown_limit_is_still_shown(reply: str) -> None:
    """The parser drops what a quote or list nested 20 levels deep holds, on a terminal wide
    enough for all the levels: the reply is shown as written instead, all of it."""
    out, screen = console(terminal=True, width=300)
    writer = ReplyWriter([out], markdown=True)
    writer.write(reply)
    writer.end()
    shown = " ".join(STYLES.sub("", screen.getvalue()).split())
    assert ("blue box" in shown or "门禁密码在蓝色盒子里" in shown) and "after" in shown


def test_text_nested_deeper_than_the_terminal_is_wide_is_still_shown() -> None:
    """Each quote level takes four columns: 15 of them leave none of 60."""
    out, screen = console(terminal=True)
    writer = ReplyWriter([out], markdown=True)
    writer.write("> " * 15 + "the door code is in the blue box")
    writer.end()
    assert "in the blue box" in " ".join(STYLES.sub("", screen.getvalue()).split())


def test_nesting_within_the_limits_is_still_markdown() -> None:
    out, screen = console(terminal=True, width=100)
    writer = ReplyWriter([out], markdown=True)
    writer.write("> " * 19 + "the **blue** box\n\n" + "".join(
        "  " * i + f"- step {i}\n" for i in range(9)))
    writer.end()
    shown = STYLES.sub("", screen.getvalue())
    assert "blue box" in shown and "**" not in shown and "> >" not in shown
    assert "• step 0" in shown and "• step 8" in shown and "- step" not in shown


def test_a_line_end_split_between_deltas_passes_and_a_lone_cr_is_shown() -> None:
    """A model's CRLF came out as ␍ and LF; one split across two deltas too."""
    out, screen = console(terminal=False)
    writer = ReplyWriter([out], markdown=True)
    for delta in ("第一行\r", "\nשלום\u200f\r", "x\r"):
        writer.write(delta)
    writer.end()
    assert screen.getvalue() == "第一行\r\nשלום\u200f␍x␍\n"


@pytest.mark.parametrize(("reply", "words"), [
    ("<think>the user wants a joke</think>Why did the chicken **cross**?",
     ["<think>the user wants a joke</think>", "Why did the chicken cross?"]),
    ("Break a line with <br> or wrap it in `<p>`.", ["with <br> or", "<p>"]),
    ("<div>\n门禁密码在蓝色盒子里\n</div>\n\nafter", ["<div>", "门禁密码在蓝色盒子里", "after"]),
])
def test_html_in_a_reply_is_shown_as_the_text_it_is(reply: str, words: list[str]) -> None:
    """rich.markdown draws HTML as nothing: a model's <think> tags vanished, its reasoning
    ran into its answer ('the user wants a jokeWhy did…'), and a <div> block went whole."""
    out, screen = console(terminal=True, width=100)
    writer = ReplyWriter([out], markdown=True)
    writer.write(reply)
    writer.end()
    shown = " ".join(STYLES.sub("", screen.getvalue()).split())
    assert all(w in shown for w in words), shown
    assert "**" not in shown  # still Markdown


def test_a_reply_slow_to_draw_is_redrawn_less_often_and_drawn_whole_at_its_end() -> None:
    """Each redraw parses, lays out and writes the whole reply: 100 KB of code blocks took
    about 1.5 s a draw, and redrawn 8 times a second regardless such a reply kept a core
    drawing until it ended (the stream read 4 times slower beside it). A redraw waits
    DRAW_SHARE times as long as the last one took; the draw at the end is never put off."""
    from rich.text import Text

    from chatmem.render.reply import DRAW_SHARE, paced_live

    out, screen = console(terminal=True)
    reply = Text("first")
    live = paced_live()(reply, console=out, auto_refresh=False)
    readings = iter([0.0, 1.0,  # the first draw takes a second
                     1.0 + DRAW_SHARE - 0.5,  # too soon: not drawn
                     1.0 + DRAW_SHARE, 1.0 + DRAW_SHARE + 0.1,  # drawn, in 0.1 s
                     1.0 + DRAW_SHARE + 0.2,  # too soon again
                     1.0 + DRAW_SHARE + 0.3, 1.0 + DRAW_SHARE + 0.3])  # the end's draw
    live.clock = lambda: next(readings)  # type: ignore[method-assign]
    live.start(refresh=True)
    assert "first" in screen.getvalue()
    reply.append(" second")
    live.refresh()
    assert "second" not in screen.getvalue()
    live.refresh()
    assert "second" in screen.getvalue()
    reply.append(" third")
    live.refresh()
    assert "third" not in screen.getvalue()
    live.stop()
    assert "first second third" in STYLES.sub("", screen.getvalue())
