"""Which account a loopback connection comes from. Every account of this machine may connect
to 127.0.0.1, so a server there without a token answers only the account that started it.

Linux lists every TCP socket of this network namespace, with the uid that opened it, in
/proc/net/tcp and /proc/net/tcp6: the client's own socket is the row whose local address is
the request's client host:port and whose remote address is the server's."""

from __future__ import annotations

import ipaddress
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
              proc_net: Path = PROC_NET, byteorder: ByteOrder = sys.byteorder) -> set[int]:
    """The uids of the live sockets whose local end is `client` and remote end `server`:
    one, the account that connected, when the client's socket is found; none when it is not
    (gone already, or a system that lists no sockets there)."""
    try:
        client_ip = ipaddress.ip_address(client[0])
        server_ip = ipaddress.ip_address(server[0])
    except ValueError:
        return set()
    uids: set[int] = set()
    for table, local_ip, v4 in _tables(client_ip):
        remote_ip: Address = server_ip
        if v4 is not None and isinstance(server_ip, ipaddress.IPv4Address):
            remote_ip = ipaddress.IPv6Address(f"::ffff:{server_ip}")
        wanted = (f" {_written(local_ip, client[1], byteorder)} "
                  f"{_written(remote_ip, server[1], byteorder)} ")
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
    does; macOS and Windows have no /proc/net)."""
    import os

    if not hasattr(os, "getuid"):
        return False
    try:
        with (proc_net / ("tcp6" if ":" in host else "tcp")).open("rb") as listed:
            listed.readline()
    except OSError:
        return False
    return True
