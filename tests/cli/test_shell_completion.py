"""Shell completion (issue 21, Build 8): `--show-completion` and `--install-completion` for
bash, and the completion protocol Typer defines for zsh and fish, run for real."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has a `chatmem` that runs this checkout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    command = bin_dir / "chatmem"
    command.write_text(f'#!/bin/sh\nexec {sys.executable} -m chatmem "$@"\n', encoding="utf-8")
    command.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path),
            "PYTHONPATH": os.environ.get("PYTHONPATH", "")}


def bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "--norc", "--noprofile", "-c", script], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(("words", "expected"), [
    ("chatmem ses", ["sessions"]),
    ("chatmem sessions l", ["list"]),
    ("chatmem chat --str", ["--strategy"]),
])
def test_bash_completes_subcommands_and_options_from_show_completion(
    on_path: dict[str, str], words: str, expected: list[str]
) -> None:
    done = bash(f'eval "$(chatmem --show-completion)"\n'
                f"COMP_WORDS=({words}); COMP_CWORD={len(words.split()) - 1}\n"
                '_chatmem_completion chatmem\nprintf "%s\\n" "${COMPREPLY[@]}"', on_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == expected


def test_install_completion_writes_a_script_bashrc_sources(on_path: dict[str, str],
                                                           tmp_path: Path) -> None:
    # Two commands, so bash runs chatmem as its child (one it would exec in its place) and
    # Typer finds bash as the shell it runs in, wherever the test itself is started from.
    done = bash("chatmem --install-completion\nexit $?", on_path)
    assert done.returncode == 0, done.stderr
    bashrc = (tmp_path / ".bashrc").read_text(encoding="utf-8")
    script = tmp_path / ".bash_completions" / "chatmem.sh"
    assert f"source '{script}'" in bashrc or f"source {script}" in bashrc
    assert "complete -o default -F _chatmem_completion chatmem" in script.read_text(
        encoding="utf-8")


@pytest.mark.parametrize(("shell", "extra", "expected"), [
    ("zsh", {}, '"sessions":"List, show, rename, fork, delete, export..."'),
    ("fish", {"_TYPER_COMPLETE_FISH_ACTION": "get-args"},
     "sessions\tList, show, rename, fork, delete, export..."),
])
def test_zsh_and_fish_get_subcommands_with_their_help(
    on_path: dict[str, str], shell: str, extra: dict[str, str], expected: str
) -> None:
    done = subprocess.run(["chatmem"], env={**on_path, **extra,
                                            "_CHATMEM_COMPLETE": f"complete_{shell}",
                                            "_TYPER_COMPLETE_ARGS": "chatmem ses"},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout


# -- values: sessions, strategies, parameters after the colon, templates (issue 30, finding 6) --
#
# Each shell runs its own completion: bash and zsh interactively in a private tmux server
# (Tab typed, the screen read), fish through `complete -C`, its completion engine's own entry.


@pytest.fixture
def history(on_path: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """A history with two sessions and a config with two templates, named by CHATMEM_DB and
    CHATMEM_CONFIG as a person's environment would."""
    from cli_runner import invoke

    db = tmp_path / "h.db"
    for session in ("trip-hangzhou", "work"):
        assert invoke("ask", session, "hello", "--provider", "scripted", "--db",
                      str(db)).exit_code == 0
    config = tmp_path / "config.toml"
    config.write_text('[templates.brief]\nsystem = "Be brief."\n'
                      '[templates.translate]\nsystem = "Translate."\n', encoding="utf-8")
    return {**on_path, "CHATMEM_DB": str(db), "CHATMEM_CONFIG": str(config), "TERM": "xterm"}


