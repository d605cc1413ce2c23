"""Record-batch compression codecs, byte-compatible with what Kafka writes and reads.

Contracts:
1. Codec ids are the low three attribute bits of a v2 batch: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
   (PROTOCOL-FACTS §5). Ids 5-7 are invalid → UnsupportedCompressionError.
2. gzip: a standard gzip member (Kafka uses java.util.zip GZIP streams); reading accepts concatenated members.
3. lz4: one LZ4 frame as Kafka's Lz4BlockOutputStream writes it: FLG 0x60 (version 1, independent blocks, no
   block or content checksum, no content size), BD 0x40 (64 KiB blocks), a correct header checksum, end mark.
   Reading accepts any standard LZ4 frame.
4. snappy: Kafka wraps snappy in xerial's SnappyOutputStream, so we write its framing: the 16-byte header
   (0x82 "SNAPPY" 0x00, int32 version 1, int32 compatible version 1) then blocks of int32 big-endian length +
   raw snappy of at most 32 KiB input each. Reading also accepts a bare raw snappy block.
5. zstd: a standard zstd frame; reading does not require the frame to carry its content size.
6. A codec whose library is not importable raises UnsupportedCompressionError (error code
   UNSUPPORTED_COMPRESSION_TYPE) naming the missing package. A corrupt or truncated payload raises
   CorruptRecordError; no codec library's own exception escapes.
7. ``max_size`` bounds the decompressed size; output beyond it is refused (CorruptRecordError) without being
   materialised (a guard against decompression bombs).
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum
from types import ModuleType
from typing import Any

from kwire.errors import CorruptRecordError, UnsupportedCompressionError

Buffer = bytes | bytearray | memoryview

DEFAULT_MAX_DECOMPRESSED = 256 * 1024 * 1024
_LZ4_MIN_STEP = 64 * 1024


class Compression(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def _optional(name: str) -> ModuleType | None:
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        return None


_lz4frame: Any = _optional("lz4.frame")
_cramjam: Any = _optional("cramjam")
_zstd: Any = _optional("zstandard")

_PACKAGE = {Compression.LZ4: "lz4", Compression.SNAPPY: "cramjam", Compression.ZSTD: "zstandard"}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK = 32 * 1024


def codec(value: int) -> Compression:
    """The codec for an attribute value's low bits; unknown ids are refused."""
    try:
        return Compression(value)
    except ValueError:
        raise UnsupportedCompressionError(f"unknown compression codec id {value}") from None


def available(kind: Compression) -> bool:
    """True when this process can both compress and decompress ``kind``."""
    if kind in (Compression.NONE, Compression.GZIP):
        return True
    return _module(kind, raise_missing=False) is not None


def _module(kind: Compression, raise_missing: bool = True) -> Any:
    mod = {Compression.LZ4: _lz4frame, Compression.SNAPPY: _cramjam, Compression.ZSTD: _zstd}[kind]
    if mod is None and raise_missing:
        raise UnsupportedCompressionError(
            f"compression {kind.name.lower()} needs the '{_PACKAGE[kind]}' package, which is not installed"
        )
    return mod


def compress(kind: Compression, data: Buffer) -> bytes:
    """Compress a records section as Kafka would for ``kind``."""
    if kind is Compression.NONE:
        return bytes(data)
    if kind is Compression.GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    mod = _module(kind)
    if kind is Compression.LZ4:
        out: bytes = mod.compress(
            data,
            block_size=mod.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            block_checksum=False,
            store_size=False,
        )
        return out
    if kind is Compression.SNAPPY:
        view = memoryview(data)
        parts = [XERIAL_HEADER]
        for start in range(0, len(view), XERIAL_BLOCK):
            block = bytes(mod.snappy.compress_raw(bytes(view[start : start + XERIAL_BLOCK])))
            parts.append(struct.pack(">i", len(block)))
            parts.append(block)
        return b"".join(parts)
    compressed: bytes = mod.ZstdCompressor(level=3).compress(data)
    return compressed


