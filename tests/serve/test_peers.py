"""Which account a loopback connection comes from, read from tables shaped as Linux writes
/proc/net/tcp and tcp6: rows captured on a real machine (x86-64, so little-endian words),
then the machine's own tables for a connection this test opens; and asked of the kernel over
netlink (sock_diag): messages captured on the same machine, then real connections."""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from other_account import NOBODY, connected_as_nobody, needs_root

from chatmem.serve.peers import (
    PROC_NET,
    SocketRow,
    accounts_shown,
    diag_lookup,
    diag_request,
    parse_diag_reply,
    parse_row,
    peer_uids,
)

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


def loopback_connections() -> Iterator[tuple[str, int, int]]:
    """On IPv4 and (where there is one) IPv6 loopback, a connection this process holds open
    at both ends while the caller looks: (host, the client's port, the server's port)."""
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            server = socket.socket(family)
            server.bind((host, 0))
        except OSError:
            continue  # no IPv6 here
        with server:
            server.listen()
            port = server.getsockname()[1]
            with socket.create_connection((host, port)) as mine, server.accept()[0]:
                yield host, mine.getsockname()[1], port


def test_a_system_without_the_tables_cannot_tell(tmp_path: Path, captured: Path) -> None:
    assert not accounts_shown("127.0.0.1", tmp_path / "missing")
    assert accounts_shown("127.0.0.1", captured) and accounts_shown("::1", captured)
    (captured / "tcp6").unlink()
    assert not accounts_shown("::1", captured)


@pytest.mark.skipif(not (PROC_NET / "tcp").is_file(), reason="no /proc/net (not Linux)")
def test_this_machines_own_table_names_this_process_for_its_connection() -> None:
    for host, me, port in loopback_connections():
        assert peer_uids((host, me), (host, port)) == {os.getuid()}


# sock_diag messages as an x86-64 Linux 6.18 sent and answered them (native byte order).
little_endian = pytest.mark.skipif(sys.byteorder != "little",
                                   reason="captured on a little-endian machine")
# Client 127.0.0.1:33912 (8478) of a server on 127.0.0.1:38599 (96C7).
ASK_V4 = bytes.fromhex(
    "4800000014000100010000000000000002060000ffffffff847896c77f000001000000000000000000000000"
    "7f00000100000000000000000000000000000000ffffffffffffffff")
ANSWER_V4 = bytes.fromhex(
    "7c00000014000000010000005075000002010000847896c77f000001000000000000000000000000"
    "7f00000100000000000000000000000000000000010000000000000000000000000000000000000000000000"
    "ecba0500050008000000000008000f00000000000c00150001000000000000000600160052000000")
# Client [::1]:52378 (CC9A) of a server on [::1]:55367 (D847).
ASK_V6 = bytes.fromhex(
    "480000001400010001000000000000000a060000ffffffffcc9ad8470000000000000000000000000000"
    "00010000000000000000000000000000000100000000ffffffffffffffff")
ANSWER_V6 = bytes.fromhex(
    "7c0000001400000001000000507500000a010000cc9ad84700000000000000000000000000000001"
    "00000000000000000000000000000001000000000400000000000000000000000000000000000000"
    "00000000f5ba0500050008000000000008000f00000000000c001500010000000000000006001600"
    "12000000")
# An IPv6 socket of root's at ::ffff:127.0.0.1:58980 connected to 127.0.0.1:58825, asked of
# as IPv4 (which finds it: the kernel hashes it by its IPv4 numbers).
ANSWER_MAPPED = bytes.fromhex(
    "7c0000001400000001000000507500000a010000e664e5c900000000000000000000ffff7f000001"
    "00000000000000000000ffff7f000001000000000700000000000000000000000000000000000000"
    "00000000feba0500050008000000000008000f00000000000c001500010000000000000006001600"
    "12000000")
# No socket 127.0.0.1:1 → 127.0.0.1:34771: ENOENT, with the request it answers.
NO_SUCH = bytes.fromhex(
    "5c0000000200000001000000f3750000feffffff4800000014000100010000000000000002060000ffffffff"
    "000187d37f0000010000000000000000000000007f00000100000000000000000000000000000000"
    "ffffffffffffffff")
# Asked for 127.0.0.1:34771 → 127.0.0.1:1, the kernel's lookup fell through to the socket
# listening on 127.0.0.1:34771 (state 10).
LISTENER = bytes.fromhex(
    "7c0000001400000001000000f3750000020a000087d300007f000001000000000000000000000000"
    "00000000000000000000000000000000000000000110000000000000000000000000000080000000"
    "00000000c2b50500050008000000000008000f00000000000c001500010000000000000006001600"
    "52000000")
# 127.0.0.1:50902 → 127.0.0.1:34771 closed, in TIME_WAIT (state 6): uid 0, inode 0.
TIME_WAIT = bytes.fromhex(
    "600000001400000001000000f375000002060300c6d687d37f000001000000000000000000000000"
    "7f00000100000000000000000000000000000000021000000000000098e90000000000000000000000000000"
    "0000000008000f0000000000")


def end(host: str, port: int) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    return ipaddress.ip_address(host), port


@little_endian
def test_a_request_names_the_four_numbers_as_the_kernel_reads_them() -> None:
    assert diag_request(end("127.0.0.1", 33912), end("127.0.0.1", 38599)) == ASK_V4
    assert diag_request(end("::1", 52378), end("::1", 55367)) == ASK_V6
    assert diag_request(end("127.0.0.1", 1), end("127.0.0.1", 34771)) == NO_SUCH[20:]
    # One end IPv4 and the other IPv6: both written as IPv6, the IPv4 one mapped.
    mixed = diag_request(end("127.0.0.1", 1), end("::ffff:127.0.0.1", 2))
    assert mixed[16] == socket.AF_INET6
    assert mixed[28:44] == mixed[44:60] == ipaddress.ip_address("::ffff:127.0.0.1").packed
    assert diag_request(end("127.0.0.1", 1), end("127.0.0.1", 2), sequence=7)[8:12] == (
        (7).to_bytes(4, "little"))


