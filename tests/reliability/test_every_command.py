"""Every command, fed bad input in its arguments, environment and config file: one line.

Issue 28, finding 6: bytes that are not UTF-8 in `ask --system`, a PostgreSQL URL
with such bytes or an unclosed `[`, a config nested 5,000 deep or not in UTF-8 each
ended a command with a traceback. The commands are listed from the Typer app, so a
new command or option is fuzzed without being named here. For each bad input: exit 2,
one line on stderr naming where the input came from (the option or argument, the
variable, the config file and its key), no traceback, and nothing written (the
work folder, the history file in it included, is byte for byte as it was).

Commands run in process (CliRunner carries the bytes as Python does: a byte that is
not UTF-8 in argv or the environment arrives as a lone surrogate); a few real
processes at the end check that argv bytes arrive that way.
"""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import typer
from chat_server import ChatServer
from cli_runner import invoke
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from other_account import NOBODY, needs_root
from typer.core import TyperArgument, TyperOption
from waiting import HANG

from chatmem.cli import app
from chatmem.cli.grammar import file_name, raw_text
from chatmem.config.loader import ENV_KEYS
from chatmem.config.schema import SCHEMA
from chatmem.store import Store

FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
"""Bounded: 60 drawn cases a test, the same each run, and a failure is reported as drawn
(each draw is printed) rather than shrunk for minutes."""


