"""Replication RPC rules by crafted requests (``--intrusive`` only): Fetch and FetchSnapshot, read as a reader
that is no replica (ReplicaId -1), so a correct leader tracks nothing for them.

Kafka sources: KafkaRaftClient.handleFetchRequest / handleFetchSnapshotRequest, validateLeaderOnlyRequest,
ReplicatedLog.validateOffsetAndEpoch, LeaderState.updateReplicaState.
"""

from __future__ import annotations

from typing import Any

from kwire.batches import iter_batches
from kwire.errors import ErrorCode, KraftError
from tools.conformance import requests as rq
from tools.conformance.checks_raft import FETCH, FETCH_SNAPSHOT, HUGE, _follower, settle
from tools.conformance.model import CheckFailed, Context, NodeInfo, Skip, check, expect

SNAPSHOT_PROBES = 64


def _fetch_part(resp: Any) -> Any:
    expect(resp.error_code == ErrorCode.NONE, f"top-level error {resp.error_code}")
    expect(len(resp.responses) == 1 and len(resp.responses[0].partitions) == 1, "expected one partition")
    return resp.responses[0].partitions[0]


async def _fetch(ctx: Context, node: NodeInfo, **kw: Any) -> Any:
    if ctx.highest(FETCH) < 13:
        raise Skip("KRaft Fetch needs topic ids (v13+)")
    async with ctx.probe(node) as p:
        return _fetch_part(await p.request(rq.fetch(ctx.cluster_id, **kw), ctx.highest(FETCH)))


@check(
    "fetch.records",
    "Fetch from offset 0 returns record batches starting at 0 (or, when the log starts above 0, names a snapshot "
    "and returns batches from its end offset) with contiguous offsets, valid CRCs and non-decreasing partition "
    "leader epochs no higher than the leader's.",
    "KafkaRaftClient.handleFetchRequest / tryCompleteFetchRequest; ReplicatedLog.validateOffsetAndEpoch "
    "(snapshot id below the log start); DefaultRecordBatch (CRC-32C)",
    apis=(FETCH,),
    intrusive=True,
)
async def fetch_records(ctx: Context) -> None:
    view = await settle(ctx, 0)
    leader, e = ctx.node_for(view.leader_id), view.leader_epoch
    part = await _fetch(ctx, leader, epoch=e, offset=0, last_epoch=0)
    expect(part.error_code == ErrorCode.NONE, f"error {part.error_code}")
    start, start_epoch = 0, 0
    sid = part.snapshot_id
    if sid.end_offset >= 0:  # the log starts above 0: the leader names the snapshot to load first
        expect(
            not part.records and 0 < sid.end_offset <= part.high_watermark and 0 <= sid.epoch <= e,
            f"snapshot id {sid.end_offset}-{sid.epoch} with HWM {part.high_watermark}",
        )
        start, start_epoch = sid.end_offset, sid.epoch
        part = await _fetch(ctx, leader, epoch=e, offset=start, last_epoch=start_epoch)
        expect(
            part.error_code == ErrorCode.NONE and part.diverging_epoch.epoch < 0,
            f"from the snapshot end {start}: error {part.error_code}, diverging {part.diverging_epoch}",
        )
    records = bytes(part.records or b"")
    if start > 0 and not records:
        expect(
            start >= part.high_watermark,
            f"no records after the snapshot end {start}, HWM {part.high_watermark}",
        )
        return
    expect(len(records) > 0, f"no records from offset {start}")
    expected, last_epoch = start, start_epoch
    try:
        for batch in iter_batches(records, verify_crc=True):
            expect(batch.base_offset == expected, f"batch at {batch.base_offset}, expected {expected}")
            expect(
                last_epoch <= batch.partition_leader_epoch <= e,
                f"batch epoch {batch.partition_leader_epoch} after {last_epoch}",
            )
            expected, last_epoch = batch.last_offset + 1, batch.partition_leader_epoch
    except KraftError as exc:
        raise CheckFailed(f"records: {exc}") from None
    expect(expected > start, "no complete batch")
    expect(part.high_watermark >= 0, f"high watermark {part.high_watermark}")


