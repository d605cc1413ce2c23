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
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from generated.sasl_authenticate_request import SaslAuthenticateRequest
from generated.sasl_authenticate_response import SaslAuthenticateResponse
from generated.sasl_handshake_request import SaslHandshakeRequest
from generated.sasl_handshake_response import SaslHandshakeResponse
from kwire.errors import ErrorCode, KraftError, RemoteProtocolError

SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS = 17, 36, 18
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = ("PLAIN", *SCRAM_HASHES)
SCRAM_ITERATIONS = 4096


class SaslAuthenticationError(KraftError):
    """Authentication failed or the SASL exchange broke (``error_code`` is Kafka's)."""

    error_code = ErrorCode.SASL_AUTHENTICATION_FAILED


class SaslStateError(RemoteProtocolError):
    """A request the connection's SASL state does not admit (the connection closes)."""

    error_code = ErrorCode.ILLEGAL_SASL_STATE


# ------------------------------------------------------------------------------------------------ credentials


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def scram_credential(mechanism: str, password: str, salt: bytes, iterations: int) -> ScramCredential:
    h = SCRAM_HASHES[mechanism]
    salted = hashlib.pbkdf2_hmac(h, password.encode(), salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", h)
    return ScramCredential(
        salt, hashlib.new(h, client_key).digest(), hmac.digest(salted, b"Server Key", h), iterations
    )


class CredentialStore(Protocol):
    def plain_password(self, user: str) -> str | None: ...

    def scram(self, mechanism: str, user: str) -> ScramCredential | None: ...


_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """(login module class, options) of one ``sasl.jaas.config`` entry."""
    head = text.strip().split(None, 2)
    if len(head) < 2:
        raise SaslAuthenticationError(
            f"sasl.jaas.config: {text[:60]!r} is not '<LoginModule> <flag> k=v ...;'"
        )
    options = {
        m.group(1): (m.group(2) if m.group(2) is not None else m.group(3)).replace('\\"', '"')
        for m in _OPTION.finditer(text.split(None, 2)[2] if len(head) == 3 else "")
    }
    return head[0], options


@dataclass
class JaasCredentials:
    """Contract 2: users from ``user_<name>="<password>"`` options of the listener's JAAS entries."""

    users: dict[str, str] = field(default_factory=dict)
    _scram: dict[tuple[str, str], ScramCredential] = field(default_factory=dict)

    @classmethod
    def from_jaas(cls, texts: Mapping[str, str]) -> JaasCredentials:
        users: dict[str, str] = {}
        for text in texts.values():
            for key, value in parse_jaas(text)[1].items():
                if key.startswith("user_"):
                    users[key[5:]] = value
        return cls(users)

    def plain_password(self, user: str) -> str | None:
        return self.users.get(user)

    def scram(self, mechanism: str, user: str) -> ScramCredential | None:
        if user not in self.users or mechanism not in SCRAM_HASHES:
            return None
        key = (mechanism, user)
        if key not in self._scram:
            self._scram[key] = scram_credential(mechanism, self.users[user], os.urandom(16), SCRAM_ITERATIONS)
        return self._scram[key]


# ------------------------------------------------------------------------------------------------ SCRAM helpers


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _attrs(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise SaslAuthenticationError(f"malformed SCRAM message {message[:60]!r}")
        out.setdefault(part[0], part[2:])
    return out


def _unescape_user(name: str) -> str:
    if re.search(r"=(?!2C|3D)", name):
        raise SaslAuthenticationError("malformed SCRAM user name")
    return name.replace("=2C", ",").replace("=3D", "=")


def _escape_user(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


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
            attrs = _attrs(self.client_first_bare)
            if "n" not in attrs or "r" not in attrs:
                raise SaslAuthenticationError("SCRAM client-first message lacks n= or r=")
            self.user = _unescape_user(attrs["n"])
            cred = self.store.scram(self.mechanism, self.user)
            # An unknown user gets a decoy (no PBKDF2 spent on it; its proof can never verify), so the
            # exchange looks the same as for a wrong password.
            size = hashlib.new(self.h).digest_size
            self.cred = cred or ScramCredential(
                self.random_bytes(16), self.random_bytes(size), self.random_bytes(size), SCRAM_ITERATIONS
            )
            self.known = cred is not None
            self.nonce = attrs["r"] + base64.b64encode(self.random_bytes(18)).decode().rstrip("=")
            self.server_first = f"r={self.nonce},s={_b64(self.cred.salt)},i={self.cred.iterations}"
            self.step = 1
            return self.server_first.encode(), False
        if self.step == 1:
            attrs = _attrs(text)
            proof_at = text.rfind(",p=")
            if proof_at < 0 or attrs.get("r") != self.nonce:
                raise SaslAuthenticationError("invalid SCRAM client-final message")
            if attrs.get("c") != _b64(self.gs2.encode()):
                raise SaslAuthenticationError("SCRAM channel binding does not match")
            auth_message = f"{self.client_first_bare},{self.server_first},{text[:proof_at]}".encode()
            signature = hmac.digest(self.cred.stored_key, auth_message, self.h)
            try:
                proof = base64.b64decode(attrs["p"], validate=True)
            except (ValueError, KeyError):
                raise SaslAuthenticationError("invalid SCRAM client proof") from None
            if len(proof) != len(signature):
                raise SaslAuthenticationError(_invalid(self.mechanism))
            client_key = _xor(proof, signature)
            ok = hmac.compare_digest(hashlib.new(self.h, client_key).digest(), self.cred.stored_key)
            if not (ok and self.known):
                raise SaslAuthenticationError(_invalid(self.mechanism))
            self.step = 2
            server_sig = hmac.digest(self.cred.server_key, auth_message, self.h)
            return f"v={_b64(server_sig)}".encode(), True
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


# ------------------------------------------------------------------------------------------------ client side


@dataclass(frozen=True, slots=True)
class SaslClientConfig:
    mechanism: str
    username: str
    password: str

    @classmethod
    def from_jaas(cls, mechanism: str, text: str) -> SaslClientConfig:
        _, options = parse_jaas(text)
        if "username" not in options or "password" not in options:
            raise SaslAuthenticationError("sasl.jaas.config: the client side needs username= and password=")
        return cls(mechanism.upper(), options["username"], options["password"])


Request = Callable[[Any], Awaitable[Any]]


def _check(resp: Any, what: str) -> None:
    if resp.error_code != ErrorCode.NONE:
        code = ErrorCode.from_code(resp.error_code)
        msg = getattr(resp, "error_message", None) or code.message
        raise SaslAuthenticationError(f"{what}: {code.name}: {msg}", code)


async def client_exchange(request: Request, cfg: SaslClientConfig) -> int:
    """Contract 5."""
    if cfg.mechanism not in MECHANISMS:
        raise SaslAuthenticationError(f"SASL mechanism {cfg.mechanism} is not supported by this client")
    _check(await request(SaslHandshakeRequest(cfg.mechanism)), "SaslHandshake")
    if cfg.mechanism == "PLAIN":
        resp = await request(SaslAuthenticateRequest(f"\0{cfg.username}\0{cfg.password}".encode()))
        _check(resp, "SaslAuthenticate")
        return int(getattr(resp, "session_lifetime_ms", 0))
    h = SCRAM_HASHES[cfg.mechanism]
    nonce = base64.b64encode(os.urandom(18)).decode().rstrip("=")
    first_bare = f"n={_escape_user(cfg.username)},r={nonce}"
    resp = await request(SaslAuthenticateRequest(f"n,,{first_bare}".encode()))
    _check(resp, "SaslAuthenticate")
    server_first = bytes(resp.auth_bytes).decode("utf-8", "replace")
    attrs = _attrs(server_first)
    if not attrs.get("r", "").startswith(nonce) or "s" not in attrs or "i" not in attrs:
        raise SaslAuthenticationError("invalid SCRAM server-first message")
    iterations = int(attrs["i"])
    if iterations < SCRAM_ITERATIONS:
        raise SaslAuthenticationError(f"SCRAM iteration count {iterations} is below {SCRAM_ITERATIONS}")
    salted = hashlib.pbkdf2_hmac(h, cfg.password.encode(), base64.b64decode(attrs["s"]), iterations)
    client_key = hmac.digest(salted, b"Client Key", h)
    stored = hashlib.new(h, client_key).digest()
    without_proof = f"c={_b64(b'n,,')},r={attrs['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    proof = _xor(client_key, hmac.digest(stored, auth_message, h))
    resp = await request(SaslAuthenticateRequest(f"{without_proof},p={_b64(proof)}".encode()))
    _check(resp, "SaslAuthenticate")
    expected = hmac.digest(hmac.digest(salted, b"Server Key", h), auth_message, h)
    final = _attrs(bytes(resp.auth_bytes).decode("utf-8", "replace"))
    if final.get("v") != _b64(expected):
        raise SaslAuthenticationError(
            "the server's SCRAM signature is wrong (not the server holding our credential)"
        )
    return int(getattr(resp, "session_lifetime_ms", 0))
