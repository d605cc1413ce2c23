"""KIP-853 voter RPCs served by the leader. UpdateRaftVoter v0: a voter tells the leader its current listeners
and supported kraft.version range (Kafka followers send it to every new leader).

Invariants (the checks in Kafka's order; every answer carries the leader id, epoch and the leader's endpoint on
the default listener):
1. INCONSISTENT_CLUSTER_ID for another cluster; FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for an older / newer
   epoch; NOT_LEADER_OR_FOLLOWER on a non-leader; INVALID_REQUEST without a voter id and directory id or without
   listeners.
2. REQUEST_TIMED_OUT while the leader has not committed a record of its own epoch, or (kraft.version 1) while
   the newest voter set in the log is uncommitted: at most one voter change is ever uncommitted.
3. INVALID_REQUEST when the voter's kraft.version range excludes the finalized kraft.version or its listeners
   lack the default listener; VOTER_NOT_FOUND when no voter has that key (at kraft.version 0 the directory id
   is not compared, as the static voter set has none).
4. On success at kraft.version 1 the leader appends a Voters record with the voter's new listeners (it takes
   effect at once, uncommitted) and answers without waiting for the commit; at kraft.version 0 it only
   remembers the listeners. The request counts for check-quorum like a fetch.
"""

from __future__ import annotations

from typing import Any

import generated.update_raft_voter_request as UREQ
import generated.update_raft_voter_response as URESP
from kraftd.core.context import NodeContext
from kraftd.core.states import Leader
from kraftd.core.types import ZERO_UUID, Listener, ReplicaKey, VoterSet
from kraftd.core.voters import voters_record
from kwire.control import ControlRecordType as CT
from kwire.errors import ErrorCode

UpdateRaftVoterRequest = UREQ.UpdateRaftVoterRequest
UpdateRaftVoterResponse = URESP.UpdateRaftVoterResponse


def _answer(node: NodeContext, code: ErrorCode, endpoint: Listener | None) -> Any:
    host, port = (endpoint.host, endpoint.port) if endpoint is not None else ("", 0)
    leader = URESP.CurrentLeader(leader_id=node.leader_id(), leader_epoch=node.epoch, host=host, port=port)
    return UpdateRaftVoterResponse(error_code=int(code), current_leader=leader)


def _leader_endpoint(node: NodeContext) -> Listener | None:
    """The leader's endpoint on the default listener, as known when the request arrived."""
    if node.leader_id() != node.local.id:
        return None
    eps = node.voters.endpoints_of(node.local.id)
    return next((e for e in eps if e.name == node.config.listener_name), None)


def own_epoch_committed(node: NodeContext, d: Leader) -> bool:
    return node.high_watermark > d.epoch_start_offset


def handle_update_voter(node: NodeContext, msg: Any) -> Any:
    ep = _leader_endpoint(node)

    def answer(code: ErrorCode) -> Any:
        return _answer(node, code, ep)

    if msg.cluster_id is not None and node.cluster_id is not None and msg.cluster_id != node.cluster_id:
        return answer(ErrorCode.INCONSISTENT_CLUSTER_ID)
    if msg.current_leader_epoch < node.epoch:
        return answer(ErrorCode.FENCED_LEADER_EPOCH)
    if msg.current_leader_epoch > node.epoch:
        return answer(ErrorCode.UNKNOWN_LEADER_EPOCH)
    d = node.data
    if not isinstance(d, Leader) or node.shutting_down:
        return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    if msg.voter_id < 0 or msg.voter_directory_id == ZERO_UUID or not msg.listeners:
        return answer(ErrorCode.INVALID_REQUEST)
    hist = node.voter_history
    if not own_epoch_committed(node, d):
        return answer(ErrorCode.REQUEST_TIMED_OUT)
    version = hist.kraft_version
    if version >= 1 and (hist.latest_offset() < 0 or hist.has_uncommitted(node.high_watermark)):
        return answer(ErrorCode.REQUEST_TIMED_OUT)
    feature = msg.kraft_version_feature
    if not feature.min_supported_version <= version <= feature.max_supported_version:
        return answer(ErrorCode.INVALID_REQUEST)
    listeners = tuple(Listener(x.name, x.host, x.port) for x in msg.listeners)
    if not any(x.name == node.config.listener_name for x in listeners):
        return answer(ErrorCode.INVALID_REQUEST)
    key = ReplicaKey(msg.voter_id, msg.voter_directory_id)
    current = node.voters
    found = next((v for v in current.voters if v.id == key.id), None)
    if found is None or (version >= 1 and found.directory_id != key.directory_id):
        return answer(ErrorCode.VOTER_NOT_FOUND)
    updated = VoterSet(
        current.voters,
        tuple((i, listeners if i == key.id else current.endpoints_of(i)) for i in current.ids),
    )
    if version >= 1:
        node.append_control([(CT.KRAFT_VOTERS, voters_record(updated))])
    else:
        hist.history[0] = (hist.history[0][0], updated)  # remembered, not logged (kraft.version 0)
    node.note_voter_fetch(d, key.id)
    return answer(ErrorCode.NONE)
