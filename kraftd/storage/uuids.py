"""Kafka's textual Uuid: 16 bytes as base64url without padding (22 characters).

Contracts:
1. ``uuid_to_str(uuid_from_str(s)) == s`` for every valid string; invalid text raises ``ValueError``.
2. :func:`random_uuid` never returns the reserved ZERO or ONE uuids and never one whose text starts with ``-``
   (Kafka rejects those as command-line-hostile).
"""

from __future__ import annotations

import base64
import binascii
import uuid

ZERO_UUID = uuid.UUID(int=0)
ONE_UUID = uuid.UUID(int=1)


def uuid_to_str(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def uuid_from_str(text: str) -> uuid.UUID:
    if len(text) != 22:
        raise ValueError(f"{text!r} is not a Kafka uuid (expected 22 base64url characters)")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError):
        raise ValueError(f"{text!r} is not a Kafka uuid (invalid base64url)") from None
    if len(raw) != 16 or uuid_to_str(uuid.UUID(bytes=raw)) != text:
        raise ValueError(f"{text!r} is not a Kafka uuid (non-canonical encoding)")
    return uuid.UUID(bytes=raw)


def random_uuid() -> uuid.UUID:
    for _ in range(1000):
        u = uuid.uuid4()
        if u not in (ZERO_UUID, ONE_UUID) and not uuid_to_str(u).startswith("-"):
            return u
    raise RuntimeError("random uuid generation kept producing reserved values")