@check(
    "fetch.non-replica-untracked",
    "A Fetch with a negative ReplicaId (a reader that is no replica) is answered but never listed as an "
    "observer in DescribeQuorum.",
    "LeaderState.updateReplicaState (fetches from negative replica ids are ignored)",
    apis=(FETCH, 55),
    intrusive=True,
)
async def fetch_non_replica(ctx: Context) -> None:
    view = await settle(ctx, 0)
    part = await _fetch(ctx, ctx.node_for(view.leader_id), epoch=view.leader_epoch, offset=0, last_epoch=0)
    expect(part.error_code == ErrorCode.NONE, f"error {part.error_code}")
    after = await ctx.quorum()
    expect(all(o >= 0 for o in after.observers), f"observers {after.observers} include the non-replica -1")


@check(
    "fetch.diverging-epoch",
    "Fetch past the end of the last fetched epoch gets DivergingEpoch (that epoch's end offset, below the "
    "fetch offset) and no records: beyond the log end in the current epoch, and at the log end claiming an "
    "older epoch.",
    "KafkaRaftClient.handleFetchRequest -> ReplicatedLog.validateOffsetAndEpoch (ValidOffsetAndEpoch.diverging)",
    apis=(FETCH,),
    intrusive=True,
)
async def fetch_diverging(ctx: Context) -> None:
    view = await settle(ctx, 0)
    leader, e = ctx.node_for(view.leader_id), view.leader_epoch
    leo = view.voters[view.leader_id][1]
    offset = leo + 1000
    part = await _fetch(ctx, leader, epoch=e, offset=offset, last_epoch=e)
    expect(part.error_code == ErrorCode.NONE, f"error {part.error_code}")
    d = part.diverging_epoch
    expect(
        d.epoch == e and view.high_watermark <= d.end_offset < offset,
        f"diverging {d.epoch}/{d.end_offset} for ({e}, {offset}), leader LEO was {leo}",
    )
    expect(not part.records, "records returned with a diverging epoch")
    if e < 2:
        raise Skip("the older-epoch case needs leader epoch >= 2 (passed the current-epoch case)")
    part = await _fetch(ctx, leader, epoch=e, offset=leo, last_epoch=e - 1)
    d = part.diverging_epoch
    expect(part.error_code == ErrorCode.NONE, f"older epoch: error {part.error_code}")
    expect(
        0 <= d.epoch <= e - 1 and 0 <= d.end_offset < leo,
        f"older epoch: diverging {d.epoch}/{d.end_offset} for ({e - 1}, {leo})",
    )
    expect(not part.records, "records returned with a diverging epoch")


@check(
    "fetch.invalid-offsets",
    "Fetch with a negative offset, or a last fetched epoch above the current leader epoch, is INVALID_REQUEST.",
    "KafkaRaftClient.handleFetchRequest (fetchOffset < 0 || lastFetchedEpoch < 0 || lastFetchedEpoch > "
    "currentLeaderEpoch)",
    apis=(FETCH,),
    intrusive=True,
)
async def fetch_invalid(ctx: Context) -> None:
    view = await settle(ctx, 0)
    leader, e = ctx.node_for(view.leader_id), view.leader_epoch
    for offset, last in ((-5, e), (0, e + 1)):
        part = await _fetch(ctx, leader, epoch=e, offset=offset, last_epoch=last)
        expect(
            part.error_code == ErrorCode.INVALID_REQUEST,
            f"offset {offset} last epoch {last}: error {part.error_code}, expected 42",
        )


