"""AlterUserScramCredentials (51) on the active controller, as a pure function of the image (KIP-554).

The image's SCRAM shape (read by a SCRAM authenticator): ``image.scram`` maps (user name, mechanism) to the
UserScramCredentialRecord, unchanged: ``salt``, ``stored_key``, ``server_key``, ``iterations`` (RFC 5802 values);
mechanism 1 is SCRAM-SHA-256, 2 SCRAM-SHA-512. A RemoveUserScramCredentialRecord drops the pair.

Contracts (Kafka 4.3.1 ScramControlManager):
1. Each user name may appear once in a request (deletions first, then upsertions): a second appearance makes
   that user DUPLICATE_RESOURCE "A user credential cannot be altered twice in the same request" and drops its
   earlier alteration; further appearances are ignored.
2. Below metadata.version 3.5-IV2 every alteration -> UNSUPPORTED_VERSION "The current metadata.version does not
   support SCRAM". An empty name -> UNACCEPTABLE_CREDENTIAL "Username must not be empty"; a mechanism other than 1
   or 2 -> UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism"; deleting an absent credential ->
   RESOURCE_NOT_FOUND "Attempt to delete a user credential that does not exist"; iterations below 4096 ->
   UNACCEPTABLE_CREDENTIAL "Too few iterations", above 16384 -> "Too many iterations".
3. An upsertion carries the salted password; the record stores StoredKey = H(HMAC(salted, "Client Key")) and
   ServerKey = HMAC(salted, "Server Key") with the mechanism's hash (RFC 5802 section 3), never the password.
4. Results: successful deletions, then successful upsertions, then failures (one per user).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Any

from generated.remove_user_scram_credential_record import RemoveUserScramCredentialRecord
from generated.user_scram_credential_record import UserScramCredentialRecord
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode

MECHANISMS: dict[int, tuple[str, Callable[..., Any]]] = {
    1: ("SCRAM-SHA-256", hashlib.sha256),
    2: ("SCRAM-SHA-512", hashlib.sha512),
}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384
MV_SCRAM = 11  # 3.5-IV2
DUPLICATE = "A user credential cannot be altered twice in the same request"

Result = tuple[str, ErrorCode, str | None]


def keys_for(mechanism: int, salted_password: bytes) -> tuple[bytes, bytes]:
    """Contract 3: (StoredKey, ServerKey) for a salted password."""
    digest = MECHANISMS[mechanism][1]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    stored_key = digest(client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return stored_key, server_key


def salted_password(mechanism: int, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802 Hi(): PBKDF2 with the mechanism's HMAC (what a client sends in an upsertion)."""
    name = MECHANISMS[mechanism][0].removeprefix("SCRAM-").replace("-", "").lower()
    return hashlib.pbkdf2_hmac(name, password.encode(), salt, iterations)


def _name_error(name: str, mechanism: int) -> tuple[ErrorCode, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISMS:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def alter_credentials(image: MetadataImage, req: Any) -> tuple[list[Any], list[Result]]:
    """Contracts 1-4: the records to append and one result per user."""
    supported = image.metadata_version >= MV_SCRAM
    deletions: dict[str, Any] = {}
    upsertions: dict[str, Any] = {}
    errors: dict[str, tuple[ErrorCode, str | None]] = {}
    for d in req.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE)
        elif not supported:
            errors[d.name] = (
                ErrorCode.UNSUPPORTED_VERSION,
                "The current metadata.version does not support SCRAM",
            )
        elif (bad := _name_error(d.name, d.mechanism)) is not None:
            errors[d.name] = bad
        elif (d.name, d.mechanism) not in image.scram:
            errors[d.name] = (
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
        else:
            deletions[d.name] = d
    for u in req.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            errors[u.name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE)
        elif not supported:
            errors[u.name] = (
                ErrorCode.UNSUPPORTED_VERSION,
                "The current metadata.version does not support SCRAM",
            )
        elif (bad := _name_error(u.name, u.mechanism)) is not None:
            errors[u.name] = bad
        elif u.iterations < MIN_ITERATIONS:
            errors[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            errors[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        else:
            upsertions[u.name] = u
    records: list[Any] = []
    results: list[Result] = []
    for d in deletions.values():
        records.append(RemoveUserScramCredentialRecord(name=d.name, mechanism=d.mechanism))
        results.append((d.name, ErrorCode.NONE, None))
    for u in upsertions.values():
        stored_key, server_key = keys_for(u.mechanism, bytes(u.salted_password))
        records.append(
            UserScramCredentialRecord(
                name=u.name,
                mechanism=u.mechanism,
                salt=bytes(u.salt),
                stored_key=stored_key,
                server_key=server_key,
                iterations=u.iterations,
            )
        )
        results.append((u.name, ErrorCode.NONE, None))
    results += [(name, code, message) for name, (code, message) in errors.items()]
    return records, results
