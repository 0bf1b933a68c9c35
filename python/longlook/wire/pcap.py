"""Writing UDP datagrams as a classic pcap of raw IP packets (LINKTYPE_RAW), for tshark to
read again once GSO super-datagrams are split (gso.py). Timestamps keep nanoseconds; the
IP header keeps the original DS field / traffic class, so the ECN codepoint survives.
Checksums are left out (UDP) or computed (IPv4 header): tshark checks neither by default."""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

LINKTYPE_RAW = 101
MAGIC_NS = 0xA1B23C4D  # a pcap with nanosecond timestamps
SNAPLEN = 262_144


@dataclass(frozen=True)
class RawDatagram:
    """What it takes to write a datagram again: tshark's view of its headers, and its payload."""

    seconds: int
    nanos: int
    src: str
    dst: str
    tos: int  # IPv4 DS field / IPv6 traffic class: DSCP and ECN
    sport: int
    dport: int
    payload: bytes


def _checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ip_packet(d: RawDatagram) -> bytes:
    udp = struct.pack("!HHHH", d.sport, d.dport, 8 + len(d.payload), 0) + d.payload
    src, dst = ipaddress.ip_address(d.src), ipaddress.ip_address(d.dst)
    if src.version == 6:
        first = (6 << 28) | (d.tos << 20)
        return struct.pack("!IHBB", first, len(udp), 17, 64) + src.packed + dst.packed + udp
    header = struct.pack("!BBHHHBBH4s4s", 0x45, d.tos, 20 + len(udp), 0, 0x4000, 64, 17, 0, src.packed, dst.packed)
    return header[:10] + struct.pack("!H", _checksum(header)) + header[12:] + udp


def write(path: Path, datagrams: Iterable[RawDatagram]) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", MAGIC_NS, 2, 4, 0, 0, SNAPLEN, LINKTYPE_RAW))
        for d in datagrams:
            pkt = ip_packet(d)
            f.write(struct.pack("<IIII", d.seconds, d.nanos, len(pkt), len(pkt)) + pkt)
