"""TLS listeners and TLS peer connections (kwire.tls), in process on loopback: success and clean failures."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_response import DescribeQuorumResponse
from kraftd.config import ConfigError, config_from_properties
from kwire.client import KafkaClient
from kwire.errors import NetworkError
from kwire.server import KafkaServer
from kwire.tls import TlsConfigError, TlsSettings, client_context, server_context
from tests.security.certs import Pki

pytestmark = pytest.mark.timeout(60)


async def handler(header, request, info):
    return DescribeQuorumResponse(error_code=0, error_message="over tls")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


def server_tls(pki: Pki, cert: Path | None = None, client_auth: str = "none") -> TlsSettings:
    return TlsSettings(
        keystore_location=str(cert or pki.issue("server")),
        truststore_location=str(pki.ca_pem),
        client_auth=client_auth,
    )


async def ask(port: int, ctx, hostname: str | None = None) -> DescribeQuorumResponse:
    async with KafkaClient("127.0.0.1", port, ssl=ctx, server_hostname=hostname, connect_timeout=5) as c:
        return await c.send(DescribeQuorumRequest())


def serve_and(settings: TlsSettings, body):
    async def main():
        async with KafkaServer(handler, ssl=server_context(settings)) as srv:
            return await body(srv)

    return asyncio.run(asyncio.wait_for(main(), 30))


def test_a_client_trusting_the_ca_talks_over_tls(pki: Pki) -> None:
    resp = serve_and(
        server_tls(pki),
        lambda srv: ask(srv.port, client_context(TlsSettings(truststore_location=str(pki.ca_pem)))),
    )
    assert resp.error_message == "over tls"


def test_inline_pem_keystore_and_truststore(pki: Pki) -> None:
    key, chain = Pki.split(pki.issue("inline"))
    settings = TlsSettings(keystore_certificate_chain=chain, keystore_key=key)
    client = client_context(TlsSettings(truststore_certificates=pki.ca_pem.read_text()))
    assert serve_and(settings, lambda srv: ask(srv.port, client)).error_message == "over tls"


def test_encrypted_key_needs_ssl_key_password(pki: Pki) -> None:
    path = pki.issue("locked", password=b"s3cret")
    server_context(TlsSettings(keystore_location=str(path), key_password="s3cret"))
    with pytest.raises(TlsConfigError, match="ssl.keystore"):
        server_context(TlsSettings(keystore_location=str(path), key_password="wrong"))


def failing(settings: TlsSettings, client, caplog, hostname: str | None = None) -> str:
    caplog.set_level(logging.WARNING, logger="kwire.server")

    async def body(srv):
        with pytest.raises(NetworkError) as info:
            await ask(srv.port, client, hostname)
        # the server logged it and still serves a good client
        good = client_context(
            TlsSettings(
                truststore_location=settings.truststore_location,
                keystore_location=settings.keystore_location,
            )
        )
        assert (await ask(srv.port, good)).error_message == "over tls"
        return str(info.value)

    return serve_and(settings, body)


def handshake_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "TLS handshake" in r.getMessage()]


def test_client_with_the_wrong_ca_fails_and_the_server_logs_it(pki: Pki, tmp_path: Path, caplog) -> None:
    other = Pki(tmp_path / "other", "some-other-ca")
    msg = failing(server_tls(pki), client_context(TlsSettings(truststore_location=str(other.ca_pem))), caplog)
    assert "CERTIFICATE_VERIFY_FAILED" in msg
    assert handshake_lines(caplog), "no log line for the failed handshake"


def test_expired_server_certificate_is_refused_by_the_client(pki: Pki, caplog) -> None:
    settings = server_tls(pki, pki.issue("stale-server", expired=True))

    async def body(srv):
        with pytest.raises(NetworkError, match="expired"):
            await ask(srv.port, client_context(TlsSettings(truststore_location=str(pki.ca_pem))))

    serve_and(settings, body)


def test_expired_client_certificate_is_refused_when_client_auth_is_required(pki: Pki, caplog) -> None:
    stale = pki.issue("stale-client", expired=True)
    client = client_context(TlsSettings(truststore_location=str(pki.ca_pem), keystore_location=str(stale)))
    failing(server_tls(pki, client_auth="required"), client, caplog)
    assert any("expired" in line for line in handshake_lines(caplog)), handshake_lines(caplog)


def test_missing_client_certificate_is_refused_when_client_auth_is_required(pki: Pki, caplog) -> None:
    failing(
        server_tls(pki, client_auth="required"),
        client_context(TlsSettings(truststore_location=str(pki.ca_pem))),
        caplog,
    )
    assert handshake_lines(caplog)


def test_hostname_verification_refuses_a_certificate_for_another_host(pki: Pki, caplog) -> None:
    settings = server_tls(pki, pki.issue("elsewhere", hosts=("controller-9.example",)))

    async def body(srv):
        with pytest.raises(NetworkError, match="mismatch|match"):
            await ask(srv.port, client_context(TlsSettings(truststore_location=str(pki.ca_pem))))
        off = client_context(TlsSettings(truststore_location=str(pki.ca_pem), endpoint_identification=""))
        assert (await ask(srv.port, off)).error_message == "over tls"

    serve_and(settings, body)


def test_plaintext_client_on_a_tls_port_fails_cleanly(pki: Pki, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="kwire.server")

    async def body(srv):
        with pytest.raises(NetworkError):
            async with KafkaClient("127.0.0.1", srv.port, connect_timeout=3, request_timeout=3) as c:
                await c.send(DescribeQuorumRequest())

    serve_and(server_tls(pki), body)
    assert any(
        "WRONG_VERSION_NUMBER" in line or "wrong version" in line.lower() for line in handshake_lines(caplog)
    )


BASE = {
    "node.id": "1",
    "process.roles": "controller",
    "controller.listener.names": "CONTROLLER",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "listener.security.protocol.map": "CONTROLLER:SSL",
}


def test_listener_prefixed_ssl_keys_win_over_bare_ones(pki: Pki) -> None:
    props = dict(BASE)
    props["ssl.keystore.location"] = "/nonexistent.pem"
    props["listener.name.controller.ssl.keystore.location"] = str(pki.issue("prefixed"))
    props["listener.name.controller.ssl.client.auth"] = "required"
    cfg = config_from_properties(props)
    assert cfg.security.tls is not None
    assert cfg.security.tls.keystore_location.endswith("prefixed.pem")
    assert cfg.security.tls.client_auth == "required"
    assert cfg.unknown_keys == ()


def test_unusable_keystore_is_a_one_line_config_error(tmp_path: Path) -> None:
    from kraftd.shell.net.wiring import tls_contexts

    bad = tmp_path / "bad.pem"
    bad.write_text("not a pem file")
    cfg = config_from_properties({**BASE, "ssl.keystore.location": str(bad)})
    with pytest.raises(ConfigError, match="ssl.keystore"):
        tls_contexts(cfg)
