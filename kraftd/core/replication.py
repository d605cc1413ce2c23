"""Log replication: the leader's accumulator, Fetch serving with divergence checks, the high watermark,
and the follower's fetch loop (KIP-595 pull-based replication; the follower side is kraftd.core.following).

Invariants:
1. A new leader appends a LeaderChange control batch at once (with KRaftVersion and Voters when its voter
   set is the bootstrap one, kraft.version 1); its epoch start offset is the log end before that batch. The HWM is the majority-th largest flushed offset among voters (the leader counts its
   own flushed offset), moves only forward, and only once it exceeds the epoch start offset.
2. A Fetch is answered at once on error, divergence or data; otherwise it waits (long poll) up to its max
   wait, and is completed early by new data or an HWM change.
2a. A Fetch naming a known high watermark below the leader's (Fetch v18+, KIP-1166; Kafka 4.3.1's
   isHighWatermarkUpdated) is answered at once, also when its own acknowledgement is what advanced it: a
   follower never waits a long poll to learn that what it holds is committed (a read at a follower waits for
   exactly that, kraftd.core.reads).
2b. An answer that would carry only a newer high watermark (2a, or a parked Fetch completed by an HWM change)
   is coalesced: it goes out on the node's next step (the core asks for one at once, SetDeadline(now)), or
   earlier with data if records are written meanwhile. An append made by whoever learned of the commit in the
   same turn of the shell's loop then rides the same answer, so a closed append loop costs each follower one
   round trip per commit, not two. Nothing waits longer than one step for it.
2c. Parked Fetches (kraftd.core.parked) cost O(log parked) to park and nothing in the steps that do not answer
   them; parked Fetches answered together at the same fetch offset share one answer object (encode-once
   fan-out: a commit that wakes 1,000 observers builds one answer, not 1,000). Each observer's fetch offset is
   still tracked when it fetches (invariant 3), for DescribeQuorum.
2d. An append completes the parked Fetches of voters only (the commit needs them). An observer's parked Fetch
   (a broker's, issue 24) is completed by the high watermark that commits what was appended (2b: the next step),
   by its max wait, or by the epoch's end (a control batch, which may change the voter set, completes every
   parked Fetch, as before): one answer, with the records and the high watermark that commits them,
   instead of one with the records and a second with the high watermark. An observer applies only committed
   records (a broker's metadata image), so it learns them no later than before, and a commit costs the leader one
   wave of observer answers and re-fetches, not two (1,000 brokers: docs/SWARM.md, session 13).
2e. An answer with records is shared by every Fetch at the same fetch offset and max bytes while the log end and
   the high watermark it carries are unchanged (the same records and fields, so the same object: the shell
   encodes it once, kwire.server contract 11f). Observers catching up (1,000 brokers behind the log end at 1M
   partitions) re-fetch from where one answer ended, so a wave of them asks at the same offsets: each such answer
   of up to 8 MiB is read from the log, joined and encoded once, not once per observer. At most
   ``ANSWERS_KEPT_BYTES`` of records are kept, and none past a change of the log end or high watermark.
3. A replica's progress (fetched offset, last fetch time, last caught-up time) is updated only from a
   Fetch that validated against the leader's log; only voters count for the HWM and check-quorum.
4. A follower sends its next Fetch only when its whole log is flushed, so every fetch offset it reports
   is durable (node invariant 3); its HWM is min(leader HWM, own flushed offset), never decreases, and comes only
   from an answer without diverging epoch or snapshot id (Kafka): a truncated log may keep a stale tail.
4a. A successful fetch re-arms the follower's fetch timer, except once its leader ended the epoch
   (EndQuorumEpoch, kraftd.core.quorum_rpcs invariant 3): an answer the leader sent before resigning would
   otherwise push the election a whole fetch timeout away. Kafka 4.3.1 re-arms it there too; that race made
   1-2 in 10 of our graceful hand-offs take the 2 s fetch timeout.
5. Records handed to ``append`` get offsets at once; if the leader loses its epoch before they are
   written they are reported with ``AppendFailed`` and never commit.
5a. Adaptive linger: accepted records are written when the linger expires, or at the first step that finds
   everything written committed (high watermark at the log end), whichever comes first; while a batch is in
   flight the records gather until its commit (the step that commits it writes them). So a closed append loop
   is never held for the whole linger behind an idle pipeline, and records appended while a batch commits
   ride one batch (Kafka's accumulator drains only on the linger or a full batch;
   ``QuorumConfig.append_linger_adaptive`` False restores that).
6. A follower answered with something it cannot act on (a snapshot id it cannot fetch, records that fail
   the batch checks or do not extend its log) sends nothing to that leader for the retry backoff.
7. Check-quorum (KIP-595): a leader resigns when a majority of voters (itself included) has not fetched
   within the check-quorum timeout; a leader that is the only voter is that majority alone and never
   resigns for it (Kafka's LeaderState exempts a one-voter set), also after the set shrank to one (KIP-853).
8. A leader shutting down gracefully accepts no more appends, writes the ones it accepted, keeps serving
   fetches, and resigns once its high watermark reaches its log end offset, or after ``shutdown_drain_ms``.
   Kafka 4.3.1 resigns at once. A leader that resigns with an uncommitted tail rejects every pre-vote from a
   follower without that tail (not up to date), and the other followers reject it too (they have fetched,
   KIP-996). So the first preferred successor then always loses, and the hand-off waits for the next one's
   backoff (election backoff max / 2 in a 3-voter quorum) or a fetch timeout. Once the tail commits, the
   leader's list names a follower that holds all of it first (descending fetched offset), and the accepted
   appends commit instead of failing.
"""