def leaves(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from leaves(command, (*path, name))
        else:
            yield (*path, name), command


COMMANDS = dict(leaves(typer.main.get_command(app)))
"""Every command by its words (`("sessions", "list")`), listed from the app itself."""


def annotation(command: Any, name: str) -> Any:
    """The Python type a command's parameter is declared with (Annotated stripped)."""
    hints = typing.get_type_hints(inspect.unwrap(command.callback), include_extras=True)
    kind = hints[name]
    while typing.get_origin(kind) is typing.Annotated:
        kind = typing.get_args(kind)[0]
    return kind


def given_as_str(command: Any, param: Any) -> bool:
    """A parameter given as a string (not a Path, number or flag)."""
    if getattr(param, "is_flag", False) or param.name == "help":
        return False
    kind = annotation(command, param.name)
    return "str" in str(kind) and "Path" not in str(kind)


def takes_text(command: Any, param: Any) -> bool:
    """A parameter given as text that must be UTF-8: not a file's name (`--db`, whose bytes
    name the file, cli.grammar.file_name) nor text the command cleans itself (raw_text)."""
    if param.callback is not None and inspect.unwrap(param.callback) in (raw_text, file_name):
        return False
    return given_as_str(command, param)


def shown_name(param: Any) -> str:
    """How an error names the parameter: its longest flag, or its metavar."""
    if isinstance(param, TyperOption):
        return str(max(param.opts, key=len))
    return str(param.metavar or param.name).upper()


TEXT_PARAMS = [(words, param) for words, command in COMMANDS.items()
               for param in command.params if takes_text(command, param)]
LOCATIONS = [(words, param) for words, command in COMMANDS.items() for param in command.params
             if given_as_str(command, param) and param.metavar == "FILE|URL"]
READS_CONFIG = sorted(words for words, command in COMMANDS.items()
                      if any(p.name == "config" for p in command.params)
                      and words not in (("config", "init"), ("config", "path")))
"""Commands that read the settings (they take --config). `config init` and `config path`
take --config as the file to write or name, and read none."""


def test_the_listing_covers_every_command_and_its_text_parameters() -> None:
    # The fuzz below draws from these lists: they must hold what the app has.
    assert len(COMMANDS) >= 30 and ("sessions", "list") in COMMANDS
    assert {("ask", "--system"), ("chat", "--system"), ("sessions", "rename", "NEW"),
            ("logs", "--query")} <= {
        (*words, shown_name(p)) for words, p in TEXT_PARAMS}
    assert not any(words == ("ask",) and p.name == "words" for words, p in TEXT_PARAMS)
    assert {("sessions", "copy", "--to"), ("chat", "--db")} <= {
        (*words, shown_name(p)) for words, p in LOCATIONS}
    assert ("sessions", "list") in READS_CONFIG and ("config", "show") in READS_CONFIG


# -- what a command needs to get as far as reading its settings ------------------------------

TRANSCRIPT = '{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "hello"}\n'
BENIGN = {"SESSION": "s", "NEW": "t", "ROLE": "ann", "NAME": "ann", "DURATION": "30d",
          "TURN": "1", "[SESSION] TEXT": "hi", "[SESSION] ID|KEY|PIN": "k", "[SESSION]...": "s",
          "--strategy": "window", "--with": "ann", "--from": "h.db", "--to": "h.db"}
"""A valid value for each parameter a command requires (files are added in `work`)."""


def argv(words: tuple[str, ...], bad: Any = None, value: str = "", *, db: bool = True
         ) -> list[str]:
    """`words`, each parameter it needs with a valid value, `bad` with `value`, and --db
    (unless `db` is False: the history then comes from the environment)."""
    command = COMMANDS[words]
    args = list(words)
    for param in command.params:
        name = shown_name(param)
        if param is bad:
            if "=" in str(param.metavar) and "=" not in value:
                value += "=1"  # KEY=VALUE: one word (`-o KEY VALUE` would take the next)
            # A word starting with "-" would be read as an option, as in any shell.
            args += [name, value] if isinstance(param, TyperOption) else [
                "x" + value if value.startswith("-") else value]
        elif param.required or isinstance(param, TyperArgument) or name in ("--from", "--to"):
            # Optional words too (`inspect SESSION`), and copy's two histories (it checks
            # them itself): the command must get as far as reading its settings.
            given = BENIGN.get(name) or BENIGN.get(str(param.metavar)) or "t.jsonl"
            args += [name, given] if isinstance(param, TyperOption) else [given]
    if db and any(p.name == "db" for p in command.params) and getattr(bad, "name", "") != "db":
        args += ["--db", "h.db"]
    return args


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a history (session s with one turn), a transcript, a good config."""
    folder = tmp_path_factory.mktemp("work")
    (folder / "t.jsonl").write_text(TRANSCRIPT, encoding="utf-8")
    (folder / "good.toml").write_text('strategy = "window"\n', encoding="utf-8")
    with Store(folder / "h.db") as store:
        store.sessions.create_session("s", "window")
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
            for p in sorted(folder.rglob("*"))}


@contextmanager
def stopped_after(seconds: float, args: list[str]) -> Iterator[None]:
    """A command that took bad input and kept running (a server) fails instead of hanging.

    After HANG, as every wait of the suite: 30 s ran out on a loaded machine (load 20 on 2
    cores) while `mcp --db <bad URL>` still imported its modules, and the fuzz failed."""

    def still_running(*_: object) -> None:
        raise TimeoutError(f"chatmem {args} took bad input and kept running")

    previous = signal.signal(signal.SIGALRM, still_running)
    signal.alarm(int(seconds))
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def refused(args: list[str], work: Path, env: dict[str, str] | None = None,
            input: str = "hi\n") -> str:
    """Run `chatmem ARGS` in `work`: it must exit 2 with one error line and change nothing.
    Returns the line."""
    before = snapshot(work)
    cwd = os.getcwd()
    os.chdir(work)
    try:
        with stopped_after(HANG, args):
            result = invoke(*args, input=input, env={"COLUMNS": "300", **(env or {})})
    finally:
        os.chdir(cwd)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args, env, result.exception)
    assert result.exit_code == 2, (args, env, result.exit_code, result.stderr)
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, (
        args, result.stderr)
    assert snapshot(work) == before, (args, env)
    return result.stderr


# -- arguments ------------------------------------------------------------------------------

_argv_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                     max_size=12)
not_utf8 = st.builds(lambda head, byte, tail: head + chr(byte) + tail,
                     _argv_text, st.integers(0xDC80, 0xDCFF), _argv_text)
"""Text with a byte that is not UTF-8, as argv and the environment deliver it: the byte as
a lone surrogate U+DC80-U+DCFF, no other surrogate, and no NUL (neither can hold one)."""

CONTROL = st.sampled_from(["\x00", "\x1b", "\x07", "\n", "\t", "\x7f", "\x9b", "\u202e"])
malformed_urls = st.one_of(
    st.builds("postgresql://ann:pw@[{}/chat".format, st.sampled_from(["::1", "fe80::1", ""])),
    st.builds("postgresql://ann:pw@{}]/chat".format, st.sampled_from(["::1", "h"])),
    st.builds("{}://ann:pw@db/chat".format, st.sampled_from(["mysql", "sqlite", "http"])),
    st.builds("{}://ann:pw@db.example.com".format, st.sampled_from(["postgresql", "Postgres"])),
    st.builds(lambda c, at: f"postgresql://ann:pw@db/ch{c}at" if at else f"h{c}.db",
              CONTROL, st.booleans()),
)
"""History locations no command may use: a malformed or foreign URL, one naming no
database, a control character in a URL or a path."""
bad_urls = st.one_of(malformed_urls, not_utf8.map(lambda t: f"postgresql://ann:pw@db/{t}"))


@FUZZ
@given(st.data())
def test_any_text_argument_that_is_not_utf8_is_refused_naming_it(work: Path,
                                                               data: st.DataObject) -> None:
    words, param = data.draw(st.sampled_from(TEXT_PARAMS))
    line = refused(argv(words, param, data.draw(not_utf8)), work)
    assert shown_name(param) in line


@pytest.mark.parametrize(("words", "param"), TEXT_PARAMS,
                         ids=[" ".join((*w, shown_name(p))) for w, p in TEXT_PARAMS])
def test_every_text_argument_refuses_bytes_that_are_not_utf8(work: Path, words: tuple[str, ...],
                                                             param: Any) -> None:
    line = refused(argv(words, param, "caf\udce9"), work)
    assert shown_name(param) in line


@FUZZ
@given(st.data())
def test_a_history_location_that_cannot_be_used_is_refused_naming_it(
    work: Path, data: st.DataObject
) -> None:
    words, param = data.draw(st.sampled_from(LOCATIONS))
    url = data.draw(bad_urls)
    line = refused(argv(words, param, url), work)
    assert line.startswith(f"error: {shown_name(param)}")
    assert ":pw@" not in line  # the password is masked


# -- environment variables ------------------------------------------------------------------

BAD_VARIABLES = st.one_of(
    # CHATMEM_DB's bytes name a file, as --db's do; a URL it holds must be UTF-8 (bad_urls).
    st.tuples(st.sampled_from(sorted(set(ENV_KEYS) - {"CHATMEM_DB"})), not_utf8),
    st.tuples(st.just("CHATMEM_DB"), bad_urls.filter(lambda url: "\x00" not in url)),
    st.tuples(st.sampled_from(["CHATMEM_BASE_URL", "OPENAI_BASE_URL"]), st.sampled_from([
        "http://[::1/v1", "ftp://h/v1", "localhost:11434/v1", "http://h:port/v1",
        "http://u:pw@h:99999/v1", "http:///v1", "http://a b/v1", "http://h/v1\x1b"])),
)


@FUZZ
@given(st.data())
def test_a_variable_that_cannot_be_used_is_refused_naming_it(work: Path,
                                                            data: st.DataObject) -> None:
    words = data.draw(st.sampled_from(READS_CONFIG))
    variable, value = data.draw(BAD_VARIABLES)
    line = refused(argv(words, db=False), work, {"CHATMEM_DB": "h.db", variable: value})
    assert line.startswith(f"error: {variable}"), line
    assert ":pw@" not in line


@pytest.mark.parametrize("key", ["sk-\udcff12345678", "sk-café12345678", "sk-\x1b[2J12345678"],
                         ids=["not-utf8", "not-ascii", "escape"])
def test_an_api_key_no_request_can_carry_is_one_line_naming_its_variable(
    work: Path, chat_server: ChatServer, key: str
) -> None:
    """It was sent, and failed as "a malformed reply stream"; now nothing is sent."""
    line = refused(["chat", "s", "--provider", "openai", "--model", "m", "--db", "h.db"], work,
                   {"OPENAI_API_KEY": key, "CHATMEM_BASE_URL": chat_server.base_url})
    assert line.startswith("error: OPENAI_API_KEY") and "12345678" not in line
    assert chat_server.paths == []


# -- config files ---------------------------------------------------------------------------

def toml_string(text: str) -> str:
    """`text` as a TOML basic string (controls escaped, as TOML requires)."""
    escaped = "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 or c in '"\\\x7f' else c
                      for c in text)
    return f'"{escaped}"'


WRONG_VALUES = st.sampled_from(["[1, 2]", "{a = 1}", "true", "1.5", '"x"', "-3", "1e400",
                                "[[[[[]]]]]", "2024-01-01"])
deep = st.builds(lambda n, kind: "x = " + {"array": "[" * n + "]" * n,
                                          "table": "{a = " * n + "1" + "}" * n}[kind],
                 st.integers(400, 6000), st.sampled_from(["array", "table"]))
not_utf8_bytes = st.builds(
    lambda before, byte, where: (f'model = "{before}'.encode() + bytes([byte]) + b'"\n'
                                 if where else f"# {before}".encode() + bytes([byte]) + b"\n"),
    st.text(alphabet="abc é中", max_size=5), st.integers(0x80, 0xFF), st.booleans())
BAD_CONFIGS = st.one_of(
    deep.map(lambda text: (text.encode(), None)),
    not_utf8_bytes.map(lambda raw: (raw, None)),
    st.tuples(st.sampled_from(sorted(k for k in SCHEMA[""] if k != "api_key_env")),
              WRONG_VALUES).filter(lambda kv: not _fits(*kv)).map(
        lambda kv: (f"{kv[0]} = {kv[1]}\n".encode(), kv[0])),
    malformed_urls.map(lambda url: (f"db = {toml_string(url)}\n".encode(), "db")),
    st.sampled_from(["http://[::1/v1", "ftp://h/v1", "http://h:port/v1", "http://h/v1\x1b"]).map(
        lambda url: (f"base_url = {toml_string(url)}\n".encode(), "base_url")),
)
"""(config file bytes, the key an error must name or None)."""


def _fits(key: str, value: str) -> bool:
    """Whether TOML `value` is of a type `key` takes (then it is no wrong type)."""
    import tomllib

    parsed = tomllib.loads(f"v = {value}")["v"]
    kinds = SCHEMA[""][key]
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    return isinstance(parsed, kinds) and not (isinstance(parsed, bool) and bool not in kinds)


@FUZZ
@given(st.data())
def test_a_config_file_that_cannot_be_used_is_refused_naming_it(work: Path,
                                                               data: st.DataObject) -> None:
    words = data.draw(st.sampled_from(READS_CONFIG))
    raw, key = data.draw(BAD_CONFIGS)
    config = work / "bad.toml"
    config.write_bytes(raw)
    try:
        by_flag = data.draw(st.booleans())
        args = [*argv(words), "--config", str(config)] if by_flag else argv(words)
        line = refused(args, work, None if by_flag else {"CHATMEM_CONFIG": str(config)})
    finally:
        config.unlink()
    assert line.startswith(f"error: {config}"), line
    if key is not None:
        assert f"key {key!r}" in line, line


def test_the_config_files_of_issue_28_are_one_line(work: Path) -> None:
    for raw, said in [(b"x = " + b"[" * 5000 + b"]" * 5000, "nested too deeply"),
                      ('model = "café"\n'.encode("latin-1"), ":1: not UTF-8 text (byte 0xe9)"),
                      (b'db = "postgresql://ann:pw@[::1/chat"\n', "not a valid URL")]:
        config = work / "bad.toml"
        config.write_bytes(raw)
        try:
            line = refused(["sessions", "list", "--config", str(config)], work)
        finally:
            config.unlink()
        assert said in line and ":pw@" not in line


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_tokens_file_naming_a_history_that_cannot_be_used_is_one_line(work: Path,
                                                                        command: str) -> None:
    """Each person's history in a tokens file is parsed when the server starts, not at their
    first request; the line names the file, never a token."""
    token = "tok-5f0c2a9e7b1d4c3a"
    tokens = work / "tokens.toml"
    tokens.write_text(f'[tokens]\n"{token}" = "postgresql://ann:pw@[::1/team"\n',
                      encoding="utf-8")
    tokens.chmod(0o600)
    try:
        line = refused([command, "--tokens", str(tokens), "--db", "h.db"], work)
    finally:
        tokens.unlink()
    assert line.startswith(f"error: {tokens}: tokens: postgresql://ann:***@[::1/team: not a")
    assert token not in line


def _tokens_refused(work: Path, command: str, tokens: Path, mode: int,
                    owner: int | None = None) -> str:
    """`command --tokens TOKENS` with a tokens file of `mode` (and `owner`): the line it
    refuses the file with (the file is gone afterwards)."""
    tokens.write_text(f'[tokens]\n"{TOKEN}" = "h.db"\n', encoding="utf-8")
    tokens.chmod(mode)
    if owner is not None:
        os.chown(tokens, owner, owner)
    try:
        return refused([command, "--tokens", str(tokens), "--db", "h.db"], work)
    finally:
        tokens.unlink()


TOKEN = "tok-5f0c2a9e7b1d4c3a"


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_tokens_file_others_can_read_is_refused_in_one_line(work: Path, command: str) -> None:
    """It holds every person's token: as libpq refuses a ~/.pgpass others can read."""
    tokens = work / "令牌.toml"
    line = _tokens_refused(work, command, tokens, 0o644)
    assert line == (f"error: {tokens}: other users can read this tokens file (mode 0644); "
                    f"make it yours alone: chmod 600 {tokens}\n")
    assert TOKEN not in line


@needs_root
@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_tokens_file_another_account_owns_or_could_replace_is_refused_in_one_line(
        work: Path, command: str) -> None:
    """Whoever owns the file, or may rename entries in a directory above it, chooses who gets
    in and as which database role: refused as ssh's StrictModes would."""
    tokens = work / "令牌.toml"
    line = _tokens_refused(work, command, tokens, 0o600, owner=NOBODY)
    assert line == (f"error: {tokens}: this tokens file belongs to another account (uid "
                    f"{NOBODY}), not the one this server runs as (uid 0); only your own file "
                    "is read\n")
    shared = work / "共享"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # no sticky bit: anyone may rename our file away and put theirs
    tokens = shared / "tokens.toml"
    try:
        line = _tokens_refused(work, command, tokens, 0o600)
    finally:
        shared.rmdir()
    assert line == (f"error: {tokens}: other users can write its directory {shared} (mode "
                    f"0777) and put a file of theirs in its place, choosing who gets in; chmod "
                    f"go-w {shared}\n")
    assert TOKEN not in line


# -- a few real processes: argv's bytes as the operating system gives them -------------------

def chatmem(args: list[bytes], cwd: Path, env: dict[bytes, bytes] | None = None
            ) -> subprocess.CompletedProcess[bytes]:
    environ = {**os.environb, b"NO_COLOR": b"1", b"COLUMNS": b"300", **(env or {})}
    return subprocess.run([sys.executable, "-m", "chatmem", *args], cwd=cwd, input=b"hi\n",
                          capture_output=True, env=environ, timeout=60)


@pytest.mark.parametrize(("args", "env", "line"), [
    ([b"ask", b"hi", b"--system", b"\xff"], {}, b"error: --system must be UTF-8"),
    ([b"sessions", b"rename", b"s", b"t\xe9"], {}, b"error: NEW must be UTF-8"),
    ([b"sessions", b"list", b"--db", b"postgresql://ann:pw@db\xff/chat"], {},
     b"error: --db must be UTF-8"),
    ([b"sessions", b"list"], {b"CHATMEM_DB": b"postgresql://ann:pw@db\xff/chat"},
     b"error: CHATMEM_DB must be UTF-8"),
    ([b"sessions", b"list", b"--db", b"h\xff.db"], {}, b"error: no history file at h\\udcff.db"),
    ([b"sessions", b"list"], {b"CHATMEM_DB": b"h\xff.db"},
     b"error: no history file at h\\udcff.db"),
], ids=["ask-system", "rename", "db-url", "env-url", "db-file", "env-file"])
def test_bytes_that_are_not_utf8_in_a_real_argv_or_environment(
    work: Path, args: list[bytes], env: dict[bytes, bytes], line: bytes
) -> None:
    """--db and CHATMEM_DB agree: a URL holding such bytes is refused either way, and a file
    is named by its bytes either way (POSIX file names are bytes; under an ASCII locale
    café.db is such a name)."""
    before = snapshot(work)
    done = chatmem([*args, *([b"--db", b"h.db"] if b"rename" in args or b"ask" in args
                              else [])], work, env)
    assert done.returncode == (1 if b"no history file" in line else 2), done.stderr
    assert done.stderr.startswith(line) and done.stderr.count(b"\n") == 1, done.stderr
    assert snapshot(work) == before
