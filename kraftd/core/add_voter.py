"""AddRaftVoter v0-1 on the leader (KIP-853 as shipped; KIP-1186 for v1's AckWhenCommitted).

Invariants (the checks in Kafka's order; the change shares the leader's single voter-change slot with
RemoveRaftVoter, so at most one change is ever pending or uncommitted):
1. INCONSISTENT_CLUSTER_ID for another cluster; NOT_LEADER_OR_FOLLOWER on a non-leader; INVALID_REQUEST without
   a directory id or without a listener named like the leader's default listener.
2. REQUEST_TIMED_OUT while another change is pending or the leader has not committed its own epoch;
   UNSUPPORTED_VERSION below kraft.version 1; REQUEST_TIMED_OUT while the newest voter set is uncommitted;
   DUPLICATE_VOTER when a voter already has that id.
3. An auto-join request (AckWhenCommitted false, KIP-1186) for a voter key the log has already seen as a voter
   is INVALID_VOTER_KEY: a controller the operator removed is not re-added by its own auto-join (KAFKA-19850).
4. The leader then probes the new voter with ApiVersions on the default listener: an error or no answer is
   REQUEST_TIMED_OUT; a kraft.version range that excludes the finalized level is INVALID_REQUEST; a voter that
   has not fetched up to the leader's log end as an observer (Kafka's caught-up rule, fetched within the hour)
   is REQUEST_TIMED_OUT.
5. Otherwise the Voters record with the new voter is appended and in force at once, so it commits only with a
   majority of the NEW set. AckWhenCommitted (v0 always) answers NONE once it commits; otherwise NONE at once
   and the slot stays taken until the commit. The request timeout (min of the request's TimeoutMs and the
   leader's) answers REQUEST_TIMED_OUT; losing leadership answers NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

from typing import Any

import generated.add_raft_voter_request as AREQ
import generated.add_raft_voter_response as ARESP
import generated.api_versions_request as AVREQ
from generated.api_versions_response import ApiVersionsResponse
from kraftd.core.context import NodeContext
from kraftd.core.effects import SendResponse
from kraftd.core.states import Leader, PendingVoterChange
from kraftd.core.types import ZERO_UUID, Listener, ReplicaKey
from kraftd.core.voters import voters_record
from kwire.control import ControlRecordType as CT
from kwire.errors import ErrorCode

AddRaftVoterRequest = AREQ.AddRaftVoterRequest
AddRaftVoterResponse = ARESP.AddRaftVoterResponse
ApiVersionsRequest = AVREQ.ApiVersionsRequest
KRAFT_VERSION_FEATURE = "kraft.version"
CAUGHT_UP_WINDOW_MS = 3600 * 1000  # Kafka: a replica that fetched within the hour and once reached the end


def added(code: ErrorCode, text: str | None = None) -> Any:
    return AddRaftVoterResponse(error_code=int(code), error_message=text)


def probe_request(software_version: str) -> ApiVersionsRequest:
    return ApiVersionsRequest(client_software_name="kraftd", client_software_version=software_version)


def handle_add_voter(node: NodeContext, token: int, msg: Any) -> Any | None:
    """Invariants 1-4; None when the answer waits for the probe (and maybe the commit)."""
    if msg.cluster_id is not None and node.cluster_id is not None and msg.cluster_id != node.cluster_id:
        return added(ErrorCode.INCONSISTENT_CLUSTER_ID)
    d = node.data
    if not isinstance(d, Leader) or node.shutting_down:
        return added(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    listeners = tuple(Listener(x.name, x.host, x.port) for x in msg.listeners)
    if msg.voter_id < 0 or msg.voter_directory_id == ZERO_UUID:
        return added(ErrorCode.INVALID_REQUEST, "Add voter request didn't include a valid voter")
    if not any(x.name == node.config.listener_name for x in listeners):
        return added(ErrorCode.INVALID_REQUEST, f"no listener named {node.config.listener_name}")
    bugs = node.bugs
    if d.voter_change is not None and not bugs.add_while_uncommitted:
        return added(ErrorCode.REQUEST_TIMED_OUT, "another voter change is in progress")
    if node.high_watermark <= d.epoch_start_offset and not bugs.add_before_commit:
        return added(ErrorCode.REQUEST_TIMED_OUT, "the leader has not committed its epoch yet")
    hist = node.voter_history
    if hist.kraft_version < 1:
        return added(ErrorCode.UNSUPPORTED_VERSION, f"kraft.version is {hist.kraft_version}; adding needs 1")
    uncommitted = hist.latest_offset() < 0 or hist.has_uncommitted(node.high_watermark)
    early = bugs.add_before_commit and node.high_watermark <= d.epoch_start_offset
    if uncommitted and not (bugs.add_while_uncommitted or early):
        return added(ErrorCode.REQUEST_TIMED_OUT, "the latest voter change is not committed yet")
    key = ReplicaKey(msg.voter_id, msg.voter_directory_id)
    if node.voters.has_id(key.id):
        return added(ErrorCode.DUPLICATE_VOTER, f"{key.id} is already a voter of {list(node.voters.ids)}")
    ack = bool(getattr(msg, "ack_when_committed", True))
    if not ack and key in hist.seen and not bugs.auto_join_rejoins:
        return added(ErrorCode.INVALID_VOTER_KEY, f"{key} was a voter before; it is not auto-joined again")
    timeout = node.config.request_timeout_ms
    if msg.timeout_ms > 0:
        timeout = min(timeout, msg.timeout_ms)
    if d.voter_change is not None:  # only with BugFlags.add_while_uncommitted: the other requester times out
        d.voter_change = None
    d.voter_change = PendingVoterChange(token, -1, node.now + timeout, "add", key, listeners, ack)
    node.probe_endpoints[key.id] = listeners
    node.send(key.id, probe_request(node.config.software_version))
    return None


def handle_probe_response(node: NodeContext, source: int, resp: ApiVersionsResponse) -> None:
    """Invariants 4-5."""
    d = node.data
    if not isinstance(d, Leader):
        return
    p = d.voter_change
    if p is None or p.kind != "add" or p.offset >= 0 or p.key is None or p.key.id != source:
        return
    node.probe_endpoints.pop(source, None)
    key = p.key
    if resp.error_code != ErrorCode.NONE:
        code = ErrorCode.from_code(resp.error_code)
        return _finish(
            node, d, ErrorCode.REQUEST_TIMED_OUT, f"ApiVersions to the new voter failed: {code.name}"
        )
    version = node.voter_history.kraft_version
    feature = next((f for f in resp.supported_features if f.name == KRAFT_VERSION_FEATURE), None)
    if feature is None or not feature.min_version <= version <= feature.max_version:
        have = f"[{feature.min_version}, {feature.max_version}]" if feature is not None else "none"
        return _finish(
            node, d, ErrorCode.INVALID_REQUEST, f"kraft.version {version} is outside the voter's range {have}"
        )
    q = d.replicas.get(key.id)
    caught_up = (
        q is not None
        and q.key.matches(key)
        and q.last_caught_up_ms >= 0
        and q.last_fetch_ms > node.now - CAUGHT_UP_WINDOW_MS
    )
    if not caught_up:
        return _finish(node, d, ErrorCode.REQUEST_TIMED_OUT, f"{key} has not caught up to the leader's log")
    node.append_control([(CT.KRAFT_VOTERS, voters_record(node.voters.with_voter(key, p.listeners)))])
    p.offset = node.log.end_offset - 1
    if not p.ack_when_committed and p.token is not None:
        node.out.append(SendResponse(p.token, added(ErrorCode.NONE)))
        p.token = None


def _finish(node: NodeContext, d: Leader, code: ErrorCode, text: str | None = None) -> None:
    p = d.voter_change
    d.voter_change = None
    if p is not None and p.token is not None:
        node.out.append(SendResponse(p.token, added(code, text)))
