"""Which account a loopback connection comes from. Every account of this machine may connect
to 127.0.0.1, so a server there without a token answers only the account that started it.

The client's own socket is the one whose local end is the request's client host:port and
whose remote end is the server's; Linux knows the uid that opened it. It is asked first of
the kernel by those four numbers over netlink (NETLINK_SOCK_DIAG, as `ss` does, root not
needed): a hash lookup of tens of microseconds. Where netlink is not there or fails, it is
looked for in /proc/net/tcp and tcp6, which list every TCP socket of this network namespace
but cost tens of milliseconds a read on a busy machine (the kernel walks its whole table)."""

from __future__ import annotations

import errno
import ipaddress
import socket
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PROC_NET = Path("/proc/net")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Endpoint = tuple[Address, int]
ByteOrder = Literal["little", "big"]


@dataclass(frozen=True)
class SocketRow:
    """One row of /proc/net/tcp or tcp6."""

    local: Endpoint
    remote: Endpoint
    uid: int
    inode: int
    """0 when no process holds the socket any more (closed, TIME_WAIT): its uid then says
    nothing of who opened it (the kernel shows 0, root's)."""


def parse_row(line: str, byteorder: ByteOrder = sys.byteorder) -> SocketRow | None:
    """A row of the table, None for its heading or a line not shaped like a row. The kernel
    prints each 32-bit word of an address as a number in the machine's own byte order."""
    fields = line.split()
    if len(fields) < 10 or not fields[0].endswith(":"):
        return None
    try:
        return SocketRow(_endpoint(fields[1], byteorder), _endpoint(fields[2], byteorder),
                         int(fields[7]), int(fields[9]))
    except ValueError:
        return None


def _endpoint(text: str, byteorder: ByteOrder) -> Endpoint:
    address, _, port = text.partition(":")
    if len(address) not in (8, 32):
        raise ValueError(text)
    packed = b"".join(int(address[i:i + 8], 16).to_bytes(4, byteorder)
                      for i in range(0, len(address), 8))
    return ipaddress.ip_address(packed), int(port, 16)


def _written(address: Address, port: int, byteorder: ByteOrder) -> str:
    """An endpoint as the table writes it (the inverse of `_endpoint`)."""
    packed = address.packed
    words = (int.from_bytes(packed[i:i + 4], byteorder) for i in range(0, len(packed), 4))
    return "".join(f"{word:08X}" for word in words) + f":{port:04X}"


def _tables(client: Address) -> list[tuple[str, Address, Address | None]]:
    """The tables to look in, with the client's address as each writes it: an IPv4 client's
    socket may also be an IPv6 one that connected to ::ffff:127.0.0.1."""
    if isinstance(client, ipaddress.IPv6Address):
        return [("tcp6", client, None)]
    return [("tcp", client, None),
            ("tcp6", ipaddress.IPv6Address(f"::ffff:{client}"), client)]


def peer_uids(client: tuple[str, int], server: tuple[str, int], *,
              proc_net: Path = PROC_NET, byteorder: ByteOrder = sys.byteorder,
              netlink: bool | None = None) -> set[int]:
    """The uids of the live sockets whose local end is `client` and remote end `server`:
    one, the account that connected, when the client's socket is found; none when it is not
    (gone already, or a system that lists no sockets there). `netlink`: ask the kernel
    first; by default only when `proc_net` is this system's own /proc/net, as netlink
    answers from that same kernel (tables put elsewhere, a test's, are read as given)."""
    try:
        client_ip = ipaddress.ip_address(client[0])
        server_ip = ipaddress.ip_address(server[0])
    except ValueError:
        return set()
    if proc_net == PROC_NET if netlink is None else netlink:
        try:
            found = diag_lookup((client_ip, client[1]), (server_ip, server[1]))
        except (OSError, ValueError):
            found = None  # no netlink here (not Linux, a sandbox): the tables say
        else:
            if found is None:
                return set()
            if found.inode:
                return {found.uid}
            # Ownerless (closing, TIME_WAIT): a live socket of the same four numbers may
            # stand behind it (loopback reuses them), which only the tables list apart.
    return _listed_uids(client_ip, client[1], server_ip, server[1], proc_net, byteorder)


def _listed_uids(client_ip: Address, client_port: int, server_ip: Address, server_port: int,
                 proc_net: Path, byteorder: ByteOrder) -> set[int]:
    uids: set[int] = set()
    for table, local_ip, v4 in _tables(client_ip):
        remote_ip: Address = server_ip
        if v4 is not None and isinstance(server_ip, ipaddress.IPv4Address):
            remote_ip = ipaddress.IPv6Address(f"::ffff:{server_ip}")
        wanted = (f" {_written(local_ip, client_port, byteorder)} "
                  f"{_written(remote_ip, server_port, byteorder)} ")
        try:
            text = (proc_net / table).read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        # A substring search, not a parse of every row: a busy machine lists thousands.
        at = text.find(wanted)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            row = parse_row(text[start:end if end >= 0 else len(text)], byteorder)
            if row is not None and row.inode:
                uids.add(row.uid)
            at = text.find(wanted, at + 1)
        if uids:
            break  # each table costs tens of ms to read (the kernel walks its whole hash)
    return uids


def accounts_shown(host: str, proc_net: Path = PROC_NET) -> bool:
    """Whether this system shows which account each connection to `host` comes from (Linux
    does, over netlink or in /proc/net; macOS and Windows do not)."""
    import os

    if not hasattr(os, "getuid"):
        return False
    if proc_net == PROC_NET:
        nowhere = ipaddress.ip_address("::1" if ":" in host else "127.0.0.1")
        try:
            diag_lookup((nowhere, 0), (nowhere, 0))  # no socket has port 0: ENOENT
            return True
        except (OSError, ValueError):
            pass
    try:
        with (proc_net / ("tcp6" if ":" in host else "tcp")).open("rb") as listed:
            listed.readline()
    except OSError:
        return False
    return True


