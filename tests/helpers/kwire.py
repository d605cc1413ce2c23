"""Helpers shared by the kwire server tests: a DescribeQuorum request frame and a reader of whole frames."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_response import DescribeQuorumResponse
from generated.vote_response import VoteResponse
from kwire.apiversions import build_api_versions_response
from kwire.client import all_apis
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import encode_request, encode_response, parse_request


# ---- first written for tests/kwire/test_server_client.py ---------------------------------------------------
def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


def dq_request(cid: int) -> bytes:
    """A framed DescribeQuorum v2 request with correlation id ``cid`` (client id "raw")."""
    return encode_frame(encode_request(55, 2, cid, "raw", DescribeQuorumRequest()))


async def read_frames(reader: asyncio.StreamReader, n: int, timeout: float | None = None) -> list[bytes]:
    """The next ``n`` frames from ``reader``; fails if the peer closes first (or a read waits over ``timeout``)."""
    d, out = FrameDecoder(), []
    while len(out) < n:
        data = await asyncio.wait_for(reader.read(65536), timeout)
        assert data, "connection closed early"
        out += d.feed(data)
    return out


# ---- first written for tests/kwire/test_fast_paths.py (kwire.server contract 11) ----------------------------
VOTE = 52


async def slow_handler(header: Any, request: Any, info: Any) -> Any:
    """The coroutine path: answers after 50 ms (a Vote with a VoteResponse, anything else a DescribeQuorum)."""
    await asyncio.sleep(0.05)
    if header.request_api_key == VOTE:
        return VoteResponse(error_code=0)
    return DescribeQuorumResponse(error_code=0, error_message=f"slow {header.correlation_id}")


class Parked:
    """A fast handler that takes Vote requests and answers them when told to."""

    def __init__(self) -> None:
        self.replies: list[Any] = []
        self.taken = asyncio.Event()

    def __call__(self, header: Any, body: Any, info: Any, reply: Any) -> bool:
        if header.request_api_key != VOTE:
            return False
        self.replies.append(reply)
        self.taken.set()
        return True


# ---- first written for the kwire.client stand-in controllers (test_client_patient, test_client_disconnects) ----
async def requests_after_api_versions(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> AsyncIterator[tuple[int, int, int]]:
    """A stand-in controller's read loop: ApiVersions answered at once; every other request yielded as (api key,
    version, correlation id) for the test to answer or not. Ends when the peer closes."""
    decoder = FrameDecoder()
    while data := await reader.read(65536):
        for frame in decoder.feed(data):
            req = parse_request(frame, all_apis())
            key, version, cid = req.spec.api_key, req.header.request_api_version, req.header.correlation_id
            if req.body is None or key == 18:
                body = build_api_versions_response(min(version, 3), all_apis())
                writer.write(encode_frame(encode_response(18, min(version, 3), cid, body)))
            else:
                yield key, version, cid
