"""kraftd.shell.controller.broker_rpcs contract 4 / kraftd.shell.apis.routing contract 6b: a heartbeat that changes
nothing is answered on the listener's fast path (no handler task, no ControllerResult); every other heartbeat
takes the coroutine path, and both give the same answers. Counted work, on a real one-node quorum in-process."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftd.config import load_config
from kraftd.shell.controller.broker_rpcs import ControllerRpcs
from kraftd.shell.node import ControllerNode
from kwire.client import KafkaClient
from kwire.errors import ErrorCode
from tests.daemon.cluster import CLUSTER_ID, free_ports
from tests.daemon.conftest import write_properties
from tools.storage_cli import format_directory
from tools.swarm import frames


def _answer(resp: Any) -> tuple[int, bool, bool, bool]:
    return (resp.error_code, resp.is_caught_up, resp.is_fenced, resp.should_shut_down)


async def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    cfg = tmp_path / "one.properties"
    (port,) = free_ports(1)
    write_properties(cfg, 1, port, tmp_path / "one", voters=f"1@127.0.0.1:{port}")
    format_directory(load_config(cfg), CLUSTER_ID)
    slow: list[BrokerHeartbeatRequest] = []  # heartbeats the coroutine path answered
    real = ControllerRpcs.heartbeat

    async def counted(self: ControllerRpcs, req: BrokerHeartbeatRequest, version: int, principal: str) -> Any:
        slow.append(req)
        return await real(self, req, version, principal)

    monkeypatch.setattr(ControllerRpcs, "heartbeat", counted)
    node = ControllerNode(load_config(cfg), seed=1)
    await node.start()
    out: dict[str, Any] = {}
    try:
        await node.wait_for_leader(10)
        for _ in range(200):
            if node.controller.machine.active:
                break
            await asyncio.sleep(0.05)
        async with KafkaClient("127.0.0.1", port) as client:
            reg = frames.registration(7, CLUSTER_ID, uuid.uuid4(), 9007, uuid.UUID(int=507))
            registered = await client.send(reg)
            assert registered.error_code == ErrorCode.NONE, registered
            epoch = registered.broker_epoch

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
    finally:
        await node.stop()
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
