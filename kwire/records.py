"""Kafka record batch v2 (magic 2): build, decode, and a cheap header peek.

Public API (stable; used by the core and storage layers):
- :class:`Record` — one record: ``offset_delta``, ``timestamp_delta``, ``key``, ``value``, ``headers``.
- :class:`RecordBatch` — a decoded batch (every header field plus its records).
- :func:`build_batch` / :func:`build_data_batch` — encode a batch to bytes.
- :func:`decode_batch` — decode exactly one batch (CRC verified).
- :class:`BatchHeader` / :func:`peek_batch` — the 61-byte header without touching the records.
- Iteration over many batches lives in :mod:`kwire.batches` (``iter_batches``, ``scan_batches``).

Contracts (PROTOCOL-FACTS §5, Kafka DefaultRecordBatch / DefaultRecord):
1. Header layout, big-endian: BaseOffset int64 @0, Length int32 @8 (bytes after this field), PartitionLeaderEpoch
   int32 @12, Magic int8 @16 (= 2), CRC uint32 @17, Attributes int16 @21, LastOffsetDelta int32 @23,
   BaseTimestamp int64 @27, MaxTimestamp int64 @35, ProducerId int64 @43, ProducerEpoch int16 @51,
   BaseSequence int32 @53, RecordsCount int32 @57, records @61.
2. The CRC is CRC-32C over Attributes..end; BaseOffset, Length, PartitionLeaderEpoch and Magic are outside it
   (the leader epoch is rewritten on append). Decoding verifies it: mismatch → CorruptRecordError naming the
   base offset.
3. Attributes: bits 0-2 compression, bit 3 timestamp type (1 = LogAppendTime), bit 4 transactional, bit 5
   control, bit 6 delete-horizon. Compression covers the whole records section (everything after @61).
4. Records inside the section: see :mod:`kwire.record_codec` (Record is re-exported here).
5. Decoding never trusts a length (header Length, record count, record lengths); any violation is a
   CorruptRecordError and no other exception type escapes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar

from crc32c import crc32c

from kwire.compression import Compression, codec, compress, decompress
from kwire.errors import CorruptRecordError, KraftError, LocalProtocolError
from kwire.record_codec import (
    Header,
    Record,
    decode_records,
    encode_records,
    encode_values,
    record_values,
)

_T = TypeVar("_T")

Buffer = bytes | bytearray | memoryview

MAGIC = 2
HEADER_SIZE = 61  # RECORD_BATCH_OVERHEAD
LOG_OVERHEAD = 12  # BaseOffset + Length
CRC_START = 21
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

ATTR_COMPRESSION_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

_HEADER = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qiib")
_CRC = struct.Struct(">I")
_CRC_PART = struct.Struct(">hiqqqhii")


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A decoded v2 batch. ``records`` holds the decoded records in order."""

    base_offset: int
    partition_leader_epoch: int
    compression: Compression
    is_control: bool
    is_transactional: bool
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: tuple[Record, ...]
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    has_delete_horizon: bool = False
    crc: int = 0
    size_in_bytes: int = 0

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    def offset_of(self, record: Record) -> int:
        return self.base_offset + record.offset_delta

    def timestamp_of(self, record: Record) -> int:
        if self.timestamp_type is TimestampType.LOG_APPEND_TIME:
            return self.max_timestamp
        return self.base_timestamp + record.timestamp_delta


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed 61-byte header of a batch found at ``position`` in some buffer.

    ``size`` is the whole batch in bytes (Length + 12). ``crc_ok`` is None when the CRC was not checked."""

    position: int
    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    crc_ok: bool | None

    @property
    def size(self) -> int:
        return self.length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> Compression:
        return codec(self.attributes & ATTR_COMPRESSION_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)


# ---------------------------------------------------------------- encoding


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    base_timestamp: int = 0,
    max_timestamp: int | None = None,
    compression: Compression = Compression.NONE,
    is_control: bool = False,
    is_transactional: bool = False,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    last_offset_delta: int | None = None,
    delete_horizon: bool = False,
) -> bytes:
    """Encode one v2 batch. ``max_timestamp`` defaults to base_timestamp + the largest timestamp delta;
    ``last_offset_delta`` defaults to the largest record offset delta (it must be given for an empty batch)."""
    if last_offset_delta is None:
        if not records:
            raise LocalProtocolError("an empty batch needs an explicit last_offset_delta")
        last_offset_delta = max(r.offset_delta for r in records)
    if max_timestamp is None:
        max_timestamp = base_timestamp + (max(r.timestamp_delta for r in records) if records else 0)
    attributes = (
        int(compression)
        | (ATTR_LOG_APPEND_TIME if timestamp_type == TimestampType.LOG_APPEND_TIME else 0)
        | (ATTR_TRANSACTIONAL if is_transactional else 0)
        | (ATTR_CONTROL if is_control else 0)
        | (ATTR_DELETE_HORIZON if delete_horizon else 0)
    )
    parts: list[bytes] = []
    try:
        encode_records(parts, records)
    except TypeError as exc:
        raise LocalProtocolError(f"record keys/values must be bytes or None: {exc}") from None
    fields = (attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch)
    return _assemble(
        base_offset, partition_leader_epoch, fields, base_sequence, len(records), parts, compression
    )


def build_data_batch(
    values: Sequence[bytes],
    *,
    base_offset: int,
    partition_leader_epoch: int,
    timestamp: int,
    compression: Compression = Compression.NONE,
) -> bytes:
    """A data batch as the KRaft leader writes it: one record per value (offset deltas 0..n-1), null keys,
    no headers, every record at ``timestamp`` (CreateTime), no producer state. ``values`` must be non-empty."""
    if not values:
        raise LocalProtocolError("a data batch needs at least one record")
    parts: list[bytes] = []
    try:
        encode_values(parts, values)
    except TypeError as exc:
        raise LocalProtocolError(f"record values must be bytes: {exc}") from None
    fields = (int(compression), len(values) - 1, timestamp, timestamp, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    return _assemble(
        base_offset, partition_leader_epoch, fields, NO_SEQUENCE, len(values), parts, compression
    )


def _assemble(
    base_offset: int,
    epoch: int,
    fields: tuple[int, int, int, int, int, int],
    base_sequence: int,
    count: int,
    parts: list[bytes],
    compression: Compression,
) -> bytes:
    try:
        head = _CRC_PART.pack(*fields, base_sequence, count)
        if compression is Compression.NONE:
            body = b"".join([head, *parts])
        else:
            body = head + compress(compression, b"".join(parts))
        prefix = _PREFIX.pack(base_offset, len(body) + 9, epoch, MAGIC)
    except struct.error as exc:
        raise LocalProtocolError(f"batch header field out of range: {exc}") from None
    except TypeError as exc:
        raise LocalProtocolError(f"record keys/values must be bytes or None: {exc}") from None
    return b"".join((prefix, _CRC.pack(crc32c(body)), body))


# ---------------------------------------------------------------- decoding


def peek_batch(buf: Buffer, position: int = 0, *, verify_crc: bool = False) -> BatchHeader:
    """Parse the 61-byte header of the batch at ``position``. Raises CorruptRecordError when fewer than 61
    bytes remain, the magic is not 2, or Length is below the minimum. With ``verify_crc`` the whole batch must
    be present and ``crc_ok`` reports the check (no exception for a mismatch)."""
    if len(buf) - position < HEADER_SIZE:
        raise CorruptRecordError(f"batch header at byte {position} is truncated")
    f = _HEADER.unpack_from(buf, position)
    base_offset, length, magic = f[0], f[1], f[3]
    if magic != MAGIC:
        raise CorruptRecordError(f"batch at offset {base_offset}: unsupported magic {magic}")
    if length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(f"batch at offset {base_offset}: length {length} below the header size")
    crc_ok: bool | None = None
    if verify_crc:
        end = position + LOG_OVERHEAD + length
        if end > len(buf):
            raise CorruptRecordError(f"batch at offset {base_offset} is truncated")
        view = memoryview(buf)[position + CRC_START : end]
        crc_ok = crc32c(view) == f[4]
    return BatchHeader(
        position, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12], crc_ok
    )


def decode_batch(buf: Buffer, *, verify_crc: bool = True, max_decompressed: int | None = None) -> RecordBatch:
    """Decode a buffer holding exactly one batch (bytes beyond its Length are an error)."""
    hdr = peek_batch(buf, 0)
    if hdr.size != len(buf):
        raise CorruptRecordError(
            f"batch at offset {hdr.base_offset}: Length says {hdr.size} bytes, buffer holds {len(buf)}"
        )
    return decode_at(buf, hdr, verify_crc=verify_crc, max_decompressed=max_decompressed)


def decode_at(
    buf: Buffer, hdr: BatchHeader, *, verify_crc: bool = True, max_decompressed: int | None = None
) -> RecordBatch:
    """Decode the batch whose header :func:`peek_batch` returned (``buf`` may hold more batches)."""
    kind, records = _records_at(buf, hdr, verify_crc, max_decompressed, decode_records)
    attrs = hdr.attributes
    return RecordBatch(
        hdr.base_offset,
        hdr.partition_leader_epoch,
        kind,
        bool(attrs & ATTR_CONTROL),
        bool(attrs & ATTR_TRANSACTIONAL),
        hdr.last_offset_delta,
        hdr.base_timestamp,
        hdr.max_timestamp,
        hdr.producer_id,
        hdr.producer_epoch,
        hdr.base_sequence,
        records,
        TimestampType.LOG_APPEND_TIME if attrs & ATTR_LOG_APPEND_TIME else TimestampType.CREATE_TIME,
        bool(attrs & ATTR_DELETE_HORIZON),
        hdr.crc,
        hdr.size,
    )


def framed_values(buf: Buffer, first_byte: int) -> tuple[BatchHeader, list[tuple[int, bytes]]]:
    """The batch in ``buf`` (exactly one, CRC not checked) as its header and the (offset, value) of each record
    whose value starts with ``first_byte``, in order; the records section is checked as :func:`decode_batch`
    checks it, with the same errors."""
    hdr = peek_batch(buf, 0)
    if hdr.size != len(buf):
        raise CorruptRecordError(
            f"batch at offset {hdr.base_offset}: Length says {hdr.size} bytes, buffer holds {len(buf)}"
        )

    def values(data: bytes, count: int) -> list[tuple[int, bytes]]:
        return [(hdr.base_offset + d, v) for d, v in record_values(data, count, first_byte)]

    return hdr, _records_at(buf, hdr, False, None, values)[1]


def _records_at(
    buf: Buffer,
    hdr: BatchHeader,
    verify_crc: bool,
    max_decompressed: int | None,
    decode: Callable[[bytes, int], _T],
) -> tuple[Compression, _T]:
    start, end = hdr.position, hdr.position + hdr.size
    if end > len(buf):
        raise CorruptRecordError(f"batch at offset {hdr.base_offset} is truncated")
    view = memoryview(buf)[start:end]
    if verify_crc and crc32c(view[CRC_START:]) != hdr.crc:
        raise CorruptRecordError(f"batch at offset {hdr.base_offset}: CRC-32C mismatch")
    try:
        kind = codec(hdr.attributes & ATTR_COMPRESSION_MASK)
        if kind is Compression.NONE:
            data = bytes(view[HEADER_SIZE:])
        else:
            limit = max_decompressed if max_decompressed is not None else 256 * 1024 * 1024
            data = decompress(kind, view[HEADER_SIZE:], limit)
        return kind, decode(data, hdr.records_count)
    except KraftError as exc:
        if isinstance(exc, CorruptRecordError):
            raise CorruptRecordError(f"batch at offset {hdr.base_offset}: {exc}") from None
        raise


__all__ = [
    "BatchHeader",
    "Header",
    "Record",
    "RecordBatch",
    "TimestampType",
    "build_batch",
    "build_data_batch",
    "decode_at",
    "decode_batch",
    "framed_values",
    "peek_batch",
]
