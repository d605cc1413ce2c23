"""Voter-change RPC errors (KIP-853): AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter (``--intrusive`` only).

Kafka sources: KafkaRaftClient.handleAddVoterRequest / handleRemoveVoterRequest / handleUpdateVoterRequest,
AddVoterHandler, RemoveVoterHandler, UpdateVoterHandler. Every request here must be refused by a correct
target; none changes the voter set.
"""

from __future__ import annotations

import uuid

from kwire.errors import ErrorCode
from tools.conformance import requests as rq
from tools.conformance.checks_raft import _dir, _follower, _unchanged, settle
from tools.conformance.model import Context, check, expect

ADD, REMOVE, UPDATE = 80, 81, 82
ABSENT_VOTER = 999_999


def _kraft_version(ctx: Context) -> int:
    return ctx.finalized_features.get("kraft.version", (0, 0))[1]


@check(
    "voters.add-duplicate",
    "AddRaftVoter naming a current voter is DUPLICATE_VOTER at the leader (UNSUPPORTED_VERSION under "
    "kraft.version 0).",
    "AddVoterHandler.handleAddVoterRequest (kraft.version check, voter already present)",
    apis=(ADD,),
    intrusive=True,
)
async def add_duplicate(ctx: Context) -> None:
    view = await settle(ctx, 0)
    f = _follower(ctx, view)
    req = rq.add_voter(
        ctx.cluster_id, voter=f.node_id, voter_dir=_dir(view, f.node_id), host=f.host, port=f.port
    )
    async with ctx.probe(ctx.node_for(view.leader_id)) as p:
        resp = await p.request(req, ctx.highest(ADD))
    want = ErrorCode.DUPLICATE_VOTER if _kraft_version(ctx) >= 1 else ErrorCode.UNSUPPORTED_VERSION
    expect(resp.error_code == want, f"error {resp.error_code}, expected {int(want)}")
    await _unchanged(ctx, view)


@check(
    "voters.remove-not-found",
    "RemoveRaftVoter naming no voter is VOTER_NOT_FOUND at the leader (UNSUPPORTED_VERSION under kraft.version 0).",
    "RemoveVoterHandler.handleRemoveVoterRequest (voter not in the set)",
    apis=(REMOVE,),
    intrusive=True,
)
async def remove_missing(ctx: Context) -> None:
    view = await settle(ctx, 0)
    req = rq.remove_voter(ctx.cluster_id, voter=ABSENT_VOTER, voter_dir=uuid.uuid4())
    async with ctx.probe(ctx.node_for(view.leader_id)) as p:
        resp = await p.request(req, ctx.highest(REMOVE))
    want = ErrorCode.VOTER_NOT_FOUND if _kraft_version(ctx) >= 1 else ErrorCode.UNSUPPORTED_VERSION
    expect(resp.error_code == want, f"error {resp.error_code}, expected {int(want)}")
    await _unchanged(ctx, view)


@check(
    "voters.update-errors",
    "UpdateRaftVoter with an older leader epoch is FENCED_LEADER_EPOCH and for an unknown voter VOTER_NOT_FOUND "
    "at the leader.",
    "KafkaRaftClient.handleUpdateVoterRequest (validateLeaderOnlyRequest), UpdateVoterHandler",
    apis=(UPDATE,),
    intrusive=True,
)
async def update_errors(ctx: Context) -> None:
    view = await settle(ctx, 0)
    f, e = _follower(ctx, view), view.leader_epoch
    leader = ctx.node_for(view.leader_id)
    stale = rq.update_voter(
        ctx.cluster_id,
        epoch=e - 1,
        voter=f.node_id,
        voter_dir=_dir(view, f.node_id),
        host=f.host,
        port=f.port,
    )
    absent = rq.update_voter(
        ctx.cluster_id, epoch=e, voter=ABSENT_VOTER, voter_dir=uuid.uuid4(), host=f.host, port=f.port
    )
    async with ctx.probe(leader) as p:
        r1 = await p.request(stale, ctx.highest(UPDATE))
        r2 = await p.request(absent, ctx.highest(UPDATE))
    expect(
        r1.error_code == ErrorCode.FENCED_LEADER_EPOCH, f"epoch {e - 1}: error {r1.error_code}, expected 74"
    )
    if _kraft_version(ctx) >= 1:
        expect(
            r2.error_code == ErrorCode.VOTER_NOT_FOUND, f"unknown voter: error {r2.error_code}, expected 127"
        )
    await _unchanged(ctx, view)


@check(
    "voters.not-leader",
    "AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter sent to a follower are NOT_LEADER_OR_FOLLOWER.",
    "KafkaRaftClient.handleAddVoterRequest / handleRemoveVoterRequest / handleUpdateVoterRequest (leader only)",
    apis=(ADD, REMOVE, UPDATE),
    intrusive=True,
)
async def not_leader(ctx: Context) -> None:
    view = await settle(ctx, 0)
    f, other = _follower(ctx, view), _follower(ctx, view, 1)
    reqs = [
        (
            ADD,
            rq.add_voter(
                ctx.cluster_id, voter=ABSENT_VOTER, voter_dir=uuid.uuid4(), host=other.host, port=other.port
            ),
        ),
        (REMOVE, rq.remove_voter(ctx.cluster_id, voter=other.node_id, voter_dir=_dir(view, other.node_id))),
        (
            UPDATE,
            rq.update_voter(
                ctx.cluster_id,
                epoch=view.leader_epoch,
                voter=other.node_id,
                voter_dir=_dir(view, other.node_id),
                host=other.host,
                port=other.port,
            ),
        ),
    ]
    async with ctx.probe(f) as p:
        for key, req in reqs:
            resp = await p.request(req, ctx.highest(key))
            expect(
                resp.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"{type(req).__name__}: error {resp.error_code}, expected 6",
            )
    await _unchanged(ctx, view)