def decompress(kind: Compression, data: Buffer, max_size: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """Inverse of :func:`compress`; corrupt input → CorruptRecordError, missing codec →
    UnsupportedCompressionError, output over ``max_size`` → CorruptRecordError."""
    if kind is Compression.NONE:
        return bytes(data)
    mod: Any = None if kind is Compression.GZIP else _module(kind)
    try:
        if kind is Compression.GZIP:
            out = _gunzip(data, max_size)
        elif kind is Compression.LZ4:
            out = _lz4_decompress(mod, data, max_size)
        elif kind is Compression.SNAPPY:
            out = _snappy_decompress(mod, data, max_size)
        else:
            out = _zstd_decompress(mod, data, max_size)
    except (UnsupportedCompressionError, CorruptRecordError):
        raise
    except Exception as exc:  # every codec library has its own exception types
        raise CorruptRecordError(f"{kind.name.lower()} payload does not decompress: {exc}") from None
    if len(out) > max_size:
        raise CorruptRecordError(f"decompressed records exceed {max_size} bytes")
    return out


def _gunzip(data: Buffer, max_size: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    rest = bytes(data)
    while rest:
        d = zlib.decompressobj(31)
        chunk = d.decompress(rest, max_size + 1 - total)
        total += len(chunk)
        parts.append(chunk)
        if total > max_size:
            break
        if not d.eof:
            raise CorruptRecordError("gzip payload is truncated")
        rest = d.unused_data
    return b"".join(parts)


def _lz4_decompress(mod: Any, data: Buffer, max_size: int) -> bytes:
    # Output is produced in steps sized from the input (a huge max_length makes lz4 allocate it up front on
    # every call); the running total still stops at max_size + 1 (contract 7).
    d = mod.LZ4FrameDecompressor()
    limit = max_size + 1
    step = min(limit, max(_LZ4_MIN_STEP, 8 * len(data)))
    parts: list[bytes] = [d.decompress(bytes(data), max_length=step)]
    total = len(parts[0])
    while not d.eof and not d.needs_input and total < limit:
        chunk: bytes = d.decompress(b"", max_length=min(step, limit - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    if total <= max_size and not d.eof:
        raise CorruptRecordError("lz4 frame is truncated")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _snappy_decompress(mod: Any, data: Buffer, max_size: int) -> bytes:
    raw = bytes(data)

    def block(payload: bytes, budget: int) -> bytes:
        # a raw snappy block declares its output size up front: check it before anything is allocated
        if mod.snappy.decompress_raw_len(payload) > budget:
            raise CorruptRecordError(f"decompressed records exceed {max_size} bytes")
        return bytes(mod.snappy.decompress_raw(payload))

    if not raw.startswith(XERIAL_MAGIC):
        return block(raw, max_size)
    if len(raw) < len(XERIAL_HEADER):
        raise CorruptRecordError("xerial snappy header is truncated")
    pos = len(XERIAL_HEADER)
    parts: list[bytes] = []
    total = 0
    while pos < len(raw):
        if pos + 4 > len(raw):
            raise CorruptRecordError("xerial snappy block length is truncated")
        (n,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        if n < 0 or pos + n > len(raw):
            raise CorruptRecordError("xerial snappy block overruns the payload")
        out = block(raw[pos : pos + n], max_size - total)
        pos += n
        total += len(out)
        parts.append(out)
    return b"".join(parts)


def _zstd_decompress(mod: Any, data: Buffer, max_size: int) -> bytes:
    rest = bytes(data)
    # First pass: measure the output in bounded chunks, so a bomb is refused before it is materialised.
    total = 0
    with mod.ZstdDecompressor().stream_reader(rest, read_across_frames=True) as reader:
        while piece := reader.read(1 << 20):
            total += len(piece)
            if total > max_size:
                raise CorruptRecordError(f"decompressed records exceed {max_size} bytes")
    # Second pass: decode frame by frame, refusing a truncated one.
    parts: list[bytes] = []
    total = 0
    while rest:  # a payload may hold several frames
        d = mod.ZstdDecompressor().decompressobj()
        chunk: bytes = d.decompress(rest)
        total += len(chunk)
        if total > max_size:
            raise CorruptRecordError(f"decompressed records exceed {max_size} bytes")
        if not d.eof:
            raise CorruptRecordError("zstd frame is truncated")
        parts.append(chunk)
        rest = d.unused_data
    return b"".join(parts)
