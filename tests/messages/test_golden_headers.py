"""Golden bytes for RequestHeader (v1, v2) and ResponseHeader (v0, v1), and header-then-body parsing.

Invariants (PROTOCOL-FACTS §2.1, §9.1):
1. RequestHeader.ClientId always has an int16 length prefix (-1 = null), even in the flexible header v2.
2. Flexible header versions (request v2, response v1) end with a tagged-field section.
3. ``Cls.read(buf, offset, v)`` returns the message and the offset just past it, so a body can follow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers.messages import VOTE_REQUEST_V0
from tests.messages.support import check_golden, cls, hx


def _req_header(client_id: str | None) -> Any:
    return cls("RequestHeader")(
        request_api_key=52, request_api_version=0, correlation_id=7, client_id=client_id
    )


REQUEST_HEADER_V1 = hx(
    "0034"  # RequestApiKey 52 (Vote)
    "0000"  # RequestApiVersion 0
    "00000007"  # CorrelationId 7
    "0006 6b7261667464"  # ClientId: int16 length 6, "kraftd"
)

REQUEST_HEADER_V2 = hx(
    "0034"  # RequestApiKey 52
    "0000"  # RequestApiVersion 0
    "00000007"  # CorrelationId 7
    "0006 6b7261667464"  # ClientId: still int16 length in v2 (field-level flexibleVersions "none")
    "00"  # tagged fields: none
)

REQUEST_HEADER_V2_NULL_CLIENT = hx(
    "0034"  # RequestApiKey 52
    "0000"  # RequestApiVersion 0
    "00000007"  # CorrelationId 7
    "ffff"  # ClientId: int16 length -1 = null
    "00"  # tagged fields
)

RESPONSE_HEADER_V0 = hx(
    "00000007"  # CorrelationId 7
)

RESPONSE_HEADER_V1 = hx(
    "00000007"  # CorrelationId 7
    "00"  # tagged fields
)

CASES: list[tuple[str, int, Callable[[], Any], bytes]] = [
    ("RequestHeader", 1, lambda: _req_header("kraftd"), REQUEST_HEADER_V1),
    ("RequestHeader", 2, lambda: _req_header("kraftd"), REQUEST_HEADER_V2),
    ("RequestHeader", 2, lambda: _req_header(None), REQUEST_HEADER_V2_NULL_CLIENT),
    ("ResponseHeader", 0, lambda: cls("ResponseHeader")(correlation_id=7), RESPONSE_HEADER_V0),
    ("ResponseHeader", 1, lambda: cls("ResponseHeader")(correlation_id=7), RESPONSE_HEADER_V1),
]


@pytest.mark.parametrize(
    ("name", "version", "build", "golden"),
    CASES,
    ids=[f"{c[0]}-v{c[1]}-{i}" for i, c in enumerate(CASES)],
)
def test_golden(name: str, version: int, build: Callable[[], Any], golden: bytes) -> None:
    obj = build()
    assert type(obj).NAME == name
    check_golden(obj, version, golden)


def test_read_header_then_body() -> None:
    frame = REQUEST_HEADER_V2 + VOTE_REQUEST_V0
    header, offset = cls("RequestHeader").read(frame, 0, 2)
    assert header == _req_header("kraftd")
    assert offset == len(REQUEST_HEADER_V2)
    body, end = cls("VoteRequest").read(frame, offset, header.request_api_version)
    assert end == len(frame)
    assert body == cls("VoteRequest").decode(VOTE_REQUEST_V0, 0)


def test_read_accepts_memoryview_and_offset() -> None:
    frame = b"\xaa\xbb" + RESPONSE_HEADER_V1 + b"\xcc"
    header, offset = cls("ResponseHeader").read(memoryview(frame), 2, 1)
    assert header.correlation_id == 7
    assert offset == 2 + len(RESPONSE_HEADER_V1)


def test_write_appends() -> None:
    out = bytearray(b"\x01")
    cls("ResponseHeader")(correlation_id=7).write(out, 1)
    assert bytes(out) == b"\x01" + RESPONSE_HEADER_V1
