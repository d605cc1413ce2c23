"""The ``__cluster_metadata-0`` replicated log: segments, epoch cache, recovery.

Contracts:
1. Offsets are dense: the batches held cover ``[start_offset, end_offset)`` with no gaps or overlaps.
2. :meth:`MetadataLog.append` accepts only whole, CRC-valid v2 batches whose base offset is ``end_offset``
   (or re-addresses them there with ``reassign=True``) and whose epochs never decrease; anything else raises
   LogAppendError and leaves the log unchanged.
3. ``flushed_offset`` <= ``end_offset``; it only advances in :meth:`flush`, after fsync. Only flushed data may count
   toward the high watermark or be reported to the leader as fetched (the shell's rule).
4. The epoch cache (``leader-epoch-checkpoint``) holds one entry per epoch present in the log, at the base offset of
   that epoch's first batch; it is rewritten whenever it changes and rebuilt from the segments on open.
5. Recovery on open cuts a torn or corrupt tail after the last valid batch, deletes every later segment, logs each
   cut and keeps its description in ``recovery_cuts``; a corrupt batch is never served.
6. :meth:`truncate_to` removes whole batches: every batch whose last offset is >= the target.
7. The start only moves forward by whole segments (:meth:`delete_before`, once a snapshot covers them) or by
   :meth:`reset_to` (a fetched snapshot replaces the whole log).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from kraftd.storage import batches
from kraftd.storage.epoch_checkpoint import EpochCheckpointFile, EpochEntry
from kraftd.storage.errors import LogAppendError, StorageError
from kraftd.storage.fsio import fsync_dir, fsync_fd
from kraftd.storage.segment import SEGMENT_SUFFIX, Cut, Segment

log = logging.getLogger("kraftd.storage.log")

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class OffsetOutOfRangeError(StorageError):
    """A read asked for an offset outside ``[start_offset, end_offset]``."""


class MetadataLog:
    def __init__(
        self,
        partition_dir: Path,
        segment_bytes: int,
        *,
        fsync: bool = True,
        segment_ms: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.dir = partition_dir
        self.segment_bytes = segment_bytes
        # metadata.log.segment.ms: a non-empty active segment older than this rolls on the next append. Its age
        # counts from its first append in this process (a restart starts the count again).
        self.segment_ms = segment_ms
        self._clock = clock
        self._active_since_ms = -1
        self.fsync_enabled = fsync
        self.recovery_cuts: list[Cut] = []
        self._checkpoint = EpochCheckpointFile(partition_dir)
        self._epochs: list[EpochEntry] = []
        self._segments: list[Segment] = []
        self._dir_dirty = False
        self._generation = 0
        self._pending_generation = -1
        partition_dir.mkdir(parents=True, exist_ok=True)
        self._recover()
        self.flushed_offset = self.end_offset

    # ------------------------------------------------------------------ open / recovery
    def _recover(self) -> None:
        bases = sorted(
            int(p.name[: -len(SEGMENT_SUFFIX)])
            for p in self.dir.iterdir()
            if p.name.endswith(SEGMENT_SUFFIX) and p.name[: -len(SEGMENT_SUFFIX)].isdigit()
        )
        last_epoch = -1
        broken = False
        for base in bases:
            seg = Segment(self.dir, base)
            if broken or (self._segments and base != self._segments[-1].end_offset):
                why = "follows a corrupt segment" if broken else "leaves a gap after the previous segment"
                self._record_cut(Cut(seg.path, 0, seg.size, base, f"whole segment removed: it {why}"))
                seg.delete()
                broken = True
                continue
            scanned, cut = seg.recover(last_epoch)
            for b in scanned:
                if not self._epochs or b.epoch > self._epochs[-1].epoch:
                    self._epochs.append(EpochEntry(b.epoch, b.base_offset))
                last_epoch = b.epoch
            self._segments.append(seg)
            if cut is not None:
                self._record_cut(cut)
                broken = True
        if not self._segments:
            self._segments.append(Segment(self.dir, 0))
            self._dir_dirty = True
        if broken:
            for seg in self._segments:
                seg.flush()
        stored = self._checkpoint.read() if self._checkpoint.path.exists() else []
        if stored != self._epochs:
            self._checkpoint.write(self._epochs)
        if self._dir_dirty and self.fsync_enabled:
            fsync_dir(self.dir)
            self._dir_dirty = False

    def _record_cut(self, cut: Cut) -> None:
        self.recovery_cuts.append(cut)
        log.warning("log recovery: %s", cut.describe())

    # ------------------------------------------------------------------ state
    @property
    def start_offset(self) -> int:
        return self._segments[0].base_offset

    @property
    def end_offset(self) -> int:
        return self._segments[-1].end_offset

    @property
    def last_epoch(self) -> int:
        """Epoch of the last batch held, or 0 for an empty log."""
        return self._epochs[-1].epoch if self._epochs else 0

    @property
    def epoch_entries(self) -> list[EpochEntry]:
        return list(self._epochs)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) of the largest epoch <= ``epoch`` held, as Kafka's epoch cache answers it."""
        if epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if not self._epochs:
            return (epoch, self.end_offset) if epoch == 0 else (UNDEFINED_EPOCH, UNDEFINED_OFFSET)
        if self._epochs[-1].epoch == epoch:
            return epoch, self.end_offset
        higher = next((e for e in self._epochs if e.epoch > epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        floor = next((e for e in reversed(self._epochs) if e.epoch <= epoch), None)
        if floor is None:
            return epoch, higher.start_offset
        return floor.epoch, higher.start_offset

    # ------------------------------------------------------------------ writes
    def append(self, data: bytes, *, reassign: bool = False) -> tuple[int, int]:
        """Append whole batches (contract 2); returns (first offset, last offset) appended."""
        if not data:
            raise LogAppendError("empty append")
        buf: bytes | bytearray = bytearray(data) if reassign else data
        offsets: list[int] = []
        positions: list[int] = []
        new_epochs: list[EpochEntry] = []
        expected = self.end_offset
        last_epoch = self._epochs[-1].epoch if self._epochs else -1
        pos = 0
        while pos < len(buf):
            header = batches.peek(buf, pos)
            if header is None:
                raise LogAppendError(f"{len(buf) - pos} trailing bytes are not a batch")
            if isinstance(buf, bytearray) and header.base_offset != expected:
                buf[pos : pos + 8] = expected.to_bytes(8, "big", signed=True)
                header = header._replace(base_offset=expected)
            reason = batches.check(buf, pos, header)
            if reason is not None:
                raise LogAppendError(f"batch at offset {header.base_offset} rejected: {reason}")
            if header.base_offset != expected:
                raise LogAppendError(f"batch base offset {header.base_offset} but the log ends at {expected}")
            if header.epoch < last_epoch:
                raise LogAppendError(f"batch epoch {header.epoch} is below the log's last epoch {last_epoch}")
            if header.epoch > last_epoch:
                new_epochs.append(EpochEntry(header.epoch, header.base_offset))
                last_epoch = header.epoch
            offsets.append(header.last_offset)
            positions.append(pos)
            expected = header.last_offset + 1
            pos += header.size
        first = self.end_offset
        self._write(bytes(buf), offsets, positions)
        if new_epochs:
            self._epochs.extend(new_epochs)
            self._checkpoint.write(self._epochs)
        return first, expected - 1

    def _write(self, data: bytes, offsets: list[int], positions: list[int]) -> None:
        active = self._segments[-1]
        now_ms = int(self._clock() * 1000)
        if self._active_since_ms < 0 or not active.batch_count:
            self._active_since_ms = now_ms
        too_old = self.segment_ms is not None and now_ms - self._active_since_ms >= self.segment_ms
        if active.batch_count and (active.size + len(data) > self.segment_bytes or too_old):
            if self.fsync_enabled:
                active.flush()
            active = Segment(self.dir, active.end_offset)
            self._segments.append(active)
            self._active_since_ms = now_ms
            self._dir_dirty = True
        active.append(data, offsets, positions)

    def flush(self) -> int:
        """Make every appended byte durable; return the new flushed offset (contract 3)."""
        if self.flushed_offset != self.end_offset or self._dir_dirty:
            if self.fsync_enabled:
                for seg in self._segments:
                    seg.flush()
                if self._dir_dirty:
                    fsync_dir(self.dir)
            self._dir_dirty = False
            self.flushed_offset = self.end_offset
        return self.flushed_offset

    def begin_flush(self) -> tuple[int, Callable[[], None]]:
        """Split :meth:`flush` for a worker thread: returns (target offset, a function doing the fsyncs).

        The function touches only duplicated file descriptors, so appends, rolls and truncations may run
        meanwhile; pass the target to :meth:`complete_flush` afterwards (in the owning thread).
        """
        target, fds, dir_dirty = self.begin_flush_fds()
        return target, self.flush_run(fds, dir_dirty)

    def flush_run(self, fds: list[int], dir_dirty: bool) -> Callable[[], None]:
        """The function :meth:`begin_flush` returns for what :meth:`begin_flush_fds` gave (it closes the fds)."""
        enabled = self.fsync_enabled
        directory = self.dir

        def run() -> None:
            try:
                if enabled:
                    for fd in fds:
                        fsync_fd(fd, f"segment in {directory}")
                    if dir_dirty:
                        fsync_dir(directory)
            finally:
                for fd in fds:
                    os.close(fd)

        return run

    def begin_flush_fds(self) -> tuple[int, list[int], bool]:
        """:meth:`begin_flush` for a caller that fsyncs itself: (target offset, duplicated fds of the segments to
        fsync, whether the directory must be fsynced too). The caller closes the fds and passes the target to
        :meth:`complete_flush`."""
        fds = [os.dup(s.fd) for s in self._segments if s.end_offset > self.flushed_offset]
        dir_dirty = self._dir_dirty
        self._dir_dirty = False
        self._pending_generation = self._generation
        return self.end_offset, fds, dir_dirty

    def complete_flush(self, target: int) -> int:
        """Record a finished :meth:`begin_flush`; a truncation in between voids it (returns flushed_offset)."""
        if self._pending_generation == self._generation:
            self.flushed_offset = max(self.flushed_offset, min(target, self.end_offset))
        return self.flushed_offset

    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is >= ``offset`` (contract 6); returns the new end offset."""
        if offset >= self.end_offset:
            return self.end_offset
        self._generation += 1
        while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
            self._segments.pop().delete()
            self._dir_dirty = True
        new_end = self._segments[-1].truncate_to(offset)
        if self._dir_dirty:
            fsync_dir(self.dir)
            self._dir_dirty = False
        kept = [e for e in self._epochs if e.start_offset < new_end]
        if kept != self._epochs:
            self._epochs = kept
            self._checkpoint.write(self._epochs)
        self.flushed_offset = min(self.flushed_offset, new_end)
        log.info("log truncated to end offset %d (requested %d)", new_end, offset)
        return new_end

    def delete_before(self, offset: int) -> int:
        """Delete every segment wholly below ``offset`` (a snapshot covers it); the active segment stays.
        Returns the number of segments deleted (contract 7)."""
        gone = 0
        while len(self._segments) > 1 and self._segments[0].end_offset <= offset:
            self._segments.pop(0).delete()
            gone += 1
        if gone:
            self._generation += 1
            first = self._segments[0].base_offset
            kept = [
                e
                for i, e in enumerate(self._epochs)
                if i + 1 == len(self._epochs) or self._epochs[i + 1].start_offset > first
            ]
            kept = [EpochEntry(e.epoch, max(e.start_offset, first)) for e in kept]
            if kept != self._epochs:
                self._epochs = kept
                self._checkpoint.write(self._epochs)
            if self.fsync_enabled:
                fsync_dir(self.dir)
            log.info("deleted %d log segment(s) below offset %d", gone, offset)
        return gone

    def reset_to(self, offset: int) -> None:
        """Delete every segment; the log is empty and starts at ``offset`` (an installed snapshot's end)."""
        self._generation += 1
        for seg in self._segments:
            seg.delete()
        self._segments = [Segment(self.dir, offset)]
        self._epochs = []
        self._checkpoint.write(self._epochs)
        if self.fsync_enabled:
            fsync_dir(self.dir)
        self.flushed_offset = offset
        log.info("log reset to start at offset %d", offset)

    # ------------------------------------------------------------------ reads
    def read(self, offset: int, max_bytes: int, *, flushed_only: bool = False) -> bytes:
        """Whole batches from the one holding ``offset`` (at least one if any), all from one segment."""
        if offset < self.start_offset or offset > self.end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} outside the log range [{self.start_offset}, {self.end_offset}]"
            )
        limit = self.flushed_offset if flushed_only else self.end_offset
        for seg in reversed(self._segments):
            if seg.base_offset <= offset:
                return seg.read(offset, max_bytes, limit)
        return b""

    def batches(self, from_offset: int = 0) -> list[bytes]:
        """Every batch from ``from_offset`` on, split (for tools and tests)."""
        out: list[bytes] = []
        offset = max(from_offset, self.start_offset)
        while offset < self.end_offset:
            chunk = self.read(offset, 1 << 30)
            pos = 0
            while pos < len(chunk):
                header = batches.peek(chunk, pos)
                assert header is not None
                out.append(chunk[pos : pos + header.size])
                offset = header.last_offset + 1
                pos += header.size
        return out

    def close(self) -> None:
        for seg in self._segments:
            seg.close()

    def segment_paths(self) -> list[Path]:
        return [s.path for s in self._segments]


def open_log(
    partition_dir: Path,
    segment_bytes: int,
    *,
    fsync: bool = True,
    on_cut: Callable[[Cut], None] | None = None,
) -> MetadataLog:
    """Open (recovering) the log in ``partition_dir``; ``on_cut`` sees each recovery cut."""
    mlog = MetadataLog(partition_dir, segment_bytes, fsync=fsync)
    if on_cut is not None:
        for cut in mlog.recovery_cuts:
            on_cut(cut)
    return mlog
