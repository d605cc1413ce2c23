"""The client side of SASL (kwire.sasl contract 5): PLAIN and SCRAM-SHA-256/512 over a request function."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from generated.sasl_authenticate_request import SaslAuthenticateRequest
from generated.sasl_handshake_request import SaslHandshakeRequest
from kwire.errors import ErrorCode
from kwire.sasl_base import (
    MECHANISMS,
    SCRAM_HASHES,
    SCRAM_ITERATIONS,
    SaslAuthenticationError,
    b64,
    escape_user,
    parse_jaas,
    scram_attrs,
    xor_bytes,
)


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
    first_bare = f"n={escape_user(cfg.username)},r={nonce}"
    resp = await request(SaslAuthenticateRequest(f"n,,{first_bare}".encode()))
    _check(resp, "SaslAuthenticate")
    server_first = bytes(resp.auth_bytes).decode("utf-8", "replace")
    attrs = scram_attrs(server_first)
    if not attrs.get("r", "").startswith(nonce) or "s" not in attrs or "i" not in attrs:
        raise SaslAuthenticationError("invalid SCRAM server-first message")
    iterations = int(attrs["i"])
    if iterations < SCRAM_ITERATIONS:
        raise SaslAuthenticationError(f"SCRAM iteration count {iterations} is below {SCRAM_ITERATIONS}")
    salted = hashlib.pbkdf2_hmac(h, cfg.password.encode(), base64.b64decode(attrs["s"]), iterations)
    client_key = hmac.digest(salted, b"Client Key", h)
    stored = hashlib.new(h, client_key).digest()
    without_proof = f"c={b64(b'n,,')},r={attrs['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    proof = xor_bytes(client_key, hmac.digest(stored, auth_message, h))
    resp = await request(SaslAuthenticateRequest(f"{without_proof},p={b64(proof)}".encode()))
    _check(resp, "SaslAuthenticate")
    expected = hmac.digest(hmac.digest(salted, b"Server Key", h), auth_message, h)
    final = scram_attrs(bytes(resp.auth_bytes).decode("utf-8", "replace"))
    if final.get("v") != b64(expected):
        raise SaslAuthenticationError(
            "the server's SCRAM signature is wrong (not the server holding our credential)"
        )
    return int(getattr(resp, "session_lifetime_ms", 0))