@check(
    "fetch.fencing",
    "Fetch with an older leader epoch is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH, and a follower "
    "answers NOT_LEADER_OR_FOLLOWER naming the current leader.",
    "KafkaRaftClient.handleFetchRequest -> validateLeaderOnlyRequest",
    apis=(FETCH,),
    intrusive=True,
)
async def fetch_fencing(ctx: Context) -> None:
    view = await settle(ctx, 0)
    leader, e = ctx.node_for(view.leader_id), view.leader_epoch
    old = await _fetch(ctx, leader, epoch=e - 1, offset=0, last_epoch=0)
    expect(
        old.error_code == ErrorCode.FENCED_LEADER_EPOCH, f"epoch {e - 1}: error {old.error_code}, expected 74"
    )
    new = await _fetch(ctx, leader, epoch=e + 1, offset=0, last_epoch=0)
    expect(
        new.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH,
        f"epoch {e + 1}: error {new.error_code}, expected 75",
    )
    fol = await _fetch(ctx, _follower(ctx, view), epoch=e, offset=0, last_epoch=0)
    expect(
        fol.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER, f"follower: error {fol.error_code}, expected 6"
    )
    cl = fol.current_leader
    expect(
        (cl.leader_id, cl.leader_epoch) == (view.leader_id, e),
        f"follower names leader {cl.leader_id} epoch {cl.leader_epoch}",
    )


KAFKA_NPE = (
    "the target answered a partition-level FetchSnapshot error as top-level UNKNOWN_SERVER_ERROR with no "
    "topics: Kafka 4.3.1 cannot serialize a FetchSnapshot partition error (UnalignedRecords left null, "
    "NullPointerException in FetchSnapshotResponseData.PartitionSnapshot.addSize), so the error is not observable"
)


async def _snapshot(ctx: Context, node: NodeInfo, **kw: Any) -> Any:
    async with ctx.probe(node) as p:
        resp = await p.request(rq.fetch_snapshot(ctx.cluster_id, **kw), ctx.highest(FETCH_SNAPSHOT))
    if resp.error_code == ErrorCode.UNKNOWN_SERVER_ERROR and not resp.topics:
        raise Skip(KAFKA_NPE)
    expect(resp.error_code == ErrorCode.NONE, f"top-level error {resp.error_code}")
    return _part_snapshot(resp)


def _part_snapshot(resp: Any) -> Any:
    expect(len(resp.topics) == 1 and len(resp.topics[0].partitions) == 1, "expected one partition")
    return resp.topics[0].partitions[0]


@check(
    "fetch-snapshot.errors",
    "FetchSnapshot for an unknown snapshot id is SNAPSHOT_NOT_FOUND; an older leader epoch FENCED_LEADER_EPOCH; "
    "a follower answers NOT_LEADER_OR_FOLLOWER.",
    "KafkaRaftClient.handleFetchSnapshotRequest (validateLeaderOnlyRequest, log.readSnapshot)",
    apis=(FETCH_SNAPSHOT,),
    intrusive=True,
)
async def snapshot_errors(ctx: Context) -> None:
    view = await settle(ctx, 0)
    leader, e = ctx.node_for(view.leader_id), view.leader_epoch
    missing = await _snapshot(ctx, leader, epoch=e, end_offset=HUGE, snapshot_epoch=e, position=0)
    expect(
        missing.error_code == ErrorCode.SNAPSHOT_NOT_FOUND,
        f"unknown snapshot: error {missing.error_code}, expected 98",
    )
    old = await _snapshot(ctx, leader, epoch=e - 1, end_offset=0, snapshot_epoch=0, position=0)
    expect(
        old.error_code == ErrorCode.FENCED_LEADER_EPOCH, f"epoch {e - 1}: error {old.error_code}, expected 74"
    )
    fol = await _snapshot(ctx, _follower(ctx, view), epoch=e, end_offset=0, snapshot_epoch=0, position=0)
    expect(
        fol.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER, f"follower: error {fol.error_code}, expected 6"
    )


async def _find_snapshot(ctx: Context, leader: NodeInfo, epoch: int) -> tuple[int, int] | None:
    """A snapshot id the leader serves: the one a Fetch from offset 0 names (log start above 0), the bootstrap
    checkpoint 0-0, or a recent batch boundary of its log (Kafka snapshots at committed batch ends)."""
    candidates: list[tuple[int, int]] = []
    boundaries: list[tuple[int, int]] = []
    if ctx.common(FETCH) is not None and ctx.highest(FETCH) >= 13:
        part = await _fetch(ctx, leader, epoch=epoch, offset=0, last_epoch=0)
        named = part.snapshot_id
        if named.end_offset >= 0 and named.epoch >= 0:
            candidates.append((named.end_offset, named.epoch))
        for batch in iter_batches(bytes(part.records or b""), verify_crc=False, strict=False):
            boundaries.append((batch.last_offset + 1, batch.partition_leader_epoch))
    candidates.append((0, 0))
    candidates += sorted(set(boundaries), reverse=True)[:SNAPSHOT_PROBES]
    for end, sepoch in candidates:
        async with ctx.probe(leader) as p:
            req = rq.fetch_snapshot(
                ctx.cluster_id, epoch=epoch, end_offset=end, snapshot_epoch=sepoch, position=0, max_bytes=1
            )
            resp = await p.request(req, ctx.highest(FETCH_SNAPSHOT), note="looking for a snapshot id")
        if resp.error_code == ErrorCode.NONE and _part_snapshot(resp).error_code == ErrorCode.NONE:
            return end, sepoch
    return None


