"""The secrets settings point to, read when needed and never kept in the settings: the
history file's key (CHATMEM_KEY or key_command's output) and an endpoint's API key."""

from __future__ import annotations

import contextlib
import os
import signal
from typing import TYPE_CHECKING

from chatmem.errors import ConfigError
from chatmem.text import is_valid

if TYPE_CHECKING:
    import subprocess

KEY_ENV = "CHATMEM_KEY"
"""The history file's key; read when a file is opened, never copied into the settings."""
NEW_KEY_ENV = "CHATMEM_NEW_KEY"
"""The key `chatmem rekey` encrypts with, when not typed."""
HISTORY_KEYS = (KEY_ENV, NEW_KEY_ENV)
"""Where a history's key may be in the environment."""


def program_environment() -> dict[str, str]:
    """This process's environment for a program the user named (`/edit`'s editor, a
    clipboard_command, key_command): without the history keys, which it never needs and
    may hand on (an editor's terminal, a plugin's shell, a crash report of its
    environment, a password manager's log)."""
    return {name: value for name, value in os.environ.items() if name not in HISTORY_KEYS}


def key_from(variable: str) -> str | None:
    """A history key from environment variable `variable`, None if unset; ConfigError naming
    the variable (never repeating the key) when it is not UTF-8 text, which SQLCipher's
    key cannot be made from (it was a traceback, and a new history file left empty)."""
    key = os.environ.get(variable)
    if not key:
        return None
    if not is_valid(key):
        raise ConfigError(f"{variable} must be UTF-8 text; it holds bytes that are not")
    return key


def api_key_from(variable: str) -> str | None:
    """The API key in environment variable `variable` (spaces around it dropped), None if
    unset; ConfigError naming the variable, never repeating the key, when it cannot go in
    an HTTP header (sent, it would fail as a garbled request, not as a bad key)."""
    key = os.environ.get(variable, "").strip()
    if not key:
        return None
    if not is_valid(key):
        raise ConfigError(f"{variable} must be UTF-8 text; it holds bytes that are not")
    if not (key.isascii() and key.isprintable()):
        raise ConfigError(f"{variable} holds a character no API key has (a key is printable "
                          "ASCII): set it again, copied whole")
    return key


def run_key_command(command: str, timeout: float) -> str:
    """What `command` prints on stdout, its line ending removed; KeyUnavailable otherwise.

    stdin stays the terminal's, and stderr too when it is one: a password manager may
    ask there. Elsewhere (a script, a pipe) its stderr is discarded, never quoted: a
    failing command may print the key or a secret of its own there. The error says
    the exit status and how to see why. It runs in a process group of its own, so that
    what it started goes with it when it times out (`_run_in_own_group`).
    """
    import subprocess
    import sys

    from chatmem.errors import KeyUnavailable

    stderr = None if sys.stderr.isatty() else subprocess.DEVNULL
    try:
        # `chatmem rekey` runs it for the current key with the new one in CHATMEM_NEW_KEY.
        done = _run_in_own_group(command, stderr, timeout)
    except subprocess.TimeoutExpired:
        raise KeyUnavailable(f"key_command gave no key within {timeout:g} s "
                             "(key_command_timeout); nothing opened") from None
    except OSError as e:
        # The cause in words ("Permission denied"), never a Python exception name.
        why = e.strerror or "the system could not start it"
        raise KeyUnavailable(f"key_command could not run ({why}); no key, nothing opened"
                             ) from None
    if done.returncode == -signal.SIGINT:  # Ctrl-C at its prompt: the terminal was its
        raise KeyboardInterrupt
    if done.returncode != 0:
        why = {127: "command not found, ", 126: "command not executable, "}.get(
            done.returncode, "")
        raise KeyUnavailable(f"key_command failed ({why}exit {done.returncode}); no key, "
                             "nothing opened (its output is never shown: run the command in "
                             "a terminal to see why)")
    try:
        key = done.stdout.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise KeyUnavailable("key_command printed bytes that are not UTF-8; nothing "
                             "opened") from None
    if not key:
        raise KeyUnavailable("key_command printed no key; nothing opened")
    if "\x00" in key:  # SQLCipher takes a key as a C string: it would end there
        raise KeyUnavailable("key_command printed a NUL byte; nothing opened")
    return key


def _run_in_own_group(command: str, stderr: int | None,
                      timeout: float) -> subprocess.CompletedProcess[bytes]:
    """`command` run by the shell in a new process group, killed with everything in that
    group when it takes longer than `timeout` (or on Ctrl-C): a shell killed alone left the
    password manager it had started running, holding the terminal. At a terminal the group
    is put in front while it runs, as a shell does with a job, so it may still read a
    passphrase there (a group behind would be stopped when it tried)."""
    import subprocess

    groups = hasattr(os, "killpg")  # POSIX; Windows has no process groups to kill
    terminal = _front_terminal() if groups else None
    try:
        process = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE, stderr=stderr,
                                   env=program_environment(),
                                   process_group=0 if groups else None)
    except BaseException:
        if terminal is not None:
            os.close(terminal)
        raise
    try:
        if terminal is not None:
            _give_terminal(terminal, process.pid)
        try:
            out, _ = process.communicate(timeout=timeout)
        except BaseException:
            with contextlib.suppress(OSError):
                if groups:
                    os.killpg(process.pid, signal.SIGKILL)
                else:
                    process.kill()
            process.wait()
            raise
    finally:
        if terminal is not None:
            _give_terminal(terminal, os.getpgrp())
            os.close(terminal)
    return subprocess.CompletedProcess(command, process.returncode, out)


def _front_terminal() -> int | None:
    """This process's terminal, open, when this process's group is in front there; None
    when there is none or chatmem runs behind (a job sent to the background)."""
    try:
        terminal = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if os.tcgetpgrp(terminal) == os.getpgrp():
            return terminal
    except OSError:
        pass
    os.close(terminal)
    return None


def _give_terminal(terminal: int, group: int) -> None:
    """Put process group `group` in front at `terminal`; woken, if it was stopped for
    reading before it was there. SIGTTOU is held meanwhile: a process behind may not set
    the group in front otherwise (it would be stopped)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        os.tcsetpgrp(terminal, group)
        if group != os.getpgrp():
            os.killpg(group, signal.SIGCONT)
    except OSError:
        pass  # it has gone already: nothing to hand over
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