# NETLINK_SOCK_DIAG. Each struct is built and read by a pure function, checked on captured
# bytes; `diag_lookup` alone talks to the kernel.
NETLINK_SOCK_DIAG = 4  # linux/netlink.h; the socket module does not name it
SOCK_DIAG_BY_FAMILY = 20  # linux/sock_diag.h
NLMSG_ERROR = 2
NLM_F_REQUEST = 1
INET_DIAG_NOCOOKIE = 0xFFFFFFFF
TCP_LISTEN = 10
# struct nlmsghdr: length, type, flags, sequence, port id, in the machine's byte order.
_HEADER = struct.Struct("=IHHII")
# struct inet_diag_sockid: ports and addresses in network order (ports swapped by hand, as
# one struct cannot mix orders); interface and cookie in the machine's.
_SOCKID = "HH16s16sI2I"
# struct inet_diag_req_v2: family, protocol, extensions, pad, states, the socket's id.
_REQUEST = struct.Struct("=BBBBI" + _SOCKID)
# struct inet_diag_msg: family, state, timer, retransmits, the id, expiry, queues, uid, inode.
_MESSAGE = struct.Struct("=BBBB" + _SOCKID + "IIIII")


def diag_request(local: Endpoint, remote: Endpoint, sequence: int = 1) -> bytes:
    """The message asking for the TCP socket whose own end is `local` and peer `remote`.
    Not a dump: the kernel looks that one socket up in its hash."""
    ends = (local[0], remote[0])
    if all(isinstance(end, ipaddress.IPv4Address) for end in ends):
        family, packed = socket.AF_INET, [end.packed.ljust(16, b"\0") for end in ends]
    else:  # the kernel looks an IPv4 pair written as IPv6 (::ffff:a.b.c.d) up as IPv4
        family = socket.AF_INET6
        packed = [ipaddress.IPv6Address(f"::ffff:{end}").packed
                  if isinstance(end, ipaddress.IPv4Address) else end.packed for end in ends]
    body = _REQUEST.pack(
        family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF,
        socket.htons(local[1]), socket.htons(remote[1]), *packed,
        0, INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE)
    return _HEADER.pack(_HEADER.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST,
                        sequence, 0) + body


def parse_diag_reply(data: bytes, sequence: int = 1) -> SocketRow | None:
    """The socket the kernel answered with; None when it has none of those four numbers.
    OSError for another error it answers, ValueError for bytes not shaped as an answer."""
    if len(data) < _HEADER.size:
        raise ValueError(f"{len(data)} bytes, short of a netlink header")
    length, kind, _flags, seq, _port = _HEADER.unpack_from(data)
    if seq != sequence or not _HEADER.size <= length <= len(data):
        raise ValueError(f"netlink message {seq} of {length} bytes in {len(data)}")
    if kind == NLMSG_ERROR and length >= _HEADER.size + 4:
        (code,) = struct.unpack_from("=i", data, _HEADER.size)
        if -code == errno.ENOENT:
            return None
        raise OSError(-code, f"sock_diag: {errno.errorcode.get(-code, code)}")
    if kind != SOCK_DIAG_BY_FAMILY or length < _HEADER.size + _MESSAGE.size:
        raise ValueError(f"netlink message of type {kind} and {length} bytes")
    (family, state, _timer, _retrans, sport, dport, src, dst, *_rest, uid, inode
     ) = _MESSAGE.unpack_from(data, _HEADER.size)
    if state == TCP_LISTEN:
        # With no connection of those numbers the kernel's lookup falls through to a
        # socket listening on the local port: not the connection asked for.
        return None
    if family == socket.AF_INET:
        local: Address = ipaddress.IPv4Address(src[:4])
        remote: Address = ipaddress.IPv4Address(dst[:4])
    elif family == socket.AF_INET6:
        local, remote = ipaddress.IPv6Address(src), ipaddress.IPv6Address(dst)
    else:
        raise ValueError(f"address family {family}")
    return SocketRow((local, socket.ntohs(sport)), (remote, socket.ntohs(dport)), uid, inode)


def diag_lookup(local: Endpoint, remote: Endpoint, timeout: float = 1.0) -> SocketRow | None:
    """This network namespace's TCP socket whose own end is `local` and peer `remote`, None
    when there is none. OSError when the kernel cannot be asked (not Linux, no sock_diag,
    a sandbox forbidding netlink) or answers an error, ValueError for an answer not
    understood or naming another socket."""
    if not hasattr(socket, "AF_NETLINK"):
        raise OSError(errno.EAFNOSUPPORT, "no netlink on this system")
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as diag:
        diag.settimeout(timeout)
        diag.sendto(diag_request(local, remote), (0, 0))
        # Neither a dump nor NLM_F_ACK: the answer is one message, the socket or an error.
        found = parse_diag_reply(diag.recv(8192))
    if found is not None and (_plain(found.local), _plain(found.remote)) != (
            _plain(local), _plain(remote)):
        raise ValueError(f"sock_diag answered {found.local}, {found.remote}")
    return found


def _plain(end: Endpoint) -> Endpoint:
    """An IPv4 address as itself, not as an IPv6 socket writes it (::ffff:127.0.0.1)."""
    address, port = end
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped, port
    return address, port
