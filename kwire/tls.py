"""TLS for Kafka listeners and peer connections, configured as Kafka's ``ssl.*`` keys with PEM stores.

Contracts:
1. :class:`TlsSettings` holds what Kafka's ``ssl.keystore.type=PEM`` / ``ssl.truststore.type=PEM`` configuration
   holds: the certificate chain and private key either inline (``ssl.keystore.certificate.chain`` /
   ``ssl.keystore.key``) or in one PEM file (``ssl.keystore.location``, key and chain together), an optional
   ``ssl.key.password`` for an encrypted key, trusted certificates inline (``ssl.truststore.certificates``) or in
   a PEM file (``ssl.truststore.location``), ``ssl.client.auth`` (``none``/``requested``/``required``) and
   ``ssl.endpoint.identification.algorithm`` (``https``, the default, checks the peer's host name or IP against
   its certificate; empty turns the check off).
2. :func:`server_context` and :func:`client_context` build ``ssl.SSLContext`` objects (TLS 1.2 or newer). Inline
   PEM key material is handed to OpenSSL through a private temporary file (mode 0600) that is deleted before the
   call returns. Unusable material raises :class:`TlsConfigError` naming the key, never a bare ssl.SSLError.
3. A client context always verifies the server's chain against the truststore (an empty truststore means the
   system's default CAs); a server context asks for a client certificate only when ``ssl.client.auth`` says so.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass

from kwire.errors import KraftError

CLIENT_AUTH = ("none", "requested", "required")


class TlsConfigError(KraftError):
    """The ``ssl.*`` settings cannot produce a working TLS context."""


@dataclass(frozen=True, slots=True)
class TlsSettings:
    keystore_location: str | None = None
    keystore_certificate_chain: str | None = None
    keystore_key: str | None = None
    key_password: str | None = None
    truststore_location: str | None = None
    truststore_certificates: str | None = None
    client_auth: str = "none"
    endpoint_identification: str = "https"

    @property
    def has_keystore(self) -> bool:
        return bool(self.keystore_location or self.keystore_certificate_chain)


def _load_keystore(ctx: ssl.SSLContext, s: TlsSettings) -> None:
    password = s.key_password or None
    try:
        if s.keystore_location:
            ctx.load_cert_chain(s.keystore_location, password=password)
            return
        if not (s.keystore_certificate_chain and s.keystore_key):
            raise TlsConfigError(
                "ssl.keystore.certificate.chain and ssl.keystore.key: both are required for a PEM keystore "
                "given inline (or set ssl.keystore.location to a PEM file holding key and chain)"
            )
        fd, path = tempfile.mkstemp(prefix="kraftd-key-", suffix=".pem")
        try:
            with os.fdopen(fd, "w") as f:  # mkstemp creates it 0600
                f.write(s.keystore_key.strip() + "\n" + s.keystore_certificate_chain.strip() + "\n")
            ctx.load_cert_chain(path, password=password)
        finally:
            os.unlink(path)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise TlsConfigError(f"ssl.keystore: cannot load the certificate chain and key: {exc}") from None


def _load_truststore(ctx: ssl.SSLContext, s: TlsSettings, *, default_cas: bool) -> None:
    try:
        if s.truststore_location:
            ctx.load_verify_locations(cafile=s.truststore_location)
        if s.truststore_certificates:
            ctx.load_verify_locations(cadata=s.truststore_certificates)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise TlsConfigError(f"ssl.truststore: cannot load the trusted certificates: {exc}") from None
    if default_cas and not (s.truststore_location or s.truststore_certificates):
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)


def server_context(s: TlsSettings) -> ssl.SSLContext:
    """Contract 2 (server side)."""
    if s.client_auth not in CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth: {s.client_auth!r}; expected one of {', '.join(CLIENT_AUTH)}")
    if not s.has_keystore:
        raise TlsConfigError(
            "ssl.keystore.location or ssl.keystore.certificate.chain: an SSL listener needs a keystore"
        )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_keystore(ctx, s)
    if s.client_auth != "none":
        _load_truststore(ctx, s, default_cas=False)
        ctx.verify_mode = ssl.CERT_REQUIRED if s.client_auth == "required" else ssl.CERT_OPTIONAL
    return ctx


def client_context(s: TlsSettings) -> ssl.SSLContext:
    """Contract 2 (client side) and contract 3."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = s.endpoint_identification.lower() == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED
    _load_truststore(ctx, s, default_cas=True)
    if s.has_keystore:
        _load_keystore(ctx, s)
    return ctx
