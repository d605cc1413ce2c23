"""SASL (PLAIN, SCRAM-SHA-256/512) on a Kafka listener, in process on loopback: kwire.sasl's contracts."""

from __future__ import annotations

import asyncio
import logging

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_response import DescribeQuorumResponse
from generated.sasl_handshake_request import SaslHandshakeRequest
from generated.sasl_handshake_response import SaslHandshakeResponse
from kraftd.config import ConfigError, config_from_properties
from kraftd.security import sasl_settings
from kwire.client import KafkaClient
from kwire.errors import ErrorCode
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import decode_response, encode_request
from kwire.sasl import (
    JaasCredentials,
    SaslAuthenticationError,
    SaslClientConfig,
    SaslServerConfig,
    parse_jaas,
)
from kwire.server import KafkaServer

pytestmark = pytest.mark.timeout(60)
JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
    'password="admin-secret" user_admin="admin-secret" user_alice="al\\"ice";'
)
ALL = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


async def handler(header, request, info):
    return DescribeQuorumResponse(error_code=0, error_message="authenticated")


def server_cfg(reauth_ms: int = 0) -> SaslServerConfig:
    return SaslServerConfig(ALL, JaasCredentials.from_jaas({"PLAIN": JAAS}), reauth_ms)


def with_server(body, reauth_ms: int = 0):
    async def main():
        async with KafkaServer(handler, sasl=server_cfg(reauth_ms)) as srv:
            return await body(srv)

    return asyncio.run(asyncio.wait_for(main(), 40))


async def ask(port: int, sasl: SaslClientConfig | None) -> DescribeQuorumResponse:
    async with KafkaClient("127.0.0.1", port, sasl=sasl, connect_timeout=5, request_timeout=5) as c:
        return await c.send(DescribeQuorumRequest())


def test_jaas_parsing_reads_quoted_and_escaped_options() -> None:
    module, options = parse_jaas(JAAS)
    assert module.endswith("PlainLoginModule")
    assert options["username"] == "admin" and options["user_alice"] == 'al"ice'


@pytest.mark.parametrize("mechanism", ALL)
def test_each_mechanism_authenticates_with_the_right_password(mechanism: str) -> None:
    cfg = SaslClientConfig(mechanism, "alice", 'al"ice')
    assert with_server(lambda srv: ask(srv.port, cfg)).error_message == "authenticated"


@pytest.mark.parametrize("mechanism", ALL)
def test_wrong_password_fails_with_sasl_authentication_failed(mechanism: str, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="kwire.server")

    async def body(srv):
        with pytest.raises(SaslAuthenticationError) as info:
            await ask(srv.port, SaslClientConfig(mechanism, "alice", "wrong"))
        assert info.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        # an unknown user looks exactly the same
        with pytest.raises(SaslAuthenticationError):
            await ask(srv.port, SaslClientConfig(mechanism, "mallory", "x"))
        return await ask(srv.port, SaslClientConfig(mechanism, "admin", "admin-secret"))

    assert with_server(body).error_message == "authenticated"
    lines = [r.getMessage() for r in caplog.records if "SASL authentication" in r.getMessage()]
    assert len(lines) == 2 and all("SASL_AUTHENTICATION_FAILED" in line for line in lines)


