"""Builders and readers for the KRaft RPCs, over the generated message classes (docs/CONTRACTS.md).

Invariants:
1. Every request names exactly one partition: ``__cluster_metadata`` partition 0 (Fetch by topic id
   ``METADATA_TOPIC_ID``). ``single_partition`` returns None for anything else (INVALID_REQUEST).
2. The core fills message contents only; the shell picks wire versions. Fields a lower version lacks are
   either ignorable or left at their defaults — except ``PreVote``, whose non-default value makes an old
   peer's version unusable (the shell then answers with a synthesized UNSUPPORTED_VERSION response).
3. ``error_response`` builds the synthesized response of a failed send, so shell and simulator agree.
"""

from __future__ import annotations

from typing import Any

import generated.add_raft_voter_request as AVOREQ
import generated.add_raft_voter_response as AVORESP
import generated.api_versions_request as AVREQ
import generated.api_versions_response as AVRESP
import generated.begin_quorum_epoch_request as BREQ
import generated.begin_quorum_epoch_response as BRESP
import generated.end_quorum_epoch_request as EREQ
import generated.end_quorum_epoch_response as ERESP
import generated.fetch_request as FREQ
import generated.fetch_response as FRESP
import generated.fetch_snapshot_request as SREQ
import generated.fetch_snapshot_response as SRESP
import generated.read_offset_request as RREQ
import generated.read_offset_response as RRESP
import generated.remove_raft_voter_request as RVOREQ
import generated.remove_raft_voter_response as RVORESP
import generated.update_raft_voter_request as UVOREQ
import generated.update_raft_voter_response as UVORESP
import generated.vote_request as VREQ
import generated.vote_response as VRESP
from kraftd.core.log import LogBatch, OffsetAndEpoch
from kraftd.core.types import METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID, ZERO_UUID, ReplicaKey
from kwire.errors import ErrorCode

VoteRequest = VREQ.VoteRequest
VoteResponse = VRESP.VoteResponse
BeginQuorumEpochRequest = BREQ.BeginQuorumEpochRequest
BeginQuorumEpochResponse = BRESP.BeginQuorumEpochResponse
EndQuorumEpochRequest = EREQ.EndQuorumEpochRequest
EndQuorumEpochResponse = ERESP.EndQuorumEpochResponse
FetchRequest = FREQ.FetchRequest
FetchResponse = FRESP.FetchResponse
FetchSnapshotRequest = SREQ.FetchSnapshotRequest
FetchSnapshotResponse = SRESP.FetchSnapshotResponse
ReadOffsetRequest = RREQ.ReadOffsetRequest
ReadOffsetResponse = RRESP.ReadOffsetResponse


def _dir(key: ReplicaKey) -> Any:
    return key.directory_id if key.directory_id is not None else ZERO_UUID


def key_of(node_id: int, directory_id: Any) -> ReplicaKey:
    return ReplicaKey(node_id, None if directory_id == ZERO_UUID else directory_id)


def single_partition(msg: Any) -> Any | None:
    """The one metadata partition a KRaft RPC carries, or None when the topic/partition is not ours."""
    if isinstance(msg, FetchRequest):
        fetch_topics = msg.topics
        if len(fetch_topics) != 1 or fetch_topics[0].topic_id != METADATA_TOPIC_ID:
            return None
        parts = fetch_topics[0].partitions
        if len(parts) != 1 or parts[0].partition != METADATA_PARTITION:
            return None
        return parts[0]
    topics: list[Any] = msg.responses if isinstance(msg, FetchResponse) else msg.topics
    if len(topics) != 1:
        return None
    t = topics[0]
    if isinstance(msg, FetchSnapshotRequest | FetchSnapshotResponse):
        if t.name != METADATA_TOPIC or len(t.partitions) != 1:
            return None
        p = t.partitions[0]
        index = p.partition if isinstance(msg, FetchSnapshotRequest) else p.index
        return p if index == METADATA_PARTITION else None
    if isinstance(msg, FetchResponse):
        if t.topic_id != METADATA_TOPIC_ID and t.topic != METADATA_TOPIC:
            return None
    elif t.topic_name != METADATA_TOPIC:
        return None
    if len(t.partitions) != 1 or t.partitions[0].partition_index != METADATA_PARTITION:
        return None
    return t.partitions[0]


def vote_request(
    cluster_id: str | None,
    dest: ReplicaKey,
    epoch: int,
    local: ReplicaKey,
    last: OffsetAndEpoch,
    pre_vote: bool,
) -> Any:
    part = VREQ.PartitionData(
        partition_index=METADATA_PARTITION,
        replica_epoch=epoch,
        replica_id=local.id,
        replica_directory_id=_dir(local),
        voter_directory_id=_dir(dest),
        last_offset_epoch=last.epoch,
        last_offset=last.offset,
        pre_vote=pre_vote,
    )
    return VoteRequest(
        cluster_id=cluster_id,
        voter_id=dest.id,
        topics=[VREQ.TopicData(topic_name=METADATA_TOPIC, partitions=[part])],
    )


