"""KIP-853 membership in the simulator: operators' AddRaftVoter / RemoveRaftVoter, observers that join with
``--no-initial-controllers`` (no voter set, only bootstrap servers) and auto-join, and invariant (10) on every
voter change a leader appends.

Contracts:
1. A joining node starts with an empty voter set at kraft.version 1 and finds the leader through bootstrap ids
   (-2, -3, ... as Kafka numbers ``controller.quorum.bootstrap.servers``); the cluster routes a request to a
   bootstrap id to the node it names and the answer comes back from that id, as a socket to that address would.
2. ApiVersions (AddRaftVoter's probe of the new voter) is answered by the simulated shell of an up node, as
   kwire's server answers it: the kraft.version range this build supports. A down node refuses the connection.
3. Operators' requests are fire-and-forget (their answers are dropped): the invariants judge what the leader
   appends, not what it answers.
4. (10) for every Voters record a leader appends that changes its voter set: its epoch has a committed record,
   at most one voter set is uncommitted in its log, the set differs by one voter from the previous one, and an
   auto-join (AddRaftVoter without AckWhenCommitted) never adds a key that was a committed voter (KAFKA-19850).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from generated.add_raft_voter_request import AddRaftVoterRequest
from generated.add_raft_voter_request import Listener as AddListener
from generated.api_versions_response import ApiVersionsResponse, SupportedFeatureKey
from generated.remove_raft_voter_request import RemoveRaftVoterRequest
from kraftd.core.events import RequestReceived
from kraftd.core.log import LogBatch
from kraftd.core.node import RaftNode
from kraftd.core.states import Leader
from kraftd.core.types import Listener, VoterSet
from kraftd.core.voters import KRAFT_VERSION_MAX, control_entries
from kwire.control import ControlRecordType as CT

if TYPE_CHECKING:
    from collections import deque

    from kraftd.core.config import QuorumConfig
    from kraftd.core.events import Event
    from kraftd.core.types import ReplicaKey
    from kraftd.sim.invariants import Checker


class Cluster(Protocol):
    """What membership needs of kraftd.sim.cluster.Cluster (a Protocol: the cluster imports this module)."""

    now: int
    config: QuorumConfig
    keys: dict[int, ReplicaKey]
    checker: Checker
    trace: deque[str]
    start_voters: dict[int, VoterSet]
    node_configs: dict[int, QuorumConfig]
    bootstrap_servers: dict[int, int]

    def leader(self) -> RaftNode | None: ...

    def deliver(self, node_id: int, event: Event) -> None: ...


LISTENER = "CONTROLLER"


def listeners_of(node_id: int) -> tuple[Listener, ...]:
    return (Listener(LISTENER, f"n{node_id}", 9093),)


def make_joiner(c: Cluster, node_id: int, bootstrap: list[int], auto_join: bool) -> None:
    """Contract 1: ``node_id`` starts (at its next start) as a ``--no-initial-controllers`` observer."""
    ids = tuple(-(i + 2) for i in range(len(bootstrap)))
    for alias, target in zip(ids, bootstrap, strict=True):
        c.bootstrap_servers[alias] = target
    c.start_voters[node_id] = VoterSet(())
    c.node_configs[node_id] = replace(
        c.config, bootstrap_ids=ids, auto_join=auto_join, local_listeners=listeners_of(node_id)
    )


def api_versions(msg: Any) -> ApiVersionsResponse:
    """Contract 2."""
    del msg
    return ApiVersionsResponse(
        error_code=0, supported_features=[SupportedFeatureKey("kraft.version", 0, KRAFT_VERSION_MAX)]
    )


def add_voter(c: Cluster, node_id: int) -> None:
    """An operator's AddRaftVoter (v1, AckWhenCommitted) to the current leader for ``node_id``."""
    lead = c.leader()
    if lead is None:
        return
    key = c.keys[node_id]
    req = AddRaftVoterRequest(
        cluster_id="sim",
        timeout_ms=c.config.request_timeout_ms,
        voter_id=key.id,
        voter_directory_id=key.directory_id or uuid.UUID(int=0),
        listeners=[AddListener(e.name, e.host, e.port) for e in listeners_of(node_id)],
        ack_when_committed=True,
    )
    c.trace.append(f"{c.now:>7} add voter n{node_id} via n{lead.local.id}")
    c.deliver(lead.local.id, RequestReceived(c.now, -1, req))


def remove_voter(c: Cluster, node_id: int) -> None:
    """An operator's RemoveRaftVoter to the current leader (its answer is not awaited)."""
    lead = c.leader()
    if lead is None:
        return
    key = c.keys[node_id]
    dir_id = key.directory_id or uuid.UUID(int=0)
    req = RemoveRaftVoterRequest(cluster_id="sim", voter_id=key.id, voter_directory_id=dir_id)
    c.trace.append(f"{c.now:>7} remove voter n{node_id} via n{lead.local.id}")
    c.deliver(lead.local.id, RequestReceived(c.now, -1, req))


def check_voter_change(
    c: Cluster, nid: int, core: RaftNode, d: Leader, batches: tuple[LogBatch, ...]
) -> None:
    """Contract 4, for the batches a leader just appended."""
    for b in batches:
        if b.base_offset == d.epoch_start_offset:
            continue  # the epoch-start batch restates the voters; it changes nothing
        if not any(k == CT.KRAFT_VOTERS for _, k, _ in control_entries(b)):
            continue
        hist = core.voter_history.history
        after = hist[-1][1].voters
        before = hist[-2][1].voters if len(hist) > 1 else after
        pending = sum(1 for off, _ in hist if off >= core.high_watermark)
        committed_own = core.high_watermark > d.epoch_start_offset
        p = d.voter_change
        auto_join = p is not None and p.kind == "add" and not p.ack_when_committed
        c.checker.on_voter_change(nid, committed_own, pending, set(before), set(after), auto_join)
