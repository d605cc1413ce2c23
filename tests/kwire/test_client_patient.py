"""kwire.client contract 4a: a patient client (kraft-swarm's) does not time out a request whose answer is still
arriving; it still times out one whose peer stopped sending, and a plain client times out either (contract 4)."""

from __future__ import annotations

import asyncio

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_response import DescribeQuorumResponse
from kwire.client import KafkaClient
from kwire.errors import RequestTimeoutError
from kwire.framing import encode_frame
from kwire.headers import encode_response
from tests.helpers.kwire import requests_after_api_versions

HOST = "127.0.0.1"
TIMEOUT = 0.3  # the client's request timeout; the slow answer takes about 3 of them
STEP = 0.1
ERROR_MESSAGE = "x" * 30_000  # a large answer, sent in pieces


def serve(stall_after: int | None) -> asyncio.base_events.Server:
    """A controller stand-in: ApiVersions at once; DescribeQuorum in 1 KB pieces ``STEP`` apart (about
    ``3 * TIMEOUT`` in all), or stopping after ``stall_after`` pieces."""

    async def conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async for key, version, cid in requests_after_api_versions(reader, writer):
            answer = encode_frame(
                encode_response(key, version, cid, DescribeQuorumResponse(error_message=ERROR_MESSAGE))
            )
            pieces = [answer[i : i + 1000] for i in range(0, len(answer), 1000)]
            for n, piece in enumerate(pieces):
                if stall_after is not None and n == stall_after:
                    await asyncio.sleep(60)
                writer.write(piece)
                await asyncio.sleep(STEP * 9 / len(pieces))
        writer.close()

    return asyncio.start_server(conn, HOST, 0)  # type: ignore[return-value]


async def ask(patient: bool, stall_after: int | None) -> object:
    server = await serve(stall_after)  # type: ignore[misc]
    port = server.sockets[0].getsockname()[1]
    client = KafkaClient(HOST, port, request_timeout=TIMEOUT, patient=patient)
    try:
        await client.connect()
        fut = client.start(DescribeQuorumRequest())
        assert fut is not None
        return await fut
    finally:
        await client.close()
        server.close()


def test_a_patient_client_waits_for_an_answer_that_is_still_arriving() -> None:
    answer = asyncio.run(ask(patient=True, stall_after=None))
    assert isinstance(answer, DescribeQuorumResponse) and answer.error_message == ERROR_MESSAGE


def test_a_plain_client_times_out_the_same_answer() -> None:
    with pytest.raises(RequestTimeoutError):
        asyncio.run(ask(patient=False, stall_after=None))


def test_a_patient_client_times_out_a_peer_that_stopped_sending_mid_answer() -> None:
    with pytest.raises(RequestTimeoutError):
        asyncio.run(ask(patient=True, stall_after=2))
