"""The slash-command table: every command documented with an example, strict about arity."""

from __future__ import annotations

import io
import re
import shlex
import sys
from pathlib import Path

import pytest
from cli_runner import chat, invoke

from chatmem.errors import UsageError
from chatmem.repl.loop import SLASH
from chatmem.store import Store

COMMANDS = sorted(SLASH)


def test_the_table_holds_the_commands_the_design_names() -> None:
    named = ("/help /strategy /inspect /tokens /summary /facts /remember /forget /system /model"
             " /new /sessions /switch /fork /undo /retry /export /budget /show-prompt /quit")
    assert set(named.split()) <= set(SLASH)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_a_usage_help_and_an_example_that_fits_its_usage(name: str) -> None:
    command = SLASH[name]
    assert command.usage.split()[0] == name
    assert command.example.split()[0] == name, "an example runs the command it documents"
    assert command.help and command.help[0].islower()
    # Metavars in the Typer/Click convention: upper case, never {braces} or <angles>.
    # Lower case words are option names only (--at-turn, --user, --for...).
    options = set(re.findall(r"--([a-z-]+)", command.usage))
    for word in re.findall(r"[A-Za-z]+", command.usage.removeprefix(name)):
        assert word.isupper() or any(word in o.split("-") for o in options), word
    assert not re.search(r"[{}<>]", command.usage)
    command.check_arity(shlex.split(command.example)[1:])  # the example is valid usage


