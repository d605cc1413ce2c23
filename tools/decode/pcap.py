"""A small pcap / pcapng reader (and pcap writer) for TCP over IPv4/IPv6.

Contracts:
1. :func:`read_packets` yields every TCP segment of a classic pcap (either byte order, micro- or nanosecond
   timestamps) or pcapng file (Section Header, Interface Description, Enhanced and Simple Packet blocks; other
   blocks are skipped by their length) whose link type is Ethernet (1), BSD loopback (0, 108), raw IP (101,
   12), Linux cooked v1 (113) or v2 (276). Non-TCP packets are skipped.
2. A file that is neither format raises :class:`PcapError`; a truncated final record ends the iteration (a
   capture cut by Ctrl-C is still readable up to there).
3. :class:`PcapWriter` writes a classic little-endian microsecond pcap with Ethernet/IPv4/TCP framing around
   the payloads it is given (used to record traffic through a proxy and in tests).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

PCAP_MAGIC_US, PCAP_MAGIC_NS = 0xA1B2C3D4, 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A
LINK_NULL, LINK_ETHERNET, LINK_RAW, LINK_RAW_ALT, LINK_LOOP, LINK_SLL, LINK_SLL2 = (
    0,
    1,
    101,
    12,
    108,
    113,
    276,
)
TCP_SYN, TCP_FIN, TCP_RST, TCP_ACK, TCP_PSH = 0x02, 0x01, 0x04, 0x10, 0x08


class PcapError(Exception):
    """The file is not a capture this reader understands."""


@dataclass(frozen=True, slots=True)
class Segment:
    ts: float
    src: tuple[str, int]
    dst: tuple[str, int]
    seq: int
    flags: int
    payload: bytes


def _ip_str(raw: bytes) -> str:
    if len(raw) == 4:
        return ".".join(str(b) for b in raw)
    groups = [f"{raw[i] << 8 | raw[i + 1]:x}" for i in range(0, 16, 2)]
    return ":".join(groups)


def _tcp(ts: float, packet: bytes) -> Segment | None:
    """An IPv4/IPv6 packet → its TCP segment, or None."""
    if not packet:
        return None
    version = packet[0] >> 4
    if version == 4 and len(packet) >= 20:
        ihl = (packet[0] & 0x0F) * 4
        total = struct.unpack_from(">H", packet, 2)[0]
        if packet[9] != 6:
            return None
        src, dst = _ip_str(packet[12:16]), _ip_str(packet[16:20])
        body = packet[ihl : total if total >= ihl else len(packet)]
    elif version == 6 and len(packet) >= 40:
        if packet[6] != 6:  # extension headers are not followed
            return None
        length = struct.unpack_from(">H", packet, 4)[0]
        src, dst = _ip_str(packet[8:24]), _ip_str(packet[24:40])
        body = packet[40 : 40 + length]
    else:
        return None
    if len(body) < 20:
        return None
    sport, dport, seq = struct.unpack_from(">HHI", body, 0)
    offset = (body[12] >> 4) * 4
    flags = body[13]
    return Segment(ts, (src, sport), (dst, dport), seq, flags, bytes(body[offset:]))


def _link(linktype: int, frame: bytes) -> bytes | None:
    """Strip the link-layer header; None for non-IP frames."""
    if linktype == LINK_ETHERNET:
        pos, ethertype = 14, struct.unpack_from(">H", frame, 12)[0] if len(frame) >= 14 else 0
        while ethertype in (0x8100, 0x88A8) and len(frame) >= pos + 4:
            ethertype = struct.unpack_from(">H", frame, pos + 2)[0]
            pos += 4
        return frame[pos:] if ethertype in (0x0800, 0x86DD) else None
    if linktype in (LINK_NULL, LINK_LOOP):
        return frame[4:]
    if linktype in (LINK_RAW, LINK_RAW_ALT):
        return frame
    if linktype == LINK_SLL:
        return (
            frame[16:]
            if len(frame) >= 16 and struct.unpack_from(">H", frame, 14)[0] in (0x0800, 0x86DD)
            else None
        )
    if linktype == LINK_SLL2:
        return (
            frame[20:]
            if len(frame) >= 20 and struct.unpack_from(">H", frame, 0)[0] in (0x0800, 0x86DD)
            else None
        )
    return None


def _read_pcap(f: BinaryIO, head: bytes) -> Iterator[tuple[int, float, bytes]]:
    magic_le = struct.unpack("<I", head[:4])[0]
    if magic_le in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        order = "<"
    else:
        order = ">"
    magic = struct.unpack(order + "I", head[:4])[0]
    scale = 1e-9 if magic == PCAP_MAGIC_NS else 1e-6
    rest = f.read(20)
    if len(rest) < 20:
        return
    linktype = struct.unpack(order + "I", rest[16:20])[0] & 0x0FFFFFFF
    rec = struct.Struct(order + "IIII")
    while True:
        hdr = f.read(16)
        if len(hdr) < 16:
            return
        sec, frac, incl, _ = rec.unpack(hdr)
        data = f.read(incl)
        if len(data) < incl:
            return
        yield linktype, sec + frac * scale, data


def _read_pcapng(f: BinaryIO, head: bytes) -> Iterator[tuple[int, float, bytes]]:
    order = "<"
    interfaces: list[tuple[int, float]] = []  # (linktype, seconds per timestamp unit)
    block = head
    while True:
        if len(block) < 8:
            return
        btype = struct.unpack(order + "I", block[:4])[0]
        if btype == PCAPNG_SHB:
            bom = block[8:12] if len(block) >= 12 else f.read(4)
            order = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
            total = struct.unpack(order + "I", block[4:8])[0]
            body = (block[8:12] if len(block) >= 12 else bom) + f.read(total - 12)
            interfaces = []
        else:
            total = struct.unpack(order + "I", block[4:8])[0]
            if total < 12:
                return
            body = f.read(total - 8)
            if len(body) < total - 8:
                return
        btype = struct.unpack(order + "I", block[:4])[0]
        if btype == 1:  # Interface Description
            linktype = struct.unpack_from(order + "H", body, 0)[0]
            interfaces.append((linktype, _if_tsresol(body[8:-4], order)))
        elif btype == 6 and len(body) >= 20:  # Enhanced Packet
            iface, hi, lo, cap, _ = struct.unpack_from(order + "IIIII", body, 0)
            if iface < len(interfaces):
                linktype, unit = interfaces[iface]
                yield linktype, ((hi << 32) | lo) * unit, body[20 : 20 + cap]
        elif btype == 3 and interfaces:  # Simple Packet
            orig = struct.unpack_from(order + "I", body, 0)[0]
            yield interfaces[0][0], 0.0, body[4 : 4 + min(orig, len(body) - 8)]
        block = f.read(8)


def _if_tsresol(options: bytes, order: str) -> float:
    pos = 0
    while pos + 4 <= len(options):
        code, length = struct.unpack_from(order + "HH", options, pos)
        if code == 0:
            break
        if code == 9 and length >= 1:
            v = options[pos + 4]
            return float(2 ** -(v & 0x7F)) if v & 0x80 else float(10**-v)
        pos += 4 + ((length + 3) & ~3)
    return 1e-6


def read_packets(path: Path) -> Iterator[Segment]:
    """Contract 1."""
    with path.open("rb") as f:
        head = f.read(4)
        if len(head) < 4:
            raise PcapError(f"{path}: too short for a capture")
        le, be = struct.unpack("<I", head)[0], struct.unpack(">I", head)[0]
        if le in (PCAP_MAGIC_US, PCAP_MAGIC_NS) or be in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
            frames = _read_pcap(f, head)
        elif le == PCAPNG_SHB:
            frames = _read_pcapng(f, head + f.read(4))
        else:
            raise PcapError(f"{path}: not a pcap or pcapng file (magic {head.hex()})")
        for linktype, ts, frame in frames:
            packet = _link(linktype, frame)
            if packet is None:
                continue
            seg = _tcp(ts, packet)
            if seg is not None:
                yield seg


class PcapWriter:
    """Contract 3."""

    def __init__(self, path: Path) -> None:
        self._f = path.open("wb")
        self._f.write(struct.pack("<IHHiIII", PCAP_MAGIC_US, 2, 4, 0, 0, 262144, LINK_ETHERNET))

    def write(
        self,
        ts: float,
        src: tuple[str, int],
        dst: tuple[str, int],
        seq: int,
        payload: bytes,
        flags: int = TCP_ACK | TCP_PSH,
    ) -> None:
        tcp = (
            struct.pack(">HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, 0, 5 << 4, flags, 65535, 0, 0)
            + payload
        )
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, _ip4(src[0]), _ip4(dst[0]))
        frame = b"\x00" * 12 + b"\x08\x00" + ip + tcp
        sec = int(ts)
        self._f.write(struct.pack("<IIII", sec, int((ts - sec) * 1e6), len(frame), len(frame)) + frame)

    def close(self) -> None:
        self._f.close()


def _ip4(text: str) -> bytes:
    return bytes(int(x) for x in text.split("."))
