"""Helpers shared by the kwire server tests: a DescribeQuorum request frame and a reader of whole frames."""

from __future__ import annotations

import asyncio
from typing import Any

from generated.describe_quorum_request import DescribeQuorumRequest
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import encode_request


# ---- first written for tests/kwire/test_server_client.py ---------------------------------------------------
def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


def dq_request(cid: int) -> bytes:
    """A framed DescribeQuorum v2 request with correlation id ``cid`` (client id "raw")."""
    return encode_frame(encode_request(55, 2, cid, "raw", DescribeQuorumRequest()))


async def read_frames(reader: asyncio.StreamReader, n: int) -> list[bytes]:
    """The next ``n`` frames from ``reader``; fails if the peer closes first."""
    d, out = FrameDecoder(), []
    while len(out) < n:
        data = await reader.read(65536)
        assert data, "connection closed early"
        out += d.feed(data)
    return out
