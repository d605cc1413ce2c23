"""Controller invariants, checked after every simulated event (numbered after the Raft simulator's (1)-(11)).

The checker keeps a reference image: the globally committed log (the Raft checker's committed prefix) replayed
from offset 0 into one image, batch by batch. Its invariants:

21. Every node's committed image at committed offset N (the end of the last batch it replayed, or the end of the
    snapshot it loaded) is identical to the reference image at N (a checksum of the image's content).
22. No partition has a leader outside its ISR (a leader is -1 or an ISR member).
23. Fenced brokers lead nothing; every leader is a registered broker.
24. ISR is a subset of the replicas.
25. Per partition, the partition epoch and the leader epoch never decrease along the committed log.
26. Broker epochs increase per registration: each committed RegisterBrokerRecord of a broker id carries an epoch
    above every earlier one of that id.
27. A fenced broker is in an ISR only as its last member (fencing shrinks every ISR it is in, never to empty).
28. Every snapshot (KIP-630, written or installed) rebuilds an image equal to the reference image at its end
    offset (the image replayed from the log up to N).
29. The active controller's uncommitted view, once everything it appended has committed, equals its committed
    image (the leader validates writes against exactly what every node will replay).
30. Eligible Leader Replicas (KIP-966) are replicas outside the ISR: ELR is disjoint from the ISR and a subset of
    the replicas.
31. The image's partitions-by-broker indexes (kraftd.controller.partition_index) equal those rebuilt from its
    partitions.
(22)-(27), (30) and (31) are checked on the reference image after every committed batch; (21) whenever a node commits or loads
a snapshot; (28) whenever a node writes or installs one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kraftd.controller import partition_index
from kraftd.controller.apply import apply_record
from kraftd.controller.image import MetadataImage
from kraftd.controller.image_writer import content_digest, image_from_values
from kraftd.controller.machine import decode_batches
from kraftd.sim.invariants import Checker, InvariantViolation

REGISTER_BROKER = 0


@dataclass(slots=True)
class ControllerChecker(Checker):
    ref: MetadataImage = field(default_factory=MetadataImage)
    ref_batches: int = 0  # how many committed batches the reference image has replayed
    digests: dict[int, str] = field(default_factory=lambda: {0: content_digest(MetadataImage())})
    epochs: dict[tuple[uuid.UUID, int], tuple[int, int]] = field(default_factory=dict)
    broker_epochs: dict[int, int] = field(default_factory=dict)
    images_checked: int = 0
    snapshots_checked: int = 0

    def advance(self) -> None:
        """Replay newly committed batches into the reference image, checking (22)-(27) after each."""
        while self.ref_batches < len(self.committed):
            b = self.committed[self.ref_batches]
            self.ref_batches += 1
            for d in decode_batches([b]):
                if d.api_key == REGISTER_BROKER:
                    self._check_broker_epoch(d.record.broker_id, d.record.broker_epoch)
                apply_record(self.ref, d.offset, d.api_key, d.version, d.record)
            if not b.is_control:
                self._check_image(b.next_offset)
            self.digests[b.next_offset] = content_digest(self.ref)

    def _check_broker_epoch(self, broker_id: int, epoch: int) -> None:
        prev = self.broker_epochs.get(broker_id)
        if prev is not None and epoch <= prev:
            raise InvariantViolation(26, f"broker {broker_id} registered with epoch {epoch} after {prev}")
        self.broker_epochs[broker_id] = epoch

    def _check_image(self, end: int) -> None:
        image = self.ref
        for tid, t in image.topics.items():
            for pid, p in t.partitions.items():
                where = f"{t.name}-{pid} at offset {end}"
                if p.leader != -1 and p.leader not in p.isr:
                    raise InvariantViolation(22, f"{where}: leader {p.leader} outside ISR {p.isr}")
                if p.leader != -1:
                    b = image.brokers.get(p.leader)
                    if b is None or b.fenced:
                        state = "unregistered" if b is None else "fenced"
                        raise InvariantViolation(23, f"{where}: {state} broker {p.leader} leads")
                if not set(p.isr) <= set(p.replicas):
                    raise InvariantViolation(24, f"{where}: ISR {p.isr} not within replicas {p.replicas}")
                prev = self.epochs.get((tid, pid))
                now = (p.leader_epoch, p.partition_epoch)
                if prev is not None and (now[0] < prev[0] or now[1] < prev[1]):
                    raise InvariantViolation(25, f"{where}: (leader, partition) epochs went {prev} -> {now}")
                self.epochs[(tid, pid)] = now
                if set(p.elr) & set(p.isr) or not set(p.elr) <= set(p.replicas):
                    raise InvariantViolation(
                        30, f"{where}: ELR {p.elr} not outside ISR {p.isr} within replicas {p.replicas}"
                    )
                if len(p.isr) > 1:
                    fenced = [r for r in p.isr if r in image.brokers and image.brokers[r].fenced]
                    if fenced:
                        raise InvariantViolation(27, f"{where}: fenced broker(s) {fenced} in ISR {p.isr}")
        if not partition_index.consistent(image):
            raise InvariantViolation(
                31, f"the partitions-by-broker indexes at offset {end} differ from the partitions"
            )

    # (21)
    def on_node_commit(self, node: int, end: int, image: MetadataImage) -> None:
        self.advance()
        want = self.digests.get(end)
        if want is None:
            raise InvariantViolation(21, f"node {node} holds an image at {end}, not a committed batch end")
        if content_digest(image) != want:
            raise InvariantViolation(
                21, f"node {node}'s image at offset {end} differs from the committed log's"
            )
        self.images_checked += 1

    # (29)
    def on_settled_leader(self, node: int, uncommitted: MetadataImage, committed: MetadataImage) -> None:
        if content_digest(uncommitted) != content_digest(committed):
            raise InvariantViolation(29, f"leader {node}'s uncommitted view differs from its committed image")

    # (28), replacing the Raft checker's record-for-record (9): a snapshot holds the image, not the history
    def on_snapshot(self, node: int, end_offset: int, values: list[bytes]) -> None:
        self.advance()
        want = self.digests.get(end_offset)
        if want is None:
            raise InvariantViolation(
                28, f"node {node} snapshotted at {end_offset}, not a committed batch end"
            )
        if content_digest(image_from_values(values, end_offset)) != want:
            raise InvariantViolation(
                28, f"node {node}'s snapshot at {end_offset} differs from the log replayed up to it"
            )
        self.snapshots_checked += 1
