"""BeginQuorumEpoch, EndQuorumEpoch and the Resigned state (KIP-595).

Invariants:
1. A leader sends BeginQuorumEpoch right after election and then every fetch.timeout/2 to each voter that
   has not fetched within that period.
2. A leader resigns (check-quorum: no majority fetched within 1.5 x fetch timeout, or shutdown) into
   Resigned in the same epoch and sends EndQuorumEpoch, naming the other voters by descending fetched
   offset, until each acknowledges or the epoch moves on.
3. A follower of the resigning leader sets its fetch deadline to now + backoff (Kafka 4.3.1's
   overrideFetchTimeout), the strict exponential backoff of its position N among the K preferred candidates:
   0 for the first, min(max, (max >> (K - 1)) << (N - 1)) for N >= 1, and the election backoff max for a
   replica not named (Kafka 4.3.1's endEpochElectionBackoff). A fetch answered after that (sent before the
   resignation) no longer moves the deadline (kraftd.core.replication invariant 4a).
4. A Resigned replica that is not shutting down moves to Unattached at epoch + 1 after its election timeout.
4a. One that is the only voter (a restarted single-voter leader) becomes Prospective at once in its epoch, as
   Kafka 4.3.1's KafkaRaftClient.initialize does: nobody else can lead, so waiting out the timeout only delays
   (the dispatcher, kraftd.core.node, decides it before polling the Resigned state).
"""

from __future__ import annotations

from typing import Any

from kraftd.core import messages as m
from kraftd.core.context import NodeContext
from kraftd.core.states import Follower, Leader, Resigned
from kraftd.core.types import ZERO_UUID, ReplicaKey, Role
from kwire.errors import ErrorCode


def resign(node: NodeContext, d: Leader) -> None:
    others = [p for i, p in d.replicas.items() if node.voters.has_id(i) and i != node.local.id]
    others.sort(key=lambda p: (-p.end_offset, p.key.id))
    preferred = [p.key for p in others]
    unacked = {v for v in node.voters.ids if v != node.local.id}
    data = Resigned(node.election_deadline(), preferred, unacked, node.shutting_down or d.resign_requested)
    node.transition(Role.RESIGNED, data, node.election)


def poll_resigned(node: NodeContext, d: Resigned) -> None:
    for v in node.voters.voters:
        if v.id in d.unacked and node.can_send(v.id):
            node.send(v.id, m.end_quorum_request(node.cluster_id, node.local.id, node.epoch, d.preferred))
    if not node.shutting_down and node.now >= d.election_deadline:
        node.to_unattached(node.epoch + 1)


def send_begin_quorum(node: NodeContext, d: Leader) -> None:
    stale = node.now - node.config.begin_quorum_resend_ms
    for v in node.voters.voters:
        if v.id == node.local.id:
            continue
        p = d.replicas.get(v.id)
        if (p is None or p.last_fetch_ms < 0 or p.last_fetch_ms <= stale) and node.can_send(v.id):
            node.send(v.id, m.begin_quorum_request(node.cluster_id, v, node.local.id, node.epoch))


def _check(node: NodeContext, msg: Any, build: Any) -> tuple[Any, Any]:
    """(early response, partition): cluster id and topic/partition validation."""
    if msg.cluster_id is not None and node.cluster_id is not None and msg.cluster_id != node.cluster_id:
        return build(ErrorCode.INCONSISTENT_CLUSTER_ID, ErrorCode.NONE, -1, -1), None
    part = m.single_partition(msg)
    if part is None:
        return build(ErrorCode.INVALID_REQUEST, ErrorCode.NONE, -1, -1), None
    if part.leader_epoch < node.epoch:
        return build(ErrorCode.NONE, ErrorCode.FENCED_LEADER_EPOCH, node.leader_id(), node.epoch), None
    if part.leader_id < 0 or (part.leader_id == node.local.id):
        return build(ErrorCode.NONE, ErrorCode.INVALID_REQUEST, node.leader_id(), node.epoch), None
    return None, part


def handle_begin_quorum(node: NodeContext, msg: Any) -> Any:
    build = m.begin_quorum_response
    early, part = _check(node, msg, build)
    if early is not None:
        return early
    dir_ok = part.voter_directory_id == ZERO_UUID or node.local.directory_id in (
        None,
        part.voter_directory_id,
    )
    if (msg.voter_id >= 0 and msg.voter_id != node.local.id) or not dir_ok:
        return build(ErrorCode.NONE, ErrorCode.INVALID_VOTER_KEY, node.leader_id(), node.epoch)
    node.maybe_transition(part.leader_id, part.leader_epoch)
    return build(ErrorCode.NONE, ErrorCode.NONE, node.leader_id(), node.epoch)


def end_epoch_backoff_ms(node: NodeContext, preferred: list[ReplicaKey]) -> int:
    """Invariant 3."""
    position = next((i for i, k in enumerate(preferred) if k.matches(node.local)), len(preferred))
    most = node.config.election_backoff_max_ms
    if position == 0:
        return 0
    if position >= len(preferred):
        return most
    return min(most, (most >> (len(preferred) - 1)) << (position - 1))


def handle_end_quorum(node: NodeContext, msg: Any) -> Any:
    build = m.end_quorum_response
    early, part = _check(node, msg, build)
    if early is not None:
        return early
    node.maybe_transition(part.leader_id, part.leader_epoch)
    d = node.data
    if isinstance(d, Follower) and d.leader_id == part.leader_id and node.epoch == part.leader_epoch:
        d.fetch_deadline = node.now + end_epoch_backoff_ms(node, m.preferred_of(part))
        d.ended_by_leader = True
    return build(ErrorCode.NONE, ErrorCode.NONE, node.leader_id(), node.epoch)


def handle_epoch_response(node: NodeContext, source: int, request: Any, resp: Any) -> None:
    if resp.error_code != ErrorCode.NONE:
        return
    part = m.single_partition(resp)
    if part is None:
        return
    if part.leader_epoch > node.epoch:
        node.maybe_transition(part.leader_id, part.leader_epoch)
        return
    d = node.data
    if isinstance(request, m.EndQuorumEpochRequest) and isinstance(d, Resigned):
        if part.error_code == ErrorCode.NONE and part.leader_epoch == node.epoch:
            d.unacked.discard(source)
