"""DescribeQuorum / DescribeCluster shape and consistency across every node of the quorum.

Kafka sources: KafkaRaftClient.handleDescribeQuorumRequest, LeaderState.describeQuorum,
RaftUtil.singletonDescribeQuorumResponse, ControllerApis.handleDescribeCluster.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from generated.describe_cluster_request import DescribeClusterRequest
from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_request import PartitionData as DQPartition
from generated.describe_quorum_request import TopicData as DQTopic
from generated.describe_quorum_response import DescribeQuorumResponse
from kwire.errors import ErrorCode
from tools.conformance.model import CheckFailed, Context, Skip, check, expect
from tools.conformance.runner import DESCRIBE_CLUSTER, DESCRIBE_QUORUM, describe_quorum_request

ZERO = uuid.UUID(int=0)
RELAY_NOTE = (
    "kraftd relays a DescribeQuorum reaching a follower to the leader (as a Kafka broker forwards it), so its "
    "followers answer with the leader's view where Kafka's controllers answer NOT_LEADER_OR_FOLLOWER"
)


@check(
    "describe-quorum.leader-shape",
    "The leader's DescribeQuorum names itself leader at epoch >= 1, lists unique voters including itself, "
    "HighWatermark <= its log end offset, voter LEOs <= the leader's, and (v2) a Nodes entry per voter.",
    "KafkaRaftClient.handleDescribeQuorumRequest, LeaderState.describeQuorum",
    apis=(DESCRIBE_QUORUM,),
)
async def leader_shape(ctx: Context) -> None:
    view = await ctx.quorum()
    leader = ctx.node_for(view.leader_id)
    version = ctx.highest(DESCRIBE_QUORUM)
    async with ctx.probe(leader) as p:
        resp: DescribeQuorumResponse = await p.request(describe_quorum_request(), version)
    expect(resp.error_code == ErrorCode.NONE, f"top-level error {resp.error_code}")
    part = resp.topics[0].partitions[0]
    expect(part.error_code == ErrorCode.NONE, f"the leader answered partition error {part.error_code}")
    expect(part.leader_id == leader.node_id, f"leader {leader.node_id} names {part.leader_id} as leader")
    expect(part.leader_epoch >= 1, f"leader epoch {part.leader_epoch}")
    ids = [v.replica_id for v in part.current_voters]
    expect(len(ids) == len(set(ids)), f"duplicate voters {ids}")
    expect(leader.node_id in ids, f"the leader {leader.node_id} is not among the voters {ids}")
    leo = next(v.log_end_offset for v in part.current_voters if v.replica_id == leader.node_id)
    expect(0 <= part.high_watermark <= leo, f"high watermark {part.high_watermark} vs leader LEO {leo}")
    for v in part.current_voters:
        expect(v.log_end_offset <= leo, f"voter {v.replica_id} LEO {v.log_end_offset} > leader LEO {leo}")
    if version >= 2:
        nodes = {n.node_id for n in resp.nodes}
        expect(set(ids) <= nodes, f"Nodes {sorted(nodes)} lacks voters {sorted(set(ids) - nodes)}")
        for n in resp.nodes:
            expect(bool(n.listeners), f"node {n.node_id} has no listener")
    else:
        expect(not resp.nodes, "Nodes present below v2")


@check(
    "describe-quorum.consistency",
    "Every node answers DescribeQuorum either with the same leader, epoch and voter set, or with "
    "NOT_LEADER_OR_FOLLOWER; the leader answers; DescribeCluster's controller id agrees.",
    "KafkaRaftClient.handleDescribeQuorumRequest (leader only), ControllerApis.handleDescribeCluster",
    apis=(DESCRIBE_QUORUM,),
    by_design=RELAY_NOTE,
)
async def consistency(ctx: Context) -> None:
    for _ in range(20):
        view = await ctx.quorum()
        answers: dict[int, tuple[int, int, tuple[int, ...]] | None] = {}
        for node in ctx.nodes.values():
            async with ctx.probe(node) as p:
                resp = await p.request(describe_quorum_request(), ctx.highest(DESCRIBE_QUORUM))
            part = resp.topics[0].partitions[0]
            if part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                answers[node.node_id] = None
                continue
            expect(
                part.error_code == ErrorCode.NONE, f"node {node.node_id}: partition error {part.error_code}"
            )
            answers[node.node_id] = (
                part.leader_id,
                part.leader_epoch,
                tuple(sorted(v.replica_id for v in part.current_voters)),
            )
        after = await ctx.quorum()
        if (after.leader_id, after.leader_epoch) != (view.leader_id, view.leader_epoch):
            continue  # an election happened meanwhile; look again
        views = {a for a in answers.values() if a is not None}
        expect(len(views) == 1, f"nodes disagree: {answers}")
        expect(answers.get(view.leader_id) is not None, f"the leader {view.leader_id} did not answer")
        expect(
            set(ctx.nodes) >= set(view.voters),
            f"voters {sorted(view.voters)} not all discovered {sorted(ctx.nodes)}",
        )
        if ctx.common(DESCRIBE_CLUSTER) is not None and ctx.highest(DESCRIBE_CLUSTER) >= 1:
            for node in ctx.nodes.values():
                async with ctx.probe(node) as p:
                    dc = await p.request(
                        DescribeClusterRequest(endpoint_type=2), ctx.highest(DESCRIBE_CLUSTER)
                    )
                expect(dc.cluster_id == ctx.cluster_id, f"node {node.node_id}: cluster id {dc.cluster_id}")
                expect(
                    dc.controller_id in (view.leader_id, -1),
                    f"node {node.node_id}: controller id {dc.controller_id}, leader {view.leader_id}",
                )
        return
    raise Skip("the leader kept changing; consistency could not be observed")


@check(
    "describe-quorum.unknown-partition",
    "DescribeQuorum for a topic other than __cluster_metadata gets UNKNOWN_TOPIC_OR_PARTITION for it.",
    "KafkaRaftClient.handleDescribeQuorumRequest (hasValidTopicPartition)",
    apis=(DESCRIBE_QUORUM,),
)
async def unknown_partition(ctx: Context) -> None:
    view = await ctx.quorum()
    req = DescribeQuorumRequest(topics=[DQTopic("conformance-other", [DQPartition(0)])])
    async with ctx.probe(ctx.node_for(view.leader_id)) as p:
        resp: DescribeQuorumResponse = await p.request(req, ctx.highest(DESCRIBE_QUORUM))
    codes = [(t.topic_name, [q.error_code for q in t.partitions]) for t in resp.topics]
    expect(
        codes == [("conformance-other", [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION])],
        f"answer {codes}, expected UNKNOWN_TOPIC_OR_PARTITION (3)",
    )


@check(
    "describe-cluster.controllers",
    "DescribeCluster (EndpointType 2) on every node lists the same controllers with the endpoints DescribeQuorum "
    "v2 gives, and the same cluster id.",
    "ControllerApis.handleDescribeCluster; KafkaRaftClient.handleDescribeQuorumRequest (Nodes)",
    apis=(DESCRIBE_CLUSTER, DESCRIBE_QUORUM),
)
async def describe_cluster(ctx: Context) -> None:
    if ctx.highest(DESCRIBE_CLUSTER) < 1 or ctx.highest(DESCRIBE_QUORUM) < 2:
        raise Skip("needs DescribeCluster v1+ and DescribeQuorum v2+")
    deadline = time.monotonic() + 20
    while True:
        try:
            await _describe_cluster_once(ctx)
            return
        except CheckFailed:
            # A Kafka controller lists the controllers that have registered; one that just started may be
            # missing for a moment. Look again until the deadline, then report what was seen last.
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def _describe_cluster_once(ctx: Context) -> None:
    view = await ctx.quorum()
    async with ctx.probe(ctx.node_for(view.leader_id)) as p:
        dq = await p.request(describe_quorum_request(), ctx.highest(DESCRIBE_QUORUM))
    endpoints = {n.node_id: {(lst.host, lst.port) for lst in n.listeners} for n in dq.nodes}
    seen = []
    for node in ctx.nodes.values():
        async with ctx.probe(node) as p:
            dc = await p.request(DescribeClusterRequest(endpoint_type=2), ctx.highest(DESCRIBE_CLUSTER))
        expect(dc.error_code == ErrorCode.NONE, f"node {node.node_id}: error {dc.error_code}")
        expect(dc.endpoint_type == 2, f"node {node.node_id}: endpoint type {dc.endpoint_type}")
        listed = sorted((b.broker_id, b.host, b.port) for b in dc.brokers)
        seen.append(listed)
        for b in dc.brokers:
            if b.broker_id in endpoints:
                expect(
                    (b.host, b.port) in endpoints[b.broker_id],
                    f"controller {b.broker_id} at {b.host}:{b.port}, DescribeQuorum says {endpoints[b.broker_id]}",
                )
    expect(all(s == seen[0] for s in seen), f"nodes list different controllers: {seen}")
    expect(
        {b[0] for b in seen[0]} >= set(view.voters),
        f"controllers {seen[0]} miss voters {sorted(view.voters)}",
    )