@little_endian
def test_an_answer_is_read_as_the_kernel_wrote_it() -> None:
    assert parse_diag_reply(ANSWER_V4) == SocketRow(
        end("127.0.0.1", 33912), end("127.0.0.1", 38599), 0, 375532)
    assert parse_diag_reply(ANSWER_V6) == SocketRow(end("::1", 52378), end("::1", 55367), 0,
                                                    375541)
    assert parse_diag_reply(ANSWER_MAPPED) == SocketRow(
        end("::ffff:127.0.0.1", 58980), end("::ffff:127.0.0.1", 58825), 0, 375550)
    assert parse_diag_reply(NO_SUCH) is None
    assert parse_diag_reply(LISTENER) is None  # not the connection asked for
    waiting = parse_diag_reply(TIME_WAIT)
    assert waiting is not None and (waiting.uid, waiting.inode) == (0, 0)
    # Another error is the kernel's to tell; anything else is not an answer.
    refused = NO_SUCH[:16] + struct.pack("=i", -errno.EPERM) + NO_SUCH[20:]
    with pytest.raises(OSError) as raised:
        parse_diag_reply(refused)
    assert raised.value.errno == errno.EPERM
    for odd in (b"", ANSWER_V4[:15], ANSWER_V4[:60], ANSWER_V4[:4] + b"\x03" + ANSWER_V4[5:],
                (500).to_bytes(4, "little") + ANSWER_V4[4:]):
        with pytest.raises(ValueError):
            parse_diag_reply(odd)
    with pytest.raises(ValueError):
        parse_diag_reply(ANSWER_V4, sequence=2)  # an answer to another question


def netlink_works() -> bool:
    try:
        diag_lookup(end("127.0.0.1", 0), end("127.0.0.1", 0))
    except (OSError, ValueError):
        return False
    return True


needs_netlink = pytest.mark.skipif(not netlink_works(), reason="no sock_diag netlink here")


@needs_netlink
def test_the_kernel_names_this_process_for_its_connection_and_nothing_for_none(
        tmp_path: Path) -> None:
    asked = 0
    for host, me, port in loopback_connections():
        found = diag_lookup(end(host, me), end(host, port))
        assert found is not None and found.uid == os.getuid() and found.inode
        assert found.local == end(host, me) and found.remote == end(host, port)
        # Without tables to read, the kernel alone answers.
        assert peer_uids((host, me), (host, port), proc_net=tmp_path / "none",
                         netlink=True) == {os.getuid()}
        # Four numbers no socket has; nor the listener at the local port.
        free = 1 if me != 1 else 2
        assert diag_lookup(end(host, free), end(host, port)) is None
        assert diag_lookup(end(host, port), end(host, free)) is None
        assert peer_uids((host, free), (host, port), netlink=True) == set()
        asked += 1
    assert asked


@needs_netlink
def test_an_ipv4_client_on_an_ipv6_socket_is_found() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        try:
            mine = socket.socket(socket.AF_INET6)
            mine.connect(("::ffff:127.0.0.1", port))
        except OSError:
            pytest.skip("no IPv6 sockets here")
        with mine, server.accept()[0]:
            me = mine.getsockname()[1]
            assert peer_uids(("127.0.0.1", me), ("127.0.0.1", port),
                             proc_net=Path("/nonexistent"), netlink=True) == {os.getuid()}


@needs_netlink
@little_endian
def test_an_ownerless_answer_leaves_it_to_the_tables(tmp_path: Path) -> None:
    """The kernel may answer with a closed socket's TIME_WAIT while a live one of the same
    four numbers stands behind it (loopback reuses them): the tables list both apart."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        me = client.getsockname()[1]
        accepted, _ = server.accept()
        client.close()  # the side that closes first waits out TIME_WAIT
        accepted.close()
        deadline = time.monotonic() + 10
        while (found := diag_lookup(end("127.0.0.1", me), end("127.0.0.1", port))) is None or (
                found.inode):
            assert time.monotonic() < deadline, found
            time.sleep(0.01)
        assert peer_uids(("127.0.0.1", me), ("127.0.0.1", port), netlink=True) == set()
        (tmp_path / "tcp").write_text(HEADING + "\n" + (
            f"   5: 0100007F:{me:04X} 0100007F:{port:04X} 01 00000000:00000000 00:00000000 "
            f"00000000 {NOBODY}        0 170991 2 00000000e4e97301 20 0 0 10 -1\n"))
        assert peer_uids(("127.0.0.1", me), ("127.0.0.1", port), proc_net=tmp_path,
                         byteorder="little", netlink=True) == {NOBODY}


@needs_netlink
@needs_root
def test_the_kernel_names_nobody_for_a_connection_nobody_holds() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with connected_as_nobody("127.0.0.1", port) as (host, theirs):
            accepted, _ = server.accept()
            with accepted:
                found = diag_lookup(end(host, theirs), end("127.0.0.1", port))
                assert found is not None and (found.uid, bool(found.inode)) == (NOBODY, True)
                assert peer_uids((host, theirs), ("127.0.0.1", port)) == {NOBODY}
                # The server's own end of the same connection is this process's.
                mine = diag_lookup(end("127.0.0.1", port), end(host, theirs))
                assert mine is not None and mine.uid == os.getuid()


def test_accounts_are_shown_where_the_kernel_can_be_asked() -> None:
    if netlink_works() or (PROC_NET / "tcp").is_file():
        assert accounts_shown("127.0.0.1")