class Terminal:
    """A shell in a private tmux server: type, press Tab, read the line."""

    def __init__(self, shell: list[str], env: dict[str, str], tmp_path: Path) -> None:
        # Its own socket file in the test's folder: nothing is left in tmux's own.
        self.socket = str(tmp_path / "tmux.sock")
        variables = [f"{key}={value}" for key, value in env.items()]
        self.tmux("new-session", "-d", "-x", "200", "-y", "50", "-s", "t",
                  "env", "-i", *variables, *shell)

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True,
                              text=True, timeout=60, check=False)
        return done.stdout

    def run(self, command: str) -> None:
        self.tmux("send-keys", "-t", "t", "-l", command)
        self.tmux("send-keys", "-t", "t", "Enter")

    def at_prompt(self) -> None:
        """Wait until the last line is a bare `$ ` prompt: the shell has handled every key.

        Keys typed sooner reach a shell still running the last command, or still handling
        the Ctrl-C that ended the last completion, which can take the completion typed next.
        """
        from waiting import wait_until

        def bare() -> bool:
            lines = [line for line in self.tmux("capture-pane", "-t", "t", "-p").splitlines()
                     if line.strip()]
            return bool(lines) and lines[-1].strip() == "$"

        wait_until(bare, "a bare prompt", poll=0.1)

    def complete(self, typed: str, expected: str, *, tabs: int = 1) -> str:
        """Type `typed` at a bare prompt, press Tab `tabs` times; the screen once `expected`
        shows on it."""
        from waiting import wait_until

        self.at_prompt()
        self.tmux("send-keys", "-t", "t", "-l", typed)
        for _ in range(tabs):
            self.tmux("send-keys", "-t", "t", "Tab")
        screen = ""

        def shown() -> bool:
            nonlocal screen
            screen = self.tmux("capture-pane", "-t", "t", "-p")
            return expected in screen

        try:
            wait_until(shown, f"{expected!r} after {typed!r} and Tab", poll=0.1)
        except AssertionError:
            raise AssertionError(
                f"{expected!r} never showed after {typed!r}:\n{screen}") from None
        self.tmux("send-keys", "-t", "t", "C-c")
        return screen

    def stop(self) -> None:
        self.tmux("kill-server")


