"""The daemon's default state machine until the metadata image (kraftd/controller) takes its place: the
committed data records themselves. It gives KIP-630 snapshots something exact to contain.

Contracts:
1. ``values`` is every committed data record value, in offset order, as of ``end_offset`` (the offset after
   the last applied batch); a loaded snapshot replaces it (its records, then the log after it).
2. A snapshot it asks for (``RaftClient.create_snapshot(end_offset, values)``) therefore equals the replay of the
   log up to its end offset.
"""

from __future__ import annotations

from kraftd.core.log import LogBatch
from kraftd.core.snapshots import Snapshot
from kraftd.core.types import LeaderAndEpoch
from kwire.records import decode_batch


class RecordsState:
    def __init__(self) -> None:
        self.values: list[bytes] = []
        self.end_offset = 0

    def handle_commit(self, batches: tuple[LogBatch, ...], high_watermark: int) -> None:
        for b in batches:
            if b.next_offset <= self.end_offset:
                continue
            if not b.is_control:
                self.values.extend(r.value or b"" for r in decode_batch(b.data, verify_crc=False).records)
            self.end_offset = b.next_offset

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        return None

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        self.values = snapshot.values()
        self.end_offset = snapshot.snapshot_id.offset
