"""The `chatmem` entry point: help, version, and usage errors as one line with exit 2."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest
from cli_runner import invoke

from chatmem import __version__


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["inspect", "loc", "--turn", "0"], "--turn must be 1 or more, got '0'"),
        (["inspect", "loc", "--turn", "abc"], "--turn must be a whole number, got 'abc'"),
        # The value is named, as a config file's is (`-n ５` said only "must be a whole
        # number"), with the ASCII an input method's full-width digits stand for; a long
        # value (a key pasted there) is not repeated.
        (["logs", "-n", "五"], "--count must be a whole number, got '五'"),
        (["logs", "-n", "１２"], "--count must be a whole number, got '１２' (in ASCII: 12)"),
        (["logs", "-n", "sk-proj-Abc123SECRETxyz7890"], "--count must be a whole number"),
        (["eval", "x.jsonl", "-s", "buffer", "--min-recall", "2"],
         "--min-recall must be a recall from 0 to 1 (X, id=X or text=X), got '2'"),
        (["eval", "x.jsonl", "-s", "buffer", "--min-recall", "ids=0.8"],
         "--min-recall must be a recall from 0 to 1 (X, id=X or text=X), got 'ids=0.8'"),
        (["eval", "x.jsonl", "-s", "buffer", "--min-recall", "text=高"],
         "--min-recall must be a recall from 0 to 1 (X, id=X or text=X), got 'text=高'"),
        (["eval", "x.jsonl", "-s", "buffer", "--min-recall", "id=nan"],
         "--min-recall must be a recall from 0 to 1 (X, id=X or text=X), got 'id=nan'"),
        # (`replay FILE` alone was the example here; it now compares eval's default set.)
        (["sessions", "share", "trip"], "missing option --with"),
        (["inspect"], "missing argument SESSION (or --session SESSION)"),
        (["sessions", "show"], "missing argument SESSION"),
        (["--bogus"], "no such option --bogus"),
        (["ask", "hi", "--sesion", "x"],
         "no such option --sesion (did you mean --json, --option, --session?)"),
        (["sessions", "nope"], "no such command 'nope' (`chatmem sessions --help` lists the"
                               " commands)"),
        # A word a newcomer types for a command chatmem names otherwise: it was only "no such
        # command" (`chatmem purge`, `chatmem search`); not in a group, where it means else.
        (["purge"], "no such command 'purge' (try: chatmem facts forget KEY --purge erases a"
                    " value everywhere; chatmem sessions delete NAME one session; chatmem"
                    " sessions prune old ones)"),
        (["search", "杭州"], "no such command 'search' (try: chatmem logs -q TEXT)"),
        (["config", "list"], "no such command 'list' (`chatmem config --help` lists the"
                             " commands)"),
        # A session where --session's value goes: the option is named (it was only the
        # command's help, which `logs daily` left to be read for the one word it needed).
        (["logs", "旅行"], "got unexpected extra argument(s) (旅行) (a session's name goes "
                         "after --session: `chatmem logs --session 旅行`)"),
        (["logs", "daily"], "got unexpected extra argument(s) (daily) (a session's name "
                            "goes after --session: `chatmem logs --session daily`)"),
        # More than one word, or a command without --session: the command's help is named.
        (["logs", "旅行", "x"],
         "got unexpected extra argument(s) (旅行 x) (`chatmem logs --help` says what it takes)"),
        (["sessions", "export", "trip", "t.md", "x"], "got unexpected extra argument(s) (x) "
         "(`chatmem sessions export --help` says what it takes)"),
        (["ask", "hi", "--provider", "nope"],
         "--provider must be one of auto, local, openai, scripted, got 'nope'"),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(args: list[str], message: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert result.stderr == f"error: {message}\n"
    assert result.stdout == ""


def test_an_unknown_provider_flag_never_reaches_a_server(tmp_path, chat_server) -> None:
    db = tmp_path / "x.db"
    result = invoke("ask", "hello", "--db", str(db), "--provider", "opnai",
                    env={"OPENAI_BASE_URL": chat_server.base_url})
    assert result.exit_code == 2
    assert chat_server.requests == [] and not db.exists()


def test_version_and_short_help() -> None:
    version = invoke("--version")
    assert (version.exit_code, version.stdout) == (0, f"chatmem {__version__}\n")
    short, long = invoke("-h"), invoke("--help")
    assert short.exit_code == long.exit_code == 0
    assert short.stdout == long.stdout
    assert "Usage: chatmem [OPTIONS] COMMAND [ARGS]..." in long.stdout
    assert "Example: chatmem chat" in long.stdout
    sub = invoke("sessions", "-h")
    assert sub.exit_code == 0 and "import" in sub.stdout


@pytest.mark.parametrize("args", [[], ["sessions"], ["config"], ["facts"]])
def test_a_bare_group_prints_its_help_and_exits_0(args: list[str]) -> None:
    result = invoke(*args)
    assert result.exit_code == 0
    assert result.stdout.startswith(f"Usage: chatmem {' '.join(args)}".rstrip() + " [OPTIONS]")
    assert result.stderr == ""


def test_help_uses_plain_metavars() -> None:
    inspect_help = invoke("inspect", "--help", width=120).stdout
    assert "-t, --turn N" in inspect_help
    assert "-p, --param KEY=VALUE" in inspect_help
    assert "-s, --strategy NAME[:K=V,...]" in inspect_help
    assert "--provider NAME" in inspect_help
    eval_help = invoke("eval", "--help", width=120).stdout
    assert "--min-recall [id=|text=]X" in eval_help
    for odd in ("<list[str]>", "<int range>", "<float range>", "window:k=2,"):
        assert odd not in inspect_help + eval_help


def test_eval_help_says_what_a_probe_is_what_jobs_apply_to_and_what_makes_a_run_cold() -> None:
    said = " ".join(invoke("eval", "--help", width=120).stdout.split())
    assert '{"probe": "What is my order number?", "expect_ids": ["u3"], "expect_text":' in said
    assert "README, Compare strategies: the transcript format" in said
    assert "A single transcript runs in one process whatever N is." in said
    assert "the vectors are cached (~/.cache/chatmem/vectors.sqlite)" in said


def test_the_installed_command_formats_usage_errors_the_same_way() -> None:
    done = subprocess.run([sys.executable, "-m", "chatmem", "inspect", "x", "--turn", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == "error: --turn must be 1 or more, got '0'\n"


def _every_command() -> list[list[str]]:
    """The path of every command and group, as typed after `chatmem`."""
    import typer

    from chatmem.cli import app

    found: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        found.append(path)
        if hasattr(command, "list_commands"):  # a group (typer's own copy of click's)
            context = command.context_class(command)
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                if sub is not None and not sub.hidden:
                    walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


@pytest.mark.parametrize("path", _every_command(), ids=" ".join)
def test_every_help_has_plain_metavars_and_one_bracket(path: list[str]) -> None:
    """Click's INT_RANGE/TEXT-like type names are no metavar a person types, and an
    optional argument's metavar is bracketed once (`[NAME]`, not `[[NAME]]`)."""
    shown = invoke(*path, "--help", width=80, code=0).stdout
    usage = shown.strip().split("\n\n")[0]
    assert "_RANGE" not in shown and "[[" not in usage, usage


