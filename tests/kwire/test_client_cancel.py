"""kwire.client contract 11: cancelling a task that waits in ``send`` always cancels it, even when the response
has already arrived (Python 3.11's ``asyncio.wait_for`` returned the result instead, swallowing the cancel, and a
heartbeat loop stopped with one ``cancel()`` kept heartbeating: tests/daemon/test_failover_at_scale.py hung)."""

from __future__ import annotations

import asyncio

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_response import DescribeQuorumResponse
from kwire.client import KafkaClient
from kwire.server import KafkaServer
from tests.helpers.kwire import run

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("turns", range(6))
def test_a_cancel_after_the_response_arrived_still_cancels_the_sender(turns: int) -> None:
    async def answer(header: object, request: object, info: object) -> DescribeQuorumResponse:
        return DescribeQuorumResponse()

    async def main() -> None:
        async with KafkaServer(answer) as srv:
            client = KafkaClient("127.0.0.1", srv.port)
            try:
                await client.connect()
                for _ in range(20):
                    task = asyncio.create_task(client.send(DescribeQuorumRequest()))
                    conn = client._conn
                    assert conn is not None
                    while not conn.pending:
                        await asyncio.sleep(0)
                    while conn.pending:  # the read loop has set the response's future
                        await asyncio.sleep(0)
                    for _ in range(turns):
                        await asyncio.sleep(0)
                    cancelled_in_time = not task.done()
                    task.cancel()
                    try:
                        await task
                    except asyncio.CancelledError:
                        continue
                    assert not cancelled_in_time, "the cancel was swallowed: send returned its response"
            finally:
                await client.close()

    run(main())
