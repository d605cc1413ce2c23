"""Walking a buffer that holds many v2 record batches (a log segment, a snapshot, Fetch records).

Public API (stable; used by storage and the core):
- ``iter_batches(buf, start=0, *, verify_crc=True, strict=True, max_batch_size=...) -> BatchIterator``;
  iterating yields :class:`BatchView` (header + zero-copy memoryview of the batch bytes). After (or during)
  iteration ``it.valid_end`` is the byte position just past the last batch yielded, ``it.stop`` says why
  iteration ended and ``it.error`` holds the CorruptRecordError that ended it, if any.
- ``scan_batches(buf, ...) -> ScanResult`` — the same walk collected eagerly (headers only), never raising:
  storage uses ``valid_end`` to cut a torn tail.

Contracts:
1. No payload is copied: a BatchView's ``data`` is a memoryview slice of ``buf``; nothing is decoded until
   ``BatchView.decode()`` is called.
2. Stop reasons: END — the buffer ends exactly at a batch boundary; TRUNCATED — fewer bytes remain than the
   next batch needs (a torn write, or a Fetch response cut at MaxBytes, which Kafka allows); CORRUPT — the
   next batch has a Length below the 61-byte header, above ``max_batch_size``, a magic other than 2, or a
   CRC-32C mismatch (when ``verify_crc``).
3. A Length field is only compared, never used to allocate: an over-long Length (above ``max_batch_size``)
   is CORRUPT; one that merely runs past the end of the buffer is TRUNCATED.
4. ``strict=True`` raises the CorruptRecordError for CORRUPT (after setting ``stop``/``error``); TRUNCATED
   never raises. ``strict=False`` never raises; it records the error and stops.
5. ``valid_end`` only ever covers whole batches that passed the checks above.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from enum import Enum

from kwire.errors import CorruptRecordError
from kwire.records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    BatchHeader,
    Buffer,
    RecordBatch,
    decode_at,
    peek_batch,
)

DEFAULT_MAX_BATCH_SIZE = 104857600 + LOG_OVERHEAD


class StopReason(Enum):
    END = "end"
    TRUNCATED = "truncated"
    CORRUPT = "corrupt"


@dataclass(frozen=True, slots=True)
class BatchView:
    """One batch inside a larger buffer: its parsed header and its bytes (a view, not a copy)."""

    header: BatchHeader
    data: memoryview

    @property
    def position(self) -> int:
        return self.header.position

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.last_offset

    @property
    def partition_leader_epoch(self) -> int:
        return self.header.partition_leader_epoch

    @property
    def is_control(self) -> bool:
        return self.header.is_control

    def decode(self, *, verify_crc: bool = False) -> RecordBatch:
        """Decode the records (the iterator already checked the CRC if asked to)."""
        return decode_at(self.data, _rebase(self.header), verify_crc=verify_crc)


def _rebase(h: BatchHeader) -> BatchHeader:
    return h if h.position == 0 else replace(h, position=0)


class BatchIterator(Iterator[BatchView]):
    """See the module docstring. Not thread-safe; iterate once."""

    def __init__(
        self,
        buf: Buffer,
        start: int = 0,
        *,
        verify_crc: bool = True,
        strict: bool = True,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    ) -> None:
        self._buf = buf
        self._view = memoryview(buf)
        self._pos = start
        self._verify = verify_crc
        self._strict = strict
        self._max = max_batch_size
        self.valid_end = start
        self.stop: StopReason | None = None
        self.error: CorruptRecordError | None = None

    def __iter__(self) -> BatchIterator:
        return self

    def _fail(self, message: str) -> None:
        self.stop = StopReason.CORRUPT
        self.error = CorruptRecordError(message)
        if self._strict:
            raise self.error

    def __next__(self) -> BatchView:
        if self.stop is not None:
            raise StopIteration
        buf, pos = self._buf, self._pos
        remaining = len(buf) - pos
        if remaining == 0:
            self.stop = StopReason.END
            raise StopIteration
        if remaining < LOG_OVERHEAD:
            self.stop = StopReason.TRUNCATED
            raise StopIteration
        base_offset = int.from_bytes(buf[pos : pos + 8], "big", signed=True)
        length = int.from_bytes(buf[pos + 8 : pos + 12], "big", signed=True)
        size = length + LOG_OVERHEAD
        if size < HEADER_SIZE:
            self._fail(f"batch at offset {base_offset} (byte {pos}): length {length} below the header size")
            raise StopIteration
        if size > self._max:
            self._fail(f"batch at offset {base_offset} (byte {pos}): size {size} above the {self._max} limit")
            raise StopIteration
        if size > remaining:
            self.stop = StopReason.TRUNCATED
            raise StopIteration
        if buf[pos + 16] != MAGIC:
            self._fail(f"batch at offset {base_offset} (byte {pos}): magic {buf[pos + 16]} is not 2")
            raise StopIteration
        header = peek_batch(buf, pos, verify_crc=self._verify)
        if header.crc_ok is False:
            self._fail(f"batch at offset {base_offset} (byte {pos}): CRC-32C mismatch")
            raise StopIteration
        data = self._view[pos : pos + size]
        self._pos = self.valid_end = pos + size
        return BatchView(header, data)


def iter_batches(
    buf: Buffer,
    start: int = 0,
    *,
    verify_crc: bool = True,
    strict: bool = True,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
) -> BatchIterator:
    return BatchIterator(buf, start, verify_crc=verify_crc, strict=strict, max_batch_size=max_batch_size)


@dataclass(frozen=True, slots=True)
class ScanResult:
    headers: tuple[BatchHeader, ...]
    valid_end: int
    stop: StopReason
    error: CorruptRecordError | None


def scan_batches(
    buf: Buffer, start: int = 0, *, verify_crc: bool = True, max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
) -> ScanResult:
    """Walk every batch from ``start`` without raising; see the module docstring for the stop reasons."""
    it = BatchIterator(buf, start, verify_crc=verify_crc, strict=False, max_batch_size=max_batch_size)
    headers = tuple(v.header for v in it)
    assert it.stop is not None
    return ScanResult(headers, it.valid_end, it.stop, it.error)