@check(
    "fetch-snapshot.positions",
    "A snapshot of the leader read in 64-byte chunks returns Size and the bytes at each Position, ending exactly at "
    "Size with whole batches that start with a control batch (SnapshotHeader).",
    "KafkaRaftClient.handleFetchSnapshotRequest (UnalignedRecords slicing from Position, at most MaxBytes)",
    apis=(FETCH_SNAPSHOT,),
    intrusive=True,
)
async def snapshot_positions(ctx: Context) -> None:
    leader, e, end, sepoch = await _snapshot_target(ctx)

    async def read(position: int) -> Any:
        return await _snapshot(
            ctx, leader, epoch=e, end_offset=end, snapshot_epoch=sepoch, position=position, max_bytes=64
        )

    first = await read(0)
    expect(first.error_code == ErrorCode.NONE, f"snapshot {end}-{sepoch}: error {first.error_code}")
    size = first.size
    expect(size > 0 and first.position == 0, f"size {size} position {first.position}")
    data = bytes(first.unaligned_records or b"")
    expect(0 < len(data) <= min(64, size), f"{len(data)} bytes for MaxBytes 64 of {size}")
    while len(data) < size:
        part = await read(len(data))
        expect(
            part.error_code == ErrorCode.NONE and part.position == len(data) and part.size == size,
            f"position {len(data)}: error {part.error_code} position {part.position} size {part.size}",
        )
        chunk = bytes(part.unaligned_records or b"")
        expect(0 < len(chunk) <= 64, f"position {len(data)}: {len(chunk)} bytes")
        data += chunk
    expect(len(data) == size, f"read {len(data)} bytes of {size}")
    it = iter_batches(data, verify_crc=True, strict=False)
    batches = list(it)
    expect(bool(batches) and batches[0].is_control, "the snapshot does not start with a control batch")
    expect(it.valid_end == size, f"the snapshot's batches end at byte {it.valid_end} of {size}")


@check(
    "fetch-snapshot.position-out-of-range",
    "A FetchSnapshot Position below 0, at Size or beyond it is POSITION_OUT_OF_RANGE.",
    "KafkaRaftClient.handleFetchSnapshotRequest (position < 0 || position >= snapshot size)",
    apis=(FETCH_SNAPSHOT,),
    intrusive=True,
)
async def snapshot_out_of_range(ctx: Context) -> None:
    leader, e, end, sepoch = await _snapshot_target(ctx)
    size = (
        await _snapshot(ctx, leader, epoch=e, end_offset=end, snapshot_epoch=sepoch, position=0, max_bytes=1)
    ).size
    for pos in (-1, size, size + 100):
        part = await _snapshot(ctx, leader, epoch=e, end_offset=end, snapshot_epoch=sepoch, position=pos)
        expect(
            part.error_code == ErrorCode.POSITION_OUT_OF_RANGE,
            f"position {pos} of {size}: error {part.error_code}, expected 99",
        )


async def _snapshot_target(ctx: Context) -> tuple[NodeInfo, int, int, int]:
    view = await settle(ctx, 0)
    leader, e = ctx.node_for(view.leader_id), view.leader_epoch
    found = await _find_snapshot(ctx, leader, e)
    if found is None:
        raise Skip(
            "the leader serves no snapshot at 0-0 or at a recent batch boundary; positions not exercised"
        )
    return leader, e, found[0], found[1]
