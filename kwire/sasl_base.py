"""What the SASL server and client share (kwire.sasl contracts 2 and 4): Kafka's SASL constants, the errors, the
credential stores (JAAS users, SCRAM credentials) and the RFC 5802 message helpers.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

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


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def scram_attrs(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise SaslAuthenticationError(f"malformed SCRAM message {message[:60]!r}")
        out.setdefault(part[0], part[2:])
    return out


def unescape_user(name: str) -> str:
    if re.search(r"=(?!2C|3D)", name):
        raise SaslAuthenticationError("malformed SCRAM user name")
    return name.replace("=2C", ",").replace("=3D", "=")


def escape_user(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def xor_bytes(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))
