"""Raw Kafka-protocol connections for the conformance checks: exact frames out, decoded frames in, evidence kept.

Contracts:
1. :class:`Probe` writes whatever bytes a check asks for (valid requests, or deliberately malformed frames)
   and never negotiates on its own: the version of every request is the check's choice.
2. Every exchange is appended to the probe's ``evidence`` list as a JSON-ready dict: node, api, version,
   correlation id, the decoded request and the decoded response (or what happened instead: the peer closed
   the connection, no answer within the timeout, an undecodable response with its bytes in hex).
3. ``closed()`` answers whether the peer has closed the connection, waiting at most ``timeout`` seconds for
   the end of stream (a peer that keeps the connection open is "not closed" after the wait).
4. Every wait is bounded: connect and each response by the probe's timeout, ``close()`` by 2 s (then the
   connection is aborted).
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from dataclasses import fields, is_dataclass
from enum import Enum
from typing import Any

from generated.messages import API_SPECS
from generated.request_header import RequestHeader
from kwire.errors import KraftError
from kwire.headers import decode_response

Json = Any
MAX_HEX = 96
CLOSE_WAIT = 2.0


def to_json(obj: Any, version: int | None = None) -> Json:
    """A JSON-ready rendering of a generated message (field names as in the codecs; bytes as hex). With the
    ``version`` it was decoded at, only the fields that version has (its spec's ``versions``) are shown."""
    if is_dataclass(obj) and not isinstance(obj, type):
        absent: set[str] = set()
        if version is not None:
            absent = {
                fi.attr
                for fi in getattr(type(obj), "FIELDS", ())
                if not fi.versions[0] <= version <= fi.versions[1]
            }
        out: dict[str, Json] = {}
        for f in fields(obj):
            value = getattr(obj, f.name)
            if (f.name == "unknown_tagged_fields" and not value) or f.name in absent:
                continue
            out[f.name] = to_json(value, version)
        return out
    if isinstance(obj, list | tuple):
        return [to_json(v, version) for v in obj]
    if isinstance(obj, bytes | bytearray | memoryview):
        raw = bytes(obj)
        text = raw[:MAX_HEX].hex()
        return text if len(raw) <= MAX_HEX else f"{text}... ({len(raw)} bytes)"
    if isinstance(obj, uuid.UUID):
        return str(obj)
    if isinstance(obj, Enum):
        return obj.value
    return obj


def api_name(api_key: int) -> str:
    spec = API_SPECS.get(api_key)
    return spec.name if spec is not None else f"api{api_key}"


class ProbeError(Exception):
    """The exchange did not produce a decoded response (closed, timed out, undecodable)."""


class Probe:
    """One raw connection to one node."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout: float = 10.0,
        client_id: str = "kraft-conformance",
        evidence: list[Json] | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.timeout = timeout
        self.client_id = client_id
        self.evidence: list[Json] = [] if evidence is None else evidence
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._next_id = 1

    @property
    def node(self) -> str:
        return f"{self.host}:{self.port}"

    async def open(self) -> Probe:
        self._reader, self._writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port), self.timeout
        )
        return self

    async def close(self) -> None:
        """Close without waiting on the peer: a peer that stopped reading cannot hold the run (contract 4)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
            try:
                await asyncio.wait_for(writer.wait_closed(), CLOSE_WAIT)
            except (TimeoutError, ConnectionError, OSError):
                writer.transport.abort()

    async def __aenter__(self) -> Probe:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ raw bytes

    async def write(self, data: bytes) -> None:
        assert self._writer is not None, "probe is not open"
        self._writer.write(data)
        await self._writer.drain()

    async def read_frame(self, timeout: float | None = None) -> bytes:
        """The next size-prefixed frame; ProbeError when the peer closes or stays silent."""
        assert self._reader is not None, "probe is not open"
        try:
            head = await asyncio.wait_for(self._reader.readexactly(4), timeout or self.timeout)
            (size,) = struct.unpack(">i", head)
            return await asyncio.wait_for(self._reader.readexactly(size), timeout or self.timeout)
        except asyncio.IncompleteReadError:
            raise ProbeError("the peer closed the connection") from None
        except (ConnectionError, OSError) as exc:
            raise ProbeError(f"connection lost: {exc}") from None
        except TimeoutError:
            raise ProbeError(f"no response within {timeout or self.timeout}s") from None

    async def closed(self, timeout: float = 5.0) -> bool:
        """Contract 3: True once the peer has closed (EOF or reset) within ``timeout``."""
        assert self._reader is not None, "probe is not open"
        try:
            data = await asyncio.wait_for(self._reader.read(65536), timeout)
        except TimeoutError:
            return False
        except (ConnectionError, OSError):
            return True
        return data == b""

    # ------------------------------------------------------------------ requests

    def header_bytes(
        self, api_key: int, version: int, cid: int, *, header_tags: list[tuple[int, bytes]] | None = None
    ) -> bytes:
        spec = API_SPECS[api_key]
        header = RequestHeader(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=cid,
            client_id=self.client_id,
            unknown_tagged_fields=list(header_tags or []),
        )
        return header.encode(spec.request_header_version(version))

    def next_correlation_id(self) -> int:
        cid = self._next_id
        self._next_id += 1
        return cid

    async def send_raw(self, payload: bytes) -> None:
        await self.write(len(payload).to_bytes(4, "big", signed=True) + payload)

    async def request(
        self,
        body: Any,
        version: int,
        *,
        header_tags: list[tuple[int, bytes]] | None = None,
        body_bytes: bytes | None = None,
        note: str | None = None,
    ) -> Any:
        """Send ``body`` at ``version`` and return the decoded response (contract 2); ProbeError otherwise.

        ``body_bytes`` replaces the encoded body (the decoded ``body`` is still recorded as evidence)."""
        api_key: int = type(body).API_KEY
        cid = self.next_correlation_id()
        payload = self.header_bytes(api_key, version, cid, header_tags=header_tags)
        payload += body.encode(version) if body_bytes is None else body_bytes
        entry: dict[str, Json] = {
            "node": self.node,
            "api": api_name(api_key),
            "version": version,
            "correlation_id": cid,
            "request": to_json(body),
        }
        if note:
            entry["note"] = note
        if header_tags:
            entry["request_header_tags"] = [[t, v.hex()] for t, v in header_tags]
        self.evidence.append(entry)
        try:
            await self.send_raw(payload)
        except (ConnectionError, OSError) as exc:
            entry["outcome"] = f"write failed: {exc}"
            raise ProbeError(entry["outcome"]) from None
        try:
            frame = await self.read_frame()
        except ProbeError as exc:
            entry["outcome"] = str(exc)
            raise
        try:
            got_cid, response = decode_response(frame, api_key, version)
        except KraftError as exc:
            entry["outcome"] = f"undecodable response: {exc}"
            entry["response_hex"] = to_json(frame)
            raise ProbeError(entry["outcome"]) from None
        entry["response"] = to_json(response)
        if got_cid != cid:
            entry["outcome"] = f"response correlation id {got_cid}, expected {cid}"
            raise ProbeError(entry["outcome"])
        return response

    def note(self, step: str, **details: Json) -> None:
        """Record a raw (non-request) step as evidence."""
        self.evidence.append({"node": self.node, "step": step, **details})
