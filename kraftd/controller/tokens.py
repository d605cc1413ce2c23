"""Delegation tokens (KIP-48, KIP-900): CreateDelegationToken (38), RenewDelegationToken (39),
ExpireDelegationToken (40) and the expiry sweep on the active controller, as pure functions of the image.

The image's token shape: ``image.delegation_tokens`` maps a token id to its DelegationTokenRecord, unchanged
(``owner`` / ``requester`` / ``renewers`` as "Type:name" strings, timestamps in ms). A token's HMAC is never stored:
it is HMAC-SHA512 of the token id (UTF-8) keyed with ``delegation.token.secret.key`` (UTF-8), which every broker
and controller of the cluster share; the SCRAM password of a token is that HMAC in base64.

Contracts (Kafka 4.3.1 DelegationTokenControlManager):
1. Without a secret key every call -> DELEGATION_TOKEN_AUTH_DISABLED; below metadata.version 3.6-IV2 ->
   UNSUPPORTED_VERSION. Times come from the caller's ``now_ms``; ids from the injected random source.
2. Create: the owner is the request's owner when it names one, else the requester (the principal the broker
   forwarded); a renewer whose type is not "User" -> INVALID_PRINCIPAL_TYPE. max = now + min(max lifetime,
   requested lifetime when > 0); expiry = min(max, now + expiry time); the token id is a Kafka Uuid string
   (URL-safe base64 of 16 random bytes, never starting with '-'). One DelegationTokenRecord.
3. Renew / expire find the token by HMAC (DELEGATION_TOKEN_NOT_FOUND); only the owner or a renewer may act
   (DELEGATION_TOKEN_OWNER_MISMATCH). Renew: an expired token -> DELEGATION_TOKEN_EXPIRED; else expiry =
   min(max, now + min(expiry time, requested period when > 0)), rewritten as a DelegationTokenRecord. Expire: a
   negative period removes the token at once (RemoveDelegationTokenRecord, expiry = now); an expired token ->
   DELEGATION_TOKEN_EXPIRED; else expiry = min(max, now + period).
4. The sweep removes every token whose max or expiry timestamp is in the past.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import random
import uuid
from dataclasses import dataclass
from typing import Any

from generated.delegation_token_record import DelegationTokenRecord
from generated.remove_delegation_token_record import RemoveDelegationTokenRecord
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode

MV_DELEGATION_TOKENS = 14  # 3.6-IV2
LONG_MAX = 2**63 - 1
USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class TokenSettings:
    """``delegation.token.secret.key``, ``delegation.token.max.lifetime.ms``, ``delegation.token.expiry.time.ms``,
    ``delegation.token.expiry.check.interval.ms`` (Kafka's defaults: 7 days, 1 day, 1 hour)."""

    secret_key: str | None = None
    max_lifetime_ms: int = 7 * 24 * 3600 * 1000
    expiry_time_ms: int = 24 * 3600 * 1000
    expiry_check_interval_ms: int = 3600 * 1000


@dataclass(frozen=True, slots=True)
class Outcome:
    error: ErrorCode
    records: list[Any]
    record: Any = None  # the token's DelegationTokenRecord after the call (create / renew / expire)
    hmac: bytes = b""
    expiry_ms: int = 0


def token_hmac(secret_key: str, token_id: str) -> bytes:
    return hmac.new(secret_key.encode(), token_id.encode(), hashlib.sha512).digest()


def kafka_uuid_string(rng: random.Random) -> str:
    """A random Kafka Uuid in its string form (contract 2)."""
    while True:
        raw = uuid.UUID(int=rng.getrandbits(128), version=4).bytes
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _add(now: int, duration: int) -> int:
    return LONG_MAX if now > LONG_MAX - duration else now + duration


def _gate(image: MetadataImage, settings: TokenSettings) -> ErrorCode:
    if settings.secret_key is None:
        return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    if image.metadata_version < MV_DELEGATION_TOKENS:
        return ErrorCode.UNSUPPORTED_VERSION
    return ErrorCode.NONE


def create(
    image: MetadataImage,
    settings: TokenSettings,
    req: Any,
    requester: str,
    now_ms: int,
    rng: random.Random,
) -> tuple[Outcome, str]:
    """Contract 2; also returns the owner ("Type:name") the answer names."""
    owner = requester
    if req.owner_principal_name:
        owner = f"{req.owner_principal_type}:{req.owner_principal_name}"
    gate = _gate(image, settings)
    if gate:
        return Outcome(gate, []), owner
    assert settings.secret_key is not None
    lifetime = settings.max_lifetime_ms
    if req.max_lifetime_ms > 0:
        lifetime = min(lifetime, req.max_lifetime_ms)
    max_ts = _add(now_ms, lifetime)
    expiry = min(max_ts, _add(now_ms, settings.expiry_time_ms))
    renewers = []
    for r in req.renewers:
        if r.principal_type != USER_TYPE:
            return Outcome(ErrorCode.INVALID_PRINCIPAL_TYPE, []), owner
        renewers.append(f"{r.principal_type}:{r.principal_name}")
    token_id = kafka_uuid_string(rng)
    while token_id in image.delegation_tokens:
        token_id = kafka_uuid_string(rng)
    record = DelegationTokenRecord(
        owner=owner,
        requester=requester,
        renewers=renewers,
        issue_timestamp=now_ms,
        max_timestamp=max_ts,
        expiration_timestamp=expiry,
        token_id=token_id,
    )
    return Outcome(ErrorCode.NONE, [record], record, token_hmac(settings.secret_key, token_id), expiry), owner


def _find(image: MetadataImage, settings: TokenSettings, mac: bytes) -> Any:
    assert settings.secret_key is not None
    for token in image.delegation_tokens.values():
        if hmac.compare_digest(token_hmac(settings.secret_key, token.token_id), bytes(mac)):
            return token
    return None


def _may_act(token: Any, principal: str) -> bool:
    return bool(token.owner == principal or principal in token.renewers)


def _copy(token: Any, expiry: int) -> DelegationTokenRecord:
    return DelegationTokenRecord(
        owner=token.owner,
        requester=token.requester,
        renewers=list(token.renewers),
        issue_timestamp=token.issue_timestamp,
        max_timestamp=token.max_timestamp,
        expiration_timestamp=expiry,
        token_id=token.token_id,
    )


def _lookup(image: MetadataImage, settings: TokenSettings, mac: bytes) -> tuple[Any, ErrorCode]:
    """The token an HMAC names, or None with the error renew and expire both answer first."""
    gate = _gate(image, settings)
    if gate:
        return None, gate
    token = _find(image, settings, mac)
    return token, (ErrorCode.NONE if token is not None else ErrorCode.DELEGATION_TOKEN_NOT_FOUND)


def _expired(token: Any, now_ms: int) -> bool:
    return bool(token.max_timestamp < now_ms or token.expiration_timestamp < now_ms)


def renew(
    image: MetadataImage, settings: TokenSettings, mac: bytes, period_ms: int, principal: str, now_ms: int
) -> Outcome:
    """Contract 3 (renew)."""
    token, error = _lookup(image, settings, mac)
    if token is None:
        return Outcome(error, [])
    if _expired(token, now_ms):
        return Outcome(ErrorCode.DELEGATION_TOKEN_EXPIRED, [])
    if not _may_act(token, principal):
        return Outcome(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, [])
    period = settings.expiry_time_ms if period_ms <= 0 else min(settings.expiry_time_ms, period_ms)
    expiry = min(token.max_timestamp, now_ms + period)
    record = _copy(token, expiry)
    return Outcome(ErrorCode.NONE, [record], record, expiry_ms=expiry)


def expire(
    image: MetadataImage, settings: TokenSettings, mac: bytes, period_ms: int, principal: str, now_ms: int
) -> Outcome:
    """Contract 3 (expire)."""
    token, error = _lookup(image, settings, mac)
    if token is None:
        return Outcome(error, [])
    if not _may_act(token, principal):
        return Outcome(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, [])
    if period_ms < 0:
        return Outcome(
            ErrorCode.NONE, [RemoveDelegationTokenRecord(token_id=token.token_id)], expiry_ms=now_ms
        )
    if _expired(token, now_ms):
        return Outcome(ErrorCode.DELEGATION_TOKEN_EXPIRED, [])
    expiry = min(token.max_timestamp, _add(now_ms, period_ms))
    record = _copy(token, expiry)
    return Outcome(ErrorCode.NONE, [record], record, expiry_ms=expiry)


def sweep(image: MetadataImage, now_ms: int) -> list[Any]:
    """Contract 4."""
    return [
        RemoveDelegationTokenRecord(token_id=t.token_id)
        for t in image.delegation_tokens.values()
        if _expired(t, now_ms)
    ]
