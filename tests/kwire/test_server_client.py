"""Real sockets on 127.0.0.1: the asyncio server and client against each other and against raw bytes."""

from __future__ import annotations

import asyncio
import logging
import random

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_response import DescribeQuorumResponse
from generated.vote_request import VoteRequest
from kwire.apiversions import controller_apis
from kwire.client import KafkaClient
from kwire.errors import ApiNotSupportedError, NetworkError, RequestTimeoutError
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import decode_response, encode_request
from kwire.server import KafkaServer
from tests.helpers.kwire import dq_request, read_frames, run

pytestmark = pytest.mark.timeout(30)
HOST = "127.0.0.1"


async def echo_handler(header, request, info):
    return DescribeQuorumResponse(error_code=0, error_message=f"cid={header.correlation_id}")


async def assert_closed(reader: asyncio.StreamReader) -> None:
    assert await asyncio.wait_for(reader.read(), 5) == b""


def test_bad_input_closes_only_that_connection(caplog):
    caplog.set_level(logging.WARNING, logger="kwire.server")
    bad_inputs = {
        "garbage": encode_frame(b"\x00\x37\x00"),  # too short for a request header
        "negative size": b"\xff\xff\xff\xfe",
        "oversize frame": (5000).to_bytes(4, "big"),
        "unknown api key": encode_frame(bytes.fromhex("7ffe000000000001ffff")),
        "unsupported version": encode_frame(
            encode_request(52, 2, 1, "x", VoteRequest())[:2] + b"\x00\x09" + bytes(8)
        ),
        "unparsable body": encode_frame(encode_request(52, 2, 1, "x", VoteRequest())[:-2]),
    }

    async def main():
        async with KafkaServer(echo_handler, max_frame_size=4096) as srv:
            async with KafkaClient(HOST, srv.port) as good:
                for name, payload in bad_inputs.items():
                    r, w = await asyncio.open_connection(HOST, srv.port)
                    w.write(payload)
                    await w.drain()
                    await assert_closed(r)
                    w.close()
                    resp = await good.send(DescribeQuorumRequest())
                    assert resp.error_message.startswith("cid="), name
                assert good.connected

    run(main())
    lines = [r.getMessage() for r in caplog.records if r.name == "kwire.server"]
    assert len(lines) == len(bad_inputs)
    assert all(line.startswith("closing connection") for line in lines)
    assert any("api key 32766" in line for line in lines)
    assert any("frame size 5000" in line for line in lines)


def test_responses_in_request_order_even_when_handlers_finish_out_of_order():
    async def slow_first(header, request, info):
        await asyncio.sleep(0.05 * (5 - header.correlation_id))
        return DescribeQuorumResponse(error_message=str(header.correlation_id))

    async def main():
        async with KafkaServer(slow_first) as srv:
            r, w = await asyncio.open_connection(HOST, srv.port)
            w.write(b"".join(dq_request(i) for i in range(5)))
            frames = await read_frames(r, 5)
            decoded = [decode_response(f, 55, 2) for f in frames]
            assert [cid for cid, _ in decoded] == [0, 1, 2, 3, 4]
            assert [b.error_message for _, b in decoded] == ["0", "1", "2", "3", "4"]
            w.close()

    run(main())


def test_in_flight_requests_are_bounded_per_connection():
    started: list[int] = []
    release = asyncio.Event

    async def main():
        gate = release()

        async def blocking(header, request, info):
            started.append(header.correlation_id)
            await gate.wait()
            return DescribeQuorumResponse()

        async with KafkaServer(blocking, max_in_flight=2) as srv:
            r, w = await asyncio.open_connection(HOST, srv.port)
            w.write(b"".join(dq_request(i) for i in range(6)))
            while len(started) < 2:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # room for a third handler to start, if the bound were broken
            assert started == [0, 1]
            gate.set()
            frames = await read_frames(r, 6)
            assert [decode_response(f, 55, 2)[0] for f in frames] == list(range(6))
            assert started == list(range(6))
            w.close()

    run(main())