from __future__ import annotations

from typing import Any

from kraftd.core import batches
from kraftd.core import messages as m
from kraftd.core.context import NodeContext
from kraftd.core.effects import (
    AppendBatches,
    AppendFailed,
    ApplyCommitted,
    FlushLog,
    SendResponse,
)
from kraftd.core.following import advance_follower_hwm
from kraftd.core.log import LogBatch
from kraftd.core.parked import ParkedFetch
from kraftd.core.states import Follower, Leader, ReplicaProgress
from kraftd.core.types import ElectionState, OffsetRange, Role
from kwire.errors import ErrorCode, KraftError

ANSWERS_KEPT_BYTES = 32 * 1024 * 1024  # invariant 2e


class NotLeaderError(KraftError):
    error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class RecordTooLargeError(KraftError):
    error_code = ErrorCode.MESSAGE_TOO_LARGE


# ----- leader -----
def become_leader(node: NodeContext, granting: tuple[int, ...]) -> None:
    now = node.now
    data = Leader(
        epoch_start_offset=node.log.end_offset,
        check_quorum_deadline=now + node.config.check_quorum_timeout_ms,
        begin_quorum_deadline=now,
        granting=granting,
    )
    for v in node.voters.voters:
        if v.id != node.local.id:
            data.replicas[v.id] = ReplicaProgress(v)
    state = ElectionState(node.epoch, node.local.id, node.election.voted_key)
    node.transition(Role.LEADER, data, state)
    hist = node.voter_history
    bootstrap = None
    if hist.kraft_version >= 1 and hist.latest_offset() < 0:
        bootstrap = (hist.kraft_version, hist.latest())
    batch = batches.leader_change_batch(
        node.log.end_offset, node.epoch, node.local.id, list(node.voters.ids), list(granting), now, bootstrap
    )
    _write(node, data, [batch])


def _write(node: NodeContext, d: Leader, new: list[LogBatch]) -> None:
    for b in new:
        node.log_append(b)
    node.out.append(AppendBatches(tuple(new)))
    node.out.append(FlushLog(node.log.end_offset))
    if any(b.is_control for b in new):  # invariant 2d: a voter set may change (KIP-853)
        _answer_parked(node, d, d.parked.take_all())
    elif d.parked.voters:  # invariant 2d
        _answer_parked(node, d, d.parked.take_voters())


