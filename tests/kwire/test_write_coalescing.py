"""kwire.server contract 2a on real sockets: responses of a connection that are ready together leave in one write."""

from __future__ import annotations

import asyncio

import pytest

from generated.describe_quorum_response import DescribeQuorumResponse
from kwire.headers import decode_response
from kwire.server import KafkaServer
from tests.helpers.kwire import dq_request, read_frames, run

pytestmark = pytest.mark.timeout(30)
HOST = "127.0.0.1"


def test_responses_ready_together_leave_in_one_write():
    """Contract 2a: eight pipelined requests whose handlers finish in the same turn cost one socket write, and
    still come back in request order; a response that is not ready yet is not waited for."""
    gate = asyncio.Event

    async def main():
        release = gate()

        async def together(header, request, info):
            if header.correlation_id < 8:
                await release.wait()
            return DescribeQuorumResponse(error_message=str(header.correlation_id))

        async with KafkaServer(together) as srv:
            r, w = await asyncio.open_connection(HOST, srv.port)
            w.write(b"".join(dq_request(i) for i in range(8)))
            await asyncio.sleep(0.2)  # all eight handlers wait on the gate
            release.set()
            frames = await read_frames(r, 8)
            assert [decode_response(f, 55, 2)[0] for f in frames] == list(range(8))
            assert srv.stats.writes == 1, srv.stats
            w.write(dq_request(8))
            assert decode_response((await read_frames(r, 1))[0], 55, 2)[0] == 8
            assert srv.stats.writes == 2, srv.stats
            w.close()

    run(main())
