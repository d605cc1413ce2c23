"""Control records: building and reading the control batches KRaft writes.

Public API (stable; used by the core and storage):
- :class:`ControlRecordType` — the control record type ids.
- ``build_control_batch(entries, *, base_offset, partition_leader_epoch, timestamp) -> bytes`` where
  ``entries`` is a sequence of ``(type, generated data object)``.
- ``decode_control_records(batch) -> list[(ControlRecordType, object)]`` for a decoded control batch.
- ``control_key(type)`` / ``parse_control_key(key)`` for the 4-byte key.

Contracts (PROTOCOL-FACTS §3.1; Kafka ControlRecordType, ControlRecordUtils, LeaderState):
1. Key = int16 key version (0) + int16 type. A key shorter than 4 bytes or with a negative version is
   corrupt; a version above 0 is read as version 0 (Kafka logs and parses it as its newest known version).
2. Values are the generated data classes encoded at version 0 — LeaderChange (2) → LeaderChangeMessage (even
   though v1 exists, the log holds v0: no VoterDirectoryId on disk), SnapshotHeader (3) →
   SnapshotHeaderRecord, SnapshotFooter (4) → SnapshotFooterRecord, KRaftVersion (5) → KRaftVersionRecord,
   Voters (6) → VotersRecord. Abort (0) / Commit (1) carry an EndTransactionMarker (int16 version, int32
   coordinator epoch), decoded here to :class:`EndTransactionMarker`.
3. A control batch is: control attribute set, not transactional, producer id -1, producer epoch -1, base
   sequence -1, CreateTime, every record at the batch timestamp with offset deltas 0..n-1, and the partition
   leader epoch as given (the KRaft leader's epoch).
4. Reading skips records of unknown control types (not fatal) and refuses a record whose key is missing or
   malformed, or whose value does not decode, with CorruptRecordError.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from generated.kraft_version_record import KRaftVersionRecord
from generated.leader_change_message import LeaderChangeMessage
from generated.snapshot_footer_record import SnapshotFooterRecord
from generated.snapshot_header_record import SnapshotHeaderRecord
from generated.voters_record import VotersRecord
from kwire.errors import CorruptRecordError, LocalProtocolError, MessageDecodeError, MessageEncodeError
from kwire.records import Record, RecordBatch, build_batch

CONTROL_KEY_VERSION = 0
VALUE_VERSION = 0
_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


class ControlRecordType(IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """Value of ABORT/COMMIT control records."""

    version: int = 0
    coordinator_epoch: int = 0

    def encode(self, version: int = 0) -> bytes:
        return _MARKER.pack(self.version, self.coordinator_epoch)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, version: int = 0) -> EndTransactionMarker:
        if len(data) < _MARKER.size:
            raise MessageDecodeError("end transaction marker is truncated")
        v, epoch = _MARKER.unpack_from(data, 0)
        return cls(v, epoch)


VALUE_CLASSES: dict[ControlRecordType, Any] = {
    ControlRecordType.ABORT: EndTransactionMarker,
    ControlRecordType.COMMIT: EndTransactionMarker,
    ControlRecordType.LEADER_CHANGE: LeaderChangeMessage,
    ControlRecordType.SNAPSHOT_HEADER: SnapshotHeaderRecord,
    ControlRecordType.SNAPSHOT_FOOTER: SnapshotFooterRecord,
    ControlRecordType.KRAFT_VERSION: KRaftVersionRecord,
    ControlRecordType.KRAFT_VOTERS: VotersRecord,
}


def control_key(kind: int) -> bytes:
    return _KEY.pack(CONTROL_KEY_VERSION, kind)


def parse_control_key(key: bytes | None) -> int:
    """The control type id in ``key`` (may be one this module does not know)."""
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError("control record key is missing or shorter than 4 bytes")
    version, kind = _KEY.unpack_from(key, 0)
    if version < 0:
        raise CorruptRecordError(f"control record key has negative version {version}")
    return int(kind)


def encode_control_value(kind: ControlRecordType, message: Any) -> bytes:
    cls = VALUE_CLASSES.get(kind)
    if cls is None or not isinstance(message, cls):
        raise LocalProtocolError(f"control type {kind!r} needs a {getattr(cls, '__name__', '?')} value")
    value: bytes = message.encode(VALUE_VERSION)
    return value


def build_control_batch(
    entries: Sequence[tuple[ControlRecordType, Any]],
    *,
    base_offset: int,
    partition_leader_epoch: int,
    timestamp: int,
) -> bytes:
    """One control batch holding ``entries`` in order (see contract 3)."""
    if not entries:
        raise LocalProtocolError("a control batch needs at least one record")
    try:
        records = [
            Record(i, 0, control_key(kind), encode_control_value(ControlRecordType(kind), msg))
            for i, (kind, msg) in enumerate(entries)
        ]
    except (MessageEncodeError, ValueError) as exc:
        raise LocalProtocolError(f"cannot encode control record: {exc}") from None
    return build_batch(
        records,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        is_control=True,
    )


def decode_control_record(record: Record) -> tuple[ControlRecordType, Any] | None:
    """Decode one control record; None for an unknown control type."""
    kind = parse_control_key(record.key)
    try:
        known = ControlRecordType(kind)
    except ValueError:
        return None
    if record.value is None:
        raise CorruptRecordError(f"control record of type {known.name} has a null value")
    try:
        return known, VALUE_CLASSES[known].decode(record.value, VALUE_VERSION)
    except MessageDecodeError as exc:
        raise CorruptRecordError(f"control record of type {known.name} does not decode: {exc}") from None


def decode_control_records(batch: RecordBatch) -> list[tuple[ControlRecordType, Any]]:
    """Every known control record of a control batch, in offset order (unknown types skipped)."""
    if not batch.is_control:
        raise LocalProtocolError(f"batch at offset {batch.base_offset} is not a control batch")
    out: list[tuple[ControlRecordType, Any]] = []
    for record in batch.records:
        decoded = decode_control_record(record)
        if decoded is not None:
            out.append(decoded)
    return out