def leave_leader(node: NodeContext, d: Leader) -> None:
    if d.pending:
        first = node.log.end_offset
        node.out.append(AppendFailed(first, first + len(d.pending) - 1, node.epoch))
        d.pending.clear()
    for token, _ in d.parked.take_all():
        respond(node, token, _not_leader(node))


def append(node: NodeContext, records: list[bytes]) -> OffsetRange:
    d = node.data
    if not isinstance(d, Leader) or node.shutting_down:
        raise NotLeaderError(f"node {node.local.id} is not the leader")
    size = sum(len(r) for r in records)
    if size > node.config.max_batch_size_bytes:
        raise RecordTooLargeError(f"{size} bytes exceed the max batch size")
    if d.pending_bytes + size > node.config.max_batch_size_bytes:
        _drain(node, d)
    first = node.log.end_offset + len(d.pending)
    d.pending.extend(records)
    d.pending_bytes += size
    if d.linger_deadline is None:
        d.linger_deadline = node.now + node.config.append_linger_ms
    return OffsetRange(first, first + len(records) - 1, node.epoch)


def append_or_fail(node: NodeContext, records: list[bytes]) -> None:
    try:
        append(node, records)
    except KraftError:
        node.out.append(AppendFailed(-1, -1, node.epoch))


def _drain(node: NodeContext, d: Leader) -> None:
    if d.pending:
        batch = batches.data_batch(node.log.end_offset, node.epoch, d.pending, node.now)
        d.pending = []
        d.pending_bytes = 0
        _write(node, d, [batch])
    d.linger_deadline = None


def append_control(node: NodeContext, d: Leader, entries: list[tuple[Any, Any]]) -> None:
    """A control batch right after the records already accepted (they are written first, in order)."""
    _drain(node, d)
    _write(node, d, [batches.control_batch(node.log.end_offset, node.epoch, entries, node.now)])


def poll_leader(node: NodeContext, d: Leader) -> None:
    now = node.now
    if _sole_voter(node):  # re-armed while alone, so a voter added later gets a full check-quorum period
        d.check_quorum_deadline = max(d.check_quorum_deadline, now + node.config.check_quorum_timeout_ms)
    quorum_lost = now >= d.check_quorum_deadline and not _sole_voter(node)
    if d.resign_requested or (quorum_lost and not node.bugs.no_check_quorum) or _drained(node, d):
        node.resign(d)
        return
    if d.linger_deadline is not None and (now >= d.linger_deadline or _pipeline_idle(node)):
        _drain(node, d)
    if now >= d.begin_quorum_deadline:
        node.send_begin_quorum(d)
        d.begin_quorum_deadline = now + node.config.begin_quorum_resend_ms
    if d.parked:
        _answer_parked(node, d, d.parked.take_ready(now, node.steps))


def _drained(node: NodeContext, d: Leader) -> bool:
    """Invariant 8: a shutting-down leader may resign now."""
    if not node.shutting_down:
        return False
    if d.drain_deadline is None:
        d.drain_deadline = node.now + node.config.shutdown_drain_ms
        _drain(node, d)
    return node.high_watermark >= node.log.end_offset or node.now >= d.drain_deadline


def _pipeline_idle(node: NodeContext) -> bool:
    """Invariant 5a: everything written is committed, so lingering longer gathers nothing worth the wait."""
    return node.config.append_linger_adaptive and node.high_watermark >= node.log.end_offset


def _sole_voter(node: NodeContext) -> bool:
    """A leader that is the only voter is its own majority: check-quorum never expires (invariant 7)."""
    return node.is_voter and len(node.voters.voters) == 1


def on_flushed(node: NodeContext, offset: int) -> None:
    node.flushed = max(node.flushed, min(offset, node.log.end_offset))
    d = node.data
    if isinstance(d, Leader):
        update_high_watermark(node, d)
    elif isinstance(d, Follower):
        advance_follower_hwm(node, node.follower_leader_hwm)


