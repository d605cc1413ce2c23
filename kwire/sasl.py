"""SASL for Kafka listeners (SaslHandshake 17 v1, SaslAuthenticate 36): PLAIN and SCRAM-SHA-256/512.

Contracts:
1. Server side, per connection (:class:`ServerSession`): before authentication only ApiVersions, SaslHandshake
   and SaslAuthenticate are admitted; any other API is refused by closing the connection (Kafka's
   SaslServerAuthenticator does the same: no response is written). A handshake naming a mechanism that is not
   enabled answers UNSUPPORTED_SASL_MECHANISM (33) with the enabled list; a SaslAuthenticate outside the
   mechanism's exchange answers ILLEGAL_SASL_STATE (34); failed credentials answer SASL_AUTHENTICATION_FAILED
   (58). After any of these answers the connection closes.
2. Credentials come from a :class:`CredentialStore` (a small interface: PLAIN passwords and SCRAM credentials by
   user). :class:`JaasCredentials` reads Kafka's JAAS text (``user_<name>="<password>"`` options); SCRAM
   credentials derived from it use a random salt and 4096 iterations. The metadata image's
   UserScramCredentialRecords plug in as another store.
3. Re-authentication (``connections.max.reauth.ms``, KIP-368): a successful SaslAuthenticate v1+ reports the
   session lifetime; once it has passed, a request other than SaslHandshake/SaslAuthenticate closes the
   connection. A SaslHandshake on an authenticated connection starts re-authentication with the same mechanism.
   Only differences of the caller's ``now_ms`` matter, so callers pass a monotonic clock (a stepped wall clock
   must neither expire a session early nor keep it alive).
4. SCRAM follows RFC 5802 / RFC 7677 (no channel binding: gs2 header ``n,,``); user names use its ``=2C``/``=3D``
   escapes. PLAIN follows RFC 4616 (authzid, if any, must equal the user).
6. SaslHandshake v0 (still served by Kafka 4.x): after a successful v0 handshake the client's next frames are
   raw SASL tokens (a 4-byte size and the token, no request header) and each answer is the raw server token,
   size-prefixed (empty for PLAIN's last step), until the exchange completes; then Kafka requests resume. A
   failed v0 exchange cannot carry an error code, so the connection closes unanswered. A v0 client cannot
   re-authenticate (KIP-368): with ``connections.max.reauth.ms`` its connection closes when the session expires.
5. Client side: :func:`client_exchange` runs the handshake and the exchange over a request function and returns
   the session lifetime in ms (0: none); failures raise :class:`SaslAuthenticationError` carrying Kafka's code.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass

from generated.sasl_authenticate_request import SaslAuthenticateRequest
from generated.sasl_authenticate_response import SaslAuthenticateResponse
from generated.sasl_handshake_request import SaslHandshakeRequest
from generated.sasl_handshake_response import SaslHandshakeResponse
from kwire.errors import ErrorCode
from kwire.sasl_base import (
    API_VERSIONS,
    MECHANISMS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SCRAM_HASHES,
    SCRAM_ITERATIONS,
    CredentialStore,
    JaasCredentials,
    SaslAuthenticationError,
    SaslStateError,
    ScramCredential,
    b64,
    parse_jaas,
    scram_attrs,
    scram_credential,
    unescape_user,
    xor_bytes,
)
from kwire.sasl_client import SaslClientConfig, client_exchange

# The shared pieces live in kwire.sasl_base, the client in kwire.sasl_client; importers keep using them from here.
__all__ = [
    "API_VERSIONS",
    "MECHANISMS",
    "SASL_AUTHENTICATE",
    "SASL_HANDSHAKE",
    "SCRAM_HASHES",
    "SCRAM_ITERATIONS",
    "CredentialStore",
    "JaasCredentials",
    "SaslAuthenticationError",
    "SaslClientConfig",
    "SaslServerConfig",
    "SaslStateError",
    "ScramCredential",
    "ServerSession",
    "client_exchange",
    "parse_jaas",
    "scram_credential",
]


class _ScramServer:
    def __init__(self, mechanism: str, store: CredentialStore, random_bytes: Callable[[int], bytes]) -> None:
        self.mechanism, self.store = mechanism, store
        self.random_bytes = random_bytes
        self.h = SCRAM_HASHES[mechanism]
        self.step = 0
        self.user = ""

    def respond(self, data: bytes) -> tuple[bytes, bool]:
        """(server message, finished)."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("SCRAM message is not UTF-8") from None
        if self.step == 0:
            if not text.startswith(("n,", "y,")):
                raise SaslAuthenticationError("SCRAM channel binding is not supported")
            gs2_end = text.find(",", 2)
            if gs2_end < 0:
                raise SaslAuthenticationError("malformed SCRAM client-first message")
            self.gs2 = text[: gs2_end + 1]
            self.client_first_bare = text[gs2_end + 1 :]
            attrs = scram_attrs(self.client_first_bare)
            if "n" not in attrs or "r" not in attrs:
                raise SaslAuthenticationError("SCRAM client-first message lacks n= or r=")
            self.user = unescape_user(attrs["n"])
            cred = self.store.scram(self.mechanism, self.user)
            # An unknown user gets a decoy (no PBKDF2 spent on it; its proof can never verify), so the
            # exchange looks the same as for a wrong password.
            size = hashlib.new(self.h).digest_size
            self.cred = cred or ScramCredential(
                self.random_bytes(16), self.random_bytes(size), self.random_bytes(size), SCRAM_ITERATIONS
            )
            self.known = cred is not None
            self.nonce = attrs["r"] + base64.b64encode(self.random_bytes(18)).decode().rstrip("=")
            self.server_first = f"r={self.nonce},s={b64(self.cred.salt)},i={self.cred.iterations}"
            self.step = 1
            return self.server_first.encode(), False
        if self.step == 1:
            attrs = scram_attrs(text)
            proof_at = text.rfind(",p=")
            if proof_at < 0 or attrs.get("r") != self.nonce:
                raise SaslAuthenticationError("invalid SCRAM client-final message")
            if attrs.get("c") != b64(self.gs2.encode()):
                raise SaslAuthenticationError("SCRAM channel binding does not match")
            auth_message = f"{self.client_first_bare},{self.server_first},{text[:proof_at]}".encode()
            signature = hmac.digest(self.cred.stored_key, auth_message, self.h)
            try:
                proof = base64.b64decode(attrs["p"], validate=True)
            except (ValueError, KeyError):
                raise SaslAuthenticationError("invalid SCRAM client proof") from None
            if len(proof) != len(signature):
                raise SaslAuthenticationError(_invalid(self.mechanism))
            client_key = xor_bytes(proof, signature)
            ok = hmac.compare_digest(hashlib.new(self.h, client_key).digest(), self.cred.stored_key)
            if not (ok and self.known):
                raise SaslAuthenticationError(_invalid(self.mechanism))
            self.step = 2
            server_sig = hmac.digest(self.cred.server_key, auth_message, self.h)
            return f"v={b64(server_sig)}".encode(), True
        raise SaslStateError("SCRAM exchange already complete")


