"""The one place the core builds and splits record batch v2 bytes (over kwire.records / kwire.control).

Invariants:
1. Data batches hold the caller's values as record values (null keys), offsets base..base+n-1, CreateTime.
2. The leader's epoch-start batch is a control batch holding one LeaderChange record
   (LeaderChangeMessage at schema version 0, Kafka's on-disk convention; kwire.control writes it), followed
   by KRaftVersion and Voters records when the voter set came from the bootstrap checkpoint (KIP-853).
3. ``split_batches`` reads batch headers and verifies each CRC; bad framing or a CRC mismatch raises
   ``CorruptRecordError`` and nothing is appended.
"""

from __future__ import annotations

from typing import Any

from generated.leader_change_message import LeaderChangeMessage, Voter
from kraftd.core.log import LogBatch
from kraftd.core.types import VoterSet
from kraftd.core.voters import kraft_version_record, voters_record
from kwire.control import ControlRecordType, build_control_batch
from kwire.errors import CorruptRecordError
from kwire.records import build_data_batch, peek_batch


def data_batch(base_offset: int, epoch: int, values: list[bytes], timestamp_ms: int) -> LogBatch:
    data = build_data_batch(
        values, base_offset=base_offset, partition_leader_epoch=epoch, timestamp=timestamp_ms
    )
    return LogBatch(base_offset, base_offset + len(values) - 1, epoch, data, False)


def leader_change_batch(
    base_offset: int,
    epoch: int,
    leader_id: int,
    voters: list[int],
    granting: list[int],
    timestamp_ms: int,
    bootstrap: tuple[int, VoterSet] | None = None,
) -> LogBatch:
    """Invariant 2; with ``bootstrap`` = (kraft.version, voter set) the same batch also carries KRaftVersion
    and Voters records, as a KIP-853 leader writes them when its voter set came from the bootstrap
    checkpoint rather than the log (so the set is replicated)."""
    msg = LeaderChangeMessage(
        version=0,
        leader_id=leader_id,
        voters=[Voter(voter_id=v) for v in voters],
        granting_voters=[Voter(voter_id=v) for v in granting],
    )
    entries: list[tuple[ControlRecordType, Any]] = [(ControlRecordType.LEADER_CHANGE, msg)]
    if bootstrap is not None:
        version, voter_set = bootstrap
        entries.append((ControlRecordType.KRAFT_VERSION, kraft_version_record(version)))
        entries.append((ControlRecordType.KRAFT_VOTERS, voters_record(voter_set)))
    data = build_control_batch(
        entries, base_offset=base_offset, partition_leader_epoch=epoch, timestamp=timestamp_ms
    )
    return LogBatch(base_offset, base_offset + len(entries) - 1, epoch, data, True)


def control_batch(
    base_offset: int, epoch: int, entries: list[tuple[ControlRecordType, Any]], timestamp_ms: int
) -> LogBatch:
    data = build_control_batch(
        entries, base_offset=base_offset, partition_leader_epoch=epoch, timestamp=timestamp_ms
    )
    return LogBatch(base_offset, base_offset + len(entries) - 1, epoch, data, True)


def split_batches(data: bytes) -> list[LogBatch]:
    out: list[LogBatch] = []
    pos = 0
    while pos < len(data):
        h = peek_batch(data, pos, verify_crc=True)
        if not h.crc_ok or h.last_offset_delta < 0:
            raise CorruptRecordError(f"batch at offset {h.base_offset} failed its checks")
        end = pos + h.size
        out.append(
            LogBatch(h.base_offset, h.last_offset, h.partition_leader_epoch, data[pos:end], h.is_control)
        )
        pos = end
    return out