def test_handler_failure_closes_the_connection_with_a_log_line(caplog):
    caplog.set_level(logging.WARNING, logger="kwire.server")

    async def broken(header, request, info):
        if header.client_id == "bad":
            raise RuntimeError("boom")
        if header.client_id == "wrong-type":
            return VoteRequest()
        return DescribeQuorumResponse()

    async def main():
        async with KafkaServer(broken) as srv:
            for client_id in ("bad", "wrong-type"):
                r, w = await asyncio.open_connection(HOST, srv.port)
                w.write(encode_frame(encode_request(55, 0, 1, client_id, DescribeQuorumRequest())))
                await assert_closed(r)
                w.close()
            r, w = await asyncio.open_connection(HOST, srv.port)
            w.write(encode_frame(encode_request(55, 0, 1, "fine", DescribeQuorumRequest())))
            assert len(await read_frames(r, 1)) == 1
            w.close()

    run(main())
    messages = " | ".join(r.getMessage() for r in caplog.records if r.name == "kwire.server")
    assert "boom" in messages and "returned VoteRequest" in messages


def test_client_negotiates_down_to_a_server_limited_to_api_versions_v3():
    seen: list[int] = []

    async def main():
        served = {**controller_apis(), 18: (0, 3)}
        async with KafkaServer(echo_handler, served) as srv:
            orig = srv._api_versions

            def spy(request, version, *rest):
                seen.append(version)
                return orig(request, version, *rest)

            srv._api_versions = spy  # type: ignore[method-assign]
            async with KafkaClient(HOST, srv.port) as c:
                assert c.versions is not None
                assert c.versions.version_for(18) == 3
                assert c.versions.version_for(52) == 2
                assert c.versions.supported_features == {}  # kraft.version is omitted below v4
            async with KafkaClient(HOST, srv.port, apis={18: (0, 4), 55: (0, 1)}) as c:
                assert c.versions.version_for(55) == 1

    run(main())
    assert seen == [3, 3]  # the v4 attempts were answered with the v0 error before reaching the builder


def test_client_sees_kraft_version_feature_at_v4():
    async def main():
        async with KafkaServer(
            echo_handler, finalized_features=lambda: (12, {"kraft.version": (1, 1)})
        ) as srv:
            async with KafkaClient(HOST, srv.port) as c:
                assert c.versions.supported_features == {"kraft.version": (0, 1)}
                assert c.versions.finalized_features == {"kraft.version": (1, 1)}
                assert c.versions.finalized_features_epoch == 12

    run(main())


def test_client_refuses_an_api_the_peer_lacks():
    async def main():
        served = {18: (0, 4), 52: (0, 1)}
        async with KafkaServer(echo_handler, served) as srv:
            async with KafkaClient(HOST, srv.port) as c:
                with pytest.raises(ApiNotSupportedError):
                    await c.send(DescribeQuorumRequest())
                with pytest.raises(ApiNotSupportedError):
                    await c.send(VoteRequest(), version=2)
                assert c.connected  # nothing was sent, the connection is intact

    run(main())


def test_timeout_closes_and_the_next_send_reconnects():
    calls = {"n": 0}

    async def sometimes_stuck(header, request, info):
        calls["n"] += 1
        if calls["n"] == 1:
            await asyncio.sleep(10)
        return DescribeQuorumResponse(error_message="ok")

    async def main():
        async with KafkaServer(sometimes_stuck) as srv:
            async with KafkaClient(HOST, srv.port, reconnect_backoff_ms=10) as c:
                with pytest.raises(RequestTimeoutError):
                    await c.send(DescribeQuorumRequest(), timeout=0.2)
                assert not c.connected
                assert (await c.send(DescribeQuorumRequest())).error_message == "ok"

    run(main())


def test_reconnect_backoff_grows_and_is_capped():
    c = KafkaClient(HOST, 1, reconnect_backoff_ms=50, reconnect_backoff_max_ms=1000, rng=random.Random(1))
    for failures, nominal in [(1, 0.05), (2, 0.1), (3, 0.2), (5, 0.8), (6, 1.0), (30, 1.0)]:
        d = c.backoff_delay(failures)
        assert nominal * 0.8 <= d <= nominal * 1.2
    assert c.backoff_delay(0) == 0


def test_connect_failures_back_off():
    async def main():
        probe = await asyncio.start_server(lambda r, w: None, HOST, 0)
        port = probe.sockets[0].getsockname()[1]
        probe.close()
        await probe.wait_closed()
        c = KafkaClient(HOST, port, reconnect_backoff_ms=200, reconnect_backoff_max_ms=200, connect_timeout=2)
        loop = asyncio.get_running_loop()
        with pytest.raises(NetworkError):
            await c.connect()
        t0 = loop.time()
        with pytest.raises(NetworkError):
            await c.connect()
        assert loop.time() - t0 >= 0.15  # waited out the backoff before trying again
        await c.close()

    run(main())


