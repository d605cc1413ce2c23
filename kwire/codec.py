"""Runtime primitives shared by every module in ``generated/``.

Contracts:
1. This module imports nothing from the project except :mod:`kwire.errors` (generated code depends on it).
2. Unsigned varints are Kafka's protocol varints (7 bits per byte, little-endian groups, high bit = more),
   at most 5 bytes and 32 bits, as in ByteUtils.readUnsignedVarint; anything longer is a
   :class:`~kwire.errors.MessageDecodeError`. Record-level zigzag varints live in ``kwire.records``, not here.
3. Tagged-field sections are written as: count, then (tag, size, payload) in ascending tag order.
4. The exception tuples below list everything a generated reader/writer can raise on bad input; the
   generated top-level methods translate them into :class:`~kwire.errors.MessageDecodeError`/:class:`MessageEncodeError`.
"""

from __future__ import annotations

import builtins
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID, SafeUUID

from kwire import errors

__all__ = [
    "COMPACT_STRINGS",
    "LEGACY_STRINGS",
    "ONE_BYTE",
    "ArrayPackers",
    "ArrayUnpackers",
    "DECODE_ERRORS",
    "ENCODE_ERRORS",
    "FieldInfo",
    "UUID_CACHE",
    "ZERO_UUID",
    "compact_string",
    "small_packers",
    "legacy_string",
    "read_uvarint",
    "uuid_from_bytes",
    "uvarint_bytes",
    "write_sorted_tagged",
    "write_tagged",
    "write_uvarint",
]

# Kafka's Uuid.ZERO_UUID: the default of every uuid field without a spec default.
ZERO_UUID = UUID(int=0)

DECODE_ERRORS: tuple[type[BaseException], ...] = (
    struct.error,
    IndexError,
    ValueError,  # includes UnicodeDecodeError
    TypeError,
    OverflowError,
)
ENCODE_ERRORS: tuple[type[BaseException], ...] = (
    struct.error,
    AttributeError,  # e.g. None where a str/struct/uuid is required
    TypeError,
    ValueError,  # includes UnicodeEncodeError
    OverflowError,
)


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """Spec metadata of one field, in spec order on each generated struct's ``FIELDS``.

    Version ranges are inclusive; an open-ended range ("N+") has upper bound 32767.
    ``default`` is the Python default (None for struct and array fields).
    """

    name: str
    attr: str
    type: str
    versions: tuple[int, int]
    nullable_versions: tuple[int, int] | None
    tagged_versions: tuple[int, int] | None
    tag: int | None
    ignorable: bool
    default: object
    struct: builtins.type | None
    map_key: bool = False
    # A field-level flexibleVersions override (Kafka's "flexibleVersions" on a field, e.g. RequestHeader's
    # ClientId): compact encodings only in ``flexible_versions`` (None: never), whatever the message says.
    flexible_override: bool = False
    flexible_versions: tuple[int, int] | None = None


def read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """Decode an unsigned varint at ``pos``; return (value, position after it). Unrolled: one to five bytes."""
    try:
        b = data[pos]
        if b < 0x80:
            return b, pos + 1
        value = b & 0x7F
        b = data[pos + 1]
        if b < 0x80:
            return value | b << 7, pos + 2
        value |= (b & 0x7F) << 7
        b = data[pos + 2]
        if b < 0x80:
            return value | b << 14, pos + 3
        value |= (b & 0x7F) << 14
        b = data[pos + 3]
        if b < 0x80:
            return value | b << 21, pos + 4
        value |= (b & 0x7F) << 21
        b = data[pos + 4]
    except IndexError:
        raise errors.MessageDecodeError("truncated unsigned varint") from None
    if b < 0x80:
        return value | b << 28, pos + 5
    raise errors.MessageDecodeError("unsigned varint is longer than 5 bytes")


def write_uvarint(out: bytearray, value: int) -> None:
    """Append ``value`` (0 <= value < 2**32) as an unsigned varint."""
    if value < 0 or value > 0xFFFFFFFF:
        raise errors.MessageEncodeError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


# ONE_BYTE[i] == bytes([i]): writers append one-byte lengths, markers and empty tag sections from here.
ONE_BYTE: tuple[bytes, ...] = tuple(bytes((i,)) for i in range(256))


