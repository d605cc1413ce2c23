"""The daemon's default state machine until the metadata image (kraftd/controller) takes its place: the
committed data records themselves. It gives KIP-630 snapshots something exact to contain.

Contracts:
1. ``values`` is every committed data record value, in offset order, as of ``end_offset`` (the offset after
   the last applied batch); a loaded snapshot replaces it (its records, then the log after it).
2. A snapshot it asks for (``RaftClient.create_snapshot(end_offset, values)``) therefore equals the replay of the
   log up to its end offset.
3. Kafka's metadata transactions (records framed as Kafka's metadata serde: frame version 1, then the record's
   api key) are resolved as a controller replays them: Begin/End/AbortTransaction markers never enter
   ``values`` (a snapshot may not hold them), records of an aborted transaction are dropped, and
   ``snapshot_safe`` is False while a transaction is open (Kafka never snapshots inside one).
"""

from __future__ import annotations

from kraftd.core.log import LogBatch
from kraftd.core.snapshots import Snapshot
from kraftd.core.types import LeaderAndEpoch
from kwire.records import decode_batch

BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION = 23, 24, 25


def metadata_api_key(value: bytes) -> int | None:
    """The api key of a value framed as a Kafka metadata record (frame version 1), else None."""
    if len(value) < 3 or value[0] != 1:
        return None
    key, shift = 0, 0
    for b in value[1:6]:
        key |= (b & 0x7F) << shift
        if not b & 0x80:
            return key
        shift += 7
    return None


class RecordsState:
    def __init__(self) -> None:
        self.values: list[bytes] = []
        self.end_offset = 0
        self._txn: list[bytes] | None = None  # records of an open metadata transaction (contract 3)

    @property
    def snapshot_safe(self) -> bool:
        return self._txn is None

    def _replay(self, value: bytes) -> None:
        key = metadata_api_key(value)
        if key == BEGIN_TRANSACTION:
            self._txn = []
        elif key == END_TRANSACTION:
            self.values.extend(self._txn or [])
            self._txn = None
        elif key == ABORT_TRANSACTION:
            self._txn = None
        elif self._txn is not None:
            self._txn.append(value)
        else:
            self.values.append(value)

    def handle_commit(self, batches: tuple[LogBatch, ...], high_watermark: int) -> None:
        for b in batches:
            if b.next_offset <= self.end_offset:
                continue
            if not b.is_control:
                for r in decode_batch(b.data, verify_crc=False).records:
                    self._replay(r.value or b"")
            self.end_offset = b.next_offset

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        return None

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        self.values = snapshot.values()
        self._txn = None
        self.end_offset = snapshot.snapshot_id.offset
