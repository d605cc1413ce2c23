"""kraftd.shell.controller.broker_rpcs contract 5: a WantShutDown heartbeat held back only by another active
broker's report is answered, with ShouldShutDown, once that broker reports the shutdown's offset (on the
heartbeat short path), not at the shutting-down broker's next heartbeat. A real one-node quorum in-process."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from kwire.client import KafkaClient
from kwire.errors import ErrorCode
from tests.daemon.one_node import one_node, register

CAUGHT_UP = 10**9


async def _run(tmp_path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with one_node(tmp_path) as (node, port):
        async with KafkaClient("127.0.0.1", port) as seven, KafkaClient("127.0.0.1", port) as eight:
            epochs = {bid: await register(client, bid) for bid, client in ((7, seven), (8, eight))}

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
    return out


def test_the_shutdown_answer_waits_for_the_last_report_and_says_shut_down(tmp_path: Path) -> None:
    out = asyncio.run(_run(tmp_path))
    assert out["held"] and out["held_after_behind"]  # before contract 5: answered at once, "not yet"
    assert out["answer"] == (ErrorCode.NONE, True, True) and out["fenced"]
