"""A leader's read confirmation round at its followers (kraftd.shell.apis.routing contract 6a, issue #25), on three
in-process voters: a follower answers the round's BeginQuorumEpoch on the listener's fast path, from inside the
step, never through a handler task and the driver's inbox (each a turn of a busy follower's loop). Counted, not
timed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from generated.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from kraftd.config import load_config
from kraftd.core import messages as m
from kraftd.shell.node import ControllerNode
from tests.daemon.cluster import CLUSTER_ID, free_ports
from tests.daemon.conftest import write_properties
from tools.storage_cli import format_directory

READS = 5
REQUEST = DescribeConfigsRequest(
    resources=[DescribeConfigsResource(resource_type=4, resource_name="1", configuration_keys=None)]
)


def three_voters(tmp_path: Path) -> list[ControllerNode]:
    ports = free_ports(3)
    voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in enumerate(ports, 1))
    nodes = []
    for i, port in enumerate(ports, 1):
        cfg = tmp_path / f"s{i}.properties"
        write_properties(cfg, i, port, tmp_path / f"d{i}", voters=voters)
        format_directory(load_config(cfg), CLUSTER_ID)
        nodes.append(ControllerNode(load_config(cfg), seed=i))
    return nodes


async def started_leader(nodes: list[ControllerNode]) -> ControllerNode:
    """Starts ``nodes`` and returns the leader, once it has committed in its epoch (a read answered)."""
    for node in nodes:
        await node.start()
    leader_id = (await nodes[0].wait_for_leader(20)).leader_id
    leader = nodes[leader_id - 1]
    await leader.reads.describe_configs(REQUEST)
    return leader


def test_followers_answer_a_leaders_read_round_on_the_fast_path(tmp_path: Path) -> None:
    async def run() -> tuple[list[str], int, list[int]]:
        nodes = three_voters(tmp_path)
        try:
            leader = await started_leader(nodes)
            followers = [n for n in nodes if n is not leader]
            queued: list[str] = []  # requests the followers' cores got through a handler task
            for node in followers:
                real = node.driver.ask_core

                async def ask_core(body: Any, real: Any = real) -> Any:
                    queued.append(type(body).__name__)
                    return await real(body)

                node.driver.ask_core = ask_core  # type: ignore[method-assign]
            fast = [n.metrics.children("BeginQuorumEpoch")[0].value for n in followers]
            tickets = leader.reads.tickets._value.get()
            for _ in range(READS):  # one at a time: each is its own round
                resp = await leader.reads.describe_configs(REQUEST)
                assert resp.results[0].error_code == 0
            answered = [
                int(n.metrics.children("BeginQuorumEpoch")[0].value - f)
                for n, f in zip(followers, fast, strict=True)
            ]
            # A copy: stopping the nodes below (the leader resigns, a follower may win) must not add to it.
            return list(queued), int(leader.reads.tickets._value.get() - tickets), answered
        finally:
            for node in nodes:
                await node.stop()

    queued, tickets, answered = asyncio.run(run())
    assert tickets == READS
    assert m.BeginQuorumEpochRequest.__name__ not in queued, queued
    assert sum(answered) >= READS, answered  # each round reached a follower, answered on the fast path


def test_a_leader_answers_a_voters_read_offset_without_stepping_its_core(tmp_path: Path) -> None:
    """kraftd.shell.apis.fast contract 1a (kraftd.core.reads invariant 7a): a follower's read costs the leader
    no core step, only the answer; the follower's reads still see what the leader committed."""

    async def run() -> tuple[list[str], int, int]:
        nodes = three_voters(tmp_path)
        try:
            leader = await started_leader(nodes)
            follower = next(n for n in nodes if n is not leader)
            await follower.reads.describe_configs(REQUEST)  # and the follower knows it: its ask is answered
            stepped: list[str] = []
            real = leader.client.step

            def step(event: Any) -> Any:
                body = getattr(event, "message", None)
                if isinstance(body, m.ReadOffsetRequest):
                    stepped.append(type(event).__name__)
                return real(event)

            leader.client.step = step  # type: ignore[method-assign]
            answered = leader.metrics.children("ReadOffset")[0].value
            for _ in range(READS):  # one at a time: each is its own ReadOffset
                resp = await follower.reads.describe_configs(REQUEST)
                assert resp.results[0].error_code == 0
            return stepped, int(leader.metrics.children("ReadOffset")[0].value - answered), follower.applied
        finally:
            for node in nodes:
                await node.stop()

    stepped, answered, applied = asyncio.run(run())
    assert answered == READS  # each read asked the leader once, answered on the fast path
    assert stepped == [], stepped  # before: one RequestReceived step per ReadOffset
    assert applied >= 0