def update_high_watermark(node: NodeContext, d: Leader) -> None:
    # A leader removed from the set does not count (KAFKA-16530).
    ends = [node.flushed] if node.is_voter else []
    # Only the voter's own key counts: an observer reusing a voter's id with a new disk is no voter (KIP-853).
    for vid in dict.fromkeys(node.voters.ids):  # O(voters), not O(observers): runs on every voter fetch
        progress = d.replicas.get(vid)
        if progress is not None and node.voters.is_voter(progress.key):
            ends.append(progress.end_offset)
    ends.sort(reverse=True)
    if len(ends) < node.voters.majority():
        return
    candidate = ends[node.voters.majority() - 1]
    own_epoch_committed = candidate > d.epoch_start_offset or node.bugs.commit_old_epoch
    if own_epoch_committed and candidate > node.high_watermark:
        node.high_watermark = candidate
        d.parked.mark_hwm_due(node.steps + 1)  # invariant 2b


def maybe_apply(node: NodeContext) -> None:
    if node.high_watermark > node.applied:
        done = node.log.batches_between(node.applied, node.high_watermark)
        if done:
            node.applied = done[-1].next_offset  # whole batches only; a partial one waits
            node.bytes_since_snapshot += sum(len(b.data) for b in done if not b.is_control)
            node.out.append(ApplyCommitted(tuple(done), node.high_watermark))


def _not_leader(node: NodeContext, code: ErrorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER) -> Any:
    """A partition-level Fetch error; like Kafka it carries no high watermark (-1)."""
    return m.fetch_response(ErrorCode.NONE, code, node.leader_id(), node.epoch, -1)


def reported_high_watermark(node: NodeContext, d: Leader) -> int:
    """The high watermark a leader tells others: -1 until it commits in its own epoch (Kafka's LeaderState).

    Invariant: a follower's high watermark never moves backwards (Kafka's FollowerState throws on it). A new
    leader's inherited watermark may trail one a follower learned from the old leader, so it stays unknown
    until an entry of this epoch commits, which puts it past every offset committed before.
    """
    known = node.high_watermark > d.epoch_start_offset or node.bugs.report_inherited_hwm
    return node.high_watermark if known else -1


def _fetch_data(node: NodeContext, d: Leader, offset: int, max_bytes: int, parkable: bool = False) -> Any:
    """The answer to a Fetch at ``offset``, shared (invariant 2e); None when ``parkable`` and it has no records."""
    hwm = reported_high_watermark(node, d)
    if d.answers_at != (at := (node.log.end_offset, hwm)):
        d.answers.clear()
        d.answers_at, d.answers_bytes = at, 0
    key = (offset, min(max_bytes, node.config.fetch_max_bytes))
    msg = d.answers.get(key)
    if msg is None:
        found = node.log.read(offset, key[1])
        if not found and parkable:
            return None
        msg = m.fetch_response(ErrorCode.NONE, ErrorCode.NONE, node.local.id, node.epoch, hwm, found)
        size = sum(len(b.data) for b in found)
        if found and d.answers_bytes + size <= ANSWERS_KEPT_BYTES:
            d.answers[key] = msg
            d.answers_bytes += size
    return msg


def _answer_parked(node: NodeContext, d: Leader, taken: list[tuple[int, ParkedFetch]]) -> None:
    """Invariant 2c: the answer of parked Fetches at the same offset (and max bytes) is built once, and that one
    message object is every one of their SendResponses (the shell encodes it once: kwire.answers contract 2)."""
    built: dict[tuple[int, int], Any] = {}
    for token, p in taken:
        key = (p.fetch_offset, p.max_bytes)
        msg = built.get(key)
        if msg is None:
            msg = built[key] = _fetch_data(node, d, p.fetch_offset, p.max_bytes)
        respond(node, token, msg)