def needs(program: str) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed (.ci/run installs it from Debian's packages)")


CASES = [
    # (typed, what the line or the menu shows after Tab)
    ("chatmem inspect trip", "chatmem inspect trip-hangzhou"),
    ("chatmem sessions show wo", "chatmem sessions show work"),
    ("chatmem chat -s summary-b", "chatmem chat -s summary-buffer"),
    ("chatmem chat -s window:", "chatmem chat -s window:k="),
    ("chatmem eval x.jsonl -s window+entity:entity.max_", "-s window+entity:entity.max_facts="),
    ("chatmem chat -s retrieval:mode=d", "chatmem chat -s retrieval:mode=dense"),
    ("chatmem ask -t tr", "chatmem ask -t translate"),
]


@pytest.mark.parametrize(("typed", "expected"), CASES)
def test_bash_completes_values_in_a_real_bash(history: dict[str, str], tmp_path: Path,
                                              typed: str, expected: str) -> None:
    needs("tmux")
    term = Terminal(["bash", "--norc", "--noprofile"], history, tmp_path)
    try:
        term.run('eval "$(chatmem --show-completion bash)"; PS1="$ "')
        term.complete(typed, expected)
    finally:
        term.stop()


@pytest.mark.parametrize(("typed", "expected"), CASES)
def test_zsh_completes_values_in_a_real_zsh(history: dict[str, str], tmp_path: Path,
                                            typed: str, expected: str) -> None:
    needs("tmux")
    needs("zsh")
    term = Terminal(["zsh", "-f"], history, tmp_path)
    try:
        term.run('autoload -Uz compinit && compinit -u && '
                 'eval "$(chatmem --show-completion zsh)"; PS1="$ "')
        term.complete(typed, expected)
    finally:
        term.stop()


def fish_complete(env: dict[str, str], typed: str) -> list[str]:
    done = subprocess.run(
        ["fish", "--no-config", "-c",
         f"chatmem --show-completion fish | source; complete -C {shlex.quote(typed)}"],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [line.split("\t")[0] for line in done.stdout.splitlines()]


@pytest.mark.parametrize(("typed", "expected"), CASES)
def test_fish_completes_values_with_its_own_engine(history: dict[str, str], typed: str,
                                                   expected: str) -> None:
    needs("fish")
    offered = fish_complete(history, typed)
    assert expected.split()[-1] in offered, offered


def test_bash_lists_every_session_and_the_parts_a_combination_can_take(
        history: dict[str, str], tmp_path: Path) -> None:
    needs("tmux")
    term = Terminal(["bash", "--norc", "--noprofile"], history, tmp_path)
    try:
        term.run('eval "$(chatmem --show-completion bash)"; PS1="$ "')
        screen = term.complete("chatmem inspect ", "trip-hangzhou", tabs=2)
        assert "work" in screen
        screen = term.complete("chatmem chat -s window+", "window+summary-buffer", tabs=2)
        assert "window+entity" in screen and "window+window" not in screen
    finally:
        term.stop()


def test_fish_offers_the_parameters_not_given_yet(history: dict[str, str]) -> None:
    needs("fish")
    offered = fish_complete(history, "chatmem chat -s summary-buffer:max_tokens=300,")
    assert "summary-buffer:max_tokens=300,prune_to=" in offered
    assert not any(o.endswith(",max_tokens=") for o in offered)


def test_completion_reads_no_history_it_cannot_and_creates_none(on_path: dict[str, str],
                                                                tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    done = subprocess.run(["chatmem"], env={**on_path, "CHATMEM_DB": str(missing),
                                            "_CHATMEM_COMPLETE": "complete_fish",
                                            "_TYPER_COMPLETE_FISH_ACTION": "get-args",
                                            "_TYPER_COMPLETE_ARGS": "chatmem inspect "},
                          capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "", "")
    assert not missing.exists()


@pytest.mark.parametrize("shell", ["zsh", "fish", "bash"])
def test_show_completion_prints_the_script_of_the_shell_named(on_path: dict[str, str],
                                                              shell: str) -> None:
    # Issue 30: `--show-completion zsh` run from bash printed the bash script.
    done = bash(f"chatmem --show-completion {shell}\nexit $?", on_path)
    assert done.returncode == 0, done.stderr
    marks = {"zsh": "compdef _chatmem_completion chatmem",
             "fish": "complete --command chatmem",
             "bash": "complete -o default -F _chatmem_completion chatmem"}
    assert marks[shell] in done.stdout
    assert all(mark not in done.stdout for other, mark in marks.items() if other != shell)


def test_show_completion_of_a_shell_without_one_is_one_line(on_path: dict[str, str]) -> None:
    done = bash("chatmem --show-completion tcsh\nexit $?", on_path)
    assert done.returncode == 2
    assert done.stderr == "error: no completion for 'tcsh': name bash, zsh or fish\n"


def test_a_values_help_is_cut_between_the_characters_a_reader_sees() -> None:
    from chatmem.cli.completion import _menu

    family = "👨\u200d👩\u200d👧\u200d👦"
    assert _menu([("旅行", "a" * 57 + family + " 全家"), ("日记", "b" * 58 + "e\u0301 café")]) == [
        ("旅行", "a" * 57 + "…"), ("日记", "b" * 58 + "…")]


def test_install_completion_quotes_a_home_with_a_quote_and_keeps_a_non_utf8_bashrc(
        tmp_path: Path) -> None:
    """Review: HOME=/tmp/o'brien wrote `source '/tmp/o'brien/...'`, which broke .bashrc;
    a .bashrc in Latin-1 was a traceback."""
    from chatmem.cli.completion import install

    home = tmp_path / "o'brien 家"
    home.mkdir()
    rc = home / ".bashrc"
    rc.write_bytes(b"# caf\xe9\nexport MINE=1")
    script = install("bash", home)
    install("bash", home)  # once is enough: the line is not added again
    written = rc.read_bytes()
    assert written.startswith(b"# caf\xe9\nexport MINE=1\n")
    assert written.count(b"source ") == 1
    done = subprocess.run(["bash", "--rcfile", str(rc), "-i", "-c",
                           "type -t _chatmem_completion; echo $MINE"],
                          env={"HOME": str(home), "PATH": os.environ["PATH"]},
                          capture_output=True, timeout=120, check=False)
    assert done.stdout.decode().split() == ["function", "1"], done.stderr
    assert script == home / ".bash_completions" / "chatmem.sh"


def test_index_offers_the_sessions_not_named_yet(history: dict[str, str]) -> None:
    """`index` takes several sessions: one already typed was offered again."""
    line = "chatmem index trip-hangzhou "
    done = bash(f'eval "$(chatmem --show-completion bash)"\n'
                f"COMP_LINE='{line}'; COMP_POINT={len(line)}\n"
                '_chatmem_completion chatmem\nprintf "%s\\n" "${COMPREPLY[@]}"', history)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["work"]
