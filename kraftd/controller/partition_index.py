"""Partitions by broker (issues 22, 24): which partitions' ISR, ELR or leadership a broker holds, kept by apply.

Fencing, unfencing, controlled shutdown and a broker's re-registration change the partitions of one broker; with
these indexes they cost O(that broker's partitions), not a scan of every partition of the image.

Contracts:
1. ``image.isr_index``, ``image.elr_index`` and ``image.leader_index`` map a broker id (for the leader index also
   -1: leaderless) to {topic id: {partition id: True}} of every partition whose ISR / ELR holds it, or it leads.
   They are derived from ``image.topics`` alone and change only with it, in
   :func:`kraftd.controller.apply.apply_record` (:func:`update` on every partition set or removed), so every
   node that applied the same records holds the same indexes (the image's checksum covers them).
2. Persistent like the rest of the image (kraftd.controller.image invariant 3): nested ``immutables.Map``s,
   changed by building new maps, so an image copy shares them in O(1) and an update costs O(log n) per broker
   that joined or left. Keys are the topic id and partition id objects themselves (no tuple per entry).
3. :func:`keys` lists a broker's partitions in topic-name then partition-id order, the order Kafka's controller
   and kraftd.controller.brokers generate partition changes in.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from immutables import Map

if TYPE_CHECKING:
    from kraftd.controller.image import MetadataImage, PartitionState

Pids = Map[int, bool]
Topics = Map[uuid.UUID, Pids]
Index = Map[int, Topics]
_NO_TOPICS: Topics = Map()
_NO_PIDS: Pids = Map()
NO_LEADER = -1


def _add(index: Index, broker: int, tid: uuid.UUID, pid: int) -> Index:
    topics = index.get(broker, _NO_TOPICS)
    return index.set(broker, topics.set(tid, topics.get(tid, _NO_PIDS).set(pid, True)))


def _drop(index: Index, broker: int, tid: uuid.UUID, pid: int) -> Index:
    topics = index.get(broker)
    pids = topics.get(tid) if topics is not None else None
    if topics is None or pids is None or pid not in pids:
        return index
    pids = pids.delete(pid)
    topics = topics.set(tid, pids) if pids else topics.delete(tid)
    return index.set(broker, topics) if topics else index.delete(broker)


def _moved(index: Index, tid: uuid.UUID, pid: int, was: Sequence[int], now: Sequence[int]) -> Index:
    for b in was:
        if b not in now:
            index = _drop(index, b, tid, pid)
    for b in now:
        if b not in was:
            index = _add(index, b, tid, pid)
    return index


def update(
    image: MetadataImage, tid: uuid.UUID, pid: int, old: PartitionState | None, new: PartitionState | None
) -> None:
    """Contract 1: partition ``pid`` of ``tid`` went from ``old`` to ``new`` (None: absent)."""
    was: Sequence[int] = old.isr if old is not None else ()
    now: Sequence[int] = new.isr if new is not None else ()
    if was != now:
        image.isr_index = _moved(image.isr_index, tid, pid, was, now)
    was = old.elr if old is not None else ()
    now = new.elr if new is not None else ()
    if was != now:
        image.elr_index = _moved(image.elr_index, tid, pid, was, now)
    was = (old.leader,) if old is not None else ()
    now = (new.leader,) if new is not None else ()
    if was != now:
        image.leader_index = _moved(image.leader_index, tid, pid, was, now)


def keys(image: MetadataImage, index: Index, broker: int) -> list[tuple[uuid.UUID, int]]:
    """Contract 3: (topic id, partition id) of ``broker``'s entries in ``index``."""
    topics = index.get(broker)
    if topics is None:
        return []
    out: list[tuple[uuid.UUID, int]] = []
    for tid, pids in sorted(topics.items(), key=lambda kv: image.topics[kv[0]].name):
        out += [(tid, pid) for pid in sorted(pids)]
    return out


def holds_any(index: Index, broker: int) -> bool:
    return broker in index


def derived(image: MetadataImage) -> tuple[Index, Index, Index]:
    """Contract 1's indexes rebuilt from ``image.topics`` alone (what the kept ones must equal), O(image)."""
    from kraftd.controller.image import (
        MetadataImage as Image,
    )  # at call time: image imports nothing from here

    fresh = Image()
    for tid, t in image.topics.items():
        for pid, p in t.partitions.items():
            update(fresh, tid, pid, None, p)
    return fresh.isr_index, fresh.elr_index, fresh.leader_index


def consistent(image: MetadataImage) -> bool:
    """The kept indexes equal :func:`derived` ones."""
    return derived(image) == (image.isr_index, image.elr_index, image.leader_index)