def uvarint_bytes(value: int) -> bytes:
    """``value`` (0 <= value < 2**32) as an unsigned varint (one to three bytes without a loop)."""
    if 0 <= value < 0x80:
        return ONE_BYTE[value]
    if 0x80 <= value < 0x4000:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    if 0x4000 <= value < 0x200000:
        return bytes(((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, value >> 14))
    out = bytearray()
    write_uvarint(out, value)
    return bytes(out)


def _tag_of(entry: tuple[int, bytes]) -> int:
    return entry[0]


def write_tagged(out: list[bytes], fields: Sequence[tuple[int, bytes]]) -> None:
    """Append a tagged-field section holding ``fields`` in ascending tag order (stable for equal tags)."""
    if len(fields) > 1:
        fields = sorted(fields, key=_tag_of)
    write_sorted_tagged(out, fields)


_PACK_BB = struct.Struct(">BB").pack


def write_sorted_tagged(out: list[bytes], fields: Sequence[tuple[int, bytes]]) -> None:
    """Append a tagged-field section holding ``fields``, which the caller guarantees are already in
    ascending tag order (generated writers collect their known tags in that order). Payloads are
    appended as they are (no copy); tag and size share one two-byte part when both are below 128."""
    n = len(fields)
    out.append(ONE_BYTE[n] if n < 0x80 else uvarint_bytes(n))
    for tag, payload in fields:
        if type(tag) is not int or tag < 0:
            if not isinstance(tag, int) or tag < 0:
                raise errors.MessageEncodeError(f"invalid tag {tag!r} in tagged fields")
        size = len(payload)
        if tag < 0x80 and size < 0x80:
            out.append(_PACK_BB(tag, size))
        else:
            out.append(uvarint_bytes(tag) + uvarint_bytes(size))
        out.append(payload)


# Encoded-string caches: str -> length prefix + UTF-8 bytes. Names, hosts and listener names repeat in
# nearly every message, so re-encoding them is wasted work. Bounded in entry count and string size.
COMPACT_STRINGS: dict[str, bytes] = {}
LEGACY_STRINGS: dict[str, bytes] = {}
_CACHE_MAX = 8192
_CACHE_STR_MAX = 256


def compact_string(s: str) -> bytes:
    """Unsigned-varint (length + 1) prefix + UTF-8 of ``s`` (flexible versions); cached per string."""
    cached = COMPACT_STRINGS.get(s)
    if cached is not None:
        return cached
    raw = s.encode()
    n = len(raw)
    if n > 32767:
        raise errors.MessageEncodeError(f"string of {n} bytes is too long to be serialized")
    out = bytearray()
    write_uvarint(out, n + 1)
    out += raw
    result = bytes(out)
    if n <= _CACHE_STR_MAX and len(COMPACT_STRINGS) < _CACHE_MAX and type(s) is str:
        COMPACT_STRINGS[s] = result
    return result


def legacy_string(s: str) -> bytes:
    """int16 length prefix + UTF-8 of ``s`` (non-flexible versions); cached per string."""
    cached = LEGACY_STRINGS.get(s)
    if cached is not None:
        return cached
    raw = s.encode()
    n = len(raw)
    if n > 32767:
        raise errors.MessageEncodeError(f"string of {n} bytes is too long to be serialized")
    result = n.to_bytes(2, "big") + raw
    if n <= _CACHE_STR_MAX and len(LEGACY_STRINGS) < _CACHE_MAX and type(s) is str:
        LEGACY_STRINGS[s] = result
    return result


_new = object.__new__
_set = object.__setattr__
_SAFE = SafeUUID.unknown
# Decoded UUIDs are immutable, so equal ones may be shared: directory and topic ids repeat constantly.
# Readers look here first (``UUID_CACHE.get(raw) or uuid_from_bytes(raw)``: a UUID is always truthy).
UUID_CACHE: dict[bytes, UUID] = {}
_UUIDS = UUID_CACHE
_UUIDS_MAX = 4096


def uuid_from_bytes(raw: bytes) -> UUID:
    """The UUID of exactly 16 big-endian bytes (equal to ``UUID(bytes=raw)``; possibly a shared instance)."""
    u = _UUIDS.get(raw)
    if u is None:
        u = _new(UUID)
        _set(u, "int", int.from_bytes(raw, "big"))
        _set(u, "is_safe", _SAFE)
        if len(_UUIDS) < _UUIDS_MAX:
            _UUIDS[raw] = u
    return u


class ArrayPackers(dict[int, Callable[..., bytes]]):
    """count → precompiled ``pack`` for an array of ``count`` fixed-width elements of one struct code
    (e.g. ``packers[3](a, b, c)`` for ">3i"); filled lazily, small counts cached."""

    def __init__(self, code: str, prefix: str = "") -> None:
        super().__init__()
        self.code = code
        self.prefix = prefix  # e.g. "B": a one-byte compact count packed before the elements

    def __missing__(self, count: int) -> Callable[..., bytes]:
        fn = struct.Struct(f">{self.prefix}{count}{self.code}").pack
        if count <= 1024:
            self[count] = fn
        return fn


def small_packers(code: str, limit: int = 127) -> tuple[Callable[..., bytes], ...]:
    """``t[n]`` packs ``n`` fixed-width elements (``"><n><code>"``) for n < ``limit``: a tuple, because
    indexing one is cheaper than a dict lookup."""
    return tuple(struct.Struct(f">{n}{code}").pack for n in range(limit))


class ArrayUnpackers(dict[int, Callable[[bytes, int], tuple[Any, ...]]]):
    """count → precompiled ``unpack_from`` for ``count`` fixed-width elements (see :class:`ArrayPackers`)."""

    def __init__(self, code: str) -> None:
        super().__init__()
        self.code = code

    def __missing__(self, count: int) -> Callable[[bytes, int], tuple[Any, ...]]:
        fn = struct.Struct(f">{count}{self.code}").unpack_from
        if count <= 1024:
            self[count] = fn
        return fn
