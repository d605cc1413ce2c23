"""Snapshots (KIP-630 as shipped): the bytes of a ``<end offset>-<epoch>.checkpoint`` and how the core reads them.

Layout of a snapshot (what Kafka's snapshot writer produces; offsets start at 0, every batch carries the
snapshot's epoch):
1. one control batch: SnapshotHeader, then KRaftVersion and Voters when kraft.version >= 1;
2. the state machine's records, in data batches of at most ``max_batch_bytes`` of values;
3. one control batch: SnapshotFooter.

Invariants:
1. A snapshot id (end offset, epoch) names a committed offset of the log: every record below the end offset
   is reflected in the snapshot, none at or above it; the epoch is the epoch of the record at end - 1.
2. :func:`read_snapshot` accepts only a complete snapshot: CRC-valid batches, the header first and the footer
   last; anything else raises CorruptRecordError (a partial FetchSnapshot transfer is never loaded).
3. A :class:`Snapshot` holds its bytes once (issue 24: 130 MB at 1M partitions): its data batches are cut from
   ``data`` when asked for (:attr:`Snapshot.batches`), not kept beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

from generated.kraft_version_record import KRaftVersionRecord
from generated.snapshot_footer_record import SnapshotFooterRecord
from generated.snapshot_header_record import SnapshotHeaderRecord
from generated.voters_record import VotersRecord
from kraftd.core.batches import control_batch, data_batch, split_batches
from kraftd.core.log import LogBatch, OffsetAndEpoch, ReplicatedLog
from kraftd.core.types import VoterSet
from kraftd.core.voters import control_entries, kraft_version_record, voter_set_of, voters_record
from kwire.control import ControlRecordType as CT
from kwire.errors import CorruptRecordError
from kwire.records import decode_batch, peek_batch


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A complete snapshot: its id and its bytes (the file's content); ``timestamp_ms`` is its header's
    last contained log timestamp (what Kafka's time-based snapshot retention compares)."""

    snapshot_id: OffsetAndEpoch
    data: bytes
    kraft_version: int = 0
    voters: VoterSet | None = None
    timestamp_ms: int = 0

    @property
    def batches(self) -> tuple[LogBatch, ...]:
        """Invariant 3: the data batches (checked when the snapshot was built or read), cut from ``data``."""
        data, pos, out = self.data, 0, []
        while pos < len(data):
            h = peek_batch(data, pos)
            end = pos + h.size
            if not h.is_control:
                out.append(LogBatch(h.base_offset, h.last_offset, h.partition_leader_epoch, data[pos:end]))
            pos = end
        return tuple(out)

    def values(self) -> list[bytes]:
        """The state machine's records, in order (what a listener loads)."""
        out: list[bytes] = []
        for b in self.batches:
            out.extend(r.value or b"" for r in decode_batch(b.data, verify_crc=False).records)
        return out


def build_snapshot(
    snapshot_id: OffsetAndEpoch,
    values: list[bytes],
    *,
    kraft_version: int,
    voters: VoterSet,
    now_ms: int,
    max_batch_bytes: int,
) -> Snapshot:
    epoch = snapshot_id.epoch
    head: list[tuple[CT, object]] = [
        (CT.SNAPSHOT_HEADER, SnapshotHeaderRecord(version=0, last_contained_log_timestamp=now_ms))
    ]
    if kraft_version >= 1:
        head.append((CT.KRAFT_VERSION, kraft_version_record(kraft_version)))
        head.append((CT.KRAFT_VOTERS, voters_record(voters)))
    out = [control_batch(0, epoch, head, now_ms)]
    chunk: list[bytes] = []
    size = 0
    for v in [*values, None]:
        if chunk and (v is None or size + len(v) > max_batch_bytes):
            out.append(data_batch(out[-1].next_offset, epoch, chunk, now_ms))
            chunk, size = [], 0
        if v is not None:
            chunk.append(v)
            size += len(v)
    footer = control_batch(
        out[-1].next_offset, epoch, [(CT.SNAPSHOT_FOOTER, SnapshotFooterRecord(version=0))], now_ms
    )
    out.append(footer)
    data = b"".join(b.data for b in out)
    return snapshot_of(snapshot_id, data, kraft_version=kraft_version, voters=voters, now_ms=now_ms)


def snapshot_of(
    snapshot_id: OffsetAndEpoch, data: bytes, *, kraft_version: int, voters: VoterSet, now_ms: int
) -> Snapshot:
    """The :class:`Snapshot` :func:`build_snapshot` returns for ``data``, the bytes it built with these arguments."""
    return Snapshot(snapshot_id, data, kraft_version, voters if kraft_version >= 1 else None, now_ms)


def read_snapshot(snapshot_id: OffsetAndEpoch, data: bytes) -> Snapshot:
    """Parse and check a complete snapshot (invariant 2)."""
    got = split_batches(data)
    if len(got) < 2:
        raise CorruptRecordError(f"snapshot {snapshot_id} holds {len(got)} batches: no header and footer")
    head, tail = control_entries(got[0]), control_entries(got[-1])
    if not head or head[0][1] != CT.SNAPSHOT_HEADER or not got[0].is_control:
        raise CorruptRecordError(f"snapshot {snapshot_id} does not start with a SnapshotHeader")
    if not tail or tail[-1][1] != CT.SNAPSHOT_FOOTER or not got[-1].is_control:
        raise CorruptRecordError(f"snapshot {snapshot_id} does not end with a SnapshotFooter")
    kraft_version = 0
    voters: VoterSet | None = None
    timestamp = 0
    for _, kind, value in head:
        if kind == CT.SNAPSHOT_HEADER and isinstance(value, SnapshotHeaderRecord):
            timestamp = value.last_contained_log_timestamp
        elif kind == CT.KRAFT_VERSION and isinstance(value, KRaftVersionRecord):
            kraft_version = value.kraft_version
        elif kind == CT.KRAFT_VOTERS and isinstance(value, VotersRecord):
            voters = voter_set_of(value)
    return Snapshot(snapshot_id, data, kraft_version, voters, timestamp)


def log_agrees(log: ReplicatedLog, sid: OffsetAndEpoch) -> bool:
    """True when ``log`` can continue after snapshot ``sid``: it reaches the snapshot's end at a batch boundary
    and the record before it has the snapshot's epoch. Otherwise the log is dropped in favour of the snapshot."""
    if not (log.start_offset <= sid.offset <= log.end_offset and log.is_boundary(sid.offset)):
        return False
    return sid.offset == log.start_offset or log.epoch_at(sid.offset - 1) == sid.epoch
