"""Which account a loopback connection comes from, read from tables shaped as Linux writes
/proc/net/tcp and tcp6: rows captured on a real machine (x86-64, so little-endian words),
then the machine's own tables for a connection this test opens."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import pytest

from chatmem.serve.peers import PROC_NET, accounts_shown, parse_row, peer_uids

HEADING = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid"
           "  timeout inode")
# Server 127.0.0.1:58347 (E3EB); nobody connected from port 35430 (8A66), root from 35434
# (8A6A); each connection is two rows, the client's socket and the server's.
TCP = "\n".join([
    HEADING,
    "   1: 0100007F:E3EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0     "
    "   0 166596 1 0000000018871d54 100 0 0 10 0",
    "   3: 0100007F:E3EB 0100007F:8A6A 01 00000000:00000000 00:00000000 00000000     0     "
    "   0 166600 1 00000000e6db9dc5 20 0 0 10 -1",
    "   4: 0100007F:E3EB 0100007F:8A66 01 00000000:00000000 00:00000000 00000000     0     "
    "   0 166599 1 000000005f6f7536 20 0 0 10 -1",
    # A closed connection of the same four numbers waiting out TIME_WAIT (loopback reuses
    # them): no process holds it, and the kernel shows uid 0 for it.
    "   2: 0100007F:8A66 0100007F:E3EB 06 00000000:00000000 03:000003C4 00000000     0     "
    "   0 0 3 000000005d0b4715",
    "   5: 0100007F:8A66 0100007F:E3EB 01 00000000:00000000 00:00000000 00000000 65534     "
    "   0 170991 2 00000000e4e97301 20 0 0 10 -1",
    "   6: 0100007F:8A6A 0100007F:E3EB 01 00000000:00000000 00:00000000 00000000     0     "
    "   0 166598 2 00000000769169b7 20 0 0 10 -1",
]) + "\n"
# Server [::1]:34411 (866B), nobody from port 50012 (C35C); and an IPv6 socket of root's
# that connected to ::ffff:127.0.0.1:48829 (BEBD), which a server on 127.0.0.1 sees as
# 127.0.0.1:45538 (B1E2).
TCP6 = "\n".join([
    HEADING,
    "   1: 00000000000000000000000001000000:866B 00000000000000000000000001000000:C35C 01 "
    "00000000:00000000 00:00000000 00000000     0        0 171011 1 000000005992d282 20 0 0 10 -1",
    "   2: 00000000000000000000000001000000:C35C 00000000000000000000000001000000:866B 01 "
    "00000000:00000000 00:00000000 00000000 65534        0 171009 2 00000000d9613740 20 0 0 10 -1",
    "   4: 0000000000000000FFFF00000100007F:B1E2 0000000000000000FFFF00000100007F:BEBD 01 "
    "00000000:00000000 00:00000000 00000000     0        0 171111 2 000000008172632c 20 0 0 10 -1",
]) + "\n"


@pytest.fixture
def captured(tmp_path: Path) -> Path:
    (tmp_path / "tcp").write_text(TCP)
    (tmp_path / "tcp6").write_text(TCP6)
    return tmp_path


def test_a_row_is_read_as_the_kernel_wrote_it() -> None:
    lines = TCP.splitlines()
    assert parse_row(lines[0], "little") is None
    nobody = parse_row(lines[5], "little")
    assert nobody is not None
    assert nobody.local == (ipaddress.ip_address("127.0.0.1"), 35430)
    assert nobody.remote == (ipaddress.ip_address("127.0.0.1"), 58347)
    assert (nobody.uid, nobody.inode) == (65534, 170991)
    waiting = parse_row(lines[4], "little")
    assert waiting is not None and (waiting.uid, waiting.inode) == (0, 0)
    six = parse_row(TCP6.splitlines()[2], "little")
    assert six is not None
    assert six.local == (ipaddress.ip_address("::1"), 50012) and six.uid == 65534
    mapped = parse_row(TCP6.splitlines()[3], "little")
    assert mapped is not None
    assert mapped.remote == (ipaddress.ip_address("::ffff:127.0.0.1"), 48829)
    for odd in ("", "garbage", "   1: 0100007F 0100007F:8A6A 01 0 0 0 0 x 0 1"):
        assert parse_row(odd, "little") is None


def test_the_client_socket_names_the_account_and_never_the_servers_row(captured: Path) -> None:
    def uids(client: tuple[str, int], server: tuple[str, int]) -> set[int]:
        return peer_uids(client, server, proc_net=captured, byteorder="little")

    # Not the server's socket of the same connection (root's), nor the TIME_WAIT row's 0.
    assert uids(("127.0.0.1", 35430), ("127.0.0.1", 58347)) == {65534}
    assert uids(("127.0.0.1", 35434), ("127.0.0.1", 58347)) == {0}
    assert uids(("::1", 50012), ("::1", 34411)) == {65534}
    assert uids(("127.0.0.1", 45538), ("127.0.0.1", 48829)) == {0}  # an IPv6 client socket
    assert uids(("127.0.0.1", 35431), ("127.0.0.1", 58347)) == set()
    assert uids(("not an address", 1), ("127.0.0.1", 58347)) == set()
    assert peer_uids(("127.0.0.1", 35430), ("127.0.0.1", 58347),
                     proc_net=captured / "missing", byteorder="little") == set()


def test_a_system_without_the_tables_cannot_tell(tmp_path: Path, captured: Path) -> None:
    assert not accounts_shown("127.0.0.1", tmp_path / "missing")
    assert accounts_shown("127.0.0.1", captured) and accounts_shown("::1", captured)
    (captured / "tcp6").unlink()
    assert not accounts_shown("::1", captured)


@pytest.mark.skipif(not (PROC_NET / "tcp").is_file(), reason="no /proc/net (not Linux)")
def test_this_machines_own_table_names_this_process_for_its_connection() -> None:
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            server = socket.socket(family)
            server.bind((host, 0))
        except OSError:
            continue  # no IPv6 here
        with server:
            server.listen()
            with socket.create_connection(server.getsockname()[:2]) as mine:
                accepted, _ = server.accept()
                with accepted:
                    assert peer_uids(mine.getsockname()[:2], server.getsockname()[:2]) == {
                        os.getuid()}
