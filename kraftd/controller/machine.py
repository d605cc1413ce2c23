"""The metadata state machine a controller runs on top of the Raft log (Kafka's QuorumController, sans-IO).

Contracts:
1. ``committed`` is built only by replaying committed batches (:meth:`replay`), on every node alike; each record
   goes through :func:`kraftd.controller.apply.apply_record` exactly once (offsets at or below the image's
   offset are skipped, so a batch delivered twice is harmless); ``apply_committed`` is that function, which
   kraftd.controller.metrics_counts may wrap to count what each record changes.
2. Leadership: after :meth:`become_leader` the controller is *active* only once the high watermark has reached
   the log end offset it had when elected (a new leader replays to the end before writing). Until then, and on
   every non-leader, :meth:`latest` is the committed image and writes are refused with NOT_CONTROLLER.
3. The active leader keeps ``uncommitted``: the committed image plus its own appended, not yet committed,
   records; writes are validated against it (:meth:`latest`) and applied to it when appended
   (:meth:`on_appended`). Losing leadership discards it.
3a. Sharing (issue 24): once the committed image has caught up with the view (same offset, nothing appended left to
   apply) and at least ``reshare_records`` records were replayed since the view last shared the committed image's
   structure, the view becomes ``committed.copy()`` (equal content, O(1)): otherwise every partition the leader
   wrote would be held twice, once as applied to the view and once as replayed (2x the image at 1M partitions).
3b. The leader applies the record objects it framed (:meth:`frame`, :meth:`append_records_later`), never decoding
   the bytes it just encoded (issue 23): the encoding carries every field of the object at the version written (a
   non-default field the version lacks is a MessageEncodeError; metadata records have no ignorable fields), so
   the object applied is the one every replica decodes (tests/controller/test_applied_objects.py; the
   simulator's invariant 29).
4. Activation (:meth:`activation_records`): the first time the leader becomes active it returns the records
   Kafka's controller writes on activation, to append as one atomic batch: an AbortTransactionRecord if a
   metadata transaction was left open; and, when the log holds no metadata.version, the bootstrap records
   (BeginTransactionRecord "Bootstrap records", the bootstrap FeatureLevelRecords, the cluster-level
   ``min.insync.replicas`` ConfigRecord when eligible.leader.replicas.version >= 1, EndTransactionRecord; the
   transaction markers only from metadata.version 3.6-IV1 on), as ActivationRecordsGenerator does.
6. Incremental replay (issue 22): :meth:`enqueue` takes committed batches without applying them and
   :meth:`replay_some` applies at most ``budget`` of their records (decoded one by one as they are applied), so the
   shell can spread a large committed batch (a CreateTopics of 10k partitions) over several event loop turns;
   :meth:`replay` is both at once. Records still apply in log order, each exactly once, through
   ``apply_committed``. ``high_watermark`` is the committed offset the image has replayed to (it moves when the
   queue is empty), so activation (contract 2) waits for the replay; ``replayed_end`` is the offset after the last
   batch replayed in full (a snapshot may end there only while :attr:`replay_pending` is false). Between two
   ``replay_some`` calls the committed image may hold part of a batch.
6a. A snapshot to load (:meth:`load_later`: fetched from the leader, or the latest on disk at start) is applied the
   same way, ahead of the queue, into a fresh image (kraftd.controller.snapshot_load) that replaces ``committed``
   only once complete (as :meth:`load_image`); until then :attr:`replay_pending` holds, so reads, activation and
   snapshots wait as they wait for replay, and queued batches the snapshot covers are skipped by offset.
5. Idle writes (:meth:`idle_records`): the active controller appends one NoOpRecord every
   ``metadata.max.idle.interval.ms`` (the shell's timer), only at a metadata.version that has the record
   (3.3-IV1 on), as Kafka's QuorumController does; elsewhere there is nothing to write.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from generated.abort_transaction_record import AbortTransactionRecord
from generated.begin_transaction_record import BeginTransactionRecord
from generated.config_record import ConfigRecord
from generated.end_transaction_record import EndTransactionRecord
from generated.no_op_record import NoOpRecord
from kraftd.controller.apply import apply_record
from kraftd.controller.features import ELR_VERSION, MV_METADATA_TRANSACTIONS, MV_NOOP_RECORDS, record_version
from kraftd.controller.image import MetadataImage
from kraftd.controller.snapshot_load import SnapshotLoad, framed
from kraftd.core.log import LogBatch
from kwire.errors import KraftError
from kwire.metadata_frame import FRAME_VERSION, decode_metadata_record, encode_record
from kwire.records import ATTR_CONTROL, decode_batch, framed_values
from kwire.resources import ConfigResourceType as CR

BROKER_RESOURCE = int(CR.BROKER)  # resource name "" is the cluster default


class NotControllerError(KraftError):
    """This node is not the active controller (Kafka's NOT_CONTROLLER)."""


@dataclass(frozen=True, slots=True)
class Decoded:
    offset: int
    api_key: int
    version: int
    record: Any


Framed = tuple[int, int, Any]  # (api key, version, record) of a record the leader framed (contract 3b)
RESHARE_RECORDS = 10_000  # contract 3a: at most this many records' state held twice on the leader
UNDECODABLE = -1  # api key under which a value that is not a framed metadata record is kept (raw bytes)


def decode_batches(batches: Iterable[LogBatch]) -> list[Decoded]:
    """The records of ``batches`` (control batches skipped), with their offsets. A value that is not a metadata
    record (e.g. a load generator's) is returned as raw bytes under api key -1 (replay skips those:
    :func:`metadata_records`)."""
    out: list[Decoded] = []
    for b in batches:
        if b.is_control:
            continue
        batch = decode_batch(b.data, verify_crc=False)
        if batch.is_control:
            continue
        for rec in batch.records:
            if rec.value is None:
                continue
            offset = batch.base_offset + rec.offset_delta
            value = rec.value
            key = UNDECODABLE
            if value and value[0] == FRAME_VERSION:  # else not framed at all: no decode attempt, no error
                try:
                    key, version, obj = decode_metadata_record(value)
                except KraftError:
                    key = UNDECODABLE
            if key == UNDECODABLE:
                version, obj = 0, bytes(value)
            out.append(Decoded(offset, key, version, obj))
    return out


def metadata_records(b: LogBatch) -> Iterator[Decoded]:
    """Replay's decode of one batch, one record at a time (a caller may stop between two: tools.swarm.replay
    contract 7): only its framed metadata records become objects (image invariant 2a); the other values are
    checked with the records section and skipped, as apply_record would skip them."""
    if b.is_control:
        return
    hdr, values = framed_values(b.data, FRAME_VERSION)
    if hdr.attributes & ATTR_CONTROL:
        return
    for offset, value in values:
        try:
            key, version, obj = decode_metadata_record(value)
        except KraftError:
            continue
        yield Decoded(offset, key, version, obj)


class MetadataController:
    def __init__(self, node_id: int, bootstrap: Sequence[bytes], *, min_insync_replicas: int = 1) -> None:
        self.node_id = node_id
        self.bootstrap = [decode_metadata_record(v) for v in bootstrap]
        self.min_insync_replicas = min_insync_replicas
        self.committed = MetadataImage()
        self.apply_committed: Callable[[MetadataImage, int, int, int, Any], None] = apply_record
        self.uncommitted: MetadataImage | None = None
        self.high_watermark = 0
        self.leader_epoch = -1
        self._leading = False
        self._ready_at = 0
        self._activated = False
        self.replayed_end = 0
        self._queue: deque[LogBatch] = deque()
        self._queued_hw = 0
        self._head: tuple[int, list[tuple[int, bytes]], int] | None = (
            None  # (next offset, values, next index)
        )
        # (first offset, framed values or (api key, version, record) objects, next index): contracts 3, 3b
        self._appended: deque[tuple[int, list[Any], int]] = deque()
        self.reshare_records = RESHARE_RECORDS
        self._unshared = 0  # records replayed since the view last shared the committed image (contract 3a)
        self.appended_end = 0  # the offset after the last record appended to the uncommitted view
        self._loading: SnapshotLoad | None = None  # contract 6a

    # ---- replay (contracts 1, 6) ------------------------------------------------------------------------------
    def replay(self, batches: Iterable[LogBatch], high_watermark: int) -> int:
        """Apply newly committed batches (and any still queued); returns how many records were applied."""
        self.enqueue(batches, high_watermark)
        return self.replay_some(None)

    def enqueue(self, batches: Iterable[LogBatch], high_watermark: int) -> None:
        """Contract 6: committed batches for :meth:`replay_some`."""
        self._queue.extend(batches)
        self._queued_hw = max(self._queued_hw, high_watermark)
        if not self.replay_pending:
            self.high_watermark = max(self.high_watermark, self._queued_hw)

    @property
    def replay_pending(self) -> bool:
        return self._head is not None or bool(self._queue) or self._loading is not None

    def load_later(self, batches: Iterable[LogBatch], end_offset: int) -> None:
        """Contract 6a (a newer snapshot replaces one still loading)."""
        self._loading = SnapshotLoad(batches, end_offset)

    def replay_some(self, budget: int | None) -> int:
        """Contracts 6, 6a: apply up to ``budget`` queued records (None: all); returns how many were applied."""
        n = 0
        if self._loading is not None:
            n = self._loading.apply_some(budget)
            if not self._loading.done:
                return n
            self.load_image(self._loading.image, self._loading.end_offset)
            self._loading = None
        image = self.committed
        while budget is None or n < budget:
            if self._head is None:
                if not self._queue:
                    break
                b = self._queue.popleft()
                skip = b.is_control or b.last_offset <= image.offset
                self._head = (b.next_offset, [] if skip else framed(b), 0)
            end, values, i = self._head
            stop = len(values) if budget is None else min(len(values), i + budget - n)
            for offset, value in values[i:stop]:
                if offset > image.offset:
                    try:
                        key, version, obj = decode_metadata_record(value)
                    except KraftError:
                        continue
                    self.apply_committed(image, offset, key, version, obj)
                    n += 1
            if stop < len(values):
                self._head = (end, values, stop)
            else:
                self._head = None
                self.replayed_end = max(self.replayed_end, end)
        if not self.replay_pending:
            self.high_watermark = max(self.high_watermark, self._queued_hw)
        self._reshare(n)
        return n

    def _reshare(self, replayed: int) -> None:
        """Contract 3a."""
        if self.uncommitted is None:
            return
        self._unshared += replayed
        if (
            self._unshared >= self.reshare_records
            and not self._appended
            and self.uncommitted.offset == self.committed.offset
        ):
            self.uncommitted = self.committed.copy()
            self._unshared = 0

    def load_image(self, image: MetadataImage, end_offset: int) -> None:
        """A snapshot ending at ``end_offset`` replaces the committed image (queued records up to it are
        skipped by offset); the uncommitted view is dropped."""
        self.committed = image
        self.uncommitted = None
        self._appended.clear()
        self.replayed_end = end_offset

    # ---- leadership (contracts 2, 3) --------------------------------------------------------------------------
    def become_leader(self, epoch: int, log_end_offset: int) -> None:
        self.leader_epoch = epoch
        self._leading = True
        self._ready_at = log_end_offset
        self._activated = False
        self.uncommitted = None
        self._appended.clear()

    def resign(self, epoch: int) -> None:
        self.leader_epoch = epoch
        self._leading = False
        self._activated = False
        self.uncommitted = None
        self._appended.clear()

    @property
    def leading(self) -> bool:
        """The Raft leader of ``leader_epoch`` (active or still replaying to the end)."""
        return self._leading

    @property
    def active(self) -> bool:
        return self._leading and self._activated

    def latest(self) -> MetadataImage:
        """The image writes are validated against: the uncommitted view on the active leader (with every record
        appended so far applied: contract 3)."""
        if self.active and self.uncommitted is not None:
            if self._appended:
                self.apply_appended(None)
            return self.uncommitted
        return self.committed

    def check_active(self) -> None:
        if not self.active:
            raise NotControllerError(f"node {self.node_id} is not the active controller")

    # ---- activation (contract 4) ------------------------------------------------------------------------------
    def activation_records(self) -> list[Any] | None:
        """None until the leader has replayed to the end; then, once, the records to append (maybe empty)."""
        if not self._leading or self._activated or self.high_watermark < self._ready_at:
            return None
        self._activated = True
        self.uncommitted = self.committed.copy()
        self._unshared = 0
        records: list[Any] = []
        if self.committed.pending_transaction is not None:
            records.append(AbortTransactionRecord(reason="controller failover"))
        if self.committed.metadata_version == 0:
            records += self._bootstrap_records()
        return records

    def _bootstrap_records(self) -> list[Any]:
        features = [obj for _, _, obj in self.bootstrap]
        levels = {f.name: f.feature_level for f in features}
        mv = levels.get("metadata.version", 0)
        records: list[Any] = list(features)
        if levels.get(ELR_VERSION, 0) >= 1:
            records.append(
                ConfigRecord(
                    resource_type=BROKER_RESOURCE,
                    resource_name="",
                    name="min.insync.replicas",
                    value=str(self.min_insync_replicas),
                )
            )
        if mv >= MV_METADATA_TRANSACTIONS:
            records = [BeginTransactionRecord(name="Bootstrap records"), *records, EndTransactionRecord()]
        return records

    # ---- idle writes (contract 5) ------------------------------------------------------------------------------
    def idle_records(self) -> list[Any]:
        if not self.active or self.write_metadata_version() < MV_NOOP_RECORDS:
            return []
        return [NoOpRecord()]

    # ---- writes (contract 3) ----------------------------------------------------------------------------------
    def write_metadata_version(self) -> int:
        """The metadata.version new records are written for: the latest image's, or the bootstrap one."""
        mv = self.latest().metadata_version
        if mv == 0:
            mv = next((o.feature_level for _, _, o in self.bootstrap if o.name == "metadata.version"), 0)
        return mv

    def encode(self, records: Sequence[Any]) -> list[bytes]:
        """Frame records at the versions Kafka writes for the current metadata.version (features contract 5)."""
        mv = self.write_metadata_version()
        return [encode_record(r, record_version(type(r).API_KEY, mv)) for r in records]

    def frame(self, records: Sequence[Any], mv: int | None = None) -> tuple[list[bytes], list[Framed]]:
        """Contract 3b: :meth:`encode`, with each record's (api key, version, record) as the leader applies it;
        ``mv``: the metadata.version to frame for, else :meth:`write_metadata_version`'s."""
        mv = self.write_metadata_version() if mv is None else mv
        framed = [(k, record_version(k, mv), r) for r in records for k in (type(r).API_KEY,)]
        return [encode_record(r, v) for _, v, r in framed], framed

    def append_records_later(self, first_offset: int, framed: Sequence[Framed]) -> None:
        """Contract 3b: :meth:`append_later` with the objects :meth:`frame` returned (nothing decoded)."""
        if self.uncommitted is not None:
            self._appended.append((first_offset, list(framed), 0))
            self.appended_end = max(self.appended_end, first_offset + len(framed))

    def on_appended(self, first_offset: int, values: Sequence[bytes]) -> None:
        """Apply the framed records the leader appended at ``first_offset``.. to the uncommitted view, decoded
        exactly as every replica will decode them."""
        self.append_later(first_offset, values)
        self.apply_appended(None)

    def append_later(self, first_offset: int, values: Sequence[bytes]) -> None:
        """Contract 3, spread over loop turns as contract 6: the appended records are applied by
        :meth:`apply_appended`, and at the latest by the next :meth:`latest`."""
        if self.uncommitted is not None:
            self._appended.append((first_offset, list(values), 0))
            self.appended_end = max(self.appended_end, first_offset + len(values))

    def apply_appended(self, budget: int | None) -> int:
        """Apply up to ``budget`` appended records (None: all) to the uncommitted view; returns how many."""
        n = 0
        while self._appended and self.uncommitted is not None and (budget is None or n < budget):
            first, values, i = self._appended[0]
            stop = len(values) if budget is None else min(len(values), i + budget - n)
            for j in range(i, stop):
                item = values[j]
                if isinstance(item, tuple):  # contract 3b: the object the leader framed
                    key, version, obj = item
                else:
                    key, version, obj = decode_metadata_record(item)
                apply_record(self.uncommitted, first + j, key, version, obj)
            n += stop - i
            if stop < len(values):
                self._appended[0] = (first, values, stop)
            else:
                self._appended.popleft()
        return n

    @property
    def appended_pending(self) -> bool:
        """Appended records :meth:`latest` would have to apply first (contract 3)."""
        return bool(self._appended) and self.uncommitted is not None

    def applied_before(self, end: int) -> bool:
        """True when the uncommitted view holds every record appended below offset ``end`` (or there is none)."""
        return not self.appended_pending or self._appended[0][0] + self._appended[0][2] >= end

    @property
    def apply_pending(self) -> bool:
        """Committed batches to replay or appended records to apply (contracts 3, 6)."""
        return self.replay_pending or (bool(self._appended) and self.uncommitted is not None)
