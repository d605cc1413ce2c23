"""One log segment file: ``<20-digit base offset>.log`` holding whole v2 record batches back to back.

Contracts:
1. After :meth:`Segment.recover` the file holds only verified batches (CRC, magic, length, contiguous offsets,
   non-decreasing epochs); anything after the first bad batch has been truncated away and described in the
   returned :class:`Cut`.
2. The in-memory index (``last offsets`` and ``positions``) always describes exactly the bytes in the file.
3. Writes reach the kernel at once (unbuffered fd); durability requires :meth:`flush` (fdatasync).
"""

from __future__ import annotations

import bisect
import os
from array import array
from dataclasses import dataclass
from pathlib import Path

from kraftd.storage import batches
from kraftd.storage.errors import LogIOError
from kraftd.storage.fsio import fsync_fd

SEGMENT_SUFFIX = ".log"


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}{SEGMENT_SUFFIX}"


@dataclass(frozen=True, slots=True)
class Cut:
    """What recovery removed from a segment and why."""

    path: Path
    position: int
    bytes_cut: int
    next_offset: int
    reason: str

    def describe(self) -> str:
        return (
            f"truncated {self.bytes_cut} bytes from {self.path.name} at position {self.position} "
            f"(next offset {self.next_offset}): {self.reason}"
        )


@dataclass(frozen=True, slots=True)
class ScannedBatch:
    base_offset: int
    last_offset: int
    epoch: int


class Segment:
    def __init__(self, directory: Path, base_offset: int) -> None:
        self.base_offset = base_offset
        self.path = directory / segment_name(base_offset)
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            self.size = os.fstat(self._fd).st_size
        except OSError as exc:
            raise LogIOError(f"cannot open segment {self.path}: {exc}") from exc
        self._last = array("q")
        self._pos = array("q")
        self._dirty = False

    # ------------------------------------------------------------------ state
    @property
    def end_offset(self) -> int:
        """One past the last offset held (== base offset when empty)."""
        return self._last[-1] + 1 if self._last else self.base_offset

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def batch_count(self) -> int:
        return len(self._last)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # ------------------------------------------------------------------ recovery
    def recover(self, last_epoch: int) -> tuple[list[ScannedBatch], Cut | None]:
        """Scan and verify every batch; cut the file after the last good one (contract 1)."""
        try:
            data = os.pread(self._fd, self.size, 0) if self.size else b""
        except OSError as exc:
            raise LogIOError(f"cannot read segment {self.path}: {exc}") from exc
        scanned: list[ScannedBatch] = []
        pos = 0
        expected = self.base_offset
        reason: str | None = None
        while pos < len(data):
            header = batches.peek(data, pos)
            if header is None:
                reason = f"{len(data) - pos} trailing bytes are too short for a batch header (torn write)"
                break
            reason = batches.check(data, pos, header)
            if reason is None and header.base_offset != expected:
                reason = f"batch base offset {header.base_offset} where {expected} was expected"
            if reason is None and header.epoch < last_epoch:
                reason = f"batch epoch {header.epoch} is below the previous epoch {last_epoch}"
            if reason is not None:
                break
            scanned.append(ScannedBatch(header.base_offset, header.last_offset, header.epoch))
            self._last.append(header.last_offset)
            self._pos.append(pos)
            last_epoch = header.epoch
            expected = header.last_offset + 1
            pos += header.size
        cut = None
        if pos < len(data):
            cut = Cut(self.path, pos, len(data) - pos, expected, reason or "unknown")
            self._truncate_file(pos)
        return scanned, cut

    # ------------------------------------------------------------------ writes
    def append(self, data: bytes, last_offsets: list[int], rel_positions: list[int]) -> None:
        start = self.size
        try:
            view = memoryview(data)
            while view:
                n = os.pwrite(self._fd, view, start + (len(data) - len(view)))
                view = view[n:]
        except OSError as exc:
            raise LogIOError(f"write to segment {self.path} failed: {exc}") from exc
        self._last.extend(last_offsets)
        self._pos.extend(start + p for p in rel_positions)
        self.size += len(data)
        self._dirty = True

    def flush(self) -> None:
        if self._dirty:
            fsync_fd(self._fd, f"segment {self.path}")
            self._dirty = False

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; return the new end offset."""
        i = bisect.bisect_left(self._last, offset)
        if i < len(self._last):
            self._truncate_file(self._pos[i])
            del self._last[i:]
            del self._pos[i:]
            fsync_fd(self._fd, f"segment {self.path}")
        return self.end_offset

    def _truncate_file(self, position: int) -> None:
        try:
            os.ftruncate(self._fd, position)
        except OSError as exc:
            raise LogIOError(f"truncate of segment {self.path} failed: {exc}") from exc
        self.size = position
        self._dirty = True

    # ------------------------------------------------------------------ reads
    def read(self, offset: int, max_bytes: int, limit_offset: int) -> bytes:
        """Whole batches starting with the one holding ``offset``, ending before ``limit_offset``.

        At least one batch is returned (if it lies below ``limit_offset``) even when larger than ``max_bytes``.
        """
        i = bisect.bisect_left(self._last, offset)
        if i >= len(self._last):
            return b""
        j = bisect.bisect_left(self._last, limit_offset, lo=i)
        if j == i:
            return b""
        start = self._pos[i]
        end = self._pos[j] if j < len(self._pos) else self.size
        if end - start > max_bytes:
            k = bisect.bisect_right(self._pos, start + max_bytes, lo=i + 1, hi=j) - 1
            end = self._pos[k] if k > i else (self._pos[i + 1] if i + 1 < len(self._pos) else self.size)
        try:
            return os.pread(self._fd, end - start, start)
        except OSError as exc:
            raise LogIOError(f"read from segment {self.path} failed: {exc}") from exc

    def delete(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise LogIOError(f"cannot delete segment {self.path}: {exc}") from exc