async def raw(port: int, frames: list[bytes]) -> tuple[list[bytes], bool]:
    """Send frames; return the response payloads and whether the server closed the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"".join(encode_frame(f) for f in frames))
    dec, out = FrameDecoder(), []
    try:
        while True:
            data = await asyncio.wait_for(reader.read(65536), 3)
            if not data:
                return out, True
            out += dec.feed(data)
    except TimeoutError:
        return out, False
    finally:
        writer.close()


def test_requests_before_authentication_are_refused_by_closing_unanswered(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="kwire.server")
    frames, closed = with_server(
        lambda srv: raw(srv.port, [encode_request(55, 2, 1, "x", DescribeQuorumRequest())])
    )
    assert frames == [] and closed
    assert any("before SASL authentication" in r.getMessage() for r in caplog.records)


def test_unknown_mechanism_answers_unsupported_sasl_mechanism_then_closes() -> None:
    req = encode_request(17, 1, 5, "x", SaslHandshakeRequest("GSSAPI"))
    frames, closed = with_server(lambda srv: raw(srv.port, [req]))
    assert closed and len(frames) == 1
    cid, resp = decode_response(frames[0], 17, 1)
    assert cid == 5 and isinstance(resp, SaslHandshakeResponse)
    assert resp.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert resp.mechanisms == list(ALL)


def test_sasl_apis_are_not_served_on_a_plain_listener() -> None:
    async def main():
        async with KafkaServer(handler) as srv:
            assert 17 not in srv.served and 36 not in srv.served
            return await raw(srv.port, [encode_request(17, 1, 5, "x", SaslHandshakeRequest("PLAIN"))])

    frames, closed = asyncio.run(main())
    assert frames == [] and closed


def test_client_reauthenticates_in_band_before_the_session_expires() -> None:
    async def body(srv):
        cfg = SaslClientConfig("SCRAM-SHA-256", "admin", "admin-secret")
        async with KafkaClient("127.0.0.1", srv.port, sasl=cfg) as c:
            for _ in range(6):  # 6 x 150 ms: three lifetimes of 300 ms
                assert (await c.send(DescribeQuorumRequest())).error_message == "authenticated"
                await asyncio.sleep(0.15)
        return True

    assert with_server(body, reauth_ms=300)


def test_an_expired_session_is_closed_on_its_next_request() -> None:
    async def body(srv):
        cfg = SaslClientConfig("PLAIN", "admin", "admin-secret")
        async with KafkaClient("127.0.0.1", srv.port, sasl=cfg) as c:
            await c.send(DescribeQuorumRequest())
            c._reauth_at = None  # behave like a client that never re-authenticates
            await asyncio.sleep(0.4)
            with pytest.raises(Exception):  # noqa: B017 - the server closed: NetworkError
                await c.send(DescribeQuorumRequest(), timeout=3)
        return True

    assert with_server(body, reauth_ms=200)


BASE = {
    "node.id": "1",
    "process.roles": "controller",
    "controller.listener.names": "CONTROLLER",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT",
}


def test_server_properties_wire_sasl_both_ways() -> None:
    props = {
        **BASE,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": JAAS,
        "connections.max.reauth.ms": "60000",
    }
    cfg = config_from_properties(props)
    assert cfg.unknown_keys == ()
    server, client = sasl_settings(cfg.security, ConfigError)
    assert (
        server is not None and server.mechanisms == ("PLAIN", "SCRAM-SHA-512") and server.reauth_ms == 60000
    )
    assert client == SaslClientConfig("PLAIN", "admin", "admin-secret")
    with pytest.raises(ConfigError, match="sasl.enabled.mechanisms"):
        sasl_settings(
            config_from_properties({**props, "sasl.enabled.mechanisms": "GSSAPI"}).security, ConfigError
        )


async def v0_exchange(port: int, mechanism: str, user: str, password: str) -> tuple[list[bytes], bool]:
    """A SaslHandshake v0 client: kafka-python's own PLAIN/SCRAM mechanisms (an independent implementation)
    driven over raw size-prefixed tokens, then one DescribeQuorum. Returns the frames read after the handshake
    and whether the server closed the connection."""
    from kafka.net.sasl import get_sasl_mechanism

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    dec, pending = FrameDecoder(), []

    async def next_frame() -> bytes | None:
        while not pending:
            try:
                data = await asyncio.wait_for(reader.read(65536), 3)
            except TimeoutError:
                return None
            if not data:
                return None
            pending.extend(dec.feed(data))
        return pending.pop(0)

    try:
        writer.write(encode_frame(encode_request(17, 0, 1, "v0", SaslHandshakeRequest(mechanism))))
        first = await next_frame()
        assert first is not None
        _, hs = decode_response(first, 17, 0)
        assert hs.error_code == ErrorCode.NONE, hs
        mech = get_sasl_mechanism(mechanism)(
            host="127.0.0.1", sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password
        )
        frames: list[bytes] = []
        while not mech.is_done():
            writer.write(encode_frame(mech.auth_bytes()))
            answer = await next_frame()
            if answer is None:
                return frames, True
            frames.append(answer)
            mech.receive(answer)
        assert mech.is_authenticated(), frames
        writer.write(encode_frame(encode_request(55, 2, 2, "v0", DescribeQuorumRequest())))
        resp = await next_frame()
        return [*frames, resp] if resp is not None else frames, resp is None
    finally:
        writer.close()


@pytest.mark.parametrize("mechanism", ALL)
def test_sasl_handshake_v0_exchanges_raw_tokens_then_serves_requests(mechanism: str) -> None:
    frames, closed = with_server(lambda srv: v0_exchange(srv.port, mechanism, "alice", 'al"ice'))
    assert not closed
    if mechanism == "PLAIN":
        assert frames[0] == b""  # the server's empty final token, size-prefixed
    _, resp = decode_response(frames[-1], 55, 2)
    assert isinstance(resp, DescribeQuorumResponse) and resp.error_message == "authenticated"


@pytest.mark.parametrize("mechanism", ALL)
def test_sasl_handshake_v0_wrong_password_closes_unanswered(mechanism: str, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="kwire.server")
    frames, closed = with_server(lambda srv: v0_exchange(srv.port, mechanism, "alice", "wrong"))
    assert closed
    assert all(not f.startswith(b"v=") for f in frames)  # never a SCRAM server signature
    assert any("SaslHandshake v0" in r.getMessage() for r in caplog.records)


def test_sasl_handshake_v0_is_advertised() -> None:
    async def body(srv):
        return srv.served[17]

    assert with_server(body) == (0, 1)


def test_a_handler_sees_the_principal_of_the_request_it_serves() -> None:
    """kwire.server contract 9: the SASL user while serving its request, ANONYMOUS on a plain listener."""
    from kwire.server import request_principal

    async def who(header, request, info):
        return DescribeQuorumResponse(error_code=0, error_message=request_principal())

    async def main():
        async with KafkaServer(who, sasl=server_cfg()) as srv:
            alice = await ask(srv.port, SaslClientConfig("SCRAM-SHA-256", "alice", 'al"ice'))
            admin = await ask(srv.port, SaslClientConfig("PLAIN", "admin", "admin-secret"))
        async with KafkaServer(who) as plain:
            anon = await ask(plain.port, None)
        return alice.error_message, admin.error_message, anon.error_message

    assert asyncio.run(asyncio.wait_for(main(), 40)) == ("User:alice", "User:admin", "User:ANONYMOUS")


def test_set_up_api_versions_around_sasl_never_wait_for_the_features_read() -> None:
    """kwire.server contract 10 with SASL: Kafka's client sends ApiVersions before authenticating and again once
    authenticated (and retries an unsupported version); all three are set-up, only a later one is a read. A Kafka
    controller joining over SASL would otherwise be refused while the quorum has no leader (CI, session 6)."""
    from generated.api_versions_request import ApiVersionsRequest
    from generated.sasl_authenticate_request import SaslAuthenticateRequest

    reads: list[int] = []

    async def features_read() -> int:
        reads.append(1)
        return int(ErrorCode.NOT_CONTROLLER)

    def versions(cid: int, unsupported: bool = False) -> bytes:
        req = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        frame = encode_frame(encode_request(18, 3, cid, "raw", req))
        return frame[:6] + (99).to_bytes(2, "big") + frame[8:] if unsupported else frame

    async def main() -> list[tuple[int, int]]:
        async with KafkaServer(
            handler,
            sasl=server_cfg(),
            finalized_features=lambda: (7, {"metadata.version": (30, 30)}),
            features_read=features_read,
        ) as srv:
            reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
            dec = FrameDecoder()
            pending: list[bytes] = []

            async def exchange(frame: bytes) -> bytes:
                writer.write(frame)
                while not pending:
                    data = await asyncio.wait_for(reader.read(65536), 5)
                    assert data, "server closed the connection"
                    pending.extend(dec.feed(data))
                return pending.pop(0)

            out: list[tuple[int, int]] = []
            _, v0 = decode_response(await exchange(versions(1, unsupported=True)), 18, 0)
            assert v0.error_code == ErrorCode.UNSUPPORTED_VERSION
            token = SaslAuthenticateRequest(b"\0admin\0admin-secret")
            for cid, key, version, frame in (
                (2, 18, 3, versions(2)),
                (3, 17, 1, encode_frame(encode_request(17, 1, 3, "raw", SaslHandshakeRequest("PLAIN")))),
                (4, 36, 2, encode_frame(encode_request(36, 2, 4, "raw", token))),
                (5, 18, 3, versions(5)),
                (6, 18, 3, versions(6)),
            ):
                _, body = decode_response(await exchange(frame), key, version)
                out.append((cid, body.error_code))
            writer.close()
            return out

    answers = asyncio.run(asyncio.wait_for(main(), 30))
    assert answers == [(2, 0), (3, 0), (4, 0), (5, 0), (6, int(ErrorCode.NOT_CONTROLLER))]
    assert len(reads) == 1  # only the ApiVersions after the authenticated handshake was a read
