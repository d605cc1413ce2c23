"""A KIP-630 snapshot loaded into a fresh image a slice at a time (kraftd.controller.machine contract 6a).

Contracts:
1. :meth:`SnapshotLoad.apply_some` applies at most ``budget`` of the snapshot's records (None: all) to
   :attr:`SnapshotLoad.image`, in the snapshot's order, each at offset ``end_offset - 1`` as
   :func:`kraftd.controller.image_writer.image_from_batches` applies them; a batch is only split into its framed
   values when reached, and each value is decoded when applied, so no call grows with the snapshot.
2. Once :attr:`done`, :attr:`image` equals ``image_from_batches(batches, end_offset)`` (a value that does not
   decode is skipped, as replay skips it) and its offset is ``end_offset - 1``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from kraftd.controller.apply import apply_record
from kraftd.controller.image import MetadataImage
from kraftd.core.log import LogBatch
from kwire.errors import KraftError
from kwire.metadata_frame import FRAME_VERSION, decode_metadata_record
from kwire.records import ATTR_CONTROL, framed_values


def framed(b: LogBatch) -> list[tuple[int, bytes]]:
    """(offset, value) of each framed metadata record of ``b`` (none for a control batch), not yet decoded: what
    replay (kraftd.controller.machine contract 6) and a snapshot load take from a batch."""
    hdr, values = framed_values(b.data, FRAME_VERSION)
    return [] if hdr.attributes & ATTR_CONTROL else values


class SnapshotLoad:
    def __init__(self, batches: Iterable[LogBatch], end_offset: int) -> None:
        self.end_offset = end_offset
        self.image = MetadataImage()
        self._batches: Iterator[LogBatch] = iter(list(batches))
        self._values: deque[bytes] = deque()
        self.done = False

    def apply_some(self, budget: int | None) -> int:
        """Contract 1; returns how many values were taken (applied or skipped)."""
        n = 0
        at = self.end_offset - 1
        while not self.done and (budget is None or n < budget):
            if not self._values:
                b = next(self._batches, None)
                if b is None:
                    self.image.offset = at
                    self.done = True
                    break
                if not b.is_control:
                    self._values.extend(v for _, v in framed(b))
                continue
            value = self._values.popleft()
            n += 1
            try:
                key, version, obj = decode_metadata_record(value)
            except KraftError:
                continue
            apply_record(self.image, at, key, version, obj)
        return n
