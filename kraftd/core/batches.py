"""The one place the core builds and splits record batch v2 bytes (delegates to kwire when it exists).

Invariants:
1. Data batches hold the caller's values as record values (null keys), offsets base..base+n-1.
2. The leader's epoch-start batch is a control batch holding one LeaderChange record
   (LeaderChangeMessage at schema version 0, Kafka's on-disk convention).
3. ``split_batches`` reads only batch headers; corrupt framing raises ``CorruptRecordError``.
"""

from __future__ import annotations

import struct

import crc32c

from kraftd.core.log import LogBatch
from kwire.errors import CorruptRecordError

_HEADER = struct.Struct(">qiibIhi")  # base offset, length, leader epoch, magic, crc, attributes, last delta
_CONTROL = 0x20


def _uvarint(v: int, out: bytearray) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _varint(v: int, out: bytearray) -> None:
    _uvarint((v << 1) ^ (v >> 63), out)


def _record(offset_delta: int, key: bytes | None, value: bytes) -> bytes:
    body = bytearray(b"\x00")  # attributes
    _varint(0, body)  # timestamp delta
    _varint(offset_delta, body)
    if key is None:
        _varint(-1, body)
    else:
        _varint(len(key), body)
        body += key
    _varint(len(value), body)
    body += value
    _varint(0, body)  # headers
    out = bytearray()
    _varint(len(body), out)
    return bytes(out + body)


def _batch(base_offset: int, epoch: int, records: list[bytes], control: bool, timestamp_ms: int) -> bytes:
    attributes = _CONTROL if control else 0
    after_crc = struct.pack(
        ">hiqqqhii", attributes, len(records) - 1, timestamp_ms, timestamp_ms, -1, -1, -1, len(records)
    ) + b"".join(records)
    crc = crc32c.crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", base_offset, length, epoch, 2, crc) + after_crc


def data_batch(base_offset: int, epoch: int, values: list[bytes], timestamp_ms: int) -> LogBatch:
    recs = [_record(i, None, v) for i, v in enumerate(values)]
    data = _batch(base_offset, epoch, recs, False, timestamp_ms)
    return LogBatch(base_offset, base_offset + len(values) - 1, epoch, data, False)


def leader_change_batch(
    base_offset: int, epoch: int, leader_id: int, voters: list[int], granting: list[int], timestamp_ms: int
) -> LogBatch:
    value = bytearray(struct.pack(">hi", 0, leader_id))
    for group in (voters, granting):
        _uvarint(len(group) + 1, value)
        for v in group:
            value += struct.pack(">i", v) + b"\x00"
    value += b"\x00"
    key = struct.pack(">hh", 0, 2)  # control record key: version 0, type LEADER_CHANGE
    data = _batch(base_offset, epoch, [_record(0, key, bytes(value))], True, timestamp_ms)
    return LogBatch(base_offset, base_offset, epoch, data, True)


def split_batches(data: bytes) -> list[LogBatch]:
    out: list[LogBatch] = []
    pos = 0
    n = len(data)
    while pos + 12 <= n:
        if pos + _HEADER.size > n:
            raise CorruptRecordError("truncated batch header")
        base, length, epoch, magic, _crc, attrs, last_delta = _HEADER.unpack_from(data, pos)
        end = pos + 12 + length
        if magic != 2 or length < 49 or end > n or last_delta < 0:
            raise CorruptRecordError(f"bad batch at byte {pos}")
        out.append(LogBatch(base, base + last_delta, epoch, bytes(data[pos:end]), bool(attrs & _CONTROL)))
        pos = end
    return out