@pytest.mark.parametrize("path", _every_command(), ids=" ".join)
def test_no_help_example_writes_a_key_on_the_command_line(path: list[str]) -> None:
    """`Example: CHATMEM_KEY=... chatmem encrypt`, typed as shown with a real key, kept
    that key in the shell's history, beside the file it encrypts; typed at the prompt
    it is kept nowhere."""
    shown = invoke(*path, "--help", width=80, code=0).stdout
    examples = [line for line in shown.splitlines() if "Example:" in line]
    assert not [e for e in examples if re.search(r"\b\w*KEY=", e)], examples


@pytest.mark.parametrize("path", _every_command(), ids=" ".join)
def test_every_help_example_stays_one_line_at_80_columns(path: list[str]) -> None:
    """An example is typed as shown: wrapped mid-command (`--to⏎postgresql://…`) it is two
    commands to a shell; `\\b` keeps its paragraph as written."""
    shown = invoke(*path, "--help", width=80, code=0).stdout
    examples = [line.strip() for line in shown.splitlines() if "Example:" in line]
    assert examples, shown
    for example in examples:
        following = shown.split(example, 1)[1].split("\n", 2)[1]
        assert following.strip() == "" or following.startswith(("Arguments", "Options",
                                                                  "Commands")), (example,
                                                                                 following)