def vote_response(error: ErrorCode, part_error: ErrorCode, leader_id: int, epoch: int, granted: bool) -> Any:
    topics = []
    if error == ErrorCode.NONE:
        part = VRESP.PartitionData(
            partition_index=METADATA_PARTITION,
            error_code=int(part_error),
            leader_id=leader_id,
            leader_epoch=epoch,
            vote_granted=granted,
        )
        topics = [VRESP.TopicData(topic_name=METADATA_TOPIC, partitions=[part])]
    return VoteResponse(error_code=int(error), topics=topics)


def begin_quorum_request(cluster_id: str | None, dest: ReplicaKey, leader_id: int, epoch: int) -> Any:
    part = BREQ.PartitionData(
        partition_index=METADATA_PARTITION,
        voter_directory_id=_dir(dest),
        leader_id=leader_id,
        leader_epoch=epoch,
    )
    return BeginQuorumEpochRequest(
        cluster_id=cluster_id,
        voter_id=dest.id,
        topics=[BREQ.TopicData(topic_name=METADATA_TOPIC, partitions=[part])],
    )


def _epoch_response(
    cls: Any, mod: Any, error: ErrorCode, part_error: ErrorCode, leader_id: int, epoch: int
) -> Any:
    topics = []
    if error == ErrorCode.NONE:
        part = mod.PartitionData(
            partition_index=METADATA_PARTITION,
            error_code=int(part_error),
            leader_id=leader_id,
            leader_epoch=epoch,
        )
        topics = [mod.TopicData(topic_name=METADATA_TOPIC, partitions=[part])]
    return cls(error_code=int(error), topics=topics)


def begin_quorum_response(error: ErrorCode, part_error: ErrorCode, leader_id: int, epoch: int) -> Any:
    return _epoch_response(BeginQuorumEpochResponse, BRESP, error, part_error, leader_id, epoch)


def end_quorum_request(
    cluster_id: str | None, leader_id: int, epoch: int, preferred: list[ReplicaKey]
) -> Any:
    part = EREQ.PartitionData(
        partition_index=METADATA_PARTITION,
        leader_id=leader_id,
        leader_epoch=epoch,
        preferred_candidates=[
            EREQ.ReplicaInfo(candidate_id=k.id, candidate_directory_id=_dir(k)) for k in preferred
        ],
    )
    return EndQuorumEpochRequest(
        cluster_id=cluster_id, topics=[EREQ.TopicData(topic_name=METADATA_TOPIC, partitions=[part])]
    )


def preferred_of(part: Any) -> list[ReplicaKey]:
    """PreferredCandidates (v1) or, from a v0 request, PreferredSuccessors."""
    if part.preferred_candidates:
        return [key_of(r.candidate_id, r.candidate_directory_id) for r in part.preferred_candidates]
    return [ReplicaKey(i) for i in part.preferred_successors]


def end_quorum_response(error: ErrorCode, part_error: ErrorCode, leader_id: int, epoch: int) -> Any:
    return _epoch_response(EndQuorumEpochResponse, ERESP, error, part_error, leader_id, epoch)


def fetch_request(
    cluster_id: str | None,
    local: ReplicaKey,
    epoch: int,
    fetch_offset: int,
    last_fetched_epoch: int,
    max_wait_ms: int,
    max_bytes: int,
    high_watermark: int,
) -> Any:
    part = FREQ.FetchPartition(
        partition=METADATA_PARTITION,
        current_leader_epoch=epoch,
        fetch_offset=fetch_offset,
        last_fetched_epoch=last_fetched_epoch,
        partition_max_bytes=max_bytes,
        replica_directory_id=_dir(local),
        high_watermark=high_watermark,
    )
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=0,
        max_bytes=max_bytes,
        topics=[FREQ.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=[part])],
        cluster_id=cluster_id,
        replica_state=FREQ.ReplicaState(replica_id=local.id, replica_epoch=-1),
    )


def fetch_known_high_watermark(part: Any) -> int:
    """The high watermark a Fetch partition says its sender knows (v18+); int64 max when the version lacks it."""
    return int(part.high_watermark)


def fetch_replica_id(msg: Any) -> int:
    rid: int = msg.replica_state.replica_id
    return rid if rid >= 0 else int(msg.replica_id)


def fetch_response(
    error: ErrorCode,
    part_error: ErrorCode,
    leader_id: int,
    epoch: int,
    high_watermark: int,
    batches: list[LogBatch] | None = None,
    diverging: OffsetAndEpoch | None = None,
    snapshot: OffsetAndEpoch | None = None,
) -> Any:
    responses = []
    if error == ErrorCode.NONE:
        part = FRESP.PartitionData(
            partition_index=METADATA_PARTITION,
            error_code=int(part_error),
            high_watermark=high_watermark,
            records=b"".join(b.data for b in batches) if batches else b"",
            current_leader=FRESP.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch),
        )
        if diverging is not None:
            part.diverging_epoch = FRESP.EpochEndOffset(epoch=diverging.epoch, end_offset=diverging.offset)
        if snapshot is not None:
            part.snapshot_id = FRESP.SnapshotId(end_offset=snapshot.offset, epoch=snapshot.epoch)
        responses = [FRESP.FetchableTopicResponse(topic_id=METADATA_TOPIC_ID, partitions=[part])]
    return FetchResponse(error_code=int(error), responses=responses)


