"""Auto-join (KIP-853 ``controller.quorum.auto.join.enable``; KIP-1186): an observer adds itself as a voter.

Invariants:
1. Only a Follower that is an observer and has fetched from its leader in this epoch asks, at most once per
   fetch timeout, with one request outstanding; the request goes beside the fetch (it never delays it).
2. When the voter set holds this node's id under another directory id (its disk was replaced), the stale key
   is removed first (RemoveRaftVoter); otherwise it asks AddRaftVoter with AckWhenCommitted false.
3. A node joins at most once (KAFKA-19850): once it has been a voter, or the leader answers INVALID_VOTER_KEY
   (the key was a voter before), it never asks again, so a controller the operator removed stays removed.
4. At kraft.version 0 a voter following a leader tells it, once per epoch and beside the fetch, its directory id,
   listeners and kraft.version range (UpdateRaftVoter, remembered by the leader without a record), so that
   an upgrade to kraft.version 1 knows every voter (kraftd.core.kraft_upgrade).
"""

from __future__ import annotations

from typing import Any

import generated.add_raft_voter_request as AREQ
import generated.remove_raft_voter_request as RREQ
import generated.update_raft_voter_request as UREQ
from kraftd.core.context import NodeContext
from kraftd.core.states import Follower
from kraftd.core.types import ZERO_UUID
from kwire.errors import ErrorCode

JOIN_REQUESTS = (AREQ.AddRaftVoterRequest, RREQ.RemoveRaftVoterRequest, UREQ.UpdateRaftVoterRequest)


def poll_update(node: NodeContext) -> None:
    """Invariant 4."""
    d = node.data
    if not isinstance(d, Follower) or not d.has_fetched or not node.is_voter or node.shutting_down:
        return
    if (
        not node.config.report_to_leader
        or node.voter_history.kraft_version != 0
        or node.updated_epoch == node.epoch
        or node.now < node.update_not_before
    ):
        return
    if any(isinstance(i.message, UREQ.UpdateRaftVoterRequest) for i in node.inflight.values()):
        return
    node.update_not_before = node.now + node.config.fetch_timeout_ms
    local = node.local
    req = UREQ.UpdateRaftVoterRequest(
        cluster_id=node.cluster_id,
        current_leader_epoch=node.epoch,
        voter_id=local.id,
        voter_directory_id=local.directory_id if local.directory_id is not None else ZERO_UUID,
        listeners=[UREQ.Listener(e.name, e.host, e.port) for e in node.config.local_listeners],
        kraft_version_feature=UREQ.KRaftVersionFeature(0, 1),
    )
    node.send(d.leader_id, req, side=True)


def poll(node: NodeContext) -> None:
    cfg = node.config
    if not cfg.auto_join or node.has_joined:
        return
    if node.is_voter:
        node.has_joined = True  # invariant 3
        return
    d = node.data
    if (
        not isinstance(d, Follower)
        or not d.has_fetched
        or node.shutting_down
        or node.now < node.join_not_before
    ):
        return
    if any(isinstance(i.message, JOIN_REQUESTS) for i in node.inflight.values()):
        return
    node.join_not_before = node.now + cfg.fetch_timeout_ms
    local = node.local
    stale = node.voters.key_of(local.id)
    req: Any
    if stale is not None:
        req = RREQ.RemoveRaftVoterRequest(
            cluster_id=node.cluster_id,
            voter_id=stale.id,
            voter_directory_id=stale.directory_id if stale.directory_id is not None else ZERO_UUID,
        )
    else:
        req = AREQ.AddRaftVoterRequest(
            cluster_id=node.cluster_id,
            timeout_ms=cfg.request_timeout_ms,
            voter_id=local.id,
            voter_directory_id=local.directory_id if local.directory_id is not None else ZERO_UUID,
            listeners=[AREQ.Listener(e.name, e.host, e.port) for e in cfg.local_listeners],
            ack_when_committed=False,
        )
    node.send(d.leader_id, req, side=True)


def handle_response(node: NodeContext, request: Any, resp: Any) -> None:
    if isinstance(request, UREQ.UpdateRaftVoterRequest):
        if resp.error_code == ErrorCode.NONE and request.current_leader_epoch == node.epoch:
            node.updated_epoch = node.epoch
        return
    if resp.error_code == ErrorCode.INVALID_VOTER_KEY:
        node.has_joined = True  # invariant 3: the leader says this key was a voter before
