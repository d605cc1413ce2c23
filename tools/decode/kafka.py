"""Kafka frames in reassembled TCP streams: requests and responses decoded and paired.

Contracts:
1. Each direction is cut into size-prefixed frames. A size prefix that is negative or above 100 MiB, a frame
   shorter than its header, or bytes left at the end of the capture are flagged as malformed (with the reason);
   decoding of that direction stops at a bad size prefix (its frame boundaries are lost), and at a gap.
2. Requests: api key and version, then the request header at the version the API's spec gives, then the body
   with the generated class. An api key without a spec, or a version outside the spec's range, is reported
   with its header (header v1 is assumed for unknown keys) and left undecoded; bytes after the body are noted.
3. Responses are paired with the request of the same correlation id on the same connection (Kafka answers in
   request order; a reply out of that order is flagged). The response header version and body version come
   from the paired request (ApiVersions: header v0, and the v0 body of an UNSUPPORTED_VERSION reply, KIP-511).
   A response with no matching request is flagged and left undecoded.
4. Record payloads (FetchResponse Records, FetchSnapshotResponse UnalignedRecords) are replaced by their decoded
   batches (tools.decode.records).
5. A connection whose handshake was not captured may start mid-frame: requests are resynchronised at the first
   captured segment that starts a plausible request (a known api key at a version its spec has), responses at
   the first segment that starts with the correlation id of a captured request; skipped bytes are flagged.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from generated.messages import API_SPECS
from generated.request_header import RequestHeader
from kwire.errors import KraftError
from kwire.headers import decode_response
from tools.conformance.wire import to_json
from tools.decode.records import decode_batches
from tools.decode.streams import Connection, Direction, Endpoint

MAX_FRAME = 104857600
API_VERSIONS, FETCH, FETCH_SNAPSHOT = 18, 1, 59


@dataclass(slots=True)
class Message:
    conn: int
    ts: float
    src: Endpoint
    dst: Endpoint
    kind: str  # request / response / malformed (bad frames) / capture (what the capture lacks)
    api_key: int | None = None
    api: str | None = None
    version: int | None = None
    correlation_id: int | None = None
    client_id: str | None = None
    body: Any = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    paired: bool = False
    latency_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "conn": self.conn,
            "ts": round(self.ts, 6),
            "src": f"{self.src[0]}:{self.src[1]}",
            "dst": f"{self.dst[0]}:{self.dst[1]}",
            "kind": self.kind,
        }
        for name in ("api_key", "api", "version", "correlation_id", "client_id", "latency_ms", "error"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.kind == "request" or self.kind == "response":
            out["paired"] = self.paired
        if self.notes:
            out["notes"] = self.notes
        if self.body is not None:
            out["body"] = self.body
        return out


def _plausible_request(data: bytearray, pos: int) -> bool:
    if pos + 8 > len(data):
        return False
    size, api_key, version = struct.unpack_from(">ihh", data, pos)
    spec = API_SPECS.get(api_key)
    return (
        8 <= size <= MAX_FRAME and spec is not None and spec.lowest_version <= version <= spec.highest_version
    )


def _resync(d: Direction, ok: Any) -> int:
    """Contract 5: the first delivered chunk start where ``ok(data, offset)`` holds (the stream's start was not
    captured, so offset 0 may fall inside a frame); len(data) when there is none."""
    for mark in d.marks:
        if ok(d.data, mark):
            return mark
    return len(d.data)


def _frames(d: Direction, start: int = 0) -> tuple[list[tuple[int, bytes]], str | None]:
    """(offset of the frame's last byte, payload) for each whole frame; and why the walk stopped, if not cleanly."""
    frames: list[tuple[int, bytes]] = []
    data, pos = d.data, start
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 0 or size > MAX_FRAME:
            return (
                frames,
                f"frame size {size} at stream offset {pos} is outside 0..{MAX_FRAME}; the rest is not decoded",
            )
        if pos + 4 + size > len(data):
            break
        frames.append((pos + 3 + size, bytes(data[pos + 4 : pos + 4 + size])))
        pos += 4 + size
    if d.gap is not None:
        return (
            frames,
            f"{d.gap[1]} bytes missing from the capture at stream offset {d.gap[0]}; the rest is not decoded",
        )
    if pos < len(data):
        return frames, f"the capture ends inside a frame ({len(data) - pos} bytes of it captured)"
    return frames, None


def _records_view(api_key: int, body: Any, rendered: Any) -> None:
    """Contract 4: swap record bytes in the rendered body for decoded batches."""
    if api_key == FETCH:
        for t_obj, t_out in zip(body.responses, rendered.get("responses", []), strict=False):
            for p_obj, p_out in zip(t_obj.partitions, t_out.get("partitions", []), strict=False):
                if p_obj.records:
                    p_out["records"] = decode_batches(bytes(p_obj.records))
    elif api_key == FETCH_SNAPSHOT:
        for t_obj, t_out in zip(body.topics, rendered.get("topics", []), strict=False):
            for p_obj, p_out in zip(t_obj.partitions, t_out.get("partitions", []), strict=False):
                if p_obj.unaligned_records:
                    p_out["unaligned_records"] = decode_batches(bytes(p_obj.unaligned_records))


def _request(conn: Connection, ts: float, frame: bytes) -> Message:
    msg = Message(conn.index, ts, conn.client, conn.server, "request")
    if len(frame) < 8:
        msg.kind, msg.error = (
            "malformed",
            f"request frame of {len(frame)} bytes is shorter than a request header",
        )
        return msg
    api_key, version, cid = struct.unpack_from(">hhi", frame, 0)
    msg.api_key, msg.version, msg.correlation_id = api_key, version, cid
    spec = API_SPECS.get(api_key)
    msg.api = spec.name if spec is not None else f"api{api_key}"
    header_version = spec.request_header_version(version) if spec is not None else 1
    try:
        header, pos = RequestHeader.read(frame, 0, header_version)
    except KraftError as exc:
        msg.kind, msg.error = "malformed", f"request header does not parse: {exc}"
        return msg
    msg.client_id = header.client_id
    if spec is None:
        msg.notes.append(
            f"no message spec for api key {api_key}; body not decoded ({len(frame) - pos} bytes)"
        )
        return msg
    if not spec.lowest_version <= version <= spec.highest_version:
        msg.notes.append(
            f"{spec.name} v{version} is outside the spec's {spec.lowest_version}-{spec.highest_version}; body not decoded"
        )
        return msg
    try:
        body, end = spec.request.read(frame, pos, version)  # type: ignore[attr-defined]
    except KraftError as exc:
        msg.kind, msg.error = "malformed", f"{spec.name} v{version} request body does not decode: {exc}"
        return msg
    if end < len(frame):
        msg.notes.append(f"{len(frame) - end} bytes after the request body")
    msg.body = to_json(body, version)
    return msg


def _response(conn: Connection, ts: float, frame: bytes, req: Message | None) -> Message:
    msg = Message(conn.index, ts, conn.server, conn.client, "response")
    if len(frame) < 4:
        msg.kind, msg.error = "malformed", f"response frame of {len(frame)} bytes has no correlation id"
        return msg
    (cid,) = struct.unpack_from(">i", frame, 0)
    msg.correlation_id = cid
    if req is None:
        msg.error = f"response with correlation id {cid} matches no request on this connection"
        return msg
    msg.api_key, msg.api, msg.version = req.api_key, req.api, req.version
    msg.paired = req.paired = True
    msg.latency_ms = round((ts - req.ts) * 1000, 3)
    spec = API_SPECS.get(req.api_key or -1)
    if spec is None or req.version is None:
        msg.notes.append("no message spec for the request; body not decoded")
        return msg
    version = req.version
    if req.api_key == API_VERSIONS and version > spec.highest_version:
        version = (
            spec.highest_version
        )  # the reply to an unknown version is a v0 body (KIP-511); decode_response falls back
    elif not spec.lowest_version <= version <= spec.highest_version:
        msg.notes.append("the request's version is outside the spec; body not decoded")
        return msg
    try:
        _, body = decode_response(frame, spec.api_key, version)
    except KraftError as exc:
        msg.kind, msg.error = "malformed", f"{spec.name} v{version} response does not decode: {exc}"
        return msg
    rendered = to_json(body, version)
    _records_view(spec.api_key, body, rendered)
    msg.body = rendered
    return msg


def decode_connection(conn: Connection) -> list[Message]:
    """Contracts 1-3 for one connection; messages in capture order."""
    out: list[Message] = []
    pending: dict[int, Message] = {}
    order: list[int] = []
    req_start = resp_start = 0
    if not conn.syn_seen:
        req_start = _resync(conn.to_server, _plausible_request)
        ids = set()
        for _, frame in _frames(conn.to_server, req_start)[0]:
            if len(frame) >= 8:
                ids.add(struct.unpack_from(">i", frame, 4)[0])

        def known_cid(data: bytearray, pos: int) -> bool:
            return pos + 8 <= len(data) and struct.unpack_from(">i", data, pos + 4)[0] in ids

        resp_start = _resync(conn.to_client, known_cid)
        if req_start or resp_start:
            out.append(
                Message(
                    conn.index,
                    conn.first_ts,
                    conn.client,
                    conn.server,
                    "capture",
                    error=f"connection start not captured: skipped {req_start} request and {resp_start} "
                    "response bytes to the first frame boundary found",
                )
            )
    requests, req_stop = _frames(conn.to_server, req_start)
    responses, resp_stop = _frames(conn.to_client, resp_start)
    events = [(conn.to_server.ts_at(end), 0, i, frame) for i, (end, frame) in enumerate(requests)]
    events += [(conn.to_client.ts_at(end), 1, i, frame) for i, (end, frame) in enumerate(responses)]
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    for ts, side, _, frame in events:
        if side == 0:
            msg = _request(conn, ts, frame)
            if msg.correlation_id is not None and msg.kind == "request":
                pending[msg.correlation_id] = msg
                order.append(msg.correlation_id)
        else:
            cid = struct.unpack_from(">i", frame, 0)[0] if len(frame) >= 4 else None
            req = pending.pop(cid, None) if cid is not None else None
            msg = _response(conn, ts, frame, req)
            if req is not None and order and order[0] != cid:
                msg.notes.append(f"answered out of request order (expected correlation id {order[0]} first)")
            if cid in order:
                order.remove(cid)
        out.append(msg)
    for stop, src, dst, d in (
        (req_stop, conn.client, conn.server, conn.to_server),
        (resp_stop, conn.server, conn.client, conn.to_client),
    ):
        if stop is not None:
            kind = "malformed" if stop.startswith("frame size") else "capture"
            out.append(
                Message(conn.index, d.times[-1] if d.times else conn.first_ts, src, dst, kind, error=stop)
            )
    return out
