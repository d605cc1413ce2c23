"""KIP-853 voter RPCs served by the leader. UpdateRaftVoter v0: a voter tells the leader its current listeners
and supported kraft.version range (Kafka followers send it to every new leader). RemoveRaftVoter v0: an operator
removes a voter (invariants 5-7).

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
5. RemoveRaftVoter: INCONSISTENT_CLUSTER_ID, NOT_LEADER_OR_FOLLOWER, INVALID_REQUEST without a directory id;
   REQUEST_TIMED_OUT while another change is pending or uncommitted or the own epoch is uncommitted;
   UNSUPPORTED_VERSION below kraft.version 1; VOTER_NOT_FOUND for an unknown key or the last voter.
6. The Voters record without the voter is appended and in force at once (the leader's HWM counts the new set,
   without itself when removed: KAFKA-16530); the answer waits until it commits (NONE) or the request timeout
   passes (REQUEST_TIMED_OUT), or the epoch ends (NOT_LEADER_OR_FOLLOWER).
7. A leader that is not in the committed voter set resigns once the change commits.
"""

from __future__ import annotations

import base64
from typing import Any

import generated.add_raft_voter_response as ARESP
import generated.remove_raft_voter_request as RREQ
import generated.remove_raft_voter_response as RRESP
import generated.update_raft_voter_request as UREQ
import generated.update_raft_voter_response as URESP
from kraftd.core.context import NodeContext
from kraftd.core.effects import SendResponse
from kraftd.core.states import Leader, PendingVoterChange
from kraftd.core.types import ZERO_UUID, Listener, ReplicaKey, VoterSet
from kraftd.core.voters import voters_record
from kwire.control import ControlRecordType as CT
from kwire.errors import ErrorCode

UpdateRaftVoterRequest = UREQ.UpdateRaftVoterRequest
UpdateRaftVoterResponse = URESP.UpdateRaftVoterResponse
RemoveRaftVoterRequest = RREQ.RemoveRaftVoterRequest
RemoveRaftVoterResponse = RRESP.RemoveRaftVoterResponse


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
        # kraft.version 0 (KAFKA-16538): the static voter set, and the endpoints every node dials, stay as
        # configured (controller.quorum.voters); the voter's key, listeners and kraft.version range are kept
        # as volatile state for an upgrade to kraft.version 1 (kraftd.core.kraft_upgrade), nothing is logged.
        range_ = (feature.min_supported_version, feature.max_supported_version)
        node.volatile_voters[key.id] = (key, listeners, range_)
    node.note_voter_fetch(d, key.id)
    return answer(ErrorCode.NONE)


def _removed(code: ErrorCode, text: str | None = None) -> Any:
    return RemoveRaftVoterResponse(error_code=int(code), error_message=text)


def _replica_key(key: ReplicaKey) -> str:
    """Kafka's ReplicaKey.toString (its messages print voters this way)."""
    if key.directory_id is None:
        directory = "<undefined>"
    else:
        directory = base64.urlsafe_b64encode(key.directory_id.bytes).decode("ascii").rstrip("=")
    return f"ReplicaKey(id={key.id}, directoryId={directory})"


def handle_remove_voter(node: NodeContext, token: int, msg: Any) -> Any | None:
    """Invariants 5-6; None when the answer waits for the commit."""
    if msg.cluster_id is not None and node.cluster_id is not None and msg.cluster_id != node.cluster_id:
        return _removed(ErrorCode.INCONSISTENT_CLUSTER_ID)
    d = node.data
    if not isinstance(d, Leader) or node.shutting_down:
        return _removed(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    if msg.voter_id < 0 or msg.voter_directory_id == ZERO_UUID:
        return _removed(ErrorCode.INVALID_REQUEST, "Remove voter request didn't include a valid voter")
    bugs = node.bugs
    if d.voter_change is not None and not bugs.two_uncommitted_changes:
        return _removed(ErrorCode.REQUEST_TIMED_OUT, "another voter change is in progress")
    if not own_epoch_committed(node, d) and not bugs.reconfig_before_commit:
        return _removed(ErrorCode.REQUEST_TIMED_OUT, "the leader has not committed its epoch yet")
    hist = node.voter_history
    if hist.kraft_version < 1:
        return _removed(
            ErrorCode.UNSUPPORTED_VERSION, f"kraft.version is {hist.kraft_version}; removing needs 1"
        )
    uncommitted = hist.latest_offset() < 0 or hist.has_uncommitted(node.high_watermark)
    if uncommitted and not (bugs.two_uncommitted_changes or bugs.reconfig_before_commit):
        return _removed(ErrorCode.REQUEST_TIMED_OUT, "the latest voter change is not committed yet")
    key = ReplicaKey(msg.voter_id, msg.voter_directory_id)
    current = node.voters
    if not any(v == key for v in current.voters) or len(current.voters) == 1:
        voters = ", ".join(_replica_key(v) for v in sorted(current.voters, key=lambda v: v.id))
        return _removed(
            ErrorCode.VOTER_NOT_FOUND,
            f"Cannot remove voter {_replica_key(key)} from the set of voters [{voters}]",
        )
    node.append_control([(CT.KRAFT_VOTERS, voters_record(current.without(key)))])
    if d.voter_change is not None:  # only with BugFlags.two_uncommitted_changes
        _settle(node, d, ErrorCode.REQUEST_TIMED_OUT)
    d.voter_change = PendingVoterChange(
        token, node.log.end_offset - 1, node.now + node.config.request_timeout_ms
    )
    return None


def _change_answer(p: PendingVoterChange, code: ErrorCode, text: str | None = None) -> Any:
    if p.kind == "add":
        return ARESP.AddRaftVoterResponse(error_code=int(code), error_message=text)
    return _removed(code, text)


def _settle(node: NodeContext, d: Leader, code: ErrorCode, text: str | None = None) -> None:
    p = d.voter_change
    d.voter_change = None
    if p is not None and p.token is not None:
        node.out.append(SendResponse(p.token, _change_answer(p, code, text)))


def poll_voter_change(node: NodeContext, d: Leader) -> None:
    """Invariants 6-7 (and add_voter invariant 5): answer a pending change once committed (or timed out);
    resign when removed."""
    p = d.voter_change
    if p is None:
        return
    if p.offset >= 0 and node.high_watermark > p.offset:
        _settle(node, d, ErrorCode.NONE)
        if not node.voter_history.committed(node.high_watermark).is_voter(node.local):
            d.resign_requested = True
    elif node.now >= p.deadline:
        if p.offset < 0 and p.key is not None:
            node.probe_endpoints.pop(p.key.id, None)
        _settle(node, d, ErrorCode.REQUEST_TIMED_OUT, "the change did not commit")


def abandon_voter_change(node: NodeContext, d: Leader) -> None:
    if d.voter_change is not None:
        p = d.voter_change
        if p.key is not None:
            node.probe_endpoints.pop(p.key.id, None)
        _settle(node, d, ErrorCode.NOT_LEADER_OR_FOLLOWER)