def respond(node: NodeContext, token: int, message: Any) -> None:
    node.out.append(SendResponse(token, message))


def handle_fetch_request(node: NodeContext, token: int, msg: Any) -> Any | None:
    if msg.cluster_id is not None and node.cluster_id is not None and msg.cluster_id != node.cluster_id:
        return m.fetch_response(ErrorCode.INCONSISTENT_CLUSTER_ID, ErrorCode.NONE, -1, -1, -1)
    part = m.single_partition(msg)
    if part is None:
        return m.fetch_response(ErrorCode.INVALID_REQUEST, ErrorCode.NONE, -1, -1, -1)
    epoch, offset, last_epoch = part.current_leader_epoch, part.fetch_offset, part.last_fetched_epoch
    if msg.max_wait_ms < 0 or offset < 0 or last_epoch < 0 or last_epoch > epoch:
        return _not_leader(node, ErrorCode.INVALID_REQUEST)
    if epoch < node.epoch:
        return _not_leader(node, ErrorCode.FENCED_LEADER_EPOCH)
    if epoch > node.epoch:
        return _not_leader(node, ErrorCode.UNKNOWN_LEADER_EPOCH)
    d = node.data
    if not isinstance(d, Leader):
        return _not_leader(node)
    snap = node.snapshot
    hwm = reported_high_watermark(node, d)
    diverging = node.log.validate(offset, last_epoch) if offset >= node.log.start_offset else None
    below_start = offset < node.log.start_offset or (diverging is not None and diverging.epoch < 0)
    if below_start and snap is not None and node.log.start_offset > 0:
        # The log the follower needs is gone: point it at the snapshot that replaced it (KIP-630).
        return m.fetch_response(
            ErrorCode.NONE,
            ErrorCode.NONE,
            node.local.id,
            node.epoch,
            hwm,
            snapshot=snap.snapshot_id,
        )
    if diverging is not None:
        return m.fetch_response(
            ErrorCode.NONE, ErrorCode.NONE, node.local.id, node.epoch, hwm, None, diverging
        )
    rid = m.fetch_replica_id(msg)
    if rid >= 0:  # a negative id is no replica (a tool, a consumer): never an observer (Kafka LeaderState)
        _track_replica(node, d, m.key_of(rid, part.replica_directory_id), offset)
    # the high watermark is read after this fetch's own acknowledgement, which may just have advanced it
    parkable = msg.max_wait_ms > 0 and offset <= node.log.end_offset
    answer = _fetch_data(node, d, offset, msg.max_bytes, parkable)
    if answer is not None:
        return answer
    hwm = reported_high_watermark(node, d)
    behind = m.fetch_known_high_watermark(part) < hwm  # invariant 2a, coalesced (2b)
    due = node.steps + 1 if behind else -1
    voter = node.voters.has_id(rid)  # invariant 2d
    d.parked.park(token, ParkedFetch(rid, offset, msg.max_bytes, node.now + msg.max_wait_ms, due, voter))
    return None


def _track_replica(node: NodeContext, d: Leader, key: Any, offset: int) -> None:
    now = node.now
    voter = node.voters.is_voter(key)
    p = d.replicas.pop(key.id, None)
    if p is None or p.key != key:  # another directory id under this id (a replaced disk) starts afresh
        p = ReplicaProgress(key)
    # Re-inserted at the end: past the voters, ``replicas`` is in order of last fetch, so forgetting observers
    # past their session (KIP-595) stops at the first one within it: O(1) amortised per fetch, not O(observers).
    d.replicas[key.id] = p
    p.update(now, offset, node.log.end_offset)
    expired = []
    for rid, q in d.replicas.items():
        if node.voters.has_id(rid):
            continue
        if now - q.last_fetch_ms <= node.config.observer_session_timeout_ms:
            break
        expired.append(rid)
    for rid in expired:
        del d.replicas[rid]
    if voter and key.id != node.local.id:
        node.note_voter_fetch(d, key.id)
        update_high_watermark(node, d)
