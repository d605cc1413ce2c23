"""kraftd.shell.controller.broker_rpcs contract 5: a WantShutDown heartbeat held back only by another active
broker's report is answered, with ShouldShutDown, once that broker reports the shutdown's offset (on the
heartbeat short path), not at the shutting-down broker's next heartbeat. A real one-node quorum in-process."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftd.config import load_config
from kraftd.shell.node import ControllerNode
from kwire.client import KafkaClient
from kwire.errors import ErrorCode
from tests.daemon.cluster import CLUSTER_ID, free_ports
from tests.daemon.conftest import write_properties
from tools.storage_cli import format_directory
from tools.swarm import frames

CAUGHT_UP = 10**9


async def _run(tmp_path: Path) -> dict[str, Any]:
    cfg = tmp_path / "one.properties"
    (port,) = free_ports(1)
    write_properties(cfg, 1, port, tmp_path / "one", voters=f"1@127.0.0.1:{port}")
    format_directory(load_config(cfg), CLUSTER_ID)
    node = ControllerNode(load_config(cfg), seed=1)
    await node.start()
    out: dict[str, Any] = {}
    try:
        await node.wait_for_leader(10)
        for _ in range(200):
            if node.controller.machine.active:
                break
            await asyncio.sleep(0.05)
        async with KafkaClient("127.0.0.1", port) as seven, KafkaClient("127.0.0.1", port) as eight:
            epochs = {}
            for bid, client in ((7, seven), (8, eight)):
                reg = frames.registration(bid, CLUSTER_ID, uuid.uuid4(), 9000 + bid, uuid.UUID(int=500 + bid))
                registered = await client.send(reg)
                assert registered.error_code == ErrorCode.NONE, registered
                epochs[bid] = registered.broker_epoch

            def hb(bid: int, offset: int = CAUGHT_UP, **kw: Any) -> BrokerHeartbeatRequest:
                return BrokerHeartbeatRequest(
                    broker_id=bid, broker_epoch=epochs[bid], current_metadata_offset=offset, **kw
                )

            for bid, client in ((7, seven), (8, eight)):
                assert not (await client.send(hb(bid))).is_fenced
            await eight.send(hb(8, offset=0))  # broker 8 has not replayed what the shutdown will write
            asked = asyncio.ensure_future(seven.send(hb(7, want_shut_down=True)))
            await asyncio.sleep(0.5)
            out["held"] = not asked.done()
            behind = await eight.send(hb(8, offset=0))  # still behind: the answer stays held
            out["held_after_behind"] = not asked.done() and behind.error_code == ErrorCode.NONE
            await eight.send(hb(8))  # at the shutdown's offset: releases broker 7's answer
            answer = await asyncio.wait_for(asked, 5)
            out["answer"] = (answer.error_code, answer.should_shut_down, answer.is_fenced)
            out["fenced"] = node.controller.machine.latest().brokers[7].fenced
    finally:
        await node.stop()
    return out


def test_the_shutdown_answer_waits_for_the_last_report_and_says_shut_down(tmp_path: Path) -> None:
    out = asyncio.run(_run(tmp_path))
    assert out["held"] and out["held_after_behind"]  # before contract 5: answered at once, "not yet"
    assert out["answer"] == (ErrorCode.NONE, True, True) and out["fenced"]
