"""Election RPC rules by crafted requests (``--intrusive`` only): Vote, BeginQuorumEpoch, EndQuorumEpoch, and
the cluster id check of every Raft RPC.

Kafka sources: KafkaRaftClient.handleVoteRequest / handleBeginQuorumEpochRequest / handleEndQuorumEpochRequest,
validateVoterOnlyRequest, hasValidClusterId, *State.canGrantVote (KIP-595, KIP-996 pre-vote, KIP-853 voter keys).

Contracts:
1. The two checks that move a node to a new epoch (``vote.log-not-up-to-date``, ``vote.one-per-epoch``) run
   first and wait until the quorum has elected a leader again before returning; every other check leaves
   a correct target's state unchanged (its requests are fenced or rejected) and verifies that it did.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from kwire.errors import ErrorCode
from tools.conformance import requests as rq
from tools.conformance.model import CheckFailed, Context, NodeInfo, QuorumView, Skip, check, expect

VOTE, BEGIN, END, FETCH, FETCH_SNAPSHOT = 52, 53, 54, 1, 59
HUGE = 1 << 40


def _part(resp: Any) -> Any:
    expect(len(resp.topics) == 1 and len(resp.topics[0].partitions) == 1, "expected one topic partition")
    return resp.topics[0].partitions[0]


def _follower(ctx: Context, view: QuorumView, skip: int = 0) -> NodeInfo:
    others = sorted(v for v in view.voters if v != view.leader_id and v in ctx.nodes)
    if len(others) <= skip:
        raise Skip("needs more voters with known endpoints")
    return ctx.nodes[others[skip]]


def _dir(view: QuorumView, node_id: int) -> uuid.UUID:
    return view.voters[node_id][0]


async def settle(ctx: Context, above_epoch: int, timeout: float = 60.0) -> QuorumView:
    """A leader elected in an epoch above ``above_epoch``, seen twice 300 ms apart (contract 1)."""
    deadline = time.monotonic() + timeout
    last: QuorumView | None = None
    while time.monotonic() < deadline:
        view = await ctx.quorum()
        if (
            view.leader_epoch > above_epoch
            and last is not None
            and (last.leader_id, last.leader_epoch) == (view.leader_id, view.leader_epoch)
        ):
            return view
        last = view if view.leader_epoch > above_epoch else None
        await asyncio.sleep(0.3)
    raise CheckFailed(f"no stable leader above epoch {above_epoch} within {timeout}s")


async def _unchanged(ctx: Context, before: QuorumView) -> None:
    after = await ctx.quorum()
    expect(
        (after.leader_id, after.leader_epoch) == (before.leader_id, before.leader_epoch),
        f"the quorum moved from leader {before.leader_id} epoch {before.leader_epoch} to "
        f"{after.leader_id} epoch {after.leader_epoch}",
    )


def _vote(ctx: Context, view: QuorumView, to: NodeInfo, **kw: Any) -> Any:
    kw.setdefault("candidate_dir", _dir(view, kw["candidate"]) if kw["candidate"] in view.voters else rq.ZERO)
    return rq.vote(ctx.cluster_id, voter=to.node_id, voter_dir=_dir(view, to.node_id), **kw)


@check(
    "vote.log-not-up-to-date",
    "A Vote for a higher epoch from a candidate whose log is behind moves the voter to that epoch (leader "
    "unknown) but is not granted.",
    "KafkaRaftClient.handleVoteRequest (transitionToUnattached), UnattachedState.canGrantVote (isLogUpToDate)",
    apis=(VOTE,),
    intrusive=True,
)
async def vote_log_behind(ctx: Context) -> None:
    view = await settle(ctx, 0)
    f = _follower(ctx, view)
    epoch = view.leader_epoch + 1
    async with ctx.probe(f) as p:
        resp = await p.request(
            _vote(ctx, view, f, epoch=epoch, candidate=view.leader_id, last_epoch=0, last_offset=0),
            ctx.highest(VOTE),
        )
    part = _part(resp)
    expect(
        resp.error_code == ErrorCode.NONE and part.error_code == ErrorCode.NONE,
        f"errors {resp.error_code}/{part.error_code}",
    )
    expect(not part.vote_granted, "a candidate with an older log was granted the vote")
    expect(part.leader_epoch == epoch, f"the voter answered epoch {part.leader_epoch}, expected {epoch}")
    expect(part.leader_id == -1, f"the voter names leader {part.leader_id} in the new epoch")
    await settle(ctx, view.leader_epoch)


@check(
    "vote.one-per-epoch",
    "A voter grants at most one candidate per epoch: after granting X in epoch E+1 it refuses Y in E+1 and "
    "grants X again (same replica key).",
    "UnattachedState.canGrantVote (votedKey), QuorumState.unattachedAddVotedState (KIP-595, KIP-853)",
    apis=(VOTE,),
    intrusive=True,
)
async def vote_one_per_epoch(ctx: Context) -> None:
    view = await settle(ctx, 0)
    f, other = _follower(ctx, view), _follower(ctx, view, 1)
    epoch = view.leader_epoch + 1
    version = ctx.highest(VOTE)
    grants = []
    async with ctx.probe(f) as p:
        for cand in (view.leader_id, other.node_id, view.leader_id):
            resp = await p.request(
                _vote(
                    ctx, view, f, epoch=epoch, candidate=cand, last_epoch=view.leader_epoch, last_offset=HUGE
                ),
                version,
            )
            part = _part(resp)
            expect(part.error_code == ErrorCode.NONE, f"candidate {cand}: error {part.error_code}")
            expect(
                part.leader_epoch == epoch, f"candidate {cand}: epoch {part.leader_epoch}, expected {epoch}"
            )
            grants.append(part.vote_granted)
    expect(grants == [True, False, True], f"grants for X, Y, X were {grants}, expected [True, False, True]")
    await settle(ctx, epoch - 1)


@check(
    "vote.stale-epoch",
    "A Vote (pre-vote when v2) for an epoch below the voter's is answered FENCED_LEADER_EPOCH with the voter's "
    "epoch and leader, not granted, and changes nothing.",
    "KafkaRaftClient.handleVoteRequest -> validateVoterOnlyRequest (FENCED_LEADER_EPOCH)",
    apis=(VOTE,),
    intrusive=True,
)
async def vote_stale(ctx: Context) -> None:
    view = await settle(ctx, 0)
    f = _follower(ctx, view)
    version = ctx.highest(VOTE)
    pre = version >= 2
    epoch = view.leader_epoch - 1
    if not pre and epoch < 1:
        raise Skip("needs epoch >= 2 without pre-vote")
    last_epoch = epoch if pre else epoch - 1
    async with ctx.probe(f) as p:
        resp = await p.request(
            _vote(
                ctx,
                view,
                f,
                epoch=epoch,
                candidate=view.leader_id,
                last_epoch=last_epoch,
                last_offset=HUGE,
                pre_vote=pre,
            ),
            version,
        )
    part = _part(resp)
    expect(part.error_code == ErrorCode.FENCED_LEADER_EPOCH, f"error {part.error_code}, expected 74")
    expect(
        (part.leader_id, part.leader_epoch) == (view.leader_id, view.leader_epoch),
        f"answered leader {part.leader_id} epoch {part.leader_epoch}",
    )
    expect(not part.vote_granted, "a stale vote was granted")
    await _unchanged(ctx, view)


@check(
    "vote.epoch-sanity",
    "A Vote whose last log epoch is not below the candidate's epoch (or whose last offset is negative) is "
    "INVALID_REQUEST and does not move the voter to the candidate's epoch.",
    "KafkaRaftClient.handleVoteRequest (lastEpoch >= replicaEpoch / negative offsets -> INVALID_REQUEST)",
    apis=(VOTE,),
    intrusive=True,
)
async def vote_sanity(ctx: Context) -> None:
    view = await settle(ctx, 0)
    f = _follower(ctx, view)
    epoch = view.leader_epoch + 3
    async with ctx.probe(f) as p:
        for last_epoch, last_offset in ((epoch, 10), (epoch - 1, -1)):
            resp = await p.request(
                _vote(
                    ctx,
                    view,
                    f,
                    epoch=epoch,
                    candidate=view.leader_id,
                    last_epoch=last_epoch,
                    last_offset=last_offset,
                ),
                ctx.highest(VOTE),
            )
            code = resp.error_code or _part(resp).error_code
            expect(
                code == ErrorCode.INVALID_REQUEST,
                f"last ({last_epoch}, {last_offset}): error {code}, expected 42",
            )
    await _unchanged(ctx, view)


@check(
    "vote.prevote-no-epoch-bump",
    "A pre-vote at the current epoch is refused by the leader and by followers that fetch from it, and "
    "nobody's epoch or leader changes.",
    "KafkaRaftClient.handleVoteRequest (preVote), FollowerState/LeaderState.canGrantVote (KIP-996)",
    apis=(VOTE,),
    intrusive=True,
)
async def prevote(ctx: Context) -> None:
    if ctx.highest(VOTE) < 2:
        raise Skip("pre-vote needs Vote v2")
    view = await settle(ctx, 0)
    f = _follower(ctx, view)
    cand = _follower(ctx, view, 1)
    for to in (ctx.node_for(view.leader_id), f):
        async with ctx.probe(to) as p:
            resp = await p.request(
                _vote(
                    ctx,
                    view,
                    to,
                    epoch=view.leader_epoch,
                    candidate=cand.node_id,
                    last_epoch=view.leader_epoch,
                    last_offset=HUGE,
                    pre_vote=True,
                ),
                2,
            )
        part = _part(resp)
        expect(part.error_code == ErrorCode.NONE, f"node {to.node_id}: error {part.error_code}")
        expect(not part.vote_granted, f"node {to.node_id} granted a pre-vote while a leader is active")
        expect(
            part.leader_epoch == view.leader_epoch, f"node {to.node_id} answered epoch {part.leader_epoch}"
        )
    await _unchanged(ctx, view)


@check(
    "raft.cluster-id-mismatch",
    "Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch (v12+) and FetchSnapshot carrying another cluster id get "
    "top-level INCONSISTENT_CLUSTER_ID.",
    "KafkaRaftClient.hasValidClusterId (in every handle*Request)",
    apis=(VOTE,),
    intrusive=True,
)
async def cluster_mismatch(ctx: Context) -> None:
    view = await settle(ctx, 0)
    f, leader, e = _follower(ctx, view), ctx.node_for(view.leader_id), view.leader_epoch
    wrong = rq.WRONG_CLUSTER
    cases: list[tuple[NodeInfo, int, Any]] = [
        (
            f,
            VOTE,
            rq.vote(
                wrong,
                epoch=e + 1,
                candidate=view.leader_id,
                last_epoch=e,
                last_offset=HUGE,
                voter=f.node_id,
                voter_dir=_dir(view, f.node_id),
            ),
        ),
        (f, BEGIN, rq.begin_epoch(wrong, leader=view.leader_id, epoch=e + 1, voter=f.node_id)),
        (f, END, rq.end_epoch(wrong, leader=view.leader_id, epoch=e)),
    ]
    if ctx.common(FETCH) is not None and ctx.highest(FETCH) >= 12:
        cases.append((leader, FETCH, rq.fetch(wrong, epoch=e, offset=0, last_epoch=0)))
    if ctx.common(FETCH_SNAPSHOT) is not None:
        cases.append(
            (
                leader,
                FETCH_SNAPSHOT,
                rq.fetch_snapshot(wrong, epoch=e, end_offset=0, snapshot_epoch=0, position=0),
            )
        )
    for node, key, req in cases:
        if ctx.common(key) is None:
            continue
        async with ctx.probe(node) as p:
            resp = await p.request(req, ctx.highest(key))
        expect(
            resp.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID,
            f"{type(req).__name__}: error {resp.error_code}, expected 104",
        )
    await _unchanged(ctx, view)


@check(
    "begin-quorum.fencing",
    "BeginQuorumEpoch from an older epoch is FENCED_LEADER_EPOCH with the voter's leader and epoch; the current "
    "leader's own BeginQuorumEpoch is accepted; nothing changes.",
    "KafkaRaftClient.handleBeginQuorumEpochRequest -> validateVoterOnlyRequest, maybeTransition",
    apis=(BEGIN,),
    intrusive=True,
)
async def begin_fencing(ctx: Context) -> None:
    view = await settle(ctx, 0)
    f, e = _follower(ctx, view), view.leader_epoch
    async with ctx.probe(f) as p:
        stale = _part(
            await p.request(
                rq.begin_epoch(ctx.cluster_id, leader=view.leader_id, epoch=e - 1, voter=f.node_id),
                ctx.highest(BEGIN),
            )
        )
        same = _part(
            await p.request(
                rq.begin_epoch(ctx.cluster_id, leader=view.leader_id, epoch=e, voter=f.node_id),
                ctx.highest(BEGIN),
            )
        )
    expect(
        stale.error_code == ErrorCode.FENCED_LEADER_EPOCH,
        f"stale epoch: error {stale.error_code}, expected 74",
    )
    expect(
        (stale.leader_id, stale.leader_epoch) == (view.leader_id, e),
        f"stale epoch answered leader {stale.leader_id} epoch {stale.leader_epoch}",
    )
    expect(same.error_code == ErrorCode.NONE, f"current leader and epoch: error {same.error_code}")
    expect(
        (same.leader_id, same.leader_epoch) == (view.leader_id, e),
        f"current epoch answered leader {same.leader_id} epoch {same.leader_epoch}",
    )
    await _unchanged(ctx, view)


@check(
    "end-quorum.fencing",
    "EndQuorumEpoch from an older epoch is FENCED_LEADER_EPOCH with the voter's leader and epoch; nothing changes.",
    "KafkaRaftClient.handleEndQuorumEpochRequest -> validateVoterOnlyRequest",
    apis=(END,),
    intrusive=True,
)
async def end_fencing(ctx: Context) -> None:
    view = await settle(ctx, 0)
    f, e = _follower(ctx, view), view.leader_epoch
    async with ctx.probe(f) as p:
        part = _part(
            await p.request(
                rq.end_epoch(ctx.cluster_id, leader=view.leader_id, epoch=e - 1), ctx.highest(END)
            )
        )
    expect(part.error_code == ErrorCode.FENCED_LEADER_EPOCH, f"error {part.error_code}, expected 74")
    expect(
        (part.leader_id, part.leader_epoch) == (view.leader_id, e),
        f"answered leader {part.leader_id} epoch {part.leader_epoch}",
    )
    await _unchanged(ctx, view)
