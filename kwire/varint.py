"""Variable-length integers of the Kafka wire formats.

Contracts:
1. Record-level integers (record length, deltas, key/value/header lengths) are ZIGZAG varints: int32 values
   ("varint", at most 5 bytes) and int64 values ("varlong", at most 10 bytes) (Kafka ByteUtils.writeVarint /
   writeVarlong; PROTOCOL-FACTS §5).
2. Protocol compact lengths, tag numbers and the metadata record frame use UNSIGNED varints (uint32, at most
   5 bytes) (PROTOCOL-FACTS §3.1, §9 item 7).
3. Encoders refuse values outside their type's range with LocalProtocolError; decoders refuse a truncated or
   over-long encoding with MessageDecodeError. Decoders never read past ``len(buf)``.
"""

from __future__ import annotations

from kwire.errors import LocalProtocolError, MessageDecodeError

Buffer = bytes | bytearray | memoryview

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT32_MAX = (1 << 32) - 1


def _unsigned_bytes(u: int) -> bytes:
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


# 1. Encodings of small zigzag values are precomputed: the record builder looks them up by ``v + ZZ_BIAS``.
ZZ_BIAS = 64
ZZ_TABLE: tuple[bytes, ...] = tuple(_unsigned_bytes((v << 1) ^ (v >> 63)) for v in range(-ZZ_BIAS, 1 << 14))
ZZ_TABLE_LEN = len(ZZ_TABLE)


def encode_varint(value: int) -> bytes:
    """Zigzag-encode an int32."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise LocalProtocolError(f"varint out of int32 range: {value}")
    idx = value + ZZ_BIAS
    if 0 <= idx < ZZ_TABLE_LEN:
        return ZZ_TABLE[idx]
    return _unsigned_bytes(((value << 1) ^ (value >> 31)) & UINT32_MAX)


def encode_varlong(value: int) -> bytes:
    """Zigzag-encode an int64."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise LocalProtocolError(f"varlong out of int64 range: {value}")
    idx = value + ZZ_BIAS
    if 0 <= idx < ZZ_TABLE_LEN:
        return ZZ_TABLE[idx]
    return _unsigned_bytes(((value << 1) ^ (value >> 63)) & ((1 << 64) - 1))


def encode_unsigned_varint(value: int) -> bytes:
    """Encode a uint32 as an unsigned varint."""
    if not 0 <= value <= UINT32_MAX:
        raise LocalProtocolError(f"unsigned varint out of uint32 range: {value}")
    return _unsigned_bytes(value)


def _read_unsigned(buf: Buffer, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise MessageDecodeError(f"truncated {what}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise MessageDecodeError(f"{what} longer than {max_bytes} bytes")


def decode_unsigned_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Read a uint32 unsigned varint at ``pos``; return (value, position after it)."""
    value, pos = _read_unsigned(buf, pos, 5, "unsigned varint")
    if value > UINT32_MAX:
        raise MessageDecodeError("unsigned varint exceeds uint32")
    return value, pos


def decode_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Read a zigzag int32 at ``pos``; return (value, position after it)."""
    raw, pos = _read_unsigned(buf, pos, 5, "varint")
    if raw > UINT32_MAX:
        raise MessageDecodeError("varint exceeds int32")
    return (raw >> 1) ^ -(raw & 1), pos


def decode_varlong(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Read a zigzag int64 at ``pos``; return (value, position after it)."""
    raw, pos = _read_unsigned(buf, pos, 10, "varlong")
    if raw >= 1 << 64:
        raise MessageDecodeError("varlong exceeds int64")
    return (raw >> 1) ^ -(raw & 1), pos


def varint_size(value: int) -> int:
    """Bytes a zigzag int64 takes on the wire."""
    u = ((value << 1) ^ (value >> 63)) & ((1 << 64) - 1)
    n = 1
    while u >= 0x80:
        u >>= 7
        n += 1
    return n