def test_clean_shutdown_fails_pending_requests():
    async def never(header, request, info):
        await asyncio.sleep(30)

    async def main():
        async with KafkaServer(never) as srv:
            c = KafkaClient(HOST, srv.port)
            await c.connect()
            pending = asyncio.create_task(c.send(DescribeQuorumRequest()))
            await asyncio.sleep(0.1)
            await c.close()
            with pytest.raises(NetworkError):
                await pending
            with pytest.raises(NetworkError):
                await c.send(DescribeQuorumRequest())

    run(main())


def test_server_close_disconnects_clients():
    async def never(header, request, info):
        await asyncio.sleep(30)

    async def main():
        srv = KafkaServer(never)
        await srv.start()
        c = KafkaClient(HOST, srv.port)
        await c.connect()
        pending = asyncio.create_task(c.send(DescribeQuorumRequest()))
        await asyncio.sleep(0.1)
        await srv.close()
        with pytest.raises(NetworkError):
            await pending
        await c.close()

    run(main())


def test_client_drops_a_connection_whose_responses_come_out_of_order():
    from generated.api_versions_response import ApiVersion, ApiVersionsResponse
    from kwire.headers import encode_response, parse_request

    async def fake_peer(reader, writer):
        decoder = FrameDecoder()
        while data := await reader.read(65536):
            for frame in decoder.feed(data):
                req = parse_request(frame, controller_apis())
                if req.api_key == 18:
                    body = ApiVersionsResponse(api_keys=[ApiVersion(18, 0, 4), ApiVersion(55, 0, 2)])
                    writer.write(encode_frame(encode_response(18, req.api_version, req.correlation_id, body)))
                else:  # answer with the wrong correlation id
                    writer.write(
                        encode_frame(
                            encode_response(
                                55, req.api_version, req.correlation_id + 7, DescribeQuorumResponse()
                            )
                        )
                    )

    async def main():
        srv = await asyncio.start_server(fake_peer, HOST, 0)
        async with srv:
            c = KafkaClient(HOST, srv.sockets[0].getsockname()[1])
            await c.connect()
            with pytest.raises(NetworkError, match="correlation id"):
                await c.send(DescribeQuorumRequest())
            assert not c.connected
            await c.close()

    run(main())


def test_request_once():
    from kwire.client import request_once

    async def main():
        async with KafkaServer(echo_handler) as srv:
            resp = await request_once(HOST, srv.port, DescribeQuorumRequest(), timeout=5)
            assert resp.error_message == "cid=1"  # correlation id 0 went to ApiVersions

    run(main())


def test_only_a_later_api_versions_waits_for_the_features_read():
    """Contract 10: the handshake ApiVersions never waits; a later one on the connection is a read."""
    from generated.api_versions_request import ApiVersionsRequest
    from kwire.errors import ErrorCode

    reads: list[int] = []
    verdict = {"code": ErrorCode.REQUEST_TIMED_OUT}

    async def features_read() -> int:
        reads.append(1)
        await asyncio.sleep(0.05)
        return verdict["code"]

    def ask(cid: int) -> bytes:
        req = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        return encode_frame(encode_request(18, 3, cid, "raw", req))

    async def main():
        async with KafkaServer(
            echo_handler,
            finalized_features=lambda: (12, {"metadata.version": (30, 30)}),
            features_read=features_read,
        ) as srv:
            reader, writer = await asyncio.open_connection(HOST, srv.port)
            writer.write(ask(1) + ask(2))
            first, second = await read_frames(reader, 2)
            _, hs = decode_response(first, 18, 3)
            _, later = decode_response(second, 18, 3)
            assert (hs.error_code, [f.name for f in hs.finalized_features], hs.finalized_features_epoch) == (
                0,
                ["metadata.version"],
                12,
            )
            # A failed read carries its error and never the local features; the api keys still negotiate.
            assert later.error_code == ErrorCode.REQUEST_TIMED_OUT and later.finalized_features == []
            assert later.finalized_features_epoch == -1 and later.api_keys
            verdict["code"] = ErrorCode.NONE
            writer.write(ask(3))
            (third,) = await read_frames(reader, 1)
            _, ok = decode_response(third, 18, 3)
            assert ok.error_code == 0 and [f.name for f in ok.finalized_features] == ["metadata.version"]
            writer.close()
        assert len(reads) == 2  # the handshake never asked

    run(main())
