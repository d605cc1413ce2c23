"""Protocol-level checks: ApiVersions negotiation, every advertised API at its version edges, tagged fields,
malformed input.

Kafka sources: clients ApiVersionsRequest/ApiVersionsResponse, network RequestContext.parseRequest,
RequestHeader.parse, NetworkReceive (size limits), SocketServer.Processor (closes a connection on
InvalidRequestException / InvalidReceiveException), the generated message readers (unknown tags are skipped).
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from generated.api_versions_request import ApiVersionsRequest
from generated.api_versions_response import ApiVersionsResponse
from generated.describe_quorum_response import DescribeQuorumResponse
from generated.messages import API_SPECS
from kwire.errors import ErrorCode
from kwire.headers import decode_response
from tools.conformance.model import CheckFailed, Context, Skip, check, expect
from tools.conformance.requests import harmless_request
from tools.conformance.runner import API_VERSIONS, DESCRIBE_QUORUM, describe_quorum_request
from tools.conformance.wire import Probe, ProbeError, to_json

KRAFT_VERSION = "kraft.version"


async def _api_versions_raw(p: Probe, version: int, body: bytes) -> ApiVersionsResponse:
    """ApiVersions at any ``version`` (even one no spec has): header by hand, response read at v0 on error."""
    cid = p.next_correlation_id()
    hv = 2 if version >= 3 else 1
    from generated.request_header import RequestHeader

    header = RequestHeader(
        request_api_key=API_VERSIONS, request_api_version=version, correlation_id=cid, client_id=p.client_id
    )
    entry: dict[str, Any] = {"node": p.node, "api": "ApiVersions", "version": version, "correlation_id": cid}
    p.evidence.append(entry)
    await p.send_raw(header.encode(hv) + body)
    frame = await p.read_frame()
    top = min(version, API_SPECS[API_VERSIONS].highest_version)
    got, resp = decode_response(frame, API_VERSIONS, top)
    entry["response"] = to_json(resp)
    expect(got == cid, f"correlation id {got}, expected {cid}")
    out: ApiVersionsResponse = resp
    return out


@check(
    "apiversions.v0",
    "ApiVersions v0 (header v1, empty body) is answered with error NONE and the full ApiKeys list.",
    "ApiVersionsRequest/ApiVersionsResponse (KIP-35); RequestContext.parseRequest",
    apis=(API_VERSIONS,),
)
async def apiversions_v0(ctx: Context) -> None:
    async with ctx.probe() as p:
        resp = await p.request(ApiVersionsRequest(), 0)
    expect(resp.error_code == ErrorCode.NONE, f"error {resp.error_code}")
    got = {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}
    expect(
        got == ctx.peer_apis,
        f"v0 lists {sorted(got.items())}, v{ctx.highest(API_VERSIONS)} listed {sorted(ctx.peer_apis.items())}",
    )
    keys = [a.api_key for a in resp.api_keys]
    expect(keys == sorted(set(keys)), "ApiKeys is not ascending and unique")
    expect(all(lo <= hi for lo, hi in got.values()), "an advertised range has min > max")


@check(
    "apiversions.unknown-version",
    "An ApiVersions version above the server's gets a v0 body with UNSUPPORTED_VERSION listing only ApiVersions' "
    "own range (header v0); retrying at that max succeeds.",
    "RequestContext.parseRequest (isUnsupportedApiVersionsRequest), ApiVersionsRequest.getErrorResponse (KIP-511)",
    apis=(API_VERSIONS,),
)
async def apiversions_unknown_version(ctx: Context) -> None:
    top = ctx.peer_apis[API_VERSIONS][1]
    body = ApiVersionsRequest(client_software_name="kraft-conformance", client_software_version="1.0").encode(
        API_SPECS[API_VERSIONS].highest_version
    )
    async with ctx.probe() as p:
        for version in (top + 1, 127):
            resp = await _api_versions_raw(p, version, body)
            expect(
                resp.error_code == ErrorCode.UNSUPPORTED_VERSION,
                f"v{version}: error {resp.error_code}, expected 35",
            )
            ranges = [(a.api_key, a.min_version, a.max_version) for a in resp.api_keys]
            lo, hi = ctx.peer_apis[API_VERSIONS]
            expect(
                ranges == [(API_VERSIONS, lo, hi)],
                f"v{version}: ApiKeys {ranges}, expected only {(18, lo, hi)}",
            )
        again = await p.request(
            ApiVersionsRequest(client_software_name="kraft-conformance", client_software_version="1.0"),
            min(top, API_SPECS[API_VERSIONS].highest_version),
        )
    expect(again.error_code == ErrorCode.NONE, f"retry at v{top}: error {again.error_code}")


@check(
    "apiversions.every-version",
    "Every ApiVersions version both sides know is answered with NONE and the same ApiKeys; SupportedFeatures "
    "(v3+) hides features whose min is 0 below v4 (kraft.version appears only at v4+).",
    "ApiVersionsResponse.maybeFilterSupportedFeatureKeys (KAFKA-17011/17492), ControllerApis.handleApiVersionsRequest",
    apis=(API_VERSIONS,),
)
async def apiversions_every_version(ctx: Context) -> None:
    lo, hi = ctx.common(API_VERSIONS) or (0, 0)
    async with ctx.probe() as p:
        for v in range(lo, hi + 1):
            resp = await p.request(
                ApiVersionsRequest(client_software_name="kraft-conformance", client_software_version="1.0")
                if v >= 3
                else ApiVersionsRequest(),
                v,
            )
            expect(resp.error_code == ErrorCode.NONE, f"v{v}: error {resp.error_code}")
            got = {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}
            expect(got == ctx.peer_apis, f"v{v}: ApiKeys differ from discovery")
            names = {f.name: (f.min_version, f.max_version) for f in resp.supported_features}
            if v >= 4:
                expect(KRAFT_VERSION in names, f"v{v}: SupportedFeatures lacks {KRAFT_VERSION}: {names}")
            elif v >= 3:
                zero_min = [n for n, (mn, _) in names.items() if mn == 0]
                expect(not zero_min, f"v{v}: features with min 0 listed below v4: {zero_min}")


@check(
    "apiversions.finalized-features",
    "Finalized feature levels (v3+) lie inside the supported ranges, the epoch is >= 0 when any is finalized, "
    "and kraft.version is finalized at the level the quorum runs (1 when voters carry directory ids).",
    "ApiVersionsResponse.createApiVersionsResponse; KRaftMetadataCache.features (adds kraft.version when > 0)",
    apis=(API_VERSIONS, DESCRIBE_QUORUM),
)
async def apiversions_finalized(ctx: Context) -> None:
    if ctx.highest(API_VERSIONS) < 3:
        raise Skip("the target's ApiVersions has no feature fields (v3+)")
    async with ctx.probe() as p:
        resp = await p.request(
            ApiVersionsRequest(client_software_name="kraft-conformance", client_software_version="1.0"),
            ctx.highest(API_VERSIONS),
        )
    supported = {f.name: (f.min_version, f.max_version) for f in resp.supported_features}
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in resp.finalized_features}
    for name, (mn, mx) in finalized.items():
        expect(name in supported, f"{name} is finalized but not supported")
        s_lo, s_hi = supported[name]
        expect(s_lo <= mx <= s_hi and mn <= mx, f"{name} finalized {mn}-{mx} outside supported {s_lo}-{s_hi}")
    if finalized:
        expect(
            resp.finalized_features_epoch >= 0,
            f"finalized features with epoch {resp.finalized_features_epoch}",
        )
    view = await ctx.quorum()
    dynamic = all(d != uuid.UUID(int=0) for d, _ in view.voters.values())
    if ctx.highest(DESCRIBE_QUORUM) < 2:
        raise Skip("DescribeQuorum below v2 carries no directory ids; cannot tell the kraft.version")
    level = finalized.get(KRAFT_VERSION, (0, 0))[1]
    expect(
        level == (1 if dynamic else 0),
        f"kraft.version finalized at {level}, quorum voters {'have' if dynamic else 'lack'} directory ids",
    )


@check(
    "apiversions.invalid-software-name",
    "ApiVersions v3+ with a ClientSoftwareName outside [a-zA-Z0-9](?:[a-zA-Z0-9-.]*[a-zA-Z0-9])? gets "
    "INVALID_REQUEST and the connection stays usable.",
    "ApiVersionsRequest.isValid; KafkaApis/ControllerApis.handleApiVersionsRequest",
    apis=(API_VERSIONS,),
)
async def apiversions_invalid_name(ctx: Context) -> None:
    if ctx.highest(API_VERSIONS) < 3:
        raise Skip("the target's ApiVersions has no client software fields (v3+)")
    async with ctx.probe() as p:
        resp = await p.request(
            ApiVersionsRequest(client_software_name="bad name!", client_software_version="1.0"),
            ctx.highest(API_VERSIONS),
        )
        expect(resp.error_code == ErrorCode.INVALID_REQUEST, f"error {resp.error_code}, expected 42")
        ok = await p.request(ApiVersionsRequest(), 0)
        expect(ok.error_code == ErrorCode.NONE, f"follow-up error {ok.error_code}")


@check(
    "versions.unadvertised-apis",
    "Every advertised API has a message spec in this build (otherwise its version probes cannot run).",
    "ApiVersionsResponse.ApiKeys (the listener's API set)",
)
async def versions_unknown(ctx: Context) -> None:
    missing = sorted(k for k in ctx.peer_apis if k not in API_SPECS)
    if missing:
        raise Skip(f"no spec here for advertised api keys {missing}; their versions are not probed")


NOT_PROBED = "not probed"


def _version_check(api_key: int) -> None:
    name = API_SPECS[api_key].name

    async def run(ctx: Context) -> None:
        rng = ctx.common(api_key)
        assert rng is not None
        lo, hi = rng
        peer = ctx.peer_apis[api_key]
        async with ctx.probe() as p:
            for v in sorted({lo, hi}):
                req = harmless_request(api_key, v, ctx.cluster_id)
                if req is None:
                    raise Skip(f"{name} has no request that leaves the cluster unchanged: {NOT_PROBED}")
                try:
                    await p.request(req, v, note=f"advertised {peer[0]}-{peer[1]}")
                except ProbeError as exc:
                    raise CheckFailed(f"{name} v{v}: {exc}") from None
        if (lo, hi) != peer:
            raise Skip(
                f"probed {lo}-{hi} (PASS there); the target advertises {peer[0]}-{peer[1]}, beyond this build's specs"
            )

    check(
        f"versions.{name}",
        f"{name} is answered at the lowest and highest version both sides know, with a response that decodes "
        "at that version and echoes the correlation id.",
        "ApiVersionsResponse (advertised ranges are served); RequestContext.parseRequest; generated readers",
        apis=(api_key,),
    )(run)


for _key in sorted(API_SPECS):
    _version_check(_key)


@check(
    "versions.outside-range",
    "A request at a version outside the advertised range (above the max; below the min for APIs with min > 0) "
    "closes that connection only; a fresh connection still works.",
    "RequestContext.parseRequest -> InvalidRequestException; SocketServer.Processor closes the channel",
    apis=(DESCRIBE_QUORUM,),
)
async def versions_outside(ctx: Context) -> None:
    _, hi = ctx.peer_apis[DESCRIBE_QUORUM]
    body = describe_quorum_request().encode(ctx.highest(DESCRIBE_QUORUM))
    cases = [(DESCRIBE_QUORUM, hi + 1, body)]
    for key, (lo, _) in sorted(ctx.peer_apis.items()):
        if key in API_SPECS and lo > 0:
            req = harmless_request(key, lo, ctx.cluster_id)
            if req is not None:
                cases.append((key, lo - 1, req.encode(lo)))
                break
    for key, version, raw in cases:
        await _expect_closed(ctx, key, version, raw, f"{API_SPECS[key].name} v{version}")


async def _expect_closed(
    ctx: Context, key: int, version: int, body: bytes, what: str, *, header: bytes | None = None
) -> None:
    async with ctx.probe() as bystander, ctx.probe() as p:
        await bystander.request(ApiVersionsRequest(), 0)
        cid = p.next_correlation_id()
        payload = (header if header is not None else p.header_bytes(key, version, cid)) + body
        p.note("send", what=what, frame_hex=to_json(payload))
        await p.send_raw(payload)
        closed = await p.closed()
        p.note("outcome", closed=closed)
        expect(closed, f"{what}: the connection stayed open")
        await _still_works(ctx, bystander, what)


async def _still_works(ctx: Context, bystander: Probe, what: str) -> None:
    try:
        resp = await bystander.request(ApiVersionsRequest(), 0)
    except ProbeError as exc:
        raise CheckFailed(f"after {what}: another open connection failed: {exc}") from None
    expect(resp.error_code == ErrorCode.NONE, f"after {what}: bystander error {resp.error_code}")
    async with ctx.probe() as fresh:
        try:
            resp = await fresh.request(ApiVersionsRequest(), 0)
        except ProbeError as exc:
            raise CheckFailed(f"after {what}: a fresh connection failed: {exc}") from None


@check(
    "tagged.unknown-ignored",
    "Unknown tagged fields in the request header, the body and nested structs are skipped: the answer equals "
    "the answer to the same request without them.",
    "generated *Data.read (unknown tags kept as raw tagged fields), RequestHeader.parse",
    apis=(DESCRIBE_QUORUM,),
)
async def tagged_unknown(ctx: Context) -> None:
    version = ctx.highest(DESCRIBE_QUORUM)
    req = describe_quorum_request()
    req.unknown_tagged_fields = [(77, b"\x01\x02\x03"), (4000, b"")]
    req.topics[0].unknown_tagged_fields = [(9, b"zz")]
    req.topics[0].partitions[0].unknown_tagged_fields = [(120, bytes(20))]
    async with ctx.probe() as p:
        plain: DescribeQuorumResponse = await p.request(describe_quorum_request(), version)
        tagged: DescribeQuorumResponse = await p.request(req, version, header_tags=[(33, b"\xff")])
    a, b = plain.topics[0].partitions[0], tagged.topics[0].partitions[0]
    expect(
        (a.error_code, a.leader_id, len(a.current_voters))
        == (b.error_code, b.leader_id, len(b.current_voters)),
        "the tagged request got a different answer",
    )


@check(
    "malformed.truncated-body",
    "A request whose body ends early closes that connection only; other connections keep working.",
    "RequestContext.parseRequest (InvalidRequestException on a short buffer); SocketServer.Processor",
    apis=(DESCRIBE_QUORUM,),
)
async def malformed_truncated(ctx: Context) -> None:
    version = ctx.highest(DESCRIBE_QUORUM)
    body = describe_quorum_request().encode(version)
    await _expect_closed(
        ctx, DESCRIBE_QUORUM, version, body[: len(body) // 2], "a truncated DescribeQuorum body"
    )


@check(
    "malformed.bad-header",
    "An unknown api key, or a request header cut inside the client id, closes that connection only.",
    "RequestHeader.parse / ApiKeys.forId (InvalidRequestException); SocketServer.Processor",
)
async def malformed_header(ctx: Context) -> None:
    unknown = struct.pack(">hhih", 32000, 0, 1, 4) + b"abcd"
    await _expect_closed(ctx, 0, 0, b"", "api key 32000", header=unknown)
    cut = struct.pack(">hhih", API_VERSIONS, 0, 1, 100) + b"ab"
    await _expect_closed(ctx, 0, 0, b"", "a header cut inside the client id", header=cut)


@check(
    "malformed.oversize-frame",
    "A size prefix above socket.request.max.bytes (or negative) closes that connection only, before any body.",
    "NetworkReceive.readFrom (InvalidReceiveException); SocketServer.Processor",
)
async def malformed_oversize(ctx: Context) -> None:
    for size in (0x7FFFFFFF, -5):
        async with ctx.probe() as bystander, ctx.probe() as p:
            await bystander.request(ApiVersionsRequest(), 0)
            p.note("send", what=f"size prefix {size}")
            await p.write(struct.pack(">i", size) + b"\x00\x12\x00\x00")
            closed = await p.closed()
            p.note("outcome", closed=closed)
            expect(closed, f"size prefix {size}: the connection stayed open")
            await _still_works(ctx, bystander, f"size prefix {size}")


@check(
    "malformed.trailing-bytes",
    "Bytes after a complete request body are ignored: the request is answered and the connection stays open.",
    "RequestContext.parseRequest (parses the body, never checks what remains)",
    apis=(DESCRIBE_QUORUM,),
)
async def malformed_trailing(ctx: Context) -> None:
    version = ctx.highest(DESCRIBE_QUORUM)
    req = describe_quorum_request()
    async with ctx.probe() as p:
        resp = await p.request(
            req, version, body_bytes=req.encode(version) + b"\x00\x07garbage", note="7+2 trailing bytes"
        )
        expect(len(resp.topics) == 1, "unexpected answer")
        again = await p.request(ApiVersionsRequest(), 0)
        expect(again.error_code == ErrorCode.NONE, "the connection is unusable after the request")
