"""A config file someone else wrote, or could write, is refused before anything of it is
used; key_command runs only when the history needs its key.

Review: a world-writable config in a 1777 directory with `key_command = "touch PWNED;
echo x"` ran its command (through a shell), though the history was not even encrypted;
base_url in such a file would send the API key elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

import pytest
from cli_runner import invoke, run

from chatmem.errors import ConfigError

CODE = int(ConfigError.exit_code)


def _config(folder: Path, marker: Path, mode: int) -> Path:
    folder.mkdir(exist_ok=True)
    config = folder / "配置.toml"
    config.write_text(f'key_command = "touch {marker}; echo x"\n', encoding="utf-8")
    config.chmod(mode)
    return config


def _not_private_group() -> int | None:
    """A group that is not this account's own (someone else's primary or shared group)."""
    import grp
    import pwd

    mine = pwd.getpwuid(os.geteuid()).pw_gid
    return next((g.gr_gid for g in grp.getgrall() if g.gr_gid != mine), None)


@pytest.mark.parametrize("mode", [0o666, 0o620])
def test_a_config_file_others_can_write_is_refused_unrun(tmp_path: Path, mode: int) -> None:
    shared, marker = tmp_path / "pub", tmp_path / "PWNED"
    shared.mkdir()
    shared.chmod(0o1777)
    config = _config(shared, marker, mode)
    if mode & 0o020:
        # Group write is someone else's only in a group that is not this account's own.
        group = _not_private_group()
        if group is None or os.geteuid() != 0:
            pytest.skip("giving a file to another group takes root and a second group")
        os.chown(config, -1, group)
    result = invoke("ask", "s", "hi", "--provider", "scripted", "--no-stdin", "--config",
                    str(config), "--db", str(tmp_path / "h.db"), code=CODE)
    assert result.stderr == (
        f"error: {config}: other users can write this config file (mode {mode:04o}); a config"
        " file can name commands chatmem runs and where your API key is sent, so it is not read"
        f" until you chmod go-w {config}\n")
    assert not marker.exists() and not (tmp_path / "h.db").exists()
    config.chmod(0o644)
    invoke("config", "show", "--config", str(config), code=0)


def test_a_config_file_in_a_folder_others_can_write_is_refused(tmp_path: Path) -> None:
    open_folder, marker = tmp_path / "open", tmp_path / "PWNED"
    config = _config(open_folder, marker, 0o600)
    open_folder.chmod(0o777)  # not sticky: anyone may put their own file in its place
    result = invoke("sessions", "list", "--config", str(config), code=CODE)
    # One sentence: what is wrong, why it matters, the fix (clauses ran together, the fix
    # named twice, and key_command named for a config that may have none).
    assert result.stderr == (
        f"error: {config}: other users can write its directory {open_folder} (mode 0777) and"
        " put a file of theirs in its place; a config file can name commands chatmem runs and"
        f" where your API key is sent, so it is not read until you chmod go-w {open_folder}\n")
    assert not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file away takes root")
def test_a_config_file_of_another_account_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    config = _config(tmp_path / "theirs", marker, 0o644)
    os.chown(config, 4242, 4242)
    result = invoke("sessions", "list", "--config", str(config), code=CODE)
    assert result.stderr == (
        f"error: {config}: this config file belongs to another account (uid 4242); a config"
        " file can name commands chatmem runs and where your API key is sent, so only your"
        " own is read: copy it to a file of yours\n")
    assert result.stderr.count("\n") == 1 and not marker.exists()


def test_key_command_does_not_run_for_a_plain_history(tmp_path: Path) -> None:
    db, marker = tmp_path / "h.db", tmp_path / "RAN"
    run(db, "ask", "s", "你好", "--provider", "scripted", "--no-stdin", code=0)
    config = _config(tmp_path / "mine", marker, 0o600)
    result = run(db, "sessions", "list", "--config", str(config), code=None)
    assert result.exit_code != 0
    assert "is not encrypted, but a key is set" in result.stderr
    assert not marker.exists()


def test_a_config_file_writable_by_the_accounts_own_group_is_read(tmp_path: Path) -> None:
    # umask 002 with a private group per user (Debian's and Ubuntu's USERGROUPS_ENAB):
    # every file the user saves is group-writable, and no one else is in the group.
    import grp
    import pwd

    me = pwd.getpwuid(os.geteuid())
    own = grp.getgrgid(me.pw_gid)
    if set(own.gr_mem) - {me.pw_name} or any(
            p.pw_gid == me.pw_gid and p.pw_uid != me.pw_uid for p in pwd.getpwall()):
        pytest.skip("this account's primary group is shared")
    folder = tmp_path / "mine"
    folder.mkdir()
    config = folder / "配置.toml"
    config.write_text('provider = "scripted"\n', encoding="utf-8")
    os.chown(config, -1, me.pw_gid)
    config.chmod(0o664)
    folder.chmod(0o775)
    invoke("config", "show", "--config", str(config), code=0)


def _release(fifo: Path, writer: threading.Thread) -> None:
    """Let a writer still waiting in its open of `fifo` finish (a reader comes and goes)."""
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    writer.join(5)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a FIFO away takes root")
def test_a_fifo_of_another_account_is_refused_as_a_file_of_theirs(tmp_path: Path) -> None:
    # Review: a FIFO another account made in a 1777 folder, where CHATMEM_CONFIG named a
    # file not yet there, was read as the config (not a regular file, so never checked):
    # whatever they wrote to it chose base_url, system, db and key_command.
    shared, marker = tmp_path / "pub", tmp_path / "PWNED"
    shared.mkdir()
    shared.chmod(0o1777)
    fifo = shared / "配置.toml"
    os.mkfifo(fifo, 0o644)
    os.chown(fifo, 4242, 4242)
    def write() -> None:
        with contextlib.suppress(BrokenPipeError):  # refused unread: the reader closed it
            fifo.write_text(f'system = "ATTACKER"\nkey_command = "touch {marker}; echo x"\n')

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        result = invoke("config", "show", "--config", str(fifo), code=CODE)
    finally:
        _release(fifo, writer)
    assert result.stderr == (
        f"error: {fifo}: this config file belongs to another account (uid 4242); a config"
        " file can name commands chatmem runs and where your API key is sent, so only your"
        " own is read: copy it to a file of yours\n")
    assert "ATTACKER" not in result.stdout and not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a FIFO away takes root")
def test_a_fifo_of_another_account_no_one_writes_is_refused_at_once(tmp_path: Path) -> None:
    # Opening it waited for a writer that never came: chatmem hung before checking anything.
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo, 0o644)
    os.chown(fifo, 4242, 4242)
    result = invoke("config", "show", "--config", str(fifo), code=CODE)
    assert "belongs to another account (uid 4242)" in result.stderr


def test_a_fifo_of_ones_own_waits_for_its_writer(tmp_path: Path) -> None:
    # Opened without waiting (to check it first), it must still wait for what is written.
    fifo = tmp_path / "配置.toml"
    os.mkfifo(fifo, 0o600)

    def write_later() -> None:
        time.sleep(0.3)
        fifo.write_text('system = "来自管道"\n', encoding="utf-8")

    writer = threading.Thread(target=write_later, daemon=True)
    writer.start()
    try:
        result = invoke("config", "show", "--config", str(fifo), code=0)
    finally:
        _release(fifo, writer)
    assert "来自管道" in result.stdout


def test_a_pipe_of_ones_own_is_read_as_the_config(tmp_path: Path) -> None:
    # --config /dev/stdin and <(...): a pipe this account made, /dev/fd/N leading to it.
    read, write = os.pipe()
    try:
        os.write(write, 'system = "管道里的"\n'.encode())
        os.close(write)
        result = invoke("config", "show", "--config", f"/dev/fd/{read}", code=0)
    finally:
        os.close(read)
    assert "管道里的" in result.stdout


def test_a_config_read_is_capped(tmp_path: Path) -> None:
    # /dev/zero (or a FIFO fed without end) was read until memory ran out: a MemoryError.
    result = invoke("config", "show", "--config", "/dev/zero", code=CODE)
    assert result.stderr == ("error: /dev/zero: more than 1,048,576 bytes; a config file of"
                             " at most 1,048,576 bytes is read\n")
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * (1 << 20) + b"\n")
    result = invoke("config", "show", "--config", str(big), code=CODE)
    assert result.stderr == (f"error: {big}: 1,048,579 bytes; a config file of at most"
                             " 1,048,576 bytes is read\n")


def test_a_link_in_the_middle_of_a_chain_is_checked_where_it_lies(tmp_path: Path) -> None:
    # ~/cfg -> /open/link -> ~/real.toml: the path's folder and the real file's are both
    # the user's, but anyone may replace `link` in the folder the chain passes through.
    home, open_folder = tmp_path / "home", tmp_path / "open"
    home.mkdir()
    open_folder.mkdir()
    real = home / "real.toml"
    real.write_text('system = "mine"\n', encoding="utf-8")
    (open_folder / "link").symlink_to(real)
    (home / "cfg").symlink_to(open_folder / "link")
    open_folder.chmod(0o777)
    result = invoke("config", "show", "--config", str(home / "cfg"), code=CODE)
    assert result.stderr == (
        f"error: {home / 'cfg'}: other users can write its directory {open_folder} (mode"
        " 0777) and put a file of theirs in its place; a config file can name commands"
        " chatmem runs and where your API key is sent, so it is not read until you chmod"
        f" go-w {open_folder}\n")
    open_folder.chmod(0o755)
    invoke("config", "show", "--config", str(home / "cfg"), code=0)
