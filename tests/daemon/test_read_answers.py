"""Reads of one loop turn (kraftd.shell.raft.reads contracts 5a and 6, issue #25), on an in-process single-voter
node: they share one barrier ticket, which reaches the core as one ReadsDue step (no Tick, no full poll), and
their DescribeConfigs results are built once. Counted, not timed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from generated.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from kraftd.shell.raft import reads as shell_reads
from tests.helpers.daemon import single_node

BROKER = 4
N = 20


def request(name: str) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(
        resources=[DescribeConfigsResource(resource_type=BROKER, resource_name=name, configuration_keys=None)]
    )


def test_reads_of_one_turn_share_a_ticket_one_read_step_and_their_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    real_describe = shell_reads.describe

    def describe(image: Any, r: Any, *args: Any) -> Any:
        built.append(r.resource_name)
        return real_describe(image, r, *args)

    monkeypatch.setattr(shell_reads, "describe", describe)

    async def run() -> tuple[list[Any], list[str], float]:
        node = single_node(tmp_path)
        await node.start()
        try:
            await node.wait_for_leader(10)
            await node.reads.describe_configs(request("1"))  # the leader has committed in its epoch
            steps: list[str] = []
            real_step = node.client.step

            def step(event: Any) -> Any:
                steps.append(type(event).__name__)
                return real_step(event)

            node.client.step = step  # type: ignore[method-assign]
            real_nudge = node.driver.events.nudge

            def nudge() -> None:
                steps.append("nudge")
                real_nudge()

            node.driver.events.nudge = nudge  # type: ignore[method-assign]
            built.clear()
            tickets = node.reads.tickets._value.get()
            reqs = [request("1")] * N + [request("2")] * N
            resps = await asyncio.gather(*(node.reads.describe_configs(r) for r in reqs))
            return resps, steps, node.reads.tickets._value.get() - tickets
        finally:
            await node.stop()

    resps, steps, tickets = asyncio.run(run())
    assert tickets == 1
    assert steps.count("ReadsDue") == 1, steps  # contract 5a: the ticket's one step, not a queued Tick
    # kraftd.shell.node contract 4a: an inline step that leaves the deadline where it was does not wake the driver
    assert "nudge" not in steps, steps
    assert sorted(built) == ["1", "2"]  # contract 6: one result per distinct resource
    assert [r.results[0].resource_name for r in resps] == ["1"] * N + ["2"] * N
    assert all(r.results[0].error_code == 0 for r in resps)
    assert len({id(r) for r in resps}) == 2 * N  # each request its own response object