def test_help_lists_every_command_with_its_example(tmp_path: Path) -> None:
    result = chat(tmp_path / "h.db", "t", ["/help"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    for command in SLASH.values():
        assert command.usage in result.stderr
        assert f"e.g. {command.example}" in result.stderr


def test_help_fits_a_narrow_terminal_with_every_usage_and_word_whole() -> None:
    for width in (40, 60, 80, 120):
        lines = help_at(width)
        words = {word for line in lines for word in line.split()}
        for command in SLASH.values():
            # The usage on one line, every word of the help and the example whole.
            assert any(line.strip().startswith(command.usage) for line in lines), width
            assert set(f"{command.help} {command.example}".split()) <= words, width
    # At 60 columns each usage stands over its help, not beside a help 16 columns wide.
    assert "/strategy [NAME[:K=V,...] [K=V ...]]" in help_at(60)


def help_at(width: int) -> list[str]:
    """/help's lines on a terminal `width` columns wide."""
    import io

    from rich.console import Console

    from chatmem.render import help_table

    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(help_table([(c.usage, c.help, c.example) for c in SLASH.values()]))
    return [line.rstrip() for line in console.file.getvalue().splitlines()]  # type: ignore


def test_a_command_without_an_example_cannot_be_registered() -> None:
    from chatmem.repl.table import slash

    with pytest.raises(TypeError):
        slash("/nothing", "/nothing", "does nothing")  # type: ignore[call-arg]


@pytest.mark.parametrize("name", [n for n in COMMANDS if SLASH[n].max_args is not None])
def test_every_command_rejects_extra_arguments_with_its_usage(name: str, tmp_path: Path) -> None:
    command = SLASH[name]
    assert command.max_args is not None
    words = ["extra"] * (command.max_args + 1)
    with pytest.raises(UsageError) as error:
        command.check_arity(words)
    assert str(error.value).endswith(f"usage: {command.usage}, e.g. {command.example}")


def test_quit_with_an_argument_is_refused_and_the_chat_goes_on(tmp_path: Path) -> None:
    result = chat(tmp_path / "q.db", "t", ["/quit now", "still here", "/quit"])
    assert result.exit_code == 2
    assert [line for line in result.stderr.splitlines() if line.startswith("error")] == [
        "error: /quit: unexpected argument 'now'; usage: /quit, e.g. /quit"]
    assert result.stdout == "echo #1: still here\n"


@pytest.mark.parametrize(("typed", "stored"), [
    ('/system ""', None),
    ("/system ''", None),
    ('/system "Be brief."', "Be brief."),
    ("/system Say \"hi\" first.", 'Say "hi" first.'),
    ("/system 你好，请简短回答。", "你好，请简短回答。"),
])
def test_system_takes_the_text_as_typed_and_empty_quotes_clear_it(
    tmp_path: Path, typed: str, stored: str | None
) -> None:
    db = tmp_path / "s.db"
    result = chat(db, "t", [typed, "hello"])
    assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        session = store.sessions.session("t")
        assert session.system == stored
        sent = store.turns.turn(session.id).context["parts"]
    if stored is None:
        assert [p["kind"] for p in sent] == ["input"]  # no system message at all
    else:
        assert sent[0]["messages"][0]["content"] == stored


def test_edit_sends_what_the_editor_saved_and_leaves_no_file(tmp_path: Path) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text("import sys, pathlib\n"
                      "path = pathlib.Path(sys.argv[2])\n"
                      "pathlib.Path(sys.argv[1]).write_text(str(path))\n"
                      "path.write_text(path.read_text() + '第二行 from the editor\\n')\n",
                      encoding="utf-8")
    seen = tmp_path / "seen.txt"
    db = tmp_path / "e.db"
    result = invoke("chat", "t", "--db", str(db), "--provider", "scripted",
                    input="/edit first line\n",
                    env={"EDITOR": f"{sys.executable} {editor} {seen}", "VISUAL": ""})
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "echo #1: first line第二行 from the editor\n"
    assert not Path(seen.read_text(encoding="utf-8")).exists()  # the draft is gone


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm on this system")
def test_edit_keeps_the_draft_in_memory_not_on_disk(tmp_path: Path) -> None:
    """The draft was written to the temporary folder (/tmp, a disk), so a message of an
    encrypted history reached the disk in plain text, it and the editor's swap file."""
    editor = tmp_path / "editor.py"
    editor.write_text("import sys, pathlib\n"
                      "pathlib.Path(sys.argv[1]).write_text(sys.argv[2])\n"
                      "pathlib.Path(sys.argv[2]).write_text('门禁 4412')\n", encoding="utf-8")
    seen = tmp_path / "seen.txt"
    result = invoke("chat", "t", "--db", str(tmp_path / "e.db"), "--provider", "scripted",
                    input="/edit\n",
                    env={"EDITOR": f"{sys.executable} {editor} {seen}", "VISUAL": ""})
    assert (result.exit_code, result.stdout) == (0, "echo #1: 门禁 4412\n"), result.stderr
    assert Path(seen.read_text(encoding="utf-8")).parent == Path("/dev/shm")


class _Screen(io.StringIO):
    """A terminal the test can read: what isatty() says of one."""

    def isatty(self) -> bool:
        return True


def test_edit_shows_the_message_it_sends_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal the prompt line kept `/edit` and the editor's screen went: the message
    sent was shown nowhere, so the scrollback held the reply under no question."""
    from registered import open_session

    from chatmem.config.settings import Settings
    from chatmem.providers.scripted import ScriptedProvider
    from chatmem.render.terminal import SafeConsole
    from chatmem.repl.loop import Repl

    editor = tmp_path / "editor.py"
    editor.write_text("import sys, pathlib\npathlib.Path(sys.argv[1])"
                      ".write_text('明天去杭州\\nthen Shanghai\\n')\n", encoding="utf-8")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    monkeypatch.setenv("VISUAL", "")
    monkeypatch.setenv("TERM", "xterm-256color")
    screen = _Screen()
    console = SafeConsole(file=screen, force_terminal=True, color_system=None, width=60,
                          highlight=False, soft_wrap=False)
    with Store(tmp_path / "e.db") as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "旅行", strategy="window")
        Repl(engine, console, console).command("/edit")
        [turn] = store.turns.turns(engine.session.id)
    assert turn.input == "明天去杭州\nthen Shanghai"
    shown = screen.getvalue()
    assert "旅行> 明天去杭州\n..... then Shanghai\n" in shown
    assert shown.index("旅行> 明天去杭州") < shown.index("echo #1")


def test_edit_with_an_empty_message_sends_nothing(tmp_path: Path) -> None:
    result = invoke("chat", "t", "--db", str(tmp_path / "e.db"), "--provider", "scripted",
                    input="/edit\n", env={"EDITOR": "true", "VISUAL": ""})
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    # Nothing sent, nothing stored: not even the session, which nothing was said in.
    assert result.stderr.splitlines()[-1] == "session t not kept: nothing was said in it"
    with Store(tmp_path / "e.db") as store:
        assert store.sessions.list_sessions() == []


def test_edit_leaves_out_the_byte_order_mark_an_editor_saves(tmp_path: Path) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text("import sys, pathlib\npathlib.Path(sys.argv[1])"
                      ".write_text('明天的会议 at 9', encoding='utf-8-sig')\n", encoding="utf-8")
    db = tmp_path / "e.db"
    result = invoke("chat", "t", "--db", str(db), "--provider", "scripted", input="/edit\n",
                    env={"EDITOR": f"{sys.executable} {editor}", "VISUAL": ""})
    assert (result.exit_code, result.stdout) == (0, "echo #1: 明天的会议 at 9\n")
    with Store(db) as store:
        [turn] = store.turns.turns(store.sessions.session("t").id)
        assert turn.input == "明天的会议 at 9"


CODE = "    def f():\n        return '缩进'"


def test_edit_keeps_the_first_lines_indentation(tmp_path: Path) -> None:
    """/edit stripped the text the editor saved, so a block of code lost its first line's
    indentation; only blank lines around it and trailing spaces go, as in a typed block."""
    editor = tmp_path / "editor.py"
    saved = "\n \n" + CODE + "  \n\n"
    editor.write_text(f"import sys, pathlib\npathlib.Path(sys.argv[1]).write_text({saved!r})\n",
                      encoding="utf-8")
    db = tmp_path / "e.db"
    result = invoke("chat", "t", "--db", str(db), "--provider", "scripted", input="/edit\n",
                    env={"EDITOR": f"{sys.executable} {editor}", "VISUAL": ""})
    assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        [turn] = store.turns.turns(store.sessions.session("t").id)
        assert turn.input == CODE


def test_edit_last_keeps_the_first_lines_indentation(tmp_path: Path) -> None:
    from registered import open_session
    from rich.console import Console

    from chatmem.config.settings import Settings
    from chatmem.providers.scripted import ScriptedProvider
    from chatmem.repl.loop import Repl

    class Edited(Repl):
        def edit_line(self, default: str) -> str:  # what Ctrl-X Ctrl-E's editor saved
            return "\n" + CODE + " \n"

    with Store(tmp_path / "e.db") as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "t", strategy="window")
        repl = Edited(engine, Console(file=sys.stderr), Console(file=sys.stderr))
        repl.turn("def f(): pass")
        repl.command("/edit-last")
        turns = store.turns.turns(engine.session.id)
        assert [(t.input, t.superseded_by is None) for t in turns] == [
            ("def f(): pass", False), (CODE, True)]


def test_edit_runs_the_editor_without_the_history_key(tmp_path: Path) -> None:
    """The editor inherited CHATMEM_KEY: an editor that hands its environment on (a terminal
    inside it, a plugin's shell, a crash report) had the key of the encrypted history."""
    editor = tmp_path / "editor.py"
    editor.write_text("import os, sys, pathlib\n"
                      "keys = [os.environ.get(k) for k in ('CHATMEM_KEY', 'CHATMEM_NEW_KEY')]\n"
                      "pathlib.Path(sys.argv[1]).write_text(repr(keys))\n"
                      "pathlib.Path(sys.argv[2]).write_text('杭州')\n", encoding="utf-8")
    seen = tmp_path / "seen.txt"
    result = invoke("chat", "t", "--db", str(tmp_path / "e.db"), "--provider", "scripted",
                    input="/edit\n",
                    env={"EDITOR": f"{sys.executable} {editor} {seen}", "VISUAL": "",
                         "CHATMEM_KEY": "门禁-secret-4412", "CHATMEM_NEW_KEY": "next-secret"})
    assert (result.exit_code, result.stdout) == (0, "echo #1: 杭州\n"), result.stderr
    assert seen.read_text(encoding="utf-8") == "[None, None]"
