"""Safety invariants checked after every simulated event (the issue's list; Kafka's
RaftEventSimulationTest checks the same family).

1. At most one leader per epoch (over persisted election states and live leaders).
2. Log matching: a batch at (offset, epoch) is the same batch, preceded by the same batch, on every node.
   Recorded as facts in a registry, so by induction equal (offset, epoch) implies equal prefixes.
3. Every committed batch is in the log of every later leader (checked when a leader takes office).
4. Committed data is never lost or changed: what any node applies agrees with the global committed prefix,
   no node truncates a committed batch below its own high watermark (Kafka's follower refuses that), and a
   majority of voters keeps it durable across crashes. A node may drop a committed batch it never knew to be
   committed: a stale leader of an older epoch, which lacks what a newer epoch committed, answers its Fetch
   with a diverging epoch (the membership simulation, seed 650); the majority check covers what is left.
5. Each leader's HWM never decreases within its epoch.
6. Each node's persisted epoch never decreases.
7. A majority of voters has flushed (durably holds) every offset below each live leader's HWM.
(0) The execution contract itself: no election state is persisted after a message of the same step left.
9. Every snapshot (KIP-630) equals the replay of the committed log up to its end offset: its records are
   exactly the committed data records below it, in order. Below a node's log start, its snapshot stands in
   for the log in (2), (3), (4) and (7).
10. Voter changes (KIP-853), checked whenever a leader appends a Voters record that changes its voter set: the
   leader has committed a record of its own epoch, no other voter set is uncommitted in its log, the new set
   differs from the one in force by at most one voter, and an auto-join never adds back a key that was once a
   committed voter (KAFKA-19850). Along the committed log, consecutive voter sets differ by at most one voter.
   With a changing voter set, (4) and (7) count the voters of the set in force (the committed log's newest set
   for (4), the leader's newest set for (7)); once any change happened, the holders must meet every majority
   of that set rather than form one: data committed by a majority of the next set (in force before it commits)
   meets every majority of the previous one, which is what keeps it from being lost, but need not be a
   majority of it.
11. A follower's high watermark never goes back: a Fetch response that names a high watermark (>= 0) names one at
   least the receiver's own (Kafka's FollowerState.updateHighWatermark kills the process otherwise).
12. Linearizable reads (kraftd.core.reads): a read served at a node reflects every write acknowledged before the
   read started - the node has applied at least the committed prefix as it stood then (acknowledgement is a
   leader's high watermark passing a write, which is when the prefix grows).
8. Pre-vote never changes an epoch: pre-vote requests carry the sender's persisted epoch, and answering a
   same-epoch pre-vote persists nothing (entering Prospective with a new epoch is rejected by the core's
   transition table, which the simulator reports as a failure).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from kraftd.core.log import LogBatch
from kraftd.core.types import ElectionState, ReplicaKey
from kraftd.core.voters import control_entries, voter_set_of
from kwire.control import ControlRecordType as CT


class InvariantViolation(AssertionError):
    def __init__(self, number: int, text: str) -> None:
        super().__init__(f"invariant ({number}) violated: {text}")
        self.number = number


def _batch_ending_at(batches: list[LogBatch], end: int) -> LogBatch | None:
    """The batch of ``batches`` whose next offset is ``end`` (None if no batch ends exactly there)."""
    i = bisect_left(batches, end, key=lambda b: b.next_offset)
    return batches[i] if i < len(batches) and batches[i].next_offset == end else None


def _key(b: LogBatch) -> tuple[int, int, int]:
    return (b.base_offset, b.epoch, b.last_offset)


@dataclass(slots=True)
class Checker:
    voters: tuple[int, ...]
    check_monotonic_epoch: bool = True
    check_majority_hwm: bool = True
    leaders: dict[int, int] = field(default_factory=dict)  # epoch -> leader id
    registry: dict[tuple[int, int, int], tuple[bytes, tuple[int, int, int] | None]] = field(
        default_factory=dict
    )
    committed: list[LogBatch] = field(default_factory=list)
    leader_hwm: dict[tuple[int, int], int] = field(default_factory=dict)  # (node, epoch) -> hwm
    snapshot_ends: dict[int, int] = field(default_factory=dict)  # node -> end offset of its durable snapshot
    # (10): the committed log's newest voter set (empty: ``voters``, the start-up set), whether any leader ever
    # changed its voter set, and every key that was in a committed voter set.
    committed_voters: tuple[int, ...] = ()
    voters_changed: bool = False
    former_voters: set[ReplicaKey] = field(default_factory=set)
    voter_sets: list[tuple[int, ...]] = field(default_factory=list)  # the committed log's sets, in order
    auto_joins: int = 0  # additions leaders appended for an auto-join (AddRaftVoter without AckWhenCommitted)

    @property
    def committed_end(self) -> int:
        return self.committed[-1].next_offset if self.committed else 0

    def in_force(self) -> tuple[int, ...]:
        return self.committed_voters or self.voters

    def _needed(self, voters: tuple[int, ...]) -> int:
        """Holders needed among ``voters`` (4, 7): a majority, or with a changing set enough to meet every one."""
        majority = len(voters) // 2 + 1
        return len(voters) - majority + 1 if self.voters_changed else majority

    # (1), (6)
    def on_persist(self, node: int, old: ElectionState, new: ElectionState) -> None:
        if self.check_monotonic_epoch and new.epoch < old.epoch:
            raise InvariantViolation(6, f"node {node} persisted epoch {new.epoch} after {old.epoch}")
        self.note_leader(new.epoch, new.leader_id)

    def note_leader(self, epoch: int, leader_id: int) -> None:
        if leader_id < 0:
            return
        known = self.leaders.setdefault(epoch, leader_id)
        if known != leader_id:
            raise InvariantViolation(1, f"epoch {epoch} has leaders {known} and {leader_id}")

    # (2)
    def on_append(self, node: int, log_batches: list[LogBatch], count: int) -> None:
        start = len(log_batches) - count
        for i in range(start, len(log_batches)):
            b = log_batches[i]
            prev = _key(log_batches[i - 1]) if i > 0 else None  # None: first batch (after a snapshot)
            seen = self.registry.setdefault(_key(b), (b.data, prev))
            if seen[0] != b.data or (seen[1] is not None and prev is not None and seen[1] != prev):
                raise InvariantViolation(
                    2, f"node {node}: batch {b.base_offset}@{b.epoch} differs from another copy"
                )
            if seen[1] is None and prev is not None:
                self.registry[_key(b)] = (b.data, prev)

    def on_truncate(self, node: int, removed: list[LogBatch], high_watermark: int) -> None:
        for b in removed:
            i = self._index_of(b.base_offset)
            if (
                i < len(self.committed)
                and _key(self.committed[i]) == _key(b)
                and b.base_offset < high_watermark
            ):
                raise InvariantViolation(
                    4, f"node {node} truncated committed batch {b.base_offset}@{b.epoch}"
                )

    def on_apply(self, node: int, applied: tuple[LogBatch, ...], log_batches: list[LogBatch]) -> None:
        for b in applied:
            idx = self._index_of(b.base_offset)
            if idx < len(self.committed):
                if _key(self.committed[idx]) != _key(b) or self.committed[idx].data != b.data:
                    raise InvariantViolation(
                        4, f"node {node} applied {_key(b)} but {_key(self.committed[idx])} was committed"
                    )
            elif b.base_offset == self.committed_end:
                self.committed.append(b)
                self._note_committed_voters(node, b)
            else:
                raise InvariantViolation(
                    4, f"node {node} applied {_key(b)} past a gap at {self.committed_end}"
                )

    def _note_committed_voters(self, node: int, b: LogBatch) -> None:
        """(10): the committed log's voter sets, each one voter away from the previous."""
        for off, kind, value in control_entries(b):
            if kind != CT.KRAFT_VOTERS:
                continue
            vs = voter_set_of(value)  # type: ignore[arg-type]
            before, after = set(self.in_force()), set(vs.ids)
            if len(before ^ after) > 1:
                raise InvariantViolation(
                    10,
                    f"committed voter sets at {off} went {sorted(before)} -> {sorted(after)} (node {node})",
                )
            self.voters_changed = self.voters_changed or before != after
            self.committed_voters = tuple(sorted(after))
            if before != after or not self.voter_sets:
                self.voter_sets.append(self.committed_voters)
            self.former_voters.update(vs.voters)

    def _index_of(self, offset: int) -> int:
        lo, hi = 0, len(self.committed)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.committed[mid].base_offset < offset:
                lo = mid + 1
            else:
                hi = mid
        return lo

    # (3)
    def on_new_leader(
        self, node: int, epoch: int, log_batches: list[LogBatch], snapshot_end: int = 0
    ) -> None:
        self.note_leader(epoch, node)
        skip = self._index_of(snapshot_end) if log_batches and log_batches[0].base_offset > 0 else 0
        need = self.committed[skip:]
        n = len(need)
        if len(log_batches) < n or any(_key(log_batches[i]) != _key(need[i]) for i in range(n)):
            raise InvariantViolation(
                3, f"leader {node} of epoch {epoch} lacks committed data below {self.committed_end}"
            )

    # (5)
    def on_leader_hwm(self, node: int, epoch: int, hwm: int) -> None:
        prev = self.leader_hwm.get((node, epoch), 0)
        if hwm < prev:
            raise InvariantViolation(5, f"leader {node} epoch {epoch} HWM went {prev} -> {hwm}")
        self.leader_hwm[(node, epoch)] = hwm

    # (12)
    def on_read(self, node: int, committed_at_start: int, applied: int) -> None:
        if applied < committed_at_start:
            raise InvariantViolation(
                12,
                f"node {node} served a read at applied offset {applied}, but offset {committed_at_start} was "
                "committed (acknowledged) before the read started",
            )

    # (11)
    def on_fetch_response(self, node: int, own_hwm: int, leader_id: int, reported_hwm: int) -> None:
        if 0 <= reported_hwm < own_hwm:
            raise InvariantViolation(
                11,
                f"leader {leader_id} told node {node} high watermark {reported_hwm} below its own {own_hwm}",
            )

    # (7), (4: durable on a majority)
    def check_durable(
        self,
        durable: dict[int, list[LogBatch]],
        leaders: list[tuple[int, int, list[LogBatch]]],
        snapshot_ends: dict[int, int] | None = None,
        leader_voters: dict[int, tuple[int, ...]] | None = None,
    ) -> None:
        """(7) and (4): count the voters whose durable log holds the very batch that ends at the offset in
        question (by (2), the same batch at the same place means the same prefix). ``leader_voters``: each
        leader's newest voter set (default: the start-up set)."""
        if not self.check_majority_hwm:
            return
        self.snapshot_ends = snapshot_ends or {}
        for node, hwm, log in leaders:
            if hwm > 0:
                # Below the leader's log start (a snapshot deleted it) the committed copy names the batch.
                at = _batch_ending_at(log, hwm) or _batch_ending_at(self.committed, hwm)
                voters = (leader_voters or {}).get(node, self.voters)
                held = self._holders(durable, at, voters)
                if held < self._needed(voters):
                    raise InvariantViolation(7, f"leader {node} HWM {hwm} is durable on only {held} voters")
        if self.committed:
            voters = self.in_force()
            held = self._holders(durable, self.committed[-1], voters)
            if held < self._needed(voters):
                raise InvariantViolation(
                    4, f"committed offset {self.committed_end} is durable on only {held} voters"
                )

    def _holders(
        self, durable: dict[int, list[LogBatch]], batch: LogBatch | None, voters: tuple[int, ...]
    ) -> int:
        if batch is None:
            return 0
        count = 0
        ends = self.snapshot_ends
        for v in voters:
            if ends.get(v, 0) >= batch.next_offset:  # a durable snapshot covers it (9)
                count += 1
                continue
            found = _batch_ending_at(durable.get(v, []), batch.next_offset)
            if found is not None and _key(found) == _key(batch) and found.data == batch.data:
                count += 1
        return count

    # (9)
    def on_snapshot(self, node: int, end_offset: int, values: list[bytes]) -> None:
        from kwire.records import decode_batch

        idx = self._index_of(end_offset)
        if idx > len(self.committed) or (idx == len(self.committed) and end_offset != self.committed_end):
            raise InvariantViolation(9, f"node {node} snapshotted at {end_offset}, past the committed log")
        want = [
            r.value or b""
            for b in self.committed[:idx]
            if not b.is_control
            for r in decode_batch(b.data, verify_crc=False).records
        ]
        if values != want:
            raise InvariantViolation(
                9, f"node {node}'s snapshot at {end_offset} holds {len(values)} records, the log {len(want)}"
            )

    # (10)
    def on_voter_change(
        self,
        node: int,
        own_epoch_committed: bool,
        uncommitted_sets: int,
        before: set[ReplicaKey],
        after: set[ReplicaKey],
        auto_join: bool = False,
    ) -> None:
        """``before``/``after``: the leader's voter sets around the Voters record it appended; ``auto_join``: the
        record answers an AddRaftVoter without AckWhenCommitted (KIP-1186, a node adding itself)."""
        old, new = {k.id for k in before}, {k.id for k in after}
        self.voters_changed = self.voters_changed or old != new
        if not own_epoch_committed:
            raise InvariantViolation(10, f"leader {node} changed voters before committing in its own epoch")
        if uncommitted_sets > 1:
            raise InvariantViolation(10, f"leader {node} holds {uncommitted_sets} uncommitted voter sets")
        if len(old ^ new) > 1:
            raise InvariantViolation(10, f"leader {node} changed voters {sorted(old)} -> {sorted(new)}")
        self.auto_joins += auto_join and len(new - old) == 1
        back = (after - before) & self.former_voters if auto_join else set()
        if back:
            raise InvariantViolation(
                10,
                f"leader {node} auto-joined {sorted(k.id for k in back)} back after its removal (KAFKA-19850)",
            )

    # (8)
    def on_prevote_sent(self, node: int, request_epoch: int, persisted_epoch: int) -> None:
        if request_epoch != persisted_epoch:
            raise InvariantViolation(
                8, f"node {node} pre-voted at epoch {request_epoch}, persisted {persisted_epoch}"
            )
