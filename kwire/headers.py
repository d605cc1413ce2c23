"""Request/response headers and the server-side request parsing order.

Public API:
- ``encode_request(api_key, version, correlation_id, client_id, body) -> bytes`` (frame payload, no size prefix)
- ``parse_request(frame, served) -> ParsedRequest`` (server side; ``served`` maps api key → (min, max))
- ``encode_response(api_key, version, correlation_id, body) -> bytes``
- ``decode_response(frame, api_key, version) -> (correlation_id, body)`` (client side)
- ``peek_correlation_id(frame) -> int``

Contracts (PROTOCOL-FACTS §2.1, §9 items 1-2; Kafka RequestHeader.parse, RequestContext.parseRequest):
1. Request header v1 (non-flexible API version) or v2 (flexible): RequestApiKey int16, RequestApiVersion int16,
   CorrelationId int32, ClientId int16-length nullable string (never compact, even in v2), v2 adds a tag buffer.
   Response header v0 (CorrelationId) or v1 (+ tag buffer); ApiVersions responses always use v0.
2. Server order: read api key and version (first 4 bytes); an api key the listener does not serve →
   UnknownApiKeyError (the caller closes the connection with a log line); the header version follows from the
   API's flexible versions (a version above the API's highest counts as flexible if the API has flexible
   versions, as Kafka does); then the header is parsed, then the body.
3. Unsupported version: for ApiVersions the request is NOT an error — ``ParsedRequest.unsupported_api_versions``
   is set and the body is left unparsed, so the caller answers with the v0 UNSUPPORTED_VERSION response. For
   any other API → UnsupportedVersionError (the caller closes the connection, as Kafka does).
4. A body that fails to parse → MessageDecodeError (a RemoteProtocolError). Bytes left after a parsed body are
   ignored, as Kafka's broker ignores them (it parses the body and never checks what remains); librdkafka 2.16
   sends Metadata v13 requests that end with such bytes. ``ParsedRequest.trailing`` counts them for logging.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from generated.messages import API_SPECS, ApiSpec
from generated.request_header import RequestHeader
from generated.response_header import ResponseHeader
from kwire.errors import (
    ErrorCode,
    MessageDecodeError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)

API_VERSIONS_KEY = 18
VersionRange = tuple[int, int]
_HEAD = struct.Struct(">hhi")


@dataclass(frozen=True, slots=True)
class ParsedRequest:
    header: RequestHeader
    header_version: int
    spec: ApiSpec
    body: Any  # the generated request object; None when unsupported_api_versions
    unsupported_api_versions: bool = False
    trailing: int = 0  # bytes after the parsed body (contract 4)

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id


def spec_for(api_key: int) -> ApiSpec:
    spec = API_SPECS.get(api_key)
    if spec is None:
        raise UnknownApiKeyError(f"unknown api key {api_key}")
    return spec


def request_header_version(spec: ApiSpec, version: int) -> int:
    return spec.request_header_version(version)


def response_header_version(spec: ApiSpec, version: int) -> int:
    if spec.api_key == API_VERSIONS_KEY:
        return 0
    return spec.response_header_version(version)


def encode_request(
    api_key: int, version: int, correlation_id: int, client_id: str | None, body: Any
) -> bytes:
    spec = spec_for(api_key)
    if not spec.lowest_version <= version <= spec.highest_version:
        raise UnsupportedVersionError(
            f"{spec.name} v{version} is outside {spec.lowest_version}-{spec.highest_version}"
        )
    header = RequestHeader(
        request_api_key=api_key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    payload: bytes = body.encode(version)
    return header.encode(request_header_version(spec, version)) + payload


def parse_request(frame: bytes, served: Mapping[int, VersionRange]) -> ParsedRequest:
    if len(frame) < _HEAD.size:
        raise MessageDecodeError(f"request of {len(frame)} bytes is shorter than a request header")
    api_key, version, _ = _HEAD.unpack_from(frame, 0)
    rng = served.get(api_key)
    spec = API_SPECS.get(api_key)
    if rng is None or spec is None:
        raise UnknownApiKeyError(f"api key {api_key} is not served on this listener")
    hv = request_header_version(spec, version)
    header, pos = RequestHeader.read(frame, 0, hv)
    lo, hi = rng
    if not lo <= version <= hi:
        if api_key == API_VERSIONS_KEY:
            return ParsedRequest(header, hv, spec, None, unsupported_api_versions=True)
        raise UnsupportedVersionError(f"{spec.name} v{version} is not supported (served {lo}-{hi})")
    body, end = spec.request.read(frame, pos, version)  # type: ignore[attr-defined]
    return ParsedRequest(header, hv, spec, body, trailing=len(frame) - end)


def encode_response(api_key: int, version: int, correlation_id: int, body: Any) -> bytes:
    payload: bytes = body.encode(version)
    return response_header(api_key, version, correlation_id) + payload


def response_header(api_key: int, version: int, correlation_id: int) -> bytes:
    """The response header of ``api_key`` at ``version`` (v0: the correlation id; v1: and no tagged fields)."""
    tail = _HEADER_TAILS.get((api_key, version))
    if tail is None:
        hv = response_header_version(spec_for(api_key), version)
        tail = _HEADER_TAILS[(api_key, version)] = ResponseHeader(correlation_id=0).encode(hv)[4:]
    return correlation_id.to_bytes(4, "big", signed=True) + tail


_HEADER_TAILS: dict[
    tuple[int, int], bytes
] = {}  # what follows the correlation id (no tagged fields: b"" or 0)


def peek_correlation_id(frame: bytes) -> int:
    if len(frame) < 4:
        raise MessageDecodeError("response is shorter than its correlation id")
    cid: int = int.from_bytes(frame[:4], "big", signed=True)
    return cid


def decode_response(frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
    """Decode a response to a request we sent at ``version``.

    ApiVersions (KIP-511): a server that does not support our ApiVersions version answers with a v0 body
    carrying UNSUPPORTED_VERSION; such a body is read at v0 (Kafka's client falls back the same way)."""
    spec = spec_for(api_key)
    header, pos = ResponseHeader.read(frame, 0, response_header_version(spec, version))
    if api_key == API_VERSIONS_KEY and version > 0:
        error = int.from_bytes(frame[pos : pos + 2], "big", signed=True) if len(frame) >= pos + 2 else 0
        order = (0, version) if error == ErrorCode.UNSUPPORTED_VERSION else (version, 0)
        try:
            return header.correlation_id, spec.response.decode(frame[pos:], order[0])  # type: ignore[attr-defined]
        except MessageDecodeError:
            return header.correlation_id, spec.response.decode(frame[pos:], order[1])  # type: ignore[attr-defined]
    # Read in place: no copy of the body (an 8 MiB Fetch answer), the same checks as ``decode``.
    body, end = spec.response.read(frame, pos, version)  # type: ignore[attr-defined]
    if end != len(frame):
        raise MessageDecodeError(f"{len(frame) - end} trailing bytes after {spec.name} response v{version}")
    return header.correlation_id, body
