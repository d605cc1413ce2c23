"""The few record-batch (v2) facts the log needs, kept in one place.

This is the single adapter between storage and the batch format: the header peek is a plain struct read, the
structural and CRC-32C checks are kwire.records'.

Batch header offsets (Kafka record batch v2): baseOffset int64 @0, length int32 @8 (bytes after the length
field), partitionLeaderEpoch int32 @12, magic int8 @16, crc uint32 @17, attributes int16 @21,
lastOffsetDelta int32 @23; the header is 61 bytes; the CRC-32C covers attributes (@21) to the end of the batch.

Contracts:
1. :func:`peek` reads the header of the batch at ``pos`` without trusting it: it returns None when fewer than
   ``LOG_OVERHEAD`` bytes remain, and the caller must call :func:`check` before using the batch.
2. :func:`check` returns None for a structurally sound batch with a matching CRC, else a reason string.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kwire import records as kwire_records
from kwire.errors import CorruptRecordError

LOG_OVERHEAD = 12  # baseOffset + length
HEADER_SIZE = 61
MIN_LENGTH = HEADER_SIZE - LOG_OVERHEAD
CONTROL_FLAG = 0x20

_HEAD = struct.Struct(">qiibIhi")


class BatchHeader(NamedTuple):
    base_offset: int
    length: int
    epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies in a buffer (length field included)."""
        return LOG_OVERHEAD + self.length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)


def peek(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader | None:
    if len(buf) - pos < HEADER_SIZE:
        if len(buf) - pos >= LOG_OVERHEAD:
            base, length = struct.unpack_from(">qi", buf, pos)
            return BatchHeader(base, length, -1, -1, 0, 0, 0)
        return None
    return BatchHeader(*_HEAD.unpack_from(buf, pos))


def check(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> str | None:
    if header.length < MIN_LENGTH:
        return f"batch length {header.length} is below the minimum {MIN_LENGTH}"
    if pos + header.size > len(buf):
        return f"batch claims {header.size} bytes but only {len(buf) - pos} remain (torn write)"
    if header.last_offset_delta < 0:
        return f"negative last offset delta {header.last_offset_delta}"
    try:
        verified = kwire_records.peek_batch(buf, pos, verify_crc=True)
    except CorruptRecordError as exc:
        return str(exc)
    if not verified.crc_ok:
        return f"CRC mismatch (stored {header.crc:#010x})"
    return None


def with_base_offset(batch: bytes, base_offset: int) -> bytes:
    """The same batch re-addressed (baseOffset is outside the CRC)."""
    return struct.pack(">q", base_offset) + batch[8:]
