"""kraftd.shell.controller.broker_rpcs contract 4 / kraftd.shell.apis.routing contract 6b: a heartbeat that changes
nothing is answered on the listener's fast path (no handler task, no ControllerResult); every other heartbeat
takes the coroutine path, and both give the same answers. Counted work, on a real one-node quorum in-process."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftd.shell.controller.broker_rpcs import ControllerRpcs
from kwire.client import KafkaClient
from kwire.errors import ErrorCode
from tests.daemon.one_node import one_node, register


def _answer(resp: Any) -> tuple[int, bool, bool, bool]:
    return (resp.error_code, resp.is_caught_up, resp.is_fenced, resp.should_shut_down)


async def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    slow: list[BrokerHeartbeatRequest] = []  # heartbeats the coroutine path answered
    real = ControllerRpcs.heartbeat

    async def counted(self: ControllerRpcs, req: BrokerHeartbeatRequest, version: int, principal: str) -> Any:
        slow.append(req)
        return await real(self, req, version, principal)

    monkeypatch.setattr(ControllerRpcs, "heartbeat", counted)
    out: dict[str, Any] = {}
    async with one_node(tmp_path) as (node, port):
        async with KafkaClient("127.0.0.1", port) as client:
            epoch = await register(client, 7)

            def hb(**kw: Any) -> BrokerHeartbeatRequest:
                kw.setdefault("current_metadata_offset", 10**9)
                return BrokerHeartbeatRequest(broker_id=7, broker_epoch=epoch, **kw)

            first = await client.send(hb())  # fenced -> unfenced: records, the coroutine path
            out["unfence"] = (_answer(first), len(slow))
            steady = [await client.send(hb()) for _ in range(20)]
            out["steady"] = ([_answer(r) for r in steady], len(slow) - out["unfence"][1])
            before = len(slow)
            stale = await client.send(BrokerHeartbeatRequest(broker_id=7, broker_epoch=epoch + 1))
            unknown = await client.send(BrokerHeartbeatRequest(broker_id=8, broker_epoch=1))
            shut = await client.send(hb(want_shut_down=True))
            out["others"] = ([_answer(r) for r in (stale, unknown, shut)], len(slow) - before)
            out["session_touched"] = 7 in node.rpcs.heartbeats.last_ms
    return out


def test_a_heartbeat_that_changes_nothing_takes_the_short_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = asyncio.run(_run(tmp_path, monkeypatch))
    assert out["unfence"] == ((ErrorCode.NONE, True, False, False), 1)
    answers, slow = out["steady"]
    assert answers == [(ErrorCode.NONE, True, False, False)] * 20
    assert slow == 0  # before contract 4: 20 handler tasks, each through ControllerGlue.run
    answers, slow = out["others"]
    assert slow == 3  # a stale epoch, an unknown broker, a controlled shutdown: the coroutine path
    assert answers[0][0] == ErrorCode.STALE_BROKER_EPOCH
    assert answers[1][0] == ErrorCode.BROKER_ID_NOT_REGISTERED
    assert answers[2][0] == ErrorCode.NONE and answers[2][3]  # nothing led: told to shut down at once
    assert out["session_touched"]
