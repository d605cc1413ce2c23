"""The records section of a v2 batch: encoding and decoding individual records (hot loops).

:class:`Record` lives here and is re-exported by :mod:`kwire.records`, which owns the batch framing.

Contracts (PROTOCOL-FACTS §5; Kafka DefaultRecord):
1. Record: Length varint, Attributes int8 (0), TimestampDelta varlong, OffsetDelta varint, KeyLength varint
   (-1 = null), Key, ValueLength varint (-1 = null), Value, HeaderCount varint, then per header KeyLength
   varint, Key (UTF-8, never null), ValueLength varint (-1 = null), Value. All varints are zigzag.
2. Decoding never trusts a length: each is checked against what remains before slicing; the declared record
   count must match the records present and the section must be consumed exactly. Any violation raises
   CorruptRecordError and nothing else.
3. Encoding writes exactly what Kafka's DefaultRecord.writeTo writes (attributes byte 0).
4. ``encode_values`` and ``decode_records`` run the compiled twins in kwire/_fastrecords.pyx when they are built
   and selected (:func:`set_compiled`, driven by kwire.fastpath); whatever the twins decline reruns the loops
   here, which stay the reference (same bytes, equal records, the same errors).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kwire.compiled import load as load_compiled
from kwire.errors import CorruptRecordError, LocalProtocolError
from kwire.varint import ZZ_BIAS, ZZ_TABLE, ZZ_TABLE_LEN, encode_varint, encode_varlong

Header = tuple[str, bytes | None]


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a batch. Its offset is ``batch.base_offset + offset_delta``; its timestamp is
    ``batch.base_timestamp + timestamp_delta`` (CreateTime batches)."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


def _zz(v: int) -> bytes:
    i = v + ZZ_BIAS
    if 0 <= i < ZZ_TABLE_LEN:
        return ZZ_TABLE[i]
    return encode_varlong(v)


def encode_records(parts: list[bytes], records: Sequence[Record]) -> None:
    """Append the wire form of ``records`` to ``parts`` (joined later in one copy)."""
    table, bias, tlen = ZZ_TABLE, ZZ_BIAS, ZZ_TABLE_LEN
    ap = parts.append
    for r in records:
        key, value = r.key, r.value
        i = r.timestamp_delta + bias
        ts = table[i] if 0 <= i < tlen else encode_varlong(r.timestamp_delta)
        i = r.offset_delta + bias
        od = table[i] if 0 <= i < tlen else encode_varint(r.offset_delta)
        if key is None:
            kl = b"\x01"
            key = b""
        else:
            i = len(key) + bias
            kl = table[i] if i < tlen else encode_varint(len(key))
        if value is None:
            vl = b"\x01"
            value = b""
        else:
            i = len(value) + bias
            vl = table[i] if i < tlen else encode_varint(len(value))
        hdrs = _encode_headers(r.headers) if r.headers else b"\x00"
        size = 1 + len(ts) + len(od) + len(kl) + len(key) + len(vl) + len(value) + len(hdrs)
        i = size + bias
        ap(table[i] if i < tlen else encode_varint(size))
        ap(b"\x00")
        ap(ts)
        ap(od)
        ap(kl)
        ap(key)
        ap(vl)
        ap(value)
        ap(hdrs)


def encode_values(parts: list[bytes], values: Sequence[bytes]) -> None:
    """Records with offset deltas 0..n-1, timestamp delta 0, null key, no headers (the common KRaft shape)."""
    fast = _fast
    if fast is not None:
        body = fast.encode_values(values)
        if body is not None:
            parts.append(body)
            return
    _encode_values(parts, values)


def _encode_values(parts: list[bytes], values: Sequence[bytes]) -> None:
    table, bias, tlen = ZZ_TABLE, ZZ_BIAS, ZZ_TABLE_LEN
    ap = parts.append
    for od, value in enumerate(values):
        n = len(value)
        i = n + bias
        vl = table[i] if i < tlen else encode_varint(n)
        i = od + bias
        odb = table[i] if i < tlen else encode_varint(od)
        i = 4 + len(odb) + len(vl) + n + bias  # attrs, ts delta, key length and header count: 1 byte each
        ap(table[i] if i < tlen else encode_varint(i - bias))
        ap(b"\x00\x00")
        ap(odb)
        ap(b"\x01")
        ap(vl)
        ap(value)
        ap(b"\x00")


def _encode_headers(headers: Sequence[Header]) -> bytes:
    out = bytearray(_zz(len(headers)))
    for hkey, hval in headers:
        if not isinstance(hkey, str):
            raise LocalProtocolError("record header keys must be str")
        kb = hkey.encode("utf-8")
        out += _zz(len(kb))
        out += kb
        if hval is None:
            out += b"\x01"
        else:
            out += _zz(len(hval))
            out += hval
    return bytes(out)


def _slow_zz(data: bytes, pos: int, limit: int) -> tuple[int, int]:
    """Zigzag varint/varlong at ``pos`` (first byte already known to have its continuation bit set)."""
    raw = 0
    shift = 0
    end = min(len(data), pos + 10)
    while pos < end:
        b = data[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            if pos > limit:
                break
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise CorruptRecordError("malformed or truncated varint in a record")


class _RecordBuilder:
    """Layout twin of :class:`Record` (same slots, same order) without the frozen ``__setattr__``.

    Invariant: the decoder fills all five slots of a fresh instance with plain attribute stores, then switches
    its ``__class__`` to Record (allowed because the layouts are identical). The result is an ordinary frozen
    Record, built about twice as fast as through the dataclass ``__init__``."""

    __slots__ = ("offset_delta", "timestamp_delta", "key", "value", "headers")
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


assert _RecordBuilder.__slots__ == Record.__slots__


# Zigzag decodings of every one- and two-byte varint, looked up instead of computed in the hot loop:
# _UNZZ1[b] for a single byte b < 0x80; _UNZZ2[(b2 << 7) | (b & 0x7F)] for a two-byte encoding.
_UNZZ1: tuple[int, ...] = tuple((b >> 1) ^ -(b & 1) for b in range(128))
_UNZZ2: tuple[int, ...] = tuple((u >> 1) ^ -(u & 1) for u in range(1 << 14))


def decode_records(data: bytes, count: int) -> tuple[Record, ...]:
    fast = _fast
    if fast is not None:
        out: tuple[Record, ...] | None = fast.decode_records(data, count)
        if out is not None:
            return out
    return _decode_records(data, count)


def record_values(data: bytes, count: int, first_byte: int) -> list[tuple[int, bytes]]:
    """(offset delta, value) of each record whose value starts with ``first_byte``, in order; the section is
    checked exactly as :func:`decode_records` checks it (same errors). Replay's filter: a value that is no
    framed metadata record never becomes an object (kraftd.controller.image invariant 2a)."""
    fast = _fast
    if fast is not None:
        out: list[tuple[int, bytes]] | None = fast.record_values(data, count, first_byte)
        if out is not None:
            return out
    return [
        (r.offset_delta, r.value)
        for r in _decode_records(data, count)
        if r.value and r.value[0] == first_byte
    ]


def _decode_records(data: bytes, count: int) -> tuple[Record, ...]:
    if count < 0:
        raise CorruptRecordError(f"negative record count {count}")
    n = len(data)
    if count > n:  # every record takes at least one byte: refuse before building anything
        raise CorruptRecordError(f"record count {count} exceeds the {n} bytes of records")
    out: list[Record] = []
    append = out.append
    pos = 0
    rec_cls, builder, new = Record, _RecordBuilder, object.__new__
    unzz1, unzz2 = _UNZZ1, _UNZZ2
    try:
        for _ in range(count):
            # Varints of one or two bytes are decoded by table lookup; longer ones go through _slow_zz.
            b = data[pos]
            if b < 0x80:
                size = unzz1[b]
                pos += 1
            elif (b2 := data[pos + 1]) < 0x80:
                size = unzz2[(b2 << 7) | (b & 0x7F)]
                pos += 2
            else:
                size, pos = _slow_zz(data, pos, n)
            end = pos + size
            if size < 6 or end > n:
                raise CorruptRecordError(f"record length {size} does not fit the batch")
            b = data[pos + 1]  # data[pos] is the unused attributes byte
            if b < 0x80:
                ts = unzz1[b]
                pos += 2
            else:
                ts, pos = _slow_zz(data, pos + 1, end)
            b = data[pos]
            if b < 0x80:
                od = unzz1[b]
                pos += 1
            elif (b2 := data[pos + 1]) < 0x80:
                od = unzz2[(b2 << 7) | (b & 0x7F)]
                pos += 2
            else:
                od, pos = _slow_zz(data, pos, end)
            if data[pos] == 1:
                key = None
                pos += 1
            else:
                kl, pos = _slow_zz(data, pos, end)
                if kl < 0 or pos + kl > end:
                    raise CorruptRecordError(f"invalid key length {kl}")
                key = data[pos : pos + kl]
                pos += kl
            b = data[pos]
            if b < 0x80:
                vl = unzz1[b]
                pos += 1
            elif (b2 := data[pos + 1]) < 0x80:
                vl = unzz2[(b2 << 7) | (b & 0x7F)]
                pos += 2
            else:
                vl, pos = _slow_zz(data, pos, end)
            if vl >= 0:
                if pos + vl > end:
                    raise CorruptRecordError("record value overruns the record")
                value = data[pos : pos + vl]
                pos += vl
            elif vl == -1:
                value = None
            else:
                raise CorruptRecordError(f"invalid value length {vl}")
            if data[pos] == 0:
                headers: tuple[Header, ...] = ()
                pos += 1
            else:
                headers, pos = _decode_headers(data, pos, end)
            if pos != end:
                raise CorruptRecordError(f"record declares {size} bytes but its fields end elsewhere")
            r = new(builder)
            r.offset_delta = od
            r.timestamp_delta = ts
            r.key = key
            r.value = value
            r.headers = headers
            r.__class__ = rec_cls  # type: ignore[assignment]
            append(r)  # type: ignore[arg-type]
    except IndexError:
        raise CorruptRecordError("record runs past the end of the batch") from None
    if pos != n:
        raise CorruptRecordError(f"{n - pos} bytes left after the {count} records the header declares")
    return tuple(out)


def _decode_headers(data: bytes, pos: int, end: int) -> tuple[tuple[Header, ...], int]:
    hc, pos = _slow_zz(data, pos, end)
    if hc < 0 or hc > end - pos:
        raise CorruptRecordError(f"invalid header count {hc}")
    headers: list[Header] = []
    for _ in range(hc):
        hkl, pos = _slow_zz(data, pos, end)
        if hkl < 0 or pos + hkl > end:
            raise CorruptRecordError(f"invalid header key length {hkl}")
        try:
            hkey = data[pos : pos + hkl].decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptRecordError("record header key is not UTF-8") from None
        pos += hkl
        hvl, pos = _slow_zz(data, pos, end)
        if hvl < -1 or pos + hvl > end:
            raise CorruptRecordError(f"invalid header value length {hvl}")
        if hvl == -1:
            hval = None
        else:
            hval = data[pos : pos + hvl]
            pos += hvl
        headers.append((hkey, hval))
    return tuple(headers), pos


COMPILED: Any = load_compiled("_fastrecords")  # when built and allowed, else None (contract 4)
if COMPILED is not None:
    COMPILED.configure(_RecordBuilder, Record)
_fast: Any = COMPILED


def set_compiled(enabled: bool) -> None:
    """Select the compiled twins (when built) or the pure loops for every later call (kwire.fastpath)."""
    global _fast
    _fast = COMPILED if enabled else None