def _invalid(mechanism: str) -> str:
    return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"


class _PlainServer:
    def __init__(self, store: CredentialStore) -> None:
        self.store = store
        self.user = ""

    def respond(self, data: bytes) -> tuple[bytes, bool]:
        parts = data.split(b"\0")
        if len(parts) != 3:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: expected 3 tokens")
        try:
            authz, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
        if not user:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        expected = self.store.plain_password(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authz and authz != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id different from the user"
            )
        self.user = user
        return b"", True


# ------------------------------------------------------------------------------------------------ server session


@dataclass(frozen=True, slots=True)
class SaslServerConfig:
    mechanisms: tuple[str, ...]
    credentials: CredentialStore
    reauth_ms: int = 0
    random_bytes: Callable[[int], bytes] = os.urandom  # nonces and decoy salts (fixed only in tests/fuzzing)


class ServerSession:
    """Contracts 1 and 3 for one connection; ``now_ms`` comes from the caller."""

    def __init__(self, config: SaslServerConfig) -> None:
        self.config = config
        self.mechanism: str | None = None
        self.principal: str | None = None
        self.expires_ms: int | None = None
        self.close_after_response = False
        self.raw_tokens = False  # contract 6: the next frame is a raw SASL token, not a request
        self._exchange: _PlainServer | _ScramServer | None = None

    @property
    def authenticated(self) -> bool:
        return self.principal is not None

    def admit(self, api_key: int, now_ms: int) -> None:
        """Raise SaslStateError when this request must close the connection unanswered."""
        if api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
            return
        if not self.authenticated:
            if api_key == API_VERSIONS and self._exchange is None:
                return
            raise SaslStateError(f"api key {api_key} before SASL authentication completed")
        if self.expires_ms is not None and now_ms >= self.expires_ms:
            raise SaslStateError(f"SASL session of {self.principal!r} expired; re-authentication required")

    def handshake(self, req: SaslHandshakeRequest, version: int = 1) -> SaslHandshakeResponse:
        mech = req.mechanism
        enabled = list(self.config.mechanisms)
        if mech not in enabled or mech not in MECHANISMS:
            self.close_after_response = True
            return SaslHandshakeResponse(ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled)
        if self.authenticated and mech != self.mechanism:
            self.close_after_response = True
            return SaslHandshakeResponse(ErrorCode.ILLEGAL_SASL_STATE, enabled)
        self.mechanism = mech
        creds = self.config.credentials
        self._exchange = (
            _PlainServer(creds) if mech == "PLAIN" else _ScramServer(mech, creds, self.config.random_bytes)
        )
        self.raw_tokens = version == 0
        return SaslHandshakeResponse(ErrorCode.NONE, enabled)

    def raw_token(self, token: bytes, now_ms: int) -> bytes:
        """Contract 6: one raw client token in, the raw server token out. Raises SaslAuthenticationError (wrong
        credentials, a broken exchange) or SaslStateError; either way the connection closes unanswered."""
        if self._exchange is None or not self.raw_tokens:
            raise SaslStateError("a raw SASL token outside a SaslHandshake v0 exchange")
        out, done = self._exchange.respond(token)
        if done:
            user = self._exchange.user
            if self.principal is not None and user != self.principal:
                raise SaslAuthenticationError("re-authentication must keep the same principal")
            self.principal = user
            self._exchange = None
            self.raw_tokens = False
            reauth = self.config.reauth_ms
            self.expires_ms = now_ms + reauth if reauth > 0 else None
        return out

    def authenticate(
        self, req: SaslAuthenticateRequest, version: int, now_ms: int
    ) -> SaslAuthenticateResponse:
        if self._exchange is None:
            self.close_after_response = True
            return SaslAuthenticateResponse(
                ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate before SaslHandshake", b""
            )
        try:
            out, done = self._exchange.respond(bytes(req.auth_bytes))
        except SaslAuthenticationError as exc:
            self.close_after_response = True
            self._exchange = None
            return SaslAuthenticateResponse(exc.error_code, str(exc), b"")
        if not done:
            return SaslAuthenticateResponse(ErrorCode.NONE, None, out)
        user = self._exchange.user
        if self.principal is not None and user != self.principal:
            self.close_after_response = True
            return SaslAuthenticateResponse(
                ErrorCode.SASL_AUTHENTICATION_FAILED, "re-authentication must keep the same principal", b""
            )
        self.principal = user
        self._exchange = None
        lifetime = self.config.reauth_ms if version >= 1 else 0
        self.expires_ms = now_ms + lifetime if lifetime > 0 else None
        return SaslAuthenticateResponse(ErrorCode.NONE, None, out, session_lifetime_ms=lifetime)
