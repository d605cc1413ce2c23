"""The replicated log as the core sees it: an in-memory list of record batches (v2 bytes) with an epoch
cache. The shell mirrors it on disk through the log effects and loads it back on start.

Invariants:
1. Batches are contiguous: each batch starts at the previous batch's ``last_offset + 1``; the first starts
   at ``start_offset`` (0 until a KIP-630 snapshot moves it; then the snapshot's end offset).
2. Batch epochs never decrease along the log; the epoch cache maps each epoch to its first offset.
3. ``end_offset`` is exclusive (Kafka's log end offset); ``last_epoch`` is the epoch of the last batch, or
   ``start_epoch`` (the snapshot's epoch, 0 without one) for an empty log.
4. Truncation removes whole batches only; so does advancing the start, which only moves to a batch boundary.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from kwire.errors import LocalProtocolError


@dataclass(frozen=True, slots=True)
class LogBatch:
    base_offset: int
    last_offset: int
    epoch: int
    data: bytes
    is_control: bool = False

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


@dataclass(frozen=True, slots=True)
class OffsetAndEpoch:
    offset: int
    epoch: int


class LogInconsistencyError(LocalProtocolError):
    """An append that would break invariants 1-2 of the log."""


class ReplicatedLog:
    def __init__(self, start_offset: int = 0, start_epoch: int = 0) -> None:
        self.start_offset = start_offset
        self.start_epoch = start_epoch
        self.batches: list[LogBatch] = []
        self._bases: list[int] = []
        self._epochs: list[tuple[int, int]] = []  # (epoch, first offset), epochs strictly increasing

    @property
    def end_offset(self) -> int:
        return self.batches[-1].next_offset if self.batches else self.start_offset

    @property
    def last_epoch(self) -> int:
        return self.batches[-1].epoch if self.batches else self.start_epoch

    def append(self, batch: LogBatch) -> None:
        if batch.base_offset != self.end_offset:
            raise LogInconsistencyError(f"batch at {batch.base_offset}, log ends at {self.end_offset}")
        if batch.epoch < self.last_epoch:
            raise LogInconsistencyError(f"batch epoch {batch.epoch} below last epoch {self.last_epoch}")
        if not self._epochs or self._epochs[-1][0] != batch.epoch:
            self._epochs.append((batch.epoch, batch.base_offset))
        self.batches.append(batch)
        self._bases.append(batch.base_offset)

    def truncate_to(self, offset: int) -> int:
        """Drop batches containing ``offset`` or later; return the new end offset (invariant 4)."""
        keep = bisect_left(self._bases, offset)
        if keep > 0 and self.batches[keep - 1].last_offset >= offset:
            keep -= 1
        del self.batches[keep:]
        del self._bases[keep:]
        end = self.end_offset
        while self._epochs and self._epochs[-1][1] >= end:
            self._epochs.pop()
        return end

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest cached epoch <= ``epoch`` and the offset where it ends (the next epoch's first offset,
        or the log end). With no such epoch: the log start and ``start_epoch`` (or -1 below it)."""
        for idx in range(len(self._epochs) - 1, -1, -1):
            e, _ = self._epochs[idx]
            if e <= epoch:
                end = self._epochs[idx + 1][1] if idx + 1 < len(self._epochs) else self.end_offset
                return OffsetAndEpoch(end, e)
        if epoch >= self.start_epoch:
            return OffsetAndEpoch(self.start_offset, self.start_epoch)
        return OffsetAndEpoch(self.start_offset, -1)

    def validate(self, offset: int, epoch: int) -> OffsetAndEpoch | None:
        """None when (offset, epoch) is a prefix of this log; else the diverging (end offset, epoch)."""
        if offset == self.start_offset and (offset == 0 or epoch == self.start_epoch):
            return None
        found = self.end_offset_for_epoch(epoch)
        if found.epoch != epoch or found.offset < offset:
            return found
        return None

    def read(self, offset: int, max_bytes: int) -> list[LogBatch]:
        """Whole batches from ``offset``: at least one if any, then as many as fit in ``max_bytes``."""
        i = bisect_right(self._bases, offset) - 1
        if i < 0 or offset >= self.end_offset:
            return []
        out: list[LogBatch] = []
        size = 0
        for b in self.batches[i:]:
            if out and size + len(b.data) > max_bytes:
                break
            out.append(b)
            size += len(b.data)
        return out

    def batches_between(self, start: int, end: int) -> list[LogBatch]:
        """Batches lying wholly in [start, end)."""
        i = max(bisect_right(self._bases, start) - 1, 0)
        out = []
        for b in self.batches[i:]:
            if b.base_offset >= end:
                break
            if b.base_offset >= start and b.next_offset <= end:
                out.append(b)
        return out

    def epoch_start_offsets(self) -> list[tuple[int, int]]:
        return list(self._epochs)

    def epoch_at(self, offset: int) -> int:
        """The epoch of the batch holding ``offset``; ``start_epoch`` below the first batch."""
        i = bisect_right(self._bases, offset) - 1
        return self.batches[i].epoch if i >= 0 and offset < self.end_offset else self.start_epoch

    def is_boundary(self, offset: int) -> bool:
        """True when ``offset`` is the start of a batch, the log start or the log end."""
        if offset in (self.start_offset, self.end_offset):
            return True
        i = bisect_left(self._bases, offset)
        return i < len(self._bases) and self._bases[i] == offset

    def advance_start(self, offset: int, epoch: int) -> None:
        """Drop every batch below ``offset`` (a batch boundary at or below the end) (invariant 4)."""
        if offset <= self.start_offset:
            return
        if offset > self.end_offset or not self.is_boundary(offset):
            raise LogInconsistencyError(f"cannot start the log at {offset}")
        keep = bisect_left(self._bases, offset)
        del self.batches[:keep]
        del self._bases[:keep]
        self.start_offset, self.start_epoch = offset, epoch
        first = self._bases[0] if self._bases else offset
        self._epochs = [
            (e, max(o, first))
            for i, (e, o) in enumerate(self._epochs)
            if i + 1 == len(self._epochs) or self._epochs[i + 1][1] > first
        ]
        if not self.batches:
            self._epochs = []

    def reset(self, offset: int, epoch: int) -> None:
        """Forget every batch; the log is empty and starts at (offset, epoch) (a loaded snapshot's id)."""
        self.batches.clear()
        self._bases.clear()
        self._epochs.clear()
        self.start_offset, self.start_epoch = offset, epoch
