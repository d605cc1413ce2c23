"""The voter set history (KIP-853): which voters are in force at each log offset, read from the log's
KRaftVersion and Voters control records, including uncommitted ones.

Invariants:
1. ``history`` maps offsets to voter sets in increasing offset order; the base entry is the set the node
   started with (offset -1: the bootstrap checkpoint or static ``controller.quorum.voters``) or the set a
   snapshot recorded (its offset is below the snapshot's end).
2. ``latest()`` is the set in force for elections, replication and the HWM, committed or not (KIP-853:
   a replica uses the newest set in its log at once). ``committed(hwm)`` is the newest set below the HWM.
3. Truncating the log to ``end`` drops every entry at or above ``end``; the base entry is never dropped.
4. kraft.version is tracked the same way; the Voters records of a log are only honoured at kraft.version 1.
"""

from __future__ import annotations

from bisect import bisect_left

from generated.kraft_version_record import KRaftVersionRecord
from generated.voters_record import Endpoint as VoterEndpoint
from generated.voters_record import KRaftVersionFeature, Voter, VotersRecord
from kraftd.core.log import LogBatch
from kraftd.core.types import ZERO_UUID, Listener, ReplicaKey, VoterSet
from kwire.control import ControlRecordType, decode_control_record
from kwire.errors import KraftError
from kwire.records import decode_batch

KRAFT_VERSION_MAX = 1


def voters_record(voters: VoterSet) -> VotersRecord:
    return VotersRecord(
        version=0,
        voters=[
            Voter(
                voter_id=k.id,
                voter_directory_id=k.directory_id if k.directory_id is not None else ZERO_UUID,
                endpoints=[VoterEndpoint(e.name, e.host, e.port) for e in voters.endpoints_of(k.id)],
                kraft_version_feature=KRaftVersionFeature(0, KRAFT_VERSION_MAX),
            )
            for k in voters.voters
        ],
    )


def kraft_version_record(version: int) -> KRaftVersionRecord:
    return KRaftVersionRecord(version=0, kraft_version=version)


def voter_set_of(rec: VotersRecord) -> VoterSet:
    keys = []
    listeners = []
    for v in rec.voters:
        keys.append(
            ReplicaKey(v.voter_id, None if v.voter_directory_id == ZERO_UUID else v.voter_directory_id)
        )
        listeners.append((v.voter_id, tuple(Listener(e.name, e.host, e.port) for e in v.endpoints)))
    return VoterSet(tuple(keys), tuple(listeners))


def control_entries(batch: LogBatch) -> list[tuple[int, ControlRecordType, object]]:
    """(offset, type, value) of each known control record of a control batch; [] for anything else."""
    if not batch.is_control:
        return []
    out: list[tuple[int, ControlRecordType, object]] = []
    try:
        decoded = decode_batch(batch.data, verify_crc=False)
        for r in decoded.records:
            found = decode_control_record(r)
            if found is not None:
                out.append((batch.base_offset + r.offset_delta, found[0], found[1]))
    except KraftError:
        return []
    return out


class VoterHistory:
    def __init__(self, base: VoterSet, kraft_version: int, base_offset: int = -1) -> None:
        self.history: list[tuple[int, VoterSet]] = [(base_offset, base)]
        self.versions: list[tuple[int, int]] = [(base_offset, kraft_version)]
        self.seen: set[ReplicaKey] = set(base.voters)  # every voter key ever read (add_voter invariant 3)

    @property
    def kraft_version(self) -> int:
        return self.versions[-1][1]

    def latest(self) -> VoterSet:
        return self.history[-1][1]

    def latest_offset(self) -> int:
        """The offset of the newest set (-1 when it came from the bootstrap, not the log)."""
        return self.history[-1][0]

    def committed(self, high_watermark: int) -> VoterSet:
        for off, vs in reversed(self.history):
            if off < high_watermark:
                return vs
        return self.history[0][1]

    def has_uncommitted(self, high_watermark: int) -> bool:
        return len(self.history) > 1 and self.history[-1][0] >= high_watermark

    def committed_version(self, high_watermark: int) -> int:
        return next((v for off, v in reversed(self.versions) if off < high_watermark), self.versions[0][1])

    def observe(self, batch: LogBatch) -> None:
        """Record the Voters/KRaftVersion records of a batch just appended to the log (invariant 1)."""
        for off, kind, value in control_entries(batch):
            if kind == ControlRecordType.KRAFT_VERSION and isinstance(value, KRaftVersionRecord):
                self.versions.append((off, value.kraft_version))
            elif kind == ControlRecordType.KRAFT_VOTERS and isinstance(value, VotersRecord):
                if self.kraft_version >= 1:
                    vs = voter_set_of(value)
                    self.history.append((off, vs))
                    self.seen.update(vs.voters)

    def truncate(self, end: int) -> None:
        """Forget every entry at or above ``end`` (invariant 3)."""
        keep = max(1, bisect_left([o for o, _ in self.history], end))
        del self.history[keep:]
        keep = max(1, bisect_left([o for o, _ in self.versions], end))
        del self.versions[keep:]

    def reset(self, base: VoterSet, kraft_version: int, base_offset: int) -> None:
        """Start over from a snapshot's records (the log before it is gone)."""
        self.history = [(base_offset, base)]
        self.versions = [(base_offset, kraft_version)]
        self.seen.update(base.voters)