def snapshot_id_of(part: Any) -> OffsetAndEpoch:
    return OffsetAndEpoch(part.snapshot_id.end_offset, part.snapshot_id.epoch)


def fetch_snapshot_request(
    cluster_id: str | None,
    local: ReplicaKey,
    epoch: int,
    snapshot: OffsetAndEpoch,
    position: int,
    max_bytes: int,
) -> Any:
    part = SREQ.PartitionSnapshot(
        partition=METADATA_PARTITION,
        current_leader_epoch=epoch,
        snapshot_id=SREQ.SnapshotId(end_offset=snapshot.offset, epoch=snapshot.epoch),
        position=position,
        replica_directory_id=_dir(local),
    )
    return FetchSnapshotRequest(
        cluster_id=cluster_id,
        replica_id=local.id,
        max_bytes=max_bytes,
        topics=[SREQ.TopicSnapshot(name=METADATA_TOPIC, partitions=[part])],
    )


def fetch_snapshot_response(
    error: ErrorCode,
    part_error: ErrorCode,
    leader_id: int,
    epoch: int,
    snapshot: OffsetAndEpoch | None = None,
    size: int = 0,
    position: int = 0,
    chunk: bytes = b"",
) -> Any:
    topics = []
    if error == ErrorCode.NONE:
        sid = snapshot if snapshot is not None else OffsetAndEpoch(-1, -1)
        part = SRESP.PartitionSnapshot(
            index=METADATA_PARTITION,
            error_code=int(part_error),
            snapshot_id=SRESP.SnapshotId(end_offset=sid.offset, epoch=sid.epoch),
            current_leader=SRESP.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch),
            size=size,
            position=position,
            unaligned_records=chunk,
        )
        topics = [SRESP.TopicSnapshot(name=METADATA_TOPIC, partitions=[part])]
    return FetchSnapshotResponse(error_code=int(error), topics=topics)


def read_offset_request(cluster_id: str | None, replica_id: int = -1, replica_epoch: int = -1) -> Any:
    part = RREQ.PartitionData(partition_index=METADATA_PARTITION)
    topics = [RREQ.TopicData(topic_name=METADATA_TOPIC, partitions=[part])]
    return ReadOffsetRequest(
        cluster_id=cluster_id, replica_id=replica_id, replica_epoch=replica_epoch, topics=topics
    )


def read_offset_response(
    error: ErrorCode, part_error: ErrorCode, leader_id: int, epoch: int, hwm: int = -1, applied: int = -1
) -> Any:
    part = RRESP.PartitionData(
        partition_index=METADATA_PARTITION,
        error_code=int(part_error),
        high_watermark=hwm,
        applied_offset=applied,
        current_leader=RRESP.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch),
    )
    topics = [RRESP.TopicData(topic_name=METADATA_TOPIC, partitions=[part])]
    return ReadOffsetResponse(error_code=int(error), topics=topics)


_RESPONSE_OF: dict[type, Any] = {
    VoteRequest: lambda e: vote_response(e, ErrorCode.NONE, -1, -1, False),
    BeginQuorumEpochRequest: lambda e: begin_quorum_response(e, ErrorCode.NONE, -1, -1),
    EndQuorumEpochRequest: lambda e: end_quorum_response(e, ErrorCode.NONE, -1, -1),
    FetchRequest: lambda e: fetch_response(e, ErrorCode.NONE, -1, -1, -1),
    FetchSnapshotRequest: lambda e: fetch_snapshot_response(e, ErrorCode.NONE, -1, -1),
    ReadOffsetRequest: lambda e: read_offset_response(e, ErrorCode.NONE, -1, -1),
    AVREQ.ApiVersionsRequest: lambda e: AVRESP.ApiVersionsResponse(error_code=int(e)),  # AddRaftVoter's probe
    AVOREQ.AddRaftVoterRequest: lambda e: AVORESP.AddRaftVoterResponse(error_code=int(e)),  # auto-join
    RVOREQ.RemoveRaftVoterRequest: lambda e: RVORESP.RemoveRaftVoterResponse(error_code=int(e)),
    UVOREQ.UpdateRaftVoterRequest: lambda e: UVORESP.UpdateRaftVoterResponse(error_code=int(e)),  # auto-join
}


def error_response(request: Any, error: ErrorCode) -> Any:
    """The response a peer 'sent' when the request never got an answer (invariant 3)."""
    return _RESPONSE_OF[type(request)](error)
